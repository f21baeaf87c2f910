// Copyright 2026 The kbisect Authors.
//
// A suite job's metrics (JobStatus.suite) grouped as its reports show them: by culprit, the
// culprit that most metrics share first, then the metrics that moved without a culprit, those
// still being searched, those that improved and those unchanged. Shared by the terminal report,
// the Markdown summary and the job page, so that all three group alike. Pure.
#ifndef KBISECT_REPORT_SUITE_GROUPS_H_
#define KBISECT_REPORT_SUITE_GROUPS_H_

#include <string>
#include <vector>

#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// The metrics that share one culprit, in the order the output prints them.
struct SuiteCulpritGroup {
  v1::CommitRef culprit;
  std::vector<const v1::SuiteMetricResult*> metrics;
};

struct SuiteGroups {
  // By culprit: most metrics first, ties in the order of the culprits' positions in the range.
  std::vector<SuiteCulpritGroup> culprits;
  std::vector<const v1::SuiteMetricResult*> unresolved;  // Moved, no culprit (with a reason).
  std::vector<const v1::SuiteMetricResult*> searching;   // Moved, its step still being narrowed.
  std::vector<const v1::SuiteMetricResult*> improved;
  std::vector<const v1::SuiteMetricResult*> unchanged;
  std::vector<const v1::SuiteMetricResult*> pending;  // Not judged yet.
  int metrics = 0;                                    // Every row.
};

// Groups `job`'s suite rows; the pointers point into `job`, which must outlive the result.
SuiteGroups GroupSuite(const v1::JobStatus& job);

// A metric's change in a few words: its step at the culprit when it has one, else BAD against
// GOOD: "+18.0% (1.200 ms -> 1.416 ms)", the sign positive when worse.
std::string SuiteMetricChange(const v1::SuiteMetricResult& row);

// What a suite job found, in one line: "7 metrics regressed at a1b2c3d, 2 at d4e5f6a, 1 without
// a culprit, 11 unchanged".
std::string SuiteHeadline(const SuiteGroups& groups);

}  // namespace kbisect

#endif  // KBISECT_REPORT_SUITE_GROUPS_H_
