// Copyright 2026 The kbisect Authors.
//
// JournalWriter commits the coordinator's journal to its JobStore by group commit, on a thread of
// its own, and holds what the coordinator knows of the store's health.
//
// The changes are collected under the coordinator's mutex (the owner's mutex, `mu` below) into
// the pending batch. A call that changed something seals it before it lets the mutex go (Flush,
// Kick): the batch is numbered (from 1, in the order of the calls) and queued for the committer
// thread, which takes every sealed batch waiting, commits them in one transaction and marks the
// last one durable. The committer never takes the owner's mutex on that path, so a commit starts
// as soon as the one before it ended and something is sealed: it does not wait in the mutex's
// queue, which is long under load (decision 185). A call that must not reply before its changes
// are durable waits in Flush with the mutex released. The journal's order is the order of the
// calls (LevelDB's DBImpl::Write groups its writers' batches the same way).
//
// A commit that fails leaves memory ahead of the disk: the committer takes the owner's mutex,
// drops what is pending and sealed, counts the failure (a call that waited across it saw changes
// that are rolled back and gets the refusal instead of its reply), and calls the owner's
// RollBack, which rebuilds memory from the store as a restart would. The store is then read-only
// to the owner (writable() is false, and Refusal says what a refused call should do) until
// TryWritingAgain finds it takes writes again. With abort_on_failure a failed commit aborts the
// process instead.
//
// The worker mailboxes learn which batches are durable without the mutex (durable_batches()),
// and a mailbox holding a deposit of a batch not durable yet is notified when it becomes so
// (NotifyWhenDurable).
//
// Thread-safety: every method but durable_batches(), Stop() and BatchesSealedByThisThread() must
// be called with the owner's mutex held, passed as `mu` (the same mutex given at construction;
// checked). Flush and AwaitDurable release it while they wait. Lock order: the owner's mutex, then
// the writer's own.
#ifndef KBISECT_COORDINATOR_JOURNAL_WRITER_H_
#define KBISECT_COORDINATOR_JOURNAL_WRITER_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <thread>
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
  // must outlive the writer. With a store, starts the committer thread.
  JournalWriter(JobStore* store, kbisect::Mutex* mu, Clock* clock, Options options,
                RollBack roll_back);
  // Stop().
  ~JournalWriter();

  JournalWriter(const JournalWriter&) = delete;
  JournalWriter& operator=(const JournalWriter&) = delete;

  // Whether changes are journaled at all (there is a store).
  bool enabled() const { return store_ != nullptr; }

  // The batch that collects changes now.
  StoreChanges& pending(kbisect::Mutex& mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // Seals what is pending and returns once every change this call saw or made is durable (the
  // mutex released meanwhile). When a batch this call waited on failed, returns Refusal(false);
  // after Stop, with changes pending, UNAVAILABLE. A call must not reply before this returned OK.
  absl::Status Flush(kbisect::Mutex& mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // For a call whose reply shows none of its changes until they are durable by other means (a
  // Synchronize: its mailbox holds each deposit until its batch is): seals what is pending and
  // returns without waiting.
  void Kick(kbisect::Mutex& mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // For calls that only read: waits (the mutex released meanwhile) until what they saw (every
  // sealed batch) is durable, so nothing a client is shown is lost by a crash. Returns
  // Refusal(false) when what they saw was rolled back by a failed commit meanwhile: they must not
  // show it.
  absl::Status AwaitDurable(kbisect::Mutex& mu) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // The batch that must be durable before a reply may show what was changed so far: the pending
  // one (the number it gets when sealed), else the last one sealed (0 without a store: nothing to
  // wait for).
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

  // Commits every batch sealed so far, then stops the committer thread; later changes are not
  // committed (Flush refuses them). Called without the owner's mutex (a failed commit takes it
  // to roll back), before what RollBack reads is destroyed. Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(queue_mu_);

  // Batches the calling thread sealed, ever (the before-reply crash point counts a call as
  // mutating when this changed during it).
  static int64_t BatchesSealedByThisThread();

 private:
  // A batch sealed and queued for the committer.
  struct SealedBatch {
    uint64_t number = 0;
    StoreChanges changes;
  };

  // Checks that `mu` is the owner's mutex and tells the analysis that mu_ is held.
  void Held(const kbisect::Mutex& mu) const ABSL_ASSERT_EXCLUSIVE_LOCK(mu_);
  // Numbers the pending batch and queues it for the committer (nothing when none is pending).
  // False when it could not: the writer was stopped.
  bool Seal(kbisect::Mutex& mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Waits, `mu` released, until batch `target` is durable (or was dropped by a failed commit).
  void AwaitBatch(kbisect::Mutex& mu, uint64_t target) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu)
      ABSL_LOCKS_EXCLUDED(queue_mu_);
  // The committer thread: commits what is sealed, batch after batch, until Stop.
  void CommitLoop() ABSL_LOCKS_EXCLUDED(queue_mu_);
  // After a successful commit of the batches up to `last`: marks them durable and notifies the
  // mailboxes waiting for them.
  void MarkDurable(uint64_t last) ABSL_LOCKS_EXCLUDED(queue_mu_);
  // After a failed commit: the owner rolls back (see the top of this file).
  void FailCommit(const absl::Status& failure) ABSL_LOCKS_EXCLUDED(mu_, queue_mu_);

  JobStore* const store_;
  kbisect::Mutex* const mu_;
  Clock* const clock_;
  const Options options_;
  const RollBack roll_back_;

  StoreChanges pending_ ABSL_GUARDED_BY(mu_);         // The next batch, collected until sealed.
  uint64_t batches_sealed_ ABSL_GUARDED_BY(mu_) = 0;  // The number of the last batch sealed.
  // Commits that failed since this process started: a call that waited across a change of it
  // saw changes that were rolled back.
  uint64_t failed_commits_ ABSL_GUARDED_BY(mu_) = 0;
  // Not OK while the store cannot be written: why. And when it was last tried.
  absl::Status store_failure_ ABSL_GUARDED_BY(mu_);
  absl::Time last_write_check_ ABSL_GUARDED_BY(mu_);

  // The committer's queue and what it made durable.
  mutable kbisect::Mutex queue_mu_;
  std::deque<SealedBatch> sealed_ ABSL_GUARDED_BY(queue_mu_);
  // Mailboxes holding a deposit of a batch not durable yet, by batch.
  std::multimap<uint64_t, std::shared_ptr<WorkerMailbox>> to_notify_ ABSL_GUARDED_BY(queue_mu_);
  bool stopping_ ABSL_GUARDED_BY(queue_mu_) = false;
  kbisect::CondVar sealed_or_stopping_;       // The committer waits on it.
  mutable kbisect::CondVar durable_changed_;  // Signalled when batches become durable.
  // The last durable batch: written under queue_mu_ (so a wait on durable_changed_ or a
  // NotifyWhenDurable cannot miss a change), read without it by the mailboxes.
  std::atomic<uint64_t> durable_batches_{0};
  // Journal commits (of batches that change jobs) since this process started; the committer's.
  int64_t journal_commits_ = 0;
  std::thread committer_;
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOURNAL_WRITER_H_
