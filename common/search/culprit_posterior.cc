// Copyright 2026 The kbisect Authors.
#include "common/search/culprit_posterior.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace kbisect {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kMadScale = 1.4826;
// Grid steps per kernel bandwidth, and the most grid points the density is tabulated on.
constexpr double kStepsPerBandwidth = 8;
constexpr int kMaxGrid = 1 << 15;
// The kernel is cut off this many bandwidths out.
constexpr double kKernelReach = 6;

// log B(a, b), the Beta function.
double LogBeta(double a, double b) { return std::lgamma(a) + std::lgamma(b) - std::lgamma(a + b); }

// The log marginal likelihood of `failures` and `passes` of one side whose fail rate has a
// Beta(a, b) prior (the Beta-binomial without the binomial coefficient, which every split
// shares).
double LogBetaBinomial(long failures, long passes, double a, double b) {
  return LogBeta(a + failures, b + passes) - LogBeta(a, b);
}

double Gauss(double z) { return std::exp(-0.5 * z * z) / std::sqrt(2 * kPi); }

double MedianOf(std::vector<double> values) {
  if (values.empty()) return 0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  return (*std::max_element(values.begin(), values.begin() + mid) + upper) / 2;
}

// The noise density f: a kernel density estimate of the residuals, tabulated on a grid (linear
// binning, then the sampled kernel), mixed with a wide Cauchy component. LogDensity leaves one
// residual's own contribution out, exactly as the grid computed it.
class NoiseDensity {
 public:
  NoiseDensity(const std::vector<double>& residuals, double x_min, double x_max,
               double outlier_weight, double scale_floor)
      : count_(static_cast<int>(residuals.size())), outlier_weight_(outlier_weight) {
    double sum_squares = 0;
    std::vector<double> absolute;
    for (double r : residuals) {
      sum_squares += r * r;
      absolute.push_back(std::fabs(r));
    }
    const double sd = count_ > 1 ? std::sqrt(sum_squares / (count_ - 1)) : 0;
    const double mad = kMadScale * MedianOf(absolute);
    scale_ = mad > 0 ? std::min(sd, mad) : sd;
    bandwidth_ = std::max(0.9 * scale_ * std::pow(std::max(count_, 1), -0.2), scale_floor);
    tail_scale_ = std::max(sd, 3 * bandwidth_);
    x_min = std::min(x_min, -kKernelReach * bandwidth_) - kKernelReach * bandwidth_;
    x_max = std::max(x_max, kKernelReach * bandwidth_) + kKernelReach * bandwidth_;
    step_ = bandwidth_ / kStepsPerBandwidth;
    // Sized in floating point before any cast: residuals near the double range make the span
    // infinite, and casting that to int is undefined (found by tests/fuzz/task_result_fuzz).
    // Such a grid is one cell, which Locate refuses every residual of.
    const double cells = std::ceil((x_max - x_min) / step_) + 1;
    int points = kMaxGrid;
    if (!std::isfinite(cells) || !std::isfinite(step_) || step_ <= 0) {
      points = 1;
      step_ = 1;
    } else if (cells > kMaxGrid) {
      step_ = (x_max - x_min) / (points - 1);
    } else {
      points = static_cast<int>(cells);
    }
    origin_ = x_min;
    points_ = points;
    std::vector<double> bins(points, 0.0);
    for (double r : residuals) {
      const auto [cell, frac] = Locate(r);
      if (cell < 0) continue;
      bins[cell] += 1 - frac;
      if (cell + 1 < points) bins[cell + 1] += frac;
    }
    const double reach_cells = std::ceil(kKernelReach * bandwidth_ / step_);
    const int reach = reach_cells < points ? static_cast<int>(reach_cells) : points;
    std::vector<double> kernel(2 * reach + 1);
    for (int t = -reach; t <= reach; ++t) {
      kernel[t + reach] = Gauss(t * step_ / bandwidth_) / bandwidth_;
    }
    grid_.assign(points, 0.0);
    for (int g = 0; g < points; ++g) {
      if (bins[g] == 0) continue;
      for (int t = std::max(-reach, -g); t <= reach && g + t < points; ++t) {
        grid_[g + t] += bins[g] * kernel[t + reach];
      }
    }
    for (double& value : grid_) value /= std::max(count_, 1);
  }

