// Copyright 2026 The kbisect Authors.
#include "worker/gpu_watch.h"

#include <dlfcn.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/identity/clock_events.h"
#include "common/identity/identity.h"
#include "common/sync/mutex.h"

namespace kbisect {

// ----------------------------------------------------------------------------------------------
// The summary.

bool GpuRunSummary::hardware_slowdown() const {
  return WorstClockEvent(reasons_seen) == ClockEventSeverity::kHardware;
}

bool GpuRunSummary::software_limit() const {
  return WorstClockEvent(reasons_seen) == ClockEventSeverity::kSoftware;
}

std::string GpuRunSummary::Describe() const {
  std::vector<std::string> parts;
  for (const auto& [name, share] : reason_shares) {
    parts.push_back(absl::StrFormat("%s %.0f%%", name, 100 * share));
  }
  std::string out =
      absl::StrCat(parts.empty() ? "no clock event" : absl::StrJoin(parts, ", "), " in ", samples,
                   samples == 1 ? " sample" : " samples", " (", source, ")");
  if (min_sm_clock_mhz >= 0) {
    absl::StrAppend(&out, ", SM clock min ", min_sm_clock_mhz, " MHz, median ", median_sm_clock_mhz,
                    " MHz");
  }
  return out;
}

GpuRunSummary SummarizeRun(const std::vector<GpuSample>& samples) {
  GpuRunSummary summary;
  summary.samples = static_cast<int>(samples.size());
  std::vector<int> clocks;
  for (const GpuSample& s : samples) {
    summary.reasons_seen |= s.reasons;
    if (s.sm_clock_mhz >= 0) clocks.push_back(s.sm_clock_mhz);
    summary.max_gpu_temp_c = std::max(summary.max_gpu_temp_c, s.gpu_temp_c);
    summary.max_mem_temp_c = std::max(summary.max_mem_temp_c, s.mem_temp_c);
    summary.max_power_w = std::max(summary.max_power_w, s.power_w);
  }
  for (const ClockEventReason& reason : ClockEventReasons()) {
    if ((summary.reasons_seen & reason.bit) == 0) continue;
    const auto under = std::count_if(samples.begin(), samples.end(),
                                     [&](const GpuSample& s) { return (s.reasons & reason.bit); });
    summary.reason_shares.emplace_back(reason.name, static_cast<double>(under) / summary.samples);
  }
  if (!clocks.empty()) {
    std::sort(clocks.begin(), clocks.end());
    summary.min_sm_clock_mhz = clocks.front();
    summary.median_sm_clock_mhz = clocks[clocks.size() / 2];
  }
  return summary;
}

v1::GpuState ToGpuState(const GpuRunSummary& summary) {
  v1::GpuState state;
  if (summary.max_gpu_temp_c >= 0) state.set_temperature_c(summary.max_gpu_temp_c);
  if (summary.min_sm_clock_mhz >= 0) state.set_sm_clock_mhz(summary.min_sm_clock_mhz);
  for (const auto& [name, share] : summary.reason_shares) {
    state.add_throttle_reasons(name);
    v1::ReasonShare* out = state.add_reason_shares();
    out->set_reason(name);
    out->set_share(share);
  }
  state.set_throttled(summary.hardware_slowdown());
  state.set_watch_source(summary.source);
  state.set_samples(summary.samples);
  if (summary.median_sm_clock_mhz >= 0) state.set_median_sm_clock_mhz(summary.median_sm_clock_mhz);
  if (summary.max_mem_temp_c >= 0) state.set_memory_temperature_c(summary.max_mem_temp_c);
  if (summary.max_power_w >= 0) state.set_power_watts(summary.max_power_w);
  return state;
}

// ----------------------------------------------------------------------------------------------
// nvidia-smi.

std::string NvidiaSmiWatchFields(bool legacy_reasons) {
  return absl::StrCat(
      legacy_reasons ? "clocks_throttle_reasons.active" : "clocks_event_reasons.active",
      ",clocks.sm,clocks.mem,power.draw,temperature.gpu,temperature.memory");
}

namespace {

// A number nvidia-smi printed, or -1 for "[N/A]", "N/A", "[Not Supported]" and the like.
double Reading(absl::string_view field) {
  double value = 0;
  return absl::SimpleAtod(absl::StripAsciiWhitespace(field), &value) ? value : -1;
}

}  // namespace

std::vector<GpuSample> ParseNvidiaSmiWatch(absl::string_view output) {
  std::vector<GpuSample> samples;
  for (absl::string_view line : absl::StrSplit(output, '\n', absl::SkipWhitespace())) {
    const std::vector<absl::string_view> fields = absl::StrSplit(line, ',');
    if (fields.size() != 6) continue;
    absl::string_view mask = absl::StripAsciiWhitespace(fields[0]);
    GpuSample sample;
    if (!absl::ConsumePrefix(&mask, "0x") || !absl::SimpleHexAtoi(mask, &sample.reasons)) continue;
    sample.sm_clock_mhz = static_cast<int>(Reading(fields[1]));
    sample.mem_clock_mhz = static_cast<int>(Reading(fields[2]));
    sample.power_w = Reading(fields[3]);
    sample.gpu_temp_c = Reading(fields[4]);
    sample.mem_temp_c = Reading(fields[5]);
    samples.push_back(sample);
  }
  return samples;
}

std::optional<GpuSample> ParseAmdSmiWatch(absl::string_view json, int gpu) {
  const std::optional<v1::GpuState> state =
      ParseAmdSmiMetric(std::string_view(json.data(), json.size()), gpu);
  if (!state.has_value()) return std::nullopt;
  GpuSample sample;
  sample.reasons = 0;
  for (const std::string& reason : state->throttle_reasons()) sample.reasons |= ClockEventBit(reason);
  if (state->sm_clock_mhz() > 0) sample.sm_clock_mhz = state->sm_clock_mhz();
  if (state->power_watts() > 0) sample.power_w = state->power_watts();
  if (state->temperature_c() > 0) sample.gpu_temp_c = state->temperature_c();
  if (state->memory_temperature_c() > 0) sample.mem_temp_c = state->memory_temperature_c();
  return sample;
}

namespace {

// The nvidia-smi command that prints the watch's fields for `device`: once, or every
// `period` with `stream`.
ExecRequest NvidiaSmiQuery(const GpuWatchOptions& options, bool legacy_reasons, bool stream) {
  ExecRequest request;
  request.argv = {"nvidia-smi", absl::StrCat("--query-gpu=", NvidiaSmiWatchFields(legacy_reasons)),
                  "--format=csv,noheader,nounits"};
  if (!options.device.empty()) request.argv.push_back(absl::StrCat("--id=", options.device));
  if (stream) {
    request.argv.push_back(absl::StrCat(
        "--loop-ms=", std::max<int64_t>(1, absl::ToInt64Milliseconds(options.period))));
    // Line-buffered, so that every sample reaches the pipe before the stop's SIGTERM.
    request.argv.insert(request.argv.begin(), {"stdbuf", "-oL"});
    request.kill_grace = absl::Seconds(1);
  } else {
    request.timeout = absl::Seconds(10);
  }
  return request;
}

// A streaming nvidia-smi in a thread of its own, stopped (SIGTERM to its process group) by Stop.
// A run over before the stream printed anything (nvidia-smi takes tens of milliseconds to start)
// gets one reading, `once`, at its end.
class NvidiaSmiWatch : public GpuWatch {
 public:
  NvidiaSmiWatch(CommandRunner* runner, ExecRequest stream, ExecRequest once)
      : runner_(runner), once_(std::move(once)), thread_([this, stream = std::move(stream)] {
          absl::StatusOr<ExecResult> ran = runner_->Run(stream, &stop_);
          if (ran.ok()) output_ = std::move(ran->output);
        }) {}
  ~NvidiaSmiWatch() override {
    if (thread_.joinable()) Stop();
  }

