// Copyright 2026 The kbisect Authors.
#include "coordinator/probe_classifier.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "common/stats/stats.h"

namespace kbisect {
namespace {

constexpr double kNoiseWarningPct = 5.0;
constexpr double kMinimumEffectPct = 1.0;

constexpr double kBaselineAlpha = 0.05;
// Standard error of a median relative to that of a mean (normal data): sqrt(pi / 2).
constexpr double kMedianEfficiency = 1.2533;

double MedianOf(absl::Span<const double> values) { return Median(values).value_or(0); }

// Robust spread of one sample set: the scaled MAD, or the standard deviation when the MAD is 0
// (few distinct values), or 0 for a single sample.
double Spread(absl::Span<const double> values) {
  const double mad = ScaledMad(values).value_or(0);
  if (mad > 0) return mad;
  return values.size() > 1 ? SampleStdDev(values).value_or(0) : 0;
}

// Pooled spread of the two baselines, never 0 (a deterministic benchmark gets a tiny one).
double PooledSpread(absl::Span<const double> good, absl::Span<const double> bad) {
  const double a = Spread(good);
  const double b = Spread(bad);
  const double pooled = std::sqrt((a * a + b * b) / 2.0);
  const double floor = 1e-9 * std::max(std::fabs(MedianOf(good)), std::fabs(MedianOf(bad)));
  return std::max(pooled, std::max(floor, 1e-300));
}

}  // namespace

double RegressionPercent(double before, double after, v1::Direction direction) {
  if (before == 0) return 0;
  const double pct = (after - before) / std::fabs(before) * 100.0;
  return direction == v1::DIRECTION_HIGHER_IS_BETTER ? -pct : pct;
}

double MinTestPValue(absl::Span<const double> a, absl::Span<const double> b) {
  if (a.empty() || b.empty()) return 1;
  double p = 1;
  if (absl::StatusOr<MannWhitneyResult> u = MannWhitneyU(a, b); u.ok()) p = std::min(p, u->p_value);
  if (absl::StatusOr<KolmogorovSmirnovResult> ks = KolmogorovSmirnov(a, b); ks.ok()) {
    p = std::min(p, ks->p_value);
  }
  return p;
}

ProbeClassification ClassifyProbe(absl::Span<const double> samples, absl::Span<const double> good,
                                  absl::Span<const double> bad, const ClassifierOptions& options) {
  ProbeClassification out;
  const double g = MedianOf(good);
  const double b = MedianOf(bad);
  const double step = std::fabs(b - g);
  const double threshold = g + options.threshold_fraction * (b - g);
  const int n = static_cast<int>(samples.size());
  out.median = MedianOf(samples);
  out.p_value_vs_good = MinTestPValue(samples, good);
  out.p_value_vs_bad = MinTestPValue(samples, bad);
  const v1::Verdict by_threshold = ClassifyByThreshold(samples, g, b, options.threshold_fraction);
  const double margin = std::fabs(out.median - threshold);
  // The probe's own scatter counts too: a commit can be noisier than the baselines.
  const double sigma = PooledSpread(good, bad);
  const double probe_sigma = std::max(Spread(samples), sigma);
  const size_t base_n = std::min(good.size(), bad.size());
  const double standard_error =
      kMedianEfficiency * std::sqrt(probe_sigma * probe_sigma / n +
                                    sigma * sigma / static_cast<double>(base_n));
  const double z = margin / standard_error;
  const bool in_floor_band = margin < options.floor_band * step;
  const int floor = in_floor_band ? options.floor_runs : 1;
  if (z >= options.clear_z && n >= floor) {
    out.verdict = by_threshold;
    out.reason = absl::StrFormat("median %.4g is %.1f standard errors from the threshold %.4g",
                                 out.median, z, threshold);
    return out;
  }
  if (n < options.max_runs) {
    out.more_runs = std::min(std::max(n, floor - n), options.max_runs - n);
    out.reason = absl::StrFormat(
        "median %.4g is only %.1f standard errors from the threshold %.4g: %d more runs",
        out.median, z, threshold, out.more_runs);
    return out;
  }
  // At the cap: the threshold side must be backed by a test against the other baseline.
  const double p_other = by_threshold == v1::VERDICT_BAD ? out.p_value_vs_good : out.p_value_vs_bad;
  if (p_other < options.alpha) {
    out.verdict = by_threshold;
    out.reason = absl::StrFormat("after %d runs: median %.4g, p=%.3g against the other baseline",
                                 n, out.median, p_other);
  } else {
    out.verdict = v1::VERDICT_AMBIGUOUS;
    out.reason = absl::StrFormat(
        "after %d runs the median %.4g is not distinguishable from either baseline "
        "(p vs GOOD %.3g, p vs BAD %.3g)",
        n, out.median, out.p_value_vs_good, out.p_value_vs_bad);
  }
  return out;
}

BaselineAssessment AssessBaselines(absl::Span<const double> good, absl::Span<const double> bad,
                                   v1::Direction direction, double min_effect_fraction,
                                   int max_runs) {
  BaselineAssessment out;
  out.good_median = MedianOf(good);
  out.bad_median = MedianOf(bad);
  out.regression_pct = RegressionPercent(out.good_median, out.bad_median, direction);
  const double magnitude = std::fabs(out.regression_pct);
  const double min_effect_pct = std::max(kMinimumEffectPct, min_effect_fraction * 100.0);

  const auto [good_min, good_max] = std::minmax_element(good.begin(), good.end());
  const auto [bad_min, bad_max] = std::minmax_element(bad.begin(), bad.end());
  const bool overlap = !(*good_max < *bad_min || *bad_max < *good_min);
  out.p_value = MinTestPValue(good, bad);

  if (magnitude < min_effect_pct) {
    out.reason = absl::StrFormat(
        "GOOD and BAD differ by %.2f%%, under the minimum effect of %.2f%%: nothing to bisect",
        magnitude, min_effect_pct);
    return out;
  }
  const double sigma = PooledSpread(good, bad);
  const size_t n = std::min(good.size(), bad.size());
  const double z = std::fabs(out.bad_median - out.good_median) /
                   (kMedianEfficiency * sigma * std::sqrt(2.0 / static_cast<double>(n)));
  const bool clear = !overlap && (z >= 3.0 || magnitude >= kNoiseWarningPct);
  if (!clear) {
    if (static_cast<int>(n) < max_runs) {
      out.more_runs = std::min(static_cast<int>(n), max_runs - static_cast<int>(n));
      out.reason = absl::StrFormat(
          "GOOD and BAD differ by %.2f%% but the samples are too noisy to tell (%s): %d more runs "
          "of each",
          magnitude, overlap ? "they overlap" : "too few", out.more_runs);
      return out;
    }
    if (out.p_value >= kBaselineAlpha) {
      out.reason = absl::StrFormat(
          "GOOD and BAD differ by %.2f%% but after %d runs each the difference is not "
          "significant (p=%.3g): it is within the noise",
          magnitude, static_cast<int>(n), out.p_value);
      return out;
    }
  }
  if (out.regression_pct < 0) {
    out.improvement = true;
    out.reason = absl::StrFormat(
        "BAD is %.2f%% better than GOOD (GOOD median %g, BAD median %g): the endpoints look "
        "swapped",
        magnitude, out.good_median, out.bad_median);
    return out;
  }
  out.regression = true;
  if (magnitude < kNoiseWarningPct) {
    out.warnings.push_back(absl::StrFormat(
        "the regression is only %.2f%% (under 5%%): it may be noise; consider more --runs",
        magnitude));
  }
  return out;
}

v1::Verdict ClassifyByThreshold(absl::Span<const double> samples, double good_median,
                                double bad_median, double threshold_fraction) {
  const double median = MedianOf(samples);
  const double threshold = good_median + threshold_fraction * (bad_median - good_median);
  return (median - threshold) * (bad_median - good_median) > 0 ? v1::VERDICT_BAD
                                                                : v1::VERDICT_GOOD;
}

}  // namespace kbisect
