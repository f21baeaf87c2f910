// Copyright 2026 The kbisect Authors.

#include "common/stats/stats.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace kbisect {
namespace {

// The largest n_a * n_b for which the exact Mann-Whitney distribution is computed on request.
constexpr int64_t kMaxExactMannWhitneyCells = 10000;
// R's wilcox.test computes exact p-values when both samples have fewer than this many values.
constexpr size_t kMannWhitneyAutoExactLimit = 50;
// scipy's ks_2samp(method="auto") is exact when max(n_a, n_b) <= this.
constexpr size_t kKsAutoExactMaxN = 10000;
// The largest n_a * n_b for which the exact KS p-value is computed on request.
constexpr int64_t kMaxExactKsCells = 100000000;
constexpr int kMaxBootstrapResamples = 10000000;

// Returns InvalidArgument naming `what` if `xs` is empty, holds a NaN, or (unless
// `allow_infinite`) holds an infinity.
absl::Status CheckSample(absl::Span<const double> xs, const char* what, bool allow_infinite) {
  if (xs.empty()) return absl::InvalidArgumentError(absl::StrCat(what, " is empty"));
  for (size_t i = 0; i < xs.size(); ++i) {
    if (std::isnan(xs[i])) {
      return absl::InvalidArgumentError(absl::StrCat(what, " holds a NaN at index ", i));
    }
    if (!allow_infinite && std::isinf(xs[i])) {
      return absl::InvalidArgumentError(absl::StrCat(what, " holds an infinity at index ", i));
    }
  }
  return absl::OkStatus();
}

int64_t Abs64(int64_t x) { return x < 0 ? -x : x; }

// Returns the median of `xs` (non-empty, no NaN), reordering it.
double MedianInPlace(std::vector<double>& xs) {
  const size_t n = xs.size();
  const size_t mid = n / 2;
  std::nth_element(xs.begin(), xs.begin() + mid, xs.end());
  const double upper = xs[mid];
  if (n % 2 == 1) return upper;
  const double lower = *std::max_element(xs.begin(), xs.begin() + mid);
  return lower + (upper - lower) / 2;
}

// Returns the standard normal upper tail 1 - Phi(z).
double NormalSurvival(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

// Returns P(U = u) for u = 0..m*n under H0 for samples of sizes m and n without ties. Uses the
// recursion on the largest pooled value: it belongs to the first sample with probability
// m / (m + n) (and then beats all n values of the second), else to the second:
//   P_{m,n}(u) = m / (m + n) P_{m-1,n}(u - n) + n / (m + n) P_{m,n-1}(u).
// Probabilities instead of counts keep every term positive and in range.
std::vector<double> MannWhitneyNullPmf(int m, int n) {
  std::vector<std::vector<double>> prev(n + 1, std::vector<double>{1.0});  // i = 0: U = 0.
  std::vector<std::vector<double>> cur(n + 1);
  for (int i = 1; i <= m; ++i) {
    cur[0].assign(1, 1.0);  // j = 0: U = 0.
    for (int j = 1; j <= n; ++j) {
      std::vector<double>& out = cur[j];
      out.assign(static_cast<size_t>(i) * j + 1, 0.0);
      const double w_a = static_cast<double>(i) / (i + j);
      const double w_b = static_cast<double>(j) / (i + j);
      const std::vector<double>& from_a = prev[j];     // sizes (i - 1, j)
      const std::vector<double>& from_b = cur[j - 1];  // sizes (i, j - 1)
      for (size_t u = 0; u < from_a.size(); ++u) out[u + j] += w_a * from_a[u];
      for (size_t u = 0; u < from_b.size(); ++u) out[u] += w_b * from_b[u];
    }
    std::swap(prev, cur);
  }
  return prev[n];
}

// Returns sup_x |F_a(x) - F_b(x)| scaled by m * n, i.e. max |i n - j m| over the pooled order,
// where i and j count the values of `a` and `b` (both sorted) that are <= x.
int64_t KsScaledStatistic(const std::vector<double>& a, const std::vector<double>& b) {
  const int64_t m = static_cast<int64_t>(a.size());
  const int64_t n = static_cast<int64_t>(b.size());
  int64_t i = 0;
  int64_t j = 0;
  int64_t best = 0;
  while (i < m || j < n) {
    const double v = (i < m && (j == n || a[i] <= b[j])) ? a[i] : b[j];
    while (i < m && a[i] <= v) ++i;
    while (j < n && b[j] <= v) ++j;
    best = std::max(best, Abs64(i * n - j * m));
  }
  return best;
}

// Returns P(D >= h / (m n)) for the two-sample KS statistic under H0: the probability that a
// uniformly random monotone lattice path from (0, 0) to (m, n) visits a point with
// |i n - j m| >= h. Sums the probability of first leaving the band, so no cancellation occurs.
double KsExactPValue(int64_t m, int64_t n, int64_t h) {
  if (h <= 0) return 1.0;
  auto inside = [&](int64_t i, int64_t j) { return Abs64(i * n - j * m) < h; };
  std::vector<double> row(n + 1, 0.0);
  std::vector<double> next(n + 1, 0.0);
  row[0] = 1.0;
  double p_exit = 0.0;
  for (int64_t i = 0; i <= m; ++i) {
    std::fill(next.begin(), next.end(), 0.0);
    for (int64_t j = 0; j <= n; ++j) {
      const double q = row[j];
      if (q == 0.0) continue;
      const int64_t remaining = m + n - i - j;
      if (remaining == 0) continue;
      if (i < m) {
        const double t = q * static_cast<double>(m - i) / static_cast<double>(remaining);
        if (inside(i + 1, j)) {
          next[j] += t;
        } else {
          p_exit += t;
        }
      }
      if (j < n) {
        const double t = q * static_cast<double>(n - j) / static_cast<double>(remaining);
        if (inside(i, j + 1)) {
          row[j + 1] += t;
        } else {
          p_exit += t;
        }
      }
    }
    std::swap(row, next);
  }
  return std::min(1.0, std::max(0.0, p_exit));
}

// Returns a uniformly distributed integer in [0, n), n > 0, from the raw engine output. Rejects the
// lowest 2^64 mod n values so that every residue is equally likely.
uint64_t UniformIndex(std::mt19937_64& rng, uint64_t n) {
  const uint64_t threshold = (0 - n) % n;  // == 2^64 mod n
  while (true) {
    const uint64_t r = rng();
    if (r >= threshold) return r % n;
  }
}

// Returns the type-7 quantile (linear interpolation) of sorted, non-empty `xs` at p in [0, 1].
double SortedQuantile(const std::vector<double>& xs, double p) {
  const double h = static_cast<double>(xs.size() - 1) * p;
  const size_t lo = static_cast<size_t>(std::floor(h));
  if (lo + 1 >= xs.size()) return xs.back();
  return xs[lo] + (h - static_cast<double>(lo)) * (xs[lo + 1] - xs[lo]);
}

}  // namespace

absl::StatusOr<double> Median(absl::Span<const double> xs) {
  RETURN_IF_ERROR(CheckSample(xs, "sample", /*allow_infinite=*/false));
  std::vector<double> copy(xs.begin(), xs.end());
  return MedianInPlace(copy);
}

absl::StatusOr<double> MedianAbsoluteDeviation(absl::Span<const double> xs) {
  ASSIGN_OR_RETURN(const double median, Median(xs));
  std::vector<double> deviations;
  deviations.reserve(xs.size());
  for (double x : xs) deviations.push_back(std::fabs(x - median));
  return MedianInPlace(deviations);
}

absl::StatusOr<double> ScaledMad(absl::Span<const double> xs) {
  ASSIGN_OR_RETURN(const double mad, MedianAbsoluteDeviation(xs));
  return kMadNormalScale * mad;
}

absl::StatusOr<double> Mean(absl::Span<const double> xs) {
  RETURN_IF_ERROR(CheckSample(xs, "sample", /*allow_infinite=*/false));
  double sum = 0;
  for (double x : xs) sum += x;
  if (!std::isfinite(sum)) return absl::InvalidArgumentError("sum of the sample overflows");
  return sum / static_cast<double>(xs.size());
}

absl::StatusOr<double> SampleStdDev(absl::Span<const double> xs) {
  if (xs.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("the sample standard deviation needs at least 2 values, got ", xs.size()));
  }
  ASSIGN_OR_RETURN(const double mean, Mean(xs));
  double sum_sq = 0;
  for (double x : xs) sum_sq += (x - mean) * (x - mean);
  const double sd = std::sqrt(sum_sq / static_cast<double>(xs.size() - 1));
  if (!std::isfinite(sd)) return absl::InvalidArgumentError("sum of squares overflows");
  return sd;
}

