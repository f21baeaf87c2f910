// Copyright 2026 The kbisect Authors.
//
// WorkerSessions: the coordinator's part that owns the workers' side, as Ray's GCS managers own
// their tables and serve their RPCs (GcsNodeManager the nodes): the workers (WorkerRegistry),
// their live sessions' mailboxes (SessionMailboxes) and the threads that finish their long polls,
// and the WorkerService calls on them: OpenSession, the Synchronize long poll (heartbeat, lease
// renewals and losses, pickup), CompleteLease (fenced results) and CloseSession, and the workers
// list. The Coordinator's methods of the same names and the gRPC WorkerService delegate here.
//
// What a worker's call does to the jobs (a result applied, a lease lost, a worker gone, a
// dispatch round, build-ahead hints) is the coordinator's, which spans jobs, leases and workers:
// it hands in a JobSide of callbacks, each run with its mutex held. The leases stay the
// coordinator's too (dispatch grants them, expiry and cancellation end them); the calls here read
// and renew them in the coordinator's LeaseTable, under its mutex.
//
// Thread-safety: every public method may be called from any thread. Its state is guarded by the
// coordinator's mutex (given at construction), but for SessionMailboxes (its own lock; the
// Synchronize that changes nothing reads it without the coordinator's mutex) and the time of the
// last dispatch round that such a Synchronize reads (an atomic). Lock order: the coordinator's
// mutex, SessionMailboxes', a mailbox's.
#ifndef KBISECT_COORDINATOR_WORKER_SESSIONS_H_
#define KBISECT_COORDINATOR_WORKER_SESSIONS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock/clock.h"
#include "common/sync/mutex.h"
#include "coordinator/id_minter.h"
#include "coordinator/job/journal_entry.h"
#include "coordinator/journal_writer.h"
#include "coordinator/lease_policy.h"
#include "coordinator/lease_table.h"
#include "coordinator/poll_scheduler.h"
#include "coordinator/result_cache.h"
#include "coordinator/worker_entry.h"
#include "coordinator/worker_mailbox.h"
#include "coordinator/worker_registry.h"
#include "coordinator/write_lock.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

class WorkerSessions {
 public:
  // The session settings (CoordinatorOptions' of the same names).
  struct Options {
    // Workers are told to Synchronize this often.
    absl::Duration heartbeat_interval;
    // A lease a heartbeat renews lasts this long.
    absl::Duration lease_duration;
    // Longest a Synchronize long poll is held open, whatever the worker asks for.
    absl::Duration max_wait;
  };
  // Measurements to add to the result cache: written after the coordinator's mutex is released.
  struct CacheWrite {
    std::string spec_digest;
    std::vector<v1::CachedResult> records;
  };
  // What a worker's calls do to the jobs: the coordinator's side, each called with its mutex held.
  struct JobSide {
    // Hands the running jobs' tasks to the idle workers: after every change that may let a job
    // hand one out (a worker freed, lost or come back, a result).
    std::function<void()> dispatch;
    // Ends the active lease as lost, telling its job with `why`, and cancels what that made
    // useless.
    std::function<void(LeaseTable::Lease& lease, const std::string& why)> lose_lease;
    // The worker left (`kind` kWorkerGone) or came back as other hardware (kForgetWorker): its
    // probes orphaned by a restart are lost (`orphans_why`) and every running job is told (`why`).
    std::function<void(WorkerEntry& worker, JournalEntry::Kind kind, const std::string& orphans_why,
                       const std::string& why)>
        worker_left;
    // The result of the live lease `lease` was accepted: ends the lease as completed, applies
    // the result to its job and cancels what it made useless; returns the measurements the
    // result cache should keep, if any.
    std::function<std::optional<CacheWrite>(LeaseTable::Lease& lease, const v1::TaskResult& result)>
        lease_completed;
    // A host's build slots changed: every job may take the workers it declined before.
    std::function<void()> pool_changed;
    // The build-ahead hints for a worker of `hardware_class`, at most `limit`.
    std::function<std::vector<v1::Task>(const std::string& hardware_class, int limit)> build_ahead;
  };

