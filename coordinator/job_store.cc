// Copyright 2026 The kbisect Authors.
#include "coordinator/job_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/rpc/enum_label.h"
#include "common/status_macros.h"
#include "common/text/chunks.h"
#include "coordinator/sqlite_statement.h"
#include "google/protobuf/unknown_field_set.h"

namespace kbisect {
namespace {

constexpr int kSchemaVersion = 2;

constexpr char kSchema[] = R"sql(
CREATE TABLE IF NOT EXISTS jobs(
  job_id TEXT PRIMARY KEY,
  position INTEGER NOT NULL,
  request_id TEXT NOT NULL,
  spec BLOB NOT NULL,
  commits BLOB NOT NULL,
  create_time_ns INTEGER NOT NULL,
  final_status BLOB,
  events BLOB);
CREATE TABLE IF NOT EXISTS journal(
  job_id TEXT NOT NULL REFERENCES jobs(job_id),
  seq INTEGER NOT NULL,
  kind TEXT NOT NULL,
  time_ns INTEGER NOT NULL,
  task_id TEXT NOT NULL,
  worker TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  reason TEXT NOT NULL,
  payload BLOB NOT NULL,
  global_seq INTEGER,
  PRIMARY KEY(job_id, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS job_cached_results(
  job_id TEXT PRIMARY KEY REFERENCES jobs(job_id),
  results BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS workers(
  worker_id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  identity BLOB NOT NULL);
)sql";

// A compacted job's event log: each event serialized, FINISHED without its `job` (that is the
// final status, stored beside it).
std::string EventsBlob(const std::vector<v1::JobEvent>& events) {
  std::string blob;
  for (const v1::JobEvent& event : events) {
    if (event.kind() == v1::JOB_EVENT_KIND_FINISHED && event.has_job()) {
      v1::JobEvent copy = event;
      copy.clear_job();
      AppendChunk(copy.SerializeAsString(), &blob);
    } else {
      AppendChunk(event.SerializeAsString(), &blob);
    }
  }
  return blob;
}

// Before decision 184 JobSpec.follow_up was a string, field 26 (now reserved). A spec stored
// then carries it as an unknown field, whose text (EnumLabel's form, "merged_branch") names the
// kind: it is read back into the enum, so a follow-up keeps its kind across the upgrade.
constexpr int kStringFollowUpField = 26;

void UpgradeFollowUp(v1::JobSpec* spec) {
  google::protobuf::UnknownFieldSet* unknown = spec->GetReflection()->MutableUnknownFields(spec);
  for (int i = unknown->field_count() - 1; i >= 0; --i) {
    const google::protobuf::UnknownField& field = unknown->field(i);
    if (field.number() != kStringFollowUpField ||
        field.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) {
      continue;
    }
    const google::protobuf::EnumDescriptor* kinds = v1::FollowUpKind_descriptor();
    for (int k = 0; k < kinds->value_count(); ++k) {
      if (EnumValueJsonName(*kinds->value(k)) == field.length_delimited()) {
        spec->set_follow_up(static_cast<v1::FollowUpKind>(kinds->value(k)->number()));
      }
    }
    unknown->DeleteSubrange(i, 1);
  }
}

bool ParseEvents(const std::string& blob, const v1::JobStatus& final_status,
                 std::vector<v1::JobEvent>* events) {
  std::vector<std::string> chunks;
  if (!SplitChunks(blob, &chunks)) return false;
  for (const std::string& chunk : chunks) {
    v1::JobEvent& event = events->emplace_back();
    if (!event.ParseFromString(chunk)) return false;
    if (event.kind() == v1::JOB_EVENT_KIND_FINISHED) *event.mutable_job() = final_status;
  }
  return true;
}

// The job of a row of `SELECT job_id, request_id, spec, commits, create_time_ns, final_status,
// events FROM jobs`, its spec and final status upgraded (UpgradeFollowUp). DataLoss, naming the
// database at `path` and the job, when a part cannot be parsed.
absl::StatusOr<StoredJob> StoredJobFromRow(const SqliteStatement& row, const std::string& path) {
  StoredJob job;
  job.job_id = row.Text(0);
  job.request_id = row.Text(1);
  std::vector<std::string> commits;
  if (!job.spec.ParseFromString(row.Text(2)) || !SplitChunks(row.Text(3), &commits)) {
    return absl::DataLossError(
        absl::StrCat("job database ", path, ": job ", job.job_id, " cannot be parsed"));
  }
  UpgradeFollowUp(&job.spec);
  for (const std::string& commit : commits) {
    if (!job.commits.emplace_back().ParseFromString(commit)) {
      return absl::DataLossError(absl::StrCat("job database ", path, ": a commit of job ",
                                              job.job_id, " cannot be parsed"));
    }
  }
  job.create_time = absl::FromUnixNanos(row.Int(4));
  if (!row.IsNull(5)) {
    job.has_final_status = job.final_status.ParseFromString(row.Text(5));
    if (!job.has_final_status) {
      return absl::DataLossError(absl::StrCat("job database ", path, ": the final status of ",
                                              job.job_id, " cannot be parsed"));
    }
    UpgradeFollowUp(job.final_status.mutable_spec());
  }
  if (!row.IsNull(6)) {
    job.compacted = true;
    if (!job.has_final_status || !ParseEvents(row.Text(6), job.final_status, &job.events)) {
      return absl::DataLossError(
          absl::StrCat("job database ", path, ": the events of ", job.job_id, " cannot be parsed"));
    }
  }
  return job;
}

// The entry of a row of `SELECT job_id, seq, kind, time_ns, task_id, worker, attempt, reason,
// payload, global_seq FROM journal` of job `job_id`, whose journal holds `stored` entries so far.
// DataLoss, naming the database at `path`, when the entry does not follow them, its kind is
// unknown or its payload cannot be parsed.
absl::StatusOr<JournalEntry> JournalEntryFromRow(const SqliteStatement& row,
                                                 const std::string& job_id, size_t stored,
                                                 const std::string& path) {
  JournalEntry entry;
  entry.sequence = row.Int(1);
  if (entry.sequence != static_cast<int64_t>(stored) + 1) {
    return absl::DataLossError(absl::StrCat("job database ", path, ": the journal of ", job_id,
                                            " misses entry ", stored + 1));
  }
  if (!JournalEntry::KindFromName(row.Text(2), &entry.kind)) {
    return absl::DataLossError(absl::StrCat("job database ", path, ": unknown entry kind '",
                                            row.Text(2), "' in the journal of ", job_id));
  }
  entry.time = absl::FromUnixNanos(row.Int(3));
  entry.task_id = row.Text(4);
  entry.worker = row.Text(5);
  entry.attempt = static_cast<int>(row.Int(6));
  entry.reason = row.Text(7);
  if (!entry.DecodePayload(row.Text(8))) {
    return absl::DataLossError(absl::StrCat("job database ", path, ": journal entry ",
                                            entry.sequence, " of ", job_id, " cannot be parsed"));
  }
  return entry;
}

}  // namespace

// --- MemoryJobStore -----------------------------------------------------------------------------

void StoreChanges::Append(StoreChanges&& later) {
  auto append = [](auto& to, auto& from) {
    to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
  };
  append(new_jobs, later.new_jobs);
  append(entries, later.entries);
  append(final_statuses, later.final_statuses);
  append(workers, later.workers);
  append(compacted, later.compacted);
  append(deleted, later.deleted);
}

absl::StatusOr<StoredState> MemoryJobStore::Load() {
  kbisect::MutexLock lock(&mu_);
  return state_;
}

absl::Status MemoryJobStore::Commit(const StoreChanges& changes) {
  kbisect::MutexLock lock(&mu_);
  StoredState next = state_;
  std::map<std::string, StoredJob*> jobs;
  for (StoredJob& job : next.jobs) jobs[job.job_id] = &job;
  for (const StoredJob& job : changes.new_jobs) {
    if (jobs.count(job.job_id) > 0) {
      return absl::AlreadyExistsError(absl::StrCat("job ", job.job_id, " is already stored"));
    }
    next.jobs.push_back(job);
    next.jobs.back().journal.clear();
    next.jobs.back().has_final_status = false;
    jobs.clear();
    for (StoredJob& stored : next.jobs) jobs[stored.job_id] = &stored;
  }
  for (const auto& [job_id, entry] : changes.entries) {
    auto it = jobs.find(job_id);
    if (it == jobs.end()) return absl::NotFoundError(absl::StrCat("no stored job ", job_id));
    if (entry.sequence != static_cast<int64_t>(it->second->journal.size()) + 1) {
      return absl::AlreadyExistsError(
          absl::StrCat("journal entry ", entry.sequence, " of ", job_id, " is out of sequence"));
    }
    it->second->journal.push_back(entry);
    next.order.emplace_back(job_id, entry.sequence);
  }
  for (const auto& [job_id, status] : changes.final_statuses) {
    auto it = jobs.find(job_id);
    if (it == jobs.end()) return absl::NotFoundError(absl::StrCat("no stored job ", job_id));
    it->second->has_final_status = true;
    it->second->final_status = status;
  }
  std::set<std::string> dropped;  // Jobs whose journal goes.
  for (const auto& [job_id, events] : changes.compacted) {
    auto it = jobs.find(job_id);
    if (it == jobs.end()) return absl::NotFoundError(absl::StrCat("no stored job ", job_id));
    if (!it->second->has_final_status) {
      return absl::FailedPreconditionError(absl::StrCat("job ", job_id, " has no final status"));
    }
    StoredJob& job = *it->second;
    job.compacted = true;
    job.events = events;
    for (v1::JobEvent& event : job.events) {
      if (event.kind() == v1::JOB_EVENT_KIND_FINISHED) *event.mutable_job() = job.final_status;
    }
    job.journal.clear();
    job.commits.clear();
    job.cached.clear();
    dropped.insert(job_id);
  }
  for (const std::string& job_id : changes.deleted) dropped.insert(job_id);
  next.jobs.erase(std::remove_if(next.jobs.begin(), next.jobs.end(),
                                 [&](const StoredJob& job) {
                                   return std::count(changes.deleted.begin(), changes.deleted.end(),
                                                     job.job_id) > 0;
                                 }),
                  next.jobs.end());
  next.order.erase(std::remove_if(next.order.begin(), next.order.end(),
                                  [&](const std::pair<std::string, int64_t>& at) {
                                    return dropped.count(at.first) > 0;
                                  }),
                   next.order.end());
  for (const StoredWorker& worker : changes.workers) {
    bool replaced = false;
    for (StoredWorker& stored : next.workers) {
      if (stored.worker_id == worker.worker_id) {
        stored = worker;
        replaced = true;
      }
    }
    if (!replaced) next.workers.push_back(worker);
  }
  state_ = std::move(next);
  ++commits_;
  return absl::OkStatus();
}

int MemoryJobStore::commits() const {
  kbisect::MutexLock lock(&mu_);
  return commits_;
}

// --- SqliteJobStore -----------------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<SqliteJobStore>> SqliteJobStore::Open(const std::string& path) {
  const std::string lock_path = path + ".lock";
  const int lock_fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd < 0) {
    const int error = errno;
    const std::string message =
        absl::StrCat("cannot open the job database ", path, " (creating ", lock_path, ": ",
                     std::strerror(error), "); check that the state directory is writable");
    return error == EACCES || error == EROFS || error == EPERM
               ? absl::PermissionDeniedError(message)
               : absl::InternalError(message);
  }
  if (flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    close(lock_fd);
    return absl::FailedPreconditionError(
        absl::StrCat("the job database ", path, " is in use by another process (", lock_path,
                     " is locked): only one kbisect-coordinator may use a state "
                     "directory"));
  }
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    const std::string message =
        absl::StrCat("cannot open the job database ", path, ": ",
                     db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    sqlite3_close(db);
    close(lock_fd);
    return SqliteStatus(rc, message);
  }
  std::unique_ptr<SqliteJobStore> store(new SqliteJobStore(path, db, lock_fd));
  kbisect::MutexLock lock(&store->mu_);
  sqlite3_busy_timeout(db, 5000);
  sqlite3_extended_result_codes(db, 1);
  {
    SqliteStatement wal(db, "PRAGMA journal_mode=WAL");
    if (!wal.ok() || !wal.Next()) return store->Error("cannot switch to WAL mode");
    if (wal.Text(0) != "wal") {
      return absl::FailedPreconditionError(
          absl::StrCat("the job database ", path, " cannot use WAL mode (journal mode ",
                       wal.Text(0), "); put the state directory on a local file system"));
    }
  }
  RETURN_IF_ERROR(store->Exec("PRAGMA synchronous=FULL"));
  {
    SqliteStatement check(db, "PRAGMA quick_check");
    if (!check.ok() || !check.Next()) return store->Error("cannot check the database");
    if (check.Text(0) != "ok") {
      return absl::DataLossError(
          absl::StrCat("the job database ", path, " is corrupt (", check.Text(0),
                       "); restore it from a backup, or move it away to start with no jobs"));
    }
  }
  int64_t version = 0;
  {
    SqliteStatement user_version(db, "PRAGMA user_version");
    if (!user_version.ok() || !user_version.Next()) return store->Error("cannot read its version");
    version = user_version.Int(0);
  }
  if (version > kSchemaVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("the job database ", path, " has schema version ", version,
                     ", newer than this kbisect-coordinator understands (", kSchemaVersion,
                     "); run a newer kbisect-coordinator"));
  }
  RETURN_IF_ERROR(store->Exec("BEGIN IMMEDIATE"));
  absl::Status created = absl::OkStatus();
  if (version == 1) {
    // Version 2 added compacted jobs' event logs and the journal's order across jobs.
    created = store->Exec(
        "ALTER TABLE jobs ADD COLUMN events BLOB; "
        "ALTER TABLE journal ADD COLUMN global_seq INTEGER");
  }
  if (created.ok()) created = store->Exec(kSchema);
  if (created.ok()) created = store->Exec("PRAGMA user_version=2");
  if (!created.ok()) {
    (void)store->Exec("ROLLBACK");
    return created;
  }
  RETURN_IF_ERROR(store->Exec("COMMIT"));
  {
    SqliteStatement position(db, "SELECT COALESCE(MAX(position), 0) FROM jobs");
    if (!position.ok() || !position.Next()) return store->Error("cannot read the jobs");
    store->next_position_ = position.Int(0) + 1;
  }
  {
    SqliteStatement global(db, "SELECT COALESCE(MAX(global_seq), 0) FROM journal");
    if (!global.ok() || !global.Next()) return store->Error("cannot read the journal");
    store->next_global_seq_ = global.Int(0) + 1;
  }
  return store;
}

