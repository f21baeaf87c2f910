// Copyright 2026 The kbisect Authors.
//
// WorkerMailbox: what one worker session's Synchronize long poll picks up — the leases handed to
// the worker and the cancellations of its leases — each stamped with the journal batch that must
// be durable before the worker may see it. It has its own small mutex and condition variable, so
// a poll waits on it, is woken by it and replies from it without taking the coordinator's mutex,
// whose queue under load is the whole of the dispatch latency otherwise (docs/decisions.md 102).
//
// The coordinator deposits, withdraws, mirrors the worker's standing and closes, with its own
// mutex held (lock order: the coordinator's mutex, then a mailbox's); the poll begins, waits and
// takes, with no other lock. Thread-safe.
#ifndef KBISECT_COORDINATOR_WORKER_MAILBOX_H_
#define KBISECT_COORDINATOR_WORKER_MAILBOX_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "common/clock/clock.h"
#include "common/sync/mutex.h"
#include "coordinator/poll_scheduler.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

class WorkerMailbox : public std::enable_shared_from_this<WorkerMailbox> {
 public:
  // What a poll takes: every deposit whose batch is durable, in deposit order.
  struct Delivery {
    std::vector<v1::Lease> assignments;
    std::vector<v1::LeaseCancellation> cancellations;
    bool empty() const { return assignments.empty() && cancellations.empty(); }
  };
  enum class Outcome {
    kDelivered,   // The delivery holds news, all of it durable.
    kTimedOut,    // The deadline passed with nothing durable to deliver.
    kSuperseded,  // A newer poll of the session began: this one returns empty-handed.
    kClosed,      // The session ended, the coordinator shut down or rebuilt its memory: the
                  // caller asks the coordinator (under its mutex) what to answer.
  };

  // `durable` is the number of the last journal batch known to be durable (batches are numbered
  // from 1; a deposit stamped 0 waits for nothing). It must outlive the mailbox, and whoever
  // raises it calls Notify on each mailbox holding a deposit of the batches it made durable.
  explicit WorkerMailbox(const std::atomic<uint64_t>* durable) : durable_(durable) {}

  WorkerMailbox(const WorkerMailbox&) = delete;
  WorkerMailbox& operator=(const WorkerMailbox&) = delete;

  // --- The coordinator's side. -----------------------------------------------------------------

  // Queues `lease` (durable once batch `batch` is) and wakes the poll if it already is. Batches
  // of successive deposits never decrease.
  void Deposit(v1::Lease lease, uint64_t batch) ABSL_LOCKS_EXCLUDED(mu_);
  // Queues a cancellation the same way.
  void DepositCancellation(v1::LeaseCancellation cancellation, uint64_t batch)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Removes the assignment of `lease_id` not yet taken by a poll; returns whether there was one.
  bool Withdraw(const std::string& lease_id) ABSL_LOCKS_EXCLUDED(mu_);
  // Whether the assignment of `lease_id` is still waiting here (not yet taken by a poll).
  bool Undelivered(const std::string& lease_id) const ABSL_LOCKS_EXCLUDED(mu_);
  // Wakes the poll so that it looks again (a batch it may wait for became durable).
  void Notify() ABSL_LOCKS_EXCLUDED(mu_);
  // Mirrors the coordinator's view of the worker for TakeWithoutChanges: whether it may be handed
  // work (ready, not draining, not lost) and how many active leases it holds.
  void SetStanding(bool ready, int active_leases) ABSL_LOCKS_EXCLUDED(mu_);
  // Ends the mailbox for good: every poll waiting on it, and every later one, gets kClosed.
  void Close() ABSL_LOCKS_EXCLUDED(mu_);

  // --- The poll's side. ------------------------------------------------------------------------

