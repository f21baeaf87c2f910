// Copyright 2026 The kbisect Authors.
#include "triage/change_point.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <random>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/stats/stats.h"
#include "common/status_macros.h"

namespace kbisect {
namespace triage {
namespace {

// Median of `v` (destroys its order). `v` is not empty.
double MedianInPlace(std::vector<double>& v) {
  const size_t n = v.size();
  const size_t mid = n / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  const double upper = v[mid];
  if (n % 2 == 1) return upper;
  const double lower = *std::max_element(v.begin(), v.begin() + mid);
  return (lower + upper) / 2;
}

double MedianOf(const double* begin, const double* end, std::vector<double>& scratch) {
  scratch.assign(begin, end);
  return MedianInPlace(scratch);
}

double Relative(double before, double after) {
  return before == 0 ? 0 : (after - before) / std::fabs(before);
}

// The smallest sigma used as a divisor: the data's precision, never zero.
double SigmaFloor(double level) { return std::max(1e-12, 1e-6 * std::fabs(level)); }

struct SplitStats {
  double before = 0;
  double after = 0;
  double sigma = 0;
  double score = 0;
  // The drop of the L1 cost sum |x - median(own side)| that the split achieves.
  double gain = 0;
};

// Sum of |x - m| over [begin, end).
double AbsCost(const double* begin, const double* end, double m) {
  double cost = 0;
  for (const double* p = begin; p != end; ++p) cost += std::fabs(*p - m);
  return cost;
}

// Scores the split of v[0, n) at k. `whole_cost` is the L1 cost of v without a split.
SplitStats ScoreSplit(const std::vector<double>& v, int k, double whole_cost,
                      std::vector<double>& scratch) {
  const int n = static_cast<int>(v.size());
  SplitStats s;
  s.before = MedianOf(v.data(), v.data() + k, scratch);
  s.after = MedianOf(v.data() + k, v.data() + n, scratch);
  s.gain = whole_cost - AbsCost(v.data(), v.data() + k, s.before) -
           AbsCost(v.data() + k, v.data() + n, s.after);
  scratch.resize(n);
  for (int i = 0; i < n; ++i) scratch[i] = std::fabs(v[i] - (i < k ? s.before : s.after));
  s.sigma = std::max(kMadNormalScale * MedianInPlace(scratch), SigmaFloor(s.before));
  const double nl = k;
  const double nr = n - k;
  s.score = std::fabs(s.after - s.before) / s.sigma * std::sqrt(nl * nr / (nl + nr));
  return s;
}

double WholeCost(const std::vector<double>& v, std::vector<double>& scratch) {
  const double m = MedianOf(v.data(), v.data() + v.size(), scratch);
  return AbsCost(v.data(), v.data() + v.size(), m);
}

// The split of `v` (at least `min_segment` points on each side) that minimises the L1 cost:
// misplacing even one point costs, so the location is exact, and a single outlier weighs only
// linearly. Ties keep the earliest split.
std::pair<int, SplitStats> BestSplit(const std::vector<double>& v, int min_segment,
                                     std::vector<double>& scratch) {
  const int n = static_cast<int>(v.size());
  const double whole = WholeCost(v, scratch);
  int best_k = -1;
  SplitStats best;
  for (int k = min_segment; k <= n - min_segment; ++k) {
    SplitStats s = ScoreSplit(v, k, whole, scratch);
    if (best_k < 0 || s.gain > best.gain * (1 + 1e-12) + 1e-300) {
      best_k = k;
      best = s;
    }
  }
  return {best_k, best};
}

// Uniform index in [0, n) by rejection sampling on the raw engine (portable).
uint64_t UniformIndex(std::mt19937_64& rng, uint64_t n) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t r;
  do {
    r = rng();
  } while (r >= limit);
  return r % n;
}

double PermutationPValue(const std::vector<double>& v, double observed, int min_segment,
                         const ChangePointOptions& options, std::vector<double>& scratch) {
  std::mt19937_64 rng(options.seed);
  std::vector<double> shuffled = v;
  int at_least = 0;
  // Stop early once the p-value is certainly above the threshold.
  const int give_up = static_cast<int>(std::ceil(options.max_p_value * (options.permutations + 1)));
  int done = 0;
  for (; done < options.permutations; ++done) {
    for (size_t i = shuffled.size() - 1; i > 0; --i) {
      std::swap(shuffled[i], shuffled[UniformIndex(rng, i + 1)]);
    }
    if (BestSplit(shuffled, min_segment, scratch).second.gain >= observed * (1 - 1e-9)) {
      if (++at_least > give_up) {
        ++done;
        break;
      }
    }
  }
  return static_cast<double>(at_least + 1) / static_cast<double>(done + 1);
}

absl::Status CheckValues(absl::Span<const double> xs, const char* what) {
  if (xs.empty()) return absl::InvalidArgumentError(absl::StrCat(what, ": empty series"));
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!std::isfinite(xs[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": value ", i, " is not a finite number"));
    }
  }
  return absl::OkStatus();
}

