// Copyright 2026 The kbisect Authors.
#include "triage/triage.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "triage/parse.h"

namespace kbisect {
namespace triage {

const char* TriName(Tri value) {
  switch (value) {
    case Tri::kUnknown:
      return "unknown";
    case Tri::kNo:
      return "no";
    case Tri::kYes:
      return "yes";
  }
  return "unknown";
}

const char* ShapeName(Shape shape) {
  switch (shape) {
    case Shape::kNone:
      return "none";
    case Shape::kStep:
      return "step";
    case Shape::kDrift:
      return "drift";
    case Shape::kSpike:
      return "spike";
    case Shape::kExcursion:
      return "excursion";
  }
  return "none";
}

const char* CauseName(v1::Cause cause) {
  switch (cause) {
    case v1::CAUSE_REAL_REGRESSION:
      return "real_regression";
    case v1::CAUSE_BENCHMARK_METHOD_CHANGE:
      return "benchmark_method_change";
    case v1::CAUSE_HARDWARE_ISSUE:
      return "hardware_issue";
    case v1::CAUSE_NOISE:
      return "noise";
    default:
      return "unspecified";
  }
}

namespace {

std::string Pct(double relative) { return absl::StrFormat("%+.1f%%", 100 * relative); }

Direction DirectionOf(const std::string& name, Direction given) {
  if (given != Direction::kUnknown) return given;
  const std::string lower = absl::AsciiStrToLower(name);
  const absl::string_view l(lower);
  if (absl::StrContains(l, "speedup") || absl::StrContains(l, "geomean") ||
      absl::StrContains(l, "wins")) {
    if (!absl::StrContains(l, "time") && !absl::StrContains(l, "latency")) {
      return Direction::kHigherIsBetter;
    }
  }
  return InferDirection(name, "");
}

bool Worse(Direction direction, double relative_change) {
  if (direction == Direction::kHigherIsBetter) return relative_change < 0;
  if (direction == Direction::kLowerIsBetter) return relative_change > 0;
  return false;
}

NightlyRef Ref(const Nightly& n, int index) {
  NightlyRef r;
  r.index = index;
  r.date = n.date;
  r.sha = n.sha;
  r.full_sha = n.full_sha;
  r.run_id = n.run_id;
  return r;
}

// The analysed nightlies of one series with its primary values.
struct Prepared {
  const Series* series = nullptr;
  std::vector<const Nightly*> nightlies;
  std::vector<double> values;
};

Prepared Prepare(const Series& series, const std::string& metric, bool include_non_nightly) {
  Prepared p;
  p.series = &series;
  for (const Nightly& n : series.nightlies) {
    if (!include_non_nightly && !n.is_nightly) continue;
    std::optional<double> v = n.Metric(metric);
    if (!v.has_value()) continue;
    p.nightlies.push_back(&n);
    p.values.push_back(*v);
  }
  return p;
}

// Keeps at most `max` nightlies: centred on `date` when given, else the latest.
void Window(Prepared* p, const std::string& date, int max) {
  const int n = static_cast<int>(p->nightlies.size());
  if (n <= max) return;
  int begin = n - max;
  if (!date.empty()) {
    int d = 0;
    while (d < n && p->nightlies[d]->date < date) ++d;
    begin = std::clamp(d - max / 2, 0, n - max);
  }
  p->nightlies.erase(p->nightlies.begin(), p->nightlies.begin() + begin);
  p->nightlies.resize(max);
  p->values.erase(p->values.begin(), p->values.begin() + begin);
  p->values.resize(max);
}

// Values of `metric` over nightlies [from, to) of `p`.
std::vector<double> ValuesOf(const Prepared& p, const std::string& metric, int from, int to) {
  std::vector<double> out;
  for (int i = std::max(0, from); i < std::min<int>(to, p.nightlies.size()); ++i) {
    if (std::optional<double> v = p.nightlies[i]->Metric(metric)) out.push_back(*v);
  }
  return out;
}

MetricMove CompareSamples(const std::string& metric, const std::string& role, Direction direction,
                          const std::vector<double>& before, const std::vector<double>& after,
                          const TriageRequest& request) {
  MetricMove m;
  m.metric = metric;
  m.role = role;
  m.direction = direction;
  if (before.size() < 2 || after.size() < 2) return m;
  absl::StatusOr<SplitTest> t = TestSplit(before, after);
  if (!t.ok()) return m;
  m.present = true;
  m.before = t->before;
  m.after = t->after;
  m.relative_change = t->relative_change;
  m.mann_whitney_p = t->mann_whitney_p;
  m.moved = t->mann_whitney_p <= request.cross_check_p &&
            std::fabs(t->relative_change) >= request.change_point.min_relative_change &&
            std::fabs(t->after - t->before) >= 2 * t->sigma;
  m.worse = m.moved && Worse(direction, t->relative_change);
  return m;
}

// The most common value of attribute `name` over nightlies [from, to).
std::string ModeOf(const Prepared& p, const std::string& name, int from, int to) {
  std::map<std::string, int> counts;
  for (int i = std::max(0, from); i < std::min<int>(to, p.nightlies.size()); ++i) {
    counts[p.nightlies[i]->Attribute(name).value_or("")]++;
  }
  std::string best;
  int best_count = -1;
  for (const auto& [value, count] : counts) {
    if (count > best_count) {
      best = value;
      best_count = count;
    }
  }
  return best;
}

void CompareAttributes(const Prepared& p, int split, int from, int to,
                       bool (*select)(std::string_view), std::vector<AttributeChange>* out,
                       Tri* changed) {
  std::set<std::string> names;
  for (int i = std::max(0, from); i < std::min<int>(to, p.nightlies.size()); ++i) {
    for (const auto& [name, value] : p.nightlies[i]->attributes) {
      if (select(name)) names.insert(name);
    }
  }
  if (names.empty()) {
    *changed = Tri::kUnknown;
    return;
  }
  *changed = Tri::kNo;
  for (const std::string& name : names) {
    AttributeChange c;
    c.name = name;
    c.before = p.nightlies[split - 1]->Attribute(name).value_or("");
    c.after = p.nightlies[split]->Attribute(name).value_or("");
    // A change at the split that the levels on both sides confirm.
    c.changed = c.before != c.after && ModeOf(p, name, from, split) != ModeOf(p, name, split, to);
    if (c.changed) *changed = Tri::kYes;
    out->push_back(std::move(c));
  }
}

// Tests series `other` between the dates of the split's windows.
BreadthCheck CheckOther(const Series& other, const std::string& metric, Direction direction,
                        const std::string& from_date, const std::string& last_good_date,
                        const std::string& first_bad_date, const std::string& to_date,
                        const TriageRequest& request) {
  BreadthCheck b;
  b.label = other.Label();
  std::vector<double> before;
  std::vector<double> after;
  for (const Nightly& n : other.nightlies) {
    if (!request.include_non_nightly && !n.is_nightly) continue;
    std::optional<double> v = n.Metric(metric);
    if (!v.has_value()) continue;
    if (n.date >= from_date && n.date <= last_good_date) before.push_back(*v);
    if (n.date >= first_bad_date && n.date <= to_date) after.push_back(*v);
  }
  MetricMove m = CompareSamples(metric, "breadth", direction, before, after, request);
  b.tested = m.present;
  b.moved = m.moved;
  b.relative_change = m.relative_change;
  return b;
}

double Clamp01(double x) { return std::clamp(x, 0.0, 1.0); }

TrueValue ComputeTrueValue(const KernelTriage& k) {
  TrueValue t;
  const Evidence& e = k.evidence;
  t.before = e.primary.before;
  t.after = e.primary.after;
  const std::string name = k.primary_metric;
  auto fmt = [](double v) { return absl::StrFormat("%.4g", v); };
  switch (k.verdict.cause) {
    case v1::CAUSE_REAL_REGRESSION:
      t.honest = "after";
      t.note = absl::StrCat("The kernel really changed: ", name, " is now ", fmt(t.after), " (was ",
                            fmt(t.before), "); ", fmt(t.before), " is what a fix should restore.");
      break;
    case v1::CAUSE_BENCHMARK_METHOD_CHANGE:
      if (e.timer.has_value() && e.timer->present && !e.timer->moved && e.primary.moved) {
        t.honest = "before";
        t.note = absl::StrCat(
            "The independent timer (", e.timer->metric,
            ") did not move, so the kernel's performance did not change; ", fmt(t.before),
            " is its speedup under the established method and ", fmt(t.after),
            " an artifact of the new measurement (if the new method is the intended one, it is "
            "the new baseline, not a regression).");
      } else if (e.timer.has_value() && e.timer->moved && !e.primary.moved) {
        t.honest = "unchanged";
        t.note = absl::StrCat(name, " did not move (", fmt(t.before), "); only ", e.timer->metric,
                              " changed, which points at the latency measurement.");
      } else {
        t.honest = "before";
        t.note = absl::StrCat("The measurement changed at the step; ", fmt(t.before),
                              " is the value under the old method, ", fmt(t.after),
                              " under the new one. Read the harness change before trusting "
                              "either.");
      }
      break;
    case v1::CAUSE_HARDWARE_ISSUE: {
      t.honest = "before";
      std::string rel;
      for (const MetricMove& b : e.baselines) {
        if (!b.present || b.before == 0 || b.after == 0) continue;
        // Both are speedups over the same reference on the same machine, so their ratio is
        // Helion's standing against that baseline (unlike speedup x latency, which mixes
        // timing modes and means nothing).
        rel = absl::StrCat(" Relative to ", b.metric, " it was ", fmt(t.before / b.before),
                           " before and ", fmt(t.after / b.after), " after.");
        break;
      }
      t.note = absl::StrCat("The environment changed, not Helion: ", fmt(t.before),
                            " is the value on the usual machine.", rel);
      break;
    }
    default:
      t.honest = "unchanged";
      t.note = absl::StrCat("Nothing persistent moved; ", name, " stays around ",
                            fmt(k.values.empty() ? 0 : t.before), ".");
      break;
  }
  return t;
}

void Explain(KernelTriage* k, const Dataset& data, const TriageRequest& request,
             const Prepared& p) {
  const int n = static_cast<int>(p.values.size());
  const SeriesAnalysis& a = k->analysis;
  // Pick the move.
  int d = -1;
  if (!request.date.empty()) {
    d = 0;
    while (d < n && p.nightlies[d]->date < request.date) ++d;
    if (d == n) d = n - 1;
  }
  auto distance = [&](int index) { return std::abs(index - d); };
  int focus = -1;
  for (int c = 0; c < static_cast<int>(a.change_points.size()); ++c) {
    const int index = a.change_points[c].index;
    if (d >= 0) {
      if (distance(index) <= request.date_tolerance &&
          (focus < 0 || distance(index) < distance(a.change_points[focus].index))) {
        focus = c;
      }
    } else {
      focus = c;  // The latest.
    }
  }
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
  int spike = -1;
  if (focus < 0) {
    for (int s = 0; s < static_cast<int>(a.spikes.size()); ++s) {
      const int index = a.spikes[s].index;
      if (d >= 0) {
        if (distance(index) <= request.date_tolerance &&
            (spike < 0 || distance(index) < distance(a.spikes[spike].index))) {
          spike = s;
        }
      } else {
        spike = s;
      }
    }
  }
  k->focus_change_point = focus;
  k->focus_spike = spike;
  Evidence& e = k->evidence;
  e.primary.metric = k->primary_metric;
  e.primary.role = "primary";
  e.primary.direction = k->direction;

  if (focus < 0) {
    if (spike >= 0) {
      const Spike& s = a.spikes[spike];
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
    k->verdict = Classify(e);
    k->true_value = ComputeTrueValue(*k);
    return;
  }

  const ChangePoint& cp = a.change_points[focus];
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

  // Cross-checks on the same nightlies.
  const int w = request.cross_check_window;
  const int from = std::max(cp.begin, cp.index - w);
  const int to = std::min(cp.end, cp.index + w);
  const MetricRoles& roles = request.roles;
  bool any_baseline = false;
  bool baseline_moved = false;
  for (const std::string& b : roles.baselines) {
    MetricMove m =
        CompareSamples(b, "baseline", DirectionOf(b, Direction::kUnknown),
                       ValuesOf(p, b, from, cp.index), ValuesOf(p, b, cp.index, to), request);
    if (!m.present) continue;
    any_baseline = true;
    baseline_moved |= m.moved;
    e.baselines.push_back(m);
  }
  e.baselines_moved = any_baseline ? (baseline_moved ? Tri::kYes : Tri::kNo) : Tri::kUnknown;
  if (!roles.timer.empty()) {
    MetricMove m = CompareSamples(
        roles.timer, "timer", DirectionOf(roles.timer, roles.timer_direction),
        ValuesOf(p, roles.timer, from, cp.index), ValuesOf(p, roles.timer, cp.index, to), request);
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
  CompareAttributes(p, cp.index, from, to, &IsIdentityAttribute, &e.identity, &e.runner_changed);
  CompareAttributes(p, cp.index, from, to, &IsMethodAttribute, &e.method, &e.method_changed);

  // Breadth: other kernels of the platform, other platforms of the kernel, same dates.
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
  k->verdict = Classify(e);
  k->true_value = ComputeTrueValue(*k);
}

}  // namespace

bool KernelTriage::IsRegression() const {
  return evidence.shape != Shape::kNone && evidence.primary.worse;
}

MetricRoles DefaultRoles(const Dataset& data) {
  MetricRoles roles;
  std::set<std::string> names;
  std::vector<std::string> ordered;
  for (const Series& s : data.series) {
    for (const Nightly& n : s.nightlies) {
      for (const auto& [name, value] : n.metrics) {
        if (names.insert(name).second) ordered.push_back(name);
      }
    }
  }
  if (data.format == InputFormat::kHelionPretuned ||
      (!names.count("helion_speedup_geomean") && names.count("geomean"))) {
    roles.primary = "geomean";
    for (const std::string& name : ordered) {
      if (absl::StartsWith(name, "baselines.") && absl::EndsWith(name, ".geomean")) {
        roles.baselines.push_back(name);
      }
    }
    return roles;
  }
  if (names.count("helion_speedup_geomean") || data.format == InputFormat::kHelionDashboard) {
    roles.primary = "helion_speedup_geomean";
    for (const char* b : {"triton_speedup_geomean", "torch_compile_speedup_geomean"}) {
      if (names.count(b)) roles.baselines.push_back(b);
    }
    if (names.count("helion_latency_avg_ms")) roles.timer = "helion_latency_avg_ms";
    return roles;
  }
  if (!ordered.empty()) roles.primary = ordered.front();
  return roles;
}

Verdict Classify(const Evidence& e) {
  Verdict v;
  auto add = [&](std::string reason) { v.reasons.push_back(std::move(reason)); };
  const std::string size = Pct(e.primary.relative_change);
  switch (e.shape) {
    case Shape::kNone:
      v.cause = v1::CAUSE_NOISE;
      v.confidence = 0.9;
      add("No persistent step: the series stays within its run-to-run noise.");
      return v;
    case Shape::kSpike:
      v.cause = v1::CAUSE_NOISE;
      v.confidence = e.reverted_at.has_value() ? 0.85 : 0.4;
      add(absl::StrCat("A single-nightly outlier (", size, ") ",
                       e.reverted_at.has_value()
                           ? absl::StrCat("that reverted on ", e.reverted_at->date, ".")
                           : "on the latest nightly; it may still turn into a step."));
      return v;
    case Shape::kExcursion:
      v.cause = v1::CAUSE_NOISE;
      v.confidence = 0.65;
      add(absl::StrCat("The level moved ", size, " for ", e.nightlies_after,
                       " nightlies and came back on ",
                       e.reverted_at.has_value() ? e.reverted_at->date : "a later nightly",
                       ": it did not persist."));
      if (e.runner_changed == Tri::kYes) {
        add("The runner identity changed with it: a temporary runner swap is the likely "
            "explanation.");
        v.cause = v1::CAUSE_HARDWARE_ISSUE;
        v.confidence = 0.75;
      }
      return v;
    case Shape::kStep:
    case Shape::kDrift:
      break;
  }
  const bool drift = e.shape == Shape::kDrift;
  add(absl::StrCat(drift ? "A gradual drift of " : "A persistent step of ", size,
                   absl::StrFormat(" (permutation p = %.3g, ", e.p_value), e.nightlies_before,
                   " nightlies before, ", e.nightlies_after, " after)."));
  double penalty = 0;
  if (e.p_value > 0.001) penalty += 0.05;
  if (e.persistence < 0.8) penalty += 0.1;
  if (e.nightlies_after < 5) penalty += 0.1;

  if (e.runner_changed == Tri::kYes) {
    v.cause = v1::CAUSE_HARDWARE_ISSUE;
    std::string what;
    for (const AttributeChange& c : e.identity) {
      if (c.changed) {
        what = absl::StrCat(c.name, " '", c.before, "' -> '", c.after, "'");
        break;
      }
    }
    add(absl::StrCat("The runner identity changed at the step (", what, ")."));
    v.confidence = e.baselines_moved == Tri::kYes ? 0.95 : 0.85;
    if (e.baselines_moved == Tri::kYes) add("The baselines moved with it.");
  } else if (e.method_changed == Tri::kYes) {
    v.cause = v1::CAUSE_BENCHMARK_METHOD_CHANGE;
    std::string what;
    for (const AttributeChange& c : e.method) {
      if (c.changed) {
        what = absl::StrCat(c.name, " '", c.before, "' -> '", c.after, "'");
        break;
      }
    }
    add(absl::StrCat("A measurement setting changed at the step (", what, ")."));
    v.confidence = 0.9;
  } else if (e.baselines_moved == Tri::kYes) {
    std::vector<std::string> moved;
    for (const MetricMove& b : e.baselines) {
      if (b.moved) moved.push_back(absl::StrCat(b.metric, " ", Pct(b.relative_change)));
    }
    add(absl::StrCat("The move is shared with the baselines (", absl::StrJoin(moved, ", "),
                     "): the environment or the reference changed, not Helion."));
    if (e.harness_only_commit == Tri::kYes) {
      v.cause = v1::CAUSE_BENCHMARK_METHOD_CHANGE;
      v.confidence = 0.65;
      add("The commit window holds a commit touching only the benchmark harness / CI: a "
          "harness change that moved every implementation's number.");
    } else {
      v.cause = v1::CAUSE_HARDWARE_ISSUE;
      v.confidence = e.runner_changed == Tri::kNo ? 0.65 : 0.75;
      if (e.runner_changed == Tri::kNo) {
        add("The recorded runner identity did not change, so suspect the driver, thermals or a "
            "shared dependency rather than a runner swap.");
      } else {
        add("No runner identity is recorded; compare the runners of the two nightlies.");
      }
    }
  } else if (e.timer_agrees == Tri::kNo) {
    v.cause = v1::CAUSE_BENCHMARK_METHOD_CHANGE;
    v.confidence = e.harness_only_commit == Tri::kYes ? 0.9 : 0.8;
    if (e.timer.has_value() && !e.timer->moved) {
      add(absl::StrCat("The independent timer ", e.timer->metric, " did not move (",
                       Pct(e.timer->relative_change),
                       "): the kernel ran as fast as before, so how it is measured changed."));
    } else if (e.timer.has_value()) {
      add(absl::StrCat("The independent timer ", e.timer->metric, " moved ",
                       Pct(e.timer->relative_change),
                       ", the opposite way: the two timers disagree, so a measurement changed."));
    }
    if (e.harness_only_commit == Tri::kYes) {
      add("The commit window holds a commit touching only the benchmark harness / CI.");
    }
  } else {
    v.cause = v1::CAUSE_REAL_REGRESSION;
    if (e.baselines_moved == Tri::kNo) {
      add("Helion-only: the baselines did not move.");
    } else {
      add("No baselines to compare with, so a shared (environment) move cannot be ruled out.");
    }
    if (e.timer_agrees == Tri::kYes) {
      add(absl::StrCat("The independent timer agrees: ", e.timer->metric, " moved ",
                       Pct(e.timer->relative_change), "."));
    } else {
      add("No independent timer to confirm the move.");
    }
    v.confidence = 0.9;
    if (e.baselines_moved != Tri::kNo) v.confidence -= 0.15;
    if (e.timer_agrees != Tri::kYes) v.confidence -= 0.1;
    if (e.slice_commit == Tri::kYes) {
      add("The commit window holds a commit matching the platform's slice.");
      v.confidence += 0.05;
    } else if (e.slice_commit == Tri::kNo) {
      add("No commit in the window matches the platform's slice; read every commit.");
      v.confidence -= 0.1;
    }
    if (drift) {
      add("The move is gradual, not a step between two nightlies: no single commit is to blame "
          "yet; bisect the whole span or look at the endpoints.");
      v.confidence = std::min(v.confidence, 0.45);
    }
  }
  size_t moved_kernels = 0;
  for (const BreadthCheck& b : e.other_kernels) moved_kernels += b.moved;
  size_t moved_platforms = 0;
  for (const BreadthCheck& b : e.other_platforms) moved_platforms += b.moved;
  if (!e.other_kernels.empty()) {
    add(absl::StrCat(moved_kernels, " of ", e.other_kernels.size(),
                     " other kernels on this platform moved at the same nightly",
                     moved_kernels == 0 ? " (kernel-specific)." : "."));
  }
  if (!e.other_platforms.empty()) {
    add(absl::StrCat(moved_platforms, " of ", e.other_platforms.size(),
                     " other platforms moved for this kernel",
                     moved_platforms == 0 ? " (platform-specific)." : "."));
  }
  if (e.persistence < 0.8) {
    add(absl::StrFormat("Only %.0f%% of the nightlies after the step stay at the new level.",
                        100 * e.persistence));
  }
  v.confidence = Clamp01(v.confidence - penalty);
  return v;
}

void Reclassify(KernelTriage* kernel) {
  kernel->verdict = Classify(kernel->evidence);
  kernel->true_value = ComputeTrueValue(*kernel);
}

absl::StatusOr<TriageResult> Triage(const Dataset& data, const TriageRequest& request_in) {
  TriageRequest request = request_in;
  if (!request.date.empty()) {
    const std::string& dt = request.date;
    bool ok = dt.size() == 10 && dt[4] == '-' && dt[7] == '-';
    for (int i = 0; ok && i < 10; ++i) {
      if (i != 4 && i != 7 && !absl::ascii_isdigit(dt[i])) ok = false;
    }
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("--date: expected YYYY-MM-DD, got '", request.date, "'"));
    }
  }
  const MetricRoles defaults = DefaultRoles(data);
  MetricRoles& roles = request.roles;
  if (roles.primary.empty()) roles.primary = defaults.primary;
  if (roles.baselines.empty() && roles.primary == defaults.primary) {
    roles.baselines = defaults.baselines;
  }
  if (roles.timer.empty() && roles.primary == defaults.primary) roles.timer = defaults.timer;

