// Copyright 2026 The kbisect Authors.
//
// SearchResult: what a finished search says, written into the job's status. Once the search is
// done (before any confirmation) RecordInterval writes the interval's ends, the candidates, the
// medians on either side of the step and what share of the whole GOOD->BAD move the step
// explains; once the job may end, Conclude names the culprit (its cause and the posterior's
// probability), the candidates, or why the answer is inconclusive, and returns the outcome the
// job finishes with. It reads the job's commits, calibration and verdicts through the pointers
// it is given, as the job's other parts do; the job ends itself (BisectJob::Finish).
// Thread-compatible.
#ifndef KBISECT_COORDINATOR_JOB_SEARCH_RESULT_H_
#define KBISECT_COORDINATOR_JOB_SEARCH_RESULT_H_

#include <string>
#include <vector>

#include "coordinator/job/calibration.h"
#include "coordinator/job/confirmation_stage.h"
#include "coordinator/job/verdict_ledger.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

class SearchResult {
 public:
  // Skipped candidates above this count make the result inconclusive rather than a range.
  static constexpr int kMaxReportedCandidates = 10;
  // A culprit explaining less than this share of the GOOD->BAD move suggests several steps.
  static constexpr double kSingleStepShare = 0.6;

  // All must outlive the part; they may be constructed after it.
  SearchResult(v1::JobStatus* status, const std::vector<v1::CommitRef>* commits,
               const Calibration* calibration, const VerdictLedger* ledger,
               const ConfirmationStage* confirmation)
      : status_(status),
        commits_(commits),
        calibration_(calibration),
        ledger_(ledger),
        confirmation_(confirmation) {}

  // The search is done: the last good commit, the candidates, the medians before and after the
  // step and its regression. With one candidate and a metric, the step as a culprit row with its
  // share of the whole move (several steps are suspected, with a warning, below
  // kSingleStepShare); a merge commit as the culprit is warned about.
  void RecordInterval();

  // What the job finishes with.
  struct Conclusion {
    v1::Outcome outcome = v1::OUTCOME_UNSPECIFIED;
    std::string error;  // The sentence of an inconclusive answer; empty otherwise.
  };
  // The search's answer: one candidate is the culprit (a real regression, or a benchmark method
  // change when the benchmark's manifest changed at it, with the measurement changes and a
  // warning), up to kMaxReportedCandidates candidates are a range, more are inconclusive. A
  // culprit or a range carries the posterior's probability (none over a commit graph).
  Conclusion Conclude();

 private:
  // Sets culprit_probability (the posterior mass of the candidates) and culprit_posterior.
  void SetCulpritProbability();

  v1::JobStatus* const status_;
  const std::vector<v1::CommitRef>* const commits_;
  const Calibration* const calibration_;
  const VerdictLedger* const ledger_;
  const ConfirmationStage* const confirmation_;  // Its pairs count in the posterior.
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_SEARCH_RESULT_H_
