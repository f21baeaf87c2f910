// Copyright 2026 The kbisect Authors.
//
// Termination signals (SIGINT, SIGTERM) received synchronously, so that daemons shut down in an
// orderly way (drain, then stop) instead of dying mid-write:
//
//   BlockTerminationSignals();  // First thing in main, before any thread starts.
//   while (int sig = WaitForTerminationSignal(absl::Seconds(1)); sig == 0) { /* periodic */ }
#ifndef KBISECT_COMMON_EXEC_SIGNALS_H_
#define KBISECT_COMMON_EXEC_SIGNALS_H_

#include <atomic>
#include <functional>
#include <thread>

#include "absl/time/time.h"

namespace kbisect {

// Blocks SIGINT and SIGTERM in the calling thread and every thread it starts afterwards, so that
// they are only received through WaitForTerminationSignal.
void BlockTerminationSignals();

// Waits up to `timeout` for SIGINT or SIGTERM (which must be blocked). Returns the signal
// number, or 0 when none arrived in time.
int WaitForTerminationSignal(absl::Duration timeout);

// Calls `on_signal` (once, on its own thread) when SIGINT or SIGTERM arrives, until destroyed.
// Blocks both signals in the calling thread first, so construct it before starting other threads
// (they inherit the mask) and the signal is never delivered to a random thread.
class TerminationWatcher {
 public:
  explicit TerminationWatcher(std::function<void()> on_signal);
  ~TerminationWatcher();

  TerminationWatcher(const TerminationWatcher&) = delete;
  TerminationWatcher& operator=(const TerminationWatcher&) = delete;

  // True once a signal arrived.
  bool signalled() const { return signalled_; }

 private:
  std::atomic<bool> done_{false};
  std::atomic<bool> signalled_{false};
  std::thread thread_;
};

}  // namespace kbisect

#endif  // KBISECT_COMMON_EXEC_SIGNALS_H_
