// Copyright 2026 The kbisect Authors.
//
// A stub of libnvidia-ml.so.1 with NVML's C ABI for the functions kbisect's GPU watch uses
// (worker/gpu_watch.cc), for tests on machines without a GPU. One device, index 0, UUID
// "GPU-fake-0". Its clock-event masks come from $FAKE_NVML_DIR/masks, one a line, each call of
// nvmlDeviceGetCurrentClocksEventReasons taking the next (the last repeats) and appending a line
// to $FAKE_NVML_DIR/readings; $FAKE_NVML_DIR/no-gpu makes nvmlInit_v2 fail as without a driver
// (NVML_ERROR_DRIVER_NOT_LOADED, 9).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct FakeDevice {
  int index = 0;
};
FakeDevice device;
std::mutex mu;
int calls = 0;

std::string Dir() {
  const char* dir = std::getenv("FAKE_NVML_DIR");
  return dir == nullptr ? "" : dir;
}

unsigned long long NextMask() {  // NOLINT(runtime/int): NVML's type.
  std::lock_guard<std::mutex> lock(mu);
  std::vector<unsigned long long> masks;  // NOLINT(runtime/int)
  std::ifstream in(Dir() + "/masks");
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) masks.push_back(std::stoull(line, nullptr, 16));
  }
  ++calls;
  std::ofstream(Dir() + "/readings", std::ios::app) << calls << "\n";
  if (masks.empty()) return 0;
  return masks[std::min<size_t>(calls, masks.size()) - 1];
}

}  // namespace

extern "C" {

int nvmlInit_v2() {
  std::ifstream no_gpu(Dir() + "/no-gpu");
  return no_gpu.good() ? 9 : 0;
}
int nvmlShutdown() { return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** handle) {
  if (index != 0) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *handle = &device;
  return 0;
}
int nvmlDeviceGetHandleByUUID(const char* uuid, void** handle) {
  if (std::string(uuid) != "GPU-fake-0") return 6;  // NVML_ERROR_NOT_FOUND
  *handle = &device;
  return 0;
}
int nvmlDeviceGetCurrentClocksEventReasons(void* handle, unsigned long long* reasons) {  // NOLINT
  if (handle != &device) return 2;
  *reasons = NextMask();
  return 0;
}
int nvmlDeviceGetClockInfo(void* handle, int type, unsigned* clock) {
  if (handle != &device) return 2;
  *clock = type == 1 ? 1980 : 2619;  // NVML_CLOCK_SM, else NVML_CLOCK_MEM.
  return 0;
}
int nvmlDeviceGetPowerUsage(void* handle, unsigned* milliwatts) {
  if (handle != &device) return 2;
  *milliwatts = 312450;
  return 0;
}
int nvmlDeviceGetTemperature(void* handle, int sensor, unsigned* temperature) {
  if (handle != &device || sensor != 0) return 2;
  *temperature = 71;
  return 0;
}

}  // extern "C"
