// Copyright 2026 The kbisect Authors.
#include "common/identity/identity.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace kbisect {
namespace {

std::string ReadFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return std::string(absl::StripAsciiWhitespace(line));
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, "model name")) {
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        return std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
      }
    }
  }
  return "";
}

std::string OsName() {
  std::ifstream in("/etc/os-release");
  std::string line;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, "PRETTY_NAME=")) {
      std::string value = line.substr(12);
      return std::string(absl::StripSuffix(absl::StripPrefix(value, "\""), "\""));
    }
  }
  return "";
}

bool IsUnavailable(absl::string_view field) {
  return field.empty() || absl::StartsWith(field, "[") || field == "N/A";
}

std::string RunQuiet(CommandRunner* runner, std::vector<std::string> argv) {
  ExecRequest request;
  request.argv = std::move(argv);
  request.timeout = absl::Seconds(10);
  absl::StatusOr<ExecResult> result = runner->Run(request);
  if (!result.ok() || !result->ok()) return "";
  return result->output;
}

uint64_t Fnv1a(absl::string_view text) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

}  // namespace

std::vector<v1::GpuInfo> ParseNvidiaSmiQuery(std::string_view csv_text,
                                             std::string* driver_version) {
  const absl::string_view csv(csv_text.data(), csv_text.size());
  std::vector<v1::GpuInfo> gpus;
  for (absl::string_view line : absl::StrSplit(csv, '\n', absl::SkipWhitespace())) {
    std::vector<std::string> fields;
    for (absl::string_view field : absl::StrSplit(line, ',')) {
      fields.emplace_back(absl::StripAsciiWhitespace(field));
    }
    if (fields.size() < 11) continue;
    v1::GpuInfo gpu;
    int index = 0;
    if (absl::SimpleAtoi(fields[0], &index)) gpu.set_index(index);
    gpu.set_model(fields[1]);
    if (!IsUnavailable(fields[2])) gpu.set_uuid(fields[2]);
    if (!IsUnavailable(fields[3])) gpu.set_serial(fields[3]);
    if (!IsUnavailable(fields[4])) gpu.set_pci_bus_id(fields[4]);
    if (!IsUnavailable(fields[5]) && driver_version != nullptr) *driver_version = fields[5];
    if (!IsUnavailable(fields[6])) gpu.set_vbios_version(fields[6]);
    int64_t memory = 0;
    if (absl::SimpleAtoi(fields[7], &memory)) gpu.set_memory_total_mib(memory);
    double power = 0;
    if (absl::SimpleAtod(fields[8], &power)) gpu.set_power_limit_watts(power);
    int clock = 0;
    if (absl::SimpleAtoi(fields[9], &clock)) gpu.set_max_sm_clock_mhz(clock);
    if (absl::SimpleAtoi(fields[10], &clock)) gpu.set_max_memory_clock_mhz(clock);
    gpus.push_back(std::move(gpu));
  }
  return gpus;
}

std::string ParseCudaVersion(std::string_view output_text) {
  const absl::string_view output(output_text.data(), output_text.size());
  const absl::string_view key = "CUDA Version:";
  const size_t at = output.find(key);
  if (at == absl::string_view::npos) return "";
  absl::string_view rest = absl::StripLeadingAsciiWhitespace(output.substr(at + key.size()));
  size_t end = 0;
  while (end < rest.size() && (absl::ascii_isdigit(rest[end]) || rest[end] == '.')) ++end;
  return std::string(rest.substr(0, end));
}

std::optional<v1::GpuState> ParseNvidiaGpuState(std::string_view csv_text) {
  const absl::string_view csv =
      absl::StripAsciiWhitespace(absl::string_view(csv_text.data(), csv_text.size()));
  std::vector<std::string> fields;
  for (absl::string_view field : absl::StrSplit(csv.substr(0, csv.find('\n')), ',')) {
    fields.emplace_back(absl::StripAsciiWhitespace(field));
  }
  if (fields.size() < 3) return std::nullopt;
  v1::GpuState state;
  double temperature = 0;
  if (absl::SimpleAtod(fields[0], &temperature)) state.set_temperature_c(temperature);
  int clock = 0;
  if (absl::SimpleAtoi(fields[1], &clock)) state.set_sm_clock_mhz(clock);
  uint64_t mask = 0;
  absl::string_view hex = fields[2];
  if (!absl::ConsumePrefix(&hex, "0x") || !absl::SimpleHexAtoi(hex, &mask)) return std::nullopt;
  // NVML clocks-event reasons (nvmlClocksEventReason*), as nvidia-smi reports them.
  struct Reason {
    uint64_t bit;
    const char* name;
    bool throttles;
  };
  static constexpr Reason kReasons[] = {
      {0x1, "gpu_idle", false},
      {0x2, "applications_clocks_setting", false},
      {0x4, "sw_power_cap", true},
      {0x8, "hw_slowdown", true},
      {0x10, "sync_boost", false},
      {0x20, "sw_thermal_slowdown", true},
      {0x40, "hw_thermal_slowdown", true},
      {0x80, "hw_power_brake_slowdown", true},
      {0x100, "display_clock_setting", false},
  };
  for (const Reason& reason : kReasons) {
    if ((mask & reason.bit) == 0) continue;
    state.add_throttle_reasons(reason.name);
    if (reason.throttles) state.set_throttled(true);
  }
  return state;
}

