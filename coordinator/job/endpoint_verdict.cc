// Copyright 2026 The kbisect Authors.
#include "coordinator/job/endpoint_verdict.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/job/flaky_verdicts.h"
#include "coordinator/job/job_text.h"

namespace kbisect {
namespace {

// The baselines are judged again when the noise seen grows past this factor of what they were
// judged with.
constexpr double kReassessGrowth = 1.5;

// Failures BAD runs to before a flaky test's search starts: one shows the test fails there at
// all (never failing in --max-runs runs: no regression). The fail rates are estimated from every
// run of the job, the search's included, so the endpoints need no more.
constexpr int kFlakyBadFailures = 1;

}  // namespace

EndpointVerdict::EndpointVerdict(const JobFrame* frame, const Calibration* calibration,
                                 const ProbeBook* book, bool pass_fail)
    : frame_(frame), calibration_(calibration), book_(book), pass_fail_(pass_fail) {}

bool EndpointVerdict::Ready() const {
  // An endpoint verdict across two GPUs that found no step waits for BAD's worker's GOOD.
  if (deferred_ && !calibration_->EndpointsOnOneGpu()) return false;
  for (int position : {calibration_->good_probe(), calibration_->bad_probe()}) {
    if (position < 0) return false;
    const v1::Probe& probe = book_->probe(position);
    if (probe.state() != v1::PROBE_STATE_FINISHED || !IsMeasured(probe, pass_fail_)) {
      return false;
    }
  }
  return true;
}

EndpointStep EndpointVerdict::EvaluatePassFail() const {
  const v1::Probe& good = book_->probe(calibration_->good_probe());
  const v1::Probe& bad = book_->probe(calibration_->bad_probe());
  EndpointStep step;
  if (good.outcome() != v1::TASK_OUTCOME_PASSED) {
    step.finish = EndpointStep::Finish{v1::OUTCOME_ERROR, CheckFailsAtGoodText(good)};
    return step;
  }
  if (bad.outcome() != v1::TASK_OUTCOME_FAILED) {
    step.finish = EndpointStep::Finish{v1::OUTCOME_NO_REGRESSION, CheckPassesAtBadText(bad)};
    return step;
  }
  v1::JobEvent baseline;
  baseline.mutable_pass_fail_baseline()->set_good_sha(good.sha());
  baseline.mutable_pass_fail_baseline()->set_bad_sha(bad.sha());
  step.events.emplace_back(v1::JOB_EVENT_KIND_BASELINE, std::move(baseline));
  step.state = v1::JOB_STATE_BISECTING;
  return step;
}

EndpointStep EndpointVerdict::EvaluateFlaky() const {
  const v1::Probe& good_probe = book_->probe(calibration_->good_probe());
  const v1::Probe& bad_probe = book_->probe(calibration_->bad_probe());
  const RunCounts good = CountRuns(good_probe);
  const RunCounts bad = CountRuns(bad_probe);
  const int min_runs = frame_->spec.runs_per_commit();
  const int max_runs = frame_->spec.max_runs();
  EndpointStep step;
  if (bad.failures < kFlakyBadFailures && bad.runs() < max_runs) {
    // As many runs again as it had (at least --runs): a rare flake is found in a few tasks.
    step.more_bad_runs = std::min(std::max(min_runs, bad.runs()), max_runs - bad.runs());
    return step;
  }
  if (bad.failures == 0) {
    step.finish = EndpointStep::Finish{v1::OUTCOME_NO_REGRESSION,
                                       FlakyPassesAtBadText(bad_probe, bad.runs())};
    return step;
  }
  if (good.failures > 0 && good.runs() < min_runs) {
    // The worker stopped at the failure: the rest of --runs says whether GOOD fails often.
    step.more_good_runs = min_runs - good.runs();
    return step;
  }
  if (2 * good.failures > good.runs() && good.runs() < 2 * min_runs) {
    // Failing in most of a few runs happens to a GOOD that fails 5% of the time too (once in
    // two thousand jobs for 3 of 4): one more look before calling GOOD broken.
    step.more_good_runs = 2 * min_runs - good.runs();
    return step;
  }
  if (2 * good.failures > good.runs()) {
    step.finish = EndpointStep::Finish{
        v1::OUTCOME_ERROR, FlakyFailsAtGoodText(good_probe, good.failures, good.runs())};
    return step;
  }
  if (frame_->bisecting()) return step;
  v1::JobEvent baseline;
  v1::FlakyBaselineFact& fact = *baseline.mutable_flaky_baseline();
  fact.set_good_sha(frame_->good_sha);
  fact.set_good_failures(good.failures);
  fact.set_good_runs(good.runs());
  fact.set_bad_sha(frame_->bad_sha);
  fact.set_bad_failures(bad.failures);
  fact.set_bad_runs(bad.runs());
  step.events.emplace_back(v1::JOB_EVENT_KIND_BASELINE, std::move(baseline));
  step.state = v1::JOB_STATE_BISECTING;
  return step;
}

EndpointStep EndpointVerdict::Evaluate() {
  if (pass_fail_ && frame_->spec.flaky()) return EvaluateFlaky();
  if (pass_fail_) return EvaluatePassFail();
  EndpointStep step;
  if (frame_->direction == v1::DIRECTION_UNSPECIFIED) step.direction = Direction();
  // Calibrations that agree with the reference's GOOD sharpen it (see PooledSamples).
  assessed_noise_ = calibration_->ObservedNoise();
  const BaselineAssessment assessment = Assess();
  // GOOD and BAD measured on two GPUs (the reference GOOD was measured beside BAD) may differ by
  // the GPUs' offset: a step between them steers the search provisionally, but only BAD's worker
  // measuring GOOD too can say there is none, that they look swapped, or that they are unclear.
  const bool across_gpus = !calibration_->EndpointsOnOneGpu();
  if (across_gpus && !StepFound(assessment)) {
    deferred_ = true;
    return step;
  }
  if (assessment.more_runs > 0 && !TryJob()) {
    MeasureAgain(assessment, &step);
    return step;
  }
  step.record = Record(assessment);
  step.warnings = assessment.warnings;
  step.events.emplace_back(v1::JOB_EVENT_KIND_BASELINE, MeasuredBaseline(assessment, across_gpus));
  for (const v1::JobWarning& warning : assessment.warnings) {
    v1::JobEvent event;
    *event.mutable_warning() = warning;
    step.events.emplace_back(v1::JOB_EVENT_KIND_WARNING, std::move(event));
  }
  if (!FinishIfNoStep(assessment, &step)) step.state = v1::JOB_STATE_BISECTING;
  return step;
}

v1::JobEvent EndpointVerdict::MeasuredBaseline(const BaselineAssessment& assessment,
                                               bool across_gpus) const {
  const v1::Probe& good = book_->probe(calibration_->good_probe());
  const v1::Probe& bad = book_->probe(calibration_->bad_probe());
  v1::JobEvent event;
  v1::MeasuredBaselineFact& fact = *event.mutable_measured_baseline();
  fact.set_good_sha(frame_->good_sha);
  fact.set_bad_sha(frame_->bad_sha);
  fact.set_metric_name(frame_->metric_name);
  fact.set_unit(frame_->metric_unit);
  fact.set_good_median(good.median());
  fact.set_bad_median(bad.median());
  fact.set_regression_pct(assessment.regression_pct);
  fact.set_direction(Direction());
  fact.set_one_run_per_probe(calibration_->RepeatsExactly());
  if (across_gpus) {
    fact.set_provisional_good_worker(good.worker());
    fact.set_provisional_bad_worker(bad.worker());
  }
  return event;
}

EndpointStep EndpointVerdict::Settle() {
  // BAD's worker's GOOD is the reference now: the step is judged again on one GPU, whose
  // offset cancels, and every verdict judged in the stand-in's frame is judged in this one.
  EndpointStep step;
  const std::string stand_in = frame_->good_baseline().worker();
  assessed_noise_ = calibration_->ObservedNoise();
  const BaselineAssessment assessment = Assess();
  if (assessment.more_runs > 0 && !TryJob()) {
    MeasureAgain(assessment, &step);
    step.state = v1::JOB_STATE_BASELINES;
    step.judge_every_verdict_again = true;
    return step;
  }
  step.record = Record(assessment);
  const v1::Baselines& recorded = step.record->baselines;
  v1::JobEvent settled;
  v1::SettledBaselineFact& fact = *settled.mutable_settled_baseline();
  fact.set_good_worker(recorded.good().worker());
  fact.set_stand_in(stand_in);
  fact.set_good_median(recorded.good().median());
  fact.set_bad_median(recorded.bad().median());
  fact.set_unit(frame_->metric_unit);
  fact.set_regression_pct(assessment.regression_pct);
  step.events.emplace_back(v1::JOB_EVENT_KIND_BASELINE, std::move(settled));
  if (FinishIfNoStep(assessment, &step)) return step;
  // Verdicts of the stand-in's frame: with an offset between the two GPUs they are all judged
  // again; without one, each provisional verdict settles against the new pool as it would
  // have (BisectJob::SettleProvisional).
  step.judge_every_verdict_again = calibration_->HasOffset(stand_in);
  return step;
}

EndpointStep EndpointVerdict::ReassessIfNoisy() {
  EndpointStep step;
  // Also nothing once the job is finished: its state is no longer BISECTING. A try job's
  // interleaved pairs answer for the noise themselves.
  if (pass_fail_ || TryJob() || !frame_->bisecting()) return step;
  // Baselines of few runs show little spread; the probes' samples may show more. When the noise
  // seen has grown by half since the baselines were judged, they are judged again with it, and
  // if they are no longer clearly apart they are measured again and every verdict waits.
  const double noise = calibration_->ObservedNoise();
  if (noise <= kReassessGrowth * assessed_noise_ || noise == 0) return step;
  assessed_noise_ = noise;
  const BaselineAssessment assessment = Assess();
  if (assessment.more_runs <= 0) return step;
  v1::JobEvent noisy;
  v1::JobWarning::NoisyBaselines& fact = *noisy.mutable_warning()->mutable_noisy_baselines();
  fact.set_noise(noise);
  fact.set_unit(frame_->metric_unit);
  fact.set_reason(assessment.reason);
  step.events.emplace_back(v1::JOB_EVENT_KIND_WARNING, std::move(noisy));
  step.more_runs = assessment.more_runs;
  step.state = v1::JOB_STATE_BASELINES;
  step.judge_every_verdict_again = true;
  return step;
}

BaselineAssessment EndpointVerdict::Assess() const {
  BaselineAssessment assessment = AssessBaselines(
      calibration_->PooledSamples(v1::VERDICT_GOOD), calibration_->ReferenceBadSamples(),
      Direction(), frame_->spec.min_effect_fraction(), frame_->spec.max_runs(), assessed_noise_);
  // The seed's "under 5%: it may be noise; consider more --runs" is no advice for a benchmark
  // that repeats exactly: more runs give the same numbers (decision 229).
  if (calibration_->RepeatsExactly()) {
    std::vector<v1::JobWarning>& warnings = assessment.warnings;
    warnings.erase(std::remove_if(warnings.begin(), warnings.end(),
                                  [](const v1::JobWarning& w) { return w.has_small_regression(); }),
                   warnings.end());
  }
  return assessment;
}

bool EndpointVerdict::TryJob() const { return frame_->spec.has_try_change(); }

bool EndpointVerdict::StepFound(const BaselineAssessment& assessment) const {
  if (TryJob()) return true;  // Its pairs measure the change whichever way it goes.
  return assessment.more_runs == 0 &&
         (assessment.regression || (assessment.improvement && frame_->spec.allow_improvement()));
}

RecordedBaselines EndpointVerdict::Record(const BaselineAssessment& assessment) const {
  const v1::Probe& good = book_->probe(calibration_->good_probe());
  const v1::Probe& bad = book_->probe(calibration_->bad_probe());
  RecordedBaselines record;
  v1::Baseline* good_base = record.baselines.mutable_good();
  good_base->set_sha(good.sha());
  *good_base->mutable_samples() = good.samples();
  good_base->set_median(good.median());
  good_base->set_worker(good.worker());
  v1::Baseline* bad_base = record.baselines.mutable_bad();
  bad_base->set_sha(bad.sha());
  const std::vector<double> bad_samples = calibration_->ReferenceBadSamples();
  bad_base->mutable_samples()->Assign(bad_samples.begin(), bad_samples.end());
  bad_base->set_median(MedianOrZero(bad_samples));
  bad_base->set_worker(bad.worker());
  record.baselines.set_provisional(!calibration_->EndpointsOnOneGpu());
  record.regression_pct = assessment.regression_pct;
  return record;
}

v1::Direction EndpointVerdict::Direction() const {
  return frame_->direction == v1::DIRECTION_UNSPECIFIED ? v1::DIRECTION_LOWER_IS_BETTER
                                                        : frame_->direction;
}

bool EndpointVerdict::FinishIfNoStep(const BaselineAssessment& assessment, EndpointStep* step) {
  if (TryJob()) return false;
  if (assessment.regression && frame_->spec.find_fix()) {
    step->finish = EndpointStep::Finish{v1::OUTCOME_ERROR, FixSwappedText(assessment.reason)};
    return true;
  }
  if (assessment.improvement && !frame_->spec.allow_improvement()) {
    if (!frame_->spec.metric().suite().empty()) {
      // A suite's lead that got better is one of its metrics that did not regress: the others
      // are judged on the baselines (SuiteLedger), and those that moved are followed up.
      step->finish = EndpointStep::Finish{v1::OUTCOME_NO_REGRESSION, assessment.reason};
      return true;
    }
    step->finish = EndpointStep::Finish{v1::OUTCOME_ERROR, SwappedText(assessment.reason)};
    return true;
  }
  if (!assessment.regression && !assessment.improvement) {
    step->finish = EndpointStep::Finish{
        v1::OUTCOME_NO_REGRESSION,
        frame_->spec.find_fix() ? NoFixText(assessment.reason) : assessment.reason,
        v1::CAUSE_NOISE};
    return true;
  }
  return false;
}

void EndpointVerdict::MeasureAgain(const BaselineAssessment& assessment, EndpointStep* step) {
  v1::JobEvent unclear;
  v1::JobWarning::BaselinesUnclear& fact = *unclear.mutable_warning()->mutable_baselines_unclear();
  fact.set_reason(assessment.reason);
  fact.set_more_runs(assessment.more_runs);
  step->events.emplace_back(v1::JOB_EVENT_KIND_WARNING, std::move(unclear));
  step->more_runs = assessment.more_runs;
}

}  // namespace kbisect