  std::set<std::string> platforms;
  for (const Series& s : data.series) platforms.insert(s.platform_short);
  if (request.platform.empty()) {
    if (platforms.size() > 1) {
      return absl::InvalidArgumentError(absl::StrCat("--platform is required: the data has ",
                                                     platforms.size(), " platforms (",
                                                     absl::StrJoin(platforms, ", "), ")"));
    }
    request.platform = *platforms.begin();
  }
  std::vector<const Series*> selected;
  std::set<std::string> kernels;
  for (const Series& s : data.series) {
    if (s.platform_short != request.platform && s.platform != request.platform) continue;
    kernels.insert(s.kernel);
    if (!request.kernel.empty() && s.kernel != request.kernel) continue;
    selected.push_back(&s);
  }
  if (kernels.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--platform: '", request.platform, "' is not in ", data.source,
                     " (platforms: ", absl::StrJoin(platforms, ", "), ")"));
  }
  if (selected.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--kernel: '", request.kernel, "' has no series on platform ",
                     request.platform, " (kernels: ", absl::StrJoin(kernels, ", "), ")"));
  }

  TriageResult result;
  result.source = data.source;
  result.format = data.format;
  result.platform = request.platform;
  result.date = request.date;
  result.roles = roles;
  result.notes = data.notes;
  for (const Series* s : selected) {
    Prepared p = Prepare(*s, roles.primary, request.include_non_nightly);
    if (p.values.empty()) {
      std::set<std::string> available;
      for (const Nightly& n : s->nightlies) {
        for (const auto& [name, value] : n.metrics) available.insert(name);
      }
      if (!request.kernel.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--metric: '", roles.primary, "' is not in the history of ", s->Label(),
                         " (metrics: ", absl::StrJoin(available, ", "), ")"));
      }
      result.notes.push_back(
          absl::StrCat(s->Label(), " has no ", roles.primary, " values and was skipped."));
      continue;
    }
    Window(&p, request.date, request.max_nightlies);
    KernelTriage k;
    k.kernel = s->kernel;
    k.platform = s->platform;
    k.platform_short = s->platform_short;
    k.primary_metric = roles.primary;
    k.direction = DirectionOf(roles.primary, roles.primary_direction);
    for (size_t i = 0; i < p.nightlies.size(); ++i) {
      k.nightlies.push_back(Ref(*p.nightlies[i], static_cast<int>(i)));
    }
    k.values = p.values;
    ASSIGN_OR_RETURN(k.analysis, AnalyzeSeries(p.values, request.change_point));
    if (static_cast<int>(p.values.size()) < 2 * request.change_point.min_segment) {
      k.notes.push_back(absl::StrCat("Only ", p.values.size(),
                                     " nightlies: too few to tell a step from noise (need ",
                                     2 * request.change_point.min_segment, ")."));
    }
    if (!request.date.empty() && !p.nightlies.empty() &&
        (request.date < p.nightlies.front()->date || request.date > p.nightlies.back()->date)) {
      k.notes.push_back(absl::StrCat("--date ", request.date, " is outside the history (",
                                     p.nightlies.front()->date, " .. ", p.nightlies.back()->date,
                                     ")."));
    }
    Explain(&k, data, request, p);
    result.kernels.push_back(std::move(k));
  }
  if (result.kernels.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--metric: no series of platform ", request.platform, " has ", roles.primary));
  }
  // Headline first: steps before drifts before excursions/spikes before nothing; then by size.
  auto rank = [](const KernelTriage& k) {
    switch (k.evidence.shape) {
      case Shape::kStep:
        return 0;
      case Shape::kDrift:
        return 1;
      case Shape::kExcursion:
        return 2;
      case Shape::kSpike:
        return 3;
      case Shape::kNone:
        return 4;
    }
    return 4;
  };
  std::stable_sort(result.kernels.begin(), result.kernels.end(),
                   [&](const KernelTriage& a, const KernelTriage& b) {
                     if (rank(a) != rank(b)) return rank(a) < rank(b);
                     return std::fabs(a.evidence.primary.relative_change) >
                            std::fabs(b.evidence.primary.relative_change);
                   });
  return result;
}

}  // namespace triage
}  // namespace kbisect
