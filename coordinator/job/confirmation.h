// Copyright 2026 The kbisect Authors.
//
// The confirmation of a culprit: last-good and culprit measured again, each pair on one worker
// so that the worker's offset cancels, as cheaply as the evidence allows. Pure: the plan and the
// judgement are functions of samples; BisectJob creates the tasks and applies the result.
//
// Sized by the evidence, not by constants: the pairs needed follow from the job's observed
// noise against the step (ConfirmationPairsNeeded); samples the search already has for the two
// commits count when one worker measured both (a reused set); the fresh interleaved pairs
// (A/B/A/B in one task) are spread over the job's workers, one task each, so the confirmation
// costs about one probe round rather than a dozen serial runs.
#ifndef KBISECT_COORDINATOR_JOB_CONFIRMATION_H_
#define KBISECT_COORDINATOR_JOB_CONFIRMATION_H_

#include <set>
#include <string>
#include <vector>

#include "common/search/bisect_search.h"
#include "coordinator/job/probe_classifier.h"

namespace kbisect {

// Noise (the pooled spread of the baselines) below this fraction of the step is negligible: the
// search's own same-worker samples of the two commits can confirm the step without a fresh
// measurement.
inline constexpr double kNegligibleNoiseFraction = 0.02;

// How far the 95% interval of the ratio must be from "no step", in standard errors of the
// ratio, for the pairs planned (the confirmation is sized to reach it).
inline constexpr double kConfirmationZ = 4.0;

// The samples of last-good and culprit one worker measured: in one confirmation task
// (interleaved), or in the search (the probes that decided the two commits, or the baselines).
struct ConfirmationSet {
  std::string worker;
  std::vector<double> last_good;
  std::vector<double> culprit;
  bool interleaved = false;
  // Set when an earlier job measured both commits on this worker (the result cache): its id.
  std::string cached_job_id;
  // Set when another worker measured `culprit`: `worker` measured `last_good`, and the two
  // measure GOOD exactly alike (decision 232).
  std::string culprit_worker;
  // Pairs the set contributes: min(last_good.size(), culprit.size()).
  int pairs() const;
};

// Pairs (last-good, culprit) the confirmation needs for its interval to exclude "no step" by
// kConfirmationZ standard errors when the noise is `sigma` and the step `step` (both in the
// metric's unit; the median's efficiency counted): at least `runs_floor` (the user's --runs), at
// most `max_runs`.
int ConfirmationPairsNeeded(double sigma, double step, int runs_floor, int max_runs);

// A try job (JobSpec.try_change) sizes its pairs to see a change of this fraction of the base,
// or of --min-effect when that is larger.
inline constexpr double kTryDetectableEffect = 0.02;

// The smallest change a try job reports, as a fraction of the base: kTryDetectableEffect, or
// `min_effect_fraction` (--min-effect) when larger. Pure.
double TryDetectableFraction(double min_effect_fraction);

// The step a try job's pairs are sized for: the baselines' `step` (BAD - GOOD), or, when it is
// smaller, TryDetectableFraction of the base's median `good`, with the step's sign. Pure.
double TryDetectableStep(double step, double good, double min_effect_fraction);

// The least confirmed step a job names, as a fraction (JudgeConfirmationSets' `min_step`): half
// the smallest change it reports. For a bisect that is MinimumConfirmedStep (half of 1%, or of
// --min-effect when larger); for a try job (`is_try`) half of TryDetectableFraction, since a try
// is asked whether the change matters and its pairs are sized for that change. Pure.
double LeastNamedStep(bool is_try, double min_effect_fraction);

// The fresh interleaved measurement to run: `tasks` tasks of `pairs_per_task` pairs each.
struct ConfirmationPlan {
  int tasks = 0;
  int pairs_per_task = 0;
  int reused_pairs = 0;
};

// Plans the fresh pairs: the needed pairs less the `reused` ones (none when the noise is
// negligible and the reused pairs suffice; otherwise at least one fresh pair, so the step is
// reproduced interleaved), spread over up to `workers` tasks.
ConfirmationPlan PlanConfirmation(int needed, int reused, double sigma, double step, int workers);

// Speculative confirmation (decision 46): in the search's last round the workers that have
// nothing to probe measure confirmation pairs for the commits that may turn out to be the
// culprit, so that the confirmation does not add a measurement span after the search.
//
// The candidates to measure ahead: only when no point is left to place (every commit of the
// open interval is decided or in flight) and the search is not done. Each commit c of
// (last_good, first_bad] may then be the culprit, with c - 1 its last-good; returns those not in
// `speculated`, first_bad first (the culprit if every probe in flight comes back GOOD), then
// downwards.
std::vector<int> SpeculationCandidates(const BisectSearch& search, const std::set<int>& speculated);

// A possible culprit and the fresh pairs its confirmation would still need if it were the one
// (PlanConfirmation with the same-worker samples it would have).
struct SpeculationCandidate {
  int culprit = 0;
  int pairs_needed = 0;
};

// Which candidates get their pairs measured ahead with `spare` one-pair tasks: the cheapest
// first (ties in the order given), each only when all its pairs fit, since a confirmation that
// still lacks one pair takes a measurement span after the search all the same. Candidates that
// need no pair are left out.
std::vector<SpeculationCandidate> ChooseSpeculation(std::vector<SpeculationCandidate> candidates,
                                                    int spare);

// `plan` less `speculative_pairs` fresh pairs of the culprit already measured or running: the
// fresh pairs still to queue, over at most plan.tasks tasks (none when those cover the plan).
ConfirmationPlan LessSpeculativePairs(const ConfirmationPlan& plan, int speculative_pairs);

// Judges every set together: each set's samples are divided by its own last-good median, so
// that each worker's offset cancels, and the pooled ratios are judged by JudgeConfirmation (its
// medians are then relative to last-good: 1 and the ratio). When interleaved sets exist, the
// step must show in them too (their ratio on the regression's side by at least half the pooled
// step): reused samples alone cannot confirm a step a fresh measurement does not reproduce.
// A step under `min_step` (a fraction, MinimumConfirmedStep) is not confirmed even when its
// interval excludes 1 (below_minimum): x1.001 over 57 pairs is the residue of a drifting
// machine, not a regression (issue 46).
ConfirmationJudgement JudgeConfirmationSets(const std::vector<ConfirmationSet>& sets,
                                            bool worse_is_up, double min_step);

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_CONFIRMATION_H_
