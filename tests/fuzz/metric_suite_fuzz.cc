// Copyright 2026 The kbisect Authors.
//
// Fuzzes the extraction of a suite's metrics over arbitrary benchmark output. The first byte
// picks the mode (auto, regex or JSON path); for regex and JSON path the first line is the
// pattern or path and the rest the output. Invalid specs must be refused with a status, never a
// crash; the spec's text form round-trips; whatever is extracted is a list of finite numbers
// with unique, non-empty names, each the name of its metric.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/metric/metric_suite.h"
#include "tests/fuzz/spec_input.h"

namespace {

void Check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto [spec_text, output] = kbisect_fuzz::SplitSpecInput(data, size);
  absl::StatusOr<kbisect::MetricSuiteSpec> spec = kbisect::ParseMetricSuiteSpec(spec_text);
  if (!spec.ok()) return 0;
  absl::StatusOr<kbisect::MetricSuiteSpec> again =
      kbisect::ParseMetricSuiteSpec(kbisect::MetricSuiteSpecToString(*spec));
  Check(again.ok() && again->kind == spec->kind && again->pattern == spec->pattern);
  absl::StatusOr<std::vector<kbisect::NamedMetric>> metrics =
      kbisect::ExtractMetricSuite(*spec, output);
  if (!metrics.ok()) return 0;
  Check(!metrics->empty());
  std::set<std::string> names;
  for (const kbisect::NamedMetric& metric : *metrics) {
    Check(std::isfinite(metric.metric.value));
    Check(!metric.name.empty());
    Check(metric.metric.name == metric.name);
    Check(names.insert(metric.name).second);
    (void)kbisect::FormatMetric(metric.metric);
  }
  return 0;
}
