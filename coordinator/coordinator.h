// Copyright 2026 The kbisect Authors.
//
// Coordinator owns every job and every worker session: it turns jobs' tasks into leases, hands
// them to idle workers, renews leases on heartbeats, expires them when workers vanish, fences
// stale results, cancels probes that became useless, and keeps each job's event log for
// WatchJob. The gRPC services (coordinator/coordinator_server.h) are thin adapters over it, so
// tests drive it directly with a FakeClock and zero-wait long polls.
//
// It is composed of parts that keep their own state: JobTable (the jobs, their order, positions and
// request ids, ListJobs' pages, and Apply, through which every call changes a job;
// coordinator/job_table.h), WorkerSessions (the workers, their sessions and mailboxes in a
// WorkerRegistry, and the worker RPCs served on them; coordinator/worker_sessions.h), LeaseTable
// (leases, attempts, fencing, expiry; coordinator/lease_table.h), JournalWriter (the group
// commit), and the pure cross-job lease policy (coordinator/lease_policy.h). Its own methods,
// which sequence those parts and the jobs, live in coordinator.cc (jobs, ApplyLocked, Watch,
// events, and the worker calls handed to WorkerSessions), recovery.cc (reading the journals and
// replaying them, roll back, Recover), coordinator_leases.cc (dispatch, leases, expiry, what a
// worker's session does to the jobs), follow_up_jobs.cc (with the pure plan and fold in
// follow_ups.h), and metrics.cc (the metrics snapshot).
//
// Persistence: with a JobStore (CoordinatorOptions::store) every change of a job is journaled
// (see coordinator/job_store.h) and committed before the call that made it returns (so a
// CompleteLease is answered only once its result is durable), and nothing is shown to a client
// (GetJob, ListJobs, WatchJob) before it is durable. Calls that finish while a commit is in flight
// are committed together, in one transaction, by the next (group commit: JournalWriter, in
// coordinator/journal_writer.h, whose committer thread commits without the coordinator's mutex;
// a call seals its changes before it lets the mutex go). After a
// restart, Recover() rebuilds every job by replaying its journal; probes that were running are
// re-dispatched (their old leases are unknown, so late results on them are rejected).
//
// If a commit fails (the state volume is full, read-only or failing), the call that made the
// change gets an error instead of its reply, and the coordinator rebuilds its memory from the
// store as a restart would (so it shows nothing the disk does not have: worker sessions and
// leases end, workers reconnect). It then serves reads only (GetJob, ListJobs, WatchJob,
// ListWorkers, Metrics) and refuses every call that would change something: SubmitJob and
// CancelJob with RESOURCE_EXHAUSTED (disk full) or FAILED_PRECONDITION (anything else) saying
// what to do, worker calls with UNAVAILABLE (workers back off and retry). Every
// kWriteCheckPeriod ExpireLeases tries the store again (JobStore::CheckWritable) and, once that
// succeeds, the coordinator accepts changes again. With group commit a failed batch holds the
// changes of every call that waited on it (and of the batches sealed meanwhile): the committer
// rebuilds memory once, and every call waiting on either batch, readers
// included, gets the refusal instead of what it saw (JournalWriter counts the failures), so nothing
// rolled back is acknowledged or shown. With abort_on_store_failure (`kbisect run`) a failed commit
// aborts.
//
// Thread-safety: every public method may be called from any thread; one mutex guards all state
// but what a worker's long poll picks up. The journal is collected under that mutex and committed
// one batch at a time, in order, so the journal's order is the order of the calls. Each worker
// session has a mailbox (coordinator/worker_mailbox.h) with its own small mutex: the leases and
// cancellations handed to the worker wait there, each stamped with the journal batch that must be
// durable first, and its Synchronize long poll waits there and answers from there without the
// coordinator's mutex. A poll that would change nothing in the coordinator (it reports no lease
// and none was delivered to it) does not take that mutex at all. Lock order: the coordinator's
// mutex, SessionMailboxes' (mailboxes_), a mailbox's.
#ifndef KBISECT_COORDINATOR_COORDINATOR_H_
#define KBISECT_COORDINATOR_COORDINATOR_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock/clock.h"
#include "common/sync/mutex.h"
#include "coordinator/built_commits.h"
#include "coordinator/crash_points.h"
#include "coordinator/follow_ups.h"
#include "coordinator/id_minter.h"
#include "coordinator/job/bisect_job.h"
#include "coordinator/job_entry.h"
#include "coordinator/job_store.h"
#include "coordinator/job_table.h"
#include "coordinator/journal_writer.h"
#include "coordinator/lease_policy.h"
#include "coordinator/lease_table.h"
#include "coordinator/metrics.h"
#include "coordinator/published_status.h"
#include "coordinator/repository_view.h"
#include "coordinator/result_cache.h"
#include "coordinator/worker_entry.h"
#include "coordinator/worker_mailbox.h"
#include "coordinator/worker_registry.h"
#include "coordinator/worker_sessions.h"
#include "coordinator/write_lock.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

