// Copyright 2026 The kbisect Authors.
#include "triage/commit_window.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace kbisect {
namespace triage {
namespace {

bool GlobAt(std::string_view p, size_t pi, std::string_view s, size_t si) {
  while (pi < p.size()) {
    if (p[pi] == '*') {
      const bool any = pi + 1 < p.size() && p[pi + 1] == '*';
      size_t next = pi + (any ? 2 : 1);
      // "**/" also matches zero directories.
      if (any && next < p.size() && p[next] == '/' && GlobAt(p, next + 1, s, si)) return true;
      for (size_t k = si; k <= s.size(); ++k) {
        if (GlobAt(p, next, s, k)) return true;
        if (k < s.size() && !any && s[k] == '/') return false;
      }
      return false;
    }
    if (si >= s.size()) return false;
    if (p[pi] == '?') {
      if (s[si] == '/') return false;
    } else if (p[pi] != s[si]) {
      return false;
    }
    ++pi;
    ++si;
  }
  return si == s.size();
}

bool ContainsNoCase(std::string_view haystack, std::string_view needle) {
  const std::string h = absl::AsciiStrToLower(absl::string_view(haystack.data(), haystack.size()));
  const std::string n = absl::AsciiStrToLower(absl::string_view(needle.data(), needle.size()));
  return h.find(n) != std::string::npos;
}

bool AnyGlob(const std::vector<std::string>& globs, std::string_view path) {
  for (const std::string& g : globs) {
    if (GlobMatch(g, path)) return true;
  }
  return false;
}

absl::Status ReadStrings(const nlohmann::json& value, const std::string& field,
                         std::vector<std::string>* out) {
  if (!value.is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "slice map ", field, ": expected an array of strings, got ", value.type_name()));
  }
  out->clear();
  for (size_t i = 0; i < value.size(); ++i) {
    if (!value[i].is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "slice map ", field, "[", i, "]: expected a string, got ", value[i].type_name()));
    }
    out->push_back(value[i].get<std::string>());
  }
  return absl::OkStatus();
}

}  // namespace

bool GlobMatch(std::string_view pattern, std::string_view path) {
  return GlobAt(pattern, 0, path, 0);
}

SliceMap SliceMap::HelionDefault() {
  SliceMap map;
  map.platforms.push_back({"*_cute", {{"[cute]", "[cutedsl]"}, {"helion/_compiler/cute/**"}}});
  map.platforms.push_back({"*pallas*", {{"[pallas]", "[tpu]"}, {"helion/_compiler/pallas/**"}}});
  map.platforms.push_back({"tpu*", {{"[pallas]", "[tpu]"}, {"helion/_compiler/pallas/**"}}});
  map.platforms.push_back({"mi*", {{"[amd]", "[rocm]"}, {}}});
  map.platforms.push_back({"*rocm*", {{"[amd]", "[rocm]"}, {}}});
  map.platforms.push_back({"*amd*", {{"[amd]", "[rocm]"}, {}}});
  map.platforms.push_back({"*", {{}, {"helion/**"}}});
  return map;
}

const SliceRule* SliceMap::RuleFor(std::string_view platform) const {
  for (const auto& [glob, rule] : platforms) {
    if (GlobMatch(glob, platform)) return &rule;
  }
  return nullptr;
}

absl::StatusOr<SliceMap> ParseSliceMap(std::string_view json_text) {
  nlohmann::json root = nlohmann::json::parse(json_text.begin(), json_text.end(), nullptr,
                                              /*allow_exceptions=*/false);
  if (root.is_discarded()) return absl::InvalidArgumentError("slice map: not valid JSON");
  if (!root.is_object()) {
    return absl::InvalidArgumentError("slice map: expected a JSON object");
  }
  SliceMap map;
  if (auto it = root.find("method_paths"); it != root.end()) {
    RETURN_IF_ERROR(ReadStrings(*it, "method_paths", &map.method_paths));
  }
  auto platforms = root.find("platforms");
  if (platforms == root.end() || !platforms->is_object()) {
    return absl::InvalidArgumentError(
        "slice map platforms: missing or not an object of platform -> {tags, paths}");
  }
  for (auto it = platforms->begin(); it != platforms->end(); ++it) {
    const std::string field = absl::StrCat("platforms.", it.key());
    if (!it.value().is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat("slice map ", field, ": expected an object with tags and paths"));
    }
    SliceRule rule;
    if (auto t = it.value().find("tags"); t != it.value().end()) {
      RETURN_IF_ERROR(ReadStrings(*t, field + ".tags", &rule.tags));
    }
    if (auto p = it.value().find("paths"); p != it.value().end()) {
      RETURN_IF_ERROR(ReadStrings(*p, field + ".paths", &rule.paths));
    }
    map.platforms.emplace_back(it.key(), std::move(rule));
  }
  return map;
}