  GpuRunSummary Stop() override {
    stop_.Cancel();
    thread_.join();
    std::vector<GpuSample> samples = ParseNvidiaSmiWatch(output_);
    if (samples.empty()) {
      absl::StatusOr<ExecResult> ran = runner_->Run(once_);
      if (ran.ok() && ran->ok()) samples = ParseNvidiaSmiWatch(ran->output);
    }
    GpuRunSummary summary = SummarizeRun(samples);
    summary.source = "nvidia-smi";
    return summary;
  }

 private:
  CommandRunner* const runner_;
  const ExecRequest once_;
  Cancellation stop_;
  std::string output_;  // Written by the thread, read after the join.
  std::thread thread_;
};

}  // namespace

// ----------------------------------------------------------------------------------------------
// NVML.

// The few NVML functions the watch uses, with their C ABI: nvmlReturn_t is an int (NVML_SUCCESS
// is 0), nvmlDevice_t an opaque pointer, enums are ints.
class NvmlLibrary {
 public:
  using Device = void*;

  // Loads `path` and initializes NVML. FailedPrecondition when the library is missing, lacks a
  // function, or nvmlInit_v2 fails (no driver, no GPU).
  static absl::StatusOr<std::shared_ptr<NvmlLibrary>> Load(const std::string& path) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat("cannot load ", path, ": ", dlerror()));
    }
    std::shared_ptr<NvmlLibrary> nvml(new NvmlLibrary(handle));
    if (!nvml->Bind()) {
      return absl::FailedPreconditionError(absl::StrCat(path, " lacks an NVML function"));
    }
    if (const int code = nvml->init_(); code != 0) {
      return absl::FailedPreconditionError(absl::StrCat("nvmlInit_v2 returned ", code));
    }
    nvml->initialized_ = true;
    return nvml;
  }

  ~NvmlLibrary() {
    if (initialized_) shutdown_();
    dlclose(handle_);
  }

  // The device named as CUDA_VISIBLE_DEVICES names it (an index or a UUID; "" is index 0).
  absl::StatusOr<Device> Find(const std::string& device) const {
    Device found = nullptr;
    unsigned index = 0;
    const bool by_index = device.empty() || absl::SimpleAtoi(device, &index);
    const int code = by_index ? by_index_(index, &found) : by_uuid_(device.c_str(), &found);
    if (code != 0) {
      return absl::NotFoundError(absl::StrCat("NVML has no GPU ", device, " (", code, ")"));
    }
    return found;
  }

  // One reading of `device`; a value NVML does not give is -1 (the sample stays).
  GpuSample Sample(Device device) const {
    GpuSample sample;
    unsigned long long reasons = 0;  // NOLINT(runtime/int): NVML's type.
    if (reasons_(device, &reasons) == 0) sample.reasons = reasons;
    unsigned value = 0;
    if (clock_(device, /*NVML_CLOCK_SM=*/1, &value) == 0) sample.sm_clock_mhz = value;
    if (clock_(device, /*NVML_CLOCK_MEM=*/2, &value) == 0) sample.mem_clock_mhz = value;
    if (power_(device, &value) == 0) sample.power_w = value / 1000.0;
    if (temperature_(device, /*NVML_TEMPERATURE_GPU=*/0, &value) == 0) sample.gpu_temp_c = value;
    return sample;
  }

 private:
  explicit NvmlLibrary(void* handle) : handle_(handle) {}

  template <typename F>
  bool Resolve(const char* name, F* f) {
    *f = reinterpret_cast<F>(dlsym(handle_, name));
    return *f != nullptr;
  }
  bool Bind() {
    // Drivers before 535 name the reasons "throttle" reasons.
    if (!Resolve("nvmlDeviceGetCurrentClocksEventReasons", &reasons_) &&
        !Resolve("nvmlDeviceGetCurrentClocksThrottleReasons", &reasons_)) {
      return false;
    }
    return Resolve("nvmlInit_v2", &init_) && Resolve("nvmlShutdown", &shutdown_) &&
           Resolve("nvmlDeviceGetHandleByIndex_v2", &by_index_) &&
           Resolve("nvmlDeviceGetHandleByUUID", &by_uuid_) &&
           Resolve("nvmlDeviceGetClockInfo", &clock_) &&
           Resolve("nvmlDeviceGetPowerUsage", &power_) &&
           Resolve("nvmlDeviceGetTemperature", &temperature_);
  }

  void* const handle_;
  bool initialized_ = false;
  int (*init_)() = nullptr;
  int (*shutdown_)() = nullptr;
  int (*by_index_)(unsigned, Device*) = nullptr;
  int (*by_uuid_)(const char*, Device*) = nullptr;
  int (*reasons_)(Device, unsigned long long*) = nullptr;  // NOLINT(runtime/int)
  int (*clock_)(Device, int, unsigned*) = nullptr;
  int (*power_)(Device, unsigned*) = nullptr;
  int (*temperature_)(Device, int, unsigned*) = nullptr;
};