  // How often a heartbeat that changed nothing dispatches anyway, for what time alone changed.
  static constexpr absl::Duration kRedispatchPeriod = DispatchRound::kRedispatchPeriod;

  // `mu` (the coordinator's mutex, which guards `ids` and `leases`), `journal`, `ids`, `leases`,
  // `clock` and `replies` must outlive the sessions; `result_cache` may be null (nothing kept).
  WorkerSessions(Options options, kbisect::Mutex* mu, JournalWriter* journal, IdMinter* ids,
                 LeaseTable* leases, Clock* clock, ResultCache* result_cache,
                 MutatingReplies* replies, JobSide job_side);
  // Stop().
  ~WorkerSessions();

  WorkerSessions(const WorkerSessions&) = delete;
  WorkerSessions& operator=(const WorkerSessions&) = delete;

  // Opens a session for the worker named in `request` (an anonymous name when none): a live
  // session of the same name is replaced (its poll ends; its leases survive only if the request
  // says the worker still holds them), and a worker that comes back as other hardware leaves
  // the jobs first. UNAVAILABLE while shutting down or while the store takes no writes.
  absl::StatusOr<v1::OpenSessionResponse> OpenSession(const v1::OpenSessionRequest& request)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Heartbeat and work pickup. Returns at once when there are assignments or cancellations for
  // the worker, otherwise waits up to min(request.wait, max_wait) for some. NotFound when the
  // session is unknown (e.g. the coordinator restarted): the worker opens a new session. Blocks
  // the calling thread while it waits: SynchronizeAsync does not.
  absl::StatusOr<v1::SynchronizeResponse> Synchronize(const v1::SynchronizeRequest& request)
      ABSL_LOCKS_EXCLUDED(mu_);

  // What answers a Synchronize: called once, with the reply.
  using SynchronizeDone = std::function<void(absl::StatusOr<v1::SynchronizeResponse>)>;
  // Synchronize without a thread held while the poll waits: `done` runs once with what
  // Synchronize would return, on the calling thread when the answer is ready at once (before
  // this returns), else on a thread of the poll scheduler once news arrives or the wait ends.
  void SynchronizeAsync(const v1::SynchronizeRequest& request, SynchronizeDone done)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Accepts a result only from the session holding the live lease (fencing); a repeated report
  // of an already accepted lease is a harmless duplicate. Answered once the result is durable.
  absl::StatusOr<v1::CompleteLeaseResponse> CompleteLease(const v1::CompleteLeaseRequest& request)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Ends the session: its leases are lost and the worker leaves the jobs. An unknown session is
  // no error.
  absl::Status CloseSession(const v1::CloseSessionRequest& request) ABSL_LOCKS_EXCLUDED(mu_);

  // Every worker as ListWorkers shows it.
  v1::ListWorkersResponse ListWorkers() const ABSL_LOCKS_EXCLUDED(mu_);

