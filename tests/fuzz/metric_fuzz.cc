// Copyright 2026 The kbisect Authors.
//
// Fuzzes metric extraction over arbitrary benchmark output. The first byte picks the mode (auto,
// regex or JSON path); for regex and JSON path the first line is the pattern or path and the
// rest the output. Invalid specs must be refused with a status, never a crash; whatever is
// extracted must be a finite number with a name.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/metric/metric.h"
#include "tests/fuzz/spec_input.h"

namespace {

void Check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto [spec_text, output] = kbisect_fuzz::SplitSpecInput(data, size);
  absl::StatusOr<kbisect::MetricSpec> spec = kbisect::ParseMetricSpec(spec_text);
  if (!spec.ok()) return 0;
  // The textual form round-trips, since it is part of a probe's cache key.
  absl::StatusOr<kbisect::MetricSpec> again =
      kbisect::ParseMetricSpec(kbisect::MetricSpecToString(*spec));
  Check(again.ok() && again->kind == spec->kind && again->pattern == spec->pattern);
  absl::StatusOr<kbisect::Metric> metric = kbisect::ExtractMetric(*spec, output);
  if (!metric.ok()) return 0;
  Check(std::isfinite(metric->value));
  Check(!metric->name.empty());
  (void)kbisect::FormatMetric(*metric);
  (void)kbisect::InferDirection(metric->name, metric->unit);
  return 0;
}
