// Copyright 2026 The kbisect Authors.
//
// Accuracy of the verdict logic under synthetic noise, with no git and no processes: the real
// BisectJob (baselines, statistical classifier, adaptive repeats, k-ary search) is driven with
// simulated benchmark samples, side by side with two fixed rules over the same BisectSearch:
//   * seed:      3 runs per commit, median, the 30% threshold rule (the manual procedure);
//   * fixed-10:  10 runs per commit, median, the same threshold (Pinpoint-style fixed repeats);
// and Pinpoint's own procedure (RunPinpoint): adjacent changes compared by min(KS, Mann-Whitney
// U) p-value against its low and high thresholds, attempts doubled 10 -> 20 -> 40 -> 80 -> 160
// while undecided, the midpoint of every pair that differs explored.
// Prints, per noise model, effect size and worker count: exact-culprit accuracy, mean bench runs
// per bisect and mean rounds; then the calibration of kbisect's culprit_probability (how often
// the named culprit is right, by the probability reported). Nothing is asserted;
// docs/benchmarks.md quotes the tables.
//
// The kbisect column runs with the job's defaults (since decision 138: the confidence stop at
// 0.99). With --confidence P|off, a further column: kbisect with --confidence P, or with the stop
// off (the default before decision 138), drawn from its own random stream so the other columns
// are those of a run without it, with its own calibration rows.
//
// Then the flaky pass/fail cells (--exit-code --flaky against plain --exit-code and git bisect's
// one run per commit): fail rates 10-50% at BAD commits, 0-5% at GOOD ones.
//
//   build/bin/accuracy_bench [--trials 1000] [--commits 100] [--seed 1]
//   build/bin/accuracy_bench --noise 'gauss cv=5' --effects 0.05 --confidence off [--max-runs 60]
//   build/bin/accuracy_bench --flaky-only [--flaky-trials 200] [--workers 1,4]
//                            [--flaky-bad 0.3 --flaky-good 0.01]
// ACCURACY_DEBUG=1 prints every job that missed, with its probes.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "bench/noise_models.h"
#include "common/search/bisect_search.h"
#include "common/spec/job_spec.h"
#include "common/stats/stats.h"
#include "coordinator/job/bisect_job.h"
#include "coordinator/job/probe_classifier.h"
#include "report/words.h"

