// Copyright 2026 The kbisect Authors.

#include "common/metric/metric.h"

#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using ::testing::AllOf;
using ::testing::DoubleNear;
using ::testing::HasSubstr;
using ::testing::Not;

MetricSpec Auto() { return MetricSpec{}; }

MetricSpec Regex(std::string pattern) {
  MetricSpec spec;
  spec.kind = MetricSpec::Kind::kRegex;
  spec.pattern = std::move(pattern);
  return spec;
}

MetricSpec JsonPath(std::string path) {
  MetricSpec spec;
  spec.kind = MetricSpec::Kind::kJsonPath;
  spec.pattern = std::move(path);
  return spec;
}

// Extracts with `spec`, failing the test on error.
Metric MustExtract(const MetricSpec& spec, std::string_view output) {
  absl::StatusOr<Metric> metric = ExtractMetric(spec, output);
  EXPECT_TRUE(metric.ok()) << metric.status() << "\noutput:\n" << output;
  return metric.ok() ? *metric : Metric{};
}

// ---------------------------------------------------------------------------------------------
// The forms of the seed procedure's extraction table (step 2.1), in auto mode.

TEST(AutoTest, LatencyLine) {
  const Metric m = MustExtract(Auto(), "warming up...\nLatency: 1.23 ms\n");
  EXPECT_DOUBLE_EQ(m.value, 1.23);
  EXPECT_EQ(m.name, "latency");
  EXPECT_EQ(m.unit, "ms");
  EXPECT_EQ(m.direction, Direction::kLowerIsBetter);
  EXPECT_EQ(m.matched_text, "Latency: 1.23 ms");
}

TEST(AutoTest, ThroughputLine) {
  const Metric m = MustExtract(Auto(), "Throughput: 456 GB/s\n");
  EXPECT_DOUBLE_EQ(m.value, 456);
  EXPECT_EQ(m.name, "throughput");
  EXPECT_EQ(m.unit, "GB/s");
  EXPECT_EQ(m.direction, Direction::kHigherIsBetter);
}

TEST(AutoTest, UnitSuffixInName) {
  const Metric m = MustExtract(Auto(), "kernel_time_us: 789\n");
  EXPECT_DOUBLE_EQ(m.value, 0.789);  // 789 us = 0.789 ms
  EXPECT_EQ(m.name, "kernel_time");
  EXPECT_EQ(m.unit, "ms");
  EXPECT_EQ(m.direction, Direction::kLowerIsBetter);
}

TEST(AutoTest, JsonObject) {
  const Metric m = MustExtract(Auto(), "{\"time\": 1.23}\n");
  EXPECT_DOUBLE_EQ(m.value, 1.23);
  EXPECT_EQ(m.name, "time");
  EXPECT_EQ(m.unit, "");
  EXPECT_EQ(m.direction, Direction::kLowerIsBetter);
}

TEST(AutoTest, JsonCommonKeys) {
  struct Case {
    const char* json;
    const char* name;
    double value;
    const char* unit;
    Direction direction;
  };
  const Case cases[] = {
      {R"({"latency_ms": 1.5, "batch": 32})", "latency", 1.5, "ms", Direction::kLowerIsBetter},
      {R"({"ms": 2.5})", "time", 2.5, "ms", Direction::kLowerIsBetter},
      {R"({"us": 2500, "iters": 100})", "time", 2.5, "ms", Direction::kLowerIsBetter},
      {R"({"throughput": 900, "unit": "GB/s"})", "throughput", 900, "GB/s",
       Direction::kHigherIsBetter},
      {R"({"tflops": 312.5, "config": "bf16"})", "flops", 312.5, "TFLOPS",
       Direction::kHigherIsBetter},
      {R"({"bandwidth_gb_s": 1800})", "bandwidth", 1800, "GB/s", Direction::kHigherIsBetter},
      {R"({"speedup": 1.25})", "speedup", 1.25, "", Direction::kHigherIsBetter},
      {R"({"latency": 3, "unit": "us"})", "latency", 0.003, "ms", Direction::kLowerIsBetter},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.json);
    const Metric m = MustExtract(Auto(), c.json);
    EXPECT_EQ(m.name, c.name);
    EXPECT_DOUBLE_EQ(m.value, c.value);
    EXPECT_EQ(m.unit, c.unit);
    EXPECT_EQ(m.direction, c.direction);
  }
}

