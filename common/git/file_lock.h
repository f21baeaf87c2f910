// Copyright 2026 The kbisect Authors.
//
// Advisory locks on files (flock(2)) that guard kbisect's caches: a mirror is written by one
// fetch at a time, a worktree slot is used by one worker at a time, a cached build is built by
// one worker at a time and read by any number. Holding the lock also proves that git lock files
// ("*.lock") left inside what it guards are stale: their writer was killed.
#ifndef KBISECT_COMMON_GIT_FILE_LOCK_H_
#define KBISECT_COMMON_GIT_FILE_LOCK_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kbisect {

// A flock(2) on a lock file, exclusive unless taken with TryAcquireShared, released when the
// object is destroyed (or the process dies). Each instance opens its own file description, so it
// excludes other threads of this process as well as other processes.
class FileLock {
 public:
  // Waits until the lock on `path` (created if missing) is held. Internal on I/O errors.
  static absl::StatusOr<std::unique_ptr<FileLock>> Acquire(const std::string& path);

  // Takes the lock on `path` without waiting. FailedPrecondition when another holder has it,
  // naming the path and `holder_hint` (what holds such locks, e.g. "another kbisect worker").
  static absl::StatusOr<std::unique_ptr<FileLock>> TryAcquire(const std::string& path,
                                                              const std::string& holder_hint);

  // Takes a shared lock on `path` (created if missing) without waiting: any number of shared
  // holders may hold it at once, and while one does no exclusive lock is granted.
  // FailedPrecondition when an exclusive holder has it, naming the path and `holder_hint`.
  static absl::StatusOr<std::unique_ptr<FileLock>> TryAcquireShared(const std::string& path,
                                                                    const std::string& holder_hint);

  // Turns this exclusive lock into a shared one. The conversion is not atomic (flock(2) drops
  // the lock before it takes the shared one), so another process may take the lock exclusively
  // in between unless something else excludes it. Internal on I/O errors (then no lock is held).
  absl::Status Downgrade();

  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  // Takes the flock(2) `operation` (LOCK_EX or LOCK_SH) on `path` without waiting.
  static absl::StatusOr<std::unique_ptr<FileLock>> TryLock(const std::string& path,
                                                           const std::string& holder_hint,
                                                           int operation);

  explicit FileLock(int fd) : fd_(fd) {}
  const int fd_;
};

// Removes git's lock files ("*.lock", e.g. index.lock, HEAD.lock, packed-refs.lock,
// refs/heads/main.lock) under the git directory `git_dir`, skipping the objects directory. Only
// call it while holding the FileLock that every writer of `git_dir` takes: then any such file
// was left by a killed writer. Returns how many were removed.
int RemoveStaleGitLocks(const std::string& git_dir);

}  // namespace kbisect

#endif  // KBISECT_COMMON_GIT_FILE_LOCK_H_