SqliteJobStore::SqliteJobStore(std::string path, sqlite3* db, int lock_fd)
    : path_(std::move(path)), db_(db), lock_fd_(lock_fd) {}

SqliteJobStore::~SqliteJobStore() {
  sqlite3_close(db_);
  close(lock_fd_);  // Releases the lock.
}

absl::Status SqliteJobStore::Error(const std::string& what) const {
  return SqliteStatus(sqlite3_extended_errcode(db_),
                      absl::StrCat("job database ", path_, ": ", what, ": ", sqlite3_errmsg(db_)));
}

absl::Status SqliteJobStore::Exec(const char* sql) {
  char* message = nullptr;
  const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &message);
  if (rc == SQLITE_OK) return absl::OkStatus();
  const std::string text = message != nullptr ? message : sqlite3_errstr(rc);
  sqlite3_free(message);
  return SqliteStatus(rc, absl::StrCat("job database ", path_, ": ", text));
}

absl::StatusOr<StoredState> SqliteJobStore::Load() {
  kbisect::MutexLock lock(&mu_);
  StoredState state;
  JobPlaces places;
  RETURN_IF_ERROR(LoadJobsLocked(&state, &places));
  RETURN_IF_ERROR(LoadCachedResultsLocked(places, &state));
  RETURN_IF_ERROR(LoadJournalLocked(places, &state));
  RETURN_IF_ERROR(LoadWorkersLocked(&state));
  return state;
}

