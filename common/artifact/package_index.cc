// Copyright 2026 The kbisect Authors.
//
// The pure parts of package_index.h: filenames, grouping, nearest versions and dates.
#include "common/artifact/package_index.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/civil_time.h"
#include "common/artifact/index_internal.h"

namespace kbisect {
namespace {

constexpr const char* kSdistExtensions[] = {".tar.gz", ".tar.bz2", ".tar.xz",
                                            ".tgz",    ".tar",     ".zip"};

std::optional<std::pair<std::string, std::string>> ParseWheelFilename(absl::string_view stem) {
  std::vector<absl::string_view> fields = absl::StrSplit(stem, '-');
  if (fields.size() != 5 && fields.size() != 6) return std::nullopt;
  if (fields[0].empty() || fields[1].empty()) return std::nullopt;
  return std::make_pair(NormalizeProjectName(std::string(fields[0])), std::string(fields[1]));
}

std::optional<std::pair<std::string, std::string>> ParseSdistFilename(absl::string_view stem) {
  for (size_t i = 1; i + 1 < stem.size(); ++i) {
    if (stem[i] == '-' && absl::ascii_isdigit(static_cast<unsigned char>(stem[i + 1]))) {
      return std::make_pair(NormalizeProjectName(std::string(stem.substr(0, i))),
                            std::string(stem.substr(i + 1)));
    }
  }
  return std::nullopt;
}

// A file and its parsed version, for sorting.
struct ParsedFile {
  Pep440Version parsed;
  ArtifactFile file;
};

bool ParsedFileBefore(const ParsedFile& a, const ParsedFile& b) {
  const int c = ComparePep440(a.parsed, b.parsed);
  return c != 0 ? c < 0 : a.file.filename < b.file.filename;
}

// The indices of `versions` in ascending version order.
std::vector<size_t> AscendingOrder(const std::vector<ArtifactVersion>& versions) {
  std::vector<size_t> order(versions.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return ComparePep440(versions[a].parsed, versions[b].parsed) < 0;
  });
  return order;
}

}  // namespace

namespace artifact_internal {

std::optional<std::string> VersionIfDistributionOf(const std::string& filename,
                                                   const std::string& normalized_project) {
  std::optional<std::pair<std::string, std::string>> name_version =
      ParseDistributionFilename(filename);
  if (!name_version || name_version->first != normalized_project) return std::nullopt;
  if (!ParsePep440(name_version->second).ok()) return std::nullopt;
  return name_version->second;
}

std::vector<ArtifactVersion> GroupByVersion(std::vector<ArtifactFile> files) {
  std::vector<ParsedFile> parsed;
  for (ArtifactFile& file : files) {
    absl::StatusOr<Pep440Version> version = ParsePep440(file.version);
    if (version.ok()) parsed.push_back({std::move(*version), std::move(file)});
  }
  std::sort(parsed.begin(), parsed.end(), ParsedFileBefore);
  std::vector<ArtifactVersion> versions;
  for (ParsedFile& p : parsed) {
    if (versions.empty() || ComparePep440(versions.back().parsed, p.parsed) != 0) {
      versions.push_back({p.file.version, std::move(p.parsed), {}});
    }
    versions.back().files.push_back(std::move(p.file));
  }
  return versions;
}

}  // namespace artifact_internal

std::string ArtifactVersion::Digest() const {
  std::vector<std::string> parts;
  for (const ArtifactFile& file : files) {
    parts.push_back(file.sha256.empty() ? file.filename : file.sha256);
  }
  std::sort(parts.begin(), parts.end());
  return absl::StrJoin(parts, ",");
}

std::optional<std::pair<std::string, std::string>> ParseDistributionFilename(
    const std::string& filename) {
  const absl::string_view name(filename);
  if (absl::EndsWith(name, ".whl")) {
    return ParseWheelFilename(name.substr(0, name.size() - 4));
  }
  for (const char* extension : kSdistExtensions) {
    if (absl::EndsWith(name, extension)) {
      return ParseSdistFilename(name.substr(0, name.size() - strlen(extension)));
    }
  }
  return std::nullopt;
}

std::vector<std::string> NearestVersions(const std::vector<ArtifactVersion>& versions,
                                         const Pep440Version& wanted, int count) {
  const std::vector<size_t> order = AscendingOrder(versions);
  const size_t total = std::max(count, 0);
  const size_t below_wanted = static_cast<size_t>(
      std::count_if(versions.begin(), versions.end(),
                    [&](const ArtifactVersion& v) { return ComparePep440(v.parsed, wanted) < 0; }));
  size_t below = std::min(below_wanted, total / 2);
  const size_t above = std::min(order.size() - below_wanted, total - below);
  below = std::min(below_wanted, total - above);
  std::vector<std::string> nearest;
  for (size_t i = below_wanted - below; i < below_wanted + above; ++i) {
    nearest.push_back(versions[order[i]].version);
  }
  return nearest;
}

std::optional<size_t> FindByDate(const std::vector<ArtifactVersion>& versions,
                                 const std::string& date_yyyy_mm_dd) {
  if (!LooksLikeDate(date_yyyy_mm_dd)) return std::nullopt;
  const std::string wanted = absl::StrReplaceAll(date_yyyy_mm_dd, {{"-", ""}});
  std::optional<size_t> found;
  for (size_t i = 0; i < versions.size(); ++i) {
    if (NightlyDate(versions[i].parsed) != wanted) continue;
    if (!found || ComparePep440(versions[*found].parsed, versions[i].parsed) < 0) found = i;
  }
  return found;
}

bool LooksLikeDate(const std::string& text) {
  if (text.size() != 10 || text[4] != '-' || text[7] != '-') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9}) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(text[i]))) return false;
  }
  int year = 0, month = 0, day = 0;
  const absl::string_view t(text);
  if (!absl::SimpleAtoi(t.substr(0, 4), &year) || !absl::SimpleAtoi(t.substr(5, 2), &month) ||
      !absl::SimpleAtoi(t.substr(8, 2), &day) || year < 1) {
    return false;
  }
  const absl::CivilDay civil(year, month, day);  // Normalises a day that does not exist.
  return civil.year() == year && civil.month() == month && civil.day() == day;
}

}  // namespace kbisect
