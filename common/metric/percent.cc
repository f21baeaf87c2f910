// Copyright 2026 The kbisect Authors.
#include "common/metric/percent.h"

#include "absl/strings/str_format.h"

namespace kbisect {

std::string FormatPercent(double pct) { return absl::StrFormat("%.1f%%", pct); }

std::string FormatSignedPercent(double pct) { return absl::StrFormat("%+.1f%%", pct); }

}  // namespace kbisect
