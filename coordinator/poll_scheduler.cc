// Copyright 2026 The kbisect Authors.
#include "coordinator/poll_scheduler.h"

#include <algorithm>

namespace kbisect {

PollScheduler::PollScheduler(Clock* clock, int threads) : clock_(clock) {
  for (int i = 0; i < std::max(1, threads); ++i) workers_.emplace_back([this] { Work(); });
  timer_ = std::thread([this] { WatchDeadlines(); });
}

PollScheduler::~PollScheduler() {
  {
    kbisect::MutexLock lock(&mu_);
    stop_ = true;
    timers_changed_.SignalAll();
  }
  timer_.join();  // It moves every timed function to the queue as it stops.
  {
    kbisect::MutexLock lock(&mu_);
    work_ready_.SignalAll();
  }
  for (std::thread& worker : workers_) worker.join();
}

void PollScheduler::Run(std::function<void()> fn) {
  kbisect::MutexLock lock(&mu_);
  queue_.push_back(std::move(fn));
  work_ready_.Signal();
}

void PollScheduler::RunAt(absl::Time deadline, std::function<void()> fn) {
  kbisect::MutexLock lock(&mu_);
  if (stop_) {  // Stopping: the timer is gone, and a poll must still end.
    queue_.push_back(std::move(fn));
    work_ready_.Signal();
    return;
  }
  const bool earliest = timed_.empty() || deadline < timed_.begin()->first.first;
  timed_.emplace(std::make_pair(deadline, next_timed_++), std::move(fn));
  if (earliest) timers_changed_.SignalAll();
}

int PollScheduler::timed() const {
  kbisect::MutexLock lock(&mu_);
  return static_cast<int>(timed_.size());
}

void PollScheduler::Work() {
  while (true) {
    std::function<void()> fn;
    {
      kbisect::MutexLock lock(&mu_);
      while (queue_.empty() && !(stop_ && timed_.empty())) work_ready_.Wait(&mu_);
      if (queue_.empty()) return;  // Stopped, nothing left.
      fn = std::move(queue_.front());
      queue_.pop_front();
    }
    fn();
  }
}

void PollScheduler::WatchDeadlines() {
  kbisect::MutexLock lock(&mu_);
  while (true) {
    const absl::Time now = clock_->Now();
    bool moved = false;
    // Stopping, every timed function runs now: it ends a poll that no one else will end.
    while (!timed_.empty() && (stop_ || timed_.begin()->first.first <= now)) {
      queue_.push_back(std::move(timed_.begin()->second));
      timed_.erase(timed_.begin());
      moved = true;
    }
    if (moved) work_ready_.SignalAll();
    if (stop_) return;
    const absl::Time next = timed_.empty() ? absl::InfiniteFuture() : timed_.begin()->first.first;
    clock_->WaitWithDeadline(&timers_changed_, &mu_, next);
  }
}

}  // namespace kbisect
