// Copyright 2026 The kbisect Authors.
#include "triage/prepared_series.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace kbisect {
namespace triage {
namespace internal {

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

std::vector<double> ValuesOf(const Prepared& p, const std::string& metric, int from, int to) {
  std::vector<double> out;
  for (int i = std::max(0, from); i < std::min<int>(to, p.nightlies.size()); ++i) {
    if (std::optional<double> v = p.nightlies[i]->Metric(metric)) out.push_back(*v);
  }
  return out;
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

}  // namespace internal
}  // namespace triage
}  // namespace kbisect
