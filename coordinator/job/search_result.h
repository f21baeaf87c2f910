// Copyright 2026 The kbisect Authors.
//
// SearchResult: what a finished search says, kept as the part's own answer (SearchAnswer) and
// projected into the job's status (job_status_projection.cc). Once the search is done (before
// any confirmation) RecordInterval records the interval's ends, the candidates, the medians on
// either side of the step and what share of the whole GOOD->BAD move the step explains; once the
// job may end, Conclude names the culprit (its cause and the posterior's probability), the
// candidates, or why the answer is inconclusive, and returns the outcome the job finishes with.
// Both return the warnings they raise, which the job appends to its own; the job ends itself
// (BisectJob::Finish). It reads the job's frame (spec, shas, direction, baselines), probe rows,
// commits, calibration, verdicts and confirmation through the pointers it is given.
// Thread-compatible.
#ifndef KBISECT_COORDINATOR_JOB_SEARCH_RESULT_H_
#define KBISECT_COORDINATOR_JOB_SEARCH_RESULT_H_

#include <optional>
#include <string>
#include <vector>

#include "coordinator/job/calibration.h"
#include "coordinator/job/confirmation_stage.h"
#include "coordinator/job/job_frame.h"
#include "coordinator/job/verdict_ledger.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// What the finished search says (the JobStatus fields of the same names). Unset fields are the
// status' defaults.
struct SearchAnswer {
  std::optional<v1::CommitRef> last_good;
  std::optional<v1::CommitRef> culprit;
  std::vector<std::string> candidates;  // Shas.
  v1::Cause cause = v1::CAUSE_UNSPECIFIED;
  double before = 0;  // Last-good's median (the reference's frame).
  double after = 0;   // The culprit's median.
  double culprit_regression_pct = 0;
  std::vector<v1::Culprit> culprits;  // The one step, with its share of the whole move.
  bool multiple_steps = false;
  std::vector<std::string> measurement_changes;
  double culprit_probability = 0;
  std::vector<v1::PositionProbability> culprit_posterior;
  double good_fail_rate = 0;  // A flaky test's, with the probability.
  double bad_fail_rate = 0;
};

class SearchResult {
 public:
  // Skipped candidates above this count make the result inconclusive rather than a range.
  static constexpr int kMaxReportedCandidates = 10;
  // A culprit explaining less than this share of the GOOD->BAD move suggests several steps.
  static constexpr double kSingleStepShare = 0.6;

  // All must outlive the part; they may be constructed after it. `frame` is only read;
  // `probes` is the job's probe table (ProbeBook's).
  SearchResult(const JobFrame* frame, const ProbeRows* probes,
               const std::vector<v1::CommitRef>* commits, const Calibration* calibration,
               const VerdictLedger* ledger, const ConfirmationStage* confirmation)
      : frame_(frame),
        probes_(probes),
        commits_(commits),
        calibration_(calibration),
        ledger_(ledger),
        confirmation_(confirmation) {}

  // The answer so far: empty until RecordInterval.
  const SearchAnswer& answer() const { return answer_; }

  // The search is done: the last good commit, the candidates, the medians before and after the
  // step and its regression. With one candidate and a metric, the step as a culprit row with its
  // share of the whole move (several steps are suspected, with a warning, below
  // kSingleStepShare); a merge commit as the culprit is warned about. Returns the warnings, in
  // order.
  std::vector<v1::JobWarning> RecordInterval();

  // The confirmation measured the culprit at `ratio` times last-good's median: after (and the
  // regression) follow from it; before stays the search's median at last-good.
  void AdoptConfirmedRatio(double ratio);

  // GOOD and BAD do not differ by a step: the cause is noise (EndpointStep::Finish::cause).
  void SetCause(v1::Cause cause) { answer_.cause = cause; }

  // What the job finishes with.
  struct Conclusion {
    v1::Outcome outcome = v1::OUTCOME_UNSPECIFIED;
    std::string error;  // The sentence of an inconclusive answer; empty otherwise.
    // The warnings it raised, to append to the job's in order.
    std::vector<v1::JobWarning> warnings;
  };
  // The search's answer: one candidate is the culprit (a real regression, or a benchmark method
  // change when the benchmark's manifest changed at it, with the measurement changes and a
  // warning), up to kMaxReportedCandidates candidates are a range, more are inconclusive. A
  // culprit or a range carries the posterior's probability (none over a commit graph).
  Conclusion Conclude();

 private:
  // Sets culprit_probability (the posterior mass of the candidates) and culprit_posterior.
  void SetCulpritProbability();

  const JobFrame* const frame_;
  const ProbeRows* const probes_;
  const std::vector<v1::CommitRef>* const commits_;
  const Calibration* const calibration_;
  const VerdictLedger* const ledger_;
  const ConfirmationStage* const confirmation_;  // Its pairs count in the posterior.
  SearchAnswer answer_;
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_SEARCH_RESULT_H_
