// Copyright 2026 The kbisect Authors.
#include "common/search/information_gain.h"

#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

// P(first bad = k) uniform over 1..n (k = 0 has none).
std::vector<double> Uniform(int n) {
  std::vector<double> probability(n + 1, 1.0 / n);
  probability[0] = 0;
  return probability;
}

constexpr FailRates kDeterministic{0, 1};

TEST(InformationGainTest, ADeterministicTestIsBisectedAtTheMidpoint) {
  const std::vector<double> uniform = Uniform(100);
  EXPECT_THAT(ChooseInformativeProbes(uniform, kDeterministic, {}, 1, 1, 99), ElementsAre(50));
  EXPECT_NEAR(ExpectedInformation(uniform, kDeterministic, {50}), 1.0, 1e-3);
  // Three at once split the range in four: two bits.
  const std::vector<int> three = ChooseInformativeProbes(uniform, kDeterministic, {}, 3, 1, 99);
  EXPECT_THAT(three, UnorderedElementsAre(25, 50, 75));
  EXPECT_NEAR(ExpectedInformation(uniform, kDeterministic, three), 2.0, 1e-3);
}

TEST(InformationGainTest, AProbeInFlightIsNotRepeatedWhenItsResultIsCertain) {
  const std::vector<double> uniform = Uniform(100);
  const std::vector<int> next = ChooseInformativeProbes(uniform, kDeterministic, {50}, 1, 1, 99);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_TRUE(next[0] == 25 || next[0] == 75) << next[0];
  // Information two probes share is not counted twice: a second run of a deterministic commit
  // adds nothing.
  EXPECT_NEAR(ExpectedInformation(uniform, kDeterministic, {50, 50}), 1.0, 1e-3);
}

TEST(InformationGainTest, AFlakyTestIsProbedWhereAResultTellsTheMost) {
  // One probe with p = 0.3, q = 0.05: the best commit is the one with P(first bad <= x) = 0.44
  // (I = H(F p + (1 - F) q) - F h(p) - (1 - F) h(q) is largest there), not the median.
  const std::vector<double> uniform = Uniform(100);
  const FailRates flaky{0.05, 0.3};
  EXPECT_THAT(ChooseInformativeProbes(uniform, flaky, {}, 1, 1, 99), ElementsAre(44));
  const double one = ExpectedInformation(uniform, flaky, {44});
  EXPECT_GT(one, 0.05);
  EXPECT_LT(one, 0.2) << "one flaky run tells far less than a bit";
  // With p = 0.1, q = 0 a failure is proof of BAD and rare: probe lower, where it would say most.
  EXPECT_THAT(ChooseInformativeProbes(uniform, FailRates{0, 0.1}, {}, 1, 1, 99), ElementsAre(37));
  // More runs tell more, less than in proportion.
  const double two = ExpectedInformation(uniform, flaky, {44, 44});
  EXPECT_GT(two, one);
  EXPECT_LT(two, 2 * one);
}

TEST(InformationGainTest, ProbesStayInsideTheRangeAndFollowTheMass) {
  // The mass sits on 600..700 of 10,000 commits: candidates are its quantiles, not the range's.
  std::vector<double> probability(10001, 0);
  for (int k = 600; k <= 700; ++k) probability[k] = 1;
  const std::vector<int> next =
      ChooseInformativeProbes(probability, kDeterministic, {}, 2, 1, 9999);
  ASSERT_EQ(next.size(), 2u);
  for (int x : next) {
    EXPECT_GE(x, 600);
    EXPECT_LE(x, 700);
  }
  EXPECT_THAT(ChooseInformativeProbes(Uniform(10), kDeterministic, {}, 4, 3, 3), ElementsAre(3, 3, 3, 3));
  EXPECT_TRUE(ChooseInformativeProbes(Uniform(10), kDeterministic, {}, 2, 5, 4).empty());
  EXPECT_TRUE(ChooseInformativeProbes(Uniform(10), kDeterministic, {}, 0, 1, 9).empty());
}

TEST(InformationGainTest, AnEndpointTellsMuchWhenTheRatesDependOnTheCulprit) {
  // Commits 35..39 passed many runs, BAD (40) failed once in two: either the culprit is 40
  // (BAD fails often) or it is lower and BAD's rate is tiny. Under each hypothesis the rates
  // differ, and a run of BAD tells them apart; with constant rates it would tell nothing.
  const int n = 40;
  std::vector<double> probability(n + 1, 0);
  probability[35] = 0.1;
  probability[40] = 0.9;
  PositionRates rates = ConstantRates(n, FailRates{0.01, 0.5});
  for (int k = 1; k < 40; ++k) rates.at_bad[k] = 0.01;  // Passes everywhere above k.
  EXPECT_GT(ExpectedInformation(probability, rates, {40}), 0.05);
  EXPECT_NEAR(ExpectedInformation(probability, FailRates{0.01, 0.5}, {40}), 0, 1e-3);
  EXPECT_THAT(ChooseInformativeProbes(probability, rates, {}, 1, 0, 40), ElementsAre(40));
}

TEST(InformationGainTest, ManyProbesAreEstimatedFromASampleCloseToTheExactValue) {
  // 15 deterministic probes at the sixteenths of a uniform range: exactly 4 bits, estimated from
  // sampled result combinations past kExactProbes.
  std::vector<int> probes;
  for (int i = 1; i < 16; ++i) probes.push_back(i * 64);
  const double estimate = ExpectedInformation(Uniform(1024), kDeterministic, probes);
  EXPECT_NEAR(estimate, 4.0, 0.1);
  // And deterministic: the same inputs, the same value.
  EXPECT_EQ(estimate, ExpectedInformation(Uniform(1024), kDeterministic, probes));
}

}  // namespace
}  // namespace kbisect
