// Copyright 2026 The kbisect Authors.
//
// BisectJob, the baselines: who holds the reference GOOD (BAD's worker, or a stand-in measured
// beside BAD until BAD's worker's own GOOD takes the role back), acting on the endpoint verdict
// (EndpointVerdict: regression, none or swapped), more runs of both baselines, and the runs a
// worker's GOOD calibration needs.
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

void BisectJob::MakeReference(const std::string& worker) {
  // The endpoint verdicts compare GOOD and BAD measured on one GPU, whose offset cancels: the
  // worker that measures BAD measures the reference GOOD next (or already has). Another
  // worker's GOOD measured before it stands in for it meanwhile (Calibrate).
  Calibration::Worker& state = calibration_.worker(worker);
  if (state.calibration < 0) {
    const std::string id = book_.NewTask(v1::PROBE_KIND_BASELINE_GOOD, 0, 0, worker);
    state.calibration = book_.at(id).probe;
    book_.QueueFront(id);
  }
  calibration_.SetReference(worker, state.calibration);
}

void BisectJob::FollowEndpoint(const EndpointStep& step, absl::Time now) {
  if (step.record.has_value()) frame_.recorded = *step.record;
  if (step.direction.has_value()) frame_.direction = *step.direction;
  for (const v1::JobWarning& warning : step.warnings) Warn(warning);
  for (const auto& [kind, fact] : step.events) Emit(kind, fact, nullptr, now);
  if (step.more_runs > 0) FollowStanding(standing_.ExtendBaselines(step.more_runs, now), now);
  if (step.more_good_runs > 0) book_.Extend(calibration_.good_probe(), step.more_good_runs);
  if (step.more_bad_runs > 0) book_.Extend(calibration_.bad_probe(), step.more_bad_runs);
  if (step.state.has_value()) frame_.state = *step.state;
  if (step.judge_every_verdict_again) ledger_.RetractAll(now);
  if (step.finish.has_value() && step.finish->cause != v1::CAUSE_UNSPECIFIED) {
    result_.SetCause(step.finish->cause);
  }
  // A suite whose lead did not move still judges its other metrics on the baselines: those too
  // close to tell get their runs first.
  const bool suite_unclear = step.finish.has_value() &&
                             step.finish->outcome == v1::OUTCOME_NO_REGRESSION &&
                             ExtendSuiteBaselines();
  if (step.finish.has_value() && !suite_unclear) {
    Finish(step.finish->outcome, step.finish->error, now);
  }
}

bool BisectJob::ExtendSuiteBaselines() {
  suite_.Judge();
  const int good = calibration_.good_probe();
  const int bad = calibration_.bad_probe();
  // Once the job searches its suite's ranges (HoldForSuite), the baselines are what they are.
  if (finished() || suite_hold_.has_value() || suite_.more_baseline_runs() <= 0 || good < 0 ||
      bad < 0) {
    return false;
  }
  const v1::Probe& good_row = book_.probe(good);
  const v1::Probe& bad_row = book_.probe(bad);
  // Once per extension, and only on the reference worker (SuiteLedger judges there).
  if (good_row.state() != v1::PROBE_STATE_FINISHED || bad_row.state() != v1::PROBE_STATE_FINISHED ||
      good_row.worker() != bad_row.worker()) {
    return false;
  }
  book_.Extend(good, suite_.more_baseline_runs());
  book_.Extend(bad, suite_.more_baseline_runs());
  return true;
}

}  // namespace kbisect
