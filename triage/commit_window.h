// Copyright 2026 The kbisect Authors.
//
// The commit window of a real regression (last_good..first_bad, first-parent) and the ranking of
// its commits by how well they match the affected slice of the product: a configurable map from
// platform to commit-subject tags and paths (b200_cute -> [cute], [cutedsl],
// helion/_compiler/cute/**). Commits that touch only benchmark-harness or CI paths
// (benchmarks/**, .github/**) are flagged as possible measurement changes.
//
//   ASSIGN_OR_RETURN(auto repo, GitRepo::Open(path));
//   ASSIGN_OR_RETURN(CommitWindow w, RankWindow(*repo, good, bad, "b200_cute",
//                                               SliceMap::HelionDefault()));
#ifndef KBISECT_TRIAGE_COMMIT_WINDOW_H_
#define KBISECT_TRIAGE_COMMIT_WINDOW_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/git/git_repo.h"
#include "triage/triage.h"

namespace kbisect {
namespace triage {

// Returns true if `path` matches the glob `pattern`: `**` matches any run of characters
// (slashes included), `*` any run without a slash, `?` one character other than a slash; every
// other character matches itself. "dir/**" matches every path under dir.
bool GlobMatch(std::string_view pattern, std::string_view path);

// What identifies commits of one slice.
struct SliceRule {
  // Subject tags, matched case-insensitively as substrings ("[cute]").
  std::vector<std::string> tags;
  // Path globs (see GlobMatch).
  std::vector<std::string> paths;
};

// Platform -> slice rules, plus the paths of the benchmark harness and CI.
struct SliceMap {
  // (platform glob, rule) pairs, tried in order; the first whose glob matches the platform wins.
  std::vector<std::pair<std::string, SliceRule>> platforms;
  // Paths whose change alters how performance is measured, not the product.
  std::vector<std::string> method_paths = {"benchmarks/**", ".github/**"};

  // Returns the map for Helion: *_cute -> [cute], [cutedsl], helion/_compiler/cute/**; *pallas*
  // and tpu* -> [pallas], [tpu], helion/_compiler/pallas/**; mi* / *rocm* / *amd* -> [amd],
  // [rocm]; everything else -> helion/**.
  static SliceMap HelionDefault();

  // Returns the rule of `platform`, or nullptr when no glob matches it.
  const SliceRule* RuleFor(std::string_view platform) const;
};

// Parses a slice map from JSON:
//   {"platforms": {"b200_cute": {"tags": ["[cute]"], "paths": ["helion/_compiler/cute/**"]}},
//    "method_paths": ["benchmarks/**", ".github/**"]}
// Platform keys may be globs; they are tried in file order. Errors: InvalidArgument naming the
// field that is malformed.
absl::StatusOr<SliceMap> ParseSliceMap(std::string_view json_text);

// One commit of the window with its ranking.
struct RankedCommit {
  std::string sha;        // Full id.
  std::string short_sha;  // First 8 hex digits.
  std::string subject;
  std::string author;
  std::string date;  // Author date, like %ai.
  // 1-based position in the window, oldest first (the last is the first-bad nightly's commit).
  int position = 0;
  double score = 0;
  bool tag_match = false;
  int matching_paths = 0;
  int files_changed = 0;
  // Every changed file is under a method path: a possible measurement change.
  bool harness_only = false;
  // The subject carries another slice's tag and none of this slice's.
  bool other_slice = false;
};

// The window and its ranked commits.
struct CommitWindow {
  std::string good;  // Full id of the last good nightly's commit.
  std::string bad;   // Full id of the first bad nightly's commit.
  // Commits in good..bad (first parent), best match first.
  std::vector<RankedCommit> commits;
};

// Lists `good`..`bad` (first-parent, as `git log --first-parent good..bad`) in `repo` and ranks
// each commit against the rule of `platform` in `map`: +3 for a tag in the subject, +1 for
// touching a slice path plus up to +2 for the fraction of its files that do, -2 for another
// slice's tag only, -1 when it touches only method paths (it is still listed, flagged). Ties keep
// window order. Errors: those of GitRepo::CommitRange and GetCommit, with a hint to fetch when a
// nightly's commit is not in the clone.
absl::StatusOr<CommitWindow> RankWindow(const GitRepo& repo, std::string_view good,
                                        std::string_view bad, std::string_view platform,
                                        const SliceMap& map);

// Fills the commit-window evidence of `evidence` (harness_only_commit, slice_commit) from
// `window`.
void ApplyWindowEvidence(const CommitWindow& window, Evidence* evidence);

}  // namespace triage
}  // namespace kbisect

#endif  // KBISECT_TRIAGE_COMMIT_WINDOW_H_
