// Copyright 2026 The kbisect Authors.
#include "report/suite_groups.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/metric/metric.h"
#include "common/metric/percent.h"
#include "common/text/count.h"
#include "report/html/page_format.h"
#include "report/words.h"

namespace kbisect {

SuiteGroups GroupSuite(const v1::JobStatus& job) {
  SuiteGroups groups;
  for (const v1::SuiteMetricResult& row : job.suite()) {
    ++groups.metrics;
    switch (row.state()) {
      case v1::SUITE_METRIC_STATE_CULPRIT: {
        auto group = std::find_if(
            groups.culprits.begin(), groups.culprits.end(),
            [&](const SuiteCulpritGroup& g) { return g.culprit.sha() == row.culprit().sha(); });
        if (group == groups.culprits.end()) {
          groups.culprits.push_back(SuiteCulpritGroup{row.culprit(), {}});
          group = groups.culprits.end() - 1;
        }
        group->metrics.push_back(&row);
        break;
      }
      case v1::SUITE_METRIC_STATE_UNRESOLVED:
        groups.unresolved.push_back(&row);
        break;
      case v1::SUITE_METRIC_STATE_SEARCHING:
        groups.searching.push_back(&row);
        break;
      case v1::SUITE_METRIC_STATE_IMPROVED:
        groups.improved.push_back(&row);
        break;
      case v1::SUITE_METRIC_STATE_UNCHANGED:
        groups.unchanged.push_back(&row);
        break;
      default:
        groups.pending.push_back(&row);
    }
  }
  std::stable_sort(groups.culprits.begin(), groups.culprits.end(),
                   [](const SuiteCulpritGroup& a, const SuiteCulpritGroup& b) {
                     if (a.metrics.size() != b.metrics.size()) {
                       return a.metrics.size() > b.metrics.size();
                     }
                     return a.culprit.index() < b.culprit.index();
                   });
  return groups;
}

std::string SuiteMetricChange(const v1::SuiteMetricResult& row) {
  const bool step = row.state() == v1::SUITE_METRIC_STATE_CULPRIT;
  const double pct = step ? row.culprit_regression_pct() : row.regression_pct();
  const double before = step ? row.before() : row.good_median();
  const double after = step ? row.after() : row.bad_median();
  return absl::StrCat(pct >= 0 ? "+" : "-", FormatPercent(std::abs(pct)), " (",
                      FormatValue(before, row.unit()), " -> ", FormatValue(after, row.unit()), ")");
}

std::string SuiteHeadline(const SuiteGroups& groups) {
  std::vector<std::string> parts;
  for (const SuiteCulpritGroup& group : groups.culprits) {
    const int size = static_cast<int>(group.metrics.size());
    parts.push_back(
        absl::StrCat(parts.empty() ? Count(size, "metric") + " regressed" : std::to_string(size),
                     " at ", ShortSha(group.culprit.sha())));
  }
  const std::pair<const std::vector<const v1::SuiteMetricResult*>*, const char*> rest[] = {
      {&groups.unresolved, " moved without a culprit"},
      {&groups.searching, " still searched"},
      {&groups.improved, " improved"},
      {&groups.unchanged, " unchanged"},
      {&groups.pending, " not judged yet"}};
  for (const auto& [rows, words] : rest) {
    if (!rows->empty()) parts.push_back(absl::StrCat(rows->size(), words));
  }
  if (parts.empty()) return "no metric measured yet";
  return absl::StrJoin(parts, ", ");
}

}  // namespace kbisect