absl::Status SqliteJobStore::LoadJobsLocked(StoredState* state, JobPlaces* places) {
  SqliteStatement jobs(db_,
                       "SELECT job_id, request_id, spec, commits, create_time_ns, final_status, "
                       "events FROM jobs ORDER BY position");
  if (!jobs.ok()) return Error("cannot read the jobs");
  while (jobs.Next()) {
    ASSIGN_OR_RETURN(StoredJob job, StoredJobFromRow(jobs, path_));
    (*places)[job.job_id] = state->jobs.size();
    state->jobs.push_back(std::move(job));
  }
  if (!jobs.done()) return Error("cannot read the jobs");
  return absl::OkStatus();
}

absl::Status SqliteJobStore::LoadCachedResultsLocked(const JobPlaces& places, StoredState* state) {
  SqliteStatement cached(db_, "SELECT job_id, results FROM job_cached_results");
  if (!cached.ok()) return Error("cannot read the jobs' cached results");
  while (cached.Next()) {
    auto it = places.find(cached.Text(0));
    std::vector<std::string> chunks;
    if (it == places.end() || !SplitChunks(cached.Text(1), &chunks)) {
      return absl::DataLossError(absl::StrCat("job database ", path_, ": the cached results of ",
                                              cached.Text(0), " cannot be parsed"));
    }
    for (const std::string& chunk : chunks) {
      if (!state->jobs[it->second].cached.emplace_back().ParseFromString(chunk)) {
        return absl::DataLossError(absl::StrCat("job database ", path_, ": a cached result of ",
                                                cached.Text(0), " cannot be parsed"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status SqliteJobStore::LoadJournalLocked(const JobPlaces& places, StoredState* state) {
  SqliteStatement journal(db_,
                          "SELECT job_id, seq, kind, time_ns, task_id, worker, attempt, reason, "
                          "payload, global_seq FROM journal ORDER BY job_id, seq");
  if (!journal.ok()) return Error("cannot read the journal");
  // Replay order: entries of version 1 (no global_seq) first, job by job in creation order;
  // then the others in the order they were committed.
  std::vector<std::tuple<int, int64_t, int64_t, std::string>> order;
  while (journal.Next()) {
    const std::string job_id = journal.Text(0);
    auto it = places.find(job_id);
    if (it == places.end()) {
      return absl::DataLossError(
          absl::StrCat("job database ", path_, ": journal entries of unknown job ", job_id));
    }
    StoredJob& job = state->jobs[it->second];
    ASSIGN_OR_RETURN(JournalEntry entry,
                     JournalEntryFromRow(journal, job_id, job.journal.size(), path_));
    if (journal.IsNull(9)) {
      order.emplace_back(0, static_cast<int64_t>(it->second), entry.sequence, job_id);
    } else {
      order.emplace_back(1, journal.Int(9), entry.sequence, job_id);
    }
    job.journal.push_back(std::move(entry));
  }
  if (!journal.done()) return Error("cannot read the journal");
  std::sort(order.begin(), order.end());
  for (auto& [versioned, at, sequence, job_id] : order) {
    state->order.emplace_back(std::move(job_id), sequence);
  }
  return absl::OkStatus();
}

absl::Status SqliteJobStore::LoadWorkersLocked(StoredState* state) {
  SqliteStatement workers(db_, "SELECT worker_id, name, identity FROM workers ORDER BY worker_id");
  if (!workers.ok()) return Error("cannot read the workers");
  while (workers.Next()) {
    StoredWorker worker;
    worker.worker_id = workers.Text(0);
    worker.name = workers.Text(1);
    if (!worker.identity.ParseFromString(workers.Text(2))) {
      return absl::DataLossError(
          absl::StrCat("job database ", path_, ": worker ", worker.worker_id, " cannot be parsed"));
    }
    state->workers.push_back(std::move(worker));
  }
  if (!workers.done()) return Error("cannot read the workers");
  return absl::OkStatus();
}

absl::Status SqliteJobStore::Commit(const StoreChanges& changes) {
  if (changes.empty()) return absl::OkStatus();
  kbisect::MutexLock lock(&mu_);
  const int64_t position = next_position_;
  const int64_t global_seq = next_global_seq_;
  RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
  absl::Status status = CommitLocked(changes);
  if (status.ok()) status = Exec("COMMIT");
  if (!status.ok()) {
    (void)Exec("ROLLBACK");
    next_position_ = position;
    next_global_seq_ = global_seq;
  }
  return status;
}

absl::Status SqliteJobStore::CheckWritable() {
  kbisect::MutexLock lock(&mu_);
  // Two transactions: the first really writes the 64 KiB (a row freed in the same transaction
  // might never reach the disk).
  for (const char* sql : {"CREATE TABLE IF NOT EXISTS write_check(data BLOB); "
                          "INSERT INTO write_check VALUES(zeroblob(65536))",
                          "DELETE FROM write_check"}) {
    RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
    absl::Status status = Exec(sql);
    if (status.ok()) status = Exec("COMMIT");
    if (!status.ok()) {
      (void)Exec("ROLLBACK");
      return status;
    }
  }
  return absl::OkStatus();
}

absl::Status SqliteJobStore::CommitLocked(const StoreChanges& changes) {
  RETURN_IF_ERROR(InsertJobsLocked(changes.new_jobs));
  RETURN_IF_ERROR(AppendJournalLocked(changes.entries));
  RETURN_IF_ERROR(StoreFinalStatusesLocked(changes.final_statuses));
  RETURN_IF_ERROR(CompactJobsLocked(changes.compacted));
  RETURN_IF_ERROR(DeleteJobsLocked(changes.deleted));
  return StoreWorkersLocked(changes.workers);
}

absl::Status SqliteJobStore::InsertJobsLocked(const std::vector<StoredJob>& jobs) {
  if (jobs.empty()) return absl::OkStatus();
  SqliteStatement insert(db_,
                         "INSERT INTO jobs(job_id, position, request_id, spec, commits, "
                         "create_time_ns, final_status) VALUES(?, ?, ?, ?, ?, ?, NULL)");
  if (!insert.ok()) return Error("cannot prepare a job insert");
  for (const StoredJob& job : jobs) {
    std::string commits;
    for (const v1::CommitRef& commit : job.commits) {
      AppendChunk(commit.SerializeAsString(), &commits);
    }
    insert.Bind(1, job.job_id);
    insert.Bind(2, next_position_++);
    insert.Bind(3, job.request_id);
    insert.BindBlob(4, job.spec.SerializeAsString());
    insert.BindBlob(5, commits);
    insert.Bind(6, absl::ToUnixNanos(job.create_time));
    if (!insert.Run()) return Error(absl::StrCat("cannot store job ", job.job_id));
  }
  SqliteStatement cached(db_, "INSERT INTO job_cached_results(job_id, results) VALUES(?, ?)");
  if (!cached.ok()) return Error("cannot prepare a cached-results insert");
  for (const StoredJob& job : jobs) {
    if (job.cached.empty()) continue;
    std::string results;
    for (const v1::CachedResult& result : job.cached) {
      AppendChunk(result.SerializeAsString(), &results);
    }
    cached.Bind(1, job.job_id);
    cached.BindBlob(2, results);
    if (!cached.Run()) return Error(absl::StrCat("cannot store job ", job.job_id));
  }
  return absl::OkStatus();
}

absl::Status SqliteJobStore::AppendJournalLocked(
    const std::vector<std::pair<std::string, JournalEntry>>& entries) {
  if (entries.empty()) return absl::OkStatus();
  SqliteStatement insert(
      db_,
      "INSERT INTO journal(job_id, seq, kind, time_ns, task_id, worker, attempt, "
      "reason, payload, global_seq) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  SqliteStatement previous(db_, "SELECT COALESCE(MAX(seq), 0) FROM journal WHERE job_id = ?");
  SqliteStatement known(db_, "SELECT 1 FROM jobs WHERE job_id = ?");
  if (!insert.ok() || !previous.ok() || !known.ok()) {
    return Error("cannot prepare a journal insert");
  }
  std::map<std::string, int64_t> last;  // Job id -> its last stored sequence.
  for (const auto& [job_id, entry] : entries) {
    auto it = last.find(job_id);
    if (it == last.end()) {
      known.Bind(1, job_id);
      const bool exists = known.Next();
      known.Reset();
      if (!exists) {
        return absl::NotFoundError(
            absl::StrCat("job database ", path_, ": journal entry for unknown job ", job_id));
      }
      previous.Bind(1, job_id);
      if (!previous.Next()) return Error("cannot read the journal");
      it = last.emplace(job_id, previous.Int(0)).first;
      previous.Reset();
    }
    if (entry.sequence != it->second + 1) {
      return absl::AlreadyExistsError(absl::StrCat("job database ", path_, ": journal entry ",
                                                   entry.sequence, " of ", job_id,
                                                   " does not follow entry ", it->second));
    }
    it->second = entry.sequence;
    insert.Bind(1, job_id);
    insert.Bind(2, entry.sequence);
    insert.Bind(3, std::string(JournalEntry::KindName(entry.kind)));
    insert.Bind(4, absl::ToUnixNanos(entry.time));
    insert.Bind(5, entry.task_id);
    insert.Bind(6, entry.worker);
    insert.Bind(7, static_cast<int64_t>(entry.attempt));
    insert.Bind(8, entry.reason);
    insert.BindBlob(9, entry.EncodePayload());
    insert.Bind(10, next_global_seq_++);
    if (!insert.Run()) {
      return Error(absl::StrCat("cannot append entry ", entry.sequence, " of ", job_id));
    }
  }
  return absl::OkStatus();
}

absl::Status SqliteJobStore::StoreFinalStatusesLocked(
    const std::vector<std::pair<std::string, v1::JobStatus>>& final_statuses) {
  if (final_statuses.empty()) return absl::OkStatus();
  SqliteStatement update(db_, "UPDATE jobs SET final_status = ? WHERE job_id = ?");
  if (!update.ok()) return Error("cannot prepare a status update");
  for (const auto& [job_id, status] : final_statuses) {
    update.BindBlob(1, status.SerializeAsString());
    update.Bind(2, job_id);
    if (!update.Run()) return Error(absl::StrCat("cannot store the status of ", job_id));
    if (sqlite3_changes(db_) != 1) {
      return absl::NotFoundError(
          absl::StrCat("job database ", path_, ": final status for unknown job ", job_id));
    }
  }
  return absl::OkStatus();
}

absl::Status SqliteJobStore::CompactJobsLocked(
    const std::vector<std::pair<std::string, std::vector<v1::JobEvent>>>& compacted) {
  for (const auto& [job_id, events] : compacted) {
    SqliteStatement compact(
        db_,
        "UPDATE jobs SET events = ?, commits = x'' WHERE job_id = ? AND final_status IS NOT NULL");
    SqliteStatement journal(db_, "DELETE FROM journal WHERE job_id = ?");
    SqliteStatement cached(db_, "DELETE FROM job_cached_results WHERE job_id = ?");
    if (!compact.ok() || !journal.ok() || !cached.ok()) return Error("cannot prepare a compaction");
    compact.BindBlob(1, EventsBlob(events));
    compact.Bind(2, job_id);
    if (!compact.Run()) return Error(absl::StrCat("cannot compact job ", job_id));
    if (sqlite3_changes(db_) != 1) {
      return absl::FailedPreconditionError(absl::StrCat("job database ", path_, ": job ", job_id,
                                                        " is unknown or has no final status"));
    }
    journal.Bind(1, job_id);
    cached.Bind(1, job_id);
    if (!journal.Run() || !cached.Run()) {
      return Error(absl::StrCat("cannot compact job ", job_id));
    }
  }
  return absl::OkStatus();
}

absl::Status SqliteJobStore::DeleteJobsLocked(const std::vector<std::string>& deleted) {
  for (const std::string& job_id : deleted) {
    for (const char* sql :
         {"DELETE FROM journal WHERE job_id = ?", "DELETE FROM job_cached_results WHERE job_id = ?",
          "DELETE FROM jobs WHERE job_id = ?"}) {
      SqliteStatement remove(db_, sql);
      if (!remove.ok()) return Error("cannot prepare a deletion");
      remove.Bind(1, job_id);
      if (!remove.Run()) return Error(absl::StrCat("cannot delete job ", job_id));
    }
  }
  return absl::OkStatus();
}

absl::Status SqliteJobStore::StoreWorkersLocked(const std::vector<StoredWorker>& workers) {
  if (workers.empty()) return absl::OkStatus();
  SqliteStatement upsert(
      db_, "INSERT OR REPLACE INTO workers(worker_id, name, identity) VALUES(?, ?, ?)");
  if (!upsert.ok()) return Error("cannot prepare a worker update");
  for (const StoredWorker& worker : workers) {
    upsert.Bind(1, worker.worker_id);
    upsert.Bind(2, worker.name);
    upsert.BindBlob(3, worker.identity.SerializeAsString());
    if (!upsert.Run()) return Error(absl::StrCat("cannot store worker ", worker.worker_id));
  }
  return absl::OkStatus();
}

}  // namespace kbisect
