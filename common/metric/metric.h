// Copyright 2026 The kbisect Authors.
//
// Extraction of one benchmark metric (a latency, a throughput, ...) from a benchmark's output.
//
// A MetricSpec says how to find the number:
//   - kRegex: an RE2 pattern with exactly one capturing group, which must capture a finite number.
//     The pattern runs in multi-line mode (^ and $ match at line boundaries, as grep does) and the
//     LAST match in the output wins, because benchmarks print warm-up iterations first.
//   - kJsonPath: a dotted path ("results.0.latency_ms", array indices allowed, an optional leading
//     "$.") into the LAST complete top-level JSON object in the output; log lines before or after
//     it are ignored. The value must be a finite number or a string holding one.
//   - kAuto: recognises the common forms of the bisect-perf-regression procedure (seed 000):
//       "Latency: 1.23 ms", "Throughput: 456 GB/s", "kernel_time_us: 789", "time=1.2ms",
//       "Bandwidth (GB/s): 456", a JSON object {"time": 1.23} or {"latency_ms": 1.2},
//       pytest --durations lines "1.23s call tests/test_perf.py::test_decode" and the pytest
//       summary "== 1 passed in 1.23s ==".
//     See ExtractMetric for the precise rules.
//
// The value of a Metric is normalised to a canonical unit: times to milliseconds ("ms"),
// bandwidths to "GB/s" (decimal: 1 GB = 10^9 bytes; KiB/MiB/GiB/TiB are converted), flop rates
// to "TFLOPS". Other units are kept as found ("tokens/s", "x", "%"); numbers without a
// recognised unit are kept as is with an empty unit.
//
//   ASSIGN_OR_RETURN(MetricSpec spec, ParseMetricSpec(flag_value));
//   ASSIGN_OR_RETURN(Metric metric, ExtractMetric(spec, bench_output));
//   std::cout << FormatMetric(metric);  // "latency = 1.52ms"
//
#ifndef KBISECT_COMMON_METRIC_METRIC_H_
#define KBISECT_COMMON_METRIC_METRIC_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kbisect {

// Which way a metric improves.
enum class Direction {
  kUnknown,         // Could not be inferred; the caller must ask the user.
  kLowerIsBetter,   // Latencies, times, durations.
  kHigherIsBetter,  // Throughputs, bandwidths, flop rates, speedups.
};

// Returns "unknown", "lower_is_better" or "higher_is_better".
const char* DirectionName(Direction direction);

// How to find the metric in a benchmark's output.
struct MetricSpec {
  enum class Kind {
    kAuto,      // Recognise the common forms; `pattern` is ignored.
    kRegex,     // `pattern` is an RE2 regular expression with exactly one capturing group.
    kJsonPath,  // `pattern` is a dotted path into the last JSON object of the output.
  };
  Kind kind = Kind::kAuto;
  std::string pattern;
};

// Parses the textual form of a spec: "" or "auto" (kAuto), "regex:PATTERN" (kRegex) or
// "json:PATH" (kJsonPath). The result is validated as by ValidateMetricSpec. Errors:
// InvalidArgument for any other form or an invalid spec.
absl::StatusOr<MetricSpec> ParseMetricSpec(std::string_view text);

// Returns the textual form of `spec` that ParseMetricSpec accepts ("auto", "regex:...",
// "json:..."). Stable, so it can be part of a probe's cache key.
std::string MetricSpecToString(const MetricSpec& spec);

// Checks a spec without any output: a kRegex pattern must compile and have exactly one capturing
// group; a kJsonPath path must be non-empty and have no empty component. Errors: InvalidArgument
// naming the pattern or path.
absl::Status ValidateMetricSpec(const MetricSpec& spec);

