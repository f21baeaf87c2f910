// Copyright 2026 The kbisect Authors.
#include "coordinator/journal_writer.h"

#include <cstdlib>
#include <iostream>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "coordinator/crash_points.h"

namespace kbisect {
namespace {

thread_local int64_t commits_led_by_this_thread = 0;

}  // namespace

JournalWriter::JournalWriter(JobStore* store, kbisect::Mutex* mu, Clock* clock, Options options,
                             RollBack roll_back)
    : store_(store), mu_(mu), clock_(clock), options_(options), roll_back_(std::move(roll_back)) {}

void JournalWriter::Held(const kbisect::Mutex& mu) const {
  if (&mu != mu_) {
    std::cerr << "kbisect: JournalWriter called with a mutex that is not its owner's\n"
              << std::flush;
    std::abort();
  }
  mu_->AssertHeld();
}

int64_t JournalWriter::CommitsLedByThisThread() { return commits_led_by_this_thread; }

StoreChanges& JournalWriter::pending(kbisect::Mutex& mu) {
  Held(mu);
  return pending_;
}

absl::Status JournalWriter::Flush(kbisect::Mutex& mu) {
  if (store_ == nullptr) return absl::OkStatus();
  Held(mu);
  // Read-only: memory is what the store has (the owner rolled back), and what is pending
  // (rolling back may journal) waits for TryWritingAgain. No commit is in flight then.
  if (!store_failure_.ok()) return pending_.empty() ? absl::OkStatus() : Refusal(mu, false);
  const uint64_t failures = failed_commits_;
  // Everything this call may have seen or changed: the pending batch, else the one in flight.
  const uint64_t target = BatchOfChanges(mu);
  while (batches_durable_ < target) {
    // The batch this call waited on (or one before it) failed: its changes were rolled back.
    if (failed_commits_ != failures) return Refusal(mu, false);
    if (committing_) {
      durable_changed_.Wait(&mu);
      continue;
    }
    if (pending_.empty()) break;  // Cannot happen: what was taken is durable once none commits.
    if (!CommitBatch(mu)) return Refusal(mu, false);
  }
  CommitUnwaited(mu);
  return absl::OkStatus();
}

void JournalWriter::Kick(kbisect::Mutex& mu) {
  if (store_ == nullptr) return;
  Held(mu);
  if (!store_failure_.ok() || pending_.empty()) return;
  if (committing_) {
    // The leader of the batch in flight commits this one too once it is done.
    unwaited_changes_ = true;
    return;
  }
  if (CommitBatch(mu)) CommitUnwaited(mu);
}

void JournalWriter::CommitUnwaited(kbisect::Mutex& mu) {
  Held(mu);
  // Until none is left: every pending change is then one that a call in Flush waits for (and one
  // of those leads its commit), which AwaitDurable relies on. It ends once the Kick calls leave no
  // change during a commit.
  while (unwaited_changes_ && !pending_.empty() && !committing_ && store_failure_.ok()) {
    if (!CommitBatch(mu)) return;
  }
}

bool JournalWriter::CommitBatch(kbisect::Mutex& mu) {
  Held(mu);
  // Lead: commit the changes of every call waiting here, in one transaction, outside the lock
  // (the calls that run meanwhile collect the next batch).
  const StoreChanges batch = std::exchange(pending_, StoreChanges());
  unwaited_changes_ = false;
  const bool journal = batch.changes_jobs();
  const uint64_t number = ++batches_taken_;
  // The mailboxes waiting for this batch are notified as soon as it is durable, before the lock
  // is taken again: a woken poll answers without the lock, whose queue is long under load. Those
  // that deposit into this batch while it commits are notified below.
  std::vector<std::shared_ptr<WorkerMailbox>> waiting = std::exchange(notify_pending_, {});
  committing_ = true;
  mu.Unlock();
  const absl::Status committed = store_->Commit(batch);
  if (committed.ok()) {
    durable_batches_.store(number);  // Batches commit one at a time, in order.
    for (const std::shared_ptr<WorkerMailbox>& mailbox : waiting) mailbox->Notify();
  }
  mu.Lock();
  committing_ = false;
  if (!committed.ok() && options_.abort_on_failure) {
    std::cerr << "kbisect: cannot persist the job state: " << committed.message()
              << "; stopping so that running the same command again resumes from the last "
                 "committed state\n"
              << std::flush;
    std::abort();
  }
  if (!committed.ok()) {
    // Memory is now ahead of the disk, by this batch and the next one collected meanwhile: the
    // owner goes back to what the disk has, once (the calls waiting on either batch see
    // failed_commits_ change and refuse), and reads only until a write succeeds.
    store_failure_ = committed;
    last_write_check_ = clock_->Now();
    ++failed_commits_;
    std::cerr << "kbisect-coordinator: cannot persist the job state: " << committed.message()
              << "; serving reads only (no new jobs) until a write succeeds again\n"
              << std::flush;
    pending_ = StoreChanges();
    notify_pending_.clear();
    notify_in_flight_.clear();
    unwaited_changes_ = false;
    roll_back_();
    // Nothing taken is in flight any more: a later batch starts from a clean count.
    SetDurable(batches_taken_);
    durable_changed_.SignalAll();
    return false;
  }
  SetDurable(number);
  for (const std::shared_ptr<WorkerMailbox>& mailbox : std::exchange(notify_in_flight_, {})) {
    mailbox->Notify();
  }
  durable_changed_.SignalAll();
  ++commits_led_by_this_thread;
  // A batch is one journal commit, whichever call led it.
  if (journal && options_.crash_after_commit > 0 &&
      ++journal_commits_ == options_.crash_after_commit) {
    CrashAtPoint("after journal commit", journal_commits_);
  }
  return true;
}

uint64_t JournalWriter::BatchOfChanges(kbisect::Mutex& mu) const {
  Held(mu);
  return pending_.empty() ? batches_taken_ : batches_taken_ + 1;
}

void JournalWriter::NotifyWhenDurable(kbisect::Mutex& mu,
                                      const std::shared_ptr<WorkerMailbox>& mailbox,
                                      uint64_t batch) {
  Held(mu);
  if (batch <= batches_durable_) return;  // The deposit woke the poll itself.
  (batch > batches_taken_ ? notify_pending_ : notify_in_flight_).push_back(mailbox);
}

void JournalWriter::SetDurable(uint64_t batch) {
  batches_durable_ = batch;
  durable_batches_.store(batch);
}

absl::Status JournalWriter::AwaitDurable(kbisect::Mutex& mu) const {
  if (store_ == nullptr) return absl::OkStatus();
  Held(mu);
  const uint64_t failures = failed_commits_;
  // The calls whose changes are pending are in Flush (they hold the lock until then), and one of
  // them leads the next commit once the one in flight is done.
  const uint64_t target = BatchOfChanges(mu);
  while (true) {
    // What this call saw was rolled back by a failed commit: it must not be shown.
    if (failed_commits_ != failures) return Refusal(mu, false);
    // Read-only: memory is what the store has, and nothing commits.
    if (!store_failure_.ok()) return absl::OkStatus();
    if (batches_durable_ >= target || (!committing_ && pending_.empty())) {
      return absl::OkStatus();
    }
    durable_changed_.Wait(&mu);
  }
}

bool JournalWriter::writable(kbisect::Mutex& mu) const {
  Held(mu);
  return store_failure_.ok();
}

absl::Status JournalWriter::Refusal(kbisect::Mutex& mu, bool worker_call) const {
  Held(mu);
  if (store_failure_.ok()) {
    // A commit this call waited on failed and its change was rolled back, and a later write
    // succeeded before the call woke (TryWritingAgain): the state takes writes again.
    const std::string message =
        "the coordinator could not store this change (a write of its job state failed while "
        "the call waited, and the change was rolled back); it takes writes again: retry";
    return worker_call ? absl::UnavailableError(message) : absl::AbortedError(message);
  }
  const std::string what =
      absl::StrCat("the coordinator cannot write its job state (", store_failure_.message(), ")");
  if (worker_call) {
    return absl::UnavailableError(
        absl::StrCat(what, "; it serves reads only until a write succeeds again: retry later"));
  }
  const bool full = absl::IsResourceExhausted(store_failure_);
  const std::string message = absl::StrCat(
      what,
      ", so it accepts no new jobs or cancellations and serves `kbisect status` and `watch` "
      "only; nothing it acknowledged is lost. ",
      full ? "Free space on the volume of --state-dir (finished jobs older than --retain are "
             "deleted; lower it, or grow the volume)"
           : "Make --state-dir writable again (remount it read-write, check its permissions and "
             "the disk)",
      ": the coordinator tries again every ", absl::ToInt64Seconds(kWriteCheckPeriod),
      " s and then accepts jobs by itself.");
  return full ? absl::ResourceExhaustedError(message) : absl::FailedPreconditionError(message);
}

void JournalWriter::TryWritingAgain(kbisect::Mutex& mu, absl::Time now) {
  Held(mu);
  if (store_failure_.ok() || now - last_write_check_ < kWriteCheckPeriod) return;
  last_write_check_ = now;
  absl::Status written = store_->CheckWritable();
  if (written.ok() && !pending_.empty()) written = store_->Commit(pending_);
  if (!written.ok()) {
    store_failure_ = written;
    return;
  }
  pending_ = StoreChanges();
  store_failure_ = absl::OkStatus();
  std::cerr << "kbisect-coordinator: the job state can be written again; accepting jobs\n"
            << std::flush;
}

}  // namespace kbisect
