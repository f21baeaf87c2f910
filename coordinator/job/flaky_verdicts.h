// Copyright 2026 The kbisect Authors.
//
// The rules of a flaky pass/fail test (`--exit-code --flaky`): a test that fails only sometimes
// at BAD commits (rate p) and rarely at GOOD ones (rate q). No single result can be trusted, so
// no commit is judged on its own: the culprit posterior over every run of the job, with p and q
// estimated (PosteriorOptions::estimate_flake_rates), says where the culprit is, the next probes
// go where their results are expected to tell the most about it, and the search ends once one
// commit holds the confidence (decision 144). Pure: no I/O, no clock.
#ifndef KBISECT_COORDINATOR_JOB_FLAKY_VERDICTS_H_
#define KBISECT_COORDINATOR_JOB_FLAKY_VERDICTS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/search/bisect_search.h"
#include "common/search/culprit_posterior.h"
#include "coordinator/job/calibration.h"
#include "coordinator/job/probe_book.h"
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
// `probes` is the job's probe table.
std::vector<CommitEvidence> FlakyEvidence(const ProbeRows& probes, const Calibration& calibration);

// The posterior's options for a flaky test: the two fail rates estimated (the Beta priors of
// PosteriorOptions: q mean 5%, p uniform).
PosteriorOptions FlakyPosteriorOptions();

// --- The search by information (decision 144) ---------------------------------------------
// A flaky test's probes go where a result is expected to tell the most about the culprit
// (common/search/information_gain.h), one task of --runs runs each, and no commit is judged on
// its own: the search ends once the posterior over every run names one culprit with the
// confidence. The functions below are its rules; BisectJob applies them (flaky_probes.cc).

// `posterior` restricted to the positions (last_good, first_bad] (the marks' and the search's
// interval): probability 0 outside, renormalised inside; most_likely the likeliest inside.
CulpritPosterior WithinInterval(CulpritPosterior posterior, int last_good, int first_bad);

// The runs the search may spend past the baselines: twice max_runs per bit of the range (log2
// of n, at least 1): 1,680 over 100 commits by default. Past it, the likeliest culprit is named
// with the probability it has.
int FlakyRunBudget(int n, int max_runs);

// Up to `count` commits to run next: ChooseInformativeProbes over `posterior` (with its fail
// rates per position) given the commits `in_flight`, in [last_good, first_bad] (the ends pin the
// rates), leaving out commits that have had max_runs runs (`runs_by_index`, counting runs in
// flight).
std::vector<int> NextFlakyProbes(const CulpritPosterior& posterior,
                                 const std::vector<int>& in_flight,
                                 const std::map<int, int>& runs_by_index, int count, int last_good,
                                 int first_bad, int max_runs);

// What the search does after a result: it ends naming `culprit` when the likeliest position
// reaches the confidence, or, short of it (`short_of_confidence`), when the search's runs
// reached `run_budget` or no commit may run more and none runs (`nothing_left`); else it goes
// on (culprit -1).
struct FlakyStep {
  int culprit = -1;
  bool short_of_confidence = false;
};
FlakyStep NextFlakyStep(const CulpritPosterior& posterior, double confidence, int search_runs,
                        int run_budget, bool nothing_left);

// The posterior over every run of the job (FlakyEvidence) within the search's interval
// (WithinInterval) of `commit_count` commits; an error only for an invalid job.
absl::StatusOr<CulpritPosterior> FlakyPosteriorWithin(int commit_count, const ProbeRows& probes,
                                                      const Calibration& calibration,
                                                      const BisectSearch& search);

// The commits `count` idle workers run next (NextFlakyProbes) in a job of `commit_count` commits
// after GOOD with at most `max_runs` runs a commit: from the posterior within the search's
// interval, given the bisect tasks of `book` not done (in flight or queued), and the
// runs every commit has had (in its probe table) or will have (an untestable commit counts
// --max-runs: it is not run again).
std::vector<int> FlakyPoints(int commit_count, int max_runs, const Calibration& calibration,
                             const ProbeBook& book, const BisectSearch& search, int count);

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_FLAKY_VERDICTS_H_
