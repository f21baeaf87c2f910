// Copyright 2026 The kbisect Authors.
//
// `kbisect metrics` on benchmark outputs saved to temp files: through MetricsCommand for the
// table, the JSON and the exit codes, and through the built `kbisect` binary for the dispatch,
// the usage line and standard input.
#include "cli/metrics_command.h"

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace {

using ::kbisect::testing::CommandResult;
using ::kbisect::testing::RunShell;
using ::kbisect::testing::ShellQuote;
using ::kbisect::testing::TempDir;
using ::kbisect::testing::WriteFile;
using ::testing::HasSubstr;

using Output = CommandResult;

// Runs MetricsCommand on `args` (after "metrics") and captures what it prints.
Output Metrics(const std::vector<std::string>& args) {
  std::vector<std::string> words = {"metrics"};
  words.insert(words.end(), args.begin(), args.end());
  return ::kbisect::testing::RunCommandInProcess(MetricsCommand, std::move(words));
}

constexpr char kSuiteLog[] = R"(compiling 3 kernels...
[INFO] warmup done
softmax_fwd: 1.23 ms
layernorm_bwd = 520 us
matmul_bf16   456 TFLOPS
batch_size: 32
)";

constexpr char kGoogleBenchmark[] = R"({
  "context": {"date": "2026-12-01T00:00:00+00:00", "num_cpus": 2},
  "benchmarks": [
    {"name": "BM_Softmax/1024", "run_name": "BM_Softmax/1024", "run_type": "iteration",
     "iterations": 1000, "real_time": 1500, "cpu_time": 1490, "time_unit": "ns"},
    {"name": "BM_Gemm/512", "run_name": "BM_Gemm/512", "run_type": "iteration",
     "iterations": 10, "real_time": 2.5, "cpu_time": 2.4, "time_unit": "ms"}
  ]
})";

TEST(MetricsCommandTest, PrintsEveryMetricOfASuiteWithItsUnitAndDirection) {
  TempDir tmp;
  const std::string file = tmp.Join("bench.log");
  WriteFile(file, kSuiteLog);
  const Output output = Metrics({file});
  ASSERT_EQ(output.exit_code, 0) << output.err;
  EXPECT_THAT(output.out, HasSubstr("softmax_fwd"));
  EXPECT_THAT(output.out, HasSubstr("1.23ms"));
  EXPECT_THAT(output.out, HasSubstr("0.52ms"));  // In the canonical unit.
  EXPECT_THAT(output.out, HasSubstr("456 TFLOPS  higher is better"));
  EXPECT_THAT(output.out, HasSubstr("lower is better"));
  EXPECT_THAT(output.out, ::testing::Not(HasSubstr("batch_size")));
  EXPECT_THAT(output.out, HasSubstr("3 metrics\n"));
}

TEST(MetricsCommandTest, JsonListsGoogleBenchmarkResultsInMilliseconds) {
  TempDir tmp;
  const std::string file = tmp.Join("gbench.json");
  WriteFile(file, kGoogleBenchmark);
  const Output output = Metrics({"--json", file});
  ASSERT_EQ(output.exit_code, 0) << output.err;
  const nlohmann::json metrics = nlohmann::json::parse(output.out);
  ASSERT_EQ(metrics.size(), 2u) << output.out;
  EXPECT_EQ(metrics[0]["name"], "BM_Softmax/1024");
  EXPECT_DOUBLE_EQ(metrics[0]["value"].get<double>(), 0.0015);
  EXPECT_EQ(metrics[0]["unit"], "ms");
  EXPECT_EQ(metrics[0]["direction"], "lower_is_better");
  EXPECT_EQ(metrics[1]["name"], "BM_Gemm/512");
  EXPECT_DOUBLE_EQ(metrics[1]["value"].get<double>(), 2.5);
}

TEST(MetricsCommandTest, ARegexSuiteAndTheSingleMetricOfKbisectRun) {
  TempDir tmp;
  const std::string file = tmp.Join("bench.log");
  WriteFile(file, "softmax took 1.5 ms\ngemm took 3.25 ms\nLatency: 7 ms\n");
  const Output suite = Metrics({"--suite", "regex:(?P<name>\\w+) took ([0-9.]+) ms", file});
  ASSERT_EQ(suite.exit_code, 0) << suite.err;
  EXPECT_THAT(suite.out, HasSubstr("gemm"));
  EXPECT_THAT(suite.out, HasSubstr("2 metrics\n"));
  const Output single = Metrics({"--single", file});
  ASSERT_EQ(single.exit_code, 0) << single.err;
  EXPECT_THAT(single.out, HasSubstr("latency"));
  EXPECT_THAT(single.out, HasSubstr("7ms"));
  EXPECT_THAT(single.out, HasSubstr("1 metric\n"));
  const Output regex = Metrics({"--metric", "gemm took ([0-9.]+) ms", file});
  ASSERT_EQ(regex.exit_code, 0) << regex.err;
  EXPECT_THAT(regex.out, HasSubstr("3.25ms"));
}

TEST(MetricsCommandTest, SaysWhatItLookedForWhenItFindsNothingAndRefusesBadInput) {
  TempDir tmp;
  const std::string file = tmp.Join("build.log");
  WriteFile(file, "-- Configuring done\n-- Generating done\n[100%] Built target lib\n");
  const Output none = Metrics({file});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_THAT(none.err, HasSubstr("Built target lib"));  // The output's tail, quoted.
  const Output missing = Metrics({tmp.Join("absent.log")});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("cannot read"));
  const Output bad = Metrics({"--suite", "json:results.latency_ms", file});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("*"));
  EXPECT_EQ(Metrics({"--suite", "auto", "--single", file}).exit_code, 2);  // Exclusive.
  EXPECT_EQ(Metrics({"--help"}).exit_code, 0);
}

// The real binary reads standard input and is listed in the usage.
TEST(MetricsCommandBinaryTest, ReadsStandardInputAndIsListed) {
  const char* bin_dir = std::getenv("KBISECT_BIN_DIR");
  ASSERT_NE(bin_dir, nullptr) << "run through ctest";
  const std::string kbisect = absl::StrCat(bin_dir, "/kbisect");
  const CommandResult help = RunShell(kbisect + " --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("kbisect metrics"));
  const CommandResult piped =
      RunShell(absl::StrCat("printf ", ShellQuote(kSuiteLog), " | ", kbisect, " metrics -"));
  EXPECT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_THAT(piped.out, HasSubstr("matmul_bf16"));
  EXPECT_THAT(piped.out, HasSubstr("3 metrics\n"));
}

}  // namespace
}  // namespace kbisect
