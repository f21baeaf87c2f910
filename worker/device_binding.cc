// Copyright 2026 The kbisect Authors.
#include "worker/device_binding.h"

#include <unistd.h>

#include <algorithm>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/text/count.h"

extern char** environ;  // NOLINT: POSIX.

namespace kbisect {
namespace {

std::string Get(const std::map<std::string, std::string>& env, const std::string& name) {
  auto it = env.find(name);
  return it == env.end() ? std::string() : it->second;
}

// Reads the non-negative integer variable `name`; absent or empty gives `fallback`.
absl::StatusOr<int> GetInt(const std::map<std::string, std::string>& env, const std::string& name,
                           int fallback) {
  const std::string value(absl::StripAsciiWhitespace(Get(env, name)));
  if (value.empty()) return fallback;
  int number = 0;
  if (!absl::SimpleAtoi(value, &number) || number < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, "=", value, " is not a non-negative integer"));
  }
  return number;
}

}  // namespace

absl::StatusOr<DeviceBinding> ResolveDeviceBinding(const std::map<std::string, std::string>& env,
                                                   std::optional<int> gpu_flag) {
  DeviceBinding binding;
  binding.slot = gpu_flag.value_or(0);
  if (!Get(env, "SLURM_JOB_ID").empty()) {
    v1::SchedulerPlacement& p = binding.placement;
    p.set_scheduler("slurm");
    p.set_job_id(Get(env, "SLURM_JOB_ID"));
    p.set_node(Get(env, "SLURMD_NODENAME"));
    p.set_step_id(Get(env, "SLURM_STEP_ID"));
    absl::StatusOr<int> local_id = GetInt(env, "SLURM_LOCALID", -1);
    if (!local_id.ok()) return local_id.status();
    absl::StatusOr<int> proc_id = GetInt(env, "SLURM_PROCID", 0);
    if (!proc_id.ok()) return proc_id.status();
    absl::StatusOr<int> restarts = GetInt(env, "SLURM_RESTART_COUNT", 0);
    if (!restarts.ok()) return restarts.status();
    // Outside a step (a batch script running the worker itself) there is no local id.
    p.set_local_id(*local_id < 0 ? 0 : *local_id);
    p.set_proc_id(*proc_id);
    p.set_restart_count(*restarts);
    if (*local_id >= 0) binding.slot = *local_id;
  }
  for (const char* variable : kSchedulerDeviceVariables) {
    const std::string value(absl::StripAsciiWhitespace(Get(env, variable)));
    if (value.empty()) continue;
    binding.placement.set_device_variable(variable);
    const std::vector<std::string> devices = absl::StrSplit(value, ',', absl::SkipWhitespace());
    if (devices.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(variable, "=", value, " lists no device"));
    }
    if (devices.size() > 1 && gpu_flag.has_value()) {
      if (*gpu_flag >= static_cast<int>(devices.size())) {
        return absl::InvalidArgumentError(
            absl::StrCat("--gpu ", *gpu_flag, " is beyond the ", devices.size(), " devices of ",
                         variable, "=", value, " (--gpu indexes into that list)"));
      }
      binding.visible_devices = std::string(absl::StripAsciiWhitespace(devices[*gpu_flag]));
    } else {
      binding.visible_devices = value;
      if (gpu_flag.has_value()) {
        binding.note = absl::StrCat("--gpu ", *gpu_flag, " ignored: the scheduler bound ", variable,
                                    "=", value);
      }
    }
    binding.probe_device = std::string(absl::StripAsciiWhitespace(
        std::vector<std::string>(absl::StrSplit(binding.visible_devices, ','))[0]));
    return binding;
  }
  binding.visible_devices = absl::StrCat(gpu_flag.value_or(0));
  binding.probe_device = binding.visible_devices;
  return binding;
}

absl::StatusOr<std::vector<std::string>> LocalSlotDevices(
    const std::map<std::string, std::string>& env, int workers) {
  for (const char* variable : kSchedulerDeviceVariables) {
    auto it = env.find(variable);
    if (it == env.end() || it->second.empty()) continue;
    std::vector<std::string> devices;
    for (absl::string_view device : absl::StrSplit(it->second, ',', absl::SkipWhitespace())) {
      devices.emplace_back(absl::StripAsciiWhitespace(device));
    }
    if (workers <= 0) return devices;
    if (workers > static_cast<int>(devices.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat(variable, "=", it->second, " binds ", Count(devices.size(), "device"),
                       " to this process and --workers asks for ", workers,
                       ": ask for at most that many, or for more GPUs from the scheduler"));
    }
    devices.resize(workers);
    return devices;
  }
  std::vector<std::string> devices;
  for (int i = 0; i < std::max(1, workers); ++i) devices.push_back(absl::StrCat(i));
  return devices;
}

std::string DefaultBoundWorkerName(const std::string& host, const DeviceBinding& binding) {
  const v1::SchedulerPlacement& p = binding.placement;
  if (p.scheduler() == "slurm") {
    return absl::StrCat(p.node().empty() ? host : p.node(), "/job", p.job_id(), "/slot",
                        binding.slot);
  }
  return absl::StrCat(host, "/slot", binding.slot);
}

std::map<std::string, std::string> EnvironmentMap() {
  std::map<std::string, std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string text(*entry);
    const size_t eq = text.find('=');
    if (eq == std::string::npos) continue;
    env.emplace(text.substr(0, eq), text.substr(eq + 1));
  }
  return env;
}

}  // namespace kbisect
