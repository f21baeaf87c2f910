// Copyright 2026 The kbisect Authors.
#include "triage/cross_checks.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "triage/change_point.h"

namespace kbisect {
namespace triage {
namespace internal {
namespace {

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

}  // namespace

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

BreadthCheck CheckOther(const Series& other, const std::string& metric, Direction direction,
                        const std::string& from_date, const std::string& last_good_date,
                        const std::string& first_bad_date, const std::string& to_date,
                        const TriageRequest& request) {
  BreadthCheck b;
  b.label = other.Label();
  std::vector<double> before;
  std::vector<double> after;
  const Prepared prepared = Prepare(other, metric, request.include_non_nightly);
  for (size_t i = 0; i < prepared.nightlies.size(); ++i) {
    const std::string& date = prepared.nightlies[i]->date;
    if (date >= from_date && date <= last_good_date) before.push_back(prepared.values[i]);
    if (date >= first_bad_date && date <= to_date) after.push_back(prepared.values[i]);
  }
  MetricMove m = CompareSamples(metric, "breadth", direction, before, after, request);
  b.tested = m.present;
  b.moved = m.moved;
  b.relative_change = m.relative_change;
  return b;
}

}  // namespace internal
}  // namespace triage
}  // namespace kbisect