namespace {

// A source sampled every `period` in a thread of its own, from when the watch starts (the first
// sample taken by the thread, so starting never waits for a slow tool), and once more when it
// stops: NVML, and amd-smi, which is polled. A sample the source could not take is skipped.
class PollingWatch : public GpuWatch {
 public:
  using Sampler = std::function<std::optional<GpuSample>()>;

  PollingWatch(Sampler sample, absl::Duration period, std::string source)
      : sample_(std::move(sample)),
        period_(period),
        source_(std::move(source)),
        thread_([this] { Loop(); }) {}
  ~PollingWatch() override {
    if (thread_.joinable()) Stop();
  }

  GpuRunSummary Stop() override {
    {
      kbisect::MutexLock lock(&mu_);
      stopping_ = true;
      wake_.Signal();
    }
    thread_.join();
    if (std::optional<GpuSample> last = sample_()) samples_.push_back(*last);
    GpuRunSummary summary = SummarizeRun(samples_);
    summary.source = source_;
    return summary;
  }

 private:
  void Loop() {
    kbisect::MutexLock lock(&mu_);
    absl::Time next = absl::Now();
    while (!stopping_) {
      if (absl::Now() < next && !wake_.WaitWithDeadline(&mu_, next)) continue;  // Woken.
      if (stopping_) break;
      // A slow sample (amd-smi takes a few hundred milliseconds) must not block Stop.
      mu_.Unlock();
      std::optional<GpuSample> sample = sample_();
      mu_.Lock();
      if (sample.has_value()) samples_.push_back(*sample);
      next = std::max(next + period_, absl::Now());
    }
  }

