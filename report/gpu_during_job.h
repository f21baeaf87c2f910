// Copyright 2026 The kbisect Authors.
//
// What each worker's GPU did during a job (issue 49), from the run records of its probes: how
// many runs were watched and by what, the SM clocks seen, the runs a hardware slowdown had rerun
// or left throttled, those under a software cap, those that shared the GPU with another process.
// Read by the job page's workers table and the terminal report's workers lines. Pure.
#ifndef KBISECT_REPORT_GPU_DURING_JOB_H_
#define KBISECT_REPORT_GPU_DURING_JOB_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// What the GPU did during one run, for its mark: a hardware slowdown that persisted through the
// reruns ("throttled", the sample is not trusted), a software cap (sw_power_cap,
// sw_thermal_slowdown: "capped", flagged), or another compute process on the GPU ("shared");
// the worst one wins.
enum class GpuRunMark { kClean, kShared, kCapped, kThrottled };
GpuRunMark GpuMarkOf(const v1::GpuState& gpu);

// A skewed run's mark in words, for a tooltip ("GPU capped: sw_power_cap 40% of the run",
// "GPU shared with pid 4242 python3 (12034 MiB)"); "" when clean.
std::string GpuMarkWords(const v1::GpuState& gpu);

// The GPU state of each sample of `probe`, in sample order: its runs that produced a value (a
// run rerun for a throttled GPU has none); null where the probe has fewer runs than samples (a
// cached probe, a result from before runs were recorded).
std::vector<const v1::GpuState*> SampleGpuStates(const v1::Probe& probe);

// Runs counted by their mark (a throttled run split by whether it was rerun or kept).
struct GpuRunCounts {
  int rerun_throttled = 0;  // Runs a hardware slowdown made untrusted, then run again.
  int kept_throttled = 0;   // Runs still throttled after the reruns, kept.
  int capped = 0;           // Runs under a software cap (flagged).
  int shared = 0;           // Runs that shared the GPU with another compute process.

  // Counts `run` by its mark.
  void Add(const v1::RunRecord& run);
  // True when a run was throttled, capped or shared.
  bool Skewed() const { return rerun_throttled + kept_throttled + capped + shared > 0; }
  // "2 runs rerun on a throttled GPU", "1 run kept throttled", "3 runs on a capped GPU", in
  // that order, those not zero (shared runs are worded by the caller, with or without names).
  std::vector<std::string> ThrottleWords() const;
};

struct WorkerGpuDuringJob {
  int runs = 0;          // Runs with a GPU state (watched or read after the run).
  int watched_runs = 0;  // Of them, watched during the run.
  std::string source;    // The watch's source ("nvml", "nvidia-smi", "amd-smi"), "" if none.
  int min_sm_clock_mhz = 0;     // The lowest SM clock any run saw (0: none read).
  int median_sm_clock_mhz = 0;  // The median of the runs' median SM clocks (0: none read).
  GpuRunCounts counts;
  std::set<std::string> reasons;  // The limiting reasons seen (hw_slowdown, sw_power_cap, ...).
  std::set<std::string> foreign;  // The other processes seen ("pid 4242 python3 (12034 MiB)").

  bool Skewed() const { return counts.Skewed(); }
  // "42 runs watched (nvml), SM clock min 1410 MHz, median 1980 MHz; 2 runs rerun on a throttled
  // GPU, 3 runs on a capped GPU (hw_slowdown, sw_power_cap); 1 run shared the GPU with pid 4242
  // python3 (12034 MiB)"; "" without a run record.
  std::string Words() const;
};

// Each worker of `job` that has run records, by name.
std::map<std::string, WorkerGpuDuringJob> GpuDuringJob(const v1::JobStatus& job);

}  // namespace kbisect

#endif  // KBISECT_REPORT_GPU_DURING_JOB_H_
