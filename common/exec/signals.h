// Copyright 2026 The kbisect Authors.
//
// Termination signals (SIGINT, SIGTERM) received synchronously, so that daemons shut down in an
// orderly way (drain, then stop) instead of dying mid-write:
//
//   BlockTerminationSignals();  // First thing in main, before any thread starts.
//   while (int sig = WaitForTerminationSignal(absl::Seconds(1)); sig == 0) { /* periodic */ }
#ifndef KBISECT_COMMON_EXEC_SIGNALS_H_
#define KBISECT_COMMON_EXEC_SIGNALS_H_

#include "absl/time/time.h"

namespace kbisect {

// Blocks SIGINT and SIGTERM in the calling thread and every thread it starts afterwards, so that
// they are only received through WaitForTerminationSignal.
void BlockTerminationSignals();

// Waits up to `timeout` for SIGINT or SIGTERM (which must be blocked). Returns the signal
// number, or 0 when none arrived in time.
int WaitForTerminationSignal(absl::Duration timeout);

}  // namespace kbisect

#endif  // KBISECT_COMMON_EXEC_SIGNALS_H_
