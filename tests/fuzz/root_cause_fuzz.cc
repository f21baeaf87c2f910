// Copyright 2026 The kbisect Authors.
//
// Fuzzes the unified-diff parser and the root-cause patterns over an arbitrary patch.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "coordinator/root_cause/root_cause.h"
#include "coordinator/root_cause/unified_diff.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view patch(reinterpret_cast<const char*>(data), size);
  (void)kbisect::ParseUnifiedDiff(patch);
  const std::vector<kbisect::v1::RootCauseHint> hints = kbisect::FindRootCauseHints(patch, 20);
  if (hints.size() > 20) std::abort();
  (void)kbisect::SummarizeHypothesis(hints);
  return 0;
}
