// Copyright 2026 The kbisect Authors.
//
// The result cache: samples measured by earlier jobs, kept so that a later job whose build,
// benchmark and metric are the same (common/spec/action_digest.h SpecDigest) can reuse them for
// a commit whose tree it has already measured on a worker of the same hardware class, instead of
// checking it out, building it and running it again.
//
// A result is stored under (spec digest, tree id, hardware class, worker): one measured task of
// one commit on one worker, the newest one winning. The cache only ever saves work: losing an
// entry (or the whole file) costs a re-measurement, never a wrong verdict, so a cache that
// cannot be opened or read is logged and the bisect goes on without it.
//
//   absl::StatusOr<std::unique_ptr<ResultCache>> cache =
//       OpenSqliteResultCache(DefaultResultCachePath(cache_dir));
//   if (!cache.ok()) {
//     std::cerr << "kbisect: " << cache.status().message() << "; going on without it\n";
//   } else {
//     const std::string digest = SpecDigest(spec);
//     absl::StatusOr<std::vector<v1::CachedResult>> hits =
//         (*cache)->Lookup(digest, tree_shas, absl::Now() - absl::Hours(24 * 30));
//     ...
//     absl::Status put = (*cache)->Put(digest, measured);
//   }
#ifndef KBISECT_COORDINATOR_RESULT_CACHE_H_
#define KBISECT_COORDINATOR_RESULT_CACHE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// Where measured results are kept across jobs. Implementations are thread-safe. Every method may
// fail (DataLoss for a file that became corrupt, FailedPrecondition when another process kept
// it locked past the busy timeout, ...); callers treat a failure as "nothing cached" and go on.
class ResultCache {
 public:
  virtual ~ResultCache() = default;

  // Records `result` under (spec_digest, result.tree_sha(), result.hardware_class(),
  // result.worker()), replacing an older result of the same key (the newest measurement of a
  // commit on a worker wins): a result whose measure_time is before the stored one's is ignored
  // (and OK is returned), one at the same time or later replaces it. InvalidArgument when
  // spec_digest, result.tree_sha() or result.worker() is empty.
  virtual absl::Status Put(const std::string& spec_digest, const v1::CachedResult& result) = 0;

  // Every result recorded for `spec_digest` at any of `tree_shas`, measured at or after
  // `not_before`, ordered by (tree_sha, worker) (then by hardware_class, for a worker that was
  // measured under two classes). Every hardware class is returned: the caller picks the ones its
  // workers can reuse. Duplicates in `tree_shas` are ignored; an empty list finds nothing.
  virtual absl::StatusOr<std::vector<v1::CachedResult>> Lookup(
      const std::string& spec_digest, const std::vector<std::string>& tree_shas,
      absl::Time not_before) = 0;

  // What the cache holds.
  struct Stats {
    // Stored results, and how many distinct spec digests, workers and tree ids they have.
    int64_t results = 0;
    int64_t specs = 0;
    int64_t workers = 0;
    int64_t trees = 0;
    // The measure times of the oldest and the newest result (InfinitePast when empty).
    absl::Time oldest = absl::InfinitePast();
    absl::Time newest = absl::InfinitePast();
    // The space the cache takes: the database file and its write-ahead log on disk for SQLite,
    // the serialized results for the memory cache.
    int64_t bytes = 0;
  };
  virtual absl::StatusOr<Stats> GetStats() = 0;

  // Removes results measured before `older_than`; returns how many were removed. The SQLite
  // cache gives the freed pages back to the file system.
  virtual absl::StatusOr<int64_t> Prune(absl::Time older_than) = 0;
};

// Opens the result cache in the SQLite file at `path`, creating the file (and its directory)
// with its schema if missing. The file is in WAL mode with synchronous=NORMAL: a crash may lose
// the last results written, which only costs a re-measurement. Several processes may use one
// file at once (`kbisect run`s on one machine, `kbisect cache` beside them): SQLite's locking
// serializes their writes, and a writer waits up to 5 seconds for another one before failing.
//
// A file that cannot be used must not stop a bisect: the caller logs the error and goes on
// without a cache. Errors name the path and say what to do: DataLoss when the file is corrupt or
// not a SQLite database (delete it: kbisect measures again what it held), FailedPrecondition
// when it is another SQLite database, or one written by a newer kbisect, PermissionDenied or
// Internal when it (or its directory) cannot be created or opened.
absl::StatusOr<std::unique_ptr<ResultCache>> OpenSqliteResultCache(const std::string& path);

// A cache in memory, empty at start, for tests (and for running without a file).
std::unique_ptr<ResultCache> NewMemoryResultCache();

// The default file of the cache kept under a cache directory: <cache_dir>/results.sqlite.
std::string DefaultResultCachePath(const std::string& cache_dir);

// What `cache` holds for a job of `spec` over `commits` at `now`: the results of the spec's
// digest at the commits' trees, measured within the spec's cache_max_age (kDefaultCacheMaxAge
// when unset), one per commit of a tree (a tree shared by several commits of the range, a
// revert, stands for each of them, with `commit_sha` set). None when the spec says no_cache or
// the cache cannot be read: a cache only saves measurements, it never stops a job.
std::vector<v1::CachedResult> CachedResultsOfRange(ResultCache& cache, const v1::JobSpec& spec,
                                                   const std::vector<v1::CommitRef>& commits,
                                                   absl::Time now);

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_RESULT_CACHE_H_