absl::StatusOr<double> CoefficientOfVariation(absl::Span<const double> xs) {
  ASSIGN_OR_RETURN(const double sd, SampleStdDev(xs));
  ASSIGN_OR_RETURN(const double mean, Mean(xs));
  if (mean == 0) {
    return absl::InvalidArgumentError("the coefficient of variation is undefined for mean 0");
  }
  return sd / std::fabs(mean);
}

absl::StatusOr<MannWhitneyResult> MannWhitneyU(absl::Span<const double> a,
                                               absl::Span<const double> b, PValueMethod method) {
  RETURN_IF_ERROR(CheckSample(a, "first sample", /*allow_infinite=*/true));
  RETURN_IF_ERROR(CheckSample(b, "second sample", /*allow_infinite=*/true));
  const size_t m = a.size();
  const size_t n = b.size();
  const size_t total = m + n;

  // Pool, sort, and assign midranks (1-based); accumulate sum(t^3 - t) over tie groups.
  std::vector<std::pair<double, bool>> pooled;  // (value, belongs to a)
  pooled.reserve(total);
  for (double x : a) pooled.emplace_back(x, true);
  for (double x : b) pooled.emplace_back(x, false);
  std::sort(pooled.begin(), pooled.end(),
            [](const auto& l, const auto& r) { return l.first < r.first; });
  double rank_sum_a = 0;
  double tie_term = 0;
  for (size_t start = 0; start < total;) {
    size_t end = start + 1;
    while (end < total && pooled[end].first == pooled[start].first) ++end;
    const double midrank = (static_cast<double>(start + 1) + static_cast<double>(end)) / 2;
    for (size_t k = start; k < end; ++k) {
      if (pooled[k].second) rank_sum_a += midrank;
    }
    const double t = static_cast<double>(end - start);
    tie_term += t * t * t - t;
    start = end;
  }
  const double md = static_cast<double>(m);
  const double nd = static_cast<double>(n);
  MannWhitneyResult result;
  result.u = rank_sum_a - md * (md + 1) / 2;

  const bool has_ties = tie_term > 0;
  const int64_t cells = static_cast<int64_t>(m) * static_cast<int64_t>(n);
  bool use_exact = false;
  switch (method) {
    case PValueMethod::kAuto:
      use_exact = !has_ties && m < kMannWhitneyAutoExactLimit && n < kMannWhitneyAutoExactLimit;
      break;
    case PValueMethod::kExact:
      if (has_ties) {
        return absl::InvalidArgumentError(
            "the exact Mann-Whitney p-value needs samples without ties; use the automatic or "
            "asymptotic method");
      }
      if (cells > kMaxExactMannWhitneyCells) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the exact Mann-Whitney p-value is limited to n_a * n_b <= ", kMaxExactMannWhitneyCells,
            ", got ", m, " * ", n));
      }
      use_exact = true;
      break;
    case PValueMethod::kAsymptotic:
      break;
  }

  if (use_exact) {
    // The null distribution of U is symmetric in the two sizes; the recursion's memory grows as
    // (larger) * (smaller)^2, so put the smaller size second.
    const std::vector<double> pmf =
        MannWhitneyNullPmf(static_cast<int>(std::max(m, n)), static_cast<int>(std::min(m, n)));
    const size_t u = static_cast<size_t>(std::llround(result.u));
    double lower = 0;  // P(U <= u)
    double upper = 0;  // P(U >= u)
    for (size_t k = 0; k < pmf.size(); ++k) {
      if (k <= u) lower += pmf[k];
      if (k >= u) upper += pmf[k];
    }
    result.p_value = std::min(1.0, 2 * std::min(lower, upper));
    result.exact = true;
    return result;
  }

  const double nt = static_cast<double>(total);
  const double variance = md * nd / 12 * ((nt + 1) - tie_term / (nt * (nt - 1)));
  if (!(variance > 0)) {  // Every value is tied: no evidence of a shift.
    result.p_value = 1;
    return result;
  }
  const double shift = std::fabs(result.u - md * nd / 2);
  const double z = std::max(0.0, shift - 0.5) / std::sqrt(variance);
  result.p_value = std::min(1.0, 2 * NormalSurvival(z));
  return result;
}