  double scale() const { return scale_; }

  // log f(x), the kernel of the residual `own` left out.
  double LogDensity(double x, double own) const {
    double kde = 0;
    const auto [cell, frac] = Locate(x);
    if (cell >= 0) {
      kde = grid_[cell] * (1 - frac) + (cell + 1 < points_ ? grid_[cell + 1] * frac : 0);
      if (count_ > 1) {
        kde = std::max(0.0, (count_ * kde - OwnKernel(x, own)) / (count_ - 1));
      }
    }
    const double z = x / tail_scale_;
    const double tail = 1 / (kPi * tail_scale_ * (1 + z * z));
    return std::log((1 - outlier_weight_) * kde + outlier_weight_ * tail);
  }

 private:
  // The grid cell left of x and the fraction of the way to the next; cell -1 outside.
  std::pair<int, double> Locate(double x) const {
    const double position = (x - origin_) / step_;
    if (!(position >= 0) || position > points_ - 1) {
      return {-1, 0};
    }
    const int cell = static_cast<int>(position);
    return {cell, position - cell};
  }

  // The contribution of the single residual `own` to the tabulated (unnormalised) sum at x: its
  // two bins, the sampled kernel, the interpolation.
  double OwnKernel(double x, double own) const {
    const auto [own_cell, own_frac] = Locate(own);
    const auto [cell, frac] = Locate(x);
    if (own_cell < 0 || cell < 0) return 0;
    double sum = 0;
    for (int a = 0; a < 2; ++a) {
      const double wa = a == 0 ? 1 - frac : frac;
      for (int b = 0; b < 2; ++b) {
        const double wb = b == 0 ? 1 - own_frac : own_frac;
        const double distance = ((cell + a) - (own_cell + b)) * step_;
        if (std::fabs(distance) > kKernelReach * bandwidth_ + step_ / 2) continue;
        sum += wa * wb * Gauss(distance / bandwidth_) / bandwidth_;
      }
    }
    return sum;
  }

  int count_;
  double outlier_weight_;
  double scale_ = 0;
  double bandwidth_ = 0;
  double tail_scale_ = 0;
  double origin_ = 0;
  double step_ = 1;
  int points_ = 0;
  std::vector<double> grid_;
};

// The numeric samples, grouped by the rank of their commit among the measured ones.
struct NumericData {
  std::vector<double> values;  // Ordered by commit.
  std::vector<int> rank;       // The commit rank of each value.
};

