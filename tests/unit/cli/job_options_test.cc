// Copyright 2026 The kbisect Authors.
#include "cli/job_options.h"

#include <algorithm>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "common/flags/flag_checks.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

JobOptions Minimal() {
  JobOptions options;
  options.good = "v1.0";
  options.bench_command = {"./bench.sh"};
  return options;
}

TEST(JobOptionsTest, TheResultCacheIsOnByDefaultWithSevenDays) {
  absl::StatusOr<v1::JobSpec> spec = ToJobSpec(Minimal(), "/repo");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_FALSE(spec->no_cache());
  EXPECT_FALSE(spec->has_cache_max_age()) << "unset: the coordinator's kDefaultCacheMaxAge";
}

TEST(JobOptionsTest, NoCacheAndCacheMaxAgeReachTheSpec) {
  JobOptions options = Minimal();
  options.no_cache = true;
  options.cache_max_age = "1d12h";
  absl::StatusOr<v1::JobSpec> spec = ToJobSpec(options, "/repo");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec->no_cache());
  EXPECT_EQ(spec->cache_max_age().seconds(), 36 * 3600);
}

TEST(JobOptionsTest, AMalformedCacheMaxAgeSaysWhatItExpects) {
  JobOptions options = Minimal();
  options.cache_max_age = "a week";
  absl::StatusOr<v1::JobSpec> spec = ToJobSpec(options, "/repo");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(spec.status().message().find("--cache-max-age"), std::string::npos);
  EXPECT_NE(spec.status().message().find("7d"), std::string::npos);
}

TEST(JobOptionsTest, DescentFlagsReachTheSpec) {
  CLI::App app;
  JobOptions options;
  AddJobOptions(&app, &options);
  const char* argv[] = {"kbisect",
                        "v1.0",
                        "--descend-submodules",
                        "--descend-pin",
                        "cmake/llvm-hash.txt=https://github.com/llvm/llvm-project",
                        "--descend-pin",
                        ".ci/docker/ci_commit_pins/triton.txt=/"};
  app.parse(7, argv);
  options.bench_command = {"./bench.sh"};
  absl::StatusOr<v1::JobSpec> spec = ToJobSpec(options, "/repo");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec->descend_submodules());
  ASSERT_EQ(spec->descend_pins_size(), 2);
  EXPECT_EQ(spec->descend_pins(0).file(), "cmake/llvm-hash.txt");
  EXPECT_EQ(spec->descend_pins(0).repository(), "https://github.com/llvm/llvm-project");
  EXPECT_EQ(spec->descend_pins(1).file(), ".ci/docker/ci_commit_pins/triton.txt");
  EXPECT_EQ(spec->descend_pins(1).repository(), "/");  // A local path, absolute.
}

TEST(JobOptionsTest, ADescendPinWithoutBothHalvesSaysWhatItExpects) {
  for (const char* bad : {"pins/llvm.txt", "=https://example.com/x.git", "pins/llvm.txt="}) {
    JobOptions options = Minimal();
    options.descend_pins = {bad};
    absl::StatusOr<v1::JobSpec> spec = ToJobSpec(options, "/repo");
    ASSERT_FALSE(spec.ok()) << bad;
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(spec.status().message()), ::testing::HasSubstr("FILE=REPOSITORY"));
  }
}

TEST(JobOptionsTest, FlakyLeavesUnsetRunCountsToItsDefaults) {
  JobOptions options = Minimal();
  options.exit_code = true;
  options.flaky = true;
  absl::StatusOr<v1::JobSpec> spec = ToJobSpec(options, "/repo");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec->flaky());
  EXPECT_EQ(spec->metric().kind(), v1::METRIC_KIND_EXIT_CODE);
  EXPECT_EQ(spec->runs_per_commit(), 0) << "NormalizeSpec's --flaky default";
  EXPECT_EQ(spec->max_runs(), 0);
  EXPECT_EQ(spec->confidence(), 0);

  options.runs = 6;
  options.runs_given = true;
  options.confidence = 0.95;
  spec = ToJobSpec(options, "/repo");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->runs_per_commit(), 6);
  EXPECT_EQ(spec->max_runs(), 0) << "--max-runs not given: --flaky's default";
  EXPECT_DOUBLE_EQ(spec->confidence(), 0.95);
}

// --runs left out is left unset for NormalizeSpec, which marks it as the default (decision
// 229); given, even at 3, it is the spec's count. A plain --exit-code keeps --runs' 3.
TEST(JobOptionsTest, RunsLeftOutAreLeftToTheDefault) {
  JobOptions options = Minimal();
  absl::StatusOr<v1::JobSpec> spec = ToJobSpec(options, "/repo");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->runs_per_commit(), 0);

  options.runs = 3;
  options.runs_given = true;
  spec = ToJobSpec(options, "/repo");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->runs_per_commit(), 3);

  JobOptions pass_fail = Minimal();
  pass_fail.exit_code = true;
  spec = ToJobSpec(pass_fail, "/repo");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->runs_per_commit(), kDefaultRunsPerCommit);
}

TEST(JobOptionsTest, ConfidenceWithAMetricLeavesMaxRunsToItsDefault) {
  JobOptions options = Minimal();
  absl::StatusOr<v1::JobSpec> spec = ToJobSpec(options, "/repo");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->confidence(), 0) << "NormalizeSpec's default (0.99 with a metric)";
  EXPECT_FALSE(spec->confidence_off());
  EXPECT_EQ(spec->max_runs(), 0) << "NormalizeSpec's --confidence default";

  options.confidence = 0.99;
  spec = ToJobSpec(options, "/repo");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_DOUBLE_EQ(spec->confidence(), 0.99);
  EXPECT_EQ(spec->max_runs(), 0) << "NormalizeSpec's --confidence default";

  options.max_runs = 40;
  options.max_runs_given = true;
  spec = ToJobSpec(options, "/repo");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->max_runs(), 40);

  JobOptions off = Minimal();
  off.confidence_off = true;
  spec = ToJobSpec(off, "/repo");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec->confidence_off());
  EXPECT_EQ(spec->max_runs(), kDefaultMaxRuns) << "no end check to make room for";
  off.exit_code = true;
  off.flaky = true;
  spec = ToJobSpec(off, "/repo");
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);

  // A plain pass/fail result is taken as certain: nothing to be sure of.
  options.exit_code = true;
  spec = ToJobSpec(options, "/repo");
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(spec.status().message().find("--flaky"), std::string::npos);
}

