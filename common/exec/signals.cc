// Copyright 2026 The kbisect Authors.
#include "common/exec/signals.h"

#include <pthread.h>
#include <signal.h>

#include <cerrno>

namespace kbisect {
namespace {

sigset_t TerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

void BlockTerminationSignals() {
  const sigset_t set = TerminationSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int WaitForTerminationSignal(absl::Duration timeout) {
  const sigset_t set = TerminationSignals();
  const timespec wait = absl::ToTimespec(timeout);
  while (true) {
    const int sig = sigtimedwait(&set, nullptr, &wait);
    if (sig > 0) return sig;
    if (errno != EINTR) return 0;
  }
}

TerminationWatcher::TerminationWatcher(std::function<void()> on_signal) {
  BlockTerminationSignals();
  thread_ = std::thread([this, on_signal = std::move(on_signal)] {
    while (!done_) {
      if (WaitForTerminationSignal(absl::Milliseconds(200)) != 0) {
        signalled_ = true;
        on_signal();
        return;
      }
    }
  });
}

TerminationWatcher::~TerminationWatcher() {
  done_ = true;
  thread_.join();
}

}  // namespace kbisect
