// Copyright 2026 The kbisect Authors.
#include "coordinator/job/confirmation.h"

#include <algorithm>
#include <cmath>

namespace kbisect {
int ConfirmationSet::pairs() const {
  return static_cast<int>(std::min(last_good.size(), culprit.size()));
}

int ConfirmationPairsNeeded(double sigma, double step, int runs_floor, int max_runs) {
  const int floor = std::max(1, runs_floor);
  const int cap = std::max(floor, max_runs);
  if (step == 0) return cap;
  // The ratio's standard error with k pairs: efficiency * sigma * sqrt(2 / k), relative to the
  // step; k such that the step is kConfirmationZ of them.
  const double noise = kMedianEfficiency * std::fabs(sigma) / std::fabs(step);
  const double wanted = 2.0 * std::pow(kConfirmationZ * noise, 2);
  // Compared before the cast, which an infinite or NaN ratio (sigma or step out of range) would
  // make undefined.
  if (!(wanted - 1e-9 < cap)) return cap;
  const int needed = static_cast<int>(std::ceil(wanted - 1e-9));
  return std::clamp(needed, floor, cap);
}

double TryDetectableFraction(double min_effect_fraction) {
  return std::max(kTryDetectableEffect, min_effect_fraction);
}

double TryDetectableStep(double step, double good, double min_effect_fraction) {
  const double smallest = TryDetectableFraction(min_effect_fraction) * std::fabs(good);
  if (std::fabs(step) >= smallest) return step;
  return step < 0 ? -smallest : smallest;
}

double LeastNamedStep(bool is_try, double min_effect_fraction) {
  if (is_try) return 0.5 * TryDetectableFraction(min_effect_fraction);
  return MinimumConfirmedStep(min_effect_fraction);
}

ConfirmationPlan PlanConfirmation(int needed, int reused, double sigma, double step, int workers) {
  ConfirmationPlan plan;
  plan.reused_pairs = std::max(0, reused);
  const bool negligible =
      step != 0 && std::fabs(sigma) <= kNegligibleNoiseFraction * std::fabs(step);
  int fresh = std::max(0, needed - plan.reused_pairs);
  if (fresh == 0 && !negligible) fresh = 1;
  if (fresh == 0) return plan;
  plan.tasks = std::clamp(workers, 1, fresh);
  plan.pairs_per_task = (fresh + plan.tasks - 1) / plan.tasks;
  return plan;
}

std::vector<int> SpeculationCandidates(const BisectSearch& search,
                                       const std::set<int>& speculated) {
  std::vector<int> candidates;
  if (search.Done() || !search.PlanProbes(1).empty()) return candidates;
  for (int c = search.first_bad(); c > search.last_good(); --c) {
    if (speculated.count(c) == 0) candidates.push_back(c);
  }
  return candidates;
}

std::vector<SpeculationCandidate> ChooseSpeculation(std::vector<SpeculationCandidate> candidates,
                                                    int spare) {
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const SpeculationCandidate& a, const SpeculationCandidate& b) {
                     return a.pairs_needed < b.pairs_needed;
                   });
  std::vector<SpeculationCandidate> chosen;
  for (const SpeculationCandidate& candidate : candidates) {
    if (candidate.pairs_needed <= 0 || candidate.pairs_needed > spare) continue;
    spare -= candidate.pairs_needed;
    chosen.push_back(candidate);
  }
  return chosen;
}

ConfirmationPlan LessSpeculativePairs(const ConfirmationPlan& plan, int speculative_pairs) {
  ConfirmationPlan rest = plan;
  const int fresh = plan.tasks * plan.pairs_per_task - std::max(0, speculative_pairs);
  if (fresh <= 0) {
    rest.tasks = 0;
    rest.pairs_per_task = 0;
    return rest;
  }
  rest.tasks = std::clamp(plan.tasks, 1, fresh);
  rest.pairs_per_task = (fresh + rest.tasks - 1) / rest.tasks;
  return rest;
}

namespace {

// Every set's samples divided by its own last-good median, pooled; only interleaved sets when
// `interleaved_only`.
ConfirmationJudgement JudgeNormalised(const std::vector<ConfirmationSet>& sets, bool worse_is_up,
                                      bool interleaved_only) {
  std::vector<double> last_good;
  std::vector<double> culprit;
  for (const ConfirmationSet& set : sets) {
    if (set.last_good.empty() || set.culprit.empty()) continue;
    if (interleaved_only && !set.interleaved) continue;
    const double scale = MedianOrZero(set.last_good);
    if (scale == 0) continue;
    for (double v : set.last_good) last_good.push_back(v / scale);
    for (double v : set.culprit) culprit.push_back(v / scale);
  }
  return JudgeConfirmation(last_good, culprit, worse_is_up);
}

}  // namespace

ConfirmationJudgement JudgeConfirmationSets(const std::vector<ConfirmationSet>& sets,
                                            bool worse_is_up, double min_step) {
  ConfirmationJudgement pooled = JudgeNormalised(sets, worse_is_up, /*interleaved_only=*/false);
  if (pooled.confirmed && std::fabs(pooled.ratio - 1) < min_step) {
    pooled.confirmed = false;
    pooled.below_minimum = true;
    return pooled;
  }
  const bool any_interleaved = std::any_of(sets.begin(), sets.end(), [](const ConfirmationSet& s) {
    return s.interleaved && s.pairs() > 0;
  });
  if (!pooled.confirmed || !any_interleaved) return pooled;
  // Reused samples cannot confirm a step that the fresh interleaved pairs do not show: their
  // own ratio must lie on the regression's side by at least half the pooled step.
  const ConfirmationJudgement fresh = JudgeNormalised(sets, worse_is_up, /*interleaved_only=*/true);
  const double pooled_step = pooled.ratio - 1;
  const double fresh_step = fresh.ratio - 1;
  pooled.confirmed = fresh.measured && fresh_step * pooled_step > 0 &&
                     std::fabs(fresh_step) >= 0.5 * std::fabs(pooled_step);
  return pooled;
}

}  // namespace kbisect