namespace kbisect {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

struct Outcome {
  bool exact = false;
  int bench_runs = 0;
  int rounds = 0;
  bool named = false;      // kbisect: a culprit was named (OUTCOME_CULPRIT_FOUND).
  double probability = 0;  // kbisect: its culprit_probability.
};

std::vector<v1::CommitRef> Commits(int n) {
  std::vector<v1::CommitRef> commits(n + 1);
  for (int i = 0; i <= n; ++i) {
    commits[i].set_sha(absl::StrFormat("%040d", i));
    commits[i].set_index(i);
  }
  return commits;
}

// Runs `job` in synchronous rounds of up to `workers` tasks, at most `max_rounds`, each task's
// result from `result_of` (tasks cancelled earlier in the round get none), until it finishes or
// hands out nothing.
void RunSynchronousRounds(BisectJob* job, int workers, int max_rounds,
                          const std::function<v1::TaskResult(const v1::Task&)>& result_of) {
  for (int round = 0; round < max_rounds && !job->finished(); ++round) {
    std::vector<v1::Task> tasks = job->TakeTasks(workers, kNow);
    if (tasks.empty()) break;
    std::vector<std::string> cancelled;
    for (const v1::Task& task : tasks) {
      if (std::find(cancelled.begin(), cancelled.end(), task.task_id()) != cancelled.end()) {
        continue;
      }
      for (const std::string& id : job->OnTaskFinished(task.task_id(), result_of(task), kNow)) {
        cancelled.push_back(id);
      }
    }
  }
}

// kbisect's full verdict logic, synchronous rounds of `workers` tasks.
Outcome RunKbisect(int n, int culprit, double effect, int workers, const NoiseModel& noise,
                   std::mt19937_64& rng, double confidence = 0, int max_runs = 0) {
  v1::JobSpec spec;
  // 0: the job's default (0.99); below 0: --confidence off.
  spec.set_confidence(std::max(confidence, 0.0));
  spec.set_confidence_off(confidence < 0);
  spec.set_max_runs(max_runs);  // 0: the job's default (60 with a confidence, 30 without).
  spec.set_repository("/sim");
  spec.set_good("g");
  spec.add_bench_command("bench");
  spec.set_direction(v1::DIRECTION_LOWER_IS_BETTER);
  BisectJob job("sim", spec, Commits(n), kNow);
  RunSynchronousRounds(&job, workers, 10000, [&](const v1::Task& task) {
    v1::TaskResult result;
    result.set_outcome(v1::TASK_OUTCOME_SUCCEEDED);
    const double value = task.commit_index() >= culprit ? 1.0 + effect : 1.0;
    for (int r = 0; r < task.runs(); ++r) {
      const double sample = noise.sample(value, rng);
      result.add_samples(sample);
      result.add_runs()->set_value(sample);
    }
    return result;
  });
  const v1::JobStatus& status = job.status();
  if (std::getenv("ACCURACY_DEBUG") != nullptr &&
      !(status.status() == v1::OUTCOME_CULPRIT_FOUND && status.culprit().index() == culprit)) {
    int ambiguous = 0;
    int max_samples = 0;
    for (const auto& p : status.probes()) {
      ambiguous += p.verdict() == v1::VERDICT_AMBIGUOUS;
      max_samples = std::max(max_samples, p.samples_size());
    }
    std::fprintf(
        stderr,
        "miss: conf=%g status=%d culprit=%d found=%d cands=%d ambiguous=%d base=%d max=%d\n",
        confidence, status.status(), culprit, status.culprit().index(), status.candidates_size(),
        ambiguous, status.baseline().good().samples_size(), max_samples);
    std::fprintf(
        stderr, "  p=%.4f warnings=%d %s\n", status.culprit_probability(), status.warnings_size(),
        status.warnings_size() > 0 ? status.warnings(status.warnings_size() - 1).c_str() : "");
    for (const v1::Probe& p : status.probes()) {
      std::fprintf(stderr, "  %s index=%d truth=%s verdict=%s runs=%d median=%.4f worker=%s %s\n",
                   v1::ProbeKind_Name(p.kind()).c_str(), p.index(),
                   p.index() >= culprit ? "BAD" : "GOOD",
                   VerdictWord(p.verdict(), WordCase::kUpper).c_str(), p.samples_size(), p.median(),
                   p.worker().c_str(), p.message().c_str());
    }
  }
  Outcome out;
  out.exact = status.status() == v1::OUTCOME_CULPRIT_FOUND && status.culprit().index() == culprit;
  out.bench_runs = status.bench_runs();
  out.rounds = status.rounds();
  out.named = status.status() == v1::OUTCOME_CULPRIT_FOUND;
  out.probability = status.culprit_probability();
  return out;
}

// A fixed number of runs per commit, median, threshold rule; synchronous k-ary rounds.
Outcome RunFixed(int n, int culprit, double effect, int workers, int runs, const NoiseModel& noise,
                 std::mt19937_64& rng) {
  auto measure = [&](int index) {
    std::vector<double> samples;
    for (int r = 0; r < runs; ++r) {
      samples.push_back(noise.sample(index >= culprit ? 1.0 + effect : 1.0, rng));
    }
    return samples;
  };
  Outcome out;
  const std::vector<double> good = measure(0);
  const std::vector<double> bad = measure(n);
  out.bench_runs = 2 * runs;
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  const double g = median(good);
  const double b = median(bad);
  if (b <= g) return out;  // The fixed rule would stop here (swapped or no regression).
  BisectSearch search(n);
  while (!search.Done()) {
    std::vector<int> probes = search.NextProbes(workers);
    if (probes.empty()) break;
    ++out.rounds;
    for (int index : probes) {
      const std::vector<double> samples = measure(index);
      out.bench_runs += runs;
      const v1::Verdict verdict = ClassifyByThreshold(samples, g, b, 0.3);
      (void)search.Record(index, verdict == v1::VERDICT_BAD ? v1::VERDICT_BAD : v1::VERDICT_GOOD);
    }
  }
  const std::vector<int> candidates = search.Candidates();
  out.exact = candidates.size() == 1 && candidates[0] == culprit;
  return out;
}

// --- Pinpoint ------------------------------------------------------------------------------------
// Catapult's Pinpoint (dashboard/pinpoint/models): compare/compare.py, compare/thresholds.py,
// compare/thresholds_performance.py, job_state.py and exploration.py, as of 2023.

constexpr int kPinpointMinAttempts = 10;        // job_state.MIN_ATTEMPTS
constexpr int kPinpointMaxAttempts = 160;       // job_state.MAX_ATTEMPTS
constexpr int kPinpointMaxBuilds = 60;          // job_state.MAX_BUILDS: more changes fail the job.
constexpr double kPinpointLowThreshold = 0.01;  // thresholds.LowThreshold()
// Normal quantile distance of the interquartile range, in standard deviations.
constexpr double kStddevsPerIqr = 1.3489795;

enum class Comparison { kSame, kDifferent, kUnknown };

// thresholds.HighThreshold(mode="performance", magnitude, sample_size). Pinpoint tabulates, per
// distance d in 0.3..4.0 IQRs, the 99th percentile of the two-sided Mann-Whitney p-value of two
// normal samples d IQRs apart at each sample size up to a maximum per distance (the
// DISTANCES_AND_SAMPLE_SIZES of thresholds_performance.py); the row is picked by
// int(magnitude * 10) - 5, clamped, and sizes past the row's end use its last value. The table is
// regenerated here by the same simulation (kSimulations draws per cell instead of a million; the
// normal approximation of the test, as the table's scipy had), memoised per cell.
class PinpointThresholds {
 public:
  double High(double magnitude, int sample_size) {
    const int row = std::clamp(static_cast<int>(magnitude * 10) - 5, 0, 37);
    const int size = std::clamp(sample_size, 1, MaxSampleSize(row));
    const auto key = std::make_pair(row, size);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    const double distance = (0.3 + 0.1 * row) * kStddevsPerIqr;
    std::mt19937_64 rng(1000 * row + size);
    std::normal_distribution<double> normal(0, 1);
    std::vector<double> p_values;
    std::vector<double> a(size);
    std::vector<double> b(size);
    for (int s = 0; s < kSimulations; ++s) {
      for (int i = 0; i < size; ++i) {
        a[i] = normal(rng);
        b[i] = distance + normal(rng);
      }
      const auto mw = MannWhitneyU(a, b, PValueMethod::kAsymptotic);
      p_values.push_back(mw.ok() ? mw->p_value : 1);
    }
    std::sort(p_values.begin(), p_values.end());
    const double threshold = p_values[static_cast<size_t>(0.99 * (kSimulations - 1))];
    cache_[key] = threshold;
    return threshold;
  }

