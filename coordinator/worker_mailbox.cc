// Copyright 2026 The kbisect Authors.
#include "coordinator/worker_mailbox.h"

#include <algorithm>
#include <string>
#include <utility>

namespace kbisect {

void WorkerMailbox::Deposit(v1::Lease lease, uint64_t batch) {
  kbisect::MutexLock lock(&mu_);
  assignments_.push_back({std::move(lease), batch});
  if (batch <= durable_->load()) {
    wake_.SignalAll();
    HandOverLocked(Outcome::kDelivered);
  }
}

void WorkerMailbox::DepositCancellation(v1::LeaseCancellation cancellation, uint64_t batch) {
  kbisect::MutexLock lock(&mu_);
  cancellations_.push_back({std::move(cancellation), batch});
  if (batch <= durable_->load()) {
    wake_.SignalAll();
    HandOverLocked(Outcome::kDelivered);
  }
}

bool WorkerMailbox::Withdraw(const std::string& lease_id) {
  kbisect::MutexLock lock(&mu_);
  auto it =
      std::find_if(assignments_.begin(), assignments_.end(),
                   [&](const Stamped<v1::Lease>& a) { return a.message.lease_id() == lease_id; });
  if (it == assignments_.end()) return false;
  assignments_.erase(it);
  return true;
}

bool WorkerMailbox::Undelivered(const std::string& lease_id) const {
  kbisect::MutexLock lock(&mu_);
  return std::any_of(assignments_.begin(), assignments_.end(),
                     [&](const Stamped<v1::Lease>& a) { return a.message.lease_id() == lease_id; });
}

void WorkerMailbox::Notify() {
  kbisect::MutexLock lock(&mu_);
  wake_.SignalAll();
  if (HasDurableNewsLocked()) HandOverLocked(Outcome::kDelivered);
}

void WorkerMailbox::SetStanding(bool ready, int active_leases) {
  kbisect::MutexLock lock(&mu_);
  ready_ = ready;
  active_leases_ = active_leases;
}

void WorkerMailbox::Close() {
  kbisect::MutexLock lock(&mu_);
  closed_ = true;
  wake_.SignalAll();
  HandOverLocked(Outcome::kClosed);
}

uint64_t WorkerMailbox::BeginPoll() {
  kbisect::MutexLock lock(&mu_);
  wake_.SignalAll();  // The poll before it, if any, returns empty-handed.
  HandOverLocked(Outcome::kSuperseded);
  return ++poll_sequence_;
}

bool WorkerMailbox::HasDurableNewsLocked() const {
  const uint64_t durable = durable_->load();
  return (!assignments_.empty() && assignments_.front().batch <= durable) ||
         (!cancellations_.empty() && cancellations_.front().batch <= durable);
}

void WorkerMailbox::TakeDurableLocked(Delivery* delivery) {
  const uint64_t durable = durable_->load();
  auto take = [durable](auto& queue, auto& out) {
    auto end = queue.begin();
    while (end != queue.end() && end->batch <= durable) {
      out.push_back(std::move(end->message));
      ++end;
    }
    queue.erase(queue.begin(), end);
  };
  take(assignments_, delivery->assignments);
  take(cancellations_, delivery->cancellations);
}

WorkerMailbox::Outcome WorkerMailbox::Await(uint64_t sequence, Clock* clock, absl::Time deadline,
                                            Delivery* delivery) {
  kbisect::MutexLock lock(&mu_);
  bool timed_out = false;
  while (true) {
    if (closed_) return Outcome::kClosed;
    if (poll_sequence_ != sequence) return Outcome::kSuperseded;
    if (HasDurableNewsLocked()) {
      TakeDurableLocked(delivery);
      return Outcome::kDelivered;
    }
    if (timed_out || clock->Now() >= deadline) return Outcome::kTimedOut;
    // The deadline is on the coordinator's clock: a FakeClock test advances it to end the poll.
    timed_out = clock->WaitWithDeadline(&wake_, &mu_, deadline);
  }
}

void WorkerMailbox::AwaitAsync(uint64_t sequence, absl::Time deadline, PollScheduler* scheduler,
                               Continuation done) {
  Delivery delivery;
  Outcome outcome;
  {
    kbisect::MutexLock lock(&mu_);
    if (closed_) {
      outcome = Outcome::kClosed;
    } else if (poll_sequence_ != sequence) {
      outcome = Outcome::kSuperseded;
    } else if (HasDurableNewsLocked()) {
      TakeDurableLocked(&delivery);
      outcome = Outcome::kDelivered;
    } else if (deadline == absl::InfinitePast()) {
      outcome = Outcome::kTimedOut;
    } else {
      HandOverLocked(Outcome::kSuperseded);  // A poll of this sequence cannot already wait.
      pending_ = Pending{sequence, scheduler, std::move(done)};
      std::weak_ptr<WorkerMailbox> self = weak_from_this();
      scheduler->RunAt(deadline, [self, sequence] {
        if (std::shared_ptr<WorkerMailbox> mailbox = self.lock()) mailbox->ExpireAsync(sequence);
      });
      return;
    }
  }
  done(outcome, std::move(delivery));
}

void WorkerMailbox::ExpireAsync(uint64_t sequence) {
  kbisect::MutexLock lock(&mu_);
  if (!pending_.has_value() || pending_->sequence != sequence) return;
  HandOverLocked(HasDurableNewsLocked() ? Outcome::kDelivered : Outcome::kTimedOut);
}

void WorkerMailbox::HandOverLocked(Outcome outcome) {
  if (!pending_.has_value()) return;
  Delivery delivery;
  if (outcome == Outcome::kDelivered) TakeDurableLocked(&delivery);
  Pending pending = std::move(*pending_);
  pending_.reset();
  pending.scheduler->Run(
      [done = std::move(pending.done), outcome, delivery = std::move(delivery)]() mutable {
        done(outcome, std::move(delivery));
      });
}

uint64_t WorkerMailbox::BeginPollWithoutChanges(absl::Time now) {
  kbisect::MutexLock lock(&mu_);
  // Every assignment here is of an active lease, so equal counts mean none was delivered.
  // (A cancellation is of a lease no longer active: delivering it changes nothing either.)
  if (closed_ || !ready_ || static_cast<int>(assignments_.size()) != active_leases_) {
    return 0;
  }
  wake_.SignalAll();  // A poll left behind returns empty-handed.
  HandOverLocked(Outcome::kSuperseded);
  heartbeat_ = now;
  return ++poll_sequence_;
}

absl::Time WorkerMailbox::heartbeat() const {
  kbisect::MutexLock lock(&mu_);
  return heartbeat_;
}

bool WorkerMailbox::closed() const {
  kbisect::MutexLock lock(&mu_);
  return closed_;
}

void SessionMailboxes::Add(const std::string& session_id, std::shared_ptr<WorkerMailbox> mailbox) {
  kbisect::MutexLock lock(&mu_);
  mailboxes_[session_id] = std::move(mailbox);
}

void SessionMailboxes::Remove(const std::string& session_id) {
  kbisect::MutexLock lock(&mu_);
  mailboxes_.erase(session_id);
}

std::shared_ptr<WorkerMailbox> SessionMailboxes::Find(const std::string& session_id) const {
  kbisect::MutexLock lock(&mu_);
  auto it = mailboxes_.find(session_id);
  return it == mailboxes_.end() ? nullptr : it->second;
}

}  // namespace kbisect
