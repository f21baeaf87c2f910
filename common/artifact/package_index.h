// Copyright 2026 The kbisect Authors.
//
// What a package index lists for one project: its versions in pip's order, each with the files
// (wheels, sdists) it is made of. Bisecting prebuilt nightlies picks versions from this list (by
// date or by position) instead of building commits. Three sources, as pip has them: a
// find-links directory, a PEP 503 "simple" index over file:// or http://, or one project page
// already fetched.
//
//   ASSIGN_OR_RETURN(std::vector<ArtifactVersion> versions,
//                    ListIndex("http://mirror:8080/whl/nightly", "torch"));
//   std::optional<size_t> night = FindByDate(versions, "2025-01-01");
//   if (!night) return NotFoundError(absl::StrJoin(NearestVersions(versions, wanted, 6), ", "));
//   versions[*night].Digest();  // Which files that version is.
#ifndef KBISECT_COMMON_ARTIFACT_PACKAGE_INDEX_H_
#define KBISECT_COMMON_ARTIFACT_PACKAGE_INDEX_H_

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/artifact/pep440.h"

namespace kbisect {

// One distribution file of a version.
struct ArtifactFile {
  std::string filename;  // The file's name ("torch-2.6.0.dev20250101+cpu-cp311-...whl").
  std::string url;       // Where to get it: file:// or http://, without a fragment.
  std::string sha256;    // Lowercase hex of its SHA-256; "" when unknown.
  std::string version;   // The version as its filename spells it.
};

// One version of a project and the files it is made of.
struct ArtifactVersion {
  std::string version;   // The version as the first of its files (by filename) spells it.
  Pep440Version parsed;  // That text, parsed.
  std::vector<ArtifactFile> files;  // Sorted by filename; never empty.

  // Which files exactly this version is: the files' sha256 values (a file's filename where its
  // hash is unknown), sorted and joined with ','. A re-uploaded wheel changes it.
  std::string Digest() const;
};

// The normalised project name and the version of a distribution's filename: a wheel
// ("torch-2.6.0.dev20250101+cpu-cp311-cp311-linux_x86_64.whl", 5 or 6 '-'-separated fields, the
// name's '-' escaped as '_') or an sdist ("name-1.0.tar.gz", also .zip, .tar.bz2, .tar.xz, .tgz,
// .tar; the version starts after the first '-' that is followed by a digit). The version is not
// checked. nullopt when the name is neither.
std::optional<std::pair<std::string, std::string>> ParseDistributionFilename(
    const std::string& filename);

// The distributions of `project` (compared after NormalizeProjectName) among the files of the
// directory `dir` (not its subdirectories), grouped by version (versions equal under
// ComparePep440 are one) and sorted ascending. Each file's sha256 is computed from its bytes, its
// url is "file://" + its absolute path. Files whose version does not parse are skipped.
// NotFound when `dir` is not a directory; Internal when a file cannot be read.
absl::StatusOr<std::vector<ArtifactVersion>> ListFindLinks(const std::string& dir,
                                                           const std::string& project);

// The distributions of `project` a PEP 503 project page lists: each anchor's href (HTML entities
// decoded) resolved against `page_url` (relative paths, "../", absolute paths and full URLs), its
// "#sha256=" fragment taken as the sha256 and removed from the url, the filename the href's last
// path segment (percent-decoded: "%2B" is '+'). Anchors that are not a distribution of `project`
// or whose version does not parse are skipped; yanked files are kept (pip installs them when
// pinned with ==). Grouped and sorted as ListFindLinks does. InvalidArgument when `page_url` is
// not an absolute URL.
absl::StatusOr<std::vector<ArtifactVersion>> ParseSimpleIndexPage(const std::string& html,
                                                                  const std::string& page_url,
                                                                  const std::string& project);

// What the PEP 503 index at `index_url` lists for `project`, read from the project's page
// `<index_url>/<normalised project>/`. For file:// URLs the page is the file index.html in that
// directory, or, when it has none, the directory's files as ListFindLinks lists them. For
// http:// URLs the page is fetched (one redirect followed, 30 s timeouts, at most 512 MiB).
// Errors: Unimplemented for https:// (not supported yet); InvalidArgument for other schemes, a
// URL without a host or a file:// URL without an absolute path; Unavailable when the server
// cannot be reached or answers 5xx (an infrastructure error: retry); NotFound when the index has
// no such project (HTTP 404, no directory) or a file:// index's directory does not exist;
// PermissionDenied for HTTP 401/403; FailedPrecondition for other answers (a second redirect);
// ResourceExhausted for a larger page; Internal when a file cannot be read.
absl::StatusOr<std::vector<ArtifactVersion>> ListIndex(const std::string& index_url,
                                                       const std::string& project);

// Up to `count` of `versions` nearest to `wanted` in version order, some below it and some at or
// above it (balanced when there are enough on both sides), ascending, as their text: what to
// suggest when `wanted` is not listed.
std::vector<std::string> NearestVersions(const std::vector<ArtifactVersion>& versions,
                                         const Pep440Version& wanted, int count);

// The index in `versions` of the version whose NightlyDate is `date_yyyy_mm_dd` ("2025-01-01"
// matches 2.6.0.dev20250101); the highest such version when several are. nullopt when none is or
// the text is not a date (LooksLikeDate).
std::optional<size_t> FindByDate(const std::vector<ArtifactVersion>& versions,
                                 const std::string& date_yyyy_mm_dd);

// True when `text` is "YYYY-MM-DD" naming a calendar day (2024-02-29 is one, 2025-02-29 not).
bool LooksLikeDate(const std::string& text);

}  // namespace kbisect

#endif  // KBISECT_COMMON_ARTIFACT_PACKAGE_INDEX_H_