double KolmogorovSurvival(double lambda) {
  if (!(lambda > 0)) return 1.0;
  constexpr double kPi = 3.14159265358979323846;
  double q;
  if (lambda < 1.18) {
    // Small lambda: the CDF series sqrt(2 pi) / lambda sum_j exp(-(2j - 1)^2 pi^2 / (8 lambda^2))
    // converges fast where the alternating series does not.
    const double c = -kPi * kPi / (8 * lambda * lambda);
    double cdf = 0;
    for (int j = 1; j <= 100; ++j) {
      const double k = 2.0 * j - 1;
      const double term = std::exp(c * k * k);
      cdf += term;
      if (term < 1e-17 * cdf) break;
    }
    q = 1 - std::sqrt(2 * kPi) / lambda * cdf;
  } else {
    q = 0;
    double sign = 1;
    for (int j = 1; j <= 100; ++j) {
      const double term = std::exp(-2.0 * j * j * lambda * lambda);
      q += sign * term;
      sign = -sign;
      if (term < 1e-17 * q) break;
    }
    q *= 2;
  }
  return std::min(1.0, std::max(0.0, q));
}

absl::StatusOr<KolmogorovSmirnovResult> KolmogorovSmirnov(absl::Span<const double> a,
                                                          absl::Span<const double> b,
                                                          PValueMethod method) {
  RETURN_IF_ERROR(CheckSample(a, "first sample", /*allow_infinite=*/true));
  RETURN_IF_ERROR(CheckSample(b, "second sample", /*allow_infinite=*/true));
  std::vector<double> sa(a.begin(), a.end());
  std::vector<double> sb(b.begin(), b.end());
  std::sort(sa.begin(), sa.end());
  std::sort(sb.begin(), sb.end());
  const int64_t m = static_cast<int64_t>(sa.size());
  const int64_t n = static_cast<int64_t>(sb.size());
  const int64_t h = KsScaledStatistic(sa, sb);

  KolmogorovSmirnovResult result;
  result.d = static_cast<double>(h) / (static_cast<double>(m) * static_cast<double>(n));

  bool use_exact = false;
  switch (method) {
    case PValueMethod::kAuto:
      use_exact = std::max(sa.size(), sb.size()) <= kKsAutoExactMaxN;
      break;
    case PValueMethod::kExact:
      if (m * n > kMaxExactKsCells) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the exact Kolmogorov-Smirnov p-value is limited to n_a * n_b <= ", kMaxExactKsCells,
            ", got ", m, " * ", n));
      }
      use_exact = true;
      break;
    case PValueMethod::kAsymptotic:
      break;
  }
  if (use_exact) {
    result.p_value = KsExactPValue(m, n, h);
    result.exact = true;
    return result;
  }
  const double en =
      std::sqrt(static_cast<double>(m) * static_cast<double>(n) / static_cast<double>(m + n));
  result.p_value = KolmogorovSurvival((en + 0.12 + 0.11 / en) * result.d);
  return result;
}

