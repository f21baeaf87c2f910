// Copyright 2026 The kbisect Authors.
#include "coordinator/result_cache.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <system_error>
#include <tuple>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/rpc/proto_time.h"
#include "common/spec/action_digest.h"
#include "common/spec/job_spec.h"
#include "common/status_macros.h"
#include "common/sync/mutex.h"
#include "coordinator/sqlite_statement.h"

namespace kbisect {
namespace {

// PRAGMA application_id of a result cache ("kbRC"), so another SQLite file is never taken for one.
constexpr int64_t kApplicationId = 0x6b625243;
constexpr int64_t kSchemaVersion = 1;
constexpr int kBusyTimeoutMs = 5000;

constexpr char kSchema[] = R"sql(
CREATE TABLE IF NOT EXISTS results(
  spec_digest TEXT NOT NULL,
  tree_sha TEXT NOT NULL,
  hardware_class TEXT NOT NULL,
  worker TEXT NOT NULL,
  measure_time_ns INTEGER NOT NULL,
  result BLOB NOT NULL,
  PRIMARY KEY(spec_digest, tree_sha, hardware_class, worker));
CREATE INDEX IF NOT EXISTS results_by_time ON results(measure_time_ns);
)sql";

constexpr char kWhatToDo[] =
    "delete it (with its -wal and -shm files) or move it away to start an empty cache: kbisect "
    "only measures again what it held";

absl::Status ValidateKey(const std::string& spec_digest, const v1::CachedResult& result) {
  if (spec_digest.empty()) return absl::InvalidArgumentError("a cached result needs a spec digest");
  if (result.tree_sha().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the cached result of commit ", result.commit_sha(), " has no tree id"));
  }
  if (result.worker().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the cached result of commit ", result.commit_sha(), " has no worker"));
  }
  return absl::OkStatus();
}

int64_t MeasureNanos(const v1::CachedResult& result) {
  return absl::ToUnixNanos(FromProto(result.measure_time()));
}

// Orders results as Lookup returns them.
bool LookupOrder(const v1::CachedResult& a, const v1::CachedResult& b) {
  return std::tie(a.tree_sha(), a.worker(), a.hardware_class()) <
         std::tie(b.tree_sha(), b.worker(), b.hardware_class());
}

// --- Memory -------------------------------------------------------------------------------------

class MemoryResultCache : public ResultCache {
 public:
  absl::Status Put(const std::string& spec_digest, const v1::CachedResult& result) override {
    RETURN_IF_ERROR(ValidateKey(spec_digest, result));
    kbisect::MutexLock lock(&mu_);
    const Key key{spec_digest, result.tree_sha(), result.hardware_class(), result.worker()};
    auto it = results_.find(key);
    if (it == results_.end()) {
      results_.emplace(key, result);
    } else if (MeasureNanos(result) >= MeasureNanos(it->second)) {
      it->second = result;
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<v1::CachedResult>> Lookup(const std::string& spec_digest,
                                                       const std::vector<std::string>& tree_shas,
                                                       absl::Time not_before) override {
    const std::set<std::string> trees(tree_shas.begin(), tree_shas.end());
    const int64_t since = absl::ToUnixNanos(not_before);
    std::vector<v1::CachedResult> found;
    kbisect::MutexLock lock(&mu_);
    for (const auto& [key, result] : results_) {
      if (std::get<0>(key) != spec_digest || trees.count(std::get<1>(key)) == 0) continue;
      if (MeasureNanos(result) < since) continue;
      found.push_back(result);
    }
    std::sort(found.begin(), found.end(), LookupOrder);
    return found;
  }

  absl::StatusOr<Stats> GetStats() override {
    kbisect::MutexLock lock(&mu_);
    Stats stats;
    std::set<std::string> specs, workers, trees;
    for (const auto& [key, result] : results_) {
      ++stats.results;
      specs.insert(std::get<0>(key));
      trees.insert(std::get<1>(key));
      workers.insert(std::get<3>(key));
      const absl::Time measured = FromProto(result.measure_time());
      if (stats.results == 1 || measured < stats.oldest) stats.oldest = measured;
      if (stats.results == 1 || measured > stats.newest) stats.newest = measured;
      stats.bytes += static_cast<int64_t>(result.ByteSizeLong());
    }
    stats.specs = static_cast<int64_t>(specs.size());
    stats.workers = static_cast<int64_t>(workers.size());
    stats.trees = static_cast<int64_t>(trees.size());
    return stats;
  }

  absl::StatusOr<int64_t> Prune(absl::Time older_than) override {
    const int64_t before = absl::ToUnixNanos(older_than);
    kbisect::MutexLock lock(&mu_);
    int64_t removed = 0;
    for (auto it = results_.begin(); it != results_.end();) {
      if (MeasureNanos(it->second) < before) {
        it = results_.erase(it);
        ++removed;
      } else {
        ++it;
      }
    }
    return removed;
  }

 private:
  // (spec digest, tree id, hardware class, worker).
  using Key = std::tuple<std::string, std::string, std::string, std::string>;

  kbisect::Mutex mu_;
  std::map<Key, v1::CachedResult> results_ ABSL_GUARDED_BY(mu_);
};

// --- SQLite -------------------------------------------------------------------------------------

int64_t FileSize(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

class SqliteResultCache : public ResultCache {
 public:
  // Takes ownership of `db`.
  SqliteResultCache(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  ~SqliteResultCache() override { sqlite3_close(db_); }
  SqliteResultCache(const SqliteResultCache&) = delete;
  SqliteResultCache& operator=(const SqliteResultCache&) = delete;

  // Sets the connection up and creates the schema if the file has none; the errors of
  // OpenSqliteResultCache.
  absl::Status Init() {
    kbisect::MutexLock lock(&mu_);
    sqlite3_busy_timeout(db_, kBusyTimeoutMs);
    sqlite3_extended_result_codes(db_, 1);
    // Before any table exists, so that Prune can give pages back (a no-op on an existing file).
    RETURN_IF_ERROR(OpenError(Exec("PRAGMA auto_vacuum=INCREMENTAL")));
    RETURN_IF_ERROR(UseWriteAheadLogLocked());
    RETURN_IF_ERROR(OpenError(Exec("PRAGMA synchronous=NORMAL")));
    {
      SqliteStatement check(db_, "PRAGMA quick_check");
      if (!check.ok() || !check.Next()) return OpenError(Error("cannot check the file"));
      if (check.Text(0) != "ok") {
        return absl::DataLossError(absl::StrCat("the result cache ", path_, " is corrupt (",
                                                check.Text(0), "); ", kWhatToDo));
      }
    }
    RETURN_IF_ERROR(OpenError(Exec("BEGIN IMMEDIATE")));
    absl::Status status = CreateSchemaLocked();
    if (status.ok()) status = OpenError(Exec("COMMIT"));
    if (!status.ok()) (void)Exec("ROLLBACK");
    return status;
  }

  absl::Status Put(const std::string& spec_digest, const v1::CachedResult& result) override {
    RETURN_IF_ERROR(ValidateKey(spec_digest, result));
    kbisect::MutexLock lock(&mu_);
    SqliteStatement upsert(db_,
                           "INSERT INTO results(spec_digest, tree_sha, hardware_class, worker, "
                           "measure_time_ns, result) VALUES(?, ?, ?, ?, ?, ?) "
                           "ON CONFLICT(spec_digest, tree_sha, hardware_class, worker) DO UPDATE "
                           "SET measure_time_ns = excluded.measure_time_ns, "
                           "result = excluded.result "
                           "WHERE excluded.measure_time_ns >= results.measure_time_ns");
    if (!upsert.ok()) return Error("cannot prepare a result insert");
    upsert.Bind(1, spec_digest);
    upsert.Bind(2, result.tree_sha());
    upsert.Bind(3, result.hardware_class());
    upsert.Bind(4, result.worker());
    upsert.Bind(5, MeasureNanos(result));
    upsert.BindBlob(6, result.SerializeAsString());
    if (!upsert.Run()) {
      return Error(absl::StrCat("cannot store the result of tree ", result.tree_sha()));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<v1::CachedResult>> Lookup(const std::string& spec_digest,
                                                       const std::vector<std::string>& tree_shas,
                                                       absl::Time not_before) override {
    const std::set<std::string> trees(tree_shas.begin(), tree_shas.end());
    std::vector<v1::CachedResult> found;
    if (trees.empty()) return found;
    kbisect::MutexLock lock(&mu_);
    // One read transaction: every tree is read from the same snapshot.
    RETURN_IF_ERROR(Exec("BEGIN"));
    absl::Status status = LookupLocked(spec_digest, trees, not_before, &found);
    (void)Exec(status.ok() ? "COMMIT" : "ROLLBACK");
    if (!status.ok()) return status;
    return found;
  }

  absl::StatusOr<Stats> GetStats() override {
    kbisect::MutexLock lock(&mu_);
    SqliteStatement query(db_,
                          "SELECT COUNT(*), COUNT(DISTINCT spec_digest), COUNT(DISTINCT worker), "
                          "COUNT(DISTINCT tree_sha), MIN(measure_time_ns), MAX(measure_time_ns) "
                          "FROM results");
    if (!query.ok() || !query.Next()) return Error("cannot count the results");
    Stats stats;
    stats.results = query.Int(0);
    stats.specs = query.Int(1);
    stats.workers = query.Int(2);
    stats.trees = query.Int(3);
    if (!query.IsNull(4)) stats.oldest = absl::FromUnixNanos(query.Int(4));
    if (!query.IsNull(5)) stats.newest = absl::FromUnixNanos(query.Int(5));
    stats.bytes = FileSize(path_) + FileSize(path_ + "-wal");
    return stats;
  }

  absl::StatusOr<int64_t> Prune(absl::Time older_than) override {
    kbisect::MutexLock lock(&mu_);
    SqliteStatement remove(db_, "DELETE FROM results WHERE measure_time_ns < ?");
    if (!remove.ok()) return Error("cannot prepare the prune");
    remove.Bind(1, absl::ToUnixNanos(older_than));
    if (!remove.Run()) return Error("cannot remove old results");
    const int64_t removed = sqlite3_changes(db_);
    if (removed > 0) {
      // Gives the freed pages back and empties the write-ahead log, so the file shrinks. Either
      // may be refused while another process reads; the pages are then reused by later results.
      (void)Exec("PRAGMA incremental_vacuum");
      (void)Exec("PRAGMA wal_checkpoint(TRUNCATE)");
    }
    return removed;
  }

 private:
  absl::Status CreateSchemaLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    int64_t application_id = 0;
    int64_t version = 0;
    int64_t objects = 0;
    {
      SqliteStatement id(db_, "PRAGMA application_id");
      SqliteStatement user_version(db_, "PRAGMA user_version");
      SqliteStatement schema(db_, "SELECT COUNT(*) FROM sqlite_master");
      if (!id.ok() || !id.Next() || !user_version.ok() || !user_version.Next() || !schema.ok() ||
          !schema.Next()) {
        return OpenError(Error("cannot read its schema"));
      }
      application_id = id.Int(0);
      version = user_version.Int(0);
      objects = schema.Int(0);
    }
    if (application_id != kApplicationId && (application_id != 0 || objects > 0)) {
      return absl::FailedPreconditionError(
          absl::StrCat("the file ", path_,
                       " is a SQLite database but not a kbisect result cache; give the result "
                       "cache a file of its own (or move this one away)"));
    }
    if (version > kSchemaVersion) {
      return absl::FailedPreconditionError(
          absl::StrCat("the result cache ", path_, " has schema version ", version,
                       ", newer than this kbisect understands (", kSchemaVersion,
                       "); run a newer kbisect, or give this one another --cache-dir"));
    }
    RETURN_IF_ERROR(OpenError(Exec(kSchema)));
    RETURN_IF_ERROR(
        OpenError(Exec(absl::StrCat("PRAGMA application_id=", kApplicationId).c_str())));
    return OpenError(Exec(absl::StrCat("PRAGMA user_version=", kSchemaVersion).c_str()));
  }

  // Switches the file to the write-ahead log, which lets readers go on while a writer writes; a
  // file system without it (some network file systems) keeps the rollback journal, which is
  // slower but as safe. The switch needs the file to itself, and SQLite answers "locked" at once
  // rather than asking the busy handler: while another process opens the same new file (two
  // coordinators or `kbisect run`s sharing a --cache-dir, started together), it is tried again
  // every 10 ms for up to the busy timeout. Once one process has switched, the mode is the
  // file's, and the others find it in force.
  absl::Status UseWriteAheadLogLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    constexpr int kRetryMs = 10;
    for (int tries = kBusyTimeoutMs / kRetryMs;; --tries) {
      {
        SqliteStatement wal(db_, "PRAGMA journal_mode=WAL");
        if (wal.ok() && wal.Next()) return absl::OkStatus();
      }
      const int code = sqlite3_extended_errcode(db_) & 0xff;
      if ((code != SQLITE_BUSY && code != SQLITE_LOCKED) || tries <= 0) {
        return OpenError(Error("cannot choose the journal mode"));
      }
      absl::SleepFor(absl::Milliseconds(kRetryMs));
    }
  }

  absl::Status LookupLocked(const std::string& spec_digest, const std::set<std::string>& trees,
                            absl::Time not_before, std::vector<v1::CachedResult>* found)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    SqliteStatement query(db_,
                          "SELECT result FROM results WHERE spec_digest = ? AND tree_sha = ? AND "
                          "measure_time_ns >= ? ORDER BY worker, hardware_class");
    if (!query.ok()) return Error("cannot prepare a lookup");
    for (const std::string& tree : trees) {
      query.Bind(1, spec_digest);
      query.Bind(2, tree);
      query.Bind(3, absl::ToUnixNanos(not_before));
      while (query.Next()) {
        if (!found->emplace_back().ParseFromString(query.Text(0))) {
          return absl::DataLossError(absl::StrCat("the result cache ", path_,
                                                  " holds a result of tree ", tree,
                                                  " that cannot be parsed; ", kWhatToDo));
        }
      }
      if (!query.done()) return Error(absl::StrCat("cannot read the results of tree ", tree));
      query.Reset();
    }
    return absl::OkStatus();
  }

  // Turns a corrupt-file error met while opening into one that says what to do.
  absl::Status OpenError(absl::Status status) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (status.code() != absl::StatusCode::kDataLoss) return status;
    return absl::DataLossError(absl::StrCat("the result cache ", path_,
                                            " is corrupt or not a SQLite database (",
                                            sqlite3_errmsg(db_), "); ", kWhatToDo));
  }

  absl::Status Error(const std::string& what) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return SqliteStatus(
        sqlite3_extended_errcode(db_),
        absl::StrCat("result cache ", path_, ": ", what, ": ", sqlite3_errmsg(db_)));
  }

  absl::Status Exec(const char* sql) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    char* message = nullptr;
    const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &message);
    if (rc == SQLITE_OK) return absl::OkStatus();
    const std::string text = message != nullptr ? message : sqlite3_errstr(rc);
    sqlite3_free(message);
    return SqliteStatus(rc, absl::StrCat("result cache ", path_, ": ", text));
  }

