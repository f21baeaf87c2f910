// Copyright 2026 The kbisect Authors.
//
// The coordinator's view of the repositories it bisects: resolving a job's range to a commit
// list, and the diff of the culprit for the report. Read-only but for MakeChange (the revert
// check's commit, pushed under refs/kbisect/try/). Behind an interface so the
// coordinator's logic is tested without git; the real implementation uses libgit2.
#ifndef KBISECT_COORDINATOR_REPOSITORY_VIEW_H_
#define KBISECT_COORDINATOR_REPOSITORY_VIEW_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/git/change_commit.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

class RepositoryView {
 public:
  virtual ~RepositoryView() = default;

  // Resolves spec.good and spec.bad (empty bad = HEAD) in spec.repository and returns the
  // commits of good..bad, index 0 = GOOD and last = BAD, following spec.history. Errors say
  // what is wrong and what to do: unknown revision (NotFound), GOOD not an ancestor of BAD
  // (FailedPrecondition), empty range (InvalidArgument), not a repository (NotFound). A remote
  // repository is fetched first, except when both ends are full commit ids already mirrored.
  virtual absl::StatusOr<std::vector<v1::CommitRef>> ResolveRange(const v1::JobSpec& spec) = 0;

  // The branch a merge commit brought in: `base` is the merge base of its first and second
  // parents, `tip` its second parent (full shas), so base..tip is what the merge added.
  // FailedPrecondition when `merge_sha` is not a merge.
  struct MergedBranchRange {
    std::string base;
    std::string tip;
  };
  virtual absl::StatusOr<MergedBranchRange> MergedBranch(const std::string& repository,
                                                         const std::string& merge_sha) = 0;

  // Files changed between two commits of `repository`, with line counts.
  virtual absl::StatusOr<std::vector<v1::FileChange>> DiffStat(const std::string& repository,
                                                               const std::string& from,
                                                               const std::string& to) = 0;

  // The submodules whose recorded commit differs between commits `from` and `to` of
  // `repository` (moved, added or removed), sorted by path, each with the dependency's commits
  // between the two, read from the dependency's repository (its URL resolved as the workers
  // resolve it, common/git/submodules.h; mirrored like `repository` when it is a URL). A
  // dependency that cannot be read gives a bump with `error` set rather than an error.
  virtual absl::StatusOr<std::vector<v1::SubmoduleBump>> SubmoduleBumps(
      const std::string& repository, const std::string& from, const std::string& to) = 0;

  // The unified patch between two commits of `repository`.
  virtual absl::StatusOr<std::string> DiffPatch(const std::string& repository,
                                                const std::string& from, const std::string& to) = 0;

  // The contents of file `path` in commit `commit` of `repository` (a pin file,
  // JobSpec.descend_pins). NotFound when the commit has no such file.
  virtual absl::StatusOr<std::string> ReadFile(const std::string& repository,
                                               const std::string& commit,
                                               const std::string& path) = 0;

  // Makes the commit of `change` on `base` in `repository` and pushes it to refs/kbisect/try/...
  // there (MakeChangeCommit, common/git/change_commit.h), for the revert check
  // (--verify-revert). A conflict is a result, not an error. FailedPrecondition when
  // `repository` is a URL: the commit must be where the workers fetch, which the coordinator can
  // only write when it is a local path.
  virtual absl::StatusOr<ChangeCommit> MakeChange(const std::string& repository,
                                                  const std::string& base,
                                                  const ChangeSpec& change) = 0;
};

// Returns a libgit2-backed view. Local paths are opened in place (read only: nothing in them is
// written); URLs are mirrored under `cache_dir`.
std::unique_ptr<RepositoryView> NewGitRepositoryView(std::string cache_dir);

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_REPOSITORY_VIEW_H_
