// Copyright 2026 The kbisect Authors.
//
// Time behind an interface, so that lease expiry, heartbeats and drift schedules can be tested
// deterministically (LevelDB's Env::NowMicros plays the same role).
#ifndef KBISECT_COMMON_CLOCK_CLOCK_H_
#define KBISECT_COMMON_CLOCK_CLOCK_H_

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace kbisect {

// A source of the current time. Implementations are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;

  // Returns the current time.
  virtual absl::Time Now() const = 0;

  // Returns the process-wide real clock. Never null; lives forever.
  static Clock* Real();
};

// A clock that only moves when told to. Thread-safe.
class FakeClock : public Clock {
 public:
  // Starts at `start` (a fixed, arbitrary instant by default).
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1'800'000'000)) : now_(start) {}

  absl::Time Now() const override {
    absl::MutexLock lock(&mu_);
    return now_;
  }

  // Moves the clock forward by `d` (which must not be negative).
  void Advance(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    now_ += d;
  }

 private:
  mutable absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kbisect

#endif  // KBISECT_COMMON_CLOCK_CLOCK_H_