 private:
  static constexpr int kSimulations = 4000;
  // The largest sample size tabulated for row (distance 0.3 + 0.1 row).
  static int MaxSampleSize(int row) {
    static const int kSizes[] = {360, 240, 120, 90, 70, 50, 40, 35, 25, 25, 20, 20, 15, 15, 15, 15};
    return row < static_cast<int>(std::size(kSizes)) ? kSizes[row] : 10;
  }
  std::map<std::pair<int, int>, double> cache_;
};

double Iqr(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto quantile = [&](double q) {
    const double position = q * (v.size() - 1);
    const size_t low = static_cast<size_t>(position);
    const size_t high = std::min(low + 1, v.size() - 1);
    return v[low] + (position - low) * (v[high] - v[low]);
  };
  return quantile(0.75) - quantile(0.25);
}

// compare.Compare with job_state._Compare's performance branch: an improvement (lower is better
// here) is SAME; otherwise p = min(KS, Mann-Whitney U) against the low threshold (0.01: DIFFERENT
// at or below) and the high threshold (SAME above), UNKNOWN between. The magnitude is the
// expected regression (the alert's, here the true step) in IQRs of the noisier sample.
Comparison PinpointCompare(const std::vector<double>& a, const std::vector<double>& b,
                           double expected_delta, PinpointThresholds& thresholds) {
  const double mean_a = std::accumulate(a.begin(), a.end(), 0.0) / a.size();
  const double mean_b = std::accumulate(b.begin(), b.end(), 0.0) / b.size();
  if (mean_b - mean_a < 0) return Comparison::kSame;
  const double max_iqr = std::max({Iqr(a), Iqr(b), 0.001});
  const double magnitude = std::fabs(expected_delta / max_iqr);
  const int sample_count = static_cast<int>((a.size() + b.size()) / 2);
  const double high = thresholds.High(magnitude, sample_count);
  const auto ks = KolmogorovSmirnov(a, b);
  const auto mw = MannWhitneyU(a, b, PValueMethod::kAsymptotic);
  const double p = std::min(ks.ok() ? ks->p_value : 1, mw.ok() ? mw->p_value : 1);
  if (p <= kPinpointLowThreshold) return Comparison::kDifferent;
  if (p <= high) return Comparison::kUnknown;
  return Comparison::kSame;
}

// Pinpoint's bisection (job_state.Explore with exploration.Speculate), in synchronous rounds:
// GOOD and BAD get 10 attempts each; each round compares every adjacent pair of changes: an
// UNKNOWN pair doubles the attempts of its side with fewer (both when equal) up to 160, a
// DIFFERENT pair gets its midpoints (a binary infix traversal `levels` deep: 1, 3, 7 points),
// each with 10 attempts; it ends when a round adds nothing. Pinpoint has no worker count; the W
// of the table sets the speculation depth, floor(log2(W + 1)) (1 at W=1, its default). Exact when
// the only DIFFERENT adjacent pair at the end is (culprit - 1, culprit); more than 60 changes
// fail the job.
Outcome RunPinpoint(int n, int culprit, double effect, int workers, const NoiseModel& noise,
                    PinpointThresholds& thresholds, std::mt19937_64& rng) {
  Outcome out;
  std::map<int, std::vector<double>> samples;
  auto attempts = [&](int index, int count) {
    std::vector<double>& s = samples[index];
    for (int r = 0; r < count; ++r) {
      s.push_back(noise.sample(index >= culprit ? 1.0 + effect : 1.0, rng));
    }
    out.bench_runs += count;
  };
  attempts(0, kPinpointMinAttempts);
  attempts(n, kPinpointMinAttempts);
  int levels = 0;
  while ((2 << levels) - 1 <= workers) ++levels;  // 2^levels - 1 <= W.
  levels = std::max(levels, 1);
  std::vector<std::pair<int, int>> differences;
  for (;;) {
    std::vector<int> changes;
    for (const auto& [index, s] : samples) changes.push_back(index);
    std::vector<int> refine;
    std::vector<int> additions;
    differences.clear();
    for (size_t i = 0; i + 1 < changes.size(); ++i) {
      const int a = changes[i];
      const int b = changes[i + 1];
      const Comparison c = PinpointCompare(samples[a], samples[b], effect, thresholds);
      if (c == Comparison::kUnknown) {
        const size_t na = samples[a].size();
        const size_t nb = samples[b].size();
        if (na <= nb && na < kPinpointMaxAttempts) refine.push_back(a);
        if (nb <= na && nb < kPinpointMaxAttempts) refine.push_back(b);
      } else if (c == Comparison::kDifferent) {
        differences.emplace_back(a, b);
        // The binary infix traversal of (a, b), `levels` deep.
        std::function<void(int, int, int)> traverse = [&](int lo, int hi, int depth) {
          if (depth == 0 || hi - lo < 2) return;
          const int mid = lo + (hi - lo) / 2;
          traverse(lo, mid, depth - 1);
          additions.push_back(mid);
          traverse(mid, hi, depth - 1);
        };
        traverse(a, b, levels);
      }
    }
    std::sort(refine.begin(), refine.end());
    refine.erase(std::unique(refine.begin(), refine.end()), refine.end());
    if (refine.empty() && additions.empty()) break;
    ++out.rounds;
    for (int index : refine) {
      attempts(index, std::max(static_cast<int>(samples[index].size()), kPinpointMinAttempts));
    }
    for (int index : additions) attempts(index, kPinpointMinAttempts);
    if (static_cast<int>(samples.size()) > kPinpointMaxBuilds) return out;  // The job fails.
  }
  out.exact = differences.size() == 1 && differences[0].first == culprit - 1 &&
              differences[0].second == culprit;
  return out;
}

// --- Flaky pass/fail tests -----------------------------------------------------------------------
// A test that fails each run with probability `bad_rate` at commits from the culprit on and
// `good_rate` below it. A task's runs stop at the first failure, as the worker's do.

// The exit codes of one task of `runs` runs at a commit failing with probability `rate`.
std::vector<int> FlakyRuns(int runs, double rate, std::mt19937_64& rng) {
  std::vector<int> codes;
  for (int r = 0; r < runs; ++r) {
    const bool fails = std::bernoulli_distribution(rate)(rng);
    codes.push_back(fails ? 1 : 0);
    if (fails) break;
  }
  return codes;
}

// kbisect --exit-code [--flaky]: the real BisectJob, synchronous rounds of `workers` tasks.
Outcome RunPassFail(int n, int culprit, double bad_rate, double good_rate, int workers, bool flaky,
                    std::mt19937_64& rng, double confidence = 0) {
  v1::JobSpec spec;
  spec.set_repository("/sim");
  spec.set_good("g");
  spec.add_bench_command("test");
  spec.mutable_metric()->set_kind(v1::METRIC_KIND_EXIT_CODE);
  spec.set_flaky(flaky);
  if (flaky) spec.set_confidence(confidence);  // 0: --flaky's default, 0.995.
  BisectJob job("sim", spec, Commits(n), kNow);
  RunSynchronousRounds(&job, workers, 100000, [&](const v1::Task& task) {
    const double rate = task.commit_index() >= culprit ? bad_rate : good_rate;
    v1::TaskResult result;
    bool failed = false;
    for (int code : FlakyRuns(task.runs(), rate, rng)) {
      result.add_runs()->set_exit_code(code);
      failed = failed || code != 0;
    }
    result.set_outcome(failed ? v1::TASK_OUTCOME_FAILED : v1::TASK_OUTCOME_PASSED);
    return result;
  });
  const v1::JobStatus& status = job.status();
  if (flaky && std::getenv("ACCURACY_DEBUG") != nullptr &&
      !(status.status() == v1::OUTCOME_CULPRIT_FOUND && status.culprit().index() == culprit)) {
    std::fprintf(stderr, "miss: status=%s culprit=%d found=%d cands=%d p=%.4f runs=%d err=%s\n",
                 v1::Outcome_Name(status.status()).c_str(), culprit, status.culprit().index(),
                 status.candidates_size(), status.culprit_probability(), status.bench_runs(),
                 status.error().c_str());
    for (const v1::Probe& p : status.probes()) {
      int passes = 0, fails = 0;
      for (const auto& r : p.runs()) (r.exit_code() == 0 ? passes : fails)++;
      std::fprintf(stderr, "  %s idx=%d %s verdict=%s pass=%d fail=%d r=%d %s\n",
                   v1::ProbeKind_Name(p.kind()).c_str() + 11, p.index(),
                   p.index() >= culprit ? "BAD " : "good",
                   VerdictWord(p.verdict(), WordCase::kUpper).c_str(), passes, fails, p.round(),
                   p.message().c_str());
    }
  }
  Outcome out;
  out.exact = status.status() == v1::OUTCOME_CULPRIT_FOUND && status.culprit().index() == culprit;
  out.bench_runs = status.bench_runs();
  out.rounds = status.rounds();
  out.named = status.status() == v1::OUTCOME_CULPRIT_FOUND;
  out.probability = status.culprit_probability();
  return out;
}

// Plain bisect (git bisect run): one run per commit, its exit code believed, GOOD and BAD taken
// as given (not run).
Outcome RunPlainBisect(int n, int culprit, double bad_rate, double good_rate, int workers,
                       std::mt19937_64& rng) {
  Outcome out;
  BisectSearch search(n);
  while (!search.Done()) {
    std::vector<int> probes = search.NextProbes(workers);
    if (probes.empty()) break;
    ++out.rounds;
    for (int index : probes) {
      ++out.bench_runs;
      const bool fails = std::bernoulli_distribution(index >= culprit ? bad_rate : good_rate)(rng);
      (void)search.Record(index, fails ? v1::VERDICT_BAD : v1::VERDICT_GOOD);
    }
  }
  const std::vector<int> candidates = search.Candidates();
  out.exact = candidates.size() == 1 && candidates[0] == culprit;
  return out;
}

// A git_bayesect-style search, written from its published description (hauntsaninja, "Git
// Bayesect", 2026; no code of it read or copied): a uniform prior over the first bad commit k,
// independent Beta(1, 1) priors on the fail rates before and after k (integrated out: the
// Beta-Bernoulli marginal of each side), one run at a time at the commit whose result minimises
// the expected entropy of the posterior over k (exact, every commit 0..n a candidate), until
// the most probable k reaches `confidence` (or `max_total_runs`). One worker: it runs one test
// at a time.
// The confidence of the outside git_bayesect run issue 32 quotes (99.0% exact, about 220 runs
// at 30% / 5%; 100%, 397 runs at 10% / 0%).
constexpr double kBayesectConfidence = 0.995;

Outcome RunBayesect(int n, int culprit, double bad_rate, double good_rate, double confidence,
                    int max_total_runs, std::mt19937_64& rng) {
  std::vector<int> fails(n + 1, 0);
  std::vector<int> passes(n + 1, 0);
  std::vector<double> posterior(n + 1, 0);
  // log B(1 + f, 1 + p) - log B(1, 1).
  auto log_marginal = [](int f, int p) {
    return std::lgamma(1.0 + f) + std::lgamma(1.0 + p) - std::lgamma(2.0 + f + p);
  };
  std::vector<int> fail_below(n + 2, 0);  // Failures at commits < k.
  std::vector<int> pass_below(n + 2, 0);
  auto update = [&]() {
    for (int k = 1; k <= n + 1; ++k) {
      fail_below[k] = fail_below[k - 1] + fails[k - 1];
      pass_below[k] = pass_below[k - 1] + passes[k - 1];
    }
    const int total_fail = fail_below[n + 1];
    const int total_pass = pass_below[n + 1];
    double top = -1e300;
    for (int k = 1; k <= n; ++k) {
      posterior[k] = log_marginal(fail_below[k], pass_below[k]) +
                     log_marginal(total_fail - fail_below[k], total_pass - pass_below[k]);
      top = std::max(top, posterior[k]);
    }
    double sum = 0;
    for (int k = 1; k <= n; ++k) sum += posterior[k] = std::exp(posterior[k] - top);
    for (int k = 1; k <= n; ++k) posterior[k] /= sum;
  };
  auto entropy_of = [](const std::vector<double>& weights, double total) {
    double h = 0;
    for (double w : weights) {
      if (w > 0) h -= (w / total) * std::log(w / total);
    }
    return h;
  };
  Outcome out;
  update();
  std::vector<double> after_fail(n + 1);
  std::vector<double> after_pass(n + 1);
  while (out.bench_runs < max_total_runs) {
    const int best_k = static_cast<int>(std::max_element(posterior.begin() + 1, posterior.end()) -
                                        posterior.begin());
    if (posterior[best_k] >= confidence) break;
    const int total_fail = fail_below[n + 1];
    const int total_pass = pass_below[n + 1];
    int choice = 0;
    double best = 1e300;
    double median_distance = 1e9;
    double cumulative = 0;
    int median = 1;
    for (int k = 1; k <= n; ++k) {
      cumulative += posterior[k];
      if (cumulative < 0.5) median = k + 1;
    }
    for (int x = 0; x <= n; ++x) {
      double p_fail = 0;
      for (int k = 1; k <= n; ++k) {
        // The predictive fail rate of x's side under k (the side's Beta posterior mean).
        const bool bad_side = x >= k;
        const int f = bad_side ? total_fail - fail_below[k] : fail_below[k];
        const int runs = bad_side ? total_fail + total_pass - fail_below[k] - pass_below[k]
                                  : fail_below[k] + pass_below[k];
        const double rate = (1.0 + f) / (2.0 + runs);
        after_fail[k] = posterior[k] * rate;
        after_pass[k] = posterior[k] * (1 - rate);
        p_fail += after_fail[k];
      }
      after_fail[0] = after_pass[0] = 0;
      const double expected = p_fail * entropy_of(after_fail, p_fail) +
                              (1 - p_fail) * entropy_of(after_pass, 1 - p_fail);
      const double distance = std::abs(x - median);
      if (expected < best - 1e-12 || (expected <= best + 1e-12 && distance < median_distance)) {
        best = expected;
        choice = x;
        median_distance = distance;
      }
    }
    const bool failed = std::bernoulli_distribution(choice >= culprit ? bad_rate : good_rate)(rng);
    (failed ? fails : passes)[choice] += 1;
    ++out.bench_runs;
    ++out.rounds;
    update();
  }
  const int named = static_cast<int>(std::max_element(posterior.begin() + 1, posterior.end()) -
                                     posterior.begin());
  out.named = true;
  out.exact = named == culprit;
  out.probability = posterior[named];
  return out;
}

// The flaky cells: fail rates 10-50% at BAD commits, 0-5% at GOOD ones.
void PrintFlakyTable(int trials, int commits, const std::vector<int>& worker_counts,
                     const std::vector<double>& bad_rates, const std::vector<double>& good_rates,
                     double confidence, std::mt19937_64& rng) {
  std::cout << absl::StrFormat(
      "\nFlaky pass/fail tests (--exit-code --flaky): %d trials per cell, %d commits, culprit "
      "uniform in 1..%d.\nColumns: exact-culprit accuracy %% / mean test runs / mean rounds. "
      "FACF (Google's flake-aware culprit finder) anchor: 97.5%% exact.\n",
      trials, commits, commits);
  std::cout << absl::StrFormat("%8s %8s %3s | %-24s | %-24s | %-24s | %-24s | %s\n", "fail@BAD",
                               "fail@GOOD", "W", "kbisect --flaky", "kbisect --exit-code",
                               "plain bisect (1 run)", "bayesect-style (W=1)",
                               "p>=0.99: right/named");
  for (double bad_rate : bad_rates) {
    for (double good_rate : good_rates) {
      for (int workers : worker_counts) {
        // Its own stream, seeded by the cell: the other columns are those of a run without it.
        std::mt19937_64 bayesect_rng(static_cast<uint64_t>(bad_rate * 1e6) * 1000003 +
                                     static_cast<uint64_t>(good_rate * 1e6) * 101 + workers);
        long exact[4] = {0, 0, 0, 0};
        long runs[4] = {0, 0, 0, 0};
        long rounds[4] = {0, 0, 0, 0};
        long sure = 0;
        long sure_right = 0;
        for (int t = 0; t < trials; ++t) {
          const int culprit = std::uniform_int_distribution<int>(1, commits)(rng);
          const Outcome outcomes[4] = {
              RunPassFail(commits, culprit, bad_rate, good_rate, workers, true, rng, confidence),
              RunPassFail(commits, culprit, bad_rate, good_rate, workers, false, rng),
              RunPlainBisect(commits, culprit, bad_rate, good_rate, workers, rng),
              RunBayesect(commits, culprit, bad_rate, good_rate, kBayesectConfidence, 5000,
                          bayesect_rng)};
          for (int m = 0; m < 4; ++m) {
            exact[m] += outcomes[m].exact ? 1 : 0;
            runs[m] += outcomes[m].bench_runs;
            rounds[m] += outcomes[m].rounds;
          }
          if (outcomes[0].named && outcomes[0].probability >= 0.99) {
            ++sure;
            sure_right += outcomes[0].exact ? 1 : 0;
          }
        }
        std::string cells[4];
        for (int m = 0; m < 4; ++m) {
          cells[m] = absl::StrFormat("%6.1f%% %6.1f %5.1f", 100.0 * exact[m] / trials,
                                     static_cast<double>(runs[m]) / trials,
                                     static_cast<double>(rounds[m]) / trials);
        }
        std::cout << absl::StrFormat(
                         "%7.0f%% %8.0f%% %3d | %-24s | %-24s | %-24s | %-24s | %ld/%ld\n",
                         bad_rate * 100, good_rate * 100, workers, cells[0], cells[1], cells[2],
                         cells[3], sure_right, sure)
                  << std::flush;
      }
    }
  }
}

}  // namespace
}  // namespace kbisect

