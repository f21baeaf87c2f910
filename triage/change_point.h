// Copyright 2026 The kbisect Authors.
//
// Change-point detection on one nightly series, in the spirit of E-divisive / Hunter (Otava):
// binary segmentation that, within a segment, picks the split minimising a robust (L1) cost and
// keeps it only when a permutation test, a minimum effect size and a noise multiple all agree.
// Pure and deterministic (the permutations use a fixed seed).
//
// The split of [lo, hi) at k (left [lo, k), right [k, hi)) costs
//
//   cost(k) = sum_left |x - median(left)| + sum_right |x - median(right)|
//
// and the chosen k maximises gain(k) = cost(no split) - cost(k). Absolute (not squared)
// residuals make one outlier weigh little, medians make a single-night spike unable to create a
// step, and misplacing even one point costs, so the location is exact. The significance is the
// permutation p-value of the maximal gain (the segment's values shuffled `permutations` times).
// The reported score is a robust t-statistic,
//
//   score(k) = |median(right) - median(left)| / sigma(k) * sqrt(n_l n_r / (n_l + n_r))
//
// with sigma(k) the MAD (scaled to a standard deviation) of the residuals from each side's
// median. The minimum segment length (3 nightlies) means a step must persist.
//
//   ASSIGN_OR_RETURN(SeriesAnalysis a, AnalyzeSeries(values, ChangePointOptions()));
//   for (const ChangePoint& cp : a.change_points) ...
#ifndef KBISECT_TRIAGE_CHANGE_POINT_H_
#define KBISECT_TRIAGE_CHANGE_POINT_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace kbisect {
namespace triage {

// Thresholds of the detector. The defaults are documented in docs/triage.md.
struct ChangePointOptions {
  // The fewest points on each side of a change point; a move that lasts fewer nightlies is a
  // spike or an excursion, never a step.
  int min_segment = 3;
  // The smallest |after - before| / |before| that counts as a move (2%).
  double min_relative_change = 0.02;
  // The smallest |after - before| / sigma, in units of the series' own noise.
  double min_noise_multiple = 3.0;
  // The largest permutation p-value that counts as significant.
  double max_p_value = 0.01;
  // The number of random permutations of the permutation test (p-value resolution 1/(n+1)).
  int permutations = 999;
  // The seed of the permutations, so that the same series always gives the same answer.
  uint64_t seed = 20260922;
  // The most change points binary segmentation returns.
  int max_change_points = 10;
  // A change point whose local jump (median of the 3 points after minus the 3 before) is at
  // least this fraction of its whole move is a step; below, the move is a gradual drift.
  double step_sharpness = 0.6;
  // A point further than this many noise sigmas from the median of its neighbours (3 each side,
  // within its own level) is a spike.
  double spike_z = 5.0;
};

// One accepted change point.
struct ChangePoint {
  // The index of the first point of the new level ("first bad"); index - 1 is the last point of
  // the old level ("last good").
  int index = 0;
  // The level segments the medians are taken over: [begin, index) before and [index, end) after,
  // bounded by the neighbouring change points (or the series ends).
  int begin = 0;
  int end = 0;
  // The medians before and after.
  double before = 0;
  double after = 0;
  // (after - before) / |before|; 0 when before is 0.
  double relative_change = 0;
  // The robust standard deviation of the residuals around the two levels.
  double sigma = 0;
  // The robust t-statistic of the split (see the file comment).
  double score = 0;
  // The permutation p-value of the maximal L1 gain within the segment it was found in.
  double p_value = 1;
  // The two-sided Mann-Whitney U p-value of before vs after.
  double mann_whitney_p = 1;
  // The local jump over the whole move, in [0, 1] once clipped: ~1 for a step, small for a drift.
  double sharpness = 0;
  // The fraction of the after points that lie on the after side of the midpoint of the levels.
  double persistence = 0;
  // Over the run of consecutive same-direction change points around this one: the L1 cost of the
  // best straight line (Theil-Sen) divided by the L1 cost of the piecewise-constant levels.
  // Below 1 a line explains the data better than steps do: the move is a gradual drift.
  double line_fit = 0;

  // Returns true if the move is a step: sharpness reaches `options.step_sharpness` and a straight
  // line does not explain the data better (line_fit >= 1).
  bool IsStep(const ChangePointOptions& options) const {
    return sharpness >= options.step_sharpness && line_fit >= 1;
  }
};

// One point far from its neighbours that is not part of a step.
struct Spike {
  int index = 0;
  double value = 0;
  // The median of its neighbours.
  double baseline = 0;
  // (value - baseline) / |baseline|.
  double relative_deviation = 0;
  // (value - baseline) / noise sigma.
  double z = 0;
};

// The result of AnalyzeSeries.
struct SeriesAnalysis {
  // Accepted change points, ordered by index.
  std::vector<ChangePoint> change_points;
  // Spikes, ordered by index.
  std::vector<Spike> spikes;
  // The series' robust point-to-point noise: 1.4826 * median(|x[i+1] - x[i]|) / sqrt(2), which
  // steps barely affect.
  double noise_sigma = 0;
};

// Finds the change points and spikes of `xs` (in time order). A series shorter than
// 2 * min_segment has no change points (only spikes). Errors: InvalidArgument if `xs` is empty,
// holds a NaN or an infinity, or the options are out of range.
absl::StatusOr<SeriesAnalysis> AnalyzeSeries(absl::Span<const double> xs,
                                             const ChangePointOptions& options);

// The comparison of two given samples (a split chosen elsewhere).
struct SplitTest {
  double before = 0;           // median(before)
  double after = 0;            // median(after)
  double relative_change = 0;  // (after - before) / |before|; 0 when before is 0
  double sigma = 0;            // robust sd of the residuals around the two medians
  double mann_whitney_p = 1;   // two-sided Mann-Whitney U p-value
};

// Compares `before` and `after` as ChangePoint does. Errors: InvalidArgument if either is empty
// or holds a NaN or an infinity.
absl::StatusOr<SplitTest> TestSplit(absl::Span<const double> before,
                                    absl::Span<const double> after);

}  // namespace triage
}  // namespace kbisect

#endif  // KBISECT_TRIAGE_CHANGE_POINT_H_
