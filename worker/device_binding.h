// Copyright 2026 The kbisect Authors.
//
// Which device a `kbisect-worker` process is bound to, and where a batch scheduler placed it.
// Slurm (srun with --gpus-per-task) and container runtimes set CUDA_VISIBLE_DEVICES (or the ROCm
// variables) before the worker starts; that binding wins over --gpu, so a worker measures on the
// GPU the scheduler gave it and not on device 0 of the node. Pure over an environment map, so
// every case is a unit test.
//
//   absl::StatusOr<DeviceBinding> binding = ResolveDeviceBinding(EnvironmentMap(), gpu_flag);
#ifndef KBISECT_WORKER_DEVICE_BINDING_H_
#define KBISECT_WORKER_DEVICE_BINDING_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

struct DeviceBinding {
  // The slot number: the worker's checkouts (<cache>/worktrees/<repo>/slot-<slot>) and its
  // default name. SLURM_LOCALID under Slurm, else --gpu (default 0).
  int slot = 0;
  // What the slot's commands get in CUDA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES and
  // ROCR_VISIBLE_DEVICES: the scheduler's value as it was set, else the --gpu index.
  std::string visible_devices;
  // The first device of visible_devices: the one nvidia-smi/amd-smi are asked about ("-i").
  std::string probe_device;
  // Scheduler placement; placement.scheduler() is empty outside Slurm. device_variable names
  // the variable the binding came from (empty when --gpu was used).
  v1::SchedulerPlacement placement;
  // A note for the log when --gpu was given but the scheduler's binding won, else empty.
  std::string note;
};

// Resolves the binding from `env` (variable -> value) and the --gpu flag (nullopt when not given):
// - The first of CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES that is set and
//   not empty is the scheduler's binding. A one-device list is used as it is, and so is a longer
//   list without --gpu (the worker then owns all of its devices); with --gpu I, a longer list is
//   narrowed to its I-th entry (InvalidArgument when it has no such entry).
// - Without one, --gpu I (default 0) is the device, as before.
// - SLURM_JOB_ID marks a Slurm task: SLURMD_NODENAME, SLURM_STEP_ID, SLURM_LOCALID, SLURM_PROCID
//   and SLURM_RESTART_COUNT fill `placement`, and SLURM_LOCALID is the slot. A malformed numeric
//   variable is InvalidArgument naming it.
absl::StatusOr<DeviceBinding> ResolveDeviceBinding(const std::map<std::string, std::string>& env,
                                                   std::optional<int> gpu_flag);

// The variables a scheduler binds devices with, in the order they are read.
inline constexpr const char* kSchedulerDeviceVariables[] = {
    "CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"};

// The devices of the local slots of `kbisect run` (slot i gets entry i): with a scheduler's
// binding in `env` (the variables above; e.g. `kbisect run` inside a Slurm allocation), the
// entries of its list, one per slot, and InvalidArgument when `workers` asks for more than it
// binds; without one, "0" .. "<workers-1>". `workers` <= 0 means one per bound device (or 1).
absl::StatusOr<std::vector<std::string>> LocalSlotDevices(
    const std::map<std::string, std::string>& env, int workers);

// The default worker name: "<host>/slot<slot>", and under Slurm
// "<node>/job<job id>/slot<local id>", unique across allocations that share a node and stable
// across a requeue (the job keeps its id), so a requeued worker reconnects as itself.
std::string DefaultBoundWorkerName(const std::string& host, const DeviceBinding& binding);

// This process's environment as a map.
std::map<std::string, std::string> EnvironmentMap();

}  // namespace kbisect

#endif  // KBISECT_WORKER_DEVICE_BINDING_H_
