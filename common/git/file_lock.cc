// Copyright 2026 The kbisect Authors.
#include "common/git/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace kbisect {
namespace fs = std::filesystem;

namespace {

absl::StatusOr<int> OpenLockFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("cannot open lock file '", path, "': ", std::strerror(errno)));
  }
  return fd;
}

}  // namespace

absl::StatusOr<std::unique_ptr<FileLock>> FileLock::Acquire(const std::string& path) {
  absl::StatusOr<int> fd = OpenLockFile(path);
  if (!fd.ok()) return fd.status();
  while (flock(*fd, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    const int saved = errno;
    close(*fd);
    return absl::InternalError(absl::StrCat("cannot lock '", path, "': ", std::strerror(saved)));
  }
  return std::unique_ptr<FileLock>(new FileLock(*fd));
}

absl::StatusOr<std::unique_ptr<FileLock>> FileLock::TryAcquire(const std::string& path,
                                                               const std::string& holder_hint) {
  return TryLock(path, holder_hint, LOCK_EX);
}

absl::StatusOr<std::unique_ptr<FileLock>> FileLock::TryAcquireShared(
    const std::string& path, const std::string& holder_hint) {
  return TryLock(path, holder_hint, LOCK_SH);
}

absl::StatusOr<std::unique_ptr<FileLock>> FileLock::TryLock(const std::string& path,
                                                            const std::string& holder_hint,
                                                            int operation) {
  absl::StatusOr<int> fd = OpenLockFile(path);
  if (!fd.ok()) return fd.status();
  while (flock(*fd, operation | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    const int saved = errno;
    close(*fd);
    if (saved == EWOULDBLOCK) {
      return absl::FailedPreconditionError(absl::StrCat("'", path, "' is locked by ", holder_hint));
    }
    return absl::InternalError(absl::StrCat("cannot lock '", path, "': ", std::strerror(saved)));
  }
  return std::unique_ptr<FileLock>(new FileLock(*fd));
}

absl::Status FileLock::Downgrade() {
  while (flock(fd_, LOCK_SH) != 0) {
    if (errno == EINTR) continue;
    return absl::InternalError(absl::StrCat("cannot share a lock: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

FileLock::~FileLock() { close(fd_); }

int RemoveStaleGitLocks(const std::string& git_dir) {
  std::error_code ec;
  std::vector<fs::path> stale;
  fs::recursive_directory_iterator it(git_dir, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path& path = it->path();
    if (it.depth() == 0 && path.filename() == "objects") {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(ec) && absl::EndsWith(path.filename().string(), ".lock")) {
      stale.push_back(path);
    }
  }
  int removed = 0;
  for (const fs::path& path : stale) {
    if (fs::remove(path, ec)) ++removed;
  }
  return removed;
}

}  // namespace kbisect
