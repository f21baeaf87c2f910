// Copyright 2026 The kbisect Authors.
//
// BisectJob's speculative confirmation (decision 46; the pure parts are in confirmation.h): in
// the search's last round, workers with nothing to probe measure the confirmation pair of each
// commit that may turn out to be the culprit; the pairs of the commit that does count for its
// confirmation, the others are cancelled.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/job/bisect_job.h"
#include "coordinator/job/job_text.h"

namespace kbisect {

void BisectJob::SpeculateConfirmations(const DispatchPlan& plan, std::vector<Assignment>* out) {
  if (pass_fail_ || !status_.spec().confirm() || status_.state() != v1::JOB_STATE_BISECTING ||
      search_.Done()) {
    return;
  }
  // Before the last round (most calls) there is nothing to speculate on: decided first.
  const std::vector<int> possible = SpeculationCandidates(search_, speculated_);
  if (possible.empty()) return;
  std::set<std::string> busy;
  for (const DispatchAssignment& assignment : plan.assignments) busy.insert(assignment.worker);
  std::vector<std::string> spare;
  const std::set<std::string> unsettled = UnsettledWorkers();
  for (const std::string& worker : plan.seen) {
    if (busy.count(worker) > 0) continue;
    const Calibration::Worker* state = calibration_.Find(worker);
    if (state != nullptr && state->quarantined) continue;
    // A pair needs no calibration (the worker's offset cancels within it), but a worker whose
    // calibration is not done and that owes one (it measured in the job, or BAD) is left alone:
    // it calibrates first, and a GPU its calibration quarantines voids its pairs.
    if (!calibration_.CalibrationDone(worker) &&
        (unsettled.count(worker) > 0 || worker == calibration_.BadWorker())) {
      continue;
    }
    spare.push_back(worker);
  }
  if (status_.spec().max_workers() > 0) {
    const int running = book_.InFlightCount();
    const int room = std::max(0, status_.spec().max_workers() - running);
    if (static_cast<int>(spare.size()) > room) spare.resize(room);
  }
  if (spare.empty()) return;
  // Each candidate's confirmation as StartConfirmation would plan it were it the culprit.
  std::vector<SpeculationCandidate> candidates;
  for (int culprit : possible) {
    const ConfirmationPlan plan = PlanConfirmationNow(ExpectedReusedPairs(culprit - 1, culprit));
    candidates.push_back({culprit, plan.tasks * plan.pairs_per_task});
  }
  size_t next = 0;
  for (const SpeculationCandidate& candidate :
       ChooseSpeculation(candidates, static_cast<int>(spare.size()))) {
    speculated_.insert(candidate.culprit);
    for (int pair = 0; pair < candidate.pairs_needed; ++pair) {
      const std::string id =
          book_.NewTask(v1::PROBE_KIND_CONFIRM, candidate.culprit, max_round_recorded_ + 1);
      v1::Task& task = book_.at(id).task;
      task.set_paired_commit_sha(commits_[candidate.culprit - 1].sha());
      task.set_runs(1);  // One pair a task: the pairs of a confirmation spread over workers.
      HandOut(spare[next++], id, out);
    }
  }
}

int BisectJob::ExpectedReusedPairs(int last_good, int culprit) const {
  // Who measures (or measured) each commit, and how many samples: the probe that decided it,
  // the one in flight, or the reference baseline at an end of the range.
  auto measurer = [&](int index, v1::Verdict verdict) -> std::pair<std::string, int> {
    for (const v1::Probe& probe : status_.probes()) {
      if (probe.kind() != v1::PROBE_KIND_BISECT || probe.index() != index) continue;
      if (probe.state() == v1::PROBE_STATE_FINISHED && probe.verdict() == verdict) {
        return {probe.worker(), probe.samples_size()};
      }
      if (probe.state() == v1::PROBE_STATE_RUNNING) {
        return {probe.worker(), std::max(1, status_.spec().runs_per_commit())};
      }
    }
    const int baseline = index == 0                        ? calibration_.good_probe()
                         : index == status_.commit_count() ? calibration_.bad_probe()
                                                           : -1;
    if (baseline >= 0) {
      const v1::Probe& probe = book_.probe(baseline);
      return {probe.worker(), probe.samples_size()};
    }
    return {"", 0};
  };
  const auto [good_worker, good_samples] = measurer(last_good, v1::VERDICT_GOOD);
  const auto [bad_worker, bad_samples] = measurer(culprit, v1::VERDICT_BAD);
  if (good_worker.empty() || good_worker != bad_worker) return 0;
  return std::min(good_samples, bad_samples);
}

bool BisectJob::ConfirmationStartedFor(const v1::Task& task) const {
  if (early_confirmation_) {
    // Its pairs count while the search may still close on the two commits they measure.
    return task.commit_index() == confirm_first_bad_ &&
           task.paired_commit_sha() == commits_[confirm_last_good_].sha() &&
           EarlyConfirmationTargetPossible();
  }
  return status_.state() == v1::JOB_STATE_CONFIRMING && search_.Done() &&
         task.commit_index() == search_.first_bad() &&
         task.paired_commit_sha() == commits_[search_.last_good()].sha();
}

void BisectJob::KeepSpeculativePairs(const v1::Probe& probe, const v1::Task& task,
                                     const v1::TaskResult& result) {
  // A failed pair is not kept: the confirmation measures the pairs it still needs itself.
  if (std::optional<v1::ConfirmationPairs> set = InterleavedPairsOf(probe.worker(), result)) {
    speculative_sets_[{task.commit_index(), task.paired_commit_sha()}].push_back(*std::move(set));
  }
}

int BisectJob::AdoptSpeculativePairs(v1::Confirmation* confirmation, absl::Time now) {
  const std::pair<int, std::string> target{search_.first_bad(),
                                           commits_[search_.last_good()].sha()};
  int pairs = 0;
  auto kept = speculative_sets_.find(target);
  if (kept != speculative_sets_.end()) {
    for (const v1::ConfirmationPairs& set : kept->second) pairs += AddInterleavedPairs(set);
    speculative_sets_.erase(kept);
  }
  for (auto& [id, entry] : book_.tasks()) {
    if (entry.task.kind() != v1::PROBE_KIND_CONFIRM) continue;
    const bool of_target = entry.task.commit_index() == target.first &&
                           entry.task.paired_commit_sha() == target.second;
    if (of_target) {
      if (!entry.done) pairs += std::max(1, entry.task.runs());  // It will report.
    } else if (!entry.done) {
      book_.CancelTask(entry, id, SpeculationNotTheCulpritText(), now, &to_cancel_);
    } else if (v1::Probe& probe = ProbeOf(entry);
               probe.state() == v1::PROBE_STATE_FINISHED && probe.message().empty()) {
      probe.set_message(SpeculationNotTheCulpritText());  // Measured ahead, not counted.
    }
  }
  return pairs;
}

void BisectJob::CancelSpeculation(absl::Time now) {
  for (auto& [id, entry] : book_.tasks()) {
    if (entry.done || entry.task.kind() != v1::PROBE_KIND_CONFIRM) continue;
    book_.CancelTask(entry, id, SpeculationNotNeededText(), now, &to_cancel_);
  }
}

}  // namespace kbisect
