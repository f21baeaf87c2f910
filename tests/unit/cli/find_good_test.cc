// Copyright 2026 The kbisect Authors.
#include "cli/find_good.h"

#include <string>

#include "cli/job_options.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using ::testing::HasSubstr;
using Outcome = Lookback::Outcome;

v1::JobStatus Job(v1::JobState state, v1::Outcome outcome, const std::string& error = "") {
  v1::JobStatus job;
  job.set_state(state);
  job.set_status(outcome);
  job.set_error(error);
  return job;
}

TEST(LookbackOutcomeTest, TheEndpointVerdictOfEachLookbackJobSaysWhetherBadDIsBetter) {
  EXPECT_EQ(LookbackOutcome(Job(v1::JOB_STATE_BASELINES, v1::OUTCOME_RUNNING)), std::nullopt);
  EXPECT_EQ(LookbackOutcome(Job(v1::JOB_STATE_BISECTING, v1::OUTCOME_RUNNING)), Outcome::kBetter);
  EXPECT_EQ(LookbackOutcome(Job(v1::JOB_STATE_CONFIRMING, v1::OUTCOME_RUNNING)), Outcome::kBetter);
  EXPECT_EQ(LookbackOutcome(Job(v1::JOB_STATE_DONE, v1::OUTCOME_CULPRIT_FOUND)), Outcome::kBetter);
  EXPECT_EQ(LookbackOutcome(Job(v1::JOB_STATE_DONE, v1::OUTCOME_NO_REGRESSION)),
            Outcome::kNotBetter);
  EXPECT_EQ(LookbackOutcome(Job(v1::JOB_STATE_FAILED, v1::OUTCOME_ERROR,
                                "GOOD and BAD look swapped: BAD is faster")),
            Outcome::kNotBetter);
  EXPECT_EQ(LookbackOutcome(Job(v1::JOB_STATE_FAILED, v1::OUTCOME_ERROR,
                                "the check already fails at GOOD (1234567): exit 1")),
            Outcome::kNotBetter);
  EXPECT_EQ(LookbackOutcome(
                Job(v1::JOB_STATE_FAILED, v1::OUTCOME_ERROR, "the build failed at GOOD (1234567)")),
            Outcome::kUntestable);
}

TEST(FindGoodTextTest, SaysWhichGoodWasFoundAndHow) {
  FindGoodResult result;
  result.found = 32;
  result.largest_not_better = 16;
  result.jobs = 6;
  result.rounds = 2;
  EXPECT_EQ(FoundGoodText(result, "main"),
            "GOOD found by looking back: main~32 is better than main; main~16 is not, so the "
            "step is in main~32..main~16 (6 lookback jobs in 2 rounds). Bisecting main~32..main:");
  result.reach = 10;
  EXPECT_THAT(NothingBetterText(result, "HEAD"),
              HasSubstr("no commit within HEAD~1..HEAD~10 is better than HEAD"));
}

TEST(FindGoodOptionsTest, TheOneCommitGivenIsBad) {
  JobOptions options;
  options.bench_command = {"./bench.sh"};
  options.find_good = true;
  options.good = "nightly-17";  // The first positional.
  absl::StatusOr<v1::JobSpec> spec = ToJobSpec(options, "/repo");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->bad(), "nightly-17");
  EXPECT_EQ(spec->good(), "");
  options.bad = "HEAD";
  EXPECT_THAT(ToJobSpec(options, "/repo").status().message(),
              HasSubstr("--find-good takes one commit"));
  options = JobOptions();
  options.bench_command = {"./bench.sh"};
  EXPECT_THAT(ToJobSpec(options, "/repo").status().message(), HasSubstr("GOOD is required"));
}

}  // namespace
}  // namespace kbisect