struct CoordinatorOptions {
  // Workers are told to Synchronize this often.
  absl::Duration heartbeat_interval = absl::Seconds(1);
  // A lease expires (and its task is re-dispatched) after this long without a heartbeat.
  absl::Duration lease_duration = absl::Seconds(10);
  // Longest a Synchronize long poll is held open, whatever the worker asks for.
  absl::Duration max_wait = absl::Seconds(10);
  // After a restart, how long a worker known from before may take to reconnect before its
  // probes are given to others and it counts as gone (workers back off up to 5 s between tries).
  absl::Duration reconnect_grace = absl::Seconds(30);
  // Where jobs are persisted; must outlive the coordinator. Null: nothing is persisted (the
  // embedded `kbisect run`).
  JobStore* store = nullptr;
  // Where measurements are kept across jobs and looked up for new ones (see
  // coordinator/result_cache.h); must outlive the coordinator. Null: nothing is reused.
  ResultCache* result_cache = nullptr;
  // How long a finished job (with its follow-ups) is kept after it finished; older ones are
  // deleted from memory and from the store at start and about once a minute. Infinite: kept.
  absl::Duration retain = absl::InfiniteDuration();
  // What a failed commit does: false (the daemon): reads only until the store takes writes
  // again (see the top of this file); true (`kbisect run`, whose store only serves a resume):
  // the process aborts with the message, as a journal it cannot write is of no use.
  bool abort_on_store_failure = false;
  // Test-only crash points (coordinator/crash_points.h); disarmed by default.
  CrashPoints crash_points;
};

// What Coordinator::Recover found.
struct RecoveryReport {
  int jobs = 0;             // Jobs loaded.
  int unfinished = 0;       // Of which still running.
  int orphaned_probes = 0;  // Probes that were running at the crash, to be run again.
  int workers = 0;          // Workers known from before (shown as lost until they reconnect).
};

class Coordinator {
 public:
  // `repositories` and `clock` must outlive the coordinator.
  Coordinator(CoordinatorOptions options, RepositoryView* repositories, Clock* clock);
  ~Coordinator();

  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // Loads every job from the store and rebuilds it by replaying its journal: statuses, event
  // logs (with the same sequence numbers, so WatchJob resumes) and request ids come back as they
  // were. Every probe still running after the replay is run again with the next attempt under a
  // new lease; its old lease is unknown, so a late result on it is rejected. It goes back first
  // to the worker that ran it (when that worker reconnects and is idle), because some probes
  // only count on their own worker (its GOOD calibration, A/A controls, re-measurements) and
  // losing those would discard the worker's measured-but-unclassified probes. Workers known from
  // before are listed as lost until they open a new session; one that does not come back within
  // reconnect_grace loses its probes ("the coordinator restarted", re-dispatched to others) and
  // leaves the jobs as a worker that stopped heartbeating does. Call once, before serving and
  // before any other call. Without a store it does nothing. Errors are the store's (e.g. a
  // corrupt database).
  absl::StatusOr<RecoveryReport> Recover();

  // --- Client-facing operations (CoordinatorService). -----------------------------------------

