// Copyright 2026 The kbisect Authors.
#include "coordinator/probe_classifier.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"

namespace kbisect {
namespace {

constexpr double kNoiseWarningPct = 5.0;
constexpr double kMinimumEffectPct = 1.0;

double MedianOf(absl::Span<const double> values) {
  std::vector<double> copy(values.begin(), values.end());
  std::sort(copy.begin(), copy.end());
  const size_t n = copy.size();
  return n % 2 == 1 ? copy[n / 2] : (copy[n / 2 - 1] + copy[n / 2]) / 2.0;
}

}  // namespace

double RegressionPercent(double before, double after, v1::Direction direction) {
  if (before == 0) return 0;
  const double pct = (after - before) / std::fabs(before) * 100.0;
  return direction == v1::DIRECTION_HIGHER_IS_BETTER ? -pct : pct;
}

BaselineAssessment AssessBaselines(absl::Span<const double> good, absl::Span<const double> bad,
                                   v1::Direction direction, double min_effect_fraction) {
  BaselineAssessment out;
  out.good_median = MedianOf(good);
  out.bad_median = MedianOf(bad);
  out.regression_pct = RegressionPercent(out.good_median, out.bad_median, direction);
  const double magnitude = std::fabs(out.regression_pct);
  const double min_effect_pct = std::max(kMinimumEffectPct, min_effect_fraction * 100.0);

  const auto [good_min, good_max] = std::minmax_element(good.begin(), good.end());
  const auto [bad_min, bad_max] = std::minmax_element(bad.begin(), bad.end());
  const bool overlap = !(*good_max < *bad_min || *bad_max < *good_min);

  if (magnitude < min_effect_pct) {
    out.reason = absl::StrFormat(
        "GOOD and BAD differ by %.2f%%, under the minimum effect of %.2f%%: nothing to bisect",
        magnitude, min_effect_pct);
    return out;
  }
  if (overlap && magnitude < kNoiseWarningPct) {
    out.reason = absl::StrFormat(
        "GOOD and BAD samples overlap and differ by only %.2f%%: the difference is within the "
        "noise; rerun with more --runs or a lower-noise benchmark",
        magnitude);
    return out;
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
