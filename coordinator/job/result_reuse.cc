// Copyright 2026 The kbisect Authors.
#include "coordinator/job/result_reuse.h"

#include <cmath>

#include "common/rpc/proto_time.h"
#include "common/stats/stats.h"
#include "coordinator/job/probe_classifier.h"

namespace kbisect {

std::optional<v1::CachedResult> ToCachedResult(const v1::Probe& probe, const v1::CommitRef& commit,
                                               const std::string& job_id) {
  if (probe.kind() == v1::PROBE_KIND_UNSPECIFIED || probe.cached() ||
      probe.state() != v1::PROBE_STATE_FINISHED || probe.outcome() != v1::TASK_OUTCOME_SUCCEEDED ||
      probe.samples_size() == 0 || probe.worker().empty()) {
    return std::nullopt;
  }
  v1::CachedResult result;
  result.set_commit_sha(commit.sha());
  result.set_tree_sha(commit.tree_sha());
  result.set_worker(probe.worker());
  result.set_hardware_class(probe.worker_hardware_class());
  *result.mutable_samples() = probe.samples();
  *result.mutable_measure_time() = probe.end_time();
  result.set_job_id(job_id);
  result.set_kind(probe.kind());
  return result;
}

std::vector<v1::CachedResult> ToCachedResults(const v1::Probe& probe, const v1::CommitRef& commit,
                                              const v1::CommitRef* paired,
                                              const std::vector<double>& paired_samples,
                                              const std::string& job_id) {
  std::vector<v1::CachedResult> records;
  std::optional<v1::CachedResult> own = ToCachedResult(probe, commit, job_id);
  if (!own.has_value()) return records;
  records.push_back(*std::move(own));
  if (probe.kind() != v1::PROBE_KIND_CONFIRM || paired == nullptr || paired_samples.empty()) {
    return records;
  }
  v1::CachedResult& other = records.emplace_back(records.front());
  other.set_commit_sha(paired->sha());
  other.set_tree_sha(paired->tree_sha());
  other.mutable_samples()->Assign(paired_samples.begin(), paired_samples.end());
  return records;
}

ResultReuse::ResultReuse(const std::vector<v1::CachedResult>& cached,
                         const std::vector<v1::CommitRef>& commits) {
  std::map<std::string, int> index_of;
  for (const v1::CommitRef& commit : commits) index_of[commit.sha()] = commit.index();
  for (const v1::CachedResult& result : cached) {
    auto it = index_of.find(result.commit_sha());
    if (it == index_of.end() || result.samples_size() == 0 || result.worker().empty()) continue;
    Entry& entry = by_worker_[result.worker()].by_index[it->second];
    if (entry.result.samples_size() > 0 &&
        FromProto(entry.result.measure_time()) >= FromProto(result.measure_time())) {
      continue;  // Keep the newest.
    }
    entry.index = it->second;
    entry.result = result;
  }
}

std::optional<ResultReuse::Check> ResultReuse::OnMeasured(const std::string& worker, int index,
                                                          const std::vector<double>& samples) {
  auto found = by_worker_.find(worker);
  if (found == by_worker_.end() || found->second.standing != Standing::kUnverified ||
      samples.empty()) {
    return std::nullopt;
  }
  WorkerCache& cache = found->second;
  auto entry = cache.by_index.find(index);
  if (entry == cache.by_index.end() || PairOnly(entry->second)) return std::nullopt;
  const v1::CachedResult& cached = entry->second.result;
  const std::vector<double> old(cached.samples().begin(), cached.samples().end());
  const double center = Mean(old).value_or(0);
  Check check;
  check.worker = worker;
  check.index = index;
  check.cached_median = MedianOrZero(old);
  check.fresh_median = MedianOrZero(samples);
  check.cached_job_id = cached.job_id();
  check.cached_samples = old;
  check.agreed = !OffsetExceeds(samples, old, center, kCacheAgreementFraction * std::fabs(center));
  cache.standing = check.agreed ? Standing::kVerified : Standing::kRefused;
  // The commit it just measured is this job's own probe: its cached twin is not reused.
  entry->second.used = true;
  return check;
}

ResultReuse::Standing ResultReuse::standing(const std::string& worker) const {
  auto found = by_worker_.find(worker);
  return found == by_worker_.end() ? Standing::kRefused : found->second.standing;
}

std::vector<int> ResultReuse::Anchors(const std::string& worker) const {
  std::vector<int> anchors;
  auto found = by_worker_.find(worker);
  if (found == by_worker_.end() || found->second.standing != Standing::kUnverified) {
    return anchors;
  }
  for (const auto& [index, entry] : found->second.by_index) {
    if (!PairOnly(entry)) anchors.push_back(index);
  }
  return anchors;
}

bool ResultReuse::IsAnchor(const std::string& worker, int index) const {
  auto found = by_worker_.find(worker);
  if (found == by_worker_.end() || found->second.standing != Standing::kUnverified) return false;
  auto entry = found->second.by_index.find(index);
  return entry != found->second.by_index.end() && !PairOnly(entry->second);
}

std::vector<ResultReuse::Entry*> ResultReuse::Usable(int last_good, int first_bad) {
  std::vector<Entry*> usable;
  for (auto& [worker, cache] : by_worker_) {
    if (cache.standing != Standing::kVerified) continue;
    for (auto& [index, entry] : cache.by_index) {
      if (!entry.used && !PairOnly(entry) && index > last_good && index < first_bad) {
        usable.push_back(&entry);
      }
    }
  }
  return usable;
}

bool ResultReuse::PairOnly(const Entry& entry) {
  return entry.result.kind() == v1::PROBE_KIND_CONFIRM;
}

std::vector<ResultReuse::CachedPair> ResultReuse::PairsAt(int last_good, int culprit) const {
  std::vector<CachedPair> pairs;
  for (const auto& [worker, cache] : by_worker_) {
    if (cache.standing != Standing::kVerified) continue;
    auto good = cache.by_index.find(last_good);
    auto bad = cache.by_index.find(culprit);
    if (good == cache.by_index.end() || bad == cache.by_index.end() ||
        good->second.result.job_id() != bad->second.result.job_id()) {
      continue;
    }
    CachedPair& pair = pairs.emplace_back();
    pair.worker = worker;
    pair.job_id = good->second.result.job_id();
    pair.last_good.assign(good->second.result.samples().begin(),
                          good->second.result.samples().end());
    pair.culprit.assign(bad->second.result.samples().begin(), bad->second.result.samples().end());
  }
  return pairs;
}

}  // namespace kbisect
