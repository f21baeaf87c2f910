// Copyright 2026 The kbisect Authors.
#include "coordinator/job/flaky_verdicts.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include "common/search/information_gain.h"

namespace kbisect {
namespace {

// Exit codes of git bisect run's contract: 0 good, 125 untestable, 1..127 otherwise bad.
constexpr int kSkipExitCode = 125;
constexpr int kMaxBadExitCode = 127;

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

std::vector<CommitEvidence> FlakyEvidence(const ProbeRows& probes, const Calibration& calibration) {
  std::vector<CommitEvidence> evidence;
  for (const v1::Probe& probe : probes) {
    if (!IsMeasuredRow(probe)) continue;
    if (calibration.Quarantined(probe.worker())) continue;
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

CulpritPosterior WithinInterval(CulpritPosterior posterior, int last_good, int first_bad) {
  double inside = 0;
  for (int k = 0; k <= posterior.n; ++k) {
    if (k <= last_good || k > first_bad) posterior.probability[k] = 0;
    inside += posterior.probability[k];
  }
  const int low = std::clamp(last_good + 1, 1, std::max(1, posterior.n));
  const int high = std::clamp(first_bad, low, std::max(1, posterior.n));
  if (inside <= 0) {  // Nothing left inside: uniform over the interval.
    for (int k = low; k <= high; ++k) posterior.probability[k] = 1.0 / (high - low + 1);
    inside = 1;
  }
  int best = low;
  for (int k = low; k <= high; ++k) {
    posterior.probability[k] /= inside;
    if (posterior.probability[k] > posterior.probability[best]) best = k;
  }
  posterior.most_likely = best;
  return posterior;
}

int FlakyRunBudget(int n, int max_runs) {
  const int bits = std::max(1, static_cast<int>(std::ceil(std::log2(std::max(2, n)))));
  return 2 * std::max(1, max_runs) * bits;
}

std::vector<int> NextFlakyProbes(const CulpritPosterior& posterior,
                                 const std::vector<int>& in_flight,
                                 const std::map<int, int>& runs_by_index, int count, int last_good,
                                 int first_bad, int max_runs) {
  const PositionRates rates =
      posterior.good_fail_rate_at.empty()
          ? ConstantRates(posterior.n, {posterior.good_fail_rate, posterior.bad_fail_rate})
          : PositionRates{posterior.good_fail_rate_at, posterior.bad_fail_rate_at};
  std::vector<int> capped;
  for (const auto& [index, runs] : runs_by_index) {
    if (runs >= max_runs) capped.push_back(index);
  }
  // The interval's ends are candidates too: their runs pin the fail rates, which the positions
  // inside are judged by.
  return ChooseInformativeProbes(posterior.probability, rates, in_flight, count, last_good,
                                 first_bad, capped);
}

FlakyStep NextFlakyStep(const CulpritPosterior& posterior, double confidence, int search_runs,
                        int run_budget, bool nothing_left) {
  FlakyStep step;
  const int best = posterior.most_likely;
  if (best >= 1 && best <= posterior.n && posterior.probability[best] >= confidence) {
    step.culprit = best;
    return step;
  }
  if (search_runs >= run_budget || nothing_left) {
    step.culprit = best;
    step.short_of_confidence = true;
  }
  return step;
}

absl::StatusOr<CulpritPosterior> FlakyPosteriorWithin(int commit_count, const ProbeRows& probes,
                                                      const Calibration& calibration,
                                                      const BisectSearch& search) {
  absl::StatusOr<CulpritPosterior> posterior = ComputeCulpritPosterior(
      commit_count, FlakyEvidence(probes, calibration), FlakyPosteriorOptions());
  if (!posterior.ok()) return posterior;
  return WithinInterval(*std::move(posterior), search.last_good(), search.first_bad());
}

std::vector<int> FlakyPoints(int commit_count, int max_runs, const Calibration& calibration,
                             const ProbeBook& book, const BisectSearch& search, int count) {
  if (count <= 0) return {};
  const absl::StatusOr<CulpritPosterior> posterior =
      FlakyPosteriorWithin(commit_count, book.rows(), calibration, search);
  if (!posterior.ok()) return {};
  std::vector<int> in_flight;
  std::map<int, int> runs;  // Runs of each commit, those in flight or queued included.
  for (const auto& [id, entry] : book.tasks()) {
    if (entry.done || entry.task.kind() != v1::PROBE_KIND_BISECT) continue;
    in_flight.push_back(entry.task.commit_index());
    runs[entry.task.commit_index()] += std::max(1, entry.task.runs());
  }
  for (const v1::Probe& probe : book.rows()) {
    if (probe.kind() != v1::PROBE_KIND_BISECT || probe.state() != v1::PROBE_STATE_FINISHED) {
      continue;
    }
    // An untestable commit (exit 125) is not run again.
    runs[probe.index()] += probe.verdict() == v1::VERDICT_SKIP ? max_runs : CountRuns(probe).runs();
  }
  return NextFlakyProbes(*posterior, in_flight, runs, count, search.last_good(), search.first_bad(),
                         max_runs);
}

}  // namespace kbisect
