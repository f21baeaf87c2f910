// Copyright 2026 The kbisect Authors.
//
// Fuzzes the dashboard parsers: the first byte picks the format (auto-detected, Helion
// dashboard, pretuned, CSV or JSON lines), the rest is the file. Each parser must refuse bad
// input with a status (parse.h: "never crashes or throws").

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "triage/parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static constexpr kbisect::triage::InputFormat kFormats[] = {
      kbisect::triage::InputFormat::kAuto,           kbisect::triage::InputFormat::kHelionDashboard,
      kbisect::triage::InputFormat::kHelionPretuned, kbisect::triage::InputFormat::kCsv,
      kbisect::triage::InputFormat::kJsonLines,
  };
  const kbisect::triage::InputFormat format = kFormats[data[0] % 5];
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  (void)kbisect::triage::DetectFormat(text, "fuzz.json");
  (void)kbisect::triage::ParseDataset(text, format, "fuzz");
  return 0;
}
