// Copyright 2026 The kbisect Authors.
//
// `--confidence P`: the search does not end before the culprit posterior (culprit_posterior.h)
// puts at least P on the culprit it named, or its boundary commits have run all they may. The
// rules are pure (no I/O, no clock); CulpritConfidence (culprit_confidence.h) applies them to a
// metric's job, BisectJob to a flaky pass/fail test (flaky_probes.cc, whose re-run sizes are its
// own).
//
// Once the search has narrowed to one culprit c (its parent in the range: last good l), the doubt
// 1 - P(c) splits into "the first bad commit is below c" (l is BAD after all: l's samples are the
// evidence against it) and "above c" (c is GOOD: c's are), so the commit holding the larger part
// runs again; when its samples now put it on the other side its verdict is taken back and the
// search goes on from there, so an early wrong turn is repaired where it shows.
#ifndef KBISECT_COORDINATOR_JOB_CONFIDENCE_STOP_H_
#define KBISECT_COORDINATOR_JOB_CONFIDENCE_STOP_H_

#include <vector>

#include "common/search/culprit_posterior.h"
#include "coordinator/job/calibration.h"
#include "coordinator/job/probe_book.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// Every measurement of the job by commit, in the reference worker's frame, for the culprit
// posterior: the samples of each finished row of `probes` (not provisional, not of a quarantined
// worker), those of a worker with an offset scaled as its verdicts are
// (Calibration::InReferenceFrame), the BAD baseline as the verdicts saw it, and the fresh pairs
// of `confirmation` (as last_good and first_bad). Pass/fail jobs give each probe's result. (A flaky
// test's: FlakyEvidence.)
std::vector<CommitEvidence> PosteriorEvidence(const ProbeRows& probes,
                                              const v1::Confirmation& confirmation,
                                              const Calibration& calibration, bool pass_fail,
                                              int last_good, int first_bad);

// P(first bad commit <= index): the probability that commit `index` is BAD.
double BadProbability(const CulpritPosterior& posterior, int index);

// The row of `probes` that is the finished bisect probe of commit `index` carrying `verdict`
// (the latest), or -1.
int DecidingProbe(const ProbeRows& probes, int index, v1::Verdict verdict);

struct ConfidenceCheck {
  // P(first bad commit = first_bad).
  double probability = 0;
  // The commit to measure again (last_good or first_bad), -1 when the confidence is reached or
  // neither can run more.
  int remeasure = -1;
  int more_runs = 0;
};

// The end check of a metric's bisect: `last_good_runs` and `first_bad_runs` are the runs of the
// probes that decided the two commits (an endpoint or a marked commit: max_runs, it has none to
// extend). The commit with the larger share of the doubt runs again, as many runs again as it
// has (at least min_runs), never past max_runs; the other when that one is at max_runs.
ConfidenceCheck CheckConfidence(const CulpritPosterior& posterior, int last_good, int first_bad,
                                int last_good_runs, int first_bad_runs, double confidence,
                                int min_runs, int max_runs);

// What a commit measured again says now: its verdict (GOOD or BAD) stands unless the posterior
// puts it on the other side with probability above one half; returns the side it is on.
v1::Verdict RemeasuredSide(const CulpritPosterior& posterior, int index, v1::Verdict verdict);

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_CONFIDENCE_STOP_H_
