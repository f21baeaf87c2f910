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

#include "absl/status/statusor.h"
#include "common/exec/exec.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// The version string every worker reports.
inline constexpr char kWorkerVersion[] = "kbisect-worker 0.1.0";

// Probes the identity of a worker pinned to device slot `slot` ("0", "1", ...; empty = all
// devices): host, kernel, OS, CPU model/cores/governor from /proc and uname; the GPUs, tried in
// this order: NVIDIA via `nvidia-smi --query-gpu` (and the CUDA version from `nvidia-smi`'s
// banner), AMD via `amd-smi static --json`, AMD via `rocm-smi --showproductname --showserial
// --showbus --showvbios --showdriverversion --json` (for AMD, the ROCm version comes from
// $ROCM_PATH/.info/version, default /opt/rocm); the container image from
// KBISECT_CONTAINER_IMAGE. A missing or failing vendor tool means the next one is tried and, when
// none answers, a CPU-only identity, never an error. Fills hardware_class and
// hardware_class_label with the default class keys.
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

// The fields of the GPU settings query (issue 49), in order: index, ecc.mode.current,
// ecc.mode.pending, mig.mode.current, persistence_mode, power.limit, power.default_limit,
// clocks.applications.graphics, clocks.default_applications.graphics.
inline constexpr char kNvidiaSettingsFields[] =
    "index,ecc.mode.current,ecc.mode.pending,mig.mode.current,persistence_mode,power.limit,"
    "power.default_limit,clocks.applications.graphics,clocks.default_applications.graphics";

// Sets the settings of `gpus` (matched by index) from `nvidia-smi
// --query-gpu=<kNvidiaSettingsFields> --format=csv,noheader,nounits` output; "[N/A]" and "[Not
// Supported]" leave a setting unset. Lines of GPUs not in `gpus` are ignored.
void ParseNvidiaGpuSettings(std::string_view csv, std::vector<v1::GpuInfo>* gpus);

// The settings of `gpu` that change a measurement, for the hardware class: "ecc=Enabled;mig=
// Disabled;power=700;appclock=1980" with what is known (empty when nothing is). The power limit
// and the application clock are named only where they differ from their defaults.
std::string GpuSettingsKey(const v1::GpuInfo& gpu);

// The compute processes `nvidia-smi --query-compute-apps=pid,process_name,used_memory
// --format=csv,noheader,nounits` printed, one a line: "pid 4242 python3 (12034 MiB)".
std::vector<std::string> ParseNvidiaComputeApps(std::string_view csv);

// The compute processes on GPU `device` (an index or UUID), as ParseNvidiaComputeApps names
// them; none when nvidia-smi does not answer.
std::vector<std::string> ProbeComputeApps(CommandRunner* runner, const std::string& device);

// Parses `amd-smi static --json` output: a JSON array with one object per GPU (newer amd-smi
// releases wrap it as {"gpu_data": [...]}). Reads "gpu" (index), asic.market_name (falling back
// to board.product_name, then "AMD GPU <asic.device_id>"), board.product_serial (else
// asic.asic_serial), bus.bdf, vbios.version, vram.size (MB, as {"value", "unit"} or "N MB") and
// limit.max_power, and the settings that change a measurement: the power cap
// (limit.socket_power) against its maximum (limit.max_power, as the default) and, only where
// they depart from the defaults, memory ECC off (ras.ecc_block_state.UMC "DISABLED": ecc_mode
// "Disabled") and a partition ("CPX/NPS4" in mig_mode; the whole GPU, SPX/NPS1, is not
// recorded, so a host read through rocm-smi keeps its class). The driver version (driver.version) of the first GPU that reports one goes
// to `*driver_version` when it is not null. Values reported as "N/A" are left empty/zero; text
// before the JSON (warnings) is skipped. Returns no GPUs for output it cannot read.
std::vector<v1::GpuInfo> ParseAmdSmiStatic(std::string_view json, std::string* driver_version);

