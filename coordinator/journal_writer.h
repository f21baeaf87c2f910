// Copyright 2026 The kbisect Authors.
//
// JournalWriter commits the coordinator's journal to its JobStore by group commit, and holds
// what the coordinator knows of the store's health.
//
// The changes are collected under the coordinator's mutex (the owner's mutex, `mu` below) into
// the pending batch. A call that must not reply before its changes are durable calls Flush: when
// no commit is in flight it leads one, taking the whole pending batch and committing it with the
// mutex released, so the calls that run meanwhile collect the next batch; when one is in flight it
// waits for it and then, if its changes are still pending, one of the waiting calls leads the next.
// Batches are numbered from 1 as they are taken and commit one at a time, in order, so the
// journal's order is the order of the calls (LevelDB's DBImpl::Write groups its writers the same
// way, under the DB's mutex).
//
// A commit that fails leaves memory ahead of the disk: the writer drops what is pending, counts
// the failure (a call that waited across it saw changes that are rolled back and gets the
// refusal instead of its reply), and calls the owner's RollBack, which rebuilds memory from the
// store as a restart would. The store is then read-only to the owner (writable() is false, and
// Refusal says what a refused call should do) until TryWritingAgain finds it takes writes again.
// With abort_on_failure a failed commit aborts the process instead.
//
// The worker mailboxes learn which batches are durable without the mutex (durable_batches()),
// and a mailbox holding a deposit of a batch not durable yet is notified when it becomes so
// (NotifyWhenDurable).
//
// Thread-safety: every method but durable_batches() and CommitsLedByThisThread() must be called
// with the owner's mutex held, passed as `mu` (the same mutex given at construction; checked).
// Flush, Kick and AwaitDurable release it while they commit or wait.
#ifndef KBISECT_COORDINATOR_JOURNAL_WRITER_H_
#define KBISECT_COORDINATOR_JOURNAL_WRITER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/clock/clock.h"
#include "common/sync/mutex.h"
#include "coordinator/job_store.h"
#include "coordinator/worker_mailbox.h"

namespace kbisect {

class JournalWriter {
 public:
  struct Options {
    // What a failed commit does: false (the daemon): the owner serves reads only until the store
    // takes writes again; true (`kbisect run`): the process aborts with the message.
    bool abort_on_failure = false;
    // Test-only: the process dies right after this many journal commits (CrashPoints).
    int64_t crash_after_commit = 0;
  };
  // Called with the mutex held after a commit failed, once what was pending was dropped: the
  // owner rebuilds its memory from the store. What it journals meanwhile stays pending until the
  // store takes writes again.
  using RollBack = std::function<void()>;

  // How often a writer whose store failed tries it again (TryWritingAgain).
  static constexpr absl::Duration kWriteCheckPeriod = absl::Seconds(5);

  // Without a `store` nothing is journaled: every wait returns at once. `store`, `mu` and `clock`
  // must outlive the writer.
  JournalWriter(JobStore* store, kbisect::Mutex* mu, Clock* clock, Options options,
                RollBack roll_back);

  JournalWriter(const JournalWriter&) = delete;
  JournalWriter& operator=(const JournalWriter&) = delete;

  // Whether changes are journaled at all (there is a store).
  bool enabled() const { return store_ != nullptr; }

