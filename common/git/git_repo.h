// Copyright 2026 The kbisect Authors.
//
// Read-only access to a git repository through libgit2: revision resolution, ancestry, the commit
// range a bisection searches, commit metadata and diffs.
//
// GitRepo never writes to the repository it opens (not its refs, index, config or objects), so it
// is safe to point at a user's own checkout.
//
//   ASSIGN_OR_RETURN(auto repo, GitRepo::Open("."));
//   ASSIGN_OR_RETURN(std::string good, repo->ResolveCommit("v1.2"));
//   ASSIGN_OR_RETURN(std::string bad, repo->ResolveCommit("HEAD"));
//   ASSIGN_OR_RETURN(std::vector<std::string> commits,
//                    repo->CommitRange(good, bad, /*first_parent=*/true));
#ifndef KBISECT_COMMON_GIT_GIT_REPO_H_
#define KBISECT_COMMON_GIT_GIT_REPO_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/sync/mutex.h"

struct git_repository;

namespace kbisect {

// The metadata of one commit, as `git log --format=...` would print it.
struct CommitInfo {
  // The full 40-hex-digit commit id (%H).
  std::string sha;
  // The full 40-hex-digit id of the commit's tree (%T).
  std::string tree_sha;
  // The full ids of the parents, first parent first (%P). Empty for a root commit.
  std::vector<std::string> parents;
  // The author's name (%an) and email (%ae).
  std::string author_name;
  std::string author_email;
  // The author time in seconds since the Unix epoch (%at).
  int64_t author_time = 0;
  // The author's time-zone offset from UTC in minutes, e.g. +60 for "+0100".
  int author_tz_offset_minutes = 0;
  // The author date in the author's time zone, formatted like %ai: "2026-01-02 15:04:05 +0100".
  std::string author_date;
  // The committer's name (%cn).
  std::string committer_name;
  // The committer time in seconds since the Unix epoch (%ct).
  int64_t commit_time = 0;
  // The subject (%s): the first paragraph of the message, its lines joined by single spaces.
  std::string subject;
  // The body (%b): the message after the subject paragraph, with surrounding blank lines and
  // trailing whitespace removed. Empty when the message is only a subject.
  std::string body;
};

// One file changed between two commits, as `git diff --numstat -M` reports it.
struct FileChange {
  // The path after the change (for a deletion, the path of the deleted file).
  std::string path;
  // The path before the change when status is 'R' (renamed) or 'C' (copied); empty otherwise.
  std::string old_path;
  // The change kind, as in `git diff --name-status`: 'A' added, 'M' modified, 'D' deleted,
  // 'R' renamed, 'C' copied, 'T' type changed (e.g. file <-> symlink).
  char status = 'M';
  // Lines added and removed. Both are 0 for binary files.
  int additions = 0;
  int deletions = 0;
  // True if git considers either side binary (numstat prints "-\t-").
  bool binary = false;
};

// A read-only handle on one git repository (bare or with a working tree).
//
// Every method that takes a revision accepts anything ResolveCommit accepts. All methods are
// thread-safe: calls on one GitRepo are serialised by an internal mutex (libgit2 repository handles
// must not be used concurrently); open one GitRepo per thread for parallelism.
class GitRepo {
 public:
  // Opens the repository containing `path`, searching upward from it like `git rev-parse` does
  // (without crossing file-system boundaries). `path` may be a working-tree directory, a
  // subdirectory of one, a .git directory or a bare repository.
  //
  // Returns NotFound if `path` does not exist, FailedPrecondition ("'/x' is not inside a git
  // repository ...") with a hint if no repository contains it, and another error if the
  // repository exists but cannot be opened (for example it is owned by another user).
  static absl::StatusOr<std::unique_ptr<GitRepo>> Open(const std::string& path);

  ~GitRepo();
  GitRepo(const GitRepo&) = delete;
  GitRepo& operator=(const GitRepo&) = delete;

  // Returns the absolute path of the git directory (".git" of a checkout, or the bare repository
  // itself), without a trailing slash.
  std::string git_dir() const;

  // Returns the absolute path of the working tree without a trailing slash, or "" for a bare
  // repository.
  std::string workdir() const;

  // Resolves a revision to the full 40-hex-digit id of a commit. Accepts everything
  // `git rev-parse REV^{commit}` accepts: full or abbreviated ids, branch and remote-branch names,
  // tags (lightweight or annotated; annotated tags are peeled to the commit they point at),
  // HEAD, and suffixes such as HEAD~3, HEAD^2, main@{1}.
  //
  // Returns NotFound ("unknown revision 'x' in <repo>: <detail>; check `git log` ...") if nothing
  // matches, InvalidArgument if an abbreviated id is ambiguous or the revision names a tree or a
  // blob rather than a commit.
  absl::StatusOr<std::string> ResolveCommit(std::string_view rev) const;

