// Copyright 2026 The kbisect Authors.
//
// BisectJob, a suite's own search (decision 223): once the lead's search has its answer, the
// ranges where the suite's other metrics still have their steps are probed by this job, on the
// calibration it already has, instead of by follow-ups that measure their baselines again. The
// points are PlanSuiteProbes's (suite_ledger.h); the rows are judged by SuiteLedger.
#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/job/bisect_job.h"

namespace kbisect {
namespace {

// The ranges `rows` still search, each once with the metrics in it, as the event says them.
v1::JobWarning SuiteSearchFact(const std::vector<v1::SuiteMetricResult>& rows,
                               const std::string& measured_sha) {
  v1::JobWarning warning;
  v1::JobWarning::SuiteSearch& fact = *warning.mutable_suite_search();
  fact.set_measured_sha(measured_sha);
  std::map<std::pair<int, int>, v1::JobWarning::SuiteSearch::Range*> by_range;
  for (const v1::SuiteMetricResult& row : rows) {
    if (row.state() != v1::SUITE_METRIC_STATE_SEARCHING) continue;
    const std::pair<int, int> key{row.last_good().index(), row.first_bad().index()};
    auto [it, added] = by_range.emplace(key, nullptr);
    if (added) {
      it->second = fact.add_ranges();
      it->second->set_last_good(row.last_good().sha());
      it->second->set_first_bad(row.first_bad().sha());
      it->second->set_commits(key.second - key.first);
    }
    it->second->add_metrics(row.name());
  }
  return warning;
}

}  // namespace

bool BisectJob::HoldForSuite(v1::Outcome outcome, const std::string& error, absl::Time now) {
  if (suite_hold_.has_value() || !suite_.active() || pass_fail_ ||
      (outcome != v1::OUTCOME_CULPRIT_FOUND && outcome != v1::OUTCOME_NO_REGRESSION)) {
    return false;
  }
  suite_.Judge();
  if (!SuitePointsLeft()) return false;
  CloseOpenTasks();
  suite_hold_ = SuiteHold{outcome, error};
  frame_.state = v1::JOB_STATE_SUITE_SEARCH;
  Emit(v1::JOB_EVENT_KIND_WARNING, SuiteSearchFact(suite_.rows(), ""), nullptr, now);
  // No worker with its own GOOD may be left: then the follow-ups search as before.
  ContinueSuiteSearch(now);
  return true;
}

void BisectJob::DispatchSuiteProbes(const std::vector<std::string>& workers,
                                    std::vector<Assignment>* out) {
  std::vector<std::string> ready;
  for (const std::string& worker : workers) {
    if (ProbesForSuite(worker)) ready.push_back(worker);
  }
  if (frame_.spec.max_workers() > 0) {
    const size_t room =
        static_cast<size_t>(std::max(0, frame_.spec.max_workers() - book_.InFlightCount()));
    if (ready.size() > room) ready.resize(room);
  }
  size_t next = 0;
  const std::deque<std::string> queued = book_.queue();
  for (const std::string& id : queued) {
    if (next == ready.size()) return;
    const TaskEntry& entry = book_.at(id);
    if (entry.done || entry.active || entry.task.kind() != v1::PROBE_KIND_SUITE) continue;
    HandOut(ready[next++], id, out);
  }
  if (next == ready.size()) return;
  for (int index : PlanSuiteProbes(suite_.rows(), book_.rows(),
                                   static_cast<int>(ready.size() - next), frame_.spec.max_runs())) {
    const std::string id = book_.NewTask(v1::PROBE_KIND_SUITE, index, ledger_.max_round() + 1);
    HandOut(ready[next++], id, out);
  }
}

bool BisectJob::ProbesForSuite(const std::string& worker) const {
  const Calibration::Worker* state = calibration_.Find(worker);
  return state != nullptr && !state->quarantined && !state->gone &&
         calibration_.CalibrationDone(worker);
}

bool BisectJob::SuitePointsLeft() const {
  return !PlanSuiteProbes(suite_.rows(), book_.rows(), 1, frame_.spec.max_runs()).empty();
}

void BisectJob::OnSuiteProbeFinished(int position, absl::Time now) {
  suite_.Judge();
  const v1::Probe& probe = book_.probe(position);
  Emit(v1::JOB_EVENT_KIND_WARNING, SuiteSearchFact(suite_.rows(), probe.sha()), &probe, now);
  ContinueSuiteSearch(now);
}

void BisectJob::ContinueSuiteSearch(absl::Time now) {
  if (!suite_hold_.has_value() || finished()) return;
  bool pending = book_.InFlightCount() > 0;
  for (const std::string& id : book_.queue()) pending = pending || !book_.at(id).done;
  if (pending) return;
  bool can_probe = false;
  for (const auto& [name, state] : calibration_.workers()) {
    can_probe = can_probe || ProbesForSuite(name);
  }
  if (can_probe && SuitePointsLeft()) return;  // TakeTasks hands the next points out.
  const SuiteHold hold = *suite_hold_;
  Finish(hold.outcome, hold.error, now);
}

void BisectJob::RequeueSuiteProbesOf(const std::string& worker) {
  const std::set<std::string> active = book_.active();
  for (const std::string& id : active) {
    TaskEntry& entry = book_.at(id);
    v1::Probe& probe = ProbeOf(entry);
    if (entry.task.kind() != v1::PROBE_KIND_SUITE || probe.worker() != worker) continue;
    book_.Deactivate(id);
    probe.set_state(v1::PROBE_STATE_PENDING);
    book_.QueueFront(id);
  }
}

}  // namespace kbisect
