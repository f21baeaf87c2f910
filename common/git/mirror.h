// Copyright 2026 The kbisect Authors.
//
// Bare mirrors of source repositories, kept in a worker's cache directory.
//
// A mirror holds every ref of its source (`+refs/*:refs/*`, like `git clone --mirror`) and is the
// object store that worker worktrees (worktree.h) borrow from. It is created on first use and
// refreshed on demand, typically when a probe asks for a commit the mirror does not have yet:
//
//   ASSIGN_OR_RETURN(std::string git_dir, EnsureMirror(source, cache + "/mirrors/" + key));
//   RETURN_IF_ERROR(EnsureCommitInMirror(source, git_dir, sha));
//
// Concurrency: any number of threads and processes may call EnsureMirror / FetchIntoMirror /
// EnsureCommitInMirror on the same mirror directory at once. Clones and fetches are serialised by
// an exclusive flock(2) on the sibling file "<mirror_dir>.lock"; a clone is built in
// "<mirror_dir>.partial" and renamed into place, so a crashed clone never leaves a half-made
// mirror behind. Readers (HasCommit, worktrees) take no lock: git writes objects before refs and
// packs atomically, so a concurrent fetch is invisible to them until it completes.
//
// The mirror's git config sets gc.auto=0: commits that disappear from the source (force pushes)
// stay readable by the worktrees that still have them checked out. Nothing here ever runs gc.
#ifndef KBISECT_COMMON_GIT_MIRROR_H_
#define KBISECT_COMMON_GIT_MIRROR_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kbisect {

// Makes sure `mirror_dir` holds a bare mirror of `source` and returns the mirror's git directory
// (the absolute path of `mirror_dir`, without a trailing slash). `source` is a URL (https://,
// ssh://, git@host:path, file://) or a local path to a repository (its working tree or git dir).
// Missing parent directories of `mirror_dir` are created.
//
// If the mirror already exists it is returned as is, without fetching; call FetchIntoMirror to
// refresh it. A local source is cloned with hard links to its object files when the two are on the
// same file system (like `git clone --mirror`), which is fast and leaves the source repository
// unchanged. SSH sources authenticate through the ssh agent.
//
// Returns FailedPrecondition if `mirror_dir` exists but is not a bare git repository, NotFound if
// a local `source` does not exist, Unavailable / PermissionDenied for network and authentication
// failures, each with a message naming the source.
absl::StatusOr<std::string> EnsureMirror(const std::string& source, const std::string& mirror_dir);

// Fetches every ref of `source` into the mirror at `mirror_dir` (creating the mirror first if it
// does not exist), force-updating refs and pruning refs the source no longer has. Objects are
// never deleted. Errors are those of EnsureMirror.
absl::Status FetchIntoMirror(const std::string& source, const std::string& mirror_dir);

// Returns true if the repository at `mirror_dir` exists and contains the commit whose full
// 40-hex-digit id is `sha`. Returns false for anything else (no repository, malformed id, an
// object that is not a commit). Never fetches.
bool HasCommit(const std::string& mirror_dir, std::string_view sha);

// Makes sure the mirror at `mirror_dir` (created if needed) contains commit `sha` (a full id),
// fetching from `source` once if it does not. Returns NotFound ("commit X is not in <source> even
// after a fetch ...") if the commit is still missing afterwards.
absl::Status EnsureCommitInMirror(const std::string& source, const std::string& mirror_dir,
                                  std::string_view sha);

// A stable, file-name-safe name for the mirror of `repository` (a URL or path): its base name
// plus a 64-bit FNV-1a hash of the whole location, the same in every build and on every host.
std::string MirrorKey(const std::string& repository);

}  // namespace kbisect

#endif  // KBISECT_COMMON_GIT_MIRROR_H_
