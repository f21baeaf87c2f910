// Copyright 2026 The kbisect Authors.
//
// The words of a bisect job: every sentence a user reads in its events, warnings, errors and
// drift details is written here, from the facts the job's decisions return (numbers, shas,
// enums). BisectJob decides; this file says it. Event messages travel to clients over WatchJob
// as they are, so `kbisect watch` on any machine prints the same lines as `kbisect run`; the
// report layer (cli/report/) words the final result from the structured status.
#ifndef KBISECT_COORDINATOR_JOB_JOB_TEXT_H_
#define KBISECT_COORDINATOR_JOB_JOB_TEXT_H_

#include <string>
#include <vector>

#include "coordinator/job/calibration.h"
#include "coordinator/job/probe_classifier.h"
#include "coordinator/job/result_reuse.h"
#include "kbisect/v1/kbisect.pb.h"
#include "report/words.h"

namespace kbisect {

// The first 7 characters of a sha.

// A metric value with the job's unit, "%.4g" (e.g. "1.52ms").
std::string FormatMetricValue(double value, const std::string& unit);

// The STARTED event.
std::string StartedText(const std::string& good_sha, const std::string& bad_sha, int commits,
                        int serial_steps);

// The warning of a culprit that changed how the benchmark measures (`changes`, one sentence
// each: JobStatus.measurement_changes).
std::string MethodChangeText(const google::protobuf::RepeatedPtrField<std::string>& changes);

// The BASELINE event: pass/fail, or both medians and the regression.
std::string PassFailBaselineText(const std::string& good_sha, const std::string& bad_sha);
// A flaky test's endpoints (--flaky): how often each failed.
std::string FlakyBaselineText(const std::string& good_sha, int good_failures, int good_runs,
                              const std::string& bad_sha, int bad_failures, int bad_runs);
// A flaky test that never failed at BAD in `runs` runs, or failed at GOOD in most runs.
std::string FlakyPassesAtBadText(const v1::Probe& bad, int runs);
std::string FlakyFailsAtGoodText(const v1::Probe& good, int failures, int runs);
// A culprit short of the confidence (--confidence): `sha` runs again.
std::string ConfidenceRemeasureText(double probability, double confidence, const std::string& sha,
                                    int runs);
// A commit measured again for the confidence now looks like the other side (`bad`: BAD), with
// P(BAD) = `bad_probability`: its verdict is taken back.
std::string ConfidenceRetractText(const std::string& sha, bool bad, double bad_probability);
// The search ends short of the confidence: both boundary commits ran --max-runs.
std::string ShortOfConfidenceText(double probability, double confidence, int max_runs);
std::string BaselineText(const v1::JobStatus& status, double good_median, double bad_median,
                         double regression_pct);

// A failure at a baseline ends the job: `good` says which one.
std::string BaselineFailedText(bool good, const v1::Probe& probe, const v1::TaskResult& result);
std::string BaselineGaveUpText(bool good, const std::string& why);
std::string CheckFailsAtGoodText(const v1::Probe& good);
std::string CheckPassesAtBadText(const v1::Probe& bad);
// The endpoints look swapped and --allow-improvement was not given.
std::string SwappedText(const std::string& reason);
// The endpoint verdict across two GPUs: provisional until BAD's worker has measured GOOD.
std::string ProvisionalEndpointText(const std::string& bad_worker, const std::string& good_worker);
// The endpoint verdict once BAD's worker measured GOOD too (it replaces `stand_in`'s GOOD).
std::string SettledEndpointText(const v1::JobStatus& status, const std::string& stand_in,
                                double regression_pct);

// The reason recorded with a quarantine (DriftEvent.detail), from the decision's facts.
std::string QuarantineReasonText(const QuarantineDecision& decision, const std::string& unit);
std::string QuarantinedWarningText(const std::string& worker, const std::string& reason);
std::string QuarantinedEventText(const std::string& worker, const std::string& reason);
std::string EveryWorkerQuarantinedText();
std::string MustCalibrateAgainText(const std::string& worker, const std::string& why);

// BAD's worker turned out to have an offset: BAD is taken as `bad_median` in the reference's
// frame.
std::string BadWorkerOffsetText(const std::string& worker, double offset_fraction,
                                double bad_median, const std::string& unit);
std::string BadRemeasuredText(const std::string& why);
std::string ReferenceMovesText(const std::string& from, const std::string& to);

// A verdict that contradicts earlier ones (non-monotone measurements).
std::string ContradictionText(const std::string& sha, v1::Verdict verdict);

// The PROBE_FINISHED line, "Step N/M: sha metric -> VERDICT (...)".
struct ProbeLine {
  int step = 0;
  int steps_estimated = 0;
  int commits_left = 0;
  int in_flight = 0;
};
std::string ProbeFinishedText(const v1::Probe& probe, const v1::JobStatus& status, bool pass_fail,
                              const ProbeLine& line);
std::string ProbeCancelledText(const std::string& sha);

// A flaky test's probe (the search by information, decision 144): "Step 12: 1a2b3c4 failed 1
// of 2 runs; likeliest culprit 5d6e7f8 at 43.0%".
std::string FlakyRunText(int step, const std::string& sha, int failures, int runs,
                         const std::string& likeliest_sha, double likeliest_probability);

// Warnings attached to a found culprit.
std::string MultipleStepsText(double share, bool all_culprits, const std::string& first_bad,
                              const std::string& bad, const std::string& good,
                              const std::string& last_good);
std::string MergeCulpritText(const std::string& culprit, bool descend_merges);

// The confirmation: started, judged, and when the step did not reproduce.
// `tasks` fresh tasks of `pairs_per_task` pairs, besides `reused_pairs` from the search's probes
// and `speculative_pairs` measured during its last round (decision 46).
std::string ConfirmingText(const std::string& last_good, const std::string& culprit, int tasks,
                           int pairs_per_task, int reused_pairs, int speculative_pairs);
// Why a confirmation task measured ahead is cancelled: its commit is not the culprit, or the
// confirmation needs no fresh pair.
std::string SpeculationNotTheCulpritText();
std::string SpeculationNotNeededText();
std::string ConfirmationVerdictText(const ConfirmationJudgement& judgement,
                                    const std::vector<std::string>& workers, int fresh_pairs,
                                    int reused_pairs);
std::string ConfirmationFailedText(const std::string& message);
// A confirmation started beside the last calibrations is cancelled: they moved the culprit.
std::string ConfirmationRestartText();
// A worker measured a commit it has cached: its cached results are reused, or refused.
std::string CacheCheckText(const ResultReuse::Check& check, const std::string& sha,
                           const std::string& unit);
// The probes show more noise than the baselines were judged with: they are measured again.
std::string NoisyBaselinesText(double noise, const std::string& unit,
                               const BaselineAssessment& assessment);
std::string ConfirmedText(const std::string& verdict);
std::string UnconfirmedText(const std::string& culprit, const std::string& last_good,
                            const std::string& verdict);

// Too many untestable commits border the culprit.
std::string InconclusiveText(int untested, const std::string& last_good,
                             const std::string& first_bad);

// The warning on benchmark runs the GPU slowed down (GpuState.throttled: a hardware slowdown
// seen during the run, or a thermal or power limit read after it): how many, which reasons,
// and how many were discarded and run again.
std::string ThrottledText(int throttled, int discarded, const std::vector<std::string>& reasons);

// The warning on runs kept although the driver capped the GPU's clocks during them
// (sw_power_cap, sw_thermal_slowdown without a hardware slowdown): flagged, not re-run.
std::string CappedText(int capped, const std::vector<std::string>& reasons);

// The warning on runs that shared their GPU with other compute processes (`processes`: "pid 4242
// python3 (12034 MiB)").
std::string ForeignProcessesText(int runs, const std::vector<std::string>& processes);

// The FINISHED event's line.
std::string FinishedText(const v1::JobStatus& status, const std::string& error);

// Messages on probe rows.
std::string LostWithWorkerText(const std::string& why);
std::string AttemptLostText(int attempt, const std::string& why);
std::string GaveUpText(int attempts, const std::string& why);
std::string DiscardedText(const std::string& why);
std::string OutsideIntervalText();
std::string CancelledText(const std::string& reason);

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_JOB_TEXT_H_