// Adds the numeric log-likelihood of every split j (the first j measured commits GOOD) with
// valid[j] to log_lik; returns the noise scale used.
double AddNumericLogLikelihood(const NumericData& data, int commits, const std::vector<bool>& valid,
                               double outlier_weight, std::vector<double>* log_lik) {
  const int total = static_cast<int>(data.values.size());
  // first[j]: the index of the first value of commit rank >= j.
  std::vector<int> first(commits + 1, total);
  for (int i = total - 1; i >= 0; --i) first[data.rank[i]] = i;
  for (int j = commits - 1; j >= 0; --j) first[j] = std::min(first[j], first[j + 1]);

  // Each split's two centers (medians) and the Gaussian split (least within-side squares).
  std::vector<double> good_center(commits + 1, 0);
  std::vector<double> bad_center(commits + 1, 0);
  std::vector<double> prefix(total + 1, 0);
  std::vector<double> prefix_squares(total + 1, 0);
  for (int i = 0; i < total; ++i) {
    prefix[i + 1] = prefix[i] + data.values[i];
    prefix_squares[i + 1] = prefix_squares[i] + data.values[i] * data.values[i];
  }
  auto squares = [&](int from, int to) {
    if (to <= from) return 0.0;
    const double sum = prefix[to] - prefix[from];
    return std::max(0.0, prefix_squares[to] - prefix_squares[from] - sum * sum / (to - from));
  };
  int split = -1;
  double best_squares = std::numeric_limits<double>::infinity();
  double lowest_center = std::numeric_limits<double>::infinity();
  double highest_center = -std::numeric_limits<double>::infinity();
  for (int j = 0; j <= commits; ++j) {
    if (!valid[j]) continue;
    const int cut = first[j];
    good_center[j] = MedianOf({data.values.begin(), data.values.begin() + cut});
    bad_center[j] = MedianOf({data.values.begin() + cut, data.values.end()});
    for (double c : {good_center[j], bad_center[j]}) {
      lowest_center = std::min(lowest_center, c);
      highest_center = std::max(highest_center, c);
    }
    const double within = squares(0, cut) + squares(cut, total);
    if (within < best_squares) {
      best_squares = within;
      split = j;
    }
  }
  if (split < 0) return 0;
  const auto [lowest_value, highest_value] =
      std::minmax_element(data.values.begin(), data.values.end());
  const double magnitude = std::max(std::fabs(*lowest_value), std::fabs(*highest_value));

  double scale = 0;
  std::vector<double> scored(commits + 1, 0);
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::vector<double> residuals(total);
    for (int i = 0; i < total; ++i) {
      residuals[i] = data.values[i] - (i < first[split] ? good_center[split] : bad_center[split]);
    }
    const double step = std::fabs(bad_center[split] - good_center[split]);
    const double floor = std::max({1e-3 * step, 1e-9 * magnitude, 1e-300});
    const NoiseDensity density(residuals, *lowest_value - highest_center,
                               *highest_value - lowest_center, outlier_weight, floor);
    scale = density.scale();
    int best = -1;
    for (int j = 0; j <= commits; ++j) {
      if (!valid[j]) continue;
      const int cut = first[j];
      double sum = 0;
      for (int i = 0; i < total; ++i) {
        const double center = i < cut ? good_center[j] : bad_center[j];
        sum += density.LogDensity(data.values[i] - center, residuals[i]);
      }
      if (cut > 0) sum -= 0.5 * std::log(static_cast<double>(cut));
      if (cut < total) sum -= 0.5 * std::log(static_cast<double>(total - cut));
      scored[j] = sum;
      if (best < 0 || sum > scored[best]) best = j;
    }
    if (best == split) break;
    split = best;  // Residuals again from the split the posterior prefers, once.
  }
  for (int j = 0; j <= commits; ++j) {
    if (valid[j]) (*log_lik)[j] += scored[j];
  }
  return scale;
}

// The evidence of each measured commit, by its index in the range.
using EvidenceByCommit = std::map<int, CommitEvidence>;

// Checks the range's size and the options' rates and priors. InvalidArgument says which is wrong.
absl::Status CheckPosteriorInputs(int n, const PosteriorOptions& options) {
  if (n < 1) return absl::InvalidArgumentError(absl::StrCat("range of ", n, " commits"));
  if (!(options.flake_rate > 0 && options.flake_rate < 0.5) ||
      !(options.outlier_weight > 0 && options.outlier_weight < 0.5)) {
    return absl::InvalidArgumentError("flake_rate and outlier_weight must be in (0, 0.5)");
  }
  if (!(options.good_fail_prior_a > 0 && options.good_fail_prior_b > 0 &&
        options.bad_fail_prior_a > 0 && options.bad_fail_prior_b > 0)) {
    return absl::InvalidArgumentError("the fail rates' Beta priors need positive parameters");
  }
  return absl::OkStatus();
}

// Merges the evidence of each commit index (its samples in order, its counts summed), leaving
// out commits with none. InvalidArgument on an index outside 0..n, a negative count or a sample
// that is not finite.
absl::StatusOr<EvidenceByCommit> MergeEvidence(int n, absl::Span<const CommitEvidence> evidence) {
  EvidenceByCommit merged;
  for (const CommitEvidence& e : evidence) {
    if (e.index < 0 || e.index > n) {
      return absl::InvalidArgumentError(absl::StrCat("commit index ", e.index, " outside 0..", n));
    }
    if (e.passes < 0 || e.failures < 0) {
      return absl::InvalidArgumentError("negative pass/fail count");
    }
    for (double v : e.samples) {
      if (!std::isfinite(v)) return absl::InvalidArgumentError("sample is not finite");
    }
    if (e.samples.empty() && e.passes == 0 && e.failures == 0) continue;
    CommitEvidence& into = merged[e.index];
    into.index = e.index;
    into.samples.insert(into.samples.end(), e.samples.begin(), e.samples.end());
    into.passes += e.passes;
    into.failures += e.failures;
  }
  return merged;
}