TEST(AutoTest, PytestDurations) {
  // `pytest --durations=1 tests/test_perf.py -k test_decode`.
  const std::string output =
      "============================= test session starts ==============================\n"
      "platform linux -- Python 3.11.2, pytest-7.4.0, pluggy-1.3.0\n"
      "rootdir: /src\n"
      "collected 4 items / 3 deselected / 1 selected\n"
      "\n"
      "tests/test_perf.py .                                                     [100%]\n"
      "\n"
      "============================= slowest 1 durations ==============================\n"
      "1.23s call     tests/test_perf.py::test_decode\n"
      "0.02s setup    tests/test_perf.py::test_decode\n"
      "================= 1 passed, 3 deselected, 1 warning in 1.50s ==================\n";
  const Metric m = MustExtract(Auto(), output);
  EXPECT_DOUBLE_EQ(m.value, 1230);  // The call phase, not the setup or the session.
  EXPECT_EQ(m.name, "tests/test_perf.py::test_decode");
  EXPECT_EQ(m.unit, "ms");
  EXPECT_EQ(m.direction, Direction::kLowerIsBetter);
}

TEST(AutoTest, PytestSummaryLine) {
  const Metric m = MustExtract(Auto(), "tests/test_perf.py .\n== 1 passed in 1.23s ==\n");
  EXPECT_DOUBLE_EQ(m.value, 1230);
  EXPECT_EQ(m.name, "pytest_session");
  EXPECT_EQ(m.direction, Direction::kLowerIsBetter);
  // -q mode, and pytest's "(h:mm:ss)" suffix for long sessions.
  EXPECT_DOUBLE_EQ(MustExtract(Auto(), "1 passed, 2 warnings in 0.52s\n").value, 520);
  EXPECT_DOUBLE_EQ(MustExtract(Auto(), "==== 2 passed in 83.21s (0:01:23) ====\n").value, 83210);
}

TEST(AutoTest, PrintedMetricBeatsPytestTimings) {
  // A perf test that prints its own latency (pytest -s): the printed metric wins over pytest's
  // durations and summary, which then time the whole test.
  const std::string output =
      "tests/test_perf.py Latency: 0.75 ms\n"
      ".\n"
      "1.23s call     tests/test_perf.py::test_decode\n"
      "== 1 passed in 1.50s ==\n";
  const Metric m = MustExtract(Auto(), output);
  EXPECT_EQ(m.name, "latency");
  EXPECT_DOUBLE_EQ(m.value, 0.75);
}

TEST(AutoTest, OtherLabelledForms) {
  EXPECT_DOUBLE_EQ(MustExtract(Auto(), "iter 3: loss=0.25 time=1.5ms\n").value, 1.5);
  const Metric paren = MustExtract(Auto(), "Bandwidth (GB/s): 456.5\n");
  EXPECT_EQ(paren.name, "bandwidth");
  EXPECT_DOUBLE_EQ(paren.value, 456.5);
  EXPECT_EQ(paren.unit, "GB/s");
  const Metric tokens = MustExtract(Auto(), "[INFO] decode: 1234.5 tokens/s\n");
  EXPECT_EQ(tokens.name, "decode");
  EXPECT_EQ(tokens.unit, "tokens/s");
  EXPECT_EQ(tokens.direction, Direction::kHigherIsBetter);
  EXPECT_DOUBLE_EQ(MustExtract(Auto(), "Throughput: 1,234.5 GB/s\n").value, 1234.5);
  const Metric speedup = MustExtract(Auto(), "speedup: 1.3x\n");
  EXPECT_DOUBLE_EQ(speedup.value, 1.3);
  EXPECT_EQ(speedup.unit, "x");
  EXPECT_EQ(speedup.direction, Direction::kHigherIsBetter);
}

