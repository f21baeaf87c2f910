// Copyright 2026 The kbisect Authors.
//
// Runner identity: what machine, GPU, driver and toolkit a worker measures on. The coordinator
// only compares samples from workers of one hardware class (a fingerprint over the identity's
// class keys), so a different GPU or driver cannot fake a regression.
#ifndef KBISECT_COMMON_IDENTITY_IDENTITY_H_
#define KBISECT_COMMON_IDENTITY_IDENTITY_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/exec/exec.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// The version string every worker reports.
inline constexpr char kWorkerVersion[] = "kbisect-worker 0.1.0";

// Probes the identity of a worker pinned to device slot `slot` ("0", "1", ...; empty = all
// devices): host, kernel, OS, CPU model/cores/governor from /proc and uname; NVIDIA GPUs via
// `nvidia-smi --query-gpu` (and the CUDA version from `nvidia-smi`'s banner); the container
// image from KBISECT_CONTAINER_IMAGE. A missing vendor tool means a CPU-only identity, never an
// error. Fills hardware_class and hardware_class_label.
v1::RunnerIdentity ProbeRunnerIdentity(CommandRunner* runner, const std::string& slot);

// Parses `nvidia-smi --query-gpu=index,name,uuid,serial,pci.bus_id,driver_version,vbios_version,
// memory.total,power.limit,clocks.max.sm,clocks.max.mem --format=csv,noheader,nounits` output.
// Fields reported as "[N/A]" or "[Not Supported]" are left empty/zero.
std::vector<v1::GpuInfo> ParseNvidiaSmiQuery(std::string_view csv, std::string* driver_version);

// Extracts "12.8" from nvidia-smi's banner line "... CUDA Version: 12.8 ...". Empty if absent.
std::string ParseCudaVersion(std::string_view nvidia_smi_output);

// Parses one line of `nvidia-smi --query-gpu=temperature.gpu,clocks.sm,clocks_event_reasons.active
// --format=csv,noheader,nounits` (older drivers: clocks_throttle_reasons.active). The reasons
// bitmask is decoded into NVML's names (sw_power_cap, hw_slowdown, sw_thermal_slowdown,
// hw_thermal_slowdown, hw_power_brake_slowdown, ...); `throttled` is set when a thermal or power
// reason is active. Returns nullopt for output it cannot read.
std::optional<v1::GpuState> ParseNvidiaGpuState(std::string_view csv_line);

// Reads the dynamic state of GPU `slot` with nvidia-smi (nullopt without NVIDIA tools).
std::optional<v1::GpuState> ProbeGpuState(CommandRunner* runner, const std::string& slot);

// Number of GPUs on this host: `nvidia-smi -L` lines, else `rocm-smi --showid` GPU lines, else 0.
int CountLocalGpus(CommandRunner* runner);

// Sets identity->hardware_class to a stable fingerprint of the class keys (GPU model, visible GPU
// count, driver version, CUDA/ROCm version; for CPU-only hosts the CPU model and core count)
// and hardware_class_label to a readable summary of the same keys.
void AssignHardwareClass(v1::RunnerIdentity* identity);

}  // namespace kbisect

#endif  // KBISECT_COMMON_IDENTITY_IDENTITY_H_