  const std::string path_;
  kbisect::Mutex mu_;
  sqlite3* const db_ ABSL_PT_GUARDED_BY(mu_);
};

}  // namespace

absl::StatusOr<std::unique_ptr<ResultCache>> OpenSqliteResultCache(const std::string& path) {
  const std::filesystem::path directory = std::filesystem::path(path).parent_path();
  if (!directory.empty()) {
    std::error_code error;
    std::filesystem::create_directories(directory, error);
    if (error) {
      const std::string message =
          absl::StrCat("cannot create the directory of the result cache ", path, ": ",
                       error.message(), "; choose a writable --cache-dir");
      return error == std::errc::permission_denied || error == std::errc::read_only_file_system
                 ? absl::PermissionDeniedError(message)
                 : absl::InternalError(message);
    }
  }
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    const std::string message =
        absl::StrCat("cannot open the result cache ", path, ": ",
                     db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc),
                     "; check that it is a writable file, or choose another --cache-dir");
    sqlite3_close(db);
    return SqliteStatus(rc, message);
  }
  auto cache = std::make_unique<SqliteResultCache>(path, db);
  RETURN_IF_ERROR(cache->Init());
  return cache;
}

std::unique_ptr<ResultCache> NewMemoryResultCache() {
  return std::make_unique<MemoryResultCache>();
}

