// Copyright 2026 The kbisect Authors.
#include "common/identity/clock_events.h"

#include <utility>

namespace kbisect {

const std::vector<ClockEventReason>& ClockEventReasons() {
  static const std::vector<ClockEventReason> kReasons = {
      {0x1, "gpu_idle", ClockEventSeverity::kBenign},
      {0x2, "applications_clocks_setting", ClockEventSeverity::kBenign},
      {0x4, "sw_power_cap", ClockEventSeverity::kSoftware},
      {0x8, "hw_slowdown", ClockEventSeverity::kHardware},
      {0x10, "sync_boost", ClockEventSeverity::kBenign},
      {0x20, "sw_thermal_slowdown", ClockEventSeverity::kSoftware},
      {0x40, "hw_thermal_slowdown", ClockEventSeverity::kHardware},
      {0x80, "hw_power_brake_slowdown", ClockEventSeverity::kHardware},
      {0x100, "display_clock_setting", ClockEventSeverity::kBenign},
      // AMD's violation statuses (amd-smi metric), on bits of kbisect's own above NVML's.
      {uint64_t{1} << 32, "prochot", ClockEventSeverity::kHardware},
      {uint64_t{1} << 33, "ppt", ClockEventSeverity::kSoftware},
      {uint64_t{1} << 34, "socket_thermal", ClockEventSeverity::kSoftware},
      {uint64_t{1} << 35, "vr_thermal", ClockEventSeverity::kSoftware},
      {uint64_t{1} << 36, "hbm_thermal", ClockEventSeverity::kSoftware},
      {uint64_t{1} << 37, "throttle_status", ClockEventSeverity::kSoftware},
  };
  return kReasons;
}

std::vector<std::string> ClockEventReasonNames(uint64_t mask) {
  std::vector<std::string> names;
  for (const ClockEventReason& reason : ClockEventReasons()) {
    if ((mask & reason.bit) != 0) names.push_back(reason.name);
  }
  return names;
}

ClockEventSeverity WorstClockEvent(uint64_t mask) {
  ClockEventSeverity worst = ClockEventSeverity::kBenign;
  for (const ClockEventReason& reason : ClockEventReasons()) {
    if ((mask & reason.bit) != 0 && reason.severity > worst) worst = reason.severity;
  }
  return worst;
}

uint64_t ClockEventBit(std::string_view name) {
  for (const ClockEventReason& reason : ClockEventReasons()) {
    if (name == reason.name) return reason.bit;
  }
  return 0;
}

std::string_view CanonicalAmdViolation(std::string_view name) {
  static const std::pair<std::string_view, std::string_view> kNewer[] = {
      {"prochot_thrm", "prochot"},       {"ppt_pwr", "ppt"},       {"socket_thrm", "socket_thermal"},
      {"vr_thrm", "vr_thermal"},         {"hbm_thrm", "hbm_thermal"}};
  for (const auto& [newer, older] : kNewer) {
    if (name == newer) return older;
  }
  return name;
}

ClockEventSeverity SeverityOfReason(std::string_view name) {
  for (const ClockEventReason& reason : ClockEventReasons()) {
    if (name == reason.name) return reason.severity;
  }
  return ClockEventSeverity::kBenign;
}

}  // namespace kbisect
