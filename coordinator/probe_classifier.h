// Copyright 2026 The kbisect Authors.
//
// Turns a probe's samples into a verdict relative to the GOOD and BAD baselines. Pure: no I/O,
// no clock, so the bisect simulation benchmark can run it millions of times.
#ifndef KBISECT_COORDINATOR_PROBE_CLASSIFIER_H_
#define KBISECT_COORDINATOR_PROBE_CLASSIFIER_H_

#include <string>
#include <vector>

#include "absl/types/span.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// What the baselines say about the job, computed once both are measured.
struct BaselineAssessment {
  double good_median = 0;
  double bad_median = 0;
  // Regression of BAD versus GOOD in percent, positive when BAD is worse for `direction`.
  double regression_pct = 0;
  // True when BAD and GOOD are different enough to bisect (see AssessBaselines).
  bool regression = false;
  // True when BAD is better than GOOD (the endpoints look swapped).
  bool improvement = false;
  // Human-readable reasons: why there is no regression, or warnings (e.g. under 5%: maybe noise).
  std::string reason;
  std::vector<std::string> warnings;
};

// Compares GOOD and BAD samples. Both spans must be non-empty. `direction` must be LOWER or
// HIGHER. A move counts as a regression when the medians differ by at least
// max(min_effect_fraction, 1%) of GOOD and either the two sample sets do not overlap or the move is
// at least 5%; a regression under 5% carries the seed's "may be noise" warning.
BaselineAssessment AssessBaselines(absl::Span<const double> good, absl::Span<const double> bad,
                                   v1::Direction direction, double min_effect_fraction);

// The seed's point rule: a probe is BAD when its median lies past
// good + threshold_fraction * (bad - good), on BAD's side; otherwise GOOD. `samples` must be
// non-empty and good_median != bad_median.
v1::Verdict ClassifyByThreshold(absl::Span<const double> samples, double good_median,
                                double bad_median, double threshold_fraction);

// Regression of `after` versus `before` in percent, positive when `after` is worse for `direction`.
double RegressionPercent(double before, double after, v1::Direction direction);

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_PROBE_CLASSIFIER_H_