// The splits of a range of n commits at its measured ones: split j (0..commits) puts the first j
// measured commits GOOD, i.e. the culprit k in low[j]..high[j], possible when `valid[j]`; with
// the failures and passes of those first j commits (the GOOD side of split j).
struct Splits {
  int commits = 0;  // The measured commits.
  std::vector<int> low;
  std::vector<int> high;
  std::vector<bool> valid;
  std::vector<long> failures_below;
  std::vector<long> passes_below;

  long all_failures() const { return failures_below[commits]; }
  long all_passes() const { return passes_below[commits]; }
  int width(int j) const { return high[j] - low[j] + 1; }
};

// The splits of 1..n at the commits of `merged`.
Splits SplitsOf(int n, const EvidenceByCommit& merged) {
  Splits s;
  s.commits = static_cast<int>(merged.size());
  std::vector<int> index;
  for (const auto& [i, e] : merged) index.push_back(i);
  s.low.resize(s.commits + 1);
  s.high.resize(s.commits + 1);
  s.valid.resize(s.commits + 1);
  for (int j = 0; j <= s.commits; ++j) {
    s.low[j] = j == 0 ? 1 : std::max(1, index[j - 1] + 1);
    s.high[j] = j == s.commits ? n : std::min(n, index[j]);
    s.valid[j] = s.low[j] <= s.high[j];
  }
  s.failures_below.assign(s.commits + 1, 0);
  s.passes_below.assign(s.commits + 1, 0);
  int rank = 0;
  for (const auto& [i, e] : merged) {
    s.failures_below[rank + 1] = s.failures_below[rank] + e.failures;
    s.passes_below[rank + 1] = s.passes_below[rank] + e.passes;
    ++rank;
  }
  return s;
}

// Every sample of `merged`, in commit order, with its commit's rank among the measured ones.
NumericData NumericDataOf(const EvidenceByCommit& merged) {
  NumericData numeric;
  int rank = 0;
  for (const auto& [i, e] : merged) {
    for (double v : e.samples) {
      numeric.values.push_back(v);
      numeric.rank.push_back(rank);
    }
    ++rank;
  }
  return numeric;
}

// Adds the pass/fail log-likelihood of every valid split to log_lik: GOOD commits pass and BAD
// ones fail, each result wrong with flake_rate, or, estimating the fail rates, each side's
// failures Beta-binomial under its prior.
void AddPassFailLogLikelihood(const Splits& s, const PosteriorOptions& options,
                              std::vector<double>* log_lik) {
  const double right = std::log1p(-options.flake_rate);
  const double wrong = std::log(options.flake_rate);
  for (int j = 0; j <= s.commits; ++j) {
    if (!s.valid[j]) continue;
    const long good_failures = s.failures_below[j];
    const long good_passes = s.passes_below[j];
    const long bad_failures = s.all_failures() - good_failures;
    const long bad_passes = s.all_passes() - good_passes;
    if (options.estimate_flake_rates) {
      (*log_lik)[j] += LogBetaBinomial(good_failures, good_passes, options.good_fail_prior_a,
                                       options.good_fail_prior_b) +
                       LogBetaBinomial(bad_failures, bad_passes, options.bad_fail_prior_a,
                                       options.bad_fail_prior_b);
    } else {
      (*log_lik)[j] += (good_passes + bad_failures) * right + (good_failures + bad_passes) * wrong;
    }
  }
}

// Each split's weight (its likelihood over the peak's) and the total mass over every position.
struct SplitWeights {
  std::vector<double> weight;
  double total = 0;
};

// The weights of the valid splits from their log-likelihoods.
SplitWeights WeighSplits(const Splits& s, const std::vector<double>& log_lik) {
  double peak = -std::numeric_limits<double>::infinity();
  for (int j = 0; j <= s.commits; ++j) {
    if (s.valid[j]) peak = std::max(peak, log_lik[j]);
  }
  SplitWeights w;
  w.weight.assign(s.commits + 1, 0);
  for (int j = 0; j <= s.commits; ++j) {
    if (!s.valid[j]) continue;
    w.weight[j] = std::exp(log_lik[j] - peak);
    w.total += w.weight[j] * s.width(j);
  }
  return w;
}

