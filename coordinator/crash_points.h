// Copyright 2026 The kbisect Authors.
//
// Test-only crash points: they make the coordinator process end with _exit (no destructors, no
// flush, as abruptly as a kill -9) at a chosen point, so that crash-consistency tests can kill
// the real kbisect-coordinator exactly after a given state change. They are compiled into the
// real binary and armed only through environment variables that no deployment sets:
//
//   KBISECT_TEST_CRASH_AFTER_COMMIT=N  exit right after the N-th journal commit of this process
//                                      (a commit that stores a new job, journal entries or a
//                                      final status; commits of worker rows alone do not count)
//   KBISECT_TEST_CRASH_BEFORE_REPLY=N  exit right before the reply of the N-th mutating RPC of
//                                      this process (an RPC that changed anything, worker rows
//                                      included), after the lock's release and, unless it
//                                      replies without waiting for its changes (a Synchronize),
//                                      after their commit
//
// Counts start at 1 with each process; 0 or unset disarms a point. The process prints one line
// naming the point to stderr and exits with kCrashPointExitCode.
#ifndef KBISECT_COORDINATOR_CRASH_POINTS_H_
#define KBISECT_COORDINATOR_CRASH_POINTS_H_

#include <cstdint>

#include "absl/status/statusor.h"

namespace kbisect {

// The exit status of a process ended by a crash point.
inline constexpr int kCrashPointExitCode = 86;

struct CrashPoints {
  int64_t after_commit = 0;  // The N-th journal commit; 0: never.
  int64_t before_reply = 0;  // The N-th mutating RPC's reply; 0: never.

  bool armed() const { return after_commit > 0 || before_reply > 0; }
};

// Reads KBISECT_TEST_CRASH_AFTER_COMMIT and KBISECT_TEST_CRASH_BEFORE_REPLY. InvalidArgument
// when one is set to something other than a non-negative integer.
absl::StatusOr<CrashPoints> CrashPointsFromEnvironment();

// Prints "kbisect-coordinator: test crash point: <what> <n>" to stderr and ends the process at
// once with kCrashPointExitCode.
[[noreturn]] void CrashAtPoint(const char* what, int64_t n);

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_CRASH_POINTS_H_
