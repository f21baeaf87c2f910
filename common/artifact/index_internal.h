// Copyright 2026 The kbisect Authors.
//
// Pieces the package-index sources share (package_index.cc, find_links.cc, simple_page.cc,
// list_index.cc). Not part of the library's API.
#ifndef KBISECT_COMMON_ARTIFACT_INDEX_INTERNAL_H_
#define KBISECT_COMMON_ARTIFACT_INDEX_INTERNAL_H_

#include <optional>
#include <string>
#include <vector>

#include "common/artifact/package_index.h"

namespace kbisect {
namespace artifact_internal {

// The version text of `filename` when it is a distribution of the project whose normalised name
// is `normalized_project` and that version parses; nullopt otherwise.
std::optional<std::string> VersionIfDistributionOf(const std::string& filename,
                                                   const std::string& normalized_project);

// `files` grouped by version (equal under ComparePep440) and sorted ascending, each version's
// files by filename. Files whose version does not parse are dropped.
std::vector<ArtifactVersion> GroupByVersion(std::vector<ArtifactFile> files);

// `text` with each "%XY" (two hex digits) replaced by its byte; other characters as they are.
std::string PercentDecode(const std::string& text);

// `reference` resolved against the absolute URL `base` (RFC 3986, section 5.2, without the
// query's subtleties): a full URL as it is, "//host/..." with base's scheme, "/path" on base's
// origin, anything else relative to base's directory; dot segments removed. nullopt when `base`
// is not an absolute URL (scheme "://").
std::optional<std::string> ResolveUrl(const std::string& base, const std::string& reference);

}  // namespace artifact_internal
}  // namespace kbisect

#endif  // KBISECT_COMMON_ARTIFACT_INDEX_INTERNAL_H_