  // Returns true if `ancestor` is reachable from `descendant` through parent links, following all
  // parents (like `git merge-base --is-ancestor`). A commit counts as its own ancestor, so
  // IsAncestor(x, x) is true. Both arguments are revisions; errors are those of ResolveCommit.
  absl::StatusOr<bool> IsAncestor(std::string_view ancestor, std::string_view descendant) const;

  // Returns the best common ancestor of `a` and `b` (like `git merge-base a b`). NotFound when
  // they share no history; otherwise the errors of ResolveCommit.
  absl::StatusOr<std::string> MergeBase(std::string_view a, std::string_view b) const;

  // Returns the commits a bisection between `good` and `bad` searches, oldest first:
  // [good, c1, ..., bad], so index 0 is good and the last element is bad.
  //
  // With `first_parent`, c1..bad are exactly `git rev-list --first-parent --reverse good..bad`:
  // bad's first-parent chain down to good. good must lie ON that chain; if good is an ancestor of
  // bad only through a merged side branch, returns FailedPrecondition saying so and suggesting
  // --no-first-parent (or a good commit on the mainline).
  //
  // Without `first_parent`, c1..bad are exactly `git rev-list --topo-order --reverse good..bad`:
  // every commit reachable from bad and not from good (side-branch commits included), in git's
  // topological order, reversed. This is one linearisation of a DAG; a merge always comes after
  // all of its parents in the range.
  //
  // Returns FailedPrecondition if good is not an ancestor of bad (the message says which is
  // newer if the two are swapped), InvalidArgument if they are the same commit (an empty range),
  // and the errors of ResolveCommit for unknown revisions.
  absl::StatusOr<std::vector<std::string>> CommitRange(std::string_view good, std::string_view bad,
                                                       bool first_parent) const;

  // Returns the metadata of the commit `rev` resolves to.
  absl::StatusOr<CommitInfo> GetCommit(std::string_view rev) const;

  // Returns the files that differ between the trees of commits `from` and `to`, with rename
  // detection as `git diff --numstat -M` does it (50% similarity, no copy detection, rename limit
  // 1000), ordered by path like git. Identical trees give an empty list.
  absl::StatusOr<std::vector<FileChange>> DiffStat(std::string_view from,
                                                   std::string_view to) const;

  // Returns the paths whose content differs between the trees of commits `from` and `to`, ordered
  // by path like git (no rename detection: a rename gives both of its paths; a submodule's
  // gitlink is one path), reading only the trees that differ. Cheap enough to compare one commit
  // with many: how far apart two builds' sources are.
  absl::StatusOr<std::vector<std::string>> ChangedPaths(std::string_view from,
                                                        std::string_view to) const;

  // The paths commit `rev`'s tree holds: its files (blobs and symbolic links) and its
  // submodules (gitlinks), each ordered like git.
  struct TreePaths {
    std::vector<std::string> files;
    std::vector<std::string> submodules;

    // True when `path` ('/'-separated, relative to the top) is one of the files or lies below
    // one of the submodules: a file the commit holds, not one a build or a run wrote beside it.
    // `files` must be in byte order, as ListTree lists them.
    bool Holds(std::string_view path) const;
  };
  absl::StatusOr<TreePaths> ListTree(std::string_view rev) const;

  // Returns the unified patch from commit `from` to commit `to`, like `git diff -M from to`
  // (3 lines of context, "diff --git a/... b/..." headers, "Binary files ... differ" for binary
  // files). Identical trees give "".
  absl::StatusOr<std::string> DiffPatch(std::string_view from, std::string_view to) const;

  // Returns the contents of file `path` ('/'-separated, relative to the top) in commit `rev`.
  // NotFound when the commit has no such path or it is not a file.
  absl::StatusOr<std::string> ReadFile(std::string_view rev, std::string_view path) const;

 private:
  // Releases a git_repository with git_repository_free.
  struct RepositoryDeleter {
    void operator()(git_repository* repo) const;
  };

  explicit GitRepo(git_repository* repo);

  // Helpers; the caller holds mu_.
  absl::StatusOr<std::string> ResolveLocked(std::string_view rev) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<bool> IsAncestorLocked(const std::string& ancestor,
                                        const std::string& descendant) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string DescribeRepoLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string git_dir_;
  const std::string workdir_;
  mutable kbisect::Mutex mu_;
  const std::unique_ptr<git_repository, RepositoryDeleter> repo_ ABSL_PT_GUARDED_BY(mu_);
};

}  // namespace kbisect

#endif  // KBISECT_COMMON_GIT_GIT_REPO_H_
