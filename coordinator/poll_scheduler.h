// Copyright 2026 The kbisect Authors.
//
// PollScheduler: where the long polls that wait without a thread (Coordinator::SynchronizeAsync)
// are finished. A poll with nothing to deliver leaves a continuation in its worker's mailbox and
// returns its thread to gRPC; the mailbox hands the continuation here when news arrives (under
// the coordinator's mutex, so it must not run there), and the poll's deadline is kept here. A
// few threads run what is handed over, in order of arrival; one of them also watches the
// deadlines, measured by the coordinator's clock (a FakeClock test advances it to end a poll).
// Thread-safe.
#ifndef KBISECT_COORDINATOR_POLL_SCHEDULER_H_
#define KBISECT_COORDINATOR_POLL_SCHEDULER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "common/clock/clock.h"
#include "common/sync/mutex.h"

namespace kbisect {

class PollScheduler {
 public:
  // Starts `threads` (at least 1) threads that run what Run hands over; deadlines are on
  // `clock`, which must outlive the scheduler.
  PollScheduler(Clock* clock, int threads);
  // Runs every function still waiting (timed ones included, early), then joins the threads.
  ~PollScheduler();

  PollScheduler(const PollScheduler&) = delete;
  PollScheduler& operator=(const PollScheduler&) = delete;

  // Runs `fn` on one of the scheduler's threads, after the functions handed over before it
  // (several threads: they may overlap). `fn` may call Run and RunAt.
  void Run(std::function<void()> fn) ABSL_LOCKS_EXCLUDED(mu_);

  // Runs `fn` as Run does once the clock reaches `deadline` (at once for a past one, or while
  // the scheduler is being destroyed).
  void RunAt(absl::Time deadline, std::function<void()> fn) ABSL_LOCKS_EXCLUDED(mu_);

  // The functions waiting for their deadline (for tests and the metrics).
  int timed() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Runs queued functions until stopped and nothing is left.
  void Work() ABSL_LOCKS_EXCLUDED(mu_);
  // Moves the timed functions due by now to the queue, and waits for the earliest deadline (or a
  // change) while there is nothing else to do.
  void WatchDeadlines() ABSL_LOCKS_EXCLUDED(mu_);

  Clock* const clock_;
  mutable kbisect::Mutex mu_;
  kbisect::CondVar work_ready_;      // Something was queued, or the scheduler stops.
  kbisect::CondVar timers_changed_;  // An earlier deadline, or the scheduler stops.
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  // By deadline, then by arrival (the second key).
  std::map<std::pair<absl::Time, uint64_t>, std::function<void()>> timed_ ABSL_GUARDED_BY(mu_);
  uint64_t next_timed_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
  std::thread timer_;
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_POLL_SCHEDULER_H_
