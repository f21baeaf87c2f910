// Copyright 2026 The kbisect Authors.
//
// BisectJob, reusing results of earlier jobs: the record of a finished measurement for the
// result cache, the check of a worker's cached results against its fresh measurement, and the
// probe rows made from the usable ones (see coordinator/job/result_reuse.h).
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/rpc/proto_time.h"
#include "coordinator/job/bisect_job.h"
#include "coordinator/job/job_text.h"

namespace kbisect {

std::vector<v1::CachedResult> BisectJob::CacheRecordsOf(const std::string& task_id,
                                                        const v1::TaskResult& result) const {
  const TaskEntry* entry = book_.Find(task_id);
  if (entry == nullptr || pass_fail_) return {};
  const v1::Probe& probe = book_.probe(entry->probe);
  if (probe.index() < 0 || probe.index() >= static_cast<int>(commits_.size())) return {};
  // A confirmation task's paired commit (its last-good), -1 for any other task.
  int paired_index = -1;
  if (!entry->task.paired_commit_sha().empty()) {
    auto found = std::find_if(commits_.begin(), commits_.end(), [&](const v1::CommitRef& commit) {
      return commit.sha() == entry->task.paired_commit_sha();
    });
    if (found != commits_.end()) paired_index = static_cast<int>(found - commits_.begin());
  }
  const std::vector<double> paired_samples(result.paired_samples().begin(),
                                           result.paired_samples().end());
  std::vector<v1::CachedResult> records = ToCachedResults(
      probe, commits_[probe.index()], paired_index < 0 ? nullptr : &commits_[paired_index],
      paired_samples, frame_.job_id);
  for (size_t i = 0; i < records.size(); ++i) {
    v1::CachedResult& record = records[i];
    record.set_metric_name(frame_.metric_name);
    record.set_metric_unit(frame_.metric_unit);
    if (record.kind() == v1::PROBE_KIND_CONFIRM) {
      MergeProbeSamples(i == 0 ? probe.index() : paired_index, &record);
    }
  }
  return records;
}

void BisectJob::MergeProbeSamples(int index, v1::CachedResult* record) const {
  // The record replaces the worker's older one of that commit (the newest wins): the samples its
  // probe of the commit in this job measured go first, and it stands for a probe again.
  std::vector<double> probed;
  for (const v1::Probe& row : book_.rows()) {
    if (row.kind() == v1::PROBE_KIND_BISECT && row.index() == index && !row.cached() &&
        row.worker() == record->worker() && row.state() == v1::PROBE_STATE_FINISHED &&
        row.outcome() == v1::TASK_OUTCOME_SUCCEEDED) {
      probed.insert(probed.end(), row.samples().begin(), row.samples().end());
    }
  }
  if (probed.empty()) return;
  probed.insert(probed.end(), record->samples().begin(), record->samples().end());
  record->mutable_samples()->Assign(probed.begin(), probed.end());
  record->set_kind(v1::PROBE_KIND_BISECT);
}

void BisectJob::CheckCachedResults(int position, absl::Time now) {
  const v1::Probe& probe = book_.probe(position);
  if (reuse_.empty() || probe.cached()) return;
  const std::vector<double> samples(probe.samples().begin(), probe.samples().end());
  const std::optional<ResultReuse::Check> check =
      reuse_.OnMeasured(probe.worker(), probe.index(), samples);
  if (!check.has_value()) return;
  if (!check->agreed) tally_.cache_refused_workers.push_back(check->worker);
  if (check->agreed && probe.kind() == v1::PROBE_KIND_BISECT) {
    // The same commit on the same GPU, which has not drifted: the cached samples join the fresh.
    v1::Probe& row = book_.mutable_probe(position);
    for (double sample : check->cached_samples) row.add_samples(sample);
    row.set_median(MedianOrZero(row.samples()));
  }
  v1::JobWarning warning;
  v1::JobWarning::CacheCheck& fact = *warning.mutable_cache_check();
  fact.set_worker(check->worker);
  fact.set_cached_job_id(check->cached_job_id);
  fact.set_sha(commits_[check->index].sha());
  fact.set_fresh_median(check->fresh_median);
  fact.set_cached_median(check->cached_median);
  fact.set_unit(frame_.metric_unit);
  fact.set_agreed(check->agreed);
  Emit(check->agreed ? v1::JOB_EVENT_KIND_WARNING : v1::JOB_EVENT_KIND_DRIFT, std::move(warning),
       nullptr, now);
}

void BisectJob::ApplyCachedResults(absl::Time now) {
  if (reuse_.empty() || finished() || pass_fail_) return;
  const std::vector<int> in_flight = ledger_.search().InFlight();
  for (ResultReuse::Entry* entry :
       reuse_.Usable(ledger_.search().last_good(), ledger_.search().first_bad())) {
    const int index = entry->index;
    if (index <= ledger_.search().last_good() || index >= ledger_.search().first_bad()) continue;
    if (std::find(in_flight.begin(), in_flight.end(), index) != in_flight.end()) continue;
    if (IsMarked(frame_.marks, index))
      continue;  // The user's verdict stands (a skip mark is not a gap).
    const bool probed =
        std::any_of(book_.rows().begin(), book_.rows().end(), [&](const v1::Probe& probe) {
          return probe.kind() == v1::PROBE_KIND_BISECT && probe.index() == index &&
                 probe.state() != v1::PROBE_STATE_CANCELLED;
        });
    entry->used = true;
    if (probed) continue;
    const int position = book_.AddCachedProbe(index, ledger_.max_round() + 1, entry->result);
    ++tally_.cached_probes;
    v1::Probe& probe = book_.mutable_probe(position);
    probe.set_median(MedianOrZero(probe.samples()));
    ledger_.search().MarkInFlight(index);
    if (calibration_.WorkerReady(probe.worker())) {
      Classify(position, now);
      if (finished()) return;
    } else {
      ledger_.Await(position);
    }
  }
}

}  // namespace kbisect