  // The workers and their sessions, for the coordinator's walks over them (dispatch, expiry,
  // recovery, reports, metrics). `mu` must be the coordinator's mutex.
  WorkerRegistry& registry(kbisect::Mutex& mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  const WorkerRegistry& registry(kbisect::Mutex& mu) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // A dispatch round ran at `now`: a heartbeat that changes nothing dispatches again only
  // kRedispatchPeriod later, and until then a poll that would change nothing here skips the
  // coordinator's mutex.
  void Dispatched(kbisect::Mutex& mu, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // Refuses every later OpenSession, Synchronize and CompleteLease with UNAVAILABLE and closes
  // every session's mailbox, so that each waiting poll ends (it then finds the refusal).
  void Shutdown(kbisect::Mutex& mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // Finishes the Synchronize calls begun (their polls may wait), then ends every poll still
  // waiting (its deadline brought forward). Called after Shutdown, while what the JobSide reads
  // is alive. Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // The threads that answer the polls that waited without one (poll_scheduler_): an answer is a
  // few protobuf moves, rarely a short turn under the coordinator's mutex.
  static constexpr int kPollSchedulerThreads = 4;
  // The threads that run the part of a Synchronize under the coordinator's mutex (which may lead
  // a journal commit and wait for its fsync; synchronize_calls_): enough that a commit in flight
  // does not hold every poll, far fewer than one per worker. Apart from the answers, which would
  // otherwise queue behind calls waiting for the mutex.
  static constexpr int kSynchronizeThreads = 32;

  // Checks that `mu` is the coordinator's mutex and tells the analysis that mu_ is held.
  void Held(const kbisect::Mutex& mu) const ABSL_ASSERT_EXCLUSIVE_LOCK(mu_);

  // OpenSession's replacement of the live session of `worker`: its poll ends, and the leases of
  // the old session survive only if `request` says the worker still holds them (renewed from
  // `now`); the others are lost.
  void ReplaceSessionLocked(WorkerEntry& worker, const v1::OpenSessionRequest& request,
                            absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Synchronize's pieces. The call under the lock: heartbeat, lease renewals and losses,
  // dispatch; it begins the poll on the worker's mailbox and says until when it waits.
  absl::Status BeginSynchronizeLocked(const v1::SynchronizeRequest& request,
                                      v1::SynchronizeResponse* response,
                                      std::shared_ptr<WorkerMailbox>* mailbox, uint64_t* sequence,
                                      absl::Time* deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The leases the worker's heartbeat reports are renewed (those that are dead are cancelled in
  // `response`); its active leases it no longer reports, although they were delivered, are lost.
  // Returns whether any was lost.
  bool RenewLeasesLocked(WorkerEntry& worker, const v1::SynchronizeRequest& request, absl::Time now,
                         v1::SynchronizeResponse* response) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The rest of a Synchronize whose poll began on `mailbox`: waits there until `deadline` without
  // holding a thread, then calls `done` with AnswerSynchronize's answer.
  void AwaitSynchronize(const v1::SynchronizeRequest& request, v1::SynchronizeResponse response,
                        const std::shared_ptr<WorkerMailbox>& mailbox, uint64_t sequence,
                        absl::Time deadline, SynchronizeDone done) ABSL_LOCKS_EXCLUDED(mu_);
  // The answer of a poll that ended with `outcome`, from what it was delivered (assignments,
  // cancellations once each, the lease expiry), taking the coordinator's mutex only when the
  // mailbox was closed or build-ahead hints are asked for.
  absl::StatusOr<v1::SynchronizeResponse> AnswerSynchronize(const v1::SynchronizeRequest& request,
                                                            v1::SynchronizeResponse response,
                                                            WorkerMailbox::Outcome outcome,
                                                            WorkerMailbox::Delivery delivery)
      ABSL_LOCKS_EXCLUDED(mu_);
  // CompleteLease under the lock: fences the lease, applies the result to its job and
  // dispatches; sets `cache_write` to the measurements the result cache should keep.
  absl::StatusOr<v1::CompleteLeaseResponse> CompleteLeaseLocked(
      const v1::CompleteLeaseRequest& request, std::optional<CacheWrite>* cache_write)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  kbisect::Mutex* const mu_;
  JournalWriter* const journal_;
  IdMinter* const ids_ ABSL_PT_GUARDED_BY(mu_);
  LeaseTable* const leases_ ABSL_PT_GUARDED_BY(mu_);
  Clock* const clock_;
  ResultCache* const result_cache_;
  MutatingReplies* const replies_;
  const JobSide job_side_;

  // The live sessions' mailboxes, for the Synchronize that needs no change (added and removed
  // under mu_ by registry_; read without it).
  SessionMailboxes mailboxes_;
  // The workers and their sessions; fills mailboxes_.
  WorkerRegistry registry_ ABSL_GUARDED_BY(mu_);
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time last_dispatch_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  // last_dispatch_ in Unix nanoseconds, for the Synchronize that takes no lock.
  std::atomic<int64_t> last_dispatch_ns_{std::numeric_limits<int64_t>::min()};

  // Runs the continuations of the polls that wait without a thread, and their deadlines.
  std::unique_ptr<PollScheduler> poll_scheduler_;
  // Runs the part of each Synchronize under the coordinator's mutex, off gRPC's callback threads.
  std::unique_ptr<PollScheduler> synchronize_calls_;
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_WORKER_SESSIONS_H_
