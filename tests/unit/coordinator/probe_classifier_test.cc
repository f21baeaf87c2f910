// Copyright 2026 The kbisect Authors.
#include "coordinator/job/probe_classifier.h"

#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using ::testing::HasSubstr;

std::vector<double> Gaussian(double mean, double sd, int n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(mean, sd);
  std::vector<double> out;
  for (int i = 0; i < n; ++i) out.push_back(noise(rng));
  return out;
}

TEST(ProbeClassifierTest, ClearSamplesDecideAfterThreeRuns) {
  const std::vector<double> good = {1.00, 1.01, 0.99, 1.00, 1.01, 0.99};
  const std::vector<double> bad = {1.50, 1.51, 1.49, 1.50, 1.51, 1.49};
  ClassifierOptions options;
  EXPECT_EQ(ClassifyProbe({1.0, 1.005, 0.995}, good, bad, options).verdict, v1::VERDICT_GOOD);
  EXPECT_EQ(ClassifyProbe({1.5, 1.505, 1.495}, good, bad, options).verdict, v1::VERDICT_BAD);
}

// Found by tests/fuzz/task_result_fuzz: with noise a million times the step, the runs the missing
// evidence needs passed INT_MAX and their cast to int was undefined. They are capped as before.
TEST(ProbeClassifierTest, NoiseFarAboveTheStepAsksForAtMostTwiceTheRuns) {
  const std::vector<double> good = {1.0, 1e6, -1e6, 1.0, 1e6, -1e6};
  const std::vector<double> bad = {1.1, 1e6, -1e6, 1.1, 1e6, -1e6};
  ClassifierOptions options;
  const ProbeClassification c = ClassifyProbe({1.05, 1e6, -1e6}, good, bad, options);
  EXPECT_EQ(c.verdict, v1::VERDICT_UNSPECIFIED) << c.reason;
  EXPECT_GE(c.more_runs, 2) << c.reason;
  EXPECT_LE(c.more_runs, 3) << c.reason;
}

TEST(ProbeClassifierTest, UnclearSamplesAskForAsManyRunsAsTheMissingEvidenceNeeds) {
  // GOOD 1.0, BAD 1.1, 5% noise: one step is two standard deviations, about two units of
  // evidence per run. Three runs near the midpoint leave most of the 7 units missing.
  const std::vector<double> good = Gaussian(1.0, 0.05, 20, 1);
  const std::vector<double> bad = Gaussian(1.1, 0.05, 20, 2);
  ClassifierOptions options;
  const ProbeClassification c = ClassifyProbe({1.05, 1.06, 1.04}, good, bad, options);
  EXPECT_EQ(c.verdict, v1::VERDICT_UNSPECIFIED);
  EXPECT_GE(c.more_runs, 2);
  EXPECT_LE(c.more_runs, 3) << "at most twice as many runs as so far";
  EXPECT_THAT(c.reason, HasSubstr("more runs"));
  // Twelve runs that still sit on the midpoint ask for at most twelve more, never past max_runs.
  options.max_runs = 20;
  const ProbeClassification capped =
      ClassifyProbe(std::vector<double>(12, 1.05), good, bad, options);
  EXPECT_EQ(capped.verdict, v1::VERDICT_UNSPECIFIED);
  EXPECT_GT(capped.more_runs, 0);
  EXPECT_LE(capped.more_runs, 8);
}

TEST(ProbeClassifierTest, APartialStepIsMeasuredToMaxRunsAndJudgedByTheThreshold) {
  // The commit sits at 40% of the step: the evidence leans GOOD (under the midpoint) but the
  // seed's 30% threshold says BAD, and the samples are tight enough to be sure of that.
  const std::vector<double> good = {1.000, 1.001, 0.999, 1.000, 1.001, 0.999};
  const std::vector<double> bad = {2.000, 2.001, 1.999, 2.000, 2.001, 1.999};
  const std::vector<double> partial = {1.40, 1.401, 1.399, 1.40, 1.401, 1.399};
  ClassifierOptions options;
  options.max_runs = 12;
  const ProbeClassification early = ClassifyProbe(partial, good, bad, options);
  EXPECT_EQ(early.verdict, v1::VERDICT_UNSPECIFIED) << early.reason;
  EXPECT_GT(early.more_runs, 0);
  std::vector<double> full = partial;
  full.insert(full.end(), partial.begin(), partial.end());
  const ProbeClassification late = ClassifyProbe(full, good, bad, options);
  EXPECT_EQ(late.verdict, v1::VERDICT_BAD);
  EXPECT_THAT(late.reason, HasSubstr("partial step"));
}

TEST(ProbeClassifierTest, SingleStepNoiseNearTheThresholdIsJudgedByTheEvidence) {
  // A GOOD commit whose three noisy runs put the median just past the 30% threshold: the
  // evidence (under the midpoint) decides GOOD rather than the point rule.
  const std::vector<double> good = Gaussian(1.0, 0.05, 24, 3);
  const std::vector<double> bad = Gaussian(1.1, 0.05, 24, 4);
  std::vector<double> probe = Gaussian(1.0, 0.05, 12, 5);
  probe.push_back(1.035);
  probe.push_back(1.036);
  probe.push_back(1.034);
  ClassifierOptions options;
  ProbeClassification c = ClassifyProbe(probe, good, bad, options);
  for (int round = 0; c.more_runs > 0 && round < 5; ++round) {
    const std::vector<double> more = Gaussian(1.0, 0.05, c.more_runs, 10 + round);
    probe.insert(probe.end(), more.begin(), more.end());
    c = ClassifyProbe(probe, good, bad, options);
  }
  EXPECT_EQ(c.verdict, v1::VERDICT_GOOD) << c.reason;
}