TEST(AutoTest, IgnoresNonMetricNumbers) {
  // Configuration echoes, clocks, versions and counters are not metrics.
  const std::string output =
      "batch: 32\n"
      "Time: 12:00:05\n"
      "version: 1.2.3\n"
      "latency: info follows\n"
      "elapsed: 1,2\n"
      "Memory: 12 GB\n"
      "Latency: 2 ms\n";
  const Metric m = MustExtract(Auto(), output);
  EXPECT_EQ(m.name, "latency");
  EXPECT_DOUBLE_EQ(m.value, 2);
}

TEST(AutoTest, RepeatedMetricUsesLastAndIgnoresCaseAndUnitSuffix) {
  // Warm-up prints come first; the last value is the measurement. "Latency" and "latency_ms" name
  // the same metric.
  const std::string output =
      "Latency: 9.00 ms\n"
      "Latency: 1.10 ms\n"
      "latency_ms=1.05\n"
      "Latency: 1.20 ms\n";
  const Metric m = MustExtract(Auto(), output);
  EXPECT_DOUBLE_EQ(m.value, 1.20);
  EXPECT_EQ(m.name, "latency");
}

TEST(AutoTest, AmbiguousDifferentMetrics) {
  const std::string output = "Latency: 1.23 ms\nThroughput: 456 GB/s\n";
  absl::StatusOr<Metric> m = ExtractMetric(Auto(), output);
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(m.status().message(),
              HasSubstr("ambiguous metric: found latency and throughput; pass --metric REGEX or "
                        "--metric-json PATH"));
  // The same inside one JSON object.
  absl::StatusOr<Metric> json = ExtractMetric(Auto(), R"({"time": 1.2, "throughput": 80})");
  EXPECT_EQ(json.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(json.status().message(), HasSubstr("ambiguous metric"));
}

TEST(AutoTest, NanAndInfRejected) {
  absl::StatusOr<Metric> nan = ExtractMetric(Auto(), "Latency: nan ms\n");
  EXPECT_EQ(nan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(nan.status().message(), HasSubstr("not a finite number"));
  absl::StatusOr<Metric> inf = ExtractMetric(Auto(), "Throughput: inf GB/s\n");
  EXPECT_EQ(inf.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(AutoTest, NothingFoundShowsTail) {
  absl::StatusOr<Metric> m = ExtractMetric(Auto(), "compiling...\ndone\nSegmentation fault\n");
  EXPECT_EQ(m.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(m.status().message(),
              AllOf(HasSubstr("--metric REGEX"), HasSubstr("| Segmentation fault")));
  absl::StatusOr<Metric> empty = ExtractMetric(Auto(), "");
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(empty.status().message(), HasSubstr("printed nothing"));
}

// ---------------------------------------------------------------------------------------------
// Regex mode.

TEST(RegexTest, LastMatchWinsAndUnitIsRead) {
  const std::string output =
      "Latency: 5.00 ms (warm-up)\n"
      "Latency: 1.52 ms\n"
      "Latency: 1500 us\n"
      "done\n";
  const Metric m = MustExtract(Regex(R"(Latency:\s*([\d.]+))"), output);
  EXPECT_DOUBLE_EQ(m.value, 1.5);  // The last match, 1500 us, in ms.
  EXPECT_EQ(m.name, "latency");
  EXPECT_EQ(m.unit, "ms");
  EXPECT_EQ(m.direction, Direction::kLowerIsBetter);
  EXPECT_EQ(m.matched_text, "Latency: 1500");
}

// Found by tests/fuzz/metric_fuzz: a capture that takes the newline used to read the unit past
// the end of its line and throw std::out_of_range from string_view::substr.
TEST(RegexTest, CaptureRunningPastItsLineHasNoUnit) {
  const Metric m = MustExtract(Regex(R"(v=([\d\s]+))"), "v=6\n\nnext line ms\n");
  EXPECT_DOUBLE_EQ(m.value, 6);
  EXPECT_EQ(m.unit, "");
  const Metric spaced = MustExtract(Regex(R"(latency=([\d.\n]+))"), "latency=1.5\n\n");
  EXPECT_DOUBLE_EQ(spaced.value, 1.5);
}

TEST(RegexTest, SeedGrepPatterns) {
  // The seed's `grep -oP 'Throughput:\s*\K[\d.]+'` becomes a capture group.
  const Metric t = MustExtract(Regex(R"(Throughput:\s*([\d.]+))"), "Throughput: 456 GB/s\n");
  EXPECT_DOUBLE_EQ(t.value, 456);
  EXPECT_EQ(t.direction, Direction::kHigherIsBetter);
  const Metric k = MustExtract(Regex(R"(kernel_time_us:\s*([\d.]+))"), "kernel_time_us: 789\n");
  EXPECT_DOUBLE_EQ(k.value, 0.789);
  EXPECT_EQ(k.name, "kernel_time");
  // `^` matches at line starts, as with grep.
  const Metric anchored = MustExtract(Regex(R"(^([\d.]+)$)"), "header\n42\nfooter\n");
  EXPECT_DOUBLE_EQ(anchored.value, 42);
  EXPECT_EQ(anchored.name, R"(^([\d.]+)$)");  // No label: the pattern names the metric.
  EXPECT_EQ(anchored.direction, Direction::kUnknown);
}

TEST(RegexTest, GroupCountMustBeOne) {
  for (const char* pattern : {R"(Latency: [\d.]+)", R"((Latency): ([\d.]+))"}) {
    absl::StatusOr<Metric> m = ExtractMetric(Regex(pattern), "Latency: 1.0\n");
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(m.status().message(),
                AllOf(HasSubstr(pattern), HasSubstr("exactly one capturing group")));
  }
  // Non-capturing groups are fine.
  EXPECT_DOUBLE_EQ(MustExtract(Regex(R"((?:Latency|lat): ([\d.]+))"), "lat: 2\n").value, 2);
}

TEST(RegexTest, InvalidRegex) {
  absl::StatusOr<Metric> m = ExtractMetric(Regex("Latency: ([\\d.]+"), "Latency: 1\n");
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(m.status().message(), HasSubstr("invalid metric regex 'Latency: ([\\d.]+'"));
  // The error is the user's own pattern's: not the (?m) kbisect puts before it.
  const absl::Status open = ValidateMetricSpec(Regex("("));
  EXPECT_EQ(open.message(), "invalid metric regex '(': missing ): (");
}

TEST(RegexTest, NonNumberAndNonFiniteRejected) {
  absl::StatusOr<Metric> nan = ExtractMetric(Regex(R"(Latency: (\S+))"), "Latency: nan\n");
  EXPECT_EQ(nan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(nan.status().message(), HasSubstr("'nan', which is not a finite number"));
  absl::StatusOr<Metric> inf = ExtractMetric(Regex(R"(Latency: (\S+))"), "Latency: -inf\n");
  EXPECT_EQ(inf.status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<Metric> word = ExtractMetric(Regex(R"(Latency: (\S+))"), "Latency: N/A\n");
  EXPECT_EQ(word.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(word.status().message(), HasSubstr("'N/A', which is not a number"));
}

TEST(RegexTest, NoMatchShowsTheLastFiveLinesTruncated) {
  std::string output;
  for (int i = 1; i <= 7; ++i) output += "line " + std::to_string(i) + "\n";
  output += std::string(500, 'z') + "\n\n";
  absl::StatusOr<Metric> m = ExtractMetric(Regex(R"(Latency: ([\d.]+))"), output);
  EXPECT_EQ(m.status().code(), absl::StatusCode::kNotFound);
  const std::string message(m.status().message());
  EXPECT_THAT(message, HasSubstr("metric regex 'Latency: ([\\d.]+)' matched nothing"));
  EXPECT_THAT(message, HasSubstr("| line 4\n  | line 5\n  | line 6\n  | line 7\n  | zzz"));
  EXPECT_THAT(message, Not(HasSubstr("line 3")));
  EXPECT_THAT(message, HasSubstr("zzz..."));
  EXPECT_THAT(message, Not(HasSubstr(std::string(200, 'z'))));
}

// ---------------------------------------------------------------------------------------------
// JSON path mode.

TEST(JsonPathTest, LastObjectAfterLogLines) {
  const std::string output =
      "loading model {not json}\n"
      "{\"time\": 9.9}\n"
      "INFO: running 100 iterations\n"
      "{\"config\": {\"note\": \"braces } in { strings\"},\n"
      " \"results\": [{\"name\": \"a\", \"latency_ms\": 1.0}, {\"latency_ms\": 2.5}]}\n"
      "exiting\n";
  const Metric m = MustExtract(JsonPath("results.1.latency_ms"), output);
  EXPECT_DOUBLE_EQ(m.value, 2.5);
  EXPECT_EQ(m.name, "latency");
  EXPECT_EQ(m.unit, "ms");
  EXPECT_EQ(m.direction, Direction::kLowerIsBetter);
  EXPECT_EQ(m.matched_text, "results.1.latency_ms = 2.5");
  // The earlier object is not the last one.
  absl::StatusOr<Metric> early = ExtractMetric(JsonPath("time"), output);
  EXPECT_EQ(early.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(early.status().message(), HasSubstr("no key 'time'"));
}

TEST(JsonPathTest, TopLevelAndNumericStringAndDollarPrefix) {
  EXPECT_DOUBLE_EQ(MustExtract(JsonPath("time"), R"({"time": 1.23})").value, 1.23);
  EXPECT_DOUBLE_EQ(MustExtract(JsonPath("$.stats.p50"), R"({"stats": {"p50": "4.5"}})").value, 4.5);
  const Metric bw = MustExtract(JsonPath("bw"), R"({"bw": 2, "unit": "TB/s"})");
  EXPECT_DOUBLE_EQ(bw.value, 2000);
  EXPECT_EQ(bw.unit, "GB/s");
  EXPECT_EQ(bw.direction, Direction::kHigherIsBetter);
}

TEST(JsonPathTest, Errors) {
  const std::string output = R"({"a": {"b": [1, 2]}, "s": "fast", "flag": true, "n": null})";
  absl::StatusOr<Metric> missing = ExtractMetric(JsonPath("a.c"), output);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), AllOf(HasSubstr("'a.c'"), HasSubstr("keys: b")));
  EXPECT_EQ(ExtractMetric(JsonPath("a.b.2"), output).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ExtractMetric(JsonPath("a.b.x"), output).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ExtractMetric(JsonPath("a.b.0.c"), output).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ExtractMetric(JsonPath("a"), output).status().message(),
              HasSubstr("names a JSON object, not a number"));
  EXPECT_EQ(ExtractMetric(JsonPath("s"), output).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ExtractMetric(JsonPath("flag"), output).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ExtractMetric(JsonPath("n"), output).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ExtractMetric(JsonPath("a..b"), output).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<Metric> none = ExtractMetric(JsonPath("time"), "no json here\n{broken\n");
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(none.status().message(),
              AllOf(HasSubstr("no JSON object"), HasSubstr("'time'"), HasSubstr("| {broken")));
}

TEST(JsonPathTest, NonFiniteNumericStringRejected) {
  for (const char* json : {R"({"time": "nan"})", R"({"time": "inf"})"}) {
    absl::StatusOr<Metric> m = ExtractMetric(JsonPath("time"), json);
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << json;
    EXPECT_THAT(m.status().message(), HasSubstr("not a finite number"));
  }
}

// ---------------------------------------------------------------------------------------------
// Units, direction, formatting, specs.

TEST(NormalizeUnitTest, Conversions) {
  struct Case {
    double value;
    const char* unit;
    double expected;
    const char* canonical;
  };
  const Case cases[] = {
      {1.5, "s", 1500, "ms"},
      {2, "sec", 2000, "ms"},
      {1500, "us", 1.5, "ms"},
      {1500, "\xC2\xB5s", 1.5, "ms"},  // µs (U+00B5)
      {1500, "\xCE\xBCs", 1.5, "ms"},  // μs (U+03BC)
      {250, "ns", 0.00025, "ms"},
      {3, "ms", 3, "ms"},
      {2, "TB/s", 2000, "GB/s"},
      {512, "MB/s", 0.512, "GB/s"},
      {1, "GiB/s", 1.073741824, "GB/s"},
      {1024, "MiB/s", 1.073741824, "GB/s"},
      {456, "GB/sec", 456, "GB/s"},
      {800, "GFLOPS", 0.8, "TFLOPS"},
      {1.2, "PFLOPS", 1200, "TFLOPS"},
      {300, "TFLOP/s", 300, "TFLOPS"},
      {77, "tokens/s", 77, "tokens/s"},
      {5, "widgets", 5, "widgets"},
      {10, "Gb/s", 10, "Gb/s"},  // Bits are not bytes: left alone.
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.unit);
    const NormalizedValue n = NormalizeUnit(c.value, c.unit);
    EXPECT_THAT(n.value, DoubleNear(c.expected, 1e-12 * c.expected));
    EXPECT_EQ(n.unit, c.canonical);
  }
}

TEST(AutoTest, UnitsNormalisedInOutput) {
  EXPECT_DOUBLE_EQ(MustExtract(Auto(), "Latency: 3 \xC2\xB5s\n").value, 0.003);
  EXPECT_DOUBLE_EQ(MustExtract(Auto(), "elapsed: 2.5 s\n").value, 2500);
  EXPECT_DOUBLE_EQ(MustExtract(Auto(), "Bandwidth: 1.5 TB/s\n").value, 1500);
  EXPECT_DOUBLE_EQ(MustExtract(Auto(), "bw: 1 GiB/s\n").value, 1.073741824);
  const Metric flops = MustExtract(Auto(), "Perf: 800 GFLOPS\n");
  EXPECT_DOUBLE_EQ(flops.value, 0.8);
  EXPECT_EQ(flops.unit, "TFLOPS");
  EXPECT_EQ(flops.direction, Direction::kHigherIsBetter);
}

TEST(InferDirectionTest, FromUnitAndName) {
  // Units decide first.
  EXPECT_EQ(InferDirection("foo", "ms"), Direction::kLowerIsBetter);
  EXPECT_EQ(InferDirection("foo", "ns"), Direction::kLowerIsBetter);
  EXPECT_EQ(InferDirection("foo", "s"), Direction::kLowerIsBetter);
  EXPECT_EQ(InferDirection("foo", "GB/s"), Direction::kHigherIsBetter);
  EXPECT_EQ(InferDirection("foo", "TFLOPS"), Direction::kHigherIsBetter);
  EXPECT_EQ(InferDirection("foo", "items/s"), Direction::kHigherIsBetter);
  EXPECT_EQ(InferDirection("foo", "tokens/s"), Direction::kHigherIsBetter);
  // Then the name.
  EXPECT_EQ(InferDirection("Latency", ""), Direction::kLowerIsBetter);
  EXPECT_EQ(InferDirection("kernel_time_us", ""), Direction::kLowerIsBetter);
  EXPECT_EQ(InferDirection("duration", ""), Direction::kLowerIsBetter);
  EXPECT_EQ(InferDirection("p99_latency", ""), Direction::kLowerIsBetter);
  EXPECT_EQ(InferDirection("elapsed_s", ""), Direction::kLowerIsBetter);
  EXPECT_EQ(InferDirection("ms", ""), Direction::kLowerIsBetter);
  EXPECT_EQ(InferDirection("Throughput", ""), Direction::kHigherIsBetter);
  EXPECT_EQ(InferDirection("memBandwidth", ""), Direction::kHigherIsBetter);
  EXPECT_EQ(InferDirection("tflops", ""), Direction::kHigherIsBetter);
  EXPECT_EQ(InferDirection("GFLOPS", ""), Direction::kHigherIsBetter);
  EXPECT_EQ(InferDirection("speedup", ""), Direction::kHigherIsBetter);
  EXPECT_EQ(InferDirection("tokens_per_sec", ""), Direction::kHigherIsBetter);
  EXPECT_EQ(InferDirection("items/s", ""), Direction::kHigherIsBetter);
  EXPECT_EQ(InferDirection("bandwidth_gb_s", ""), Direction::kHigherIsBetter);
  // Unknown.
  EXPECT_EQ(InferDirection("loss", ""), Direction::kUnknown);
  EXPECT_EQ(InferDirection("timestamp", ""), Direction::kUnknown);
  EXPECT_EQ(InferDirection("accuracy", "%"), Direction::kUnknown);
}

TEST(FormatTest, Values) {
  EXPECT_EQ(FormatValue(1.52, "ms"), "1.52ms");
  EXPECT_EQ(FormatValue(1.5234, "ms"), "1.52ms");
  EXPECT_EQ(FormatValue(456, "GB/s"), "456 GB/s");
  EXPECT_EQ(FormatValue(456.3, "GB/s"), "456 GB/s");
  EXPECT_EQ(FormatValue(15.26, "TFLOPS"), "15.3 TFLOPS");
  EXPECT_EQ(FormatValue(1.5, "ms"), "1.5ms");
  EXPECT_EQ(FormatValue(2, "ms"), "2ms");
  EXPECT_EQ(FormatValue(12345.6, "ms"), "12346ms");
  EXPECT_EQ(FormatValue(0.00123, "ms"), "0.00123ms");
  EXPECT_EQ(FormatValue(1.3, "x"), "1.3x");
  EXPECT_EQ(FormatValue(0, ""), "0");
  EXPECT_EQ(FormatValue(42, ""), "42");
  EXPECT_EQ(FormatValue(1e-7, "ms"), "1e-07ms");

  Metric m;
  m.name = "latency";
  m.value = 1.52;
  m.unit = "ms";
  EXPECT_EQ(FormatMetric(m), "latency = 1.52ms");
}

TEST(MetricSpecTest, ParseAndPrint) {
  absl::StatusOr<MetricSpec> a = ParseMetricSpec("auto");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->kind, MetricSpec::Kind::kAuto);
  EXPECT_EQ(ParseMetricSpec("")->kind, MetricSpec::Kind::kAuto);

  absl::StatusOr<MetricSpec> r = ParseMetricSpec(R"(regex:Latency: ([\d.]+))");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->kind, MetricSpec::Kind::kRegex);
  EXPECT_EQ(r->pattern, R"(Latency: ([\d.]+))");
  EXPECT_EQ(MetricSpecToString(*r), R"(regex:Latency: ([\d.]+))");

  absl::StatusOr<MetricSpec> j = ParseMetricSpec("json:results.0.ms");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(j->kind, MetricSpec::Kind::kJsonPath);
  EXPECT_EQ(j->pattern, "results.0.ms");
  EXPECT_EQ(MetricSpecToString(*j), "json:results.0.ms");
  EXPECT_EQ(MetricSpecToString(MetricSpec{}), "auto");

  EXPECT_EQ(ParseMetricSpec("grep:x").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseMetricSpec("regex:no group").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseMetricSpec("json:").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(ValidateMetricSpec(Regex("t=([0-9]+)")).ok());
  EXPECT_FALSE(ValidateMetricSpec(Regex("(a)(b)")).ok());
}

}  // namespace
}  // namespace kbisect