// Point-to-point noise of `xs`, robust to steps: the scaled MAD of successive differences over
// sqrt(2); 0 for a single point.
double PointToPointNoise(absl::Span<const double> xs) {
  const int n = static_cast<int>(xs.size());
  if (n < 2) return 0;
  std::vector<double> diffs;
  for (int i = 1; i < n; ++i) diffs.push_back(std::fabs(xs[i] - xs[i - 1]));
  return kMadNormalScale * MedianInPlace(diffs) / std::sqrt(2.0);
}

// Binary segmentation of a series under `options`, with `noise` the series' noise (a move must
// exceed a multiple of it): the cuts accepted so far, each with its permutation p-value, and the
// segments [lo, hi) still to split.
struct Segmentation {
  const ChangePointOptions* options = nullptr;
  double noise = 0;
  std::vector<int> cuts;
  std::vector<std::pair<int, double>> p_values;  // cut -> permutation p
  std::deque<std::pair<int, int>> segments;
  std::vector<double> scratch;
};

// Returns whether the split of `w` at `k` (levels `stats`) was pushed by `min_segment` onto a
// point of the other level: the split sits at the window's edge and the point next to it lies
// on the far side of the levels' midpoint. The move then has fewer than min_segment points on
// that side (a step two nightlies old, say), so it is not a step yet, and splitting there would
// put a window that holds no change (last good and first bad both on the old level).
bool ForcedToTheWrongLevel(const std::vector<double>& w, int k, const SplitStats& stats,
                           int min_segment) {
  const int n = static_cast<int>(w.size());
  const double mid = (stats.before + stats.after) / 2;
  auto nearer_before = [&](double x) {
    return stats.after > stats.before ? x < mid : x > mid;
  };
  const bool first_after_is_before = k == n - min_segment && nearer_before(w[k]);
  const bool last_before_is_after = k == min_segment && !nearer_before(w[k - 1]);
  return first_after_is_before || last_before_is_after;
}

// Tries the split at `k` of segment `v` (the series from `lo` on), tested on v[a, b) (the whole
// segment, or a local window) at the window's own best split: accepted when the move clears
// min_relative_change, `noise_multiple` times the noise and the permutation test, and then
// recorded with its p-value and its two halves queued. Returns whether it was accepted.
bool TrySplit(const std::vector<double>& v, int lo, int a, int b, int k, double noise_multiple,
              Segmentation* s) {
  const ChangePointOptions& options = *s->options;
  const int hi = lo + static_cast<int>(v.size());
  std::vector<double> w(v.begin() + a, v.begin() + b);
  // The exact location within the window is the window's own best split.
  const int refined = BestSplit(w, options.min_segment, s->scratch).first;
  if (refined >= 0) k = a + refined;
  const SplitStats stats = ScoreSplit(w, k - a, WholeCost(w, s->scratch), s->scratch);
  const double delta = std::fabs(stats.after - stats.before);
  if (std::fabs(Relative(stats.before, stats.after)) < options.min_relative_change) {
    return false;
  }
  if (ForcedToTheWrongLevel(w, k - a, stats, options.min_segment)) return false;
  if (delta < noise_multiple * std::min(s->noise, stats.sigma)) return false;
  const double p = PermutationPValue(w, stats.gain, options.min_segment, options, s->scratch);
  if (p > options.max_p_value) return false;
  s->cuts.push_back(lo + k);
  s->p_values.emplace_back(lo + k, p);
  s->segments.emplace_back(lo, lo + k);
  s->segments.emplace_back(lo + k, hi);
  return true;
}

