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

namespace {

void Check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string spec_text = "auto";
  std::string_view output = input;
  if (data[0] % 3 != 0) {
    const size_t newline = input.find('\n');
    const std::string_view pattern = input.substr(0, newline);
    output = newline == std::string_view::npos ? std::string_view() : input.substr(newline + 1);
    spec_text = (data[0] % 3 == 1 ? "regex:" : "json:") + std::string(pattern);
  }
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
