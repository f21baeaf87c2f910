// Copyright 2026 The kbisect Authors.
//
// JobStore persists what the Coordinator needs to rebuild every job after a crash. Jobs are
// event-sourced: BisectJob is a deterministic state machine, so a job is stored as the arguments
// of its constructor plus a journal of every mutating call made on it, and rebuilt by replaying
// that journal in order. Worker identities are stored too (reports show them, and a worker that
// comes back with different hardware must calibrate again).
//
// The Coordinator collects the changes of one state change (one RPC or one housekeeping pass)
// in a StoreChanges and commits them with one Commit call before it answers; a store makes each
// Commit atomic and durable, so after a crash the journal holds exactly the calls whose effects
// were acknowledged (plus, at most, those of the state change that was in progress).
//
//   absl::StatusOr<std::unique_ptr<SqliteJobStore>> store =
//       SqliteJobStore::Open(state_dir + "/kbisect.db");
//   CoordinatorOptions options;
//   options.store = store->get();
//   Coordinator coordinator(options, repositories, Clock::Real());
//   absl::StatusOr<RecoveryReport> recovered = coordinator.Recover();
#ifndef KBISECT_COORDINATOR_JOB_STORE_H_
#define KBISECT_COORDINATOR_JOB_STORE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/sync/mutex.h"
#include "coordinator/job/journal_entry.h"
#include "kbisect/v1/kbisect.pb.h"

struct sqlite3;

namespace kbisect {

// A job as stored: what its BisectJob was constructed with, and its journal.
struct StoredJob {
  std::string job_id;
  std::string request_id;  // Empty when the job was submitted without one.
  v1::JobSpec spec;
  std::vector<v1::CommitRef> commits;
  absl::Time create_time;
  // The status the job had when it finished, report details (culprit diff, root-cause hints,
  // worker identities) included, so that recovery does not redo that I/O. Unset while running.
  bool has_final_status = false;
  v1::JobStatus final_status;
  // In sequence order, starting at 1.
  std::vector<JournalEntry> journal;
  // The result cache's lookup at submission: part of the job's arguments (BisectJob), so a
  // replay reuses exactly the same results.
  std::vector<v1::CachedResult> cached;
  // A compacted job (StoreChanges::compacted): finished, kept as its final status and its event
  // log; its journal, commit list and cached results are gone.
  bool compacted = false;
  std::vector<v1::JobEvent> events;  // Of a compacted job; FINISHED's `job` is final_status.
};

// A worker the coordinator has seen, keyed by its stable name.
struct StoredWorker {
  std::string worker_id;
  std::string name;
  v1::RunnerIdentity identity;
};

// Everything a store holds.
struct StoredState {
  std::vector<StoredJob> jobs;  // In creation order.
  std::vector<StoredWorker> workers;
  // Every journal entry, as (job id, sequence), in the order the entries were committed across
  // all jobs (within a job, in sequence order). Replaying in this order interleaves a job's
  // follow-ups as they ran, so the events they copy into its stream keep their numbers.
  std::vector<std::pair<std::string, int64_t>> order;
};

// The changes of one state change, written by one Commit.
struct StoreChanges {
  // New jobs (their `journal` and final status are ignored: entries go in `entries`).
  std::vector<StoredJob> new_jobs;
  // Journal entries (job id, entry), each with the next sequence number of its job.
  std::vector<std::pair<std::string, JournalEntry>> entries;
  // Final statuses of jobs that finished (job id, status).
  std::vector<std::pair<std::string, v1::JobStatus>> final_statuses;
  // Workers to insert or replace.
  std::vector<StoredWorker> workers;
  // Finished jobs to compact (job id, whole event log): their journal, commit list and cached
  // results are dropped and the log is kept instead. The final status must be stored already
  // or in the same Commit.
  std::vector<std::pair<std::string, std::vector<v1::JobEvent>>> compacted;
  // Jobs to delete with everything stored for them (--retain).
  std::vector<std::string> deleted;

  bool empty() const {
    return new_jobs.empty() && entries.empty() && final_statuses.empty() && workers.empty() &&
           compacted.empty() && deleted.empty();
  }
  // Appends `later`'s changes after these, as if they had been collected into one batch (Commit
  // applies them in one transaction, kind by kind, each in the order given).
  void Append(StoreChanges&& later);
  // Whether it changes any job (not only worker rows).
  bool changes_jobs() const {
    return !new_jobs.empty() || !entries.empty() || !final_statuses.empty() || !compacted.empty() ||
           !deleted.empty();
  }
};

// Where the Coordinator keeps jobs across restarts. Implementations are thread-safe.
class JobStore {
 public:
  virtual ~JobStore() = default;

  // Returns everything stored: jobs in creation order, each with its whole journal.
  virtual absl::StatusOr<StoredState> Load() = 0;

  // Applies `changes` atomically and durably: once it returns OK they survive a crash of the
  // process (and, for SqliteJobStore, of the machine); on error none of them was applied.
  // A journal entry whose (job, sequence) is already stored, or that belongs to an unknown job,
  // is an error.
  virtual absl::Status Commit(const StoreChanges& changes) = 0;