// Tries the sharpest local step of segment `v` (the series from `lo` on) that had no split as a
// whole, window by window (TrySplit at 1.5 times the noise multiple), until one is accepted.
void TryLocalSplit(const std::vector<double>& v, int lo, Segmentation* s) {
  const ChangePointOptions& options = *s->options;
  // No split of the whole segment: a short excursion inside it (a few nightlies down, then
  // back) leaves both halves' medians unchanged. Look for the sharpest local step instead,
  // comparing a few nightlies on each side; the search over positions is paid for with a 1.5x
  // larger noise multiple.
  // Windows: 5 nightlies each side, and a longer run of context before or after (an
  // excursion of 3-4 nightlies needs the longer context to be significant).
  const int m = static_cast<int>(v.size());
  for (const auto& [before_w, after_w] : {std::pair<int, int>{5, 5}, {10, 5}, {5, 10}}) {
    int best_k = -1;
    int best_a = 0;
    int best_b = 0;
    double best_gain = 0;
    for (int j = options.min_segment; j <= m - options.min_segment; ++j) {
      const int a = std::max(0, j - before_w);
      const int b = std::min(m, j + after_w);
      if (j - a < options.min_segment || b - j < options.min_segment) continue;
      std::vector<double> w(v.begin() + a, v.begin() + b);
      const SplitStats stats = ScoreSplit(w, j - a, WholeCost(w, s->scratch), s->scratch);
      if (best_k < 0 || stats.gain > best_gain) {
        best_k = j;
        best_a = a;
        best_b = b;
        best_gain = stats.gain;
      }
    }
    if (best_k >= 0 && best_b - best_a < m &&
        TrySplit(v, lo, best_a, best_b, best_k, 1.5 * options.min_noise_multiple, s)) {
      break;
    }
  }
}

// Splits `xs` by binary segmentation (the best split of each segment, else its sharpest local
// step) into at most max_change_points cuts; returns them sorted, with their p-values.
Segmentation Segment(absl::Span<const double> xs, const ChangePointOptions& options, double noise) {
  Segmentation s;
  s.options = &options;
  s.noise = noise;
  s.segments = {{0, static_cast<int>(xs.size())}};
  while (!s.segments.empty() && static_cast<int>(s.cuts.size()) < options.max_change_points) {
    const int lo = s.segments.front().first;
    const int hi = s.segments.front().second;
    s.segments.pop_front();
    if (hi - lo < 2 * options.min_segment) continue;
    std::vector<double> v(xs.begin() + lo, xs.begin() + hi);
    const int k = BestSplit(v, options.min_segment, s.scratch).first;
    if (k < 0) continue;
    if (TrySplit(v, lo, 0, hi - lo, k, options.min_noise_multiple, &s)) continue;
    TryLocalSplit(v, lo, &s);
  }
  std::sort(s.cuts.begin(), s.cuts.end());
  return s;
}

