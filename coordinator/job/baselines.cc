// Copyright 2026 The kbisect Authors.
//
// BisectJob, the baselines: who holds the reference GOOD (BAD's worker, or a stand-in measured
// beside BAD until BAD's worker's own GOOD takes the role back), when they are ready, the
// endpoint verdict (regression, none or swapped) from GOOD and BAD, the re-assessment when the
// probes show more noise than the baselines did, and the runs a worker's GOOD calibration needs.
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

bool BisectJob::AdoptBadWorkersReference(int calibration) {
  const v1::Probe& probe = book_.probe(calibration);
  const std::string bad_worker = calibration_.BadWorker();
  if (pass_fail_ || probe.kind() != v1::PROBE_KIND_BASELINE_GOOD || probe.worker() != bad_worker ||
      calibration_.reference_worker() == bad_worker || !Measured(probe) ||
      calibration_.worker(bad_worker).calibration != calibration) {
    return false;
  }
  calibration_.SetReference(bad_worker, calibration);
  calibration_.set_bad_offset_checked(true);
  return true;
}

bool BisectJob::ReferenceNotStarted() const {
  const int good = calibration_.good_probe();
  if (good < 0) return false;
  const v1::Probe& probe = book_.probe(good);
  return probe.state() == v1::PROBE_STATE_PENDING && !probe.has_start_time() &&
         probe.worker().empty();
}

int BisectJob::CalibrationRunsNeeded() const {
  // A calibration must tell an offset of a third of the step (an outlier) from noise, by three
  // standard errors: with the noise the job has seen far below that, fewer runs than --runs do.
  // The step is known once the baselines are settled, while the search runs and while the
  // confirmation does (the calibrations still owed run beside it).
  const int floor = status_.spec().runs_per_commit();
  if (pass_fail_ ||
      (status_.state() != v1::JOB_STATE_BISECTING && status_.state() != v1::JOB_STATE_CONFIRMING)) {
    return floor;
  }
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
  // An endpoint verdict across two GPUs that found no step waits for BAD's worker's GOOD.
  if (endpoint_deferred_ && !calibration_.EndpointsOnOneGpu()) return false;
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
  const BaselineAssessment assessment = AssessEndpoints();
  // GOOD and BAD measured on two GPUs (the reference GOOD was measured beside BAD) may differ by
  // the GPUs' offset: a step between them steers the search provisionally, but only BAD's worker
  // measuring GOOD too can say there is none, that they look swapped, or that they are unclear.
  const bool across_gpus = !calibration_.EndpointsOnOneGpu();
  if (across_gpus && !StepFound(assessment)) {
    endpoint_deferred_ = true;
    return;
  }
  if (assessment.more_runs > 0) {
    MeasureBaselinesAgain(assessment, now);
    return;
  }
  RecordBaselines(assessment);
  for (const std::string& warning : assessment.warnings) status_.add_warnings(warning);
  std::string text = BaselineText(status_, good.median(), bad.median(), assessment.regression_pct);
  if (across_gpus)
    absl::StrAppend(&text, "\n", ProvisionalEndpointText(bad.worker(), good.worker()));
  Emit(v1::JOB_EVENT_KIND_BASELINE, text, nullptr, now);
  for (const std::string& warning : assessment.warnings) {
    Emit(v1::JOB_EVENT_KIND_WARNING, absl::StrCat("Warning: ", warning), nullptr, now);
  }
  if (FinishIfNoStep(assessment, now)) return;
  status_.set_state(v1::JOB_STATE_BISECTING);
}

BaselineAssessment BisectJob::AssessEndpoints() const {
  return AssessBaselines(calibration_.PooledSamples(v1::VERDICT_GOOD),
                         calibration_.ReferenceBadSamples(), status_.direction(),
                         status_.spec().min_effect_fraction(), status_.spec().max_runs(),
                         assessed_noise_);
}

bool BisectJob::StepFound(const BaselineAssessment& assessment) const {
  return assessment.more_runs == 0 &&
         (assessment.regression || (assessment.improvement && status_.spec().allow_improvement()));
}

bool BisectJob::FinishIfNoStep(const BaselineAssessment& assessment, absl::Time now) {
  if (assessment.improvement && !status_.spec().allow_improvement()) {
    Finish(v1::OUTCOME_ERROR, SwappedText(assessment.reason), now);
    return true;
  }
  if (!assessment.regression && !assessment.improvement) {
    status_.set_cause(v1::CAUSE_NOISE);
    Finish(v1::OUTCOME_NO_REGRESSION, assessment.reason, now);
    return true;
  }
  return false;
}

void BisectJob::MeasureBaselinesAgain(const BaselineAssessment& assessment, absl::Time now) {
  Emit(v1::JOB_EVENT_KIND_WARNING, absl::StrCat("Baselines unclear: ", assessment.reason), nullptr,
       now);
  ExtendBaselines(assessment.more_runs, now);
}

void BisectJob::ExtendBaselines(int runs, absl::Time now) {
  // A baseline whose worker left cannot get more runs there (a task pinned to it would wait for
  // ever): the reference moves to another calibrated worker, whose GOOD gets them, and BAD is
  // measured again by any worker.
  const Calibration::Worker* reference = calibration_.Find(calibration_.reference_worker());
  if (reference != nullptr && reference->gone) calibration_.ResetReference();
  if (calibration_.good_probe() >= 0) book_.Extend(calibration_.good_probe(), runs);
  const std::string bad_worker = calibration_.BadWorker();
  const Calibration::Worker* bad = calibration_.Find(bad_worker);
  if (bad != nullptr && bad->gone) {
    RemeasureBad(absl::StrCat("its worker ", bad_worker, " left before it could measure more"),
                 now);
  } else {
    book_.Extend(calibration_.bad_probe(), runs);
  }
}

void BisectJob::RecordBaselines(const BaselineAssessment& assessment) {
  const v1::Probe& good = book_.probe(calibration_.good_probe());
  const v1::Probe& bad = book_.probe(calibration_.bad_probe());
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
  status_.mutable_baseline()->set_provisional(!calibration_.EndpointsOnOneGpu());
  status_.set_regression_pct(assessment.regression_pct);
}

void BisectJob::SettleEndpoint(absl::Time now) {
  // BAD's worker's GOOD is the reference now: the step is judged again on one GPU, whose
  // offset cancels, and every verdict judged in the stand-in's frame is judged in this one.
  const std::string stand_in = status_.baseline().good().worker();
  assessed_noise_ = calibration_.ObservedNoise();
  const BaselineAssessment assessment = AssessEndpoints();
  if (assessment.more_runs > 0) {
    MeasureBaselinesAgain(assessment, now);
    status_.set_state(v1::JOB_STATE_BASELINES);
    JudgeEveryVerdictAgain(now);
    return;
  }
  RecordBaselines(assessment);
  Emit(v1::JOB_EVENT_KIND_BASELINE,
       SettledEndpointText(status_, stand_in, assessment.regression_pct), nullptr, now);
  if (FinishIfNoStep(assessment, now)) return;
  // Verdicts of the stand-in's frame: with an offset between the two GPUs they are all judged
  // again; without one, each provisional verdict settles against the new pool as it would
  // have (SettleProvisional).
  if (calibration_.HasOffset(stand_in)) JudgeEveryVerdictAgain(now);
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
  ExtendBaselines(assessment.more_runs, now);
  status_.set_state(v1::JOB_STATE_BASELINES);
  JudgeEveryVerdictAgain(now);
}

}  // namespace kbisect
