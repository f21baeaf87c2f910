// Copyright 2026 The kbisect Authors.
//
// One worker slot (one GPU) assembled from its parts: the device-pinning environment its
// commands run with, its runner identity and stable name, its private workspace under the cache
// directory, its view of the host's build cache (shared with the other slots through the cache
// directory), its build path over both (task_builder.h), its task runner and the agent that talks
// to the coordinator. `kbisect run` builds
// one slot per local GPU (cli/local_cluster.h); the `kbisect-worker` daemon builds one.
//
//   v1::RunnerIdentity host = ProbeRunnerIdentity(runner.get(), "");
//   WorkerSlotOptions options{.cache_dir = dir, .slot = 2};
//   WorkerSlot slot(options, runner.get(), host, channel);
//   slot.agent()->Run();  // Until Stop() or Drain().
#ifndef KBISECT_WORKER_WORKER_SLOT_H_
#define KBISECT_WORKER_WORKER_SLOT_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/exec/exec.h"
#include "grpcpp/channel.h"
#include "kbisect/v1/kbisect.pb.h"
#include "worker/build_ahead.h"
#include "worker/build_cache.h"
#include "worker/task_builder.h"
#include "worker/task_runner.h"
#include "worker/worker_agent.h"
#include "worker/workspace.h"

namespace kbisect {

// The environment every command of slot `slot` runs with, so that it sees only its own device:
// CUDA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES and ROCR_VISIBLE_DEVICES set to `visible_devices`
// (empty = the slot number; a scheduler's binding, worker/device_binding.h, otherwise), and
// KBISECT_WORKER set to the slot number.
std::map<std::string, std::string> SlotEnvironment(int slot,
                                                   const std::string& visible_devices = "");

// The identity of slot `slot` derived from the identity of its whole host: `slot` and
// visible_devices are recorded and, when the host has the slot's GPU, only that GPU is listed
// (gpu_count 1) and the hardware class is recomputed for it. The slot's GPU is the one whose
// UUID or vendor index is `probe_device` when that is set, else the slot-th GPU.
v1::RunnerIdentity SlotIdentity(const v1::RunnerIdentity& host, int slot,
                                const std::vector<std::string>& class_keys = {},
                                const std::string& probe_device = "",
                                const std::string& visible_devices = "");

// The default stable worker name of a slot: "<host>/slot<slot>".
std::string DefaultWorkerName(const std::string& host, int slot);

// The default cache directory: $KBISECT_CACHE_DIR, else $XDG_CACHE_HOME/kbisect, else
// $HOME/.cache/kbisect, else /tmp/kbisect-cache.
std::string DefaultCacheDir();

struct WorkerSlotOptions {
  // Mirrors, this slot's checkouts and the host's build cache live here.
  std::string cache_dir;
  // How many built checkouts the host's build cache keeps (<cache_dir>/builds/); 0 disables it
  // (builds run in the slot's checkouts, as without a build command).
  int build_cache_size = kDefaultBuildCacheSize;
  // Whether the build cache's builds compile through the host's ccache (compiler_cache.h), and
  // the remote storage it shares with other hosts (`--compiler-cache-remote`).
  bool compiler_cache = true;
  CompilerCacheRemote compiler_cache_remote;
  // The build store the build cache shares builds through with other hosts of the slot's
  // hardware class (`--build-store`, build_store.h); empty: none.
  std::string build_store;
  // The slot number (checkout directories, default name, KBISECT_WORKER).
  int slot = 0;
  // The device list the slot's commands see (empty = the slot number) and the device the vendor
  // tools are asked about (empty = the slot number); worker/device_binding.h resolves both.
  std::string visible_devices;
  std::string probe_device;
  // The device the vendor tools are asked about: `probe_device`, else the slot number.
  std::string ProbedDevice() const {
    return probe_device.empty() ? std::to_string(slot) : probe_device;
  }
  // Where a batch scheduler placed the worker (recorded in the identity); empty outside one.
  v1::SchedulerPlacement placement;
  // Stable worker name; empty means DefaultWorkerName(host, slot).
  std::string name;
  // How long an idle worker's Synchronize long poll lasts.
  absl::Duration idle_poll = absl::Seconds(5);
  // How long a task waits for another compute process to leave the slot's GPU before its
  // benchmark runs anyway (and every run names the process: worker/task_runner.h).
  absl::Duration foreign_process_wait = absl::Seconds(30);
  // Hardware-class keys (common/identity ParseHardwareClassKeys); empty = the defaults.
  std::vector<std::string> hardware_class_keys;
  // The host's builds ahead (worker/build_ahead.h), shared by its slots; null for none. Must
  // outlive the slot.
  BuildAhead* build_ahead = nullptr;
};

// Owns a slot's workspace, build path, task runner and agent. Not copyable or movable (the agent
// points at the task runner, which points at the build path, which points at the workspace).
class WorkerSlot {
 public:
  // `runner` must outlive the slot. `host_identity` is the identity of the whole host (see
  // SlotIdentity); `channel` connects to the coordinator. A null `channel` makes no agent: the
  // slot then only runs tasks it is handed through task_runner() (a probe job's one task,
  // worker/probe_job.h).
  WorkerSlot(const WorkerSlotOptions& options, CommandRunner* runner,
             const v1::RunnerIdentity& host_identity, std::shared_ptr<grpc::Channel> channel);

  WorkerSlot(const WorkerSlot&) = delete;
  WorkerSlot& operator=(const WorkerSlot&) = delete;

  // The agent: call Run() on a thread of your own, Stop() or Drain() from any thread. Null when
  // the slot was made without a channel.
  WorkerAgent* agent() { return agent_.get(); }

  // The slot's task runner (its workspace, build path and GPU probes).
  TaskRunner* task_runner() { return task_runner_.get(); }

  // The name the worker registers with.
  const std::string& name() const { return name_; }

  // The slot's runner identity as sent to the coordinator.
  const v1::RunnerIdentity& identity() const { return identity_; }

 private:
  std::string name_;
  v1::RunnerIdentity identity_;
  std::unique_ptr<GitWorkspace> workspace_;
  std::unique_ptr<BuildCache> build_cache_;  // Null when disabled.
  std::unique_ptr<SlotBuilder> builder_;     // Its commits' one build path.
  std::unique_ptr<TaskRunner> task_runner_;
  std::unique_ptr<WorkerAgent> agent_;
};

}  // namespace kbisect

#endif  // KBISECT_WORKER_WORKER_SLOT_H_