// Returns the change point at cuts[c]: its final levels between the neighbouring cuts (or the
// series ends), their statistics, its permutation p-value from `p_values`, its sharpness and
// persistence (line_fit is left to LineFit). Errors: those of MannWhitneyU.
absl::StatusOr<ChangePoint> DescribeChangePoint(absl::Span<const double> xs,
                                                const std::vector<int>& cuts, size_t c,
                                                const std::vector<std::pair<int, double>>& p_values,
                                                std::vector<double>& scratch) {
  const int n = static_cast<int>(xs.size());
  ChangePoint cp;
  cp.index = cuts[c];
  cp.begin = c == 0 ? 0 : cuts[c - 1];
  cp.end = c + 1 == cuts.size() ? n : cuts[c + 1];
  std::vector<double> v(xs.begin() + cp.begin, xs.begin() + cp.end);
  const SplitStats s = ScoreSplit(v, cp.index - cp.begin, WholeCost(v, scratch), scratch);
  cp.before = s.before;
  cp.after = s.after;
  cp.sigma = s.sigma;
  cp.score = s.score;
  cp.relative_change = Relative(s.before, s.after);
  for (const auto& [cut, p] : p_values) {
    if (cut == cp.index) cp.p_value = p;
  }
  ASSIGN_OR_RETURN(MannWhitneyResult mw,
                   MannWhitneyU(absl::MakeConstSpan(xs.data() + cp.begin, cp.index - cp.begin),
                                absl::MakeConstSpan(xs.data() + cp.index, cp.end - cp.index)));
  cp.mann_whitney_p = mw.p_value;
  const int w = std::min({3, cp.index - cp.begin, cp.end - cp.index});
  const double local = MedianOf(xs.data() + cp.index, xs.data() + cp.index + w, scratch) -
                       MedianOf(xs.data() + cp.index - w, xs.data() + cp.index, scratch);
  const double move = cp.after - cp.before;
  cp.sharpness = move == 0 ? 0 : std::clamp(local / move, 0.0, 1.0);
  const double mid = (cp.before + cp.after) / 2;
  int on_after_side = 0;
  for (int i = cp.index; i < cp.end; ++i) {
    if ((move < 0 && xs[i] < mid) || (move > 0 && xs[i] > mid)) ++on_after_side;
  }
  cp.persistence = static_cast<double>(on_after_side) / (cp.end - cp.index);
  return cp;
}

// Returns change_points[c]'s line_fit: over the run of same-direction change points around it,
// the L1 cost of a straight line (Theil-Sen) over that of the piecewise-constant levels (floored
// at the data's precision at `level`).
double LineFit(absl::Span<const double> xs, const std::vector<ChangePoint>& change_points, size_t c,
               double level, std::vector<double>& scratch) {
  auto sign = [&](size_t i) {
    const ChangePoint& cp = change_points[i];
    return cp.after > cp.before ? 1 : -1;
  };
  size_t first = c;
  size_t last = c;
  while (first > 0 && sign(first - 1) == sign(c)) --first;
  while (last + 1 < change_points.size() && sign(last + 1) == sign(c)) ++last;
  const int wb = change_points[first].begin;
  const int we = change_points[last].end;
  double step_cost = 0;
  int piece_begin = wb;
  for (size_t i = first; i <= last + 1; ++i) {
    const int piece_end = i <= last ? change_points[i].index : we;
    const double m = MedianOf(xs.data() + piece_begin, xs.data() + piece_end, scratch);
    step_cost += AbsCost(xs.data() + piece_begin, xs.data() + piece_end, m);
    piece_begin = piece_end;
  }
  std::vector<double> slopes;
  for (int i = wb; i < we; ++i) {
    for (int j = i + 1; j < we; ++j) slopes.push_back((xs[j] - xs[i]) / (j - i));
  }
  const double slope = MedianInPlace(slopes);
  std::vector<double> intercepts;
  for (int i = wb; i < we; ++i) intercepts.push_back(xs[i] - slope * i);
  const double intercept = MedianInPlace(intercepts);
  double line_cost = 0;
  for (int i = wb; i < we; ++i) line_cost += std::fabs(xs[i] - (intercept + slope * i));
  return line_cost / std::max(step_cost, SigmaFloor(level) * (we - wb));
}