// Adds split j's fail rates to `posterior`: the rates' posterior means under the split, at each
// of its positions and, weighted by the split's mass, to the overall rates.
void AddSplitFailRates(const Splits& s, int j, const SplitWeights& w,
                       const PosteriorOptions& options, CulpritPosterior* posterior) {
  const double mass = w.weight[j] * s.width(j) / w.total;
  const double good_failures = s.failures_below[j];
  const double good_runs = good_failures + s.passes_below[j];
  const double bad_failures = s.all_failures() - good_failures;
  const double bad_runs = bad_failures + s.all_passes() - s.passes_below[j];
  const double good_rate = (options.good_fail_prior_a + good_failures) /
                           (options.good_fail_prior_a + options.good_fail_prior_b + good_runs);
  const double bad_rate = (options.bad_fail_prior_a + bad_failures) /
                          (options.bad_fail_prior_a + options.bad_fail_prior_b + bad_runs);
  posterior->good_fail_rate += mass * good_rate;
  posterior->bad_fail_rate += mass * bad_rate;
  for (int k = s.low[j]; k <= s.high[j]; ++k) {
    posterior->good_fail_rate_at[k] = good_rate;
    posterior->bad_fail_rate_at[k] = bad_rate;
  }
}

// Spreads each split's weight over its positions into `posterior` (with the fail rates when they
// are estimated) and picks the most likely position, the lowest on a tie.
void FillPosterior(const Splits& s, const SplitWeights& w, const PosteriorOptions& options,
                   CulpritPosterior* posterior) {
  const int n = posterior->n;
  posterior->probability.assign(n + 1, 0.0);
  if (options.estimate_flake_rates) {
    posterior->good_fail_rate_at.assign(n + 1, 0.0);
    posterior->bad_fail_rate_at.assign(n + 1, 0.0);
  }
  for (int j = 0; j <= s.commits; ++j) {
    if (!s.valid[j]) continue;
    for (int k = s.low[j]; k <= s.high[j]; ++k) posterior->probability[k] = w.weight[j] / w.total;
    if (options.estimate_flake_rates) AddSplitFailRates(s, j, w, options, posterior);
  }
  posterior->most_likely = 1;
  for (int k = 2; k <= n; ++k) {
    if (posterior->probability[k] > posterior->probability[posterior->most_likely]) {
      posterior->most_likely = k;
    }
  }
}

}  // namespace

double CulpritPosterior::MassOf(absl::Span<const int> positions) const {
  double mass = 0;
  for (int k : positions) {
    if (k >= 1 && k < static_cast<int>(probability.size())) mass += probability[k];
  }
  return mass;
}

std::vector<int> CulpritPosterior::Top(int count, double min_probability) const {
  std::vector<int> positions;
  for (int k = 1; k < static_cast<int>(probability.size()); ++k) {
    if (probability[k] >= min_probability && probability[k] > 0) positions.push_back(k);
  }
  std::stable_sort(positions.begin(), positions.end(),
                   [&](int a, int b) { return probability[a] > probability[b]; });
  if (static_cast<int>(positions.size()) > count) positions.resize(std::max(count, 0));
  return positions;
}

absl::StatusOr<CulpritPosterior> ComputeCulpritPosterior(int n,
                                                         absl::Span<const CommitEvidence> evidence,
                                                         const PosteriorOptions& options) {
  RETURN_IF_ERROR(CheckPosteriorInputs(n, options));
  ASSIGN_OR_RETURN(const EvidenceByCommit merged, MergeEvidence(n, evidence));
  const Splits splits = SplitsOf(n, merged);
  std::vector<double> log_lik(splits.commits + 1, 0);
  AddPassFailLogLikelihood(splits, options, &log_lik);
  CulpritPosterior posterior;
  posterior.n = n;
  const NumericData numeric = NumericDataOf(merged);
  if (!numeric.values.empty()) {
    posterior.noise_scale = AddNumericLogLikelihood(numeric, splits.commits, splits.valid,
                                                    options.outlier_weight, &log_lik);
  }
  FillPosterior(splits, WeighSplits(splits, log_lik), options, &posterior);
  return posterior;
}

}  // namespace kbisect