  // Validates the spec, resolves its range (errors from RepositoryView::ResolveRange are
  // returned as they are) and starts the job. A non-empty `request_id` seen before returns the
  // job created then, with `existing` set.
  absl::StatusOr<v1::SubmitJobResponse> SubmitJob(const v1::SubmitJobRequest& request);

  // NotFound for an unknown job id.
  absl::StatusOr<v1::JobStatus> GetJob(const std::string& job_id) const;

  // The job's state alone, as GetJob's status would show it (WorkerService.GetJobState, for a
  // worker that serves until the job has ended). NotFound for an unknown job id.
  absl::StatusOr<v1::JobState> GetJobState(const std::string& job_id) const;

  // Jobs newest first, filtered by request.states, paged: page_size jobs (default 50, at most
  // 1,000) and, when more match, a next_page_token that continues below the page's last job,
  // whatever was submitted meanwhile. A page costs the jobs it lists or skips by state.
  static constexpr int kDefaultListedJobs = JobTable::kDefaultListedJobs;
  static constexpr int kMaxListedJobs = JobTable::kMaxListedJobs;
  v1::ListJobsResponse ListJobs(const v1::ListJobsRequest& request) const;

  // Cancels a job: its running probes are cancelled on their workers. Cancelling a finished job
  // returns its final status unchanged. NotFound for an unknown job id.
  absl::StatusOr<v1::JobStatus> CancelJob(const std::string& job_id, const std::string& reason);

  // Every worker as ListWorkers shows it (WorkerSessions::ListWorkers).
  v1::ListWorkersResponse ListWorkers() const;

  // Calls `sink` with each event of the job after `after_sequence`, in order, until the FINISHED
  // event was delivered, `sink` returns false, `is_cancelled` (polled about once a second while
  // waiting; may be null) returns true, or the coordinator shuts down. Blocks between events.
  // NotFound for an unknown job id.
  absl::Status WatchJob(const std::string& job_id, int64_t after_sequence,
                        const std::function<bool(const v1::JobEvent&)>& sink,
                        const std::function<bool()>& is_cancelled = nullptr);

  // --- Worker-facing operations (WorkerService): WorkerSessions' (coordinator/worker_sessions.h).

  // The part that serves the workers' calls; the gRPC WorkerService calls it directly.
  WorkerSessions& worker_sessions() { return sessions_; }

  // WorkerSessions::OpenSession.
  absl::StatusOr<v1::OpenSessionResponse> OpenSession(const v1::OpenSessionRequest& request);

  // Heartbeat and work pickup. Returns at once when there are assignments or cancellations for
  // the worker, otherwise waits up to min(request.wait, max_wait) for some. NotFound when the
  // session is unknown (e.g. the coordinator restarted): the worker opens a new session. Blocks
  // the calling thread while it waits: SynchronizeAsync does not.
  absl::StatusOr<v1::SynchronizeResponse> Synchronize(const v1::SynchronizeRequest& request);

  // What answers a Synchronize: called once, with the reply.
  using SynchronizeDone = WorkerSessions::SynchronizeDone;
  // Synchronize without a thread held while the poll waits (the gRPC service's long poll, so
  // that a thousand idle workers hold no thousand threads): `done` runs once with what
  // Synchronize would return, on the calling thread when the answer is ready at once (before
  // this returns), else on a thread of the coordinator's poll scheduler once news arrives or the
  // wait ends.
  void SynchronizeAsync(const v1::SynchronizeRequest& request, SynchronizeDone done);

  // Accepts a result only from the session holding the live lease (fencing); a repeated report
  // of an already accepted lease is a harmless duplicate.
  absl::StatusOr<v1::CompleteLeaseResponse> CompleteLease(const v1::CompleteLeaseRequest& request);

  // Ends the session: its leases are lost and the worker leaves the jobs.
  absl::Status CloseSession(const v1::CloseSessionRequest& request);

  // --- Monitoring. -----------------------------------------------------------------------------

  // The counts behind the Prometheus metrics (coordinator/metrics.h), taken under the lock so
  // they are consistent with each other. Probes, bench runs, drift events and quarantines are
  // summed over every job the coordinator knows (recovered ones included); lease expiries count
  // since this process started.
  MetricsSnapshot Metrics() const;

