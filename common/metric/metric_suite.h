// Copyright 2026 The kbisect Authors.
//
// Extraction of MANY named metrics from one benchmark's output: a suite that prints one result per
// kernel ("softmax_fwd: 1.23 ms", "matmul_bf16: 456 TFLOPS", ...), a Google Benchmark or
// pytest-benchmark JSON report, or any output a regex or a JSON path with a wildcard can name.
// It is the many-metric counterpart of ExtractMetric (metric.h), and each metric it returns is a
// Metric as ExtractMetric builds it: the value in the canonical unit of its kind ("ms", "GB/s",
// "TFLOPS", ...), the canonical unit, and the direction inferred from the unit and the name.
//
// A MetricSuiteSpec says how to find the metrics:
//   - kAuto recognises, in this order (the first form that yields a metric wins):
//       1. Google Benchmark JSON (--benchmark_format=json or --benchmark_out): one metric per
//          benchmark, its real_time in ms;
//       2. pytest-benchmark JSON (--benchmark-json): one metric per test, its median in ms;
//       3. a table of "name: value [unit]", "name = value [unit]" or "name value unit" lines.
//     See ExtractMetricSuite for the precise rules.
//   - kRegex: an RE2 pattern with a capturing group named `name` and one other capturing group,
//     which captures the value: "(?P<name>\w+): ([0-9.]+) ms". Every match is a metric's value.
//   - kJsonPath: a dotted path with exactly one "*" component into the last JSON object of the
//     output, "results.*.latency_ms"; the wildcard runs over an object's keys or an array's
//     elements, which name the metrics.
//
//   ASSIGN_OR_RETURN(MetricSuiteSpec spec, ParseMetricSuiteSpec(flag_value));
//   ASSIGN_OR_RETURN(std::vector<NamedMetric> metrics, ExtractMetricSuite(spec, bench_output));
//   for (const NamedMetric& m : metrics) std::cout << FormatMetric(m.metric) << "\n";
//
#ifndef KBISECT_COMMON_METRIC_METRIC_SUITE_H_
#define KBISECT_COMMON_METRIC_METRIC_SUITE_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/metric/metric.h"

