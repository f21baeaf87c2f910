// Copyright 2026 The kbisect Authors.
#include "coordinator/job/confirmation.h"

#include <cmath>
#include <set>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

TEST(SpeculationTest, OnlyInTheLastRoundEveryPossibleCulpritFromFirstBadDown) {
  BisectSearch search(100);
  ASSERT_TRUE(search.Record(40, v1::VERDICT_GOOD).ok());
  ASSERT_TRUE(search.Record(44, v1::VERDICT_BAD).ok());
  // 41, 42, 43 are left: nothing is in flight, so it is not the last round yet.
  EXPECT_TRUE(SpeculationCandidates(search, {}).empty());
  search.MarkInFlight(41);
  search.MarkInFlight(42);
  EXPECT_TRUE(SpeculationCandidates(search, {}).empty());  // 43 can still be placed.
  search.MarkInFlight(43);
  EXPECT_THAT(SpeculationCandidates(search, {}), ::testing::ElementsAre(44, 43, 42, 41));
  EXPECT_THAT(SpeculationCandidates(search, {44, 42}), ::testing::ElementsAre(43, 41));
  ASSERT_TRUE(search.Record(41, v1::VERDICT_GOOD).ok());
  ASSERT_TRUE(search.Record(42, v1::VERDICT_GOOD).ok());
  ASSERT_TRUE(search.Record(43, v1::VERDICT_GOOD).ok());
  ASSERT_TRUE(search.Done());
  EXPECT_TRUE(SpeculationCandidates(search, {}).empty());  // Done: the confirmation proper.
}

TEST(SpeculationTest, CheapestCandidatesFirstAndOnlyWhenAllTheirPairsFit) {
  const std::vector<SpeculationCandidate> candidates = {{44, 3}, {43, 1}, {42, 3}, {41, 0}};
  auto culprits = [](const std::vector<SpeculationCandidate>& chosen) {
    std::vector<int> out;
    for (const SpeculationCandidate& c : chosen) out.push_back(c.culprit);
    return out;
  };
  EXPECT_THAT(culprits(ChooseSpeculation(candidates, 1)), ::testing::ElementsAre(43));
  EXPECT_THAT(culprits(ChooseSpeculation(candidates, 3)), ::testing::ElementsAre(43));
  EXPECT_THAT(culprits(ChooseSpeculation(candidates, 4)), ::testing::ElementsAre(43, 44));
  EXPECT_THAT(culprits(ChooseSpeculation(candidates, 9)), ::testing::ElementsAre(43, 44, 42));
  EXPECT_TRUE(ChooseSpeculation(candidates, 0).empty());
}

TEST(SpeculationTest, PairsMeasuredAheadComeOffThePlan) {
  ConfirmationPlan plan;
  plan.tasks = 3;
  plan.pairs_per_task = 1;
  plan.reused_pairs = 2;
  ConfirmationPlan rest = LessSpeculativePairs(plan, 1);
  EXPECT_EQ(rest.tasks, 2);
  EXPECT_EQ(rest.pairs_per_task, 1);
  EXPECT_EQ(rest.reused_pairs, 2);
  EXPECT_EQ(LessSpeculativePairs(plan, 3).tasks, 0);
  EXPECT_EQ(LessSpeculativePairs(plan, 5).tasks, 0);
  plan.tasks = 2;
  plan.pairs_per_task = 3;  // 6 pairs, 1 measured: 5 left over 2 tasks.
  rest = LessSpeculativePairs(plan, 1);
  EXPECT_EQ(rest.tasks, 2);
  EXPECT_EQ(rest.pairs_per_task, 3);
}

