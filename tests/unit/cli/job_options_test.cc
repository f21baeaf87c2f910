// Copyright 2026 The kbisect Authors.
#include "cli/job_options.h"

#include <string>

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

}  // namespace
}  // namespace kbisect