// Returns the points of `xs` far from the median of their neighbours (up to 3 each side) within
// their own level (between the sorted `cuts`): spike_z times `noise` and min_relative_change.
std::vector<Spike> FindSpikes(absl::Span<const double> xs, const std::vector<int>& cuts,
                              double noise, const ChangePointOptions& options) {
  const int n = static_cast<int>(xs.size());
  std::vector<Spike> spikes;
  for (int i = 0; i < n; ++i) {
    int seg_lo = 0;
    int seg_hi = n;
    for (int cut : cuts) {
      if (cut <= i) seg_lo = cut;
      if (cut > i && seg_hi == n) seg_hi = cut;
    }
    std::vector<double> neighbours;
    for (int j = std::max(seg_lo, i - 3); j < std::min(seg_hi, i + 4); ++j) {
      if (j != i) neighbours.push_back(xs[j]);
    }
    if (neighbours.size() < 2) continue;
    const double baseline = MedianInPlace(neighbours);
    const double z = (xs[i] - baseline) / noise;
    const double rel = Relative(baseline, xs[i]);
    if (std::fabs(z) >= options.spike_z && std::fabs(rel) >= options.min_relative_change) {
      Spike spike;
      spike.index = i;
      spike.value = xs[i];
      spike.baseline = baseline;
      spike.relative_deviation = rel;
      spike.z = z;
      spikes.push_back(spike);
    }
  }
  return spikes;
}

}  // namespace

absl::StatusOr<SplitTest> TestSplit(absl::Span<const double> before,
                                    absl::Span<const double> after) {
  RETURN_IF_ERROR(CheckValues(before, "before"));
  RETURN_IF_ERROR(CheckValues(after, "after"));
  std::vector<double> v(before.begin(), before.end());
  v.insert(v.end(), after.begin(), after.end());
  std::vector<double> scratch;
  const SplitStats s =
      ScoreSplit(v, static_cast<int>(before.size()), WholeCost(v, scratch), scratch);
  SplitTest t;
  t.before = s.before;
  t.after = s.after;
  t.sigma = s.sigma;
  t.relative_change = Relative(s.before, s.after);
  ASSIGN_OR_RETURN(MannWhitneyResult mw, MannWhitneyU(before, after));
  t.mann_whitney_p = mw.p_value;
  return t;
}

absl::StatusOr<SeriesAnalysis> AnalyzeSeries(absl::Span<const double> xs,
                                             const ChangePointOptions& options) {
  RETURN_IF_ERROR(CheckValues(xs, "series"));
  if (options.min_segment < 2 || options.permutations < 1 || options.max_p_value <= 0 ||
      options.max_p_value >= 1 || options.min_relative_change < 0 ||
      options.min_noise_multiple < 0 || options.max_change_points < 0) {
    return absl::InvalidArgumentError("change-point options out of range");
  }
  SeriesAnalysis result;
  result.noise_sigma = PointToPointNoise(xs);
  std::vector<double> all(xs.begin(), xs.end());
  const double level = MedianInPlace(all);
  const double noise = std::max(result.noise_sigma, SigmaFloor(level));

  Segmentation segmentation = Segment(xs, options, noise);
  const std::vector<int>& cuts = segmentation.cuts;
  std::vector<double>& scratch = segmentation.scratch;
  for (size_t c = 0; c < cuts.size(); ++c) {
    ASSIGN_OR_RETURN(ChangePoint cp,
                     DescribeChangePoint(xs, cuts, c, segmentation.p_values, scratch));
    result.change_points.push_back(cp);
  }
  // Step or drift: over the run of same-direction change points around each one, compare a
  // straight line (Theil-Sen) with the piecewise-constant levels, both by L1 cost.
  for (size_t c = 0; c < result.change_points.size(); ++c) {
    result.change_points[c].line_fit = LineFit(xs, result.change_points, c, level, scratch);
  }
  result.spikes = FindSpikes(xs, cuts, noise, options);
  return result;
}

}  // namespace triage
}  // namespace kbisect
