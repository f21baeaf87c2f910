// Copyright 2026 The kbisect Authors.
//
// Fuzzes the vendor tools' parsers (nvidia-smi CSV and banner, amd-smi and rocm-smi JSON, the
// ROCm version file): a GPU's tool may print anything, and a worker must not crash on it.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/identity/identity.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string driver;
  (void)kbisect::ParseNvidiaSmiQuery(text, &driver);
  (void)kbisect::ParseCudaVersion(text);
  (void)kbisect::ParseNvidiaGpuState(text);
  (void)kbisect::ParseAmdSmiStatic(text, &driver);
  (void)kbisect::ParseAmdSmiMetric(text);
  (void)kbisect::ParseAmdSmiMetric(text, size % 4);
  (void)kbisect::ParseRocmSmiState(text);
  (void)kbisect::ParseRocmSmiIdentity(text, &driver);
  (void)kbisect::ParseRocmVersion(text);
  (void)kbisect::ParseHardwareClassKeys(text);
  return 0;
}