absl::StatusOr<CommitWindow> RankWindow(const GitRepo& repo, std::string_view good,
                                        std::string_view bad, std::string_view platform,
                                        const SliceMap& map) {
  auto resolve = [&](std::string_view rev, const char* which) -> absl::StatusOr<std::string> {
    absl::StatusOr<std::string> id = repo.ResolveCommit(rev);
    if (!id.ok()) {
      return absl::Status(id.status().code(),
                          absl::StrCat("the ", which, " nightly's commit ", std::string(rev),
                                       " is not in ", repo.git_dir(),
                                       "; fetch the branch the nightlies ran on (git fetch "
                                       "origin main) and retry: ",
                                       id.status().message()));
    }
    return id;
  };
  CommitWindow window;
  ASSIGN_OR_RETURN(window.good, resolve(good, "last good"));
  ASSIGN_OR_RETURN(window.bad, resolve(bad, "first bad"));
  ASSIGN_OR_RETURN(std::vector<std::string> range,
                   repo.CommitRange(window.good, window.bad, /*first_parent=*/true));
  static const SliceRule kEmpty;
  const SliceRule* rule = map.RuleFor(platform);
  if (rule == nullptr) rule = &kEmpty;
  std::set<std::string> other_tags;
  for (const auto& [glob, r] : map.platforms) {
    for (const std::string& t : r.tags) {
      if (std::find(rule->tags.begin(), rule->tags.end(), t) == rule->tags.end()) {
        other_tags.insert(t);
      }
    }
  }
  for (size_t i = 1; i < range.size(); ++i) {
    ASSIGN_OR_RETURN(CommitInfo info, repo.GetCommit(range[i]));
    ASSIGN_OR_RETURN(std::vector<FileChange> files, repo.DiffStat(range[i - 1], range[i]));
    RankedCommit c;
    c.sha = info.sha;
    c.short_sha = info.sha.substr(0, 8);
    c.subject = info.subject;
    c.author = info.author_name;
    c.date = info.author_date;
    c.position = static_cast<int>(i);
    c.files_changed = static_cast<int>(files.size());
    for (const std::string& t : rule->tags) c.tag_match |= ContainsNoCase(info.subject, t);
    bool other = false;
    for (const std::string& t : other_tags) other |= ContainsNoCase(info.subject, t);
    c.other_slice = other && !c.tag_match;
    int method_files = 0;
    for (const FileChange& f : files) {
      if (AnyGlob(rule->paths, f.path) ||
          (!f.old_path.empty() && AnyGlob(rule->paths, f.old_path))) {
        ++c.matching_paths;
      }
      if (AnyGlob(map.method_paths, f.path)) ++method_files;
    }
    c.harness_only = !files.empty() && method_files == c.files_changed;
    c.score = (c.tag_match ? 3 : 0) + (c.matching_paths > 0 ? 1 : 0) +
              (c.files_changed > 0 ? 2.0 * c.matching_paths / c.files_changed : 0) -
              (c.other_slice ? 2 : 0) - (c.harness_only ? 1 : 0);
    window.commits.push_back(std::move(c));
  }
  std::stable_sort(window.commits.begin(), window.commits.end(),
                   [](const RankedCommit& a, const RankedCommit& b) { return a.score > b.score; });
  return window;
}

void ApplyWindowEvidence(const CommitWindow& window, Evidence* evidence) {
  evidence->harness_only_commit = Tri::kNo;
  evidence->slice_commit = Tri::kNo;
  for (const RankedCommit& c : window.commits) {
    if (c.harness_only) evidence->harness_only_commit = Tri::kYes;
    if (!c.harness_only && (c.tag_match || c.matching_paths > 0)) {
      evidence->slice_commit = Tri::kYes;
    }
  }
}

}  // namespace triage
}  // namespace kbisect