  // The batch that collects changes now.
  StoreChanges& pending(kbisect::Mutex& mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // Returns once every change this call saw or made is durable, leading commits as needed (see
  // the top of this file). When a batch this call waited on failed, returns Refusal(false). A call
  // must not reply before this returned OK.
  absl::Status Flush(kbisect::Mutex& mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // For a call whose reply shows none of its changes until they are durable by other means (a
  // Synchronize: its mailbox holds each deposit until its batch is): commits what is pending when
  // no commit is in flight, else leaves it to the leader of the one in flight, and returns without
  // waiting for another call's commit.
  void Kick(kbisect::Mutex& mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // For calls that only read: waits (the mutex released meanwhile) until what they saw is
  // durable, so nothing a client is shown is lost by a crash. Returns Refusal(false) when what
  // they saw was rolled back by a failed commit meanwhile: they must not show it.
  absl::Status AwaitDurable(kbisect::Mutex& mu) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // The batch that must be durable before a reply may show what was changed so far: the pending
  // one, else the one in flight (0 without a store: nothing to wait for).
  uint64_t BatchOfChanges(kbisect::Mutex& mu) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Has the writer notify `mailbox` once batch `batch` (of a deposit just made) is durable.
  void NotifyWhenDurable(kbisect::Mutex& mu, const std::shared_ptr<WorkerMailbox>& mailbox,
                         uint64_t batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // The last durable batch, for the mailboxes, which read it without the mutex.
  const std::atomic<uint64_t>* durable_batches() const { return &durable_batches_; }

  // False while the store cannot be written (a commit failed and no write succeeded since).
  bool writable(kbisect::Mutex& mu) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // While the store cannot be written: the error of a call that would change something; a
  // worker's call (`worker_call`) gets UNAVAILABLE, a client's what to do. When the store takes
  // writes again (a call whose batch failed woke after a later write succeeded): UNAVAILABLE or
  // ABORTED, "retry".
  absl::Status Refusal(kbisect::Mutex& mu, bool worker_call) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // While the store cannot be written: tries it again, at most every kWriteCheckPeriod, and
  // commits what is pending once it can.
  void TryWritingAgain(kbisect::Mutex& mu, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // Successful commits that the calling thread led, ever (the before-reply crash point counts a
  // call as mutating when this changed during it).
  static int64_t CommitsLedByThisThread();

 private:
  // Checks that `mu` is the owner's mutex and tells the analysis that mu_ is held.
  void Held(const kbisect::Mutex& mu) const ABSL_ASSERT_EXCLUSIVE_LOCK(mu_);
  // Leads one commit of the pending batch, `mu` released meanwhile. False when it failed.
  bool CommitBatch(kbisect::Mutex& mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // After a leader's own batch: commits what Kick left to it, batch after batch until none is
  // left.
  void CommitUnwaited(kbisect::Mutex& mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  void SetDurable(uint64_t batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  JobStore* const store_;
  kbisect::Mutex* const mu_;
  Clock* const clock_;
  const Options options_;
  const RollBack roll_back_;

  StoreChanges pending_ ABSL_GUARDED_BY(mu_);  // The next batch, collected until committed.
  // The last batch taken and the last one durable; whether one is being committed now.
  uint64_t batches_taken_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t batches_durable_ ABSL_GUARDED_BY(mu_) = 0;
  bool committing_ ABSL_GUARDED_BY(mu_) = false;
  // Kick left changes pending for the leader of the batch in flight.
  bool unwaited_changes_ ABSL_GUARDED_BY(mu_) = false;
  // Commits that failed since this process started: a call that waited across a change of it
  // saw changes that were rolled back.
  uint64_t failed_commits_ ABSL_GUARDED_BY(mu_) = 0;
  // Journal commits (of batches that change jobs) since this process started.
  int64_t journal_commits_ ABSL_GUARDED_BY(mu_) = 0;
  mutable kbisect::CondVar durable_changed_;  // Signalled when a commit ends.
  // batches_durable_ for the mailboxes (written under mu_).
  std::atomic<uint64_t> durable_batches_{0};
  // Mailboxes holding a deposit of the pending batch, and of the batch in flight.
  std::vector<std::shared_ptr<WorkerMailbox>> notify_pending_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<WorkerMailbox>> notify_in_flight_ ABSL_GUARDED_BY(mu_);
  // Not OK while the store cannot be written: why. And when it was last tried.
  absl::Status store_failure_ ABSL_GUARDED_BY(mu_);
  absl::Time last_write_check_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOURNAL_WRITER_H_