namespace kbisect {

// How to find a suite's metrics in a benchmark's output.
struct MetricSuiteSpec {
  enum class Kind {
    // Google Benchmark JSON, pytest-benchmark JSON or a plain "name: value unit" table, each
    // recognised on its own; `pattern` is ignored.
    kAuto,
    // `pattern` is an RE2 regular expression with a capturing group named `name` (the metric's
    // name) and exactly one other capturing group (its value).
    kRegex,
    // `pattern` is a dotted path with exactly one "*" component into the last JSON object of the
    // output (see ExtractMetricSuite).
    kJsonPath,
  };
  Kind kind = Kind::kAuto;
  std::string pattern;
};

// Parses the textual form of a suite spec: "" or "auto" (kAuto), "regex:PATTERN" (kRegex) or
// "json:PATH" (kJsonPath). Whitespace around "auto" and before "regex:" or "json:" is ignored; the
// pattern is everything after the prefix, kept verbatim (a trailing space of a regex is part of
// it). The result is validated as by ValidateMetricSuiteSpec. Errors: InvalidArgument for any
// other form or an invalid spec.
absl::StatusOr<MetricSuiteSpec> ParseMetricSuiteSpec(std::string_view text);

// Returns the textual form of `spec` that ParseMetricSuiteSpec accepts and parses back into an
// equal spec ("auto", "regex:PATTERN", "json:PATH"; a kAuto spec's ignored pattern is dropped).
// Stable, so it can be part of a probe's cache key.
std::string MetricSuiteSpecToString(const MetricSuiteSpec& spec);

// Checks a suite spec without any output: a kRegex pattern must compile, have a capturing group
// named `name` and exactly one other capturing group; a kJsonPath path must be a valid metric JSON
// path (non-empty, no empty component) with exactly one '*', which must be a whole component.
// Errors: InvalidArgument naming the pattern or path.
absl::Status ValidateMetricSuiteSpec(const MetricSuiteSpec& spec);

// One metric of a suite. `metric.name` equals `name`.
struct NamedMetric {
  // The metric's name as the output prints it ("softmax_fwd", "BM_Softmax/1024",
  // "test_decode[bf16]"), with surrounding whitespace removed. Unique within a suite.
  std::string name;
  // The value in its canonical unit, the unit, the direction and the text it was read from.
  Metric metric;
};

// Extracts every metric that `spec` finds in a benchmark's combined output, in the order their
// names first appear. A name found more than once is one metric whose LAST value wins (benchmarks
// print warm-up results first), at the place where the name first appeared. A metric whose last
// value is not a finite number (NaN, an infinity, a word) is left out, so that one broken kernel
// does not cost the suite's other metrics.
//
// Each value is described by its label: the text written before it on its line (regex), the
// path's last key other than the wildcard (JSON path: "latency_ms" in "results.*.latency_ms" and
// in "latency_ms.*"), the row's name (table), "real_time" or "median" (Google Benchmark and
// pytest-benchmark, whose times carry their unit). The unit comes from the text after the value,
// else from a unit suffix or "(unit)" of the label ("latency_ms", "kernel_time_us"), else from a
// "unit" member next to a JSON value; the direction from that unit, else from the label's words
// (see InferDirection in metric.h). When the label says nothing about either, the metric's name
// is asked instead.
//
// kAuto tries these forms in order and returns the metrics of the first that yields any:
//   1. Google Benchmark JSON: the last JSON object of the output has a "benchmarks" array of
//      objects with a numeric "real_time" and a "time_unit" ("ns" when absent). Each benchmark is
//      named by its "run_name" (or else its "name") and measured by its real_time in ms; entries
//      with "error_occurred": true are skipped. When a benchmark has a "median" aggregate
//      (--benchmark_repetitions), that aggregate is its value; its other aggregates (mean,
//      stddev, cv, ...) are never metrics, and counters such as bytes_per_second are not either.
//   2. pytest-benchmark JSON: the last JSON object has a "benchmarks" array of objects with a
//      "stats" object; each test is named by its "name" (its "fullname" when two tests of
//      different modules share a name) and measured by stats.median, in seconds, converted to ms.
//   3. A table: at least two lines, with different names, each of which is entirely
//        NAME SEP NUMBER [UNIT]
//      where NAME starts with a letter or '_' and holds letters, digits and "_.-/[]"; SEP is ':'
//      or '=' (with optional spaces) or spaces alone; UNIT is a unit that metric.h knows ("ms",
//      "us", "GB/s", "TFLOPS", "tokens/s", "1.5x", "%", ...). A line is a row only if it has a
//      recognised unit or, with ':' or '=' and no unit, its name tells which way the metric
//      improves ("attention_latency: 1.2", "kernel_time_us = 3"). So configuration lines such as
//      "batch_size: 32" or "seed=42", prose such as "step 3 of 10" or "epoch 3", and lines with
//      anything more ("Load Average: 0.52, 0.58", "BM_Softmax  1234 ns  1230 ns  5678") are not
//      rows; a single metric printed alone, however often, is not a table (use ExtractMetric).
//
// kRegex: every match of the pattern (in multi-line mode, as in ExtractMetric) whose `name`
// group captured a non-blank name is an occurrence of that metric; the other group's capture is
// its value.
//
// kJsonPath: the path's components before the "*" lead, from the last JSON object of the
// output, to an object or array; the wildcard runs over its members in the order the output
// lists them, and the components after it lead from each member to its value, a number or a
// string holding one. A member that lacks the rest of the path, or whose value is null, a
// boolean, an object, an array or a string holding no number (a "unit" member), is no metric. The
// metric's name is the member's key, or for an array's element its "name" member when it is an
// object with a non-empty string "name", else its index ("0", "1", ...).
//
// Errors (each message quotes the last 5 lines of the output, as ExtractMetric's do):
// InvalidArgument for an invalid spec (as ValidateMetricSuiteSpec, without the output's tail), or
// a JSON path whose components before the wildcard step into a number or string, index an array
// with a non-number, or end at something that is neither an object nor an array; NotFound when
// no metric is found: nothing matches, no JSON object, a missing key or an index out of range
// before the wildcard, or only values that are not finite numbers (the message names them).
absl::StatusOr<std::vector<NamedMetric>> ExtractMetricSuite(const MetricSuiteSpec& spec,
                                                            std::string_view output);

// What a job keeps of one run of a suite: the metrics it answers for and the one that leads its
// search (MetricSpec.lead in kbisect.proto).
struct SuiteReading {
  // The metrics named in `members` (every metric when `members` is empty), in output order. A
  // member the run did not print is absent: that metric has no sample of this run.
  std::vector<NamedMetric> metrics;
  // The lead's index in `metrics`: the metric named `lead`, else the first one.
  size_t lead = 0;
};

// Extracts the suite (ExtractMetricSuite) and keeps what a job answers for. Errors: those of
// ExtractMetricSuite; NotFound when `lead` is not among the metrics the output printed, or when
// none of `members` is, each naming what was looked for and listing (up to 10) what was found,
// with the output's last lines.
absl::StatusOr<SuiteReading> ReadSuite(const MetricSuiteSpec& spec, std::string_view output,
                                       std::string_view lead,
                                       const std::vector<std::string>& members);

}  // namespace kbisect

#endif  // KBISECT_COMMON_METRIC_METRIC_SUITE_H_