std::optional<v1::GpuState> ProbeGpuState(CommandRunner* runner, const std::string& slot) {
  for (const char* reasons : {"clocks_event_reasons.active", "clocks_throttle_reasons.active"}) {
    std::vector<std::string> query = {
        "nvidia-smi", absl::StrCat("--query-gpu=temperature.gpu,clocks.sm,", reasons),
        "--format=csv,noheader,nounits"};
    if (!slot.empty()) query.push_back(absl::StrCat("--id=", slot));
    const std::string output = RunQuiet(runner, query);
    if (output.empty()) continue;
    if (std::optional<v1::GpuState> state = ParseNvidiaGpuState(output)) return state;
  }
  return std::nullopt;
}

int CountLocalGpus(CommandRunner* runner) {
  const std::string nvidia = RunQuiet(runner, {"nvidia-smi", "-L"});
  int count = 0;
  for (absl::string_view line : absl::StrSplit(nvidia, '\n', absl::SkipWhitespace())) {
    if (absl::StartsWith(line, "GPU ")) ++count;
  }
  if (count > 0) return count;
  const std::string rocm = RunQuiet(runner, {"rocm-smi", "--showid"});
  for (absl::string_view line : absl::StrSplit(rocm, '\n', absl::SkipWhitespace())) {
    if (absl::StartsWith(line, "GPU[") && absl::StrContains(line, "Device ID")) ++count;
  }
  return count;
}

void AssignHardwareClass(v1::RunnerIdentity* identity) {
  std::string keys;
  std::string label;
  if (identity->gpus_size() > 0) {
    const std::string& model = identity->gpus(0).model();
    const std::string toolkit = identity->cuda_version().empty()
                                    ? absl::StrCat("ROCm ", identity->rocm_version())
                                    : absl::StrCat("CUDA ", identity->cuda_version());
    keys = absl::StrCat("gpu=", model, ";count=", identity->gpu_count(),
                        ";driver=", identity->driver_version(), ";toolkit=", toolkit);
    label = absl::StrCat(model, " x", identity->gpu_count(), ", driver ",
                         identity->driver_version(), ", ", toolkit);
  } else {
    keys = absl::StrCat("cpu=", identity->cpu_model(), ";cores=", identity->cpu_cores());
    label = absl::StrCat("CPU only: ", identity->cpu_model(), " (", identity->cpu_cores(),
                         " cores)");
  }
  identity->set_hardware_class(absl::StrFormat("hc-%016x", Fnv1a(keys)));
  identity->set_hardware_class_label(label);
}

v1::RunnerIdentity ProbeRunnerIdentity(CommandRunner* runner, const std::string& slot) {
  v1::RunnerIdentity identity;
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) == 0) identity.set_host(host);
  struct utsname uts;
  if (uname(&uts) == 0) identity.set_kernel(uts.release);
  identity.set_os(OsName());
  identity.set_cpu_model(CpuModel());
  identity.set_cpu_cores(static_cast<int>(std::thread::hardware_concurrency()));
  identity.set_cpu_governor(
      ReadFirstLine("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"));
  identity.set_worker_version(kWorkerVersion);
  if (const char* image = std::getenv("KBISECT_CONTAINER_IMAGE")) {
    identity.set_container_image(image);
  }
  identity.set_slot(slot);

  std::vector<std::string> query = {
      "nvidia-smi",
      "--query-gpu=index,name,uuid,serial,pci.bus_id,driver_version,vbios_version,memory.total,"
      "power.limit,clocks.max.sm,clocks.max.mem",
      "--format=csv,noheader,nounits"};
  if (!slot.empty()) query.push_back(absl::StrCat("--id=", slot));
  const std::string csv = RunQuiet(runner, query);
  std::string driver;
  std::vector<v1::GpuInfo> gpus = ParseNvidiaSmiQuery(csv, &driver);
  if (!gpus.empty()) {
    identity.set_gpu_vendor(v1::GPU_VENDOR_NVIDIA);
    identity.set_driver_version(driver);
    identity.set_cuda_version(ParseCudaVersion(RunQuiet(runner, {"nvidia-smi"})));
    for (v1::GpuInfo& gpu : gpus) *identity.add_gpus() = std::move(gpu);
    identity.set_gpu_count(identity.gpus_size());
  } else {
    identity.set_gpu_vendor(v1::GPU_VENDOR_NONE);
  }
  AssignHardwareClass(&identity);
  return identity;
}

}  // namespace kbisect
