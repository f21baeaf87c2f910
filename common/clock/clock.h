// Copyright 2026 The kbisect Authors.
//
// kbisect's environment in the sense of LevelDB's `Env`: time and waiting behind one interface,
// so that lease expiry, heartbeats, long polls, reconnect backoff and drift schedules can be
// tested deterministically. It keeps the name `Clock` and this file (rather than a new
// common/clock/env.h) because every component already takes a `Clock*`; waiting belongs with
// time because a wait's deadline is only meaningful on the clock that measures it.
//
// Code under test never calls absl::Now(), absl::SleepFor() or the absl *WithTimeout waits
// directly; it asks its Clock:
//
//   kbisect::MutexLock lock(&mu_);
//   // Wait until stop_ or 5 s on `clock_` have passed, whichever comes first.
//   clock_->AwaitWithDeadline(&mu_, kbisect::Condition(&stop_), clock_->Now() + absl::Seconds(5));
//
//   // A long poll: wait for news, at most until the deadline.
//   const absl::Time deadline = clock_->Now() + wait;
//   while (!has_news()) {
//     if (clock_->WaitWithDeadline(&changed_, &mu_, deadline)) break;  // Timed out.
//   }
//
// With Clock::Real() these are exactly the absl calls. With a FakeClock a waiting thread wakes
// only when the test advances the clock past its deadline (or when its condition or condition
// variable says so), and tests can see who waits until when (FakeClock::NextDeadline).
#ifndef KBISECT_COMMON_CLOCK_CLOCK_H_
#define KBISECT_COMMON_CLOCK_CLOCK_H_

#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/sync/mutex.h"

namespace kbisect {

// A source of the current time and of waits measured by it. Implementations are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;

  // Returns the current time.
  virtual absl::Time Now() const = 0;

  // Blocks the calling thread until this clock has advanced by `duration` (at once when it is
  // not positive).
  virtual void SleepFor(absl::Duration duration);

  // Like kbisect::Mutex::AwaitWithDeadline with `deadline` measured by this clock: with `mu` held,
  // blocks (releasing `mu` while blocked) until `condition` holds or Now() reaches `deadline`,
  // and returns with `mu` held again. Returns the value of `condition` at return; false means
  // the deadline passed first. An infinite deadline waits for `condition` alone.
  virtual bool AwaitWithDeadline(kbisect::Mutex* mu, const kbisect::Condition& condition,
                                 absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) = 0;

  // Like kbisect::CondVar::WaitWithDeadline with `deadline` measured by this clock: with `mu`
  // held, waits on `cv` until it is signalled or Now() reaches `deadline`, and returns with `mu`
  // held again. Returns true when the deadline passed (a timeout), false when signalled. Like
  // any condition variable wait it may also return false spuriously: callers loop on their
  // condition.
  virtual bool WaitWithDeadline(kbisect::CondVar* cv, kbisect::Mutex* mu, absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) = 0;

  // Returns the process-wide real clock (absl::Now, absl's timed waits). Never null; lives
  // forever.
  static Clock* Real();
};

// A clock that only moves when told to. Waits on it end when Advance() moves it past their
// deadline, never because real time passed. Thread-safe.
class FakeClock : public Clock {
 public:
  // Starts at `start` (a fixed, arbitrary instant by default).
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1'800'000'000)) : now_(start) {}

  FakeClock(const FakeClock&) = delete;
  FakeClock& operator=(const FakeClock&) = delete;

  absl::Time Now() const override ABSL_LOCKS_EXCLUDED(mu_);
  bool AwaitWithDeadline(kbisect::Mutex* mu, const kbisect::Condition& condition,
                         absl::Time deadline) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu)
      ABSL_LOCKS_EXCLUDED(mu_);
  bool WaitWithDeadline(kbisect::CondVar* cv, kbisect::Mutex* mu, absl::Time deadline) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) ABSL_LOCKS_EXCLUDED(mu_);

  // Moves the clock forward by `d` (which must not be negative) and wakes every wait whose
  // deadline is now reached; they have been told so when Advance returns (they may still be
  // running towards their return). Must not be called with a mutex held that such a wait uses.
  void Advance(absl::Duration d) ABSL_LOCKS_EXCLUDED(mu_);

  // Returns the number of threads blocked in a wait with a finite deadline on this clock.
  int waiters() const ABSL_LOCKS_EXCLUDED(mu_);

  // Returns the earliest deadline of those waits, or absl::InfiniteFuture() when there is none.
  absl::Time NextDeadline() const ABSL_LOCKS_EXCLUDED(mu_);

  // Blocks until at least `n` threads wait with a finite deadline on this clock, or until
  // `real_timeout` of real time passed (a bound for failing tests, not part of what they
  // measure). Returns whether the waiters are there.
  bool BlockUntilWaiters(int n, absl::Duration real_timeout = absl::Seconds(10)) const
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Waiter;

  // Registers `waiter` unless its deadline has been reached already; returns whether it did.
  bool Register(Waiter* waiter) ABSL_LOCKS_EXCLUDED(mu_);
  // Unregisters `waiter`, waiting for an Advance that is waking it to be done with it. May
  // release and reacquire the waiter's mutex `waiter_mu` (== waiter->mu, held on entry and on
  // return; passed on its own so that -Wthread-safety can check it).
  void Unregister(Waiter* waiter, kbisect::Mutex* waiter_mu)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(waiter_mu) ABSL_LOCKS_EXCLUDED(mu_);

  mutable kbisect::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
  std::vector<Waiter*> waiters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kbisect

#endif  // KBISECT_COMMON_CLOCK_CLOCK_H_