TEST(JobOptionsTest, ConfidenceIsParsedUnderItsOldNameToo) {
  for (const char* name : {"--confidence", "--flaky-confidence"}) {
    CLI::App app;
    JobOptions options;
    AddJobOptions(&app, &options);
    const char* argv[] = {"kbisect", "v1.0", name, "0.95"};
    app.parse(4, argv);
    EXPECT_DOUBLE_EQ(options.confidence, 0.95) << name;
  }
  CLI::App app;
  JobOptions options;
  AddJobOptions(&app, &options);
  const char* too_low[] = {"kbisect", "v1.0", "--confidence", "0.3"};
  EXPECT_THROW(app.parse(4, too_low), CLI::ParseError);
}

TEST(JobOptionsTest, ConfidenceOffIsParsed) {
  CLI::App app;
  JobOptions options;
  AddJobOptions(&app, &options);
  const char* argv[] = {"kbisect", "v1.0", "--confidence", "off"};
  app.parse(4, argv);
  EXPECT_TRUE(options.confidence_off);
  EXPECT_EQ(options.confidence, 0);
}

TEST(JobOptionsTest, FlakyNeedsExitCodeOnTheCommandLine) {
  CLI::App app;
  JobOptions options;
  AddJobOptions(&app, &options);
  const char* without[] = {"kbisect", "v1.0", "--flaky"};
  EXPECT_THROW(app.parse(3, without), CLI::ParseError);
  CLI::App again;
  JobOptions parsed;
  AddJobOptions(&again, &parsed);
  const char* with[] = {"kbisect", "v1.0", "--exit-code", "--flaky", "--max-runs", "50"};
  again.parse(6, with);
  EXPECT_TRUE(parsed.flaky);
  EXPECT_TRUE(parsed.max_runs_given);
  EXPECT_FALSE(parsed.runs_given);
  EXPECT_EQ(parsed.max_runs, 50);
}

// A --metric that does not compile is refused by ToJobSpec, before `kbisect run` starts a
// cluster or `kbisect submit` dials a coordinator, with the user's own pattern and real flags.
TEST(JobOptionsTest, ABadMetricIsAUsageErrorInTheUsersWords) {
  JobOptions options = Minimal();
  options.metric_regex = "(";
  absl::StatusOr<v1::JobSpec> spec = ToJobSpec(options, "/repo");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message(spec.status().message());
  EXPECT_THAT(message, ::testing::StartsWith("invalid metric regex '(': missing ): (. "));
  EXPECT_THAT(message, ::testing::HasSubstr("Give --metric an RE2 regex"));
  EXPECT_THAT(message, ::testing::HasSubstr("--metric-json a dotted path"));
  EXPECT_THAT(message, ::testing::Not(::testing::HasSubstr("(?m)")));
  EXPECT_THAT(message, ::testing::Not(::testing::HasSubstr("--metric-regex")));

  options.metric_regex = "";
  options.metric_json = "results..latency";
  spec = ToJobSpec(options, "/repo");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(spec.status().message(), ::testing::HasSubstr("'results..latency'"));
}

// Every numeric job flag says its range as a person would write it (common/flags).
TEST(JobOptionsTest, OutOfRangeFlagsReadAsSentences) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--timeout", "-5"}, "kbisect run: --timeout must be positive (seconds), not -5\n"},
      {{"--build-timeout", "0"},
       "kbisect run: --build-timeout must be positive (seconds), not 0\n"},
      {{"--runs", "0"}, "kbisect run: --runs must be a whole number from 1 to 1000, not 0\n"},
      {{"--max-runs", "1001"},
       "kbisect run: --max-runs must be a whole number from 1 to 1000, not 1001\n"},
      {{"--threshold", "1"},
       "kbisect run: --threshold must be a number from 0.01 to 0.99, not 1\n"},
      {{"--min-effect", "-1"}, "kbisect run: --min-effect must be a number from 0 to 10, not -1\n"},
      {{"--workers", "0"}, "kbisect run: --workers must be a whole number from 1 to 256, not 0\n"},
      {{"--confidence", "0.3"},
       "kbisect run: --confidence must be a number from 0.5 to 0.9999 or off, not 0.3\n"},
      {{"--find-good", "--max-lookback", "0"},
       "kbisect run: --max-lookback must be a whole number from 1 to 1000000 (commits back), not "
       "0\n"},
  };
  for (const auto& [flags, expected] : cases) {
    CLI::App app{"run", "kbisect run"};
    JobOptions options;
    AddJobOptions(&app, &options);
    std::vector<std::string> args = {"v1.0"};
    args.insert(args.end(), flags.begin(), flags.end());
    std::reverse(args.begin(), args.end());
    std::ostringstream err;
    int code = -1;
    try {
      app.parse(args);
    } catch (const CLI::ParseError& e) {
      code = ReportParseError(app, e, err);
    }
    EXPECT_EQ(code, 2) << flags[0];
    EXPECT_EQ(err.str(), expected + "Run `kbisect run --help` for usage.\n");
  }
}

}  // namespace
}  // namespace kbisect