namespace {

// InvalidArgument unless `options` has a confidence in (0, 1) and 1..kMaxBootstrapResamples
// resamples.
absl::Status CheckBootstrapOptions(const BootstrapOptions& options) {
  if (!(options.confidence > 0 && options.confidence < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("confidence must be in (0, 1), got ", options.confidence));
  }
  if (options.resamples < 1 || options.resamples > kMaxBootstrapResamples) {
    return absl::InvalidArgumentError(absl::StrCat(
        "resamples must be in [1, ", kMaxBootstrapResamples, "], got ", options.resamples));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RatioInterval> BootstrapMedianRatio(absl::Span<const double> a,
                                                   absl::Span<const double> b,
                                                   const BootstrapOptions& options) {
  RETURN_IF_ERROR(CheckSample(a, "first sample", /*allow_infinite=*/false));
  RETURN_IF_ERROR(CheckSample(b, "second sample", /*allow_infinite=*/false));
  RETURN_IF_ERROR(CheckBootstrapOptions(options));
  const bool positive = a[0] > 0;
  for (double x : a) {
    if (x == 0 || (x > 0) != positive) {
      return absl::InvalidArgumentError(
          "the ratio of medians needs a first sample of nonzero values of one sign");
    }
  }

  RatioInterval result;
  {
    std::vector<double> ca(a.begin(), a.end());
    std::vector<double> cb(b.begin(), b.end());
    result.estimate = MedianInPlace(cb) / MedianInPlace(ca);
  }

  std::mt19937_64 rng(options.seed);
  std::vector<double> ratios;
  ratios.reserve(static_cast<size_t>(options.resamples));
  std::vector<double> ra(a.size());
  std::vector<double> rb(b.size());
  for (int r = 0; r < options.resamples; ++r) {
    for (double& x : ra) x = a[UniformIndex(rng, a.size())];
    for (double& x : rb) x = b[UniformIndex(rng, b.size())];
    ratios.push_back(MedianInPlace(rb) / MedianInPlace(ra));
  }
  std::sort(ratios.begin(), ratios.end());
  const double alpha = 1 - options.confidence;
  result.lower = SortedQuantile(ratios, alpha / 2);
  result.upper = SortedQuantile(ratios, 1 - alpha / 2);
  return result;
}

absl::StatusOr<ShareInterval> BootstrapRecoveredShare(absl::Span<const double> good,
                                                      absl::Span<const double> bad,
                                                      absl::Span<const double> changed,
                                                      const BootstrapOptions& options) {
  RETURN_IF_ERROR(CheckSample(good, "GOOD's sample", /*allow_infinite=*/false));
  RETURN_IF_ERROR(CheckSample(bad, "BAD's sample", /*allow_infinite=*/false));
  RETURN_IF_ERROR(CheckSample(changed, "the changed sample", /*allow_infinite=*/false));
  RETURN_IF_ERROR(CheckBootstrapOptions(options));
  std::vector<double> rg(good.begin(), good.end());
  std::vector<double> rb(bad.begin(), bad.end());
  std::vector<double> rc(changed.begin(), changed.end());
  auto share = [&](double* out) {
    const double g = MedianInPlace(rg);
    const double b = MedianInPlace(rb);
    if (b == g) return false;
    *out = (b - MedianInPlace(rc)) / (b - g);
    return true;
  };
  ShareInterval result;
  if (!share(&result.estimate)) {
    return absl::InvalidArgumentError(
        "GOOD and BAD have the same median: there is no regression to recover");
  }
  std::mt19937_64 rng(options.seed);
  std::vector<double> shares;
  shares.reserve(static_cast<size_t>(options.resamples));
  for (int r = 0; r < options.resamples; ++r) {
    for (double& x : rg) x = good[UniformIndex(rng, good.size())];
    for (double& x : rb) x = bad[UniformIndex(rng, bad.size())];
    for (double& x : rc) x = changed[UniformIndex(rng, changed.size())];
    double value = 0;
    if (share(&value)) shares.push_back(value);
  }
  if (shares.size() * 2 < static_cast<size_t>(options.resamples)) {
    return absl::InvalidArgumentError(
        "GOOD's and BAD's samples overlap too much to say how much of the move is recovered");
  }
  std::sort(shares.begin(), shares.end());
  const double alpha = 1 - options.confidence;
  result.lower = SortedQuantile(shares, alpha / 2);
  result.upper = SortedQuantile(shares, 1 - alpha / 2);
  return result;
}

}  // namespace kbisect
