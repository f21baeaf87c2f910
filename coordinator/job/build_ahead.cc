// Copyright 2026 The kbisect Authors.
#include "coordinator/job/build_ahead.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>

namespace kbisect {

std::vector<int> PlanBuildAhead(const BisectSearch& search, int workers, int limit,
                                bool reference_good_next) {
  std::vector<int> out;
  if (limit <= 0) return out;
  std::set<int> listed;
  if (reference_good_next) {
    out.push_back(0);
    listed.insert(0);
  }
  const std::vector<int> in_flight = search.InFlight();
  const std::set<int> flying(in_flight.begin(), in_flight.end());
  // Each child's points, nearest to the probe that made the child first.
  std::vector<std::vector<int>> children;
  for (int probe : in_flight) {
    for (Verdict verdict : {Verdict::kGood, Verdict::kBad}) {
      BisectSearch child = search;
      if (!child.Record(probe, verdict).ok()) continue;  // Outside the interval: no child.
      std::vector<int> points = child.PlanProbes(std::max(1, workers));
      std::stable_sort(points.begin(), points.end(),
                       [probe](int a, int b) { return std::abs(a - probe) < std::abs(b - probe); });
      children.push_back(std::move(points));
    }
  }
  for (size_t rank = 0; static_cast<int>(out.size()) < limit; ++rank) {
    bool any = false;
    for (const std::vector<int>& points : children) {
      if (rank >= points.size()) continue;
      any = true;
      const int index = points[rank];
      if (flying.count(index) || search.VerdictAt(index).has_value() || listed.count(index)) {
        continue;
      }
      listed.insert(index);
      out.push_back(index);
      if (static_cast<int>(out.size()) >= limit) break;
    }
    if (!any) break;
  }
  return out;
}

v1::Task BuildAheadTask(const std::string& job_id, const v1::JobSpec& spec,
                        const v1::CommitRef& commit, int index) {
  v1::Task task;
  task.set_job_id(job_id);
  task.set_kind(v1::PROBE_KIND_BUILD);
  task.set_repository(spec.repository());
  task.set_commit_sha(commit.sha());
  task.set_commit_index(index);
  task.set_build_command(spec.build_command());
  *task.mutable_env() = spec.env();
  if (spec.has_build_timeout()) *task.mutable_build_timeout() = spec.build_timeout();
  return task;
}

}  // namespace kbisect
