// Copyright 2026 The kbisect Authors.
//
// Small, pure statistics used to turn benchmark samples into verdicts: robust location and spread
// (median, MAD), moments (mean, sample standard deviation, coefficient of variation), two
// two-sample tests (Mann-Whitney U and Kolmogorov-Smirnov) and a bootstrap confidence interval of
// the ratio of medians.
//
// Every function is pure and thread-safe. Inputs are spans of doubles; every function rejects an
// empty sample or a sample holding a NaN with absl::InvalidArgumentError (NaN has no place in an
// ordering), so no function ever returns NaN. Infinite values are accepted only by the two rank
// tests (where they are simply the largest or smallest values) and rejected everywhere else.
//
//   ASSIGN_OR_RETURN(MannWhitneyResult mw, MannWhitneyU(good_samples, bad_samples));
//   if (mw.p_value < 0.01) ...
//   BootstrapOptions options;
//   options.seed = job_seed;
//   ASSIGN_OR_RETURN(RatioInterval ci, BootstrapMedianRatio(good, bad, options));
//
#ifndef KBISECT_COMMON_STATS_STATS_H_
#define KBISECT_COMMON_STATS_STATS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace kbisect {

// The factor that makes the MAD a consistent estimator of the standard deviation of normally
// distributed data: 1 / Phi^-1(3/4) (R's mad() default `constant = 1.4826`).
inline constexpr double kMadNormalScale = 1.4826;

// Returns the median of `xs`: the middle order statistic for an odd size, the mean of the two
// middle ones for an even size. Errors: InvalidArgument if `xs` is empty or holds a NaN or an
// infinity.
absl::StatusOr<double> Median(absl::Span<const double> xs);

// Returns the raw median absolute deviation of `xs`: median(|x_i - median(xs)|), without any
// scale factor. Errors: as Median.
absl::StatusOr<double> MedianAbsoluteDeviation(absl::Span<const double> xs);

// Returns kMadNormalScale * MedianAbsoluteDeviation(xs), the MAD scaled to estimate a standard
// deviation (R's mad(x) default). Errors: as Median.
absl::StatusOr<double> ScaledMad(absl::Span<const double> xs);

// Returns the arithmetic mean of `xs`. Errors: as Median, and InvalidArgument if the sum
// overflows.
absl::StatusOr<double> Mean(absl::Span<const double> xs);

// Returns the sample standard deviation of `xs` (denominator n - 1). Errors: as Mean, and
// InvalidArgument if `xs` has fewer than two values.
absl::StatusOr<double> SampleStdDev(absl::Span<const double> xs);

// Returns the coefficient of variation SampleStdDev(xs) / |Mean(xs)|. Errors: as SampleStdDev,
// and InvalidArgument if the mean is zero.
absl::StatusOr<double> CoefficientOfVariation(absl::Span<const double> xs);

// How a two-sample test computes its p-value.
enum class PValueMethod {
  kAuto,        // Exact where the test below says so, asymptotic otherwise.
  kExact,       // Exact permutation distribution; an error where it is not available.
  kAsymptotic,  // Large-sample approximation.
};

// The result of a two-sided Mann-Whitney U (Wilcoxon rank-sum) test.
struct MannWhitneyResult {
  // U for the first sample: R_a - n_a (n_a + 1) / 2, where R_a is the sum of the (mid)ranks of
  // the first sample in the pooled data. It equals R's wilcox.test(a, b)$statistic (W) and
  // scipy's mannwhitneyu(a, b).statistic. U = n_a n_b means every a is above every b.
  double u = 0;
  // The two-sided p-value, in [0, 1].
  double p_value = 1;
  // True if p_value comes from the exact null distribution.
  bool exact = false;
};

// Runs the two-sided Mann-Whitney U test of "a and b come from the same distribution" against a
// location shift in either direction.
//
// With kAuto the p-value is exact when there are no ties and both samples have fewer than 50
// values (R's wilcox.test default rule), computed from the distribution of U under H0 by the
// standard counting recursion; p = min(1, 2 min(P(U <= u), P(U >= u))). Otherwise it is the
// normal approximation with tie correction and continuity correction, as R's wilcox.test(correct
// = TRUE) and scipy's mannwhitneyu(method="asymptotic", use_continuity=True): z = (|U - n_a n_b /
// 2| - 1/2) / sigma with sigma^2 = n_a n_b / 12 ((N + 1) - sum(t^3 - t) / (N (N - 1))), p =
// 2 (1 - Phi(z)); when every value is tied (sigma = 0) the p-value is 1.
//
// kExact fails with InvalidArgument when the samples hold ties or n_a * n_b exceeds 10000; use
// kAuto to fall back to the approximation instead. Errors: InvalidArgument if either sample is
// empty or holds a NaN.
absl::StatusOr<MannWhitneyResult> MannWhitneyU(absl::Span<const double> a,
                                               absl::Span<const double> b,
                                               PValueMethod method = PValueMethod::kAuto);

