// Copyright 2026 The kbisect Authors.
#include "cli/job_options.h"

#include <string>

#include "CLI/CLI.hpp"
#include "gtest/gtest.h"

namespace kbisect {
namespace {
#include "common/flags/flag_checks.h"
#include "gmock/gmock.h"

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

TEST(JobOptionsTest, ConfidenceWithAMetricLeavesMaxRunsToItsDefault) {
  JobOptions options = Minimal();
  absl::StatusOr<v1::JobSpec> spec = ToJobSpec(options, "/repo");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->confidence(), 0) << "off by default with a metric";
  EXPECT_EQ(spec->max_runs(), kDefaultMaxRuns);

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

}  // namespace
}  // namespace kbisect
