// Copyright 2026 The kbisect Authors.
//
// A change tried on a base commit (`kbisect try`, `--verify-revert`, issue 50): a revert of a
// commit, another commit picked onto the base, or a patch file, made into a real commit whose
// parent is the base, so that every part of kbisect that measures commits (workers' mirrors,
// the build and result caches, the hardware class, the page) measures it like any other.
//
// The commit is made in a scratch clone that borrows the repository's objects (`git clone
// --shared --no-checkout`), never in the user's checkout, index or branches, and is pushed to
// the repository under refs/kbisect/try/<base>-<kind>-<digest>, which workers' mirrors fetch
// with every other ref. Its author and committer are "kbisect" with the base's commit date, so
// the same change on the same base is the same commit (and reuses its cached results).
//
//   ChangeSpec revert{ChangeSpec::Kind::kRevert, culprit_sha};
//   ASSIGN_OR_RETURN(ChangeCommit made, MakeChangeCommit(runner, repo_dir, bad_sha, revert));
//   if (made.conflict) ... made.conflict->files, made.conflict->later_commits ...
//   else ... measure made.sha against bad_sha ...
#ifndef KBISECT_COMMON_GIT_CHANGE_COMMIT_H_
#define KBISECT_COMMON_GIT_CHANGE_COMMIT_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/exec/exec.h"

namespace kbisect {

// What to change on the base.
struct ChangeSpec {
  enum class Kind {
    kRevert,  // `target` is a commit whose changes are undone (git revert; -m 1 for a merge).
    kCommit,  // `target` is a commit whose changes are applied (git cherry-pick; -m 1 for a merge).
    kPatch,   // `target` is a patch file (git apply --index), relative to the current directory.
  };
  Kind kind = Kind::kRevert;
  std::string target;

  // "revert", "commit" or "patch".
  static const char* KindName(Kind kind);
};

// Why a revert or a pick did not apply cleanly on the base.
struct ChangeConflict {
  // The files git left conflicted, sorted.
  std::vector<std::string> files;
  // The commits after the changed one, up to the base, that touched those files, newest first:
  // "1a2b3c4d5e6f Rework the tile loop" (at most 20).
  std::vector<std::string> later_commits;
};

// The commit MakeChangeCommit made, or the conflict that kept it from making one.
struct ChangeCommit {
  std::string base;  // The base's full sha.
  std::string target;  // The changed commit's full sha (kRevert, kCommit), or the patch's path.
  std::string sha;  // The new commit (empty on a conflict).
  std::string ref;  // Where it was pushed: refs/kbisect/try/... (empty on a conflict).
  // "revert of 1a2b3c4d5e6f on 9f8e7d6c5b4a": for reports and the commit's subject.
  std::string description;
  std::optional<ChangeConflict> conflict;
};

// Makes the commit of `change` on `base` in the repository at `repo` (a working tree or a bare
// repository) and pushes it to refs/kbisect/try/..., leaving the repository's checkout, index,
// HEAD and branches as they were. A revert or pick that conflicts is not an error: the result
// has `conflict` and no commit. Errors: InvalidArgument naming the revision for an unknown base
// or target; InvalidArgument naming the file and the hunk for a patch that does not apply
// ("src/kernel.cu: hunk @@ -12,7 +12,8 @@ does not apply at line 12"), or an unreadable patch;
// FailedPrecondition when the change is empty on the base (a revert of a commit already
// reverted, a pick already there); Internal when git fails otherwise (its output's tail).
absl::StatusOr<ChangeCommit> MakeChangeCommit(CommandRunner& runner, const std::string& repo,
                                              const std::string& base, const ChangeSpec& change);

// Where `git apply` said a patch failed, with the hunk of `patch_text` it means. Pure.
struct ApplyFailure {
  std::string file;  // "src/kernel.cu", or "" when the output names none.
  int line = 0;      // The line the hunk was tried at (0: not said).
  std::string hunk;  // "@@ -12,7 +12,8 @@" (empty when the patch has no hunk at that line).
  std::string what;  // git's reason: "patch does not apply", "No such file or directory", ...
};
ApplyFailure ParseApplyFailure(absl::string_view apply_output, absl::string_view patch_text);

}  // namespace kbisect

#endif  // KBISECT_COMMON_GIT_CHANGE_COMMIT_H_