// Parses `amd-smi metric --json` output (same array/{"gpu_data"} shapes as above) and returns
// the state of the GPU whose "gpu" index is `gpu`, or of the first GPU when `gpu` is negative.
// temperature_c is the hotspot (junction) temperature, else the edge temperature; sm_clock_mhz
// is the current gfx clock (clock.gfx_0.clk, else clock.gfx.clk). Throttle reasons are the
// active violation statuses (throttle.<name>_violation_status or violation.active_<name> equal
// to "ACTIVE"), named <name>, plus "throttle_status" when power.throttle_status is "THROTTLED";
// every one of them is a thermal or power limit, so any sets `throttled`. Returns nullopt for
// output it cannot read or without such a GPU.
std::optional<v1::GpuState> ParseAmdSmiMetric(std::string_view json, int gpu = -1);

// Parses `rocm-smi --showtemp --showclocks --showpower --json` output ({"card0": {...}, ...})
// and returns the state of the first card: the junction temperature (else edge), the current
// sclk ("(1420Mhz)"), and, where the output has a throttle status field (e.g. with
// --showmetrics), "throttle_status" as a reason when it is non-zero or "THROTTLED", which sets
// `throttled`. Returns nullopt for output it cannot read or without a card.
std::optional<v1::GpuState> ParseRocmSmiState(std::string_view json);

// Parses `rocm-smi --showproductname --showserial --showbus --showvbios --showdriverversion
// --json` output, the static-identity fallback when amd-smi is missing: one GPU per "cardN"
// object (index N; model from "Card Series", else "Card Model"; "Serial Number"; "PCI Bus";
// "VBIOS version"), with keys matched case-insensitively. The driver version ("Driver version",
// in "system" or a card) goes to `*driver_version` when it is not null.
std::vector<v1::GpuInfo> ParseRocmSmiIdentity(std::string_view json, std::string* driver_version);

// Returns the ROCm version in the content of /opt/rocm/.info/version ("6.2.0-66" -> "6.2.0":
// the first line without its build suffix). Empty if the content is not a version.
std::string ParseRocmVersion(std::string_view version_file_content);

// Reads the dynamic state of GPU `slot` ("" = the first GPU): with nvidia-smi, and where no
// NVIDIA tool answers, with `amd-smi metric --json`, then `rocm-smi --showtemp --showclocks
// --showpower --json`. Returns nullopt when no tool gives a readable state.
std::optional<v1::GpuState> ProbeGpuState(CommandRunner* runner, const std::string& slot);

// Number of GPUs on this host: `nvidia-smi -L` lines, else the GPUs in `amd-smi list --json`,
// else `rocm-smi --showid` GPU lines, else 0.
int CountLocalGpus(CommandRunner* runner);

// The names a hardware class can be keyed on, in the canonical order fingerprints use:
// gpu_model, gpu_count, driver, toolkit (CUDA or ROCm version), gpu_settings (ECC and MIG
// modes, a power limit or application clocks other than the defaults: GpuSettingsKey), vbios
// (the distinct VBIOS versions of the visible GPUs), cpu_model (CPU model and core count),
// kernel, host.
const std::vector<std::string>& AllHardwareClassKeys();

// The default class keys: gpu_model, gpu_count, driver, toolkit, gpu_settings. (gpu_settings adds
// nothing where the vendor tool tells no setting, so such a host keeps its earlier class.)
const std::vector<std::string>& DefaultHardwareClassKeys();

// Parses a comma-separated key list such as "gpu_model, driver,vbios" (whitespace around names
// is ignored, a repeated name counts once). An empty or all-blank spec means the default keys.
// Returns InvalidArgument naming the unknown key and the known ones for any other name.
absl::StatusOr<std::vector<std::string>> ParseHardwareClassKeys(std::string_view spec);

// Sets identity->hardware_class to a stable fingerprint of the default class keys (GPU model,
// visible GPU count, driver version, CUDA/ROCm version; for CPU-only hosts the CPU model and
// core count) and hardware_class_label to a readable summary of the same keys.
void AssignHardwareClass(v1::RunnerIdentity* identity);

// Like above, over `keys` (names from AllHardwareClassKeys(); unknown names are ignored, an
// empty list means the defaults). The order of `keys` does not matter. On a host without GPUs
// the GPU keys (gpu_model, gpu_count, driver, toolkit, vbios) are dropped and cpu_model is
// always used, so CPU-only hosts are classed by their CPU. The default keys give the same
// fingerprint and label as the overload above.
void AssignHardwareClass(v1::RunnerIdentity* identity, const std::vector<std::string>& keys);

}  // namespace kbisect

#endif  // KBISECT_COMMON_IDENTITY_IDENTITY_H_