TEST(ConfirmationTest, PairsFollowTheNoiseAgainstTheStep) {
  // No noise: the user's floor.
  EXPECT_EQ(ConfirmationPairsNeeded(0, 25, 3, 30), 3);
  EXPECT_EQ(ConfirmationPairsNeeded(0, 25, 1, 30), 1);
  // 1% noise against a 25% step: still the floor.
  EXPECT_EQ(ConfirmationPairsNeeded(1, 25, 3, 30), 3);
  // 5% noise against a 10% step: 2 * (4 * 1.2533 * 0.5)^2 = 12.6 -> 13 pairs.
  EXPECT_EQ(ConfirmationPairsNeeded(5, 10, 3, 30), 13);
  // Noise out of range (found while fixing tests/fuzz/task_result_fuzz's casts): everything,
  // never an undefined cast of an infinite or NaN count.
  EXPECT_EQ(ConfirmationPairsNeeded(1e300, 1e-300, 3, 30), 30);
  EXPECT_EQ(ConfirmationPairsNeeded(std::nan(""), 10, 3, 30), 30);
  // Never past max_runs; a zero step asks for everything.
  EXPECT_EQ(ConfirmationPairsNeeded(10, 10, 3, 30), 30);
  EXPECT_EQ(ConfirmationPairsNeeded(1, 0, 3, 30), 30);
}

TEST(ConfirmationTest, ATrySizesItsPairsForTheSmallestChangeItReports) {
  // A step larger than 2% of the base is its own size; a smaller one (none included) is 2%, or
  // --min-effect when larger, with the step's sign.
  EXPECT_DOUBLE_EQ(TryDetectableStep(5.0, 10.0, 0), 5.0);
  EXPECT_DOUBLE_EQ(TryDetectableStep(0.0, 10.0, 0), 0.2);
  EXPECT_DOUBLE_EQ(TryDetectableStep(-0.1, 10.0, 0), -0.2);
  EXPECT_DOUBLE_EQ(TryDetectableStep(0.1, 10.0, 0.05), 0.5);
  // So a try with no change still gets a finite number of pairs, the more the noisier.
  const int quiet = ConfirmationPairsNeeded(0.05, TryDetectableStep(0, 10, 0), 3, 60);
  const int noisy = ConfirmationPairsNeeded(0.1, TryDetectableStep(0, 10, 0), 3, 60);
  EXPECT_GE(quiet, 3);
  EXPECT_LT(quiet, noisy);
  EXPECT_LE(noisy, 60);
}

TEST(ConfirmationTest, ATryNamesNoChangeUnderHalfTheChangeItIsSizedFor) {
  // A bisect names a confirmed step from half of 1% (or of --min-effect); a try, from half of
  // 2% (or of --min-effect), so a 0.6% difference whose interval excludes 1 is no answer to
  // "does the change matter".
  EXPECT_DOUBLE_EQ(LeastNamedStep(/*is_try=*/false, 0), 0.005);
  EXPECT_DOUBLE_EQ(LeastNamedStep(/*is_try=*/true, 0), 0.01);
  EXPECT_DOUBLE_EQ(LeastNamedStep(/*is_try=*/true, 0.05), 0.025);
  std::vector<ConfirmationSet> sets(1);
  sets[0].interleaved = true;
  sets[0].last_good = {1.455, 1.448, 1.457, 1.452, 1.451, 1.456, 1.450};
  sets[0].culprit = {1.442, 1.446, 1.452, 1.443, 1.444, 1.447, 1.441};
  EXPECT_TRUE(JudgeConfirmationSets(sets, false, LeastNamedStep(false, 0)).confirmed);
  const ConfirmationJudgement as_try = JudgeConfirmationSets(sets, false, LeastNamedStep(true, 0));
  EXPECT_FALSE(as_try.confirmed);
  EXPECT_TRUE(as_try.below_minimum);
}

TEST(ConfirmationTest, NegligibleNoiseReusesTheSearchsSamplesAndRunsNothing) {
  const ConfirmationPlan plan = PlanConfirmation(3, 3, 0.1, 25, 7);
  EXPECT_EQ(plan.tasks, 0);
  EXPECT_EQ(plan.reused_pairs, 3);
}

TEST(ConfirmationTest, ReusedPairsStillNeedOneFreshPairWhenTheNoiseIsNot) {
  const ConfirmationPlan plan = PlanConfirmation(3, 3, 1, 25, 7);
  EXPECT_EQ(plan.tasks, 1);
  EXPECT_EQ(plan.pairs_per_task, 1);
}

