// Copyright 2026 The kbisect Authors.
#include "cli/find_good.h"

#include <string>

#include "absl/time/time.h"
#include "cli/job_options.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/git_fixture.h"

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

TEST(LookbackOutcomeTest, AMetricsStepCountsOnceInterleavedPairsHeldIt) {
  EXPECT_EQ(LookbackOutcome(Job(v1::JOB_STATE_QUEUED, v1::OUTCOME_RUNNING)), std::nullopt);
  EXPECT_EQ(LookbackOutcome(Job(v1::JOB_STATE_BASELINES, v1::OUTCOME_RUNNING)), std::nullopt);
  // The endpoints' step was measured at two moments: no verdict before the confirmation.
  EXPECT_EQ(LookbackOutcome(Job(v1::JOB_STATE_BISECTING, v1::OUTCOME_RUNNING)), std::nullopt);
  EXPECT_EQ(LookbackOutcome(Job(v1::JOB_STATE_CONFIRMING, v1::OUTCOME_RUNNING)), std::nullopt);
  v1::JobStatus confirmed = Job(v1::JOB_STATE_DONE, v1::OUTCOME_CULPRIT_FOUND);
  confirmed.mutable_confirmation()->set_confirmed(true);
  EXPECT_EQ(LookbackOutcome(confirmed), Outcome::kBetter);
  // Issue 46: 1.438 ms against 1.459 ms at two moments, refused by 56 interleaved pairs.
  v1::JobStatus refused = Job(v1::JOB_STATE_DONE, v1::OUTCOME_INCONCLUSIVE);
  refused.mutable_confirmation()->set_confirmed(false);
  refused.mutable_confirmation()->set_ratio(1.002);
  EXPECT_EQ(LookbackOutcome(refused), Outcome::kNotBetter);
  // Inconclusive for other reasons (noisy verdicts) still saw a step.
  EXPECT_EQ(LookbackOutcome(Job(v1::JOB_STATE_DONE, v1::OUTCOME_INCONCLUSIVE)), Outcome::kBetter);
  EXPECT_EQ(LookbackOutcome(Job(v1::JOB_STATE_DONE, v1::OUTCOME_NO_REGRESSION)),
            Outcome::kNotBetter);
  EXPECT_EQ(LookbackOutcome(Job(v1::JOB_STATE_FAILED, v1::OUTCOME_ERROR,
                                "GOOD and BAD look swapped: BAD is faster")),
            Outcome::kNotBetter);
  EXPECT_EQ(LookbackOutcome(
                Job(v1::JOB_STATE_FAILED, v1::OUTCOME_ERROR, "the build failed at GOOD (1234567)")),
            Outcome::kUntestable);
}

