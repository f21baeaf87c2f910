// Copyright 2026 The kbisect Authors.
#include "report/gpu_during_job.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/identity/clock_events.h"
#include "common/text/count.h"
#include "report/html/page_format.h"

namespace kbisect {
namespace {

// Adds one run's GPU state to `w` (its median SM clock to `medians`).
void AddRun(const v1::RunRecord& run, WorkerGpuDuringJob* w, std::vector<int>* medians) {
  const v1::GpuState& gpu = run.gpu_state();
  ++w->runs;
  if (!gpu.watch_source().empty()) {
    ++w->watched_runs;
    w->source = gpu.watch_source();
  }
  if (gpu.sm_clock_mhz() > 0) {
    w->min_sm_clock_mhz = w->min_sm_clock_mhz == 0
                              ? gpu.sm_clock_mhz()
                              : std::min(w->min_sm_clock_mhz, gpu.sm_clock_mhz());
    medians->push_back(gpu.median_sm_clock_mhz() > 0 ? gpu.median_sm_clock_mhz()
                                                     : gpu.sm_clock_mhz());
  }
  for (const std::string& reason : gpu.throttle_reasons()) {
    if (SeverityOfReason(reason) != ClockEventSeverity::kBenign) w->reasons.insert(reason);
  }
  w->foreign.insert(gpu.foreign_processes().begin(), gpu.foreign_processes().end());
  switch (html::GpuMarkOf(gpu)) {
    case html::GpuRunMark::kThrottled:
      ++(run.has_value() ? w->kept_throttled : w->rerun_throttled);
      break;
    case html::GpuRunMark::kCapped:
      ++w->capped;
      break;
    case html::GpuRunMark::kShared:
      ++w->shared;
      break;
    case html::GpuRunMark::kClean:
      break;
  }
}

}  // namespace

std::string WorkerGpuDuringJob::Words() const {
  if (runs == 0) return "";
  std::string out = watched_runs > 0
                        ? absl::StrCat(Count(watched_runs, "run"), " watched (", source, ")")
                        : absl::StrCat(Count(runs, "run"), " read after each run");
  if (min_sm_clock_mhz > 0) {
    absl::StrAppend(&out, ", SM clock min ", min_sm_clock_mhz, " MHz, median ",
                    median_sm_clock_mhz, " MHz");
  }
  std::vector<std::string> skewed;
  if (rerun_throttled > 0) {
    skewed.push_back(absl::StrCat(Count(rerun_throttled, "run"), " rerun on a throttled GPU"));
  }
  if (kept_throttled > 0) {
    skewed.push_back(absl::StrCat(Count(kept_throttled, "run"), " kept throttled"));
  }
  if (capped > 0) skewed.push_back(absl::StrCat(Count(capped, "run"), " on a capped GPU"));
  if (!skewed.empty()) {
    absl::StrAppend(&out, "; ", absl::StrJoin(skewed, ", "));
    if (!reasons.empty()) absl::StrAppend(&out, " (", absl::StrJoin(reasons, ", "), ")");
  }
  if (shared > 0) {
    absl::StrAppend(&out, "; ", Count(shared, "run"), " shared the GPU with ",
                    absl::StrJoin(foreign, ", "));
  }
  return out;
}

std::map<std::string, WorkerGpuDuringJob> GpuDuringJob(const v1::JobStatus& job) {
  std::map<std::string, WorkerGpuDuringJob> out;
  std::map<std::string, std::vector<int>> medians;
  for (const v1::Probe& probe : job.probes()) {
    if (probe.worker().empty()) continue;
    for (const v1::RunRecord& run : probe.runs()) {
      if (!run.has_gpu_state()) continue;
      AddRun(run, &out[probe.worker()], &medians[probe.worker()]);
    }
  }
  for (auto& [worker, clocks] : medians) {
    if (clocks.empty()) continue;
    std::nth_element(clocks.begin(), clocks.begin() + clocks.size() / 2, clocks.end());
    out[worker].median_sm_clock_mhz = clocks[clocks.size() / 2];
  }
  return out;
}

}  // namespace kbisect
