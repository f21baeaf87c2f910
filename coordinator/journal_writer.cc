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

thread_local int64_t batches_sealed_by_this_thread = 0;

}  // namespace

JournalWriter::JournalWriter(JobStore* store, kbisect::Mutex* mu, Clock* clock, Options options,
                             RollBack roll_back)
    : store_(store), mu_(mu), clock_(clock), options_(options), roll_back_(std::move(roll_back)) {
  if (store_ != nullptr) committer_ = std::thread([this] { CommitLoop(); });
}

JournalWriter::~JournalWriter() { Stop(); }

void JournalWriter::Stop() {
  {
    kbisect::MutexLock lock(&queue_mu_);
    stopping_ = true;
    sealed_or_stopping_.Signal();
  }
  if (committer_.joinable()) committer_.join();
}

void JournalWriter::Held(const kbisect::Mutex& mu) const {
  if (&mu != mu_) {
    std::cerr << "kbisect: JournalWriter called with a mutex that is not its owner's\n"
              << std::flush;
    std::abort();
  }
  mu_->AssertHeld();
}

int64_t JournalWriter::BatchesSealedByThisThread() { return batches_sealed_by_this_thread; }

StoreChanges& JournalWriter::pending(kbisect::Mutex& mu) {
  Held(mu);
  return pending_;
}

bool JournalWriter::Seal(kbisect::Mutex& mu) {
  Held(mu);
  if (pending_.empty()) return true;
  kbisect::MutexLock lock(&queue_mu_);
  if (stopping_) return false;
  sealed_.push_back(SealedBatch{++batches_sealed_, std::exchange(pending_, StoreChanges())});
  ++batches_sealed_by_this_thread;
  sealed_or_stopping_.Signal();
  return true;
}

void JournalWriter::AwaitBatch(kbisect::Mutex& mu, uint64_t target) const {
  Held(mu);
  if (durable_batches_.load() >= target) return;
  mu.Unlock();
  {
    kbisect::MutexLock lock(&queue_mu_);
    // A failed commit marks every batch sealed before it durable (they were dropped), so every
    // wait ends; Stop commits what is sealed first.
    while (durable_batches_.load() < target) durable_changed_.Wait(&queue_mu_);
  }
  mu.Lock();
}

absl::Status JournalWriter::Flush(kbisect::Mutex& mu) {
  if (store_ == nullptr) return absl::OkStatus();
  Held(mu);
  // Read-only: memory is what the store has (the owner rolled back), and what is pending
  // (rolling back may journal) waits for TryWritingAgain.
  if (!store_failure_.ok()) return pending_.empty() ? absl::OkStatus() : Refusal(mu, false);
  const uint64_t failures = failed_commits_;
  if (!Seal(mu)) {
    return absl::UnavailableError("the coordinator is shutting down: its journal is closed");
  }
  AwaitBatch(mu, batches_sealed_);
  // The batch this call waited on (or one before it) failed: its changes were rolled back.
  if (failed_commits_ != failures) return Refusal(mu, false);
  return absl::OkStatus();
}

void JournalWriter::Kick(kbisect::Mutex& mu) {
  if (store_ == nullptr) return;
  Held(mu);
  if (store_failure_.ok()) (void)Seal(mu);
}

absl::Status JournalWriter::AwaitDurable(kbisect::Mutex& mu) const {
  if (store_ == nullptr) return absl::OkStatus();
  Held(mu);
  // Read-only: memory is what the store has, and nothing commits.
  if (!store_failure_.ok()) return absl::OkStatus();
  const uint64_t failures = failed_commits_;
  // Every change a reader may see is sealed: the calls that change something seal before they
  // let the mutex go.
  AwaitBatch(mu, batches_sealed_);
  // What this call saw was rolled back by a failed commit: it must not be shown.
  if (failed_commits_ != failures) return Refusal(mu, false);
  return absl::OkStatus();
}

void JournalWriter::CommitLoop() {
  while (true) {
    std::deque<SealedBatch> taken;
    {
      kbisect::MutexLock lock(&queue_mu_);
      while (sealed_.empty() && !stopping_) sealed_or_stopping_.Wait(&queue_mu_);
      if (sealed_.empty()) return;  // Stopping, and everything sealed is committed.
      taken = std::exchange(sealed_, {});
    }
    // Every batch waiting, in one transaction: as if their calls had collected one batch.
    const uint64_t last = taken.back().number;
    StoreChanges batch = std::move(taken.front().changes);
    for (size_t i = 1; i < taken.size(); ++i) batch.Append(std::move(taken[i].changes));
    const absl::Status committed = store_->Commit(batch);
    if (!committed.ok()) {
      FailCommit(committed);
      continue;
    }
    MarkDurable(last);
    // A commit is one journal commit, however many batches it holds.
    if (batch.changes_jobs() && options_.crash_after_commit > 0 &&
        ++journal_commits_ == options_.crash_after_commit) {
      CrashAtPoint("after journal commit", journal_commits_);
    }
  }
}

void JournalWriter::MarkDurable(uint64_t last) {
  std::vector<std::shared_ptr<WorkerMailbox>> wake;
  {
    kbisect::MutexLock lock(&queue_mu_);
    durable_batches_.store(last);
    const auto end = to_notify_.upper_bound(last);
    for (auto it = to_notify_.begin(); it != end; ++it) wake.push_back(std::move(it->second));
    to_notify_.erase(to_notify_.begin(), end);
    durable_changed_.SignalAll();
  }
  for (const std::shared_ptr<WorkerMailbox>& mailbox : wake) mailbox->Notify();
}

void JournalWriter::FailCommit(const absl::Status& failure) {
  if (options_.abort_on_failure) {
    std::cerr << "kbisect: cannot persist the job state: " << failure.message()
              << "; stopping so that running the same command again resumes from the last "
                 "committed state\n"
              << std::flush;
    std::abort();
  }
  kbisect::MutexLock lock(mu_);
  // Memory is now ahead of the disk, by this commit and what was sealed or collected since: the
  // owner goes back to what the disk has, once (the calls waiting on any of it see
  // failed_commits_ change and refuse), and reads only until a write succeeds.
  // A status of its own: `failure` shares its text with copies that die on this thread.
  store_failure_ = absl::Status(failure.code(), failure.message());
  last_write_check_ = clock_->Now();
  ++failed_commits_;
  std::cerr << "kbisect-coordinator: cannot persist the job state: " << failure.message()
            << "; serving reads only (no new jobs) until a write succeeds again\n"
            << std::flush;
  pending_ = StoreChanges();
  {
    kbisect::MutexLock queue_lock(&queue_mu_);
    sealed_.clear();
    to_notify_.clear();
    // Nothing sealed is waiting any more: the waits end (and refuse).
    durable_batches_.store(batches_sealed_);
    durable_changed_.SignalAll();
  }
  roll_back_();
}

uint64_t JournalWriter::BatchOfChanges(kbisect::Mutex& mu) const {
  Held(mu);
  return pending_.empty() ? batches_sealed_ : batches_sealed_ + 1;
}

void JournalWriter::NotifyWhenDurable(kbisect::Mutex& mu,
                                      const std::shared_ptr<WorkerMailbox>& mailbox,
                                      uint64_t batch) {
  Held(mu);
  {
    kbisect::MutexLock lock(&queue_mu_);
    if (batch > durable_batches_.load()) {
      to_notify_.emplace(batch, mailbox);
      return;
    }
  }
  // Durable already: the deposit may have looked just before it was marked so.
  mailbox->Notify();
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
