// Copyright 2026 The kbisect Authors.
#include "report/gpu_during_job.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/identity/clock_events.h"
#include "common/text/count.h"

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
  w->counts.Add(run);
}

}  // namespace

GpuRunMark GpuMarkOf(const v1::GpuState& gpu) {
  if (gpu.throttled()) return GpuRunMark::kThrottled;
  for (const std::string& reason : gpu.throttle_reasons()) {
    if (SeverityOfReason(reason) != ClockEventSeverity::kBenign) return GpuRunMark::kCapped;
  }
  return gpu.foreign_processes_size() > 0 ? GpuRunMark::kShared : GpuRunMark::kClean;
}

std::string GpuMarkWords(const v1::GpuState& gpu) {
  const GpuRunMark mark = GpuMarkOf(gpu);
  if (mark == GpuRunMark::kClean) return "";
  if (mark == GpuRunMark::kShared) {
    return absl::StrCat("GPU shared with ", absl::StrJoin(gpu.foreign_processes(), ", "));
  }
  std::vector<std::string> reasons;
  for (const v1::ReasonShare& share : gpu.reason_shares()) {
    if (SeverityOfReason(share.reason()) == ClockEventSeverity::kBenign) continue;
    reasons.push_back(absl::StrFormat("%s %.0f%% of the run", share.reason(), 100 * share.share()));
  }
  if (reasons.empty()) {
    for (const std::string& reason : gpu.throttle_reasons()) {
      if (SeverityOfReason(reason) != ClockEventSeverity::kBenign) reasons.push_back(reason);
    }
  }
  return absl::StrCat(mark == GpuRunMark::kThrottled ? "GPU throttled: " : "GPU capped: ",
                      absl::StrJoin(reasons, ", "));
}

std::vector<const v1::GpuState*> SampleGpuStates(const v1::Probe& probe) {
  std::vector<const v1::GpuState*> states;
  for (const v1::RunRecord& run : probe.runs()) {
    if (run.has_value()) states.push_back(&run.gpu_state());
  }
  states.resize(probe.samples_size(), nullptr);
  return states;
}

void GpuRunCounts::Add(const v1::RunRecord& run) {
  switch (GpuMarkOf(run.gpu_state())) {
    case GpuRunMark::kThrottled:
      ++(run.has_value() ? kept_throttled : rerun_throttled);
      break;
    case GpuRunMark::kCapped:
      ++capped;
      break;
    case GpuRunMark::kShared:
      ++shared;
      break;
    case GpuRunMark::kClean:
      break;
  }
}

std::vector<std::string> GpuRunCounts::ThrottleWords() const {
  std::vector<std::string> words;
  if (rerun_throttled > 0) {
    words.push_back(absl::StrCat(Count(rerun_throttled, "run"), " rerun on a throttled GPU"));
  }
  if (kept_throttled > 0) {
    words.push_back(absl::StrCat(Count(kept_throttled, "run"), " kept throttled"));
  }
  if (capped > 0) words.push_back(absl::StrCat(Count(capped, "run"), " on a capped GPU"));
  return words;
}

std::string WorkerGpuDuringJob::Words() const {
  if (runs == 0) return "";
  std::string out = watched_runs > 0
                        ? absl::StrCat(Count(watched_runs, "run"), " watched (", source, ")")
                        : absl::StrCat(Count(runs, "run"), " read after each run");
  if (min_sm_clock_mhz > 0) {
    absl::StrAppend(&out, ", SM clock min ", min_sm_clock_mhz, " MHz, median ",
                    median_sm_clock_mhz, " MHz");
  }
  const std::vector<std::string> skewed = counts.ThrottleWords();
  if (!skewed.empty()) {
    absl::StrAppend(&out, "; ", absl::StrJoin(skewed, ", "));
    if (!reasons.empty()) absl::StrAppend(&out, " (", absl::StrJoin(reasons, ", "), ")");
  }
  if (counts.shared > 0) {
    absl::StrAppend(&out, "; ", Count(counts.shared, "run"), " shared the GPU with ",
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
