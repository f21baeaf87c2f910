// Copyright 2026 The kbisect Authors.
#include "coordinator/job/flaky_verdicts.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/text/count.h"

namespace kbisect {
namespace {

// Exit codes of git bisect run's contract: 0 good, 125 untestable, 1..127 otherwise bad.
constexpr int kSkipExitCode = 125;
constexpr int kMaxBadExitCode = 127;

// Rates are kept this far from 0 and 1 when the runs a side needs are estimated.
constexpr double kRateFloor = 0.005;

double Odds(double probability) {
  probability = std::clamp(probability, 1e-300, 1 - 1e-16);
  return probability / (1 - probability);
}

// Runs that bring the odds "BAD : GOOD" of a commit from `bad_probability` to those of `goal`
// (a bad probability), with fail rates q at GOOD and p at BAD commits. Toward GOOD every pass
// multiplies the odds by (1 - p) / (1 - q); toward BAD every failure by p / q, and a BAD commit
// fails once in 1 / p runs.
int RunsToReach(double bad_probability, double goal, double p, double q) {
  p = std::clamp(p, kRateFloor, 1 - kRateFloor);
  q = std::clamp(q, kRateFloor, 1 - kRateFloor);
  const double distance = std::fabs(std::log(Odds(bad_probability) / Odds(goal)));
  if (p <= q) return 1 << 20;  // The results cannot tell the sides apart: as many as allowed.
  if (goal < bad_probability) {
    return static_cast<int>(std::ceil(distance / std::log((1 - q) / (1 - p))));
  }
  const double failures = std::ceil(distance / std::log(p / q));
  return static_cast<int>(std::ceil(failures / p));
}

bool IsMeasuredRow(const v1::Probe& probe) {
  return probe.state() != v1::PROBE_STATE_CANCELLED && probe.kind() != v1::PROBE_KIND_CONFIRM &&
         probe.kind() != v1::PROBE_KIND_BUILD;
}

}  // namespace

RunCounts CountRuns(const v1::Probe& probe) {
  RunCounts counts;
  for (const v1::RunRecord& run : probe.runs()) {
    if (run.exit_code() == 0) {
      ++counts.passes;
    } else if (run.exit_code() != kSkipExitCode && run.exit_code() <= kMaxBadExitCode &&
               run.exit_code() > 0) {
      ++counts.failures;
    }
  }
  return counts;
}

std::vector<CommitEvidence> FlakyEvidence(const v1::JobStatus& status,
                                          const Calibration& calibration) {
  std::vector<CommitEvidence> evidence;
  for (const v1::Probe& probe : status.probes()) {
    if (!IsMeasuredRow(probe)) continue;
    const Calibration::Worker* worker = calibration.Find(probe.worker());
    if (worker != nullptr && worker->quarantined) continue;
    const RunCounts counts = CountRuns(probe);
    if (counts.runs() == 0) continue;
    CommitEvidence e;
    e.index = probe.index();
    e.passes = counts.passes;
    e.failures = counts.failures;
    evidence.push_back(std::move(e));
  }
  return evidence;
}

PosteriorOptions FlakyPosteriorOptions() {
  PosteriorOptions options;
  options.estimate_flake_rates = true;
  return options;
}

FlakyJudgement JudgeFlakyCommit(const CulpritPosterior& posterior, int index, int runs,
                                const FlakyOptions& options) {
  FlakyJudgement judgement;
  double bad = 0;
  for (int k = 1; k <= std::min(index, posterior.n); ++k) bad += posterior.probability[k];
  judgement.bad_probability = bad;
  const double doubt = (1 - options.confidence) / 2;
  const std::string rates = absl::StrFormat(
      "P(bad) = %.4f with fail rates %.0f%% at BAD and %.1f%% at GOOD commits estimated", bad,
      100 * posterior.bad_fail_rate, 100 * posterior.good_fail_rate);
  if (bad >= 1 - doubt) {
    judgement.verdict = v1::VERDICT_BAD;
    judgement.reason = rates;
    return judgement;
  }
  if (bad <= doubt) {
    judgement.verdict = v1::VERDICT_GOOD;
    judgement.reason = rates;
    return judgement;
  }
  const int left = options.max_runs - runs;
  if (left <= 0) {
    // Its runs still count in the posterior, so the more likely side steers the search (a skip
    // would send it to the neighbours, as hard to judge), and the end check weighs the doubt.
    judgement.verdict = bad >= 0.5 ? v1::VERDICT_BAD : v1::VERDICT_GOOD;
    judgement.reason = absl::StrCat("still unclear after ", Count(runs, "run"), ", taken as ",
                                    bad >= 0.5 ? "BAD" : "GOOD", ", the more likely: ", rates);
    return judgement;
  }
  const double goal = bad < 0.5 ? doubt : 1 - doubt;
  const int needed = RunsToReach(bad, goal, posterior.bad_fail_rate, posterior.good_fail_rate);
  judgement.more_runs = std::clamp(needed, std::min(options.min_runs, left), left);
  judgement.reason = absl::StrCat("unclear: ", rates, "; ", judgement.more_runs, " more runs");
  return judgement;
}

int FlakyGoodRunsWanted(const RunCounts& bad, int min_runs, int max_runs) {
  const double p = (bad.failures + 1.0) / (bad.runs() + 2.0);
  const double wanted = std::ceil(kFlakyGoodPinFailures / p);
  return std::clamp(wanted < max_runs ? static_cast<int>(wanted) : max_runs,
                    std::min(min_runs, max_runs), max_runs);
}

FlakyCulpritCheck CheckFlakyCulprit(const CulpritPosterior& posterior, int last_good, int first_bad,
                                    int last_good_runs, int first_bad_runs,
                                    const FlakyOptions& options) {
  FlakyCulpritCheck check;
  if (first_bad < 1 || first_bad > posterior.n) return check;
  check.probability = posterior.probability[first_bad];
  if (check.probability >= options.confidence) return check;
  double below = 0;  // P(first bad commit < first_bad): last_good is BAD.
  for (int k = 1; k < first_bad; ++k) below += posterior.probability[k];
  const double above = std::max(0.0, 1 - below - check.probability);
  const double doubt = (1 - options.confidence) / 2;
  // The side with the more doubt first; the other when that one has run all it may.
  struct Side {
    double doubt;
    int index;
    int runs;
    double goal;
    double bad_probability;
  };
  Side sides[2] = {{below, last_good, last_good_runs, doubt, below},
                   {above, first_bad, first_bad_runs, 1 - doubt, 1 - above}};
  if (sides[1].doubt > sides[0].doubt) std::swap(sides[0], sides[1]);
  for (const Side& side : sides) {
    // An endpoint carries no doubt of its own (the first bad commit is in 1..n).
    if (side.doubt <= 0 || side.index <= 0 || side.index >= posterior.n) continue;
    const int left = options.max_runs - side.runs;
    if (left <= 0) continue;
    const int needed = RunsToReach(side.bad_probability, side.goal, posterior.bad_fail_rate,
                                   posterior.good_fail_rate);
    check.remeasure = side.index;
    check.more_runs = std::clamp(needed, std::min(options.min_runs, left), left);
    return check;
  }
  return check;
}

}  // namespace kbisect