// The result of a two-sided two-sample Kolmogorov-Smirnov test.
struct KolmogorovSmirnovResult {
  // D = sup_x |F_a(x) - F_b(x)| over the two empirical distribution functions, in [0, 1].
  double d = 0;
  // The two-sided p-value P(D >= d) under H0, in [0, 1].
  double p_value = 1;
  // True if p_value is exact.
  bool exact = false;
};

// Runs the two-sided two-sample Kolmogorov-Smirnov test.
//
// The choice of p-value follows scipy.stats.ks_2samp(method="auto"): exact when max(n_a, n_b) <=
// 10000, asymptotic otherwise. The exact p-value is P(D >= d) for D over the C(m+n, m) equally
// likely orderings of the pooled sample, computed as the probability that a random lattice path
// leaves the band |i/m - j/n| < d; it equals ks_2samp(method="exact") (it assumes no ties, as
// scipy does). The asymptotic p-value is the Kolmogorov distribution with Stephens' small-sample
// correction, Q_KS((sqrt(N_e) + 0.12 + 0.11 / sqrt(N_e)) d) with N_e = m n / (m + n), as in
// Numerical Recipes and scipy <= 1.4 ks_2samp(mode="asymp") (modern scipy's asymptotic mode uses
// kstwo instead, which differs slightly for small samples).
//
// kExact fails with InvalidArgument when n_a * n_b exceeds 10^8 (the exact computation takes
// O(n_a n_b) time). Errors: InvalidArgument if either sample is empty or holds a NaN.
absl::StatusOr<KolmogorovSmirnovResult> KolmogorovSmirnov(
    absl::Span<const double> a, absl::Span<const double> b,
    PValueMethod method = PValueMethod::kAuto);

// Returns Q_KS(lambda) = P(K > lambda) for the limiting Kolmogorov distribution,
// 2 sum_{j>=1} (-1)^(j-1) exp(-2 j^2 lambda^2), in [0, 1] (1 for lambda <= 0).
double KolmogorovSurvival(double lambda);

// Options of BootstrapMedianRatio.
struct BootstrapOptions {
  // The two-sided confidence level of the interval, in (0, 1).
  double confidence = 0.95;
  // The number of bootstrap resamples; at least 1.
  int resamples = 10000;
  // The seed of the std::mt19937_64 that draws the resamples. The same inputs, options and seed
  // give the same interval on every platform (indices are drawn by rejection sampling on the raw
  // engine output, not by the implementation-defined std::uniform_int_distribution).
  uint64_t seed = 0;
};

// A bootstrap confidence interval of median(b) / median(a).
struct RatioInterval {
  double estimate = 0;  // median(b) / median(a) on the original samples.
  double lower = 0;     // Lower bound of the interval.
  double upper = 0;     // Upper bound of the interval.
};

// Returns the percentile bootstrap confidence interval of median(b) / median(a). Each resample
// draws n_a values from `a` and n_b values from `b` with replacement (independently) and computes
// the ratio of their medians; the bounds are the (1 - confidence) / 2 and (1 + confidence) / 2
// quantiles of the resampled ratios (linear interpolation between order statistics, R's type 7).
//
// Errors: InvalidArgument if either sample is empty or holds a NaN or an infinity, if `a` holds a
// zero or values of both signs (so that some resampled median of `a` could be zero), or if the
// options are out of range.
absl::StatusOr<RatioInterval> BootstrapMedianRatio(absl::Span<const double> a,
                                                   absl::Span<const double> b,
                                                   const BootstrapOptions& options);

// A bootstrap confidence interval of the share of a regression that a change recovers: with
// GOOD's samples `good`, BAD's `bad` and BAD-with-the-change's `changed`,
//
//   share = (median(bad) - median(changed)) / (median(bad) - median(good))
//
// 1 when the change brings BAD back to GOOD, 0 when it changes nothing, above 1 when it
// overshoots, below 0 when it makes BAD worse (`--verify-revert`: the culprit reverted at BAD).
struct ShareInterval {
  double estimate = 0;  // The share on the original samples.
  double lower = 0;
  double upper = 0;
};

// Returns the percentile bootstrap interval of the share above: each resample draws each of the
// three samples with replacement, independently, and resamples whose GOOD and BAD medians are
// equal are skipped (their share is undefined). Errors: InvalidArgument if a sample is empty or
// not finite, if median(good) == median(bad) (no regression to recover), if more than half of
// the resamples were skipped, or if the options are out of range.
absl::StatusOr<ShareInterval> BootstrapRecoveredShare(absl::Span<const double> good,
                                                      absl::Span<const double> bad,
                                                      absl::Span<const double> changed,
                                                      const BootstrapOptions& options);

}  // namespace kbisect

#endif  // KBISECT_COMMON_STATS_STATS_H_