std::string DefaultResultCachePath(const std::string& cache_dir) {
  std::string dir = cache_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (dir == "/") return "/results.sqlite";
  return absl::StrCat(dir, "/results.sqlite");
}

std::vector<v1::CachedResult> CachedResultsOfRange(ResultCache& cache, const v1::JobSpec& spec,
                                                   const std::vector<v1::CommitRef>& commits,
                                                   absl::Time now) {
  if (spec.no_cache()) return {};
  std::vector<std::string> trees;
  for (const v1::CommitRef& commit : commits) {
    if (!commit.tree_sha().empty()) trees.push_back(commit.tree_sha());
  }
  const absl::Duration max_age =
      spec.has_cache_max_age() ? FromProto(spec.cache_max_age()) : kDefaultCacheMaxAge;
  absl::StatusOr<std::vector<v1::CachedResult>> found =
      cache.Lookup(SpecDigest(spec), trees, now - max_age);
  if (!found.ok()) return {};  // A cache that cannot be read only costs the reuse.
  // The job is keyed by commit sha; a tree shared by several commits of the range (a revert)
  // stands for each of them.
  std::map<std::string, std::vector<std::string>> shas_of_tree;
  for (const v1::CommitRef& commit : commits) {
    shas_of_tree[commit.tree_sha()].push_back(commit.sha());
  }
  std::vector<v1::CachedResult> cached;
  for (const v1::CachedResult& result : *found) {
    for (const std::string& sha : shas_of_tree[result.tree_sha()]) {
      v1::CachedResult copy = result;
      copy.set_commit_sha(sha);
      cached.push_back(std::move(copy));
    }
  }
  return cached;
}

}  // namespace kbisect
