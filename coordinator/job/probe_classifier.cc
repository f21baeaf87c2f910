// Copyright 2026 The kbisect Authors.
#include "coordinator/job/probe_classifier.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "common/metric/percent.h"
#include "common/rpc/enum_label.h"
#include "common/stats/stats.h"
#include "common/text/count.h"

namespace kbisect {
namespace {

constexpr double kNoiseWarningPct = 5.0;
constexpr double kMinimumEffectPct = 1.0;

constexpr double kBaselineAlpha = 0.05;
constexpr double kBaselineClearZ = 4.0;
constexpr int kMinBaselineRuns = 5;
// Runs of each baseline below which their spread is unseen (one run each).
constexpr int kMinSpreadRuns = 2;
constexpr double kOverwhelmingZ = 10.0;
// How many standard errors of the estimate the spread is inflated by (see ConservativeSigma).
constexpr double kSigmaInflation = 1.0;
// The baselines' spread is inflated more: an under-estimate there biases every verdict.
constexpr double kBaselineSigmaInflation = 1.5;
// Standard errors apart at which a worker's GOOD has an offset from the reference's.
constexpr double kOffsetZ = 3.0;
// The confirmation's bootstrap: fixed seed (the same samples give the same interval), resamples.
constexpr uint64_t kConfirmationBootstrapSeed = 1;
constexpr int kConfirmationResamples = 4000;

double MeanOf(absl::Span<const double> values) { return Mean(values).value_or(0); }

// Pooled standard deviation of the two baselines around their own means, and its degrees of
// freedom.
struct PooledSpread {
  double sigma = 0;
  double dof = 1;
};

PooledSpread Pooled(absl::Span<const double> good, absl::Span<const double> bad) {
  const double ng = static_cast<double>(good.size());
  const double nb = static_cast<double>(bad.size());
  const double sg = good.size() > 1 ? SampleStdDev(good).value_or(0) : 0;
  const double sb = bad.size() > 1 ? SampleStdDev(bad).value_or(0) : 0;
  PooledSpread out;
  out.dof = std::max(1.0, ng + nb - 2);
  out.sigma = std::sqrt(((ng - 1) * sg * sg + (nb - 1) * sb * sb) / out.dof);
  return out;
}

double ConservativeSigma(absl::Span<const double> good, absl::Span<const double> bad,
                         double inflation = kSigmaInflation) {
  const PooledSpread pooled = Pooled(good, bad);
  const double floor = 1e-9 * std::max(std::fabs(MedianOrZero(good)), std::fabs(MedianOrZero(bad)));
  // Few samples under-estimate the spread as often as not: inflate by about one standard error
  // of the estimate, so that thin baselines ask for more runs instead of guessing.
  return std::max(pooled.sigma * (1 + inflation / std::sqrt(pooled.dof)), std::max(floor, 1e-300));
}

}  // namespace

double MedianOrZero(absl::Span<const double> samples) { return Median(samples).value_or(0); }

double BaselineNoise(absl::Span<const double> good, absl::Span<const double> bad) {
  if (good.empty() || bad.empty()) return 0;
  const double sigma = ConservativeSigma(good, bad);
  // ConservativeSigma never returns 0 (it divides by it); a spread of nothing seen is 0 here.
  return Pooled(good, bad).sigma == 0 ? 0 : sigma;
}

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

bool RepeatsABaseline(absl::Span<const double> samples, absl::Span<const double> good,
                      absl::Span<const double> bad) {
  auto one_value = [](absl::Span<const double> values, double value) {
    return std::all_of(values.begin(), values.end(), [value](double v) { return v == value; });
  };
  if (samples.empty() || good.empty() || bad.empty() || good[0] == bad[0] ||
      !one_value(good, good[0]) || !one_value(bad, bad[0])) {
    return false;
  }
  return one_value(samples, good[0]) || one_value(samples, bad[0]);
}

ProbeClassification ClassifyProbe(absl::Span<const double> samples, absl::Span<const double> good,
                                  absl::Span<const double> bad, const ClassifierOptions& options) {
  ProbeClassification out;
  const double g = MedianOrZero(good);
  const double b = MedianOrZero(bad);
  const double step = b - g;
  const double threshold = g + options.threshold_fraction * step;
  const int n = static_cast<int>(samples.size());
  out.median = MedianOrZero(samples);
  out.p_value_vs_good = MinTestPValue(samples, good);
  out.p_value_vs_bad = MinTestPValue(samples, bad);
  const v1::Verdict by_threshold = ClassifyByThreshold(samples, g, b, options.threshold_fraction);

  // Sequential evidence: Wald's log-likelihood ratio of "like BAD" against "like GOOD". Each
  // sample adds (mean_bad - mean_good) * (x - midpoint) / sigma^2, positive on BAD's side, its
  // weight capped so that one outlier cannot decide alone. Under one step every commit is like
  // GOOD or like BAD, and this test needs the fewest runs for a given error rate.
  const double mean_good = MeanOf(good);
  const double mean_bad = MeanOf(bad);
  const double mean_step = mean_bad - mean_good;
  const double sigma = std::max(ConservativeSigma(good, bad), options.noise_floor);
  const double unit = mean_step / (sigma * sigma);
  // At most 1 / min(min_runs, 3) of the evidence needed per sample: as many agreeing samples as
  // the user's floor, three at most.
  const int agreeing = std::clamp(options.min_runs, 1, 3);
  const double cap =
      std::min(2.0 * mean_step * mean_step / (sigma * sigma), options.evidence / agreeing);
  const double midpoint = (mean_good + mean_bad) / 2;
  double evidence = 0;
  for (double x : samples) evidence += std::clamp(unit * (x - midpoint), -cap, cap);
  const double margin = std::fabs(out.median - threshold);
  const bool in_floor_band = margin < options.floor_band * std::fabs(step);
  const int floor = in_floor_band ? options.floor_runs : 1;
  // The seed's threshold is the point rule: a commit whose median is significantly on the other
  // side of the threshold than the evidence says is a partial step (between the threshold and
  // the midpoint), which the threshold rule defines. It is measured on, and judged by the
  // threshold once the runs are exhausted.
  const double median_error = kMedianEfficiency * sigma / std::sqrt(static_cast<double>(n));
  const bool past_threshold = (out.median - threshold) * (step > 0 ? 1 : -1) > 0;
  const bool partial_step =
      (evidence > 0) != past_threshold && margin > options.partial_step_z * median_error;
  // (Within rounding: as many samples at the cap as the floor asks for must decide.)
  if (std::fabs(evidence) >= options.evidence * (1 - 1e-9) && n >= floor) {
    if (!partial_step) {
      out.verdict = evidence > 0 ? v1::VERDICT_BAD : v1::VERDICT_GOOD;
      out.reason = absl::StrFormat("median %.4g, evidence %.1f after %s (threshold %.4g)",
                                   out.median, evidence, Count(n, "run"), threshold);
      return out;
    }
    if (n >= options.max_runs) {
      out.verdict = by_threshold;
      out.reason = absl::StrFormat(
          "median %.4g lies between the threshold %.4g and the midpoint after %s: a partial "
          "step, judged by the threshold",
          out.median, threshold, Count(n, "run"));
      return out;
    }
  }
  if (n < options.max_runs) {
    // As many runs as the evidence still missing needs at the expected rate per run (half the
    // squared step in noise units), at least two, at most twice as many as so far.
    const double per_run =
        std::max(1e-9, std::min(cap, mean_step * mean_step / (2 * sigma * sigma)));
    const double missing = std::max(0.0, options.evidence - std::fabs(evidence));
    // Compared before the cast: far from the threshold the quotient passes INT_MAX (found by
    // tests/fuzz/task_result_fuzz), and only up to n of it is used.
    const double expected_runs = std::ceil(missing / per_run);
    const int expected = expected_runs < n ? static_cast<int>(expected_runs) : n;
    out.more_runs = std::min(std::max({std::min(expected, n), 2, floor - n}), options.max_runs - n);
    out.reason = absl::StrFormat("median %.4g, evidence %.1f of %.1f needed after %s: %s",
                                 out.median, evidence, options.evidence, Count(n, "run"),
                                 Count(out.more_runs, "more run"));
    return out;
  }
  // At the cap: the threshold side must be backed by a test against the other baseline.
  const double p_other = by_threshold == v1::VERDICT_BAD ? out.p_value_vs_good : out.p_value_vs_bad;
  if (p_other < options.alpha) {
    out.verdict = by_threshold;
    out.reason = absl::StrFormat("after %s: median %.4g, p=%.3g against the other baseline",
                                 Count(n, "run"), out.median, p_other);
  } else {
    out.verdict = v1::VERDICT_AMBIGUOUS;
    out.reason = absl::StrFormat(
        "after %s the median %.4g is not distinguishable from either baseline "
        "(p vs GOOD %.3g, p vs BAD %.3g)",
        Count(n, "run"), out.median, out.p_value_vs_good, out.p_value_vs_bad);
  }
  return out;
}

BaselineAssessment AssessBaselines(absl::Span<const double> good, absl::Span<const double> bad,
                                   v1::Direction direction, double min_effect_fraction,
                                   int max_runs, double noise_floor) {
  BaselineAssessment out;
  out.good_median = MedianOrZero(good);
  out.bad_median = MedianOrZero(bad);
  out.regression_pct = RegressionPercent(out.good_median, out.bad_median, direction);
  const double magnitude = std::fabs(out.regression_pct);
  const double min_effect_pct = std::max(kMinimumEffectPct, min_effect_fraction * 100.0);

  const auto [good_min, good_max] = std::minmax_element(good.begin(), good.end());
  const auto [bad_min, bad_max] = std::minmax_element(bad.begin(), bad.end());
  const bool overlap = !(*good_max < *bad_min || *bad_max < *good_min);
  out.p_value = MinTestPValue(good, bad);

  const double sigma = std::max(ConservativeSigma(good, bad, kBaselineSigmaInflation), noise_floor);
  const size_t n = std::min(good.size(), bad.size());
  const double standard_error = kMedianEfficiency * sigma * std::sqrt(2.0 / static_cast<double>(n));
  // The difference's uncertainty in percent of GOOD: "no regression" needs it small too.
  const double uncertainty_pct =
      out.good_median == 0 ? 0 : 100.0 * standard_error / std::fabs(out.good_median);
  // One run of each shows no spread at all: "nothing to bisect" or "swapped" would rest on two
  // numbers whose noise is unknown. Those conclusions wait for a few more runs of each.
  const bool spread_unseen = static_cast<int>(n) < kMinSpreadRuns && static_cast<int>(n) < max_runs;
  const int spread_runs =
      std::min(kMinSpreadRuns + 1 - static_cast<int>(n), max_runs - static_cast<int>(n));
  if (spread_unseen && (magnitude < min_effect_pct || out.regression_pct < 0)) {
    out.more_runs = spread_runs;
    out.reason = absl::StrFormat(
        "GOOD and BAD differ by %s on one run each, which shows no noise: %d more runs of "
        "each before concluding",
        FormatPercent(out.regression_pct), out.more_runs);
    return out;
  }
  if (magnitude < min_effect_pct) {
    if (magnitude + 2 * uncertainty_pct >= 2 * min_effect_pct && static_cast<int>(n) < max_runs) {
      out.more_runs = std::min(static_cast<int>(n), max_runs - static_cast<int>(n));
      out.reason = absl::StrFormat(
          "GOOD and BAD differ by %s +- %s: too noisy to rule out a regression; %d more "
          "runs of each",
          FormatPercent(magnitude), FormatPercent(uncertainty_pct), out.more_runs);
      return out;
    }
    out.reason = absl::StrFormat(
        "GOOD and BAD differ by %s, under the minimum effect of %s: nothing to bisect",
        FormatPercent(magnitude), FormatPercent(min_effect_pct));
    return out;
  }
  // The baselines fix the midpoint and the threshold every verdict is measured against: the
  // difference of their means must be kBaselineClearZ standard errors, which puts the midpoint
  // within a quarter of the half-step (one standard error). Three samples can look tight by
  // chance: below kMinBaselineRuns only an overwhelming, non-overlapping separation counts.
  const double mean_error = sigma * std::sqrt(1.0 / static_cast<double>(good.size()) +
                                              1.0 / static_cast<double>(bad.size()));
  const double mean_difference = std::fabs(MeanOf(bad) - MeanOf(good));
  const double z = mean_error > 0 ? mean_difference / mean_error : kOverwhelmingZ;
  const bool clear = static_cast<int>(n) >= kMinBaselineRuns ? z >= kBaselineClearZ
                                                             : !overlap && z >= kOverwhelmingZ;
  if (!clear) {
    if (static_cast<int>(n) < max_runs) {
      // Enough runs of each for the clear z, if the spread and the difference hold: at least
      // half again as many, at most twice as many.
      // Capped at 2n in floating point (more than n more runs are never asked for below): a
      // tiny difference or a huge spread makes the quotient infinite, and casting that to int
      // is undefined (found by tests/fuzz/task_result_fuzz).
      const double wanted =
          mean_difference > 0 && std::isfinite(sigma)
              ? std::min(2.0 * std::pow(kBaselineClearZ * sigma / mean_difference, 2),
                         2.0 * static_cast<double>(n))
              : 2.0 * static_cast<double>(n);
      const int more = std::clamp(static_cast<int>(std::ceil(wanted)) - static_cast<int>(n),
                                  std::max(2, static_cast<int>(n) / 4), static_cast<int>(n));
      out.more_runs = std::min(more, max_runs - static_cast<int>(n));
      out.reason = absl::StrFormat(
          "GOOD and BAD differ by %s but the samples are too noisy to place the threshold "
          "(%.1f standard errors apart, %.0f needed): %d more runs of each",
          FormatPercent(magnitude), z, kBaselineClearZ, out.more_runs);
      return out;
    }
    if (out.p_value >= kBaselineAlpha) {
      out.reason = absl::StrFormat(
          "GOOD and BAD differ by %s but after %d runs each the difference is not "
          "significant (p=%.3g): it is within the noise",
          FormatPercent(magnitude), static_cast<int>(n), out.p_value);
      return out;
    }
  }
  if (out.regression_pct < 0) {
    out.improvement = true;
    out.reason = absl::StrFormat(
        "BAD is %s better than GOOD (GOOD median %g, BAD median %g): the endpoints look "
        "swapped",
        FormatPercent(magnitude), out.good_median, out.bad_median);
    return out;
  }
  out.regression = true;
  if (magnitude < kNoiseWarningPct) {
    out.warnings.emplace_back().mutable_small_regression()->set_regression_pct(magnitude);
  }
  return out;
}

double MinimumConfirmedStep(double min_effect_fraction) {
  return 0.5 * std::max(kMinimumEffectPct / 100.0, min_effect_fraction);
}

ConfirmationJudgement JudgeConfirmation(absl::Span<const double> last_good,
                                        absl::Span<const double> culprit, bool worse_is_up) {
  ConfirmationJudgement out;
  if (last_good.empty() || culprit.empty()) return out;
  BootstrapOptions options;
  options.seed = kConfirmationBootstrapSeed;
  options.resamples = kConfirmationResamples;
  absl::StatusOr<RatioInterval> ratio = BootstrapMedianRatio(last_good, culprit, options);
  if (!ratio.ok()) return out;
  out.measured = true;
  out.ratio = ratio->estimate;
  out.ci_low = ratio->lower;
  out.ci_high = ratio->upper;
  // The step must reproduce in the direction of the regression, excluding "no change".
  out.confirmed = worse_is_up ? ratio->lower > 1 : ratio->upper < 1;
  out.last_good_median = MedianOrZero(last_good);
  out.culprit_median = MedianOrZero(culprit);
  return out;
}

bool OffsetIsSignificant(absl::Span<const double> calibration, absl::Span<const double> reference) {
  if (calibration.empty() || reference.empty()) return false;
  const double sigma = ConservativeSigma(calibration, reference);
  const double error = sigma * std::sqrt(1.0 / static_cast<double>(calibration.size()) +
                                         1.0 / static_cast<double>(reference.size()));
  const double difference = std::fabs(MeanOf(calibration) - MeanOf(reference));
  return error > 0 && difference > kOffsetZ * error;
}

bool OffsetExceeds(absl::Span<const double> samples, absl::Span<const double> reference,
                   double center, double limit) {
  if (samples.empty() || reference.empty()) return false;
  const double sigma = ConservativeSigma(samples, reference);
  const double error = sigma * std::sqrt(1.0 / static_cast<double>(samples.size()) +
                                         1.0 / static_cast<double>(reference.size()));
  return std::fabs(MeanOf(samples) - center) - 2 * error > std::fabs(limit);
}

v1::Verdict ClassifyByThreshold(absl::Span<const double> samples, double good_median,
                                double bad_median, double threshold_fraction) {
  const double median = MedianOrZero(samples);
  const double threshold = good_median + threshold_fraction * (bad_median - good_median);
  return (median - threshold) * (bad_median - good_median) > 0 ? v1::VERDICT_BAD : v1::VERDICT_GOOD;
}

}  // namespace kbisect
