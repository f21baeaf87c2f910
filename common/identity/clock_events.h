// Copyright 2026 The kbisect Authors.
//
// NVML's clock-event reasons (nvmlClocksEventReason*, formerly nvmlClocksThrottleReason*): why a
// GPU's clocks are below their maximum, as the bits of the mask that
// nvmlDeviceGetCurrentClocksEventReasons returns and nvidia-smi prints as
// clocks_event_reasons.active ("0x0000000000000008"). Shared by the identity's one-off reading
// and the watch during a run (worker/gpu_watch.h).
#ifndef KBISECT_COMMON_IDENTITY_CLOCK_EVENTS_H_
#define KBISECT_COMMON_IDENTITY_CLOCK_EVENTS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kbisect {

// What a reason means for a measurement taken under it.
enum class ClockEventSeverity {
  // Idle, application clocks, sync boost, display clocks: not a slowdown of the benchmark.
  kBenign,
  // The driver capped the clocks (sw_power_cap, sw_thermal_slowdown): the run is flagged.
  kSoftware,
  // The hardware slowed down (hw_slowdown, hw_thermal_slowdown, hw_power_brake_slowdown): the
  // run is not trusted.
  kHardware,
};

struct ClockEventReason {
  uint64_t bit;
  const char* name;  // "hw_slowdown": NVML's name in snake case, as nvidia-smi's -q shows it.
  ClockEventSeverity severity;
};

// Every reason, in bit order: NVML's gpu_idle 0x1, applications_clocks_setting 0x2,
// sw_power_cap 0x4, hw_slowdown 0x8, sync_boost 0x10, sw_thermal_slowdown 0x20,
// hw_thermal_slowdown 0x40, hw_power_brake_slowdown 0x80, display_clock_setting 0x100; then
// AMD's violation statuses on bits 32 and up (kbisect's own): prochot (the hardware's PROCHOT
// signal: a hardware slowdown), ppt (the package power limit), socket_thermal, vr_thermal,
// hbm_thermal (the firmware holding a temperature limit) and throttle_status (power.throttle_status
// THROTTLED, reason unnamed), which cap the clocks the way NVIDIA's software reasons do.
const std::vector<ClockEventReason>& ClockEventReasons();

// The names of the reasons set in `mask`, in bit order (unknown bits are left out).
std::vector<std::string> ClockEventReasonNames(uint64_t mask);

// The most severe reason in `mask`.
ClockEventSeverity WorstClockEvent(uint64_t mask);

// The bit of the reason named `name`; 0 for a name it does not know.
uint64_t ClockEventBit(std::string_view name);

// The name amd-smi 6.x gives a violation ("ppt") for the one later releases give
// ("ppt_pwr", "socket_thrm", "vr_thrm", "hbm_thrm", "prochot_thrm"); other names as they are.
std::string_view CanonicalAmdViolation(std::string_view name);

// The severity of the reason named `name` ("sw_power_cap"); kBenign for a name it does not know.
ClockEventSeverity SeverityOfReason(std::string_view name);

}  // namespace kbisect

#endif  // KBISECT_COMMON_IDENTITY_CLOCK_EVENTS_H_