// Found by tests/fuzz/task_result_fuzz: a spread too large for a double made the number of runs
// wanted infinite, and its cast to int undefined. Such baselines ask for as many runs as allowed.
TEST(ProbeClassifierTest, BaselinesWithAnOverflowingSpreadAskForTheMostRuns) {
  const BaselineAssessment wild =
      AssessBaselines({1.0, 1.0, 1.0, 1e300, -1e300}, {1.1, 1.1, 1.1, 1e300, -1e300},
                      v1::DIRECTION_LOWER_IS_BETTER, 0.0);
  EXPECT_FALSE(wild.regression);
  EXPECT_EQ(wild.more_runs, 5) << wild.reason;
}

TEST(ProbeClassifierTest, BaselinesNeedRunsUntilTheMidpointIsSharp) {
  // Three runs each, 10% apart with 5% noise: too thin to place the midpoint.
  const BaselineAssessment thin = AssessBaselines(
      Gaussian(1.0, 0.05, 3, 6), Gaussian(1.1, 0.05, 3, 7), v1::DIRECTION_LOWER_IS_BETTER, 0.0);
  EXPECT_FALSE(thin.regression);
  EXPECT_GE(thin.more_runs, 2);
  EXPECT_LE(thin.more_runs, 3);
  EXPECT_THAT(thin.reason, HasSubstr("standard errors apart"));
  // Thirty runs each: clear, and the 10% regression is reported.
  const BaselineAssessment sharp = AssessBaselines(
      Gaussian(1.0, 0.05, 30, 8), Gaussian(1.1, 0.05, 30, 9), v1::DIRECTION_LOWER_IS_BETTER, 0.0);
  EXPECT_TRUE(sharp.regression) << sharp.reason;
  EXPECT_EQ(sharp.more_runs, 0);
  EXPECT_NEAR(sharp.regression_pct, 10, 3);
  // Five runs each of a deterministic benchmark: clear at once.
  const BaselineAssessment quiet =
      AssessBaselines({1.0, 1.001, 0.999, 1.0, 1.0}, {1.2, 1.201, 1.199, 1.2, 1.2},
                      v1::DIRECTION_LOWER_IS_BETTER, 0.0);
  EXPECT_TRUE(quiet.regression);
}

TEST(ProbeClassifierTest, OffsetsCountOnlyWhenClear) {
  const std::vector<double> reference = Gaussian(1.0, 0.05, 20, 11);
  // Three runs 4% off with 5% noise: not significant, the worker joins the pool.
  EXPECT_FALSE(OffsetIsSignificant({1.04, 1.09, 0.99}, reference));
  // Ten tight runs 10% off: significant.
  EXPECT_TRUE(OffsetIsSignificant(Gaussian(1.1, 0.01, 10, 12), Gaussian(1.0, 0.01, 10, 13)));
  // Quarantine needs the offset to exceed the limit by two standard errors.
  EXPECT_FALSE(OffsetExceeds({0.94, 0.95, 0.93}, reference, 1.0, 0.033))
      << "three noisy runs 6% low are not clearly past a 3.3% limit";
  EXPECT_TRUE(OffsetExceeds({1.30, 1.31, 1.29}, reference, 1.0, 0.1));
}

TEST(ProbeClassifierTest, ConfirmationNeedsTheIntervalToExcludeNoChangeOnTheRegressionSide) {
  const std::vector<double> last_good = Gaussian(1.0, 0.01, 6, 21);
  const std::vector<double> culprit = Gaussian(1.3, 0.01, 6, 22);
  const ConfirmationJudgement up = JudgeConfirmation(last_good, culprit, /*worse_is_up=*/true);
  ASSERT_TRUE(up.measured);
  EXPECT_TRUE(up.confirmed);
  EXPECT_NEAR(up.ratio, 1.3, 0.03);
  EXPECT_GT(up.ci_low, 1.0);
  EXPECT_LT(up.ci_low, up.ratio);
  EXPECT_GT(up.ci_high, up.ratio);
  // The same step against a regression that lowers the metric is not confirmed.
  EXPECT_FALSE(JudgeConfirmation(last_good, culprit, /*worse_is_up=*/false).confirmed);
  // No step: not confirmed either way.
  EXPECT_FALSE(JudgeConfirmation(last_good, Gaussian(1.0, 0.01, 6, 23), true).confirmed);
  // A side without samples measures nothing.
  EXPECT_FALSE(JudgeConfirmation({}, culprit, true).measured);
  // Fixed seed: the same samples give the same interval.
  EXPECT_EQ(JudgeConfirmation(last_good, culprit, true).ci_low, up.ci_low);
}

TEST(ProbeClassifierTest, RepeatsABaselineOnlyWhereEveryValueIsExact) {
  const std::vector<double> good = {100, 100, 100};
  const std::vector<double> bad = {130, 130, 130};
  EXPECT_TRUE(RepeatsABaseline({130}, good, bad));
  EXPECT_TRUE(RepeatsABaseline({100, 100}, good, bad));
  EXPECT_FALSE(RepeatsABaseline({110}, good, bad));           // a partial step
  EXPECT_FALSE(RepeatsABaseline({100, 130}, good, bad));      // one of each
  EXPECT_FALSE(RepeatsABaseline({100}, {100, 100.5}, bad));   // GOOD has spread
  EXPECT_FALSE(RepeatsABaseline({100}, good, {130, 129.9}));  // BAD has spread
  EXPECT_FALSE(RepeatsABaseline({100}, good, good));          // no step
  EXPECT_FALSE(RepeatsABaseline({}, good, bad));
}

}  // namespace
}  // namespace kbisect
