// Copyright 2026 The kbisect Authors.
#include "common/clock/clock.h"

#include <algorithm>

namespace kbisect {
namespace {

class RealClock : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }

  void SleepFor(absl::Duration duration) override { absl::SleepFor(duration); }

  bool AwaitWithDeadline(kbisect::Mutex* mu, const kbisect::Condition& condition,
                         absl::Time deadline) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return mu->AwaitWithDeadline(condition, deadline);
  }

  bool WaitWithDeadline(kbisect::CondVar* cv, kbisect::Mutex* mu, absl::Time deadline) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return cv->WaitWithDeadline(mu, deadline);
  }
};

bool Never(void*) { return false; }

}  // namespace

void Clock::SleepFor(absl::Duration duration) {
  kbisect::Mutex mu;
  kbisect::MutexLock lock(&mu);
  AwaitWithDeadline(&mu, kbisect::Condition(&Never, nullptr), Now() + duration);
}

Clock* Clock::Real() {
  static RealClock* clock = new RealClock();
  return clock;
}

// One thread blocked in a wait with a finite deadline.
struct FakeClock::Waiter {
  kbisect::Mutex* const mu;    // The mutex the waiting thread holds around its wait.
  kbisect::CondVar* const cv;  // Signalled at the deadline; null for a Condition wait.
  const absl::Time deadline;
  bool reached = false;  // Guarded by *mu: Advance reached the deadline.
  int wakers = 0;        // Guarded by FakeClock::mu_: Advance calls waking this waiter.
};

absl::Time FakeClock::Now() const {
  kbisect::MutexLock lock(&mu_);
  return now_;
}

bool FakeClock::Register(Waiter* waiter) {
  kbisect::MutexLock lock(&mu_);
  if (waiter->deadline <= now_) return false;
  waiters_.push_back(waiter);
  return true;
}

void FakeClock::Unregister(Waiter* waiter, kbisect::Mutex* waiter_mu) {
  mu_.Lock();
  waiters_.erase(std::find(waiters_.begin(), waiters_.end(), waiter));
  if (waiter->wakers == 0) {
    mu_.Unlock();
    return;
  }
  // An Advance is about to lock the waiter's mutex: let it, so that it can finish with `waiter`
  // before `waiter` goes away. Lock order is always waiter's mutex, then mu_.
  waiter_mu->Unlock();
  mu_.Await(kbisect::Condition(
      +[](Waiter* w) { return w->wakers == 0; }, waiter));
  mu_.Unlock();
  waiter_mu->Lock();
}

bool FakeClock::AwaitWithDeadline(kbisect::Mutex* mu, const kbisect::Condition& condition,
                                  absl::Time deadline) {
  if (condition.Eval()) return true;
  if (deadline == absl::InfiniteFuture()) {
    mu->Await(condition);
    return true;
  }
  Waiter waiter{mu, nullptr, deadline};
  if (!Register(&waiter)) return false;
  struct Wait {
    const kbisect::Condition* condition;
    const Waiter* waiter;
  } wait{&condition, &waiter};
  mu->Await(kbisect::Condition(
      +[](Wait* w) { return w->waiter->reached || w->condition->Eval(); }, &wait));
  Unregister(&waiter, mu);
  return condition.Eval();
}

bool FakeClock::WaitWithDeadline(kbisect::CondVar* cv, kbisect::Mutex* mu, absl::Time deadline) {
  if (deadline == absl::InfiniteFuture()) {
    cv->Wait(mu);
    return false;
  }
  Waiter waiter{mu, cv, deadline};
  if (!Register(&waiter)) return true;
  cv->Wait(mu);
  Unregister(&waiter, mu);
  return waiter.reached;
}

void FakeClock::Advance(absl::Duration d) {
  std::vector<Waiter*> due;
  {
    kbisect::MutexLock lock(&mu_);
    now_ += d;
    for (Waiter* waiter : waiters_) {
      if (waiter->deadline > now_) continue;
      ++waiter->wakers;  // Unregister waits for this to drop back, so `waiter` stays valid.
      due.push_back(waiter);
    }
  }
  // Not under mu_: a waiter holds its own mutex when it takes mu_. Unlocking the waiter's mutex
  // makes absl re-evaluate the Condition of an AwaitWithDeadline.
  for (Waiter* waiter : due) {
    kbisect::MutexLock lock(waiter->mu);
    waiter->reached = true;
    if (waiter->cv != nullptr) waiter->cv->SignalAll();
  }
  kbisect::MutexLock lock(&mu_);
  for (Waiter* waiter : due) --waiter->wakers;
}

int FakeClock::waiters() const {
  kbisect::MutexLock lock(&mu_);
  return static_cast<int>(waiters_.size());
}

absl::Time FakeClock::NextDeadline() const {
  kbisect::MutexLock lock(&mu_);
  absl::Time next = absl::InfiniteFuture();
  for (const Waiter* waiter : waiters_) next = std::min(next, waiter->deadline);
  return next;
}

bool FakeClock::BlockUntilWaiters(int n, absl::Duration real_timeout) const {
  kbisect::MutexLock lock(&mu_);
  struct Enough {
    const std::vector<Waiter*>* waiters;
    size_t n;
  } enough{&waiters_, static_cast<size_t>(n)};
  return mu_.AwaitWithTimeout(kbisect::Condition(
                                  +[](Enough* e) { return e->waiters->size() >= e->n; }, &enough),
                              real_timeout);
}

}  // namespace kbisect
