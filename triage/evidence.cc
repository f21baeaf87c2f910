// Copyright 2026 The kbisect Authors.
#include "triage/evidence.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "triage/change_point.h"
#include "triage/cross_checks.h"
#include "triage/parse.h"

namespace kbisect {
namespace triage {
namespace internal {

namespace {

// Returns the index of the nightly of request.date in `p` (the first on or after it, else the
// last), or -1 when no date was asked for.
int NightOfDate(const Prepared& p, const TriageRequest& request) {
  const int n = static_cast<int>(p.values.size());
  int d = -1;
  if (!request.date.empty()) {
    d = 0;
    while (d < n && p.nightlies[d]->date < request.date) ++d;
    if (d == n) d = n - 1;
  }
  return d;
}

// Returns the item of `items` (change points or spikes, by their nightly index) nearest nightly
// `d` within `tolerance` nightlies (the first of equals), or the latest when `d` is -1; -1 when
// there is none.
template <typename Item>
int PickNearest(const std::vector<Item>& items, int d, int tolerance) {
  auto distance = [&](int index) { return std::abs(index - d); };
  int pick = -1;
  for (int i = 0; i < static_cast<int>(items.size()); ++i) {
    const int index = items[i].index;
    if (d >= 0) {
      if (distance(index) <= tolerance &&
          (pick < 0 || distance(index) < distance(items[pick].index))) {
        pick = i;
      }
    } else {
      pick = i;  // The latest.
    }
  }
  return pick;
}

// Returns the change point of `a` to explain (PickNearest); without a date, the latest one unless
// it only brings the level back, when the one it ends is taken. -1 when there is none.
int PickChangePoint(const SeriesAnalysis& a, const TriageRequest& request, int d) {
  int focus = PickNearest(a.change_points, d, request.date_tolerance);
  // A latest change point that only brings the level back is the end of an excursion: explain
  // the move that started it.
  if (d < 0 && focus > 0) {
    const ChangePoint& last = a.change_points[focus];
    const ChangePoint& prev = a.change_points[focus - 1];
    const double tol =
        std::max(request.change_point.min_relative_change * std::fabs(prev.before), 3 * last.sigma);
    if ((last.after - last.before) * (prev.after - prev.before) < 0 &&
        std::fabs(last.after - prev.before) <= tol) {
      focus = focus - 1;
    }
  }
  return focus;
}

// Fills the evidence of a series without a change point: spike `spike` of k->analysis (its
// nightly against its neighbours' median, and where it reverted), or no move (-1: the level is the
// series' median).
void GatherSpikeEvidence(const Prepared& p, int spike, KernelTriage* k) {
  const int n = static_cast<int>(p.values.size());
  Evidence& e = k->evidence;
  if (spike >= 0) {
    const Spike& s = k->analysis.spikes[spike];
    e.shape = Shape::kSpike;
    e.reverted = true;
    e.primary.present = true;
    e.primary.before = s.baseline;
    e.primary.after = s.value;
    e.primary.relative_change = s.relative_deviation;
    e.primary.moved = true;
    e.primary.worse = Worse(k->direction, s.relative_deviation);
    if (s.index > 0) k->last_good = Ref(*p.nightlies[s.index - 1], s.index - 1);
    k->first_bad = Ref(*p.nightlies[s.index], s.index);
    if (s.index + 1 < n) {
      e.reverted_at = Ref(*p.nightlies[s.index + 1], s.index + 1);
    } else {
      k->notes.push_back(
          "The outlier is the latest nightly: whether it persists is not known yet; triage "
          "again after a few more nightlies.");
    }
  } else {
    e.shape = Shape::kNone;
    absl::StatusOr<double> level = [&]() -> absl::StatusOr<double> {
      std::vector<double> v = p.values;
      std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
      return v[v.size() / 2];
    }();
    e.primary.before = e.primary.after = level.ok() ? *level : 0;
  }
}

// Fills the split and the primary metric's move at change point `focus` of k->analysis, whether
// the next change point reverted it, and the shape (excursion, step or drift); notes a step with
// few nightlies after it.
void GatherStepEvidence(const Prepared& p, const TriageRequest& request, int focus,
                        KernelTriage* k) {
  const SeriesAnalysis& a = k->analysis;
  const ChangePoint& cp = a.change_points[focus];
  Evidence& e = k->evidence;
  k->last_good = Ref(*p.nightlies[cp.index - 1], cp.index - 1);
  k->first_bad = Ref(*p.nightlies[cp.index], cp.index);
  e.p_value = cp.p_value;
  e.sharpness = cp.sharpness;
  e.persistence = cp.persistence;
  e.nightlies_before = cp.index - cp.begin;
  e.nightlies_after = cp.end - cp.index;
  e.primary.present = true;
  e.primary.before = cp.before;
  e.primary.after = cp.after;
  e.primary.relative_change = cp.relative_change;
  e.primary.mann_whitney_p = cp.mann_whitney_p;
  e.primary.moved = true;
  e.primary.worse = Worse(k->direction, cp.relative_change);
  // Reverted: the next change point goes back to the old level.
  if (focus + 1 < static_cast<int>(a.change_points.size())) {
    const ChangePoint& next = a.change_points[focus + 1];
    const double tol =
        std::max(request.change_point.min_relative_change * std::fabs(cp.before), 3 * cp.sigma);
    if ((next.after - next.before) * (cp.after - cp.before) < 0 &&
        std::fabs(next.after - cp.before) <= tol) {
      e.reverted = true;
      e.reverted_at = Ref(*p.nightlies[next.index], next.index);
    }
  }
  e.shape = e.reverted ? Shape::kExcursion
                       : (cp.IsStep(request.change_point) ? Shape::kStep : Shape::kDrift);
  if (e.nightlies_after < 5 && !e.reverted) {
    k->notes.push_back(absl::StrCat("Only ", e.nightlies_after,
                                    " nightlies follow the step; confidence grows as more "
                                    "nightlies confirm it."));
  }
}

// Cross-checks the split at nightly `at` on the same nightlies, [from, at) against [at, to): the
// baselines, the independent timer, the runner identity and the measurement attributes.
void CrossCheckSeries(const Prepared& p, const TriageRequest& request, int at, int from, int to,
                      KernelTriage* k) {
  Evidence& e = k->evidence;
  const MetricRoles& roles = request.roles;
  bool any_baseline = false;
  bool baseline_moved = false;
  for (const std::string& b : roles.baselines) {
    MetricMove m = CompareSamples(b, "baseline", DirectionOf(b, Direction::kUnknown),
                                  ValuesOf(p, b, from, at), ValuesOf(p, b, at, to), request);
    if (!m.present) continue;
    any_baseline = true;
    baseline_moved |= m.moved;
    e.baselines.push_back(m);
  }
  e.baselines_moved = any_baseline ? (baseline_moved ? Tri::kYes : Tri::kNo) : Tri::kUnknown;
  if (!roles.timer.empty()) {
    MetricMove m = CompareSamples(
        roles.timer, "timer", DirectionOf(roles.timer, roles.timer_direction),
        ValuesOf(p, roles.timer, from, at), ValuesOf(p, roles.timer, at, to), request);
    if (m.present) {
      if (!m.moved) {
        e.timer_agrees = Tri::kNo;
      } else if (m.direction == Direction::kUnknown || k->direction == Direction::kUnknown) {
        e.timer_agrees = Tri::kUnknown;
      } else {
        e.timer_agrees = m.worse == e.primary.worse ? Tri::kYes : Tri::kNo;
      }
      e.timer = m;
    }
  }
  CompareAttributes(p, at, from, to, &IsIdentityAttribute, &e.identity, &e.runner_changed);
  CompareAttributes(p, at, from, to, &IsMethodAttribute, &e.method, &e.method_changed);
}

// Checks the breadth of the split over nightlies [from, to): whether the other kernels of the
// platform and the other platforms of the kernel in `data` moved on the same dates.
void CheckBreadth(const Dataset& data, const Prepared& p, const TriageRequest& request, int from,
                  int to, KernelTriage* k) {
  Evidence& e = k->evidence;
  const std::string from_date = p.nightlies[from]->date;
  const std::string to_date = p.nightlies[to - 1]->date;
  for (const Series& other : data.series) {
    if (&other == p.series) continue;
    const bool same_platform = other.platform_short == p.series->platform_short;
    const bool same_kernel = other.kernel == p.series->kernel;
    if (same_platform == same_kernel) continue;  // Unrelated, or a duplicate.
    BreadthCheck b = CheckOther(other, k->primary_metric, k->direction, from_date,
                                k->last_good->date, k->first_bad->date, to_date, request);
    if (!b.tested) continue;
    (same_platform ? e.other_kernels : e.other_platforms).push_back(b);
  }
}

}  // namespace

void GatherEvidence(KernelTriage* k, const Dataset& data, const TriageRequest& request,
                    const Prepared& p) {
  const SeriesAnalysis& a = k->analysis;
  // Pick the move.
  const int d = NightOfDate(p, request);
  const int focus = PickChangePoint(a, request, d);
  const int spike = focus < 0 ? PickNearest(a.spikes, d, request.date_tolerance) : -1;
  k->focus_change_point = focus;
  k->focus_spike = spike;
  Evidence& e = k->evidence;
  e.primary.metric = k->primary_metric;
  e.primary.role = "primary";
  e.primary.direction = k->direction;
  if (focus < 0) {
    GatherSpikeEvidence(p, spike, k);
    return;
  }
  GatherStepEvidence(p, request, focus, k);

  // Cross-checks on the same nightlies.
  const ChangePoint& cp = a.change_points[focus];
  const int w = request.cross_check_window;
  const int from = std::max(cp.begin, cp.index - w);
  const int to = std::min(cp.end, cp.index + w);
  CrossCheckSeries(p, request, cp.index, from, to, k);
  // Breadth: other kernels of the platform, other platforms of the kernel, same dates.
  CheckBreadth(data, p, request, from, to, k);
}

}  // namespace internal
}  // namespace triage
}  // namespace kbisect