  const Sampler sample_;
  const absl::Duration period_;
  const std::string source_;
  kbisect::Mutex mu_;
  kbisect::CondVar wake_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Written by the thread under mu_, then by Stop after the join.
  std::vector<GpuSample> samples_;
  std::thread thread_;
};

// The amd-smi command that reads `device` (an index; "" or a non-index reads the first GPU).
ExecRequest AmdSmiQuery(const GpuWatchOptions& options) {
  ExecRequest request;
  request.argv = {"amd-smi", "metric", "--json"};
  int index = 0;
  if (absl::SimpleAtoi(options.device, &index)) request.argv.insert(request.argv.end(), {"-g", options.device});
  request.timeout = absl::Seconds(10);
  return request;
}

// One amd-smi reading of the device, or nullopt when it did not answer readably.
std::optional<GpuSample> SampleAmdSmi(const GpuWatchOptions& options) {
  absl::StatusOr<ExecResult> ran = options.runner->Run(AmdSmiQuery(options));
  if (!ran.ok() || !ran->ok()) return std::nullopt;
  int index = -1;
  if (!absl::SimpleAtoi(options.device, &index)) index = -1;
  return ParseAmdSmiWatch(ran->output, index);
}

// True when one nvidia-smi query with the watch's fields reads the device.
bool NvidiaSmiAnswers(const GpuWatchOptions& options, bool legacy_reasons) {
  absl::StatusOr<ExecResult> ran =
      options.runner->Run(NvidiaSmiQuery(options, legacy_reasons, /*stream=*/false));
  return ran.ok() && ran->ok() && !ParseNvidiaSmiWatch(ran->output).empty();
}

}  // namespace

// ----------------------------------------------------------------------------------------------
// The watcher.

GpuWatcher::GpuWatcher(GpuWatcher&&) noexcept = default;
GpuWatcher& GpuWatcher::operator=(GpuWatcher&&) noexcept = default;
GpuWatcher::~GpuWatcher() = default;

GpuWatcher GpuWatcher::Detect(const GpuWatchOptions& options) {
  GpuWatcher watcher;
  watcher.options_ = options;
  if (!options.nvml_library.empty()) {
    absl::StatusOr<std::shared_ptr<NvmlLibrary>> nvml = NvmlLibrary::Load(options.nvml_library);
    if (nvml.ok() && (*nvml)->Find(options.device).ok()) {
      watcher.nvml_ = *std::move(nvml);
      watcher.source_ = "nvml";
      return watcher;
    }
  }
  if (options.runner == nullptr) return watcher;
  for (const bool legacy : {false, true}) {
    if (NvidiaSmiAnswers(options, legacy)) {
      watcher.legacy_reasons_ = legacy;
      watcher.source_ = "nvidia-smi";
      return watcher;
    }
  }
  if (SampleAmdSmi(options).has_value()) watcher.source_ = "amd-smi";
  return watcher;
}

std::unique_ptr<GpuWatch> GpuWatcher::Watch() const {
  if (nvml_ != nullptr) {
    absl::StatusOr<NvmlLibrary::Device> device = nvml_->Find(options_.device);
    if (!device.ok()) return nullptr;
    return std::make_unique<PollingWatch>(
        [nvml = nvml_, device = *device]() -> std::optional<GpuSample> {
          return nvml->Sample(device);
        },
        options_.period, "nvml");
  }
  if (source_ == "amd-smi") {
    // amd-smi is a Python program that takes a few hundred milliseconds of a core per reading:
    // polled every 100 ms it would take a core from the benchmark.
    return std::make_unique<PollingWatch>([options = options_] { return SampleAmdSmi(options); },
                                          std::max(options_.period, kAmdSmiPeriod), "amd-smi");
  }
  if (source_ == "nvidia-smi") {
    return std::make_unique<NvidiaSmiWatch>(
        options_.runner, NvidiaSmiQuery(options_, legacy_reasons_, /*stream=*/true),
        NvidiaSmiQuery(options_, legacy_reasons_, /*stream=*/false));
  }
  return nullptr;
}

}  // namespace kbisect