TEST(ConfirmationTest, FreshPairsAreSpreadOverTheWorkers) {
  const ConfirmationPlan seven = PlanConfirmation(13, 0, 5, 10, 7);
  EXPECT_EQ(seven.tasks, 7);
  EXPECT_EQ(seven.pairs_per_task, 2);  // 14 >= 13 pairs, one task per worker.
  const ConfirmationPlan one = PlanConfirmation(3, 0, 1, 25, 1);
  EXPECT_EQ(one.tasks, 1);
  EXPECT_EQ(one.pairs_per_task, 3);
  const ConfirmationPlan few = PlanConfirmation(2, 0, 1, 25, 7);
  EXPECT_EQ(few.tasks, 2);
  EXPECT_EQ(few.pairs_per_task, 1);
}

TEST(ConfirmationTest, EachWorkersOffsetCancels) {
  // w0 measures 100 -> 125, w1 is 35% slower: 135 -> 168.75. Pooled raw, the ratio would be
  // muddled; normalised per set it is 1.25 on both.
  std::vector<ConfirmationSet> sets = {
      {"w0", {100, 100.5, 99.5}, {125, 125.5, 124.5}, true, "", ""},
      {"w1", {135, 135.5, 134.5}, {168.75, 169.2, 168.3}, true, "", ""},
  };
  const ConfirmationJudgement judgement = JudgeConfirmationSets(sets, /*worse_is_up=*/true, 0.005);
  ASSERT_TRUE(judgement.measured);
  EXPECT_NEAR(judgement.ratio, 1.25, 0.01);
  EXPECT_GT(judgement.ci_low, 1.2);
  EXPECT_TRUE(judgement.confirmed);
}

TEST(ConfirmationTest, ReusedSamplesAloneCanConfirm) {
  std::vector<ConfirmationSet> sets = {{"w0", {100, 100, 100}, {125, 125, 125}, false, "", ""}};
  EXPECT_TRUE(JudgeConfirmationSets(sets, true, 0.005).confirmed);
}

TEST(ConfirmationTest, ReusedSamplesCannotConfirmAStepTheFreshPairsDoNotShow) {
  std::vector<ConfirmationSet> sets = {
      {"w0", {100, 100, 100, 100, 100, 100}, {125, 125, 125, 125, 125, 125}, false, "", ""},
      {"w1", {100, 101, 99}, {100.5, 99.5, 100}, true, "", ""},
  };
  EXPECT_FALSE(JudgeConfirmationSets(sets, true, 0.005).confirmed);
}

TEST(ConfirmationTest, AnImprovementIsNotAConfirmedRegression) {
  std::vector<ConfirmationSet> sets = {{"w0", {100, 101, 99}, {80, 81, 79}, true, "", ""}};
  EXPECT_FALSE(JudgeConfirmationSets(sets, /*worse_is_up=*/true, 0.005).confirmed);
  EXPECT_TRUE(JudgeConfirmationSets(sets, /*worse_is_up=*/false, 0.005).confirmed);
}

// Issue 46: a drifting machine's 3% offset between two baselines, then 57 interleaved pairs at
// x1.001 whose interval barely excludes 1. A step under half the minimum effect is no regression.
TEST(ConfirmationTest, AStepUnderHalfTheMinimumEffectIsAResidueNotARegression) {
  std::vector<ConfirmationSet> sets = {{"w0", {}, {}, true, "", ""}};
  for (int i = 0; i < 57; ++i) {
    sets[0].last_good.push_back(1.440 + 0.0001 * (i % 5));
    sets[0].culprit.push_back(1.4415 + 0.0001 * (i % 5));
  }
  const ConfirmationJudgement judgement =
      JudgeConfirmationSets(sets, /*worse_is_up=*/true, MinimumConfirmedStep(0));
  ASSERT_TRUE(judgement.measured);
  EXPECT_GT(judgement.ci_low, 1);  // The interval alone would have confirmed it.
  EXPECT_FALSE(judgement.confirmed);
  EXPECT_TRUE(judgement.below_minimum);
  // The least step named is half of --min-effect, never under half of 1%.
  EXPECT_DOUBLE_EQ(MinimumConfirmedStep(0), 0.005);
  EXPECT_DOUBLE_EQ(MinimumConfirmedStep(0.05), 0.025);
  // A 1% step over the same pairs is confirmed.
  for (double& value : sets[0].culprit) value *= 1.009;
  EXPECT_TRUE(JudgeConfirmationSets(sets, true, MinimumConfirmedStep(0)).confirmed);
}

}  // namespace
}  // namespace kbisect