  // Whether a commit of some size would succeed now: after a failed Commit (disk full,
  // read-only), the Coordinator calls this to find out when it may write again. Writes and
  // removes a little data. The default (a store that cannot fill up) is OK.
  virtual absl::Status CheckWritable() { return absl::OkStatus(); }
};

// Keeps everything in memory: for tests, which can "restart" a Coordinator on the same object.
class MemoryJobStore : public JobStore {
 public:
  absl::StatusOr<StoredState> Load() override;
  absl::Status Commit(const StoreChanges& changes) override;

  // Number of successful Commit calls so far.
  int commits() const;

 private:
  mutable kbisect::Mutex mu_;
  StoredState state_ ABSL_GUARDED_BY(mu_);  // `order` included.
  int commits_ ABSL_GUARDED_BY(mu_) = 0;
};

// A SQLite database in WAL mode with synchronous=FULL: every Commit is one transaction, durable
// when it returns. Tables: jobs(job_id, position, request_id, spec, commits, create_time_ns,
// final_status, events), journal(job_id, seq, kind, time_ns, task_id, worker, attempt, reason,
// payload, global_seq) and workers(worker_id, name, identity); protobuf messages are stored
// serialized. Schema version 2 (version 1, without `events` and `global_seq`, is upgraded in
// place at Open; its entries replay in job order).
//
// Only one process may use a database at a time: Open takes an exclusive lock on `path` +
// ".lock" (released by the kernel when the process dies, so a killed coordinator does not block
// its successor) and fails if another process holds it.
class SqliteJobStore : public JobStore {
 public:
  // Opens (creating it and its schema if missing) the database at `path`. The directory must
  // exist. Errors name the path: FailedPrecondition when another process has it open or it was
  // written by a newer schema, DataLoss when it is corrupt or not a database, Internal or
  // PermissionDenied when it cannot be created or opened.
  static absl::StatusOr<std::unique_ptr<SqliteJobStore>> Open(const std::string& path);

  ~SqliteJobStore() override;
  SqliteJobStore(const SqliteJobStore&) = delete;
  SqliteJobStore& operator=(const SqliteJobStore&) = delete;

  absl::StatusOr<StoredState> Load() override;
  absl::Status Commit(const StoreChanges& changes) override;
  // Commits 64 KiB in a scratch table, then deletes it: room for a few journal commits.
  absl::Status CheckWritable() override;

  const std::string& path() const { return path_; }

 private:
  SqliteJobStore(std::string path, sqlite3* db, int lock_fd);

  // Where each loaded job lies in StoredState::jobs, by job id.
  using JobPlaces = std::map<std::string, size_t>;

  absl::Status Exec(const char* sql) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Load's steps, each reading one table into `state`. Errors: Error's when a statement fails,
  // DataLoss naming the database and the row that cannot be parsed or belongs to no job.
  // Reads the jobs, in their order, and where each lies into `places`.
  absl::Status LoadJobsLocked(StoredState* state, JobPlaces* places)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reads the cached results of the jobs at `places`.
  absl::Status LoadCachedResultsLocked(const JobPlaces& places, StoredState* state)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reads the journals of the jobs at `places`, each in sequence without a gap, and the replay
  // order: entries without a global sequence (schema version 1) first, job by job, then the
  // others in the order they were committed.
  absl::Status LoadJournalLocked(const JobPlaces& places, StoredState* state)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reads the workers, by id.
  absl::Status LoadWorkersLocked(StoredState* state) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Writes `changes` inside Commit's transaction, kind by kind in the steps below, each in the
  // order given; the first error ends it (Commit rolls back).
  absl::Status CommitLocked(const StoreChanges& changes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Inserts new jobs at the next positions, and their cached results.
  absl::Status InsertJobsLocked(const std::vector<StoredJob>& jobs)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Appends journal entries with the next global sequences. NotFound for an unknown job,
  // AlreadyExists for an entry that does not follow its job's last one.
  absl::Status AppendJournalLocked(const std::vector<std::pair<std::string, JournalEntry>>& entries)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Stores the final statuses of finished jobs. NotFound for an unknown job.
  absl::Status StoreFinalStatusesLocked(
      const std::vector<std::pair<std::string, v1::JobStatus>>& final_statuses)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Keeps each job's event log instead of its journal, commits and cached results.
  // FailedPrecondition for a job that is unknown or has no final status.
  absl::Status CompactJobsLocked(
      const std::vector<std::pair<std::string, std::vector<v1::JobEvent>>>& compacted)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Deletes jobs with everything stored for them.
  absl::Status DeleteJobsLocked(const std::vector<std::string>& deleted)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Inserts or replaces workers.
  absl::Status StoreWorkersLocked(const std::vector<StoredWorker>& workers)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Error(const std::string& what) const;

  const std::string path_;
  kbisect::Mutex mu_;
  sqlite3* const db_;
  const int lock_fd_;
  int64_t next_position_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t next_global_seq_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_STORE_H_