  // Begins a poll of the session and returns its sequence number: a poll begun before it is
  // superseded (woken, it returns empty-handed, so it cannot take what the worker would not see).
  uint64_t BeginPoll() ABSL_LOCKS_EXCLUDED(mu_);
  // Waits until there is durable news for poll `sequence` and takes it into `delivery`, or the
  // poll is superseded, the mailbox is closed, or `deadline` on `clock` passed (a past deadline
  // still takes what is durable now).
  Outcome Await(uint64_t sequence, Clock* clock, absl::Time deadline, Delivery* delivery)
      ABSL_LOCKS_EXCLUDED(mu_);
  // How a poll that waits without a thread ends: with its outcome and what it took (empty unless
  // kDelivered).
  using Continuation = std::function<void(Outcome, Delivery)>;
  // Await without blocking: when poll `sequence` can end now (as Await would at once), `done` runs
  // on the calling thread before this returns; otherwise it is kept and handed to `scheduler`
  // (which runs it on a thread of its own) when durable news arrives, a newer poll begins, the
  // mailbox closes or `deadline` passes on the scheduler's clock, whichever comes first. `done`
  // runs exactly once. The mailbox must be owned by a shared_ptr; `scheduler` must outlive the
  // wait. The mailbox's own callers may hold the coordinator's mutex: nothing kept here runs on
  // their threads.
  void AwaitAsync(uint64_t sequence, absl::Time deadline, PollScheduler* scheduler,
                  Continuation done) ABSL_LOCKS_EXCLUDED(mu_);
  // Begins the poll of a Synchronize that would change nothing in the coordinator (it reports no
  // lease, is ready for work and not draining): when the worker is ready by its standing and
  // every active lease it holds is an assignment waiting here (none
  // was delivered, so the heartbeat would renew no lease and lose none, and frees no worker), it
  // begins a poll (as BeginPoll), records `now` as the worker's heartbeat and returns the poll's
  // sequence for Await. Otherwise it returns 0 and changes nothing: the call takes the
  // coordinator's mutex.
  uint64_t BeginPollWithoutChanges(absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  // The last heartbeat BeginPollWithoutChanges recorded; InfinitePast when none.
  absl::Time heartbeat() const ABSL_LOCKS_EXCLUDED(mu_);
  bool closed() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  template <typename T>
  struct Stamped {
    T message;
    uint64_t batch = 0;
  };
  // A poll waiting without a thread (AwaitAsync).
  struct Pending {
    uint64_t sequence = 0;
    PollScheduler* scheduler = nullptr;
    Continuation done;
  };
  // Ends the pending poll, if any, with `outcome` (taking the durable news for kDelivered): its
  // continuation goes to its scheduler.
  void HandOverLocked(Outcome outcome) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends the pending poll `sequence`, if it still waits, at its deadline.
  void ExpireAsync(uint64_t sequence) ABSL_LOCKS_EXCLUDED(mu_);
  // Moves the durable prefixes of the queues into `delivery`.
  void TakeDurableLocked(Delivery* delivery) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool HasDurableNewsLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::atomic<uint64_t>* const durable_;
  mutable kbisect::Mutex mu_;
  kbisect::CondVar wake_;
  std::vector<Stamped<v1::Lease>> assignments_ ABSL_GUARDED_BY(mu_);
  std::vector<Stamped<v1::LeaseCancellation>> cancellations_ ABSL_GUARDED_BY(mu_);
  uint64_t poll_sequence_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool ready_ ABSL_GUARDED_BY(mu_) = false;
  int active_leases_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time heartbeat_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::optional<Pending> pending_ ABSL_GUARDED_BY(mu_);
};

// The mailboxes of the live sessions by session id, for the Synchronize that needs no change in
// the coordinator and so looks its mailbox up without the coordinator's mutex. Thread-safe: its
// own mutex, taken after the coordinator's (which the coordinator holds while it adds and
// removes) and before a mailbox's.
class SessionMailboxes {
 public:
  void Add(const std::string& session_id, std::shared_ptr<WorkerMailbox> mailbox)
      ABSL_LOCKS_EXCLUDED(mu_);
  void Remove(const std::string& session_id) ABSL_LOCKS_EXCLUDED(mu_);
  // The mailbox of a live session; null if none.
  std::shared_ptr<WorkerMailbox> Find(const std::string& session_id) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable kbisect::Mutex mu_;
  std::map<std::string, std::shared_ptr<WorkerMailbox>> mailboxes_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_WORKER_MAILBOX_H_
