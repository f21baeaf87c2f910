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
  // The round after the probes in flight probes one of the pieces they cut the interval into
  // (whichever lies between the last GOOD and the first BAD among them): each piece's points,
  // as PlanProbes(workers) places them once that piece is the open interval, nearest to the
  // piece's ends first (the probes there free the workers whose checkouts are nearest).
  std::vector<int> bounds;
  bounds.push_back(search.last_good());
  for (int probe : in_flight) {
    if (probe > search.last_good() && probe < search.first_bad()) bounds.push_back(probe);
  }
  bounds.push_back(search.first_bad());
  std::vector<std::vector<int>> pieces;
  for (size_t i = 0; i + 1 < bounds.size(); ++i) {
    const int low = bounds[i];
    const int high = bounds[i + 1];
    if (high - low < 2) continue;
    BisectSearch child = search;
    for (int probe : in_flight) {
      if (probe != low && probe != high) child.Abandon(probe);
    }
    if (low != search.last_good() && !child.Record(low, v1::VERDICT_GOOD).ok()) continue;
    if (high != search.first_bad() && !child.Record(high, v1::VERDICT_BAD).ok()) continue;
    std::vector<int> points = child.PlanProbes(std::max(1, workers));
    std::stable_sort(points.begin(), points.end(), [low, high](int a, int b) {
      return std::min(a - low, high - a) < std::min(b - low, high - b);
    });
    pieces.push_back(std::move(points));
  }
  for (size_t rank = 0; static_cast<int>(out.size()) < limit; ++rank) {
    bool any = false;
    for (const std::vector<int>& points : pieces) {
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

std::vector<int> BuildsToKeep(int last_good, int first_bad, const std::vector<int>& in_flight) {
  std::vector<int> indices = {0};
  auto add = [&](int index) {
    if (std::find(indices.begin(), indices.end(), index) == indices.end()) {
      indices.push_back(index);
    }
  };
  add(last_good);
  add(first_bad);
  for (int index : in_flight) {
    if (index > last_good && index < first_bad) add(index);
  }
  return indices;
}

void AddBuildsToKeep(const std::vector<v1::CommitRef>& commits, int last_good, int first_bad,
                     const std::vector<int>& in_flight, v1::Task* task) {
  if (task->build_command().empty()) return;
  for (int index : BuildsToKeep(last_good, first_bad, in_flight)) {
    if (index < 0 || index >= static_cast<int>(commits.size())) continue;
    if (commits[index].sha() != task->commit_sha()) task->add_keep_build_shas(commits[index].sha());
  }
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
  task.set_build_isolation(spec.build_isolation());
  *task.mutable_env() = spec.env();
  if (spec.has_build_timeout()) *task.mutable_build_timeout() = spec.build_timeout();
  return task;
}

}  // namespace kbisect
