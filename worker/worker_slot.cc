// Copyright 2026 The kbisect Authors.
#include "worker/worker_slot.h"

#include <cstdlib>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/identity/identity.h"

namespace kbisect {

std::map<std::string, std::string> SlotEnvironment(int slot, const std::string& visible_devices) {
  const std::string index = absl::StrCat(slot);
  const std::string devices = visible_devices.empty() ? index : visible_devices;
  return {{"CUDA_VISIBLE_DEVICES", devices},
          {"HIP_VISIBLE_DEVICES", devices},
          {"ROCR_VISIBLE_DEVICES", devices},
          {"KBISECT_WORKER", index}};
}

v1::RunnerIdentity SlotIdentity(const v1::RunnerIdentity& host, int slot,
                                const std::vector<std::string>& class_keys,
                                const std::string& probe_device,
                                const std::string& visible_devices) {
  v1::RunnerIdentity identity = host;
  identity.set_slot(absl::StrCat(slot));
  identity.set_visible_devices(visible_devices.empty() ? absl::StrCat(slot) : visible_devices);
  int position = -1;
  if (probe_device.empty()) {
    position = slot;
  } else {
    int index = -1;
    const bool numeric = absl::SimpleAtoi(probe_device, &index);
    for (int i = 0; i < identity.gpus_size(); ++i) {
      const v1::GpuInfo& gpu = identity.gpus(i);
      if ((numeric && gpu.index() == index) || (!numeric && gpu.uuid() == probe_device)) {
        position = i;
        break;
      }
    }
  }
  if (position >= 0 && identity.gpus_size() > position) {
    v1::GpuInfo gpu = identity.gpus(position);
    identity.clear_gpus();
    *identity.add_gpus() = std::move(gpu);
    identity.set_gpu_count(1);
  }
  AssignHardwareClass(&identity, class_keys.empty() ? DefaultHardwareClassKeys() : class_keys);
  return identity;
}

std::string DefaultWorkerName(const std::string& host, int slot) {
  return absl::StrCat(host, "/slot", slot);
}

std::string DefaultCacheDir() {
  if (const char* dir = std::getenv("KBISECT_CACHE_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return absl::StrCat(xdg, "/kbisect");
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return absl::StrCat(home, "/.cache/kbisect");
  }
  return "/tmp/kbisect-cache";
}

WorkerSlot::WorkerSlot(const WorkerSlotOptions& options, CommandRunner* runner,
                       const v1::RunnerIdentity& host_identity,
                       std::shared_ptr<grpc::Channel> channel)
    : name_(options.name.empty() ? DefaultWorkerName(host_identity.host(), options.slot)
                                 : options.name),
      identity_(SlotIdentity(host_identity, options.slot, options.hardware_class_keys,
                             options.probe_device, options.visible_devices)) {
  if (options.placement.ByteSizeLong() > 0) *identity_.mutable_placement() = options.placement;
  workspace_ = std::make_unique<GitWorkspace>(options.cache_dir, options.slot);
  builder_ = std::make_unique<SlotBuilder>(runner, workspace_.get());
  if (options.build_cache_size > 0) {
    BuildCacheOptions cache_options;
    cache_options.max_entries = options.build_cache_size;
    cache_options.compiler_cache = options.compiler_cache;
    cache_options.compiler_cache_remote = options.compiler_cache_remote;
    cache_options.build_store = options.build_store;
    cache_options.hardware_class = identity_.hardware_class();
    build_cache_ = std::make_unique<BuildCache>(options.cache_dir, cache_options, runner);
    builder_->set_build_cache(build_cache_.get());
  }
  task_runner_ = std::make_unique<TaskRunner>(
      runner, builder_.get(), SlotEnvironment(options.slot, options.visible_devices));
  const std::string device = options.ProbedDevice();
  if (identity_.gpu_vendor() == v1::GPU_VENDOR_NVIDIA ||
      identity_.gpu_vendor() == v1::GPU_VENDOR_AMD) {
    // Temperature, clock and throttle reasons after each benchmark run.
    task_runner_->set_gpu_state_probe([runner, device] { return ProbeGpuState(runner, device); });
    // And during each run, where NVML, nvidia-smi or amd-smi reads the GPU (worker/gpu_watch.h).
    GpuWatchOptions watch;
    watch.device = device;
    watch.runner = runner;
    if (identity_.gpu_vendor() == v1::GPU_VENDOR_AMD) watch.nvml_library = "";
    GpuWatcher watcher = GpuWatcher::Detect(watch);
    if (watcher.available()) task_runner_->set_gpu_watcher(std::move(watcher));
  }
  if (identity_.gpu_vendor() == v1::GPU_VENDOR_NVIDIA) {
    // Other compute processes on the GPU before and after each task's runs.
    task_runner_->set_compute_apps_probe(
        [runner, device] { return ProbeComputeApps(runner, device); },
        options.foreign_process_wait);
  }
  if (channel == nullptr) return;
  WorkerAgentOptions agent_options;
  agent_options.name = name_;
  agent_options.identity = identity_;
  agent_options.idle_poll = options.idle_poll;
  // Builds ahead land in the build cache: without one a probe could not use them.
  if (build_cache_ != nullptr) agent_options.build_ahead = options.build_ahead;
  agent_ = std::make_unique<WorkerAgent>(std::move(agent_options), std::move(channel),
                                         task_runner_.get());
}

}  // namespace kbisect
