// Copyright 2026 The kbisect Authors.
#include "coordinator/crash_points.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace kbisect {
namespace {

absl::Status Read(const char* name, int64_t* value) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return absl::OkStatus();
  if (!absl::SimpleAtoi(text, value) || *value < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, "='", text, "' is not a non-negative integer (a test-only setting)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CrashPoints> CrashPointsFromEnvironment() {
  CrashPoints points;
  if (absl::Status read = Read("KBISECT_TEST_CRASH_AFTER_COMMIT", &points.after_commit);
      !read.ok()) {
    return read;
  }
  if (absl::Status read = Read("KBISECT_TEST_CRASH_BEFORE_REPLY", &points.before_reply);
      !read.ok()) {
    return read;
  }
  return points;
}

void CrashAtPoint(const char* what, int64_t n) {
  const std::string line =
      absl::StrCat("kbisect-coordinator: test crash point: ", what, " ", n, "\n");
  // write(2) only: nothing buffered, nothing that could block on a lock held elsewhere.
  ssize_t written = write(STDERR_FILENO, line.data(), line.size());
  (void)written;
  // The exit_group system call itself, not _exit: under ThreadSanitizer _exit is intercepted
  // and first finalizes the tool, while the other threads keep serving (they replied to RPCs
  // after the crash point, and the process never ended); exit_group ends every thread at once,
  // as a kill -9 does, in every build.
  syscall(SYS_exit_group, kCrashPointExitCode);
  _exit(kCrashPointExitCode);  // Not reached.
}

}  // namespace kbisect
