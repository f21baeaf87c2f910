// Copyright 2026 The kbisect Authors.
//
// BisectJob, the baselines: when they are ready, the endpoint verdict (regression, none or
// swapped) from GOOD and BAD measured on the reference worker, the re-assessment when the probes
// show more noise than the baselines did, and the runs a worker's GOOD calibration needs.
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
namespace {

// The baselines are judged again when the noise seen grows past this factor of what they were
// judged with.
constexpr double kReassessGrowth = 1.5;

}  // namespace

int BisectJob::CalibrationRunsNeeded() const {
  // A calibration must tell an offset of a third of the step (an outlier) from noise, by three
  // standard errors: with the noise the job has seen far below that, fewer runs than --runs do.
  const int floor = status_.spec().runs_per_commit();
  if (pass_fail_ || status_.state() != v1::JOB_STATE_BISECTING) return floor;
  const double step =
      std::fabs(status_.baseline().bad().median() - status_.baseline().good().median());
  const double noise = calibration_.JobNoise();
  if (step == 0 || noise == 0) return floor;
  const double z = 3.0 * noise / (step / 3.0);
  // Compared before the cast, which an infinite or huge z would make undefined.
  const double runs = std::ceil(2.0 * z * z);
  if (!(runs < floor)) return floor;
  return std::clamp(static_cast<int>(runs), 1, floor);
}

bool BisectJob::BaselinesReady() const {
  for (int position : {calibration_.good_probe(), calibration_.bad_probe()}) {
    if (position < 0) return false;
    const v1::Probe& probe = book_.probe(position);
    if (probe.state() != v1::PROBE_STATE_FINISHED || !Measured(probe)) return false;
  }
  return true;
}

void BisectJob::EvaluateBaselines(absl::Time now) {
  const v1::Probe& good = book_.probe(calibration_.good_probe());
  const v1::Probe& bad = book_.probe(calibration_.bad_probe());
  if (pass_fail_ && status_.spec().flaky()) {
    EvaluateFlakyBaselines(now);
    return;
  }
  if (pass_fail_) {
    if (good.outcome() != v1::TASK_OUTCOME_PASSED) {
      Finish(v1::OUTCOME_ERROR, CheckFailsAtGoodText(good), now);
      return;
    }
    if (bad.outcome() != v1::TASK_OUTCOME_FAILED) {
      Finish(v1::OUTCOME_NO_REGRESSION, CheckPassesAtBadText(bad), now);
      return;
    }
    Emit(v1::JOB_EVENT_KIND_BASELINE, PassFailBaselineText(good.sha(), bad.sha()), nullptr, now);
    status_.set_state(v1::JOB_STATE_BISECTING);
    return;
  }
  if (status_.direction() == v1::DIRECTION_UNSPECIFIED) {
    status_.set_direction(v1::DIRECTION_LOWER_IS_BETTER);
  }
  // Calibrations that agree with the reference's GOOD sharpen it (see PooledSamples).
  assessed_noise_ = calibration_.ObservedNoise();
  const BaselineAssessment assessment = AssessBaselines(
      calibration_.PooledSamples(v1::VERDICT_GOOD), calibration_.ReferenceBadSamples(),
      status_.direction(), status_.spec().min_effect_fraction(), status_.spec().max_runs(),
      assessed_noise_);
  if (assessment.more_runs > 0) {
    Emit(v1::JOB_EVENT_KIND_WARNING, absl::StrCat("Baselines unclear: ", assessment.reason),
         nullptr, now);
    book_.Extend(calibration_.good_probe(), assessment.more_runs);
    book_.Extend(calibration_.bad_probe(), assessment.more_runs);
    return;
  }
  v1::Baseline* good_base = status_.mutable_baseline()->mutable_good();
  good_base->set_sha(good.sha());
  *good_base->mutable_samples() = good.samples();
  good_base->set_median(good.median());
  good_base->set_worker(good.worker());
  v1::Baseline* bad_base = status_.mutable_baseline()->mutable_bad();
  bad_base->set_sha(bad.sha());
  const std::vector<double> bad_samples = calibration_.ReferenceBadSamples();
  bad_base->mutable_samples()->Assign(bad_samples.begin(), bad_samples.end());
  bad_base->set_median(MedianOrZero(bad_samples));
  bad_base->set_worker(bad.worker());
  status_.set_regression_pct(assessment.regression_pct);
  for (const std::string& warning : assessment.warnings) status_.add_warnings(warning);
  Emit(v1::JOB_EVENT_KIND_BASELINE,
       BaselineText(status_, good.median(), bad.median(), assessment.regression_pct), nullptr, now);
  for (const std::string& warning : assessment.warnings) {
    Emit(v1::JOB_EVENT_KIND_WARNING, absl::StrCat("Warning: ", warning), nullptr, now);
  }
  if (assessment.improvement && !status_.spec().allow_improvement()) {
    Finish(v1::OUTCOME_ERROR, SwappedText(assessment.reason), now);
    return;
  }
  if (!assessment.regression && !assessment.improvement) {
    status_.set_cause(v1::CAUSE_NOISE);
    Finish(v1::OUTCOME_NO_REGRESSION, assessment.reason, now);
    return;
  }
  status_.set_state(v1::JOB_STATE_BISECTING);
}

void BisectJob::ReassessBaselinesIfNoisy(absl::Time now) {
  if (pass_fail_ || finished() || status_.state() != v1::JOB_STATE_BISECTING) return;
  // Baselines of few runs show little spread; the probes' samples may show more. When the noise
  // seen has grown by half since the baselines were judged, they are judged again with it, and
  // if they are no longer clearly apart they are measured again and every verdict waits.
  const double noise = calibration_.ObservedNoise();
  if (noise <= kReassessGrowth * assessed_noise_ || noise == 0) return;
  assessed_noise_ = noise;
  const BaselineAssessment assessment = AssessBaselines(
      calibration_.PooledSamples(v1::VERDICT_GOOD), calibration_.ReferenceBadSamples(),
      status_.direction(), status_.spec().min_effect_fraction(), status_.spec().max_runs(), noise);
  if (assessment.more_runs <= 0) return;
  Emit(v1::JOB_EVENT_KIND_WARNING, NoisyBaselinesText(noise, status_.metric_unit(), assessment),
       nullptr, now);
  book_.Extend(calibration_.good_probe(), assessment.more_runs);
  book_.Extend(calibration_.bad_probe(), assessment.more_runs);
  status_.set_state(v1::JOB_STATE_BASELINES);
  JudgeEveryVerdictAgain(now);
}

}  // namespace kbisect
