// Copyright 2026 The kbisect Authors.
//
// EndpointVerdict judges a job's two ends: whether BAD differs from GOOD by a step worth
// bisecting (a regression, none, or swapped endpoints), from the reference GOOD and the BAD
// baseline in the reference's frame (the rules are AssessBaselines in probe_classifier.h).
//
// It decides when the baselines are ready, defers a verdict measured across two GPUs that
// found no step until BAD's worker has measured GOOD too, settles a provisional verdict once
// it has, and judges the baselines again when the probes show more noise than they were judged
// with. It reads the job's frame and never writes it; it never ends the job, emits an event
// nor creates a task: each call returns an EndpointStep that the job follows
// (BisectJob::FollowEndpoint), the baselines to record in the frame among them. A flaky pass/fail
// test's endpoints (--flaky) are judged by their fail rates (decision 144).
#ifndef KBISECT_COORDINATOR_JOB_ENDPOINT_VERDICT_H_
#define KBISECT_COORDINATOR_JOB_ENDPOINT_VERDICT_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/job/calibration.h"
#include "coordinator/job/job_frame.h"
#include "coordinator/job/probe_book.h"
#include "coordinator/job/probe_classifier.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// What the job does after a call, in this order: record `record`, `direction` and `warnings`,
// emit `events`, give both baselines
// `more_runs` more runs (WorkerStanding::ExtendBaselines), or only one of them more runs on its own
// worker (a flaky test's), enter `state`, judge every verdict again, end the job with `finish`.
// Each part is optional.
struct EndpointStep {
  // The baselines as judged, for the job's frame.
  std::optional<RecordedBaselines> record;
  // The direction the metric is judged in, when the verdict had to assume one.
  std::optional<v1::Direction> direction;
  // The assessment's warnings, for the job's status (their events are in `events` too).
  std::vector<v1::JobWarning> warnings;
  // Each event carries its fact only (JobEventLog::Emit stamps the rest).
  std::vector<std::pair<v1::JobEventKind, v1::JobEvent>> events;
  int more_runs = 0;
  int more_good_runs = 0;
  int more_bad_runs = 0;
  std::optional<v1::JobState> state;
  bool judge_every_verdict_again = false;
  struct Finish {
    v1::Outcome outcome = v1::OUTCOME_UNSPECIFIED;
    std::string error;
    // CAUSE_NOISE when GOOD and BAD do not differ by a step (the job's answer records it even
    // when a suite's baselines still run); CAUSE_UNSPECIFIED otherwise.
    v1::Cause cause = v1::CAUSE_UNSPECIFIED;
  };
  std::optional<Finish> finish;
};

class EndpointVerdict {
 public:
  // `frame` (spec, state, direction, unit, the baselines recorded), `calibration` and `book`
  // must outlive this. `pass_fail`: the ends are judged by exit codes.
  EndpointVerdict(const JobFrame* frame, const Calibration* calibration, const ProbeBook* book,
                  bool pass_fail);

  EndpointVerdict(const EndpointVerdict&) = delete;
  EndpointVerdict& operator=(const EndpointVerdict&) = delete;

  // True when the reference GOOD and the BAD baseline are measured (and a deferred verdict's
  // BAD worker has measured GOOD).
  bool Ready() const;

  // The endpoint verdict once Ready(): with GOOD and BAD on one GPU it is final; across two
  // GPUs a step found is provisional (the baselines record it), and no step found waits for
  // BAD's worker's GOOD (nothing to do yet). Unclear baselines get more runs. A pass/fail test:
  // GOOD must pass and BAD fail; a flaky one: BAD runs until it fails once (up to --max-runs,
  // else nothing to bisect), and GOOD may fail, but not in most of its runs.
  EndpointStep Evaluate();

  // A provisional verdict, once BAD's worker's GOOD is the reference and the search runs:
  // judged again on one GPU. The step gone ends the job; unclear baselines get more runs while
  // every verdict waits; else the baselines are recorded in the new frame, and every verdict is
  // judged again when the stand-in GPU had an offset.
  EndpointStep Settle();

  // While the search runs: when the noise the probes show has grown past what the baselines
  // were judged with and they are no longer clearly apart, they get more runs, and every
  // verdict waits for them. Otherwise nothing.
  EndpointStep ReassessIfNoisy();

 private:
  // The baselines' assessment in the reference's frame with the noise they are judged with.
  BaselineAssessment Assess() const;
  // True when `assessment` leaves something to bisect.
  bool StepFound(const BaselineAssessment& assessment) const;
  // True for a try job (JobSpec.try_change): its endpoints are the base and the changed base,
  // measured against each other whatever the baselines show; the confirmation's pairs answer.
  bool TryJob() const;
  // The reference GOOD and BAD (in the reference's frame) to record as the job's baselines.
  RecordedBaselines Record(const BaselineAssessment& assessment) const;
  // The frame's direction, or lower-is-better when nothing has named one.
  v1::Direction Direction() const;
  // The BASELINE event of the baselines just recorded; `across_gpus`: GOOD and BAD ran on two
  // GPUs, and the verdicts count once BAD's worker has measured GOOD.
  v1::JobEvent MeasuredBaseline(const BaselineAssessment& assessment, bool across_gpus) const;
  // Ends the job when `assessment` shows no step or swapped endpoints; returns true then.
  bool FinishIfNoStep(const BaselineAssessment& assessment, EndpointStep* step);
  // Unclear baselines: says so and asks for assessment.more_runs more runs of each.
  static void MeasureAgain(const BaselineAssessment& assessment, EndpointStep* step);
  EndpointStep EvaluatePassFail() const;
  EndpointStep EvaluateFlaky() const;

  const JobFrame* frame_;
  const Calibration* calibration_;
  const ProbeBook* book_;
  bool pass_fail_;
  double assessed_noise_ = 0;  // The noise floor the baselines were last judged with.
  // An endpoint verdict across two GPUs found no step: it waits for BAD's worker's GOOD.
  bool deferred_ = false;
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_ENDPOINT_VERDICT_H_
