// Copyright 2026 The kbisect Authors.
//
// SuiteLedger: every metric of a suite (JobSpec.metric.suite) judged on the runs the job shares.
// The job's own search follows one metric, the lead; each of its runs records every metric of
// the suite (RunRecord.suite_values), so each probe row the search measured is also a
// measurement of every other metric. For each metric the ledger
//   * compares GOOD and BAD on the reference worker (the one that measured BAD) as the job
//     compares its own baselines (AssessBaselines): a metric that did not move is UNCHANGED, one
//     that got better is IMPROVED, and both cost nothing more;
//   * places its step with the posterior over the first-bad positions given every sample of it
//     (ComputeCulpritPosterior, the one-step model the job's own answer is judged by): its
//     GOOD and BAD, and every row of the range in the reference's frame (as the job's
//     calibration does, a worker whose GOOD differs from the reference's by more than noise
//     has its samples scaled by the ratio of the GOOD medians; the others share the frame; a
//     worker without its own GOOD gives nothing);
//   * with the job's confidence (0.99 by default) on one commit, the metric has its CULPRIT
//     (found by this job's probes); otherwise it is SEARCHING over the smallest range that
//     leaves out at most 1e-5 of the probability on either side. Once the lead's search has its
//     answer the job probes those ranges itself (PlanSuiteProbes), on the calibration it
//     already has; a range it cannot narrow is left to a suite follow-up
//     (coordinator/follow_ups.h), which searches it with a metric of its own as the lead.
// Pure: it reads the job's frame and commits and owns the suite's rows (the job's status shows
// them, job_status_projection.cc). Thread-compatible.
#ifndef KBISECT_COORDINATOR_JOB_SUITE_LEDGER_H_
#define KBISECT_COORDINATOR_JOB_SUITE_LEDGER_H_

#include <string>
#include <vector>

#include "coordinator/job/job_frame.h"
#include "coordinator/job/probe_book.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// A suite's follow-ups (coordinator/follow_ups.h) are started up to this depth. Each one's range
// is narrower than its parent's, or its metrics fewer, so the chain ends anyway.
inline constexpr int kMaxSuiteFollowUpDepth = 8;

// True when a job of `spec` that finished with `outcome` hands its suite's SEARCHING rows to
// follow-ups: its search found its culprit, or its lead did not move; and the depth allows
// another level.
bool SuiteFollowsUp(v1::Outcome outcome, const v1::JobSpec& spec);

// The metrics of a suite of the job `frame` judged on its probe rows `probes` over `commits`
// (index 0 = GOOD, last = BAD), one row per metric of `metrics` in their order (only those of
// the spec's members, when it names some). A metric whose GOOD or BAD the reference worker has not
// measured yet is UNSPECIFIED; one whose GOOD and BAD are too close to tell is UNRESOLVED, and
// `more_baseline_runs` (when not null) is set to the most runs of each baseline such a metric
// asks for (AssessBaselines; 0 when none does). Once the job is finished, a row still SEARCHING
// that no follow-up will search (SuiteFollowsUp) is UNRESOLVED, saying where its step lies. Pure.
std::vector<v1::SuiteMetricResult> JudgeSuite(const JobFrame& frame, const ProbeRows& probes,
                                              const std::vector<v1::CommitRef>& commits,
                                              const std::vector<v1::SuiteMetricInfo>& metrics,
                                              int* more_baseline_runs = nullptr);

// The commits a suite's own probes (PROBE_KIND_SUITE) measure next, at most `workers`, once the
// lead's search has its answer (decision 223). The ranges of the SEARCHING rows of `rows` (each
// range once, widest first, none with a suite probe of `probes` pending or running inside it)
// share the workers in turn. A range of more than one untested commit is split evenly by its
// share, each point moved to the nearest commit inside it that does not already hold `max_runs`
// samples of the row's metric and was not measured without one (a failed build, a run without
// the metric); one that holds more finished suite probes strictly inside than ceil(log2 of its
// width) did not narrow as a step would and is left to a follow-up. A range of two neighbours (the
// posterior is still short of the confidence) has the one of them with fewer samples of the metric
// measured again, until both hold `max_runs`. Empty when no range can be narrowed that way. Pure.
std::vector<int> PlanSuiteProbes(const std::vector<v1::SuiteMetricResult>& rows,
                                 const ProbeRows& probes, int workers, int max_runs);

// Makes `result` (of a task that measured one commit) a measurement of the suite's metric
// `lead`: each run's value becomes the lead's from its suite values (a run without one has none),
// the samples and the metric's name, unit and direction follow. A task handed out before the job
// knew its lead may have led with another metric (the first its runs printed). No run with the
// lead's value: TASK_OUTCOME_METRIC_MISSING, saying so. Does nothing when the result already
// leads with `lead`, or is not a success.
void ProjectOnLead(const std::string& lead, v1::TaskResult* result);

class SuiteLedger {
 public:
  // All must outlive the ledger; `probes` is the job's probe table (ProbeBook's).
  SuiteLedger(const JobFrame* frame, const ProbeRows* probes,
              const std::vector<v1::CommitRef>* commits)
      : frame_(frame), probes_(probes), commits_(commits) {}

  // True when the job bisects a suite.
  bool active() const { return !frame_->spec.metric().suite().empty(); }

  // Records the metrics `result`'s runs carry (TaskResult.suite_metrics), in the order first
  // seen. Does nothing without a suite.
  void Learn(const v1::TaskResult& result);

  // Judges every metric again on the job's probe rows (JudgeSuite) into its rows. Does nothing
  // without a suite.
  void Judge();

  // The suite's rows as last judged, one per metric in output order (JobStatus.suite); empty
  // without a suite or before the first Judge.
  const std::vector<v1::SuiteMetricResult>& rows() const { return rows_; }

  // After Judge: the runs of each baseline (on the reference worker) that would tell the metrics
  // too close to tell at the baselines apart, 0 when none is (the adaptive repeats, per metric,
  // on the runs every metric shares).
  int more_baseline_runs() const { return more_baseline_runs_; }

 private:
  const JobFrame* const frame_;
  const ProbeRows* const probes_;
  const std::vector<v1::CommitRef>* const commits_;
  std::vector<v1::SuiteMetricInfo> metrics_;
  std::vector<v1::SuiteMetricResult> rows_;
  int more_baseline_runs_ = 0;
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_SUITE_LEDGER_H_
