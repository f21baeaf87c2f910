// Copyright 2026 The kbisect Authors.
//
// Which results of earlier jobs this job may reuse. A cached sample is only as good as the GPU
// that measured it: a worker's cached results are used only once it has measured, in this job,
// a commit it also has cached, and the two measurements agree (its GPU has not drifted since).
// Until then its cached commits are anchors the scheduler steers its probes to (when one is
// close to an ideal split); a disagreement refuses all of its cached results. Pure: BisectJob
// feeds it measurements and turns usable entries into probe rows.
#ifndef KBISECT_COORDINATOR_JOB_RESULT_REUSE_H_
#define KBISECT_COORDINATOR_JOB_RESULT_REUSE_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// Two measurements of one commit on one GPU agree unless their means are clearly (by two
// standard errors) more than this fraction apart.
inline constexpr double kCacheAgreementFraction = 0.02;

// The cache record of a finished probe of `commit`: its samples, worker, hardware class and end
// time. nullopt for a probe without samples, and for a probe that itself came from the cache.
std::optional<v1::CachedResult> ToCachedResult(const v1::Probe& probe, const v1::CommitRef& commit,
                                               const std::string& job_id);

// The cache records of a finished probe of `commit`: ToCachedResult's, and for a confirmation
// task, which measured `paired` interleaved with `commit` on the same worker, a second record of
// `paired` with `paired_samples` (none when `paired` is null or `paired_samples` empty). Empty
// when ToCachedResult refuses the probe. A confirmation's records keep its kind: a later job
// counts them as that worker's pairs of the two commits only (ResultReuse::PairsAt), unless the
// job merged a probe's samples into them and made them probe records (BisectJob::CacheRecordsOf).
std::vector<v1::CachedResult> ToCachedResults(const v1::Probe& probe, const v1::CommitRef& commit,
                                              const v1::CommitRef* paired,
                                              const std::vector<double>& paired_samples,
                                              const std::string& job_id);

class ResultReuse {
 public:
  // One cached measurement, placed in this job's commit list.
  struct Entry {
    int index = 0;
    v1::CachedResult result;
    bool used = false;  // Turned into a probe row of this job.
  };

  enum class Standing { kUnverified, kVerified, kRefused };

  // What one comparison showed.
  struct Check {
    std::string worker;
    int index = 0;
    bool agreed = false;
    double cached_median = 0;
    double fresh_median = 0;
    std::string cached_job_id;
    std::vector<double> cached_samples;  // Its cached samples of that commit.
  };

  ResultReuse() = default;
  // Places `cached` in `commits` (results of commits outside the list are dropped; of several
  // results for one (worker, commit) the newest is kept).
  ResultReuse(const std::vector<v1::CachedResult>& cached,
              const std::vector<v1::CommitRef>& commits);

  bool empty() const { return by_worker_.empty(); }

  // Compares a fresh measurement of `index` on `worker` with its cached one, when the worker is
  // still unverified and has one: the worker becomes verified or refused. nullopt otherwise.
  std::optional<Check> OnMeasured(const std::string& worker, int index,
                                  const std::vector<double>& samples);

  Standing standing(const std::string& worker) const;

  // Cached commit indices of `worker` while it is unverified (anchors to steer it to).
  std::vector<int> Anchors(const std::string& worker) const;

  // True when `worker` is unverified and has a cached result at `index`: one fresh run there
  // checks its GPU, and its cached samples then count for the verdict too.
  bool IsAnchor(const std::string& worker, int index) const;

  // Unused entries of verified workers strictly inside (last_good, first_bad), by index.
  std::vector<Entry*> Usable(int last_good, int first_bad);

  // Samples of two commits that one earlier job measured on one worker.
  struct CachedPair {
    std::string worker;
    std::string job_id;
    std::vector<double> last_good;
    std::vector<double> culprit;
  };
  // For each verified worker with cached results at both `last_good` and `culprit` from the same
  // earlier job, those results (used or not): a confirmation of that interval may count them as
  // the worker's pairs, since its offset cancels between the two and its GPU agreed with itself
  // in this job. By worker.
  std::vector<CachedPair> PairsAt(int last_good, int culprit) const;

 private:
  // True for a confirmation's record of a commit on its own (its pairs' samples, too few to
  // stand for a probe of that commit or to check the worker against): it serves PairsAt only.
  static bool PairOnly(const Entry& entry);

  struct WorkerCache {
    Standing standing = Standing::kUnverified;
    std::map<int, Entry> by_index;
  };
  std::map<std::string, WorkerCache> by_worker_;
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_RESULT_REUSE_H_
