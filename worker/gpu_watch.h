// Copyright 2026 The kbisect Authors.
//
// The GPU watched while a benchmark runs (issue 49). A kernel timed in 200 ms can be throttled for
// its whole run and read clean a moment later, so one reading after the run is not enough: the
// worker samples its GPU every 100 ms or so during the run, through NVML where the driver provides
// it (dlopen("libnvidia-ml.so.1"): the worker builds and runs without it), else through a
// streaming `nvidia-smi --query-gpu=... --format=csv,noheader,nounits -lms 100`; an AMD GPU
// through `amd-smi metric --json`, polled every second (it is a slow tool). Each run then
// has a summary: the clock-event reasons seen and the share of samples under each, the minimum
// and median SM clock, the highest temperatures and power. A hardware slowdown during the run
// (hw_slowdown, hw_thermal_slowdown, hw_power_brake_slowdown) makes the run untrusted: it is run
// again. A software cap (sw_power_cap, sw_thermal_slowdown) flags it.
//
//   GpuWatcher watcher = GpuWatcher::Detect(options);  // once per worker slot
//   std::unique_ptr<GpuWatch> watch = watcher.Watch();  // around each benchmark run
//   ... run the benchmark ...
//   GpuRunSummary summary = watch->Stop();
#ifndef KBISECT_WORKER_GPU_WATCH_H_
#define KBISECT_WORKER_GPU_WATCH_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/exec/exec.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// One reading of a GPU during a run. A value the source could not read is -1.
struct GpuSample {
  uint64_t reasons = 0;  // Clock-event reason bits (common/identity/clock_events.h).
  int sm_clock_mhz = -1;
  int mem_clock_mhz = -1;
  double power_w = -1;
  double gpu_temp_c = -1;
  double mem_temp_c = -1;
};

// What the GPU did during one run.
struct GpuRunSummary {
  // "nvml", "nvidia-smi" or "amd-smi".
  std::string source;
  int samples = 0;
  // Every reason any sample saw (bits), and for each one seen its share of the samples, in bit
  // order ("hw_slowdown", 0.4).
  uint64_t reasons_seen = 0;
  std::vector<std::pair<std::string, double>> reason_shares;
  int min_sm_clock_mhz = -1;
  int median_sm_clock_mhz = -1;
  double max_gpu_temp_c = -1;
  double max_mem_temp_c = -1;
  double max_power_w = -1;

  // A hardware slowdown was seen: the run is not trusted.
  bool hardware_slowdown() const;
  // A software cap was seen (and no hardware slowdown): the run is flagged.
  bool software_limit() const;
  // "hw_slowdown 40% of 25 samples, SM clock min 1005 MHz, median 1980 MHz": for logs.
  std::string Describe() const;
};

// Summarizes the samples of one run. Pure.
GpuRunSummary SummarizeRun(const std::vector<GpuSample>& samples);

// The run's summary as the GpuState a task result carries: the reasons seen during the run and
// their shares, the minimum and median SM clock, the highest temperatures and power, the source
// and the sample count, and `throttled` when a hardware slowdown was seen (a software cap is
// named among the reasons without `throttled`).
v1::GpuState ToGpuState(const GpuRunSummary& summary);

// The fields `nvidia-smi --query-gpu` is asked for while watching, in this order; with
// `legacy_reasons` the clock-event mask is asked for by its name before driver 535
// (clocks_throttle_reasons.active).
std::string NvidiaSmiWatchFields(bool legacy_reasons);

// Parses what `nvidia-smi --query-gpu=<NvidiaSmiWatchFields> --format=csv,noheader,nounits`
// printed, one sample per line. Values nvidia-smi could not read ("[N/A]", "N/A", "[Not
// Supported]") are -1; lines without a readable mask (an error message, a cut-off last line)
// are skipped.
std::vector<GpuSample> ParseNvidiaSmiWatch(absl::string_view output);

// Parses what `amd-smi metric --json` printed (common/identity's ParseAmdSmiMetric) into one
// sample of GPU `gpu` (the first GPU when negative): the active violation statuses as their
// clock-event bits (ppt, socket_thermal, ... : common/identity/clock_events.h), the gfx clock,
// the socket power, the hotspot and memory temperatures. Nullopt for output it cannot read.
std::optional<GpuSample> ParseAmdSmiWatch(absl::string_view json, int gpu);

// The shortest period amd-smi is polled at.
inline constexpr absl::Duration kAmdSmiPeriod = absl::Seconds(1);

// A watch in progress over one benchmark run.
class GpuWatch {
 public:
  virtual ~GpuWatch() = default;
  // Stops sampling and returns what was seen (no samples: a run too short to sample).
  virtual GpuRunSummary Stop() = 0;
};

// NVML's functions, loaded from the driver's library. Thread-compatible once loaded.
class NvmlLibrary;

// How a slot's GPU is watched.
struct GpuWatchOptions {
  // The device: an index ("0") or a UUID ("GPU-8f2..."), as CUDA_VISIBLE_DEVICES names it;
  // "" is the first GPU.
  std::string device;
  absl::Duration period = absl::Milliseconds(100);
  // The NVML library to dlopen; "" skips NVML.
  std::string nvml_library = "libnvidia-ml.so.1";
  // Runs nvidia-smi when NVML is not there; must outlive the watcher. Null skips nvidia-smi.
  CommandRunner* runner = nullptr;
};

// Starts watches of one GPU, by whichever source answered when it was made.
class GpuWatcher {
 public:
  // Finds a source that reads `options.device`: NVML, else nvidia-smi, else amd-smi (one query
  // must answer).
  // A watcher without a source watches nothing (available() is false).
  static GpuWatcher Detect(const GpuWatchOptions& options);

  GpuWatcher(GpuWatcher&&) noexcept;
  GpuWatcher& operator=(GpuWatcher&&) noexcept;
  ~GpuWatcher();

  bool available() const { return !source_.empty(); }
  // "nvml", "nvidia-smi", "amd-smi" or "" (none).
  const std::string& source() const { return source_; }

  // Starts watching; null when no source is available.
  std::unique_ptr<GpuWatch> Watch() const;

 private:
  GpuWatcher() = default;
  GpuWatchOptions options_;
  std::string source_;
  bool legacy_reasons_ = false;
  std::shared_ptr<NvmlLibrary> nvml_;
};

}  // namespace kbisect

#endif  // KBISECT_WORKER_GPU_WATCH_H_