TEST(LookbackOutcomeTest, APassFailChecksSettledEndpointVerdictSays) {
  auto exit_code = [](v1::JobStatus job) {
    job.mutable_spec()->mutable_metric()->set_kind(v1::METRIC_KIND_EXIT_CODE);
    return job;
  };
  EXPECT_EQ(LookbackOutcome(exit_code(Job(v1::JOB_STATE_BASELINES, v1::OUTCOME_RUNNING))),
            std::nullopt);
  EXPECT_EQ(LookbackOutcome(exit_code(Job(v1::JOB_STATE_BISECTING, v1::OUTCOME_RUNNING))),
            Outcome::kBetter);
  // A step found between two GPUs steers the job's search, but is no verdict yet.
  v1::JobStatus provisional = exit_code(Job(v1::JOB_STATE_BISECTING, v1::OUTCOME_RUNNING));
  provisional.mutable_baseline()->set_provisional(true);
  EXPECT_EQ(LookbackOutcome(provisional), std::nullopt);
  EXPECT_EQ(LookbackOutcome(exit_code(Job(v1::JOB_STATE_CONFIRMING, v1::OUTCOME_RUNNING))),
            Outcome::kBetter);
  EXPECT_EQ(LookbackOutcome(exit_code(Job(v1::JOB_STATE_DONE, v1::OUTCOME_CULPRIT_FOUND))),
            Outcome::kBetter);
  EXPECT_EQ(LookbackOutcome(exit_code(Job(v1::JOB_STATE_FAILED, v1::OUTCOME_ERROR,
                                          "the check already fails at GOOD (1234567): exit 1"))),
            Outcome::kNotBetter);
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

TEST(ParseSinceTest, TakesDatesWithOrWithoutAZoneAndAges) {
  const absl::TimeZone utc = absl::UTCTimeZone();
  const absl::Time now = absl::FromUnixSeconds(1767225600 + 10 * 86400);  // 2026-01-11 00:00Z.
  auto at = [&](const std::string& text, absl::TimeZone zone) {
    absl::StatusOr<absl::Time> time = ParseSince(text, now, zone);
    EXPECT_TRUE(time.ok()) << text << ": " << time.status();
    return time.ok() ? absl::ToUnixSeconds(*time) : -1;
  };
  EXPECT_EQ(at("2026-01-01", utc), 1767225600);
  EXPECT_EQ(at("2026-01-01 01:30", utc), 1767225600 + 5400);
  EXPECT_EQ(at("2026-01-01 01:30:15", utc), 1767225600 + 5415);
  EXPECT_EQ(at("2026-01-01T01:30:15Z", absl::FixedTimeZone(3600)), 1767225600 + 5415);
  EXPECT_EQ(at("2026-01-01T01:30:15+01:00", utc), 1767225600 + 1815);
  EXPECT_EQ(at("2026-01-01 01:30 +0100", utc), 1767225600 + 1800);
  EXPECT_EQ(at("2026-01-01", absl::FixedTimeZone(3600)), 1767225600 - 3600)
      << "no zone: the one given (local time, as git's)";
  EXPECT_EQ(at("@1767225600", utc), 1767225600);
  EXPECT_EQ(at("14d", utc), absl::ToUnixSeconds(now) - 14 * 86400);
  EXPECT_EQ(at("1d12h", utc), absl::ToUnixSeconds(now) - 36 * 3600);
  for (const char* wrong : {"yesterday", "2026-13-01", "", "12"}) {
    absl::StatusOr<absl::Time> time = ParseSince(wrong, now, utc);
    EXPECT_EQ(time.status().code(), absl::StatusCode::kInvalidArgument) << wrong;
    EXPECT_THAT(time.status().message(), HasSubstr("--since expects a date")) << wrong;
  }
}

TEST(SinceReachTest, CountsTheFirstParentCommitsAtOrAfterTheDate) {
  testing::TempDir tmp("since-reach");
  testing::GitFixture git(tmp.Join("repo"));
  git.Init();
  // Ten commits, one day apart from 2026-01-01 00:00 UTC.
  for (int i = 0; i < 10; ++i) {
    git.SetNextTime(testing::GitFixture::kBaseTime + i * 86400, "+0000");
    git.Commit(absl::StrCat("commit ", i), {{"f", absl::StrCat(i)}});
  }
  const absl::Time day = absl::FromUnixSeconds(testing::GitFixture::kBaseTime);
  // HEAD is commit 9; HEAD~1 is day 8, ... HEAD~9 is day 0 (the root).
  auto reach = [&](absl::Time since, int max_lookback) {
    absl::StatusOr<int> r = SinceReach(git.path(), "HEAD", since, max_lookback);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : -1;
  };
  EXPECT_EQ(reach(day + absl::Hours(24 * 6), 100), 3) << "days 8, 7 and 6";
  EXPECT_EQ(reach(day + absl::Hours(24 * 6) + absl::Seconds(1), 100), 2);
  EXPECT_EQ(reach(day + absl::Hours(24 * 9), 100), 0) << "HEAD itself does not count";
  EXPECT_EQ(reach(day, 100), 9) << "down to the root";
  EXPECT_EQ(reach(day, 4), 4) << "at most --max-lookback";
  absl::StatusOr<int> via_url = SinceReach("file://" + git.path(), "HEAD~2", day, 100);
  ASSERT_TRUE(via_url.ok()) << via_url.status();
  EXPECT_EQ(*via_url, 7);

  absl::StatusOr<int> remote = SinceReach("https://example.com/repo.git", "HEAD", day, 100);
  EXPECT_EQ(remote.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(remote.status().message(), HasSubstr("--max-lookback"));
  absl::StatusOr<int> unknown = SinceReach(git.path(), "nope", day, 100);
  EXPECT_FALSE(unknown.ok());
}

TEST(FindGoodTextTest, NothingBetterSinceADateSaysSo) {
  FindGoodResult result;
  result.reach = 10;
  EXPECT_THAT(NothingBetterText(result, "HEAD"),
              HasSubstr("no commit within HEAD~1..HEAD~10 is better than HEAD"));
  EXPECT_THAT(NothingBetterText(result, "HEAD", "2026-01-04"),
              HasSubstr("HEAD~1..HEAD~10 (the commits since 2026-01-04) is better than HEAD"));
  EXPECT_THAT(NothingBetterText(result, "HEAD", "2026-01-04"), HasSubstr("an earlier --since"));
  EXPECT_THAT(NothingSinceText("14d", "main"), HasSubstr("as recent as --since 14d"));
}

}  // namespace
}  // namespace kbisect