// One extracted metric.
struct Metric {
  // The value in the canonical unit `unit` (see the file comment).
  double value = 0;
  // The metric's name, lower_snake_case without a unit suffix ("latency", "kernel_time"), or a
  // pytest node id for pytest durations, or "pytest_session" for the pytest summary line. For a
  // regex without a recognisable label before the number, the pattern itself.
  std::string name;
  // The canonical unit ("ms", "GB/s", "TFLOPS", "tokens/s", ...), or "" if none was recognised.
  std::string unit;
  // Which way the metric improves, from InferDirection(name, unit).
  Direction direction = Direction::kUnknown;
  // The text the value was read from (the regex match, the output line, or "path = value" for
  // JSON), for showing to the user.
  std::string matched_text;
};

// Extracts the metric described by `spec` from a benchmark's combined output.
//
// kAuto looks for candidates of three tiers and uses the first tier that has any:
//   1. "label: number [unit]" or "label=number[unit]" anywhere in a line, where the label (words
//      before the separator, optionally ending in "(unit)") names a metric (see InferDirection) or
//      the unit is a time, bandwidth, flop-rate or per-second unit; and the numeric members of the
//      last top-level JSON object whose keys qualify the same way (e.g. "time", "latency_ms",
//      "ms", "us", "throughput", "tflops", "bandwidth", "speedup").
//   2. pytest --durations "call" lines: "1.23s call tests/test_perf.py::test_decode".
//   3. the pytest summary line: "== 1 passed, 2 warnings in 1.23s ==".
// Candidates are grouped by name (case, separators and unit suffixes do not matter, so
// "Latency: 1.2 ms" and {"latency_ms": 1.2} are the same metric). If the tier holds two or more
// different names, it fails with InvalidArgument "ambiguous metric: found X and Y; pass --metric
// REGEX or --metric-json PATH"; otherwise the last occurrence in the output wins.
//
// Errors (each message names the pattern or path and quotes the last 5 lines of the output, long
// lines truncated): NotFound if nothing matches (no match, no JSON object, a missing key or index);
// InvalidArgument for an invalid spec, an ambiguous auto detection, a matched value that is not a
// finite number (NaN and infinities included), or a JSON path that names a non-number.
absl::StatusOr<Metric> ExtractMetric(const MetricSpec& spec, std::string_view output);

// Infers which way a metric improves from its unit and, when the unit says nothing, its name.
// Time units (s, ms, us, µs, ns) mean lower is better; bandwidth (B/s .. TB/s, KiB/s .. TiB/s),
// flop rates (GFLOPS, TFLOPS, ...), any "<items>/s" rate and the "x" of a speedup mean higher is
// better. Otherwise name words decide: throughput, bandwidth, bw, flops, tflops, gflops, speedup,
// qps, fps, goodput or a per-second rate ("tokens/s", "tokens_per_sec") mean higher is better;
// time, latency, duration, elapsed, runtime, wall, ttft, tpot, itl, cycles or a time-unit suffix
// ("kernel_time_us", "ms") mean lower is better. Names and units are matched case-insensitively.
Direction InferDirection(std::string_view name, std::string_view unit);

// A value in its canonical unit.
struct NormalizedValue {
  double value = 0;
  std::string unit;
};

// Converts `value` in `unit` to the canonical unit of its kind (see the file comment): for
// example (1.5, "s") -> (1500, "ms"), (2, "TB/s") -> (2000, "GB/s"), (800, "GFLOPS") -> (0.8,
// "TFLOPS"). A unit that is not recognised is returned unchanged. Bit rates with an upper-case
// prefix ("Gb/s", "Mbps") are deliberately not recognised, so they are never mistaken for bytes.
NormalizedValue NormalizeUnit(double value, std::string_view unit);

// Formats a value with about three significant digits (never in exponent notation between 1e-4
// and 1e15), trailing zeros dropped, followed by its unit: time units, "x" and "%" are attached
// ("1.52ms", "1.3x"), other units follow a space ("456 GB/s"); no unit gives the bare number.
std::string FormatValue(double value, std::string_view unit);

// Returns "<name> = <FormatValue(value, unit)>", e.g. "latency = 1.52ms".
std::string FormatMetric(const Metric& metric);

}  // namespace kbisect

#endif  // KBISECT_COMMON_METRIC_METRIC_H_
