// Copyright 2026 The kbisect Authors.
//
// SearchResult on its own: a probe table, a calibration and a ledger built by hand, no job. The
// interval and the step's share of the whole move, a culprit with its cause and probability, a
// range of candidates, and an answer left inconclusive by too many skips.
#include "coordinator/job/search_result.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "tests/unit/coordinator/bisect_job_testing.h"

namespace kbisect {
namespace {

using ::kbisect::bisect_job_testing::FinishWithSamples;

constexpr int kCommits = 16;

class SearchResultTest : public ::testing::Test, protected bisect_job_testing::JobPartsFixture {
 protected:
  SearchResultTest()
      : JobPartsFixture(kCommits),
        result_(&frame_, &book_.rows(), &commits_, &calibration_, &ledger_, &confirmation_) {
    frame_.state = v1::JOB_STATE_BISECTING;
    frame_.direction = v1::DIRECTION_LOWER_IS_BETTER;
    frame_.good_sha = commits_.front().sha();
    frame_.bad_sha = commits_.back().sha();
    // The baselines on worker w0: GOOD 100, BAD 130.
    const int good = FinishWithSamples(&book_, book_.NewTask(v1::PROBE_KIND_BASELINE_GOOD, 0, 0),
                                       "w0", {100, 100.5, 99.5});
    calibration_.worker("w0").calibration = good;
    calibration_.worker("w0").checked_out = 0;
    calibration_.SetReference("w0", good);
    calibration_.SetBadProbe(
        FinishWithSamples(&book_, book_.NewTask(v1::PROBE_KIND_BASELINE_BAD, kCommits, 0), "w0",
                          {130, 130.5, 129.5}));
    frame_.recorded.baselines.mutable_good()->set_median(100);
    frame_.recorded.baselines.mutable_bad()->set_median(130);
  }

  // A bisect probe of commit `index` on w0 at `value`, judged `verdict`.
  void Judged(int index, double value, v1::Verdict verdict) {
    const int row = FinishWithSamples(&book_, book_.NewTask(v1::PROBE_KIND_BISECT, index, 1), "w0",
                                      {value, value + 0.2, value - 0.2});
    ASSERT_TRUE(ledger_.Record(row, verdict));
    book_.mutable_probe(row).set_verdict(verdict);
  }

  SearchResult result_;
};

TEST_F(SearchResultTest, OneStepIsTheCulpritWithItsShareCauseAndProbability) {
  Judged(7, 100, v1::VERDICT_GOOD);
  Judged(8, 130, v1::VERDICT_BAD);
  ASSERT_TRUE(ledger_.search().Done());
  EXPECT_TRUE(result_.RecordInterval().empty());
  const SearchAnswer& answer = result_.answer();
  ASSERT_TRUE(answer.last_good.has_value());
  EXPECT_EQ(answer.last_good->index(), 7);
  ASSERT_EQ(answer.candidates.size(), 1u);
  EXPECT_EQ(answer.candidates[0], commits_[8].sha());
  EXPECT_NEAR(answer.before, 100, 1e-9);
  EXPECT_NEAR(answer.after, 130, 1e-9);
  EXPECT_NEAR(answer.culprit_regression_pct, 30, 1e-9);
  ASSERT_EQ(answer.culprits.size(), 1u);
  EXPECT_NEAR(answer.culprits[0].share_of_total(), 1, 1e-9);
  EXPECT_FALSE(answer.multiple_steps);

  const SearchResult::Conclusion conclusion = result_.Conclude();
  EXPECT_EQ(conclusion.outcome, v1::OUTCOME_CULPRIT_FOUND);
  EXPECT_TRUE(conclusion.error.empty());
  ASSERT_TRUE(answer.culprit.has_value());
  EXPECT_EQ(answer.culprit->sha(), commits_[8].sha());
  EXPECT_EQ(answer.cause, v1::CAUSE_REAL_REGRESSION);
  EXPECT_GT(answer.culprit_probability, 0.5);
  EXPECT_FALSE(answer.culprit_posterior.empty());
}

TEST_F(SearchResultTest, AStepThatExplainsTooLittleSuggestsSeveral) {
  Judged(7, 100, v1::VERDICT_GOOD);
  Judged(8, 110, v1::VERDICT_BAD);
  EXPECT_EQ(result_.RecordInterval().size(), 1u) << "the several steps' warning";
  ASSERT_EQ(result_.answer().culprits.size(), 1u);
  EXPECT_NEAR(result_.answer().culprits[0].share_of_total(), 1.0 / 3, 1e-9);
  EXPECT_TRUE(result_.answer().multiple_steps);
}

TEST_F(SearchResultTest, SkipsLeaveARangeAndTooManyAnInconclusiveAnswer) {
  Judged(4, 100, v1::VERDICT_GOOD);
  Judged(7, 130, v1::VERDICT_BAD);
  Judged(5, 0, v1::VERDICT_SKIP);
  Judged(6, 0, v1::VERDICT_SKIP);
  ASSERT_TRUE(ledger_.search().Done());
  result_.RecordInterval();
  EXPECT_EQ(result_.answer().candidates.size(), 3u);
  EXPECT_TRUE(result_.answer().culprits.empty()) << "no single step";
  EXPECT_EQ(result_.Conclude().outcome, v1::OUTCOME_CANDIDATES_FOUND);
  EXPECT_EQ(result_.answer().cause, v1::CAUSE_REAL_REGRESSION);
  EXPECT_FALSE(result_.answer().culprit.has_value());
}

TEST_F(SearchResultTest, MoreCandidatesThanReportedAreInconclusive) {
  for (int index = 1; index < kCommits; ++index) Judged(index, 0, v1::VERDICT_SKIP);
  ASSERT_TRUE(ledger_.search().Done());
  ASSERT_GT(static_cast<int>(ledger_.search().Candidates().size()),
            SearchResult::kMaxReportedCandidates);
  const SearchResult::Conclusion conclusion = result_.Conclude();
  EXPECT_EQ(conclusion.outcome, v1::OUTCOME_INCONCLUSIVE);
  EXPECT_FALSE(conclusion.error.empty());
  EXPECT_FALSE(result_.answer().culprit.has_value());
}

}  // namespace
}  // namespace kbisect
