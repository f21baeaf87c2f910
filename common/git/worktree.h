// Copyright 2026 The kbisect Authors.
//
// A worker slot's private checkout, backed by a bare mirror (mirror.h).
//
// Design: a Worktree is an ordinary non-bare repository in its own directory ("<dir>/.git" with
// its own HEAD, index and config) that borrows all objects from the mirror through
// ".git/objects/info/alternates". It is NOT a `git worktree` of the mirror, because:
//   * it writes nothing into the mirror: a `git worktree` needs an admin directory inside the
//     mirror and a branch per worktree, and a mirror fetch (`+refs/*:refs/*` with pruning) would
//     delete or clobber such branches;
//   * slots are independent: each can be deleted with `rm -rf` or recreated at any time, and slots
//     never contend on locks in a shared repository;
//   * objects are shared, so a new slot costs only its checked-out files.
// Limitation: the worktree has no refs except a detached HEAD, so build scripts that run
// `git describe --tags` in it find no tags (`git rev-parse HEAD` and `git log` work).
//
// The user's repository is never involved: worktrees only read the mirror.
//
//   ASSIGN_OR_RETURN(auto tree, Worktree::OpenOrCreate(mirror_git_dir, cache + "/slots/0"));
//   RETURN_IF_ERROR(tree->Checkout(sha));   // then build in tree->path()
#ifndef KBISECT_COMMON_GIT_WORKTREE_H_
#define KBISECT_COMMON_GIT_WORKTREE_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

struct git_repository;

namespace kbisect {

class FileLock;

// A private checkout directory whose objects come from a mirror. Not thread-safe: use one Worktree
// per worker slot, from one thread at a time. Two Worktree objects must not share a directory.
class Worktree {
 public:
  // Opens the worktree in `dir`, creating it (and missing parent directories) if `dir` holds no
  // repository yet. `mirror_dir` is the git directory of a bare mirror (the value EnsureMirror
  // returns). An existing worktree is re-pointed at `mirror_dir` if its alternates name another
  // object store. A new worktree has an unborn HEAD and no files until the first Checkout; files
  // already in a new `dir` are treated as untracked.
  //
  // The Worktree holds an exclusive lock on `dir` for its lifetime, so git lock files found
  // there (an index.lock left by a worker killed mid-checkout) are stale and are removed.
  //
  // Returns FailedPrecondition if `mirror_dir` is not a bare repository, `dir` holds a
  // repository that is not a kbisect worktree (a bare repository), or another Worktree (in this
  // or another process) has `dir` open, and Internal for file-system errors.
  static absl::StatusOr<std::unique_ptr<Worktree>> OpenOrCreate(const std::string& mirror_dir,
                                                                const std::string& dir);

  ~Worktree();
  Worktree(const Worktree&) = delete;
  Worktree& operator=(const Worktree&) = delete;

  // Makes the directory a forced, detached checkout of commit `sha` (a full or abbreviated hex id;
  // refs are not accepted since the worktree has none). Afterwards:
  //   * every tracked file matches the commit exactly; local modifications are overwritten;
  //   * files the commit does not have are removed;
  //   * untracked files are removed like `git clean -fd` (without -x) would, together with the
  //     directories this empties, judged by the .gitignore files of the new commit: files git
  //     ignores (by .gitignore, .git/info/exclude or SetExcludes), such as a build directory, are
  //     kept, even inside otherwise untracked directories, so builds stay incremental;
  //   * HEAD is detached at the commit and the index matches it;
  //   * a submodule (a gitlink) is only an empty directory where none was, and what is in its
  //     directory is left alone: SubmoduleCheckout (submodules.h) checks submodules out.
  // Only files that differ are written (the index's stat data tells which are unchanged), so
  // moving between nearby commits costs about the size of the change plus two stats per file.
  //
  // Returns NotFound if the commit is not in the mirror (fetch it with EnsureCommitInMirror and
  // retry), InvalidArgument if `sha` is not hex or is ambiguous, and another error if writing the
  // files fails (the worktree may then be partly updated; a later Checkout repairs it).
  absl::Status Checkout(std::string_view sha);

  // While `keep` is set, Checkout leaves untracked files alone, as `git checkout` does, instead
  // of removing them: for a checkout unpacked with another host's build outputs (a build fetched
  // from a build store, worker/build_store.h), whose outputs the commit's .gitignore may not
  // cover. Off by default.
  void KeepUntracked(bool keep) { keep_untracked_ = keep; }

  // Sets gitignore-style patterns (one per element) that are written to .git/info/exclude, so that
  // matching untracked paths survive Checkout like ignored files do, e.g. {"/build-kbisect/"}.
  // Replaces the patterns of any earlier call.
  absl::Status SetExcludes(const std::vector<std::string>& patterns);

  // Returns the absolute path of the checkout directory, without a trailing slash.
  std::string path() const;

  // Returns the full id of the commit checked out (HEAD), or "" before the first Checkout.
  std::string head() const;

 private:
  // Releases a git_repository with git_repository_free.
  struct RepositoryDeleter {
    void operator()(git_repository* repo) const;
  };

  Worktree(std::string path, std::string mirror_dir, git_repository* repo,
           std::unique_ptr<FileLock> slot_lock);

  const std::string path_;
  const std::string mirror_dir_;
  const std::unique_ptr<git_repository, RepositoryDeleter> repo_;
  const std::unique_ptr<FileLock> slot_lock_;
  bool keep_untracked_ = false;  // KeepUntracked.
};

}  // namespace kbisect

#endif  // KBISECT_COMMON_GIT_WORKTREE_H_