  // OK while the coordinator can persist changes; else why it serves reads only (the error a
  // client's SubmitJob gets).
  absl::Status StoreHealth() const;

  // How often a coordinator that serves reads only tries to write again.
  static constexpr absl::Duration kWriteCheckPeriod = JournalWriter::kWriteCheckPeriod;

  // --- Housekeeping. ---------------------------------------------------------------------------

  // Expires leases and sessions whose heartbeat deadline passed at the clock's current time.
  // Called periodically by the server (StartHousekeeping) and directly by tests.
  void ExpireLeases();

  // Starts a background thread that calls ExpireLeases every `period`.
  void StartHousekeeping(absl::Duration period);

  // Wakes every blocked call (long polls, watches) and makes them return; further calls fail
  // with Unavailable. Idempotent.
  void Shutdown();

 private:
  // What a journaled call returned.
  struct CallResult {
    std::vector<std::string> cancel;
    std::vector<BisectJob::Assignment> assignments;
  };
  using JobEntry = ::kbisect::JobEntry;
  using LeaseEntry = LeaseTable::Lease;
  using WorkerEntry = ::kbisect::WorkerEntry;
  // Leases a task of `job_id` to `worker` (OnTaskStarted with the next attempt) and queues the
  // assignment for its next Synchronize.
  void LeaseTaskLocked(const std::string& job_id, JobEntry& entry, WorkerEntry& worker,
                       v1::Task task, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The workers and their sessions (WorkerSessions' registry).
  WorkerRegistry& workers() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return sessions_.registry(mu_); }
  const WorkerRegistry& workers() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return sessions_.registry(mu_);
  }
  // Adds to `take`, a TakeTasks of `job`, the commits of the job's open interval already built
  // where each worker asked reads builds (built_commits_).
  void AddBuiltCommitsLocked(const BisectJob& job, JournalEntry* take)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What a worker's calls do to the jobs, for WorkerSessions: this coordinator's methods, each
  // called with mu_ held.
  WorkerSessions::JobSide SessionJobSide();
  // The result of the live lease `lease` was accepted: ends the lease as completed, applies the
  // result to its job (TaskFinished) and cancels what it made useless. Returns the measurements
  // the result cache should keep, if any (written by WorkerSessions after the lock's release).
  std::optional<WorkerSessions::CacheWrite> LeaseCompletedLocked(LeaseEntry& lease,
                                                                 const v1::TaskResult& result)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Makes `call` on the entry's job (JobTable::Apply), queues its journal entry for the commit
  // (unless replaying, or when the call leaves no trace), then AfterJobChangeLocked. Every
  // mutation of a BisectJob goes through here, live and during replay alike, so that replay
  // reproduces the job, its events and their sequence numbers exactly.
  CallResult ApplyLocked(const std::string& job_id, JobEntry& entry, JournalEntry call)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Task -> (worker, task) of its last TaskStarted in the journals replayed: where a probe that
  // was running at the restart goes back to.
  using ReplayedTasks = std::map<std::string, std::pair<std::string, v1::Task>>;
  // Replays one journal entry of the job (ApplyLocked) and notes what it tells of the probes
  // that were running: the task each TakeTasks handed out, and the worker and attempt of each
  // TaskStarted (the attempt into the lease table, so a new lease takes a later one).
  void ReplayLocked(const std::string& job_id, JobEntry& entry, JournalEntry call,
                    ReplayedTasks* replayed_tasks) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Recover's replay of `state` into empty maps.
  RecoveryReport RebuildLocked(StoredState state) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops every job, worker, session and lease and rebuilds them from the store.
  void ReloadLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Once a top-level job completed (its follow-ups before it): has the store keep it and its
  // follow-ups as final statuses and event logs, dropping their journals (StoreChanges).
  void CompactFamilyLocked(const std::string& job_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Hands the running jobs' tasks to the idle workers. Called after every change that may let a
  // job hand out a task (a result, a new job, a worker freed or lost, ...).
  void DispatchLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CancelTasksLocked(const std::string& job_id, const std::vector<std::string>& task_ids,
                         const std::string& reason) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AfterJobChangeLocked(const std::string& job_id, JobEntry& entry)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void LoseLeaseLocked(LeaseEntry& lease, const std::string& why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends an active lease with `state` (LeaseTable::End) and takes it off its job's count and its
  // worker, once: a lease that had ended changes nothing and returns false. Returns true when
  // its assignment was still waiting in the worker's mailbox (now withdrawn: the worker never
  // sees it).
  bool EndLeaseLocked(LeaseEntry& lease, LeaseTable::State state)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The worker left (`kind` kWorkerGone: it closed its session, stopped heartbeating or did not
  // come back after a restart) or came back as other hardware (kForgetWorker): the probes a
  // restart orphaned for it are lost (`orphans_why`), then every running job is told with
  // `why`, and what that made useless is cancelled.
  void WorkerLeftLocked(WorkerEntry& worker, JournalEntry::Kind kind,
                        const std::string& orphans_why, const std::string& why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Cancels the job (if still running) and its follow-ups, recursively.
  void CancelJobLocked(const std::string& job_id, const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Creates a job from a resolved spec (journaled, dispatched), reusing `cached` results.
  // Returns its id.
  std::string CreateJobLocked(const v1::JobSpec& spec, const std::string& request_id,
                              std::vector<v1::CommitRef> commits,
                              std::vector<v1::CachedResult> cached = {})
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Starts the follow-up jobs a finished job's result calls for: the merged branch of a merge
  // culprit (spec.descend_merges) and the ranges on either side of a step that explains too
  // little (spec.all_culprits). Each is an ordinary job with a request id derived from the
  // parent's, so a restarted coordinator finds the ones it already started.
  void StartFollowUpsLocked(const std::string& job_id, JobEntry& entry)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // --verify-revert (WantsRevertCheck): makes the commit that reverts the culprit at BAD and
  // returns the follow-up that measures it; when the revert conflicts or cannot be made, the
  // job's published revert_check says so and there is no follow-up.
  std::optional<PlannedFollowUp> RevertCheckLocked(const v1::JobStatus& status, JobEntry& entry)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Once `job_id` and all its follow-ups finished: folds their results into its status and
  // releases its FINISHED event (then tells its own parent, if any).
  void MaybeCompleteLocked(const std::string& job_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const CoordinatorOptions options_;
  RepositoryView* const repositories_;
  Clock* const clock_;
  JobStore* const store_;

  mutable kbisect::Mutex mu_;
  // Commits the journal collected under mu_ (group commit) and knows whether the store takes
  // writes; its methods take mu_.
  JournalWriter journal_;
  bool replaying_ ABSL_GUARDED_BY(mu_) = false;
  kbisect::CondVar changed_;  // Signalled on any change a blocked call might wait for.
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  IdMinter ids_ ABSL_GUARDED_BY(mu_);
  JobTable jobs_ ABSL_GUARDED_BY(mu_);
  LeaseTable leases_ ABSL_GUARDED_BY(mu_);
  // The commits built on the workers' hosts and in their build stores (built_commits.h), learned
  // from every finished task: the jobs prefer probe points already built.
  BuiltCommits built_commits_ ABSL_GUARDED_BY(mu_);
  // Mutating RPCs' replies since this process started (for the before_reply crash point).
  MutatingReplies replies_;
  // The workers, their sessions and mailboxes, and the worker RPCs; its state is under mu_ but
  // for the mailboxes (their own locks). Lock order: mu_, the mailboxes' index, a mailbox's.
  WorkerSessions sessions_;
  // During Recover: follow-up jobs (by request id) not loaded yet; their parent's replay loads
  // each where it started it (StartFollowUpsLocked).
  std::map<std::string, StoredJob> unloaded_follow_ups_ ABSL_GUARDED_BY(mu_);
  // When ExpireLeases last deleted what --retain expires (JobTable::EraseExpired).
  absl::Time last_prune_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();

  class Housekeeper;
  std::unique_ptr<Housekeeper> housekeeper_;
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_COORDINATOR_H_