int main(int argc, char** argv) {
  int trials = 1000;
  int commits = 100;
  uint64_t seed = 1;
  std::string only_noise;
  std::vector<double> effects = {0.05, 0.10, 0.20, 0.50};
  std::vector<int> worker_counts = {1, 4, 8};
  bool flaky_only = false;
  double confidence = 0;  // The extra column's: 0 none, below 0 --confidence off.
  std::string extra_column;
  int max_runs = 0;
  int flaky_trials = 200;
  std::vector<double> flaky_bad = {0.1, 0.2, 0.3, 0.5};
  std::vector<double> flaky_good = {0.0, 0.01, 0.05};
  CLI::App app{"Accuracy of kbisect's verdicts against fixed rules under synthetic noise"};
  app.add_option("--trials", trials)->capture_default_str();
  app.add_option("--commits", commits)->capture_default_str();
  app.add_option("--seed", seed)->capture_default_str();
  app.add_option("--noise", only_noise, "Only noise models whose name starts with this");
  app.add_option("--effects", effects, "Effect sizes (fractions)")->delimiter(',');
  app.add_option("--workers", worker_counts, "Worker counts")->delimiter(',');
  app.add_flag("--flaky-only", flaky_only, "Only the flaky pass/fail table");
  app.add_option("--confidence", extra_column,
                 "Add a column: kbisect with --confidence P (the culprit posterior's stop) or "
                 "off; in the flaky table, --flaky's confidence (a number)")
      ->type_name("P|off");
  app.add_option("--max-runs", max_runs,
                 "kbisect's --max-runs in both kbisect columns (0: the job's default, 60 with a "
                 "confidence, 30 with it off)");
  app.add_option("--flaky-trials", flaky_trials, "Trials per flaky cell (0: no flaky table)")
      ->capture_default_str();
  app.add_option("--flaky-bad", flaky_bad, "Fail rates at BAD commits of the flaky cells")
      ->delimiter(',');
  app.add_option("--flaky-good", flaky_good, "Fail rates at GOOD commits of the flaky cells")
      ->delimiter(',');
  CLI11_PARSE(app, argc, argv);
  if (extra_column == "off") {
    confidence = -1;
  } else if (!extra_column.empty() &&
             (!absl::SimpleAtod(extra_column, &confidence) || confidence <= 0 || confidence >= 1)) {
    std::cerr << "--confidence takes a probability in (0, 1) or off, not " << extra_column << "\n";
    return 2;
  }
  if (flaky_only) {
    std::mt19937_64 flaky_rng(seed);
    kbisect::PrintFlakyTable(flaky_trials, commits, worker_counts, flaky_bad, flaky_good,
                             std::max(confidence, 0.0), flaky_rng);
    return 0;
  }

  std::cout << absl::StrFormat(
      "%d trials per cell, %d commits, culprit uniform in 1..%d, lower is better.\n"
      "Columns per method: exact-culprit accuracy %% / mean bench runs / mean rounds.\n\n",
      trials, commits, commits);
  std::cout << absl::StrFormat("%-20s %6s %3s | %-24s | %-24s | %-24s | %-24s", "noise", "effect",
                               "W", "kbisect (adaptive)", "seed (3 runs)", "fixed 10 runs",
                               "Pinpoint (10..160)");
  if (confidence != 0) {
    std::cout << absl::StrFormat(
        " | %-24s", confidence < 0 ? std::string("kbisect --confidence off")
                                   : absl::StrFormat("kbisect --confidence %g", confidence));
  }
  std::cout << "\n";
  std::mt19937_64 rng(seed);
  // The --confidence column draws from its own stream, so the other columns are those of a run
  // without it.
  std::mt19937_64 confidence_rng(seed + 1000);
  const int methods = confidence != 0 ? 5 : 4;
  kbisect::PinpointThresholds thresholds;
  // Calibration of culprit_probability: per bin of the reported probability, the jobs that named
  // a culprit and how many of them were right; overall and per noise model.
  const double kBinEdges[] = {0.5, 0.9, 0.99};
  const char* kBinNames[] = {"< 0.5", "0.5 - 0.9", "0.9 - 0.99", ">= 0.99"};
  struct Bin {
    long count = 0;
    long right = 0;
    double reported = 0;
  };
  std::map<std::string, std::array<Bin, 4>> calibration;
  long unnamed = 0;
  for (const kbisect::NoiseModel& noise : kbisect::NoiseModels()) {
    if (!only_noise.empty() && noise.name.rfind(only_noise, 0) != 0) continue;
    for (double effect : effects) {
      for (int workers : worker_counts) {
        struct Sum {
          int exact = 0;
          long runs = 0;
          long rounds = 0;
        } sums[5];
        for (int t = 0; t < trials; ++t) {
          const int culprit = std::uniform_int_distribution<int>(1, commits)(rng);
          kbisect::Outcome outcomes[5] = {
              kbisect::RunKbisect(commits, culprit, effect, workers, noise, rng, 0, max_runs),
              kbisect::RunFixed(commits, culprit, effect, workers, 3, noise, rng),
              kbisect::RunFixed(commits, culprit, effect, workers, 10, noise, rng),
              kbisect::RunPinpoint(commits, culprit, effect, workers, noise, thresholds, rng)};
          if (confidence != 0) {
            outcomes[4] = kbisect::RunKbisect(commits, culprit, effect, workers, noise,
                                              confidence_rng, confidence, max_runs);
          }
          auto bin_of = [&](const kbisect::Outcome& outcome, const std::vector<std::string>& keys) {
            int bin = 0;
            while (bin < 3 && outcome.probability >= kBinEdges[bin]) ++bin;
            for (const std::string& key : keys) {
              Bin& b = calibration[key][bin];
              ++b.count;
              b.right += outcome.exact ? 1 : 0;
              b.reported += outcome.probability;
            }
          };
          if (outcomes[0].named) {
            bin_of(outcomes[0], {"all cells", noise.name});
          } else {
            ++unnamed;
          }
          if (confidence != 0 && outcomes[4].named) {
            bin_of(outcomes[4], {confidence < 0 ? "with --confidence off" : "with --confidence"});
          }
          for (int m = 0; m < methods; ++m) {
            sums[m].exact += outcomes[m].exact ? 1 : 0;
            sums[m].runs += outcomes[m].bench_runs;
            sums[m].rounds += outcomes[m].rounds;
          }
        }
        std::string cells[5];
        for (int m = 0; m < methods; ++m) {
          cells[m] = absl::StrFormat("%6.1f%% %6.1f %5.1f", 100.0 * sums[m].exact / trials,
                                     static_cast<double>(sums[m].runs) / trials,
                                     static_cast<double>(sums[m].rounds) / trials);
        }
        std::cout << absl::StrFormat("%-20s %5.0f%% %3d | %-24s | %-24s | %-24s | %-24s",
                                     noise.name, effect * 100, workers, cells[0], cells[1],
                                     cells[2], cells[3]);
        if (confidence != 0) std::cout << absl::StrFormat(" | %-24s", cells[4]);
        std::cout << "\n" << std::flush;
      }
    }
  }
  std::cout << absl::StrFormat(
      "\nCalibration of kbisect's culprit_probability: jobs that named a culprit, by the "
      "probability reported (%ld named none).\n",
      unnamed);
  std::cout << absl::StrFormat("%-20s | %-12s | %8s | %8s | %9s\n", "cells", "reported", "results",
                               "right", "mean p");
  for (const auto& [key, bins] : calibration) {
    for (int bin = 0; bin < 4; ++bin) {
      const Bin& b = bins[bin];
      if (b.count == 0) continue;
      std::cout << absl::StrFormat("%-20s | %-12s | %8ld | %7.2f%% | %8.4f\n", key, kBinNames[bin],
                                   b.count, 100.0 * b.right / b.count, b.reported / b.count);
    }
  }
  if (flaky_trials > 0) {
    kbisect::PrintFlakyTable(flaky_trials, commits, worker_counts, flaky_bad, flaky_good,
                             std::max(confidence, 0.0), rng);
  }
  return 0;
}
