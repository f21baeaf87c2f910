// Copyright 2026 The kbisect Authors.
//
// The verdict rules of a flaky pass/fail test (`--exit-code --flaky`): a test that fails only
// sometimes at BAD commits (rate p) and rarely at GOOD ones (rate q). No single result can be
// trusted, so a commit is judged by the culprit posterior over every run of the job with p and
// q estimated (PosteriorOptions::estimate_flake_rates): the commit is BAD once the posterior puts
// the first bad commit at or below it with probability at least 1 - (1 - confidence) / 2, GOOD
// once above it with that probability, and otherwise it runs again. When the search has
// narrowed to one culprit, the culprit's own probability must reach the confidence; if it does
// not, the boundary commit that leaves the more doubt runs again. Pure: no I/O, no clock.
#ifndef KBISECT_COORDINATOR_JOB_FLAKY_VERDICTS_H_
#define KBISECT_COORDINATOR_JOB_FLAKY_VERDICTS_H_

#include <string>
#include <vector>

#include "common/search/culprit_posterior.h"
#include "coordinator/job/calibration.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// A probe's runs as passes and failures: exit code 0 passes, 1..127 fails (125, untestable, and
// runs without an exit code count neither). The worker stops a task at its first failure; the
// likelihood does not depend on that stopping rule.
struct RunCounts {
  int passes = 0;
  int failures = 0;
  int runs() const { return passes + failures; }
};
RunCounts CountRuns(const v1::Probe& probe);

// Every run of the job by commit: the baselines, calibrations and bisect probes (those still
// measuring too: the runs they have), not cancelled ones nor those of quarantined workers.
std::vector<CommitEvidence> FlakyEvidence(const v1::JobStatus& status,
                                          const Calibration& calibration);

// The posterior's options for a flaky test: the two fail rates estimated (the Beta priors of
// PosteriorOptions: q mean 5%, p uniform).
PosteriorOptions FlakyPosteriorOptions();

struct FlakyOptions {
  // The culprit probability to reach (JobSpec.confidence).
  double confidence = 0.99;
  // Runs of a commit's first task; the fewest runs asked for at once.
  int min_runs = 4;
  // Most runs of one commit.
  int max_runs = 120;
};

// A commit's verdict, or how many more runs it needs.
struct FlakyJudgement {
  // GOOD, BAD, AMBIGUOUS (max_runs reached, still unclear), or UNSPECIFIED with more_runs.
  v1::Verdict verdict = v1::VERDICT_UNSPECIFIED;
  int more_runs = 0;
  // P(first bad commit <= index): the probability that the commit is BAD.
  double bad_probability = 0;
  std::string reason;
};

// Judges commit `index` (0 < index < n), measured `runs` times so far, under `posterior`. More
// runs: as many passes as would bring the doubt to the target at the estimated rates (a BAD
// commit will likely fail before that), at least min_runs, never past max_runs.
FlakyJudgement JudgeFlakyCommit(const CulpritPosterior& posterior, int index, int runs,
                                const FlakyOptions& options);

// Runs the GOOD endpoint needs before the search starts, given BAD's runs so far: as many as a
// BAD commit fails in about kFlakyGoodPinFailures times at BAD's estimated rate p, (failures + 1)
// / (runs + 2), at least min_runs, at most max_runs. GOOD's runs are what pins the fail rate at
// GOOD commits q: with few of them "this commit is GOOD and GOOD fails 30% of the time" explains
// a BAD commit's failures nearly as well as "it is BAD", and the commit stays unclear however
// long it runs.
inline constexpr double kFlakyGoodPinFailures = 10;
int FlakyGoodRunsWanted(const RunCounts& bad, int min_runs, int max_runs);

// The end check once the search named `first_bad` (its parent in the range is `last_good`).
struct FlakyCulpritCheck {
  // P(first bad commit = first_bad).
  double probability = 0;
  // The commit to measure again (last_good or first_bad), -1 when the confidence is reached or
  // neither can run more (both at max_runs).
  int remeasure = -1;
  int more_runs = 0;
};

// The doubt splits into "the first bad commit is below first_bad" (last_good is BAD after all:
// its passes are the evidence against) and "above it" (first_bad is GOOD: its failures are),
// so the larger part's commit runs again, as many runs as JudgeFlakyCommit would ask.
FlakyCulpritCheck CheckFlakyCulprit(const CulpritPosterior& posterior, int last_good, int first_bad,
                                    int last_good_runs, int first_bad_runs,
                                    const FlakyOptions& options);

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_FLAKY_VERDICTS_H_
