// Copyright 2026 The kbisect Authors.
//
// Every expected value below comes from a published source (R or scipy documentation, Wikipedia,
// standard tables) or from a hand computation written out in the comment next to it; none comes
// from running this implementation.

#include "common/stats/stats.h"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using ::testing::HasSubstr;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------------------------------------
// Location and spread.

TEST(MedianTest, OddAndEvenSizes) {
  // Definition of the median: the middle value, or the mean of the two middle values.
  EXPECT_DOUBLE_EQ(*Median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_DOUBLE_EQ(*Median({4.0, 1.0, 3.0, 2.0}), 2.5);
  EXPECT_DOUBLE_EQ(*Median({7.5}), 7.5);
  EXPECT_DOUBLE_EQ(*Median({1.0, 1.0, 2.0, 2.0, 4.0, 6.0, 9.0}), 2.0);
}

TEST(MedianTest, DoesNotReorderInput) {
  const std::vector<double> xs = {5, 1, 4, 2, 3};
  EXPECT_DOUBLE_EQ(*Median(xs), 3.0);
  EXPECT_EQ(xs, (std::vector<double>{5, 1, 4, 2, 3}));
}

TEST(MadTest, WikipediaExample) {
  // Wikipedia, "Median absolute deviation": the data (1, 1, 2, 2, 4, 6, 9) has median 2, absolute
  // deviations (1, 1, 0, 0, 2, 4, 7) and MAD 1.
  const std::vector<double> xs = {1, 1, 2, 2, 4, 6, 9};
  EXPECT_DOUBLE_EQ(*MedianAbsoluteDeviation(xs), 1.0);
  // R: mad(c(1, 1, 2, 2, 4, 6, 9)) = 1.4826 (default constant = 1.4826).
  EXPECT_DOUBLE_EQ(*ScaledMad(xs), 1.4826);
}

TEST(MadTest, EvenSize) {
  // {1, 2, 3, 4}: median 2.5, deviations {1.5, 0.5, 0.5, 1.5}, MAD = (0.5 + 1.5) / 2 = 1.
  // R: mad(1:4) = 1.4826.
  const std::vector<double> xs = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(*MedianAbsoluteDeviation(xs), 1.0);
  EXPECT_DOUBLE_EQ(*ScaledMad(xs), 1.4826);
  EXPECT_DOUBLE_EQ(*MedianAbsoluteDeviation({5.0, 5.0, 5.0}), 0.0);
}

TEST(MomentsTest, WikipediaStandardDeviationExample) {
  // Wikipedia, "Standard deviation": the eight values 2, 4, 4, 4, 5, 5, 7, 9 have mean 5 and
  // sum of squared deviations 32, so the sample standard deviation is sqrt(32 / 7) = 2.13809.
  const std::vector<double> xs = {2, 4, 4, 4, 5, 5, 7, 9};
  EXPECT_DOUBLE_EQ(*Mean(xs), 5.0);
  EXPECT_DOUBLE_EQ(*SampleStdDev(xs), std::sqrt(32.0 / 7.0));
  EXPECT_NEAR(*SampleStdDev(xs), 2.13809, 1e-5);
  EXPECT_DOUBLE_EQ(*CoefficientOfVariation(xs), std::sqrt(32.0 / 7.0) / 5.0);
  // The CV uses |mean|: negating the data does not change it.
  EXPECT_DOUBLE_EQ(*CoefficientOfVariation({-2, -4, -4, -4, -5, -5, -7, -9}),
                   std::sqrt(32.0 / 7.0) / 5.0);
}

TEST(SummaryErrorsTest, EmptyNanAndTooSmall) {
  const std::vector<double> empty;
  EXPECT_EQ(Median(empty).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MedianAbsoluteDeviation(empty).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ScaledMad(empty).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Mean(empty).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Median({1.0, kNaN}).status().message(), HasSubstr("NaN"));
  EXPECT_EQ(Median({1.0, kInf}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Mean({1.0, kInf}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SampleStdDev({1.0}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CoefficientOfVariation({-1.0, 1.0}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------------------------
// Mann-Whitney U.

TEST(MannWhitneyTest, RDocumentationExampleExact) {
  // R, ?wilcox.test (Hollander & Wolfe (1973), p. 69f, permeability constants):
  //   x <- c(0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46)
  //   y <- c(1.15, 0.88, 0.90, 0.74, 1.21)
  //   wilcox.test(x, y)  ->  W = 35, p-value = 0.2544
  // (The exact p-value is 2 * 382 / 3003 = 0.254412..., 382 of the C(15, 5) = 3003 orderings
  // having U >= 35.)
  const std::vector<double> x = {0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46};
  const std::vector<double> y = {1.15, 0.88, 0.90, 0.74, 1.21};
  absl::StatusOr<MannWhitneyResult> r = MannWhitneyU(x, y);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_DOUBLE_EQ(r->u, 35);
  EXPECT_TRUE(r->exact);
  EXPECT_NEAR(r->p_value, 0.2544, 5e-5);
  EXPECT_NEAR(r->p_value, 764.0 / 3003.0, 1e-12);

  // Swapping the samples gives U' = n_a n_b - U = 15 and the same two-sided p-value.
  absl::StatusOr<MannWhitneyResult> swapped = MannWhitneyU(y, x);
  ASSERT_TRUE(swapped.ok());
  EXPECT_DOUBLE_EQ(swapped->u, 15);
  EXPECT_NEAR(swapped->p_value, 764.0 / 3003.0, 1e-12);
}

TEST(MannWhitneyTest, ScipyDocumentationExample) {
  // scipy.stats.mannwhitneyu documentation (ages of male and female employees):
  //   males = [19, 22, 16, 29, 24]; females = [20, 11, 17, 12]
  //   mannwhitneyu(males, females, method="exact")  ->  statistic=17.0, pvalue=0.1111111111111111
  //   mannwhitneyu(males, females, method="asymptotic").pvalue  ->  0.11134688653314041
  // Hand check of the latter: sigma = sqrt(5 * 4 * 10 / 12) = 4.0825, z = (17 - 10 - 0.5) / sigma
  // = 1.5922, p = 2 (1 - Phi(1.5922)) = 0.11135.
  const std::vector<double> males = {19, 22, 16, 29, 24};
  const std::vector<double> females = {20, 11, 17, 12};

  absl::StatusOr<MannWhitneyResult> exact = MannWhitneyU(males, females, PValueMethod::kExact);
  ASSERT_TRUE(exact.ok()) << exact.status();
  EXPECT_DOUBLE_EQ(exact->u, 17);
  EXPECT_TRUE(exact->exact);
  EXPECT_NEAR(exact->p_value, 0.1111111111111111, 1e-12);

  absl::StatusOr<MannWhitneyResult> automatic = MannWhitneyU(males, females);
  ASSERT_TRUE(automatic.ok());
  EXPECT_TRUE(automatic->exact);  // No ties and both samples < 50.
  EXPECT_NEAR(automatic->p_value, 0.1111111111111111, 1e-12);

  absl::StatusOr<MannWhitneyResult> asymptotic =
      MannWhitneyU(males, females, PValueMethod::kAsymptotic);
  ASSERT_TRUE(asymptotic.ok());
  EXPECT_DOUBLE_EQ(asymptotic->u, 17);
  EXPECT_FALSE(asymptotic->exact);
  EXPECT_NEAR(asymptotic->p_value, 0.11134688653314041, 1e-12);
}

TEST(MannWhitneyTest, TiesUseNormalApproximationWithTieCorrection) {
  // Hand computation (R's wilcox.test(x, y) with correct = TRUE uses the same formula):
  //   x = {1, 2, 2, 3, 4}, y = {2, 3, 3, 4, 5, 6}, N = 11.
  //   Pooled midranks: 1 -> 1; 2,2,2 -> 3; 3,3,3 -> 6; 4,4 -> 8.5; 5 -> 10; 6 -> 11.
  //   R_x = 1 + 3 + 3 + 6 + 8.5 = 21.5, U = 21.5 - 5 * 6 / 2 = 6.5, n_x n_y / 2 = 15.
  //   Ties: sum(t^3 - t) = 24 + 24 + 6 = 54.
  //   sigma^2 = 30 / 12 * (12 - 54 / 110) = 28.772727, sigma = 5.364022.
  //   z = (|6.5 - 15| - 0.5) / sigma = 8 / 5.364022 = 1.491418.
  //   p = 2 (1 - Phi(1.491418)) = 0.135852.
  const std::vector<double> x = {1, 2, 2, 3, 4};
  const std::vector<double> y = {2, 3, 3, 4, 5, 6};
  absl::StatusOr<MannWhitneyResult> r = MannWhitneyU(x, y);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_DOUBLE_EQ(r->u, 6.5);
  EXPECT_FALSE(r->exact);
  EXPECT_NEAR(r->p_value, 0.135852, 1e-6);

  // The exact method refuses ties rather than silently ignoring them.
  absl::StatusOr<MannWhitneyResult> exact = MannWhitneyU(x, y, PValueMethod::kExact);
  EXPECT_EQ(exact.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(exact.status().message(), HasSubstr("ties"));
}

TEST(MannWhitneyTest, CompleteSeparationExact) {
  // Every a above every b: U = n_a n_b = 25, and only 1 of the C(10, 5) = 252 orderings reaches it,
  // so the two-sided exact p-value is 2 / 252.
  const std::vector<double> a = {10, 11, 12, 13, 14};
  const std::vector<double> b = {1, 2, 3, 4, 5};
  absl::StatusOr<MannWhitneyResult> r = MannWhitneyU(a, b);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->u, 25);
  EXPECT_TRUE(r->exact);
  EXPECT_NEAR(r->p_value, 2.0 / 252.0, 1e-14);
}

TEST(MannWhitneyTest, LargeSamplesAndAllTied) {
  // 60 values each: beyond the exact limit, so kAuto uses the normal approximation. a = 1..60,
  // b = 31.5..90.5: U counts the pairs with a_i > b_j; a = 31 + k beats k values of b, so
  // U = sum_{k=1}^{29} k = 435; mean 1800, no ties,
  // sigma^2 = 3600 * 121 / 12 = 36300; z = (1800 - 435 - 0.5) / 190.5256 = 7.1618;
  // p = 2 (1 - Phi(7.1618)) = 7.964e-13.
  std::vector<double> a;
  std::vector<double> b;
  for (int i = 1; i <= 60; ++i) {
    a.push_back(i);
    b.push_back(i + 30.5);
  }
  absl::StatusOr<MannWhitneyResult> r = MannWhitneyU(a, b);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->u, 435);
  EXPECT_FALSE(r->exact);
  EXPECT_NEAR(r->p_value / 7.964e-13, 1.0, 1e-3);

  // All values tied: no evidence of any shift.
  absl::StatusOr<MannWhitneyResult> tied = MannWhitneyU({3.0, 3.0}, {3.0, 3.0, 3.0});
  ASSERT_TRUE(tied.ok());
  EXPECT_DOUBLE_EQ(tied->u, 3);  // Every pair counts 1/2: 6 pairs * 0.5.
  EXPECT_DOUBLE_EQ(tied->p_value, 1.0);
}

TEST(MannWhitneyTest, Errors) {
  const std::vector<double> empty;
  EXPECT_EQ(MannWhitneyU(empty, {1.0}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MannWhitneyU({1.0}, empty).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MannWhitneyU({1.0, kNaN}, {1.0}).status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<double> big(200);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<double>(i);
  EXPECT_EQ(MannWhitneyU(big, big, PValueMethod::kExact).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------------------------
// Kolmogorov-Smirnov.

TEST(KolmogorovSurvivalTest, StandardCriticalValues) {
  // Standard table of the Kolmogorov distribution (e.g. Smirnov 1948; Numerical Recipes 14.3):
  // P(K > 1.2238) = 0.10, P(K > 1.3581) = 0.05, P(K > 1.6276) = 0.01, and
  // P(K <= 1) = 0.7300 (so P(K > 1) = 0.2700).
  EXPECT_NEAR(KolmogorovSurvival(1.2238), 0.10, 1e-4);
  EXPECT_NEAR(KolmogorovSurvival(1.3581), 0.05, 1e-4);
  EXPECT_NEAR(KolmogorovSurvival(1.6276), 0.01, 1e-4);
  EXPECT_NEAR(KolmogorovSurvival(1.0), 0.2700, 1e-4);
  // Small-lambda branch: P(K <= 0.5) = 0.036055 (table value), so P(K > 0.5) = 0.963945.
  EXPECT_NEAR(KolmogorovSurvival(0.5), 0.963945, 1e-5);
  EXPECT_DOUBLE_EQ(KolmogorovSurvival(0.0), 1.0);
  EXPECT_DOUBLE_EQ(KolmogorovSurvival(-1.0), 1.0);
  EXPECT_NEAR(KolmogorovSurvival(10.0), 0.0, 1e-15);
}

TEST(KolmogorovSmirnovTest, CompletelySeparatedSamplesExact) {
  // Completely separated samples have D = 1; only the two extreme orderings (all a first or all
  // b first) reach it, so the exact two-sided p-value is 2 / C(m + n, m).
  struct Case {
    std::vector<double> a, b;
    double expected;
  };
  const std::vector<Case> cases = {
      {{1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}, 2.0 / 252.0},  // C(10, 5) = 252
      {{1, 2, 3}, {10, 11, 12, 13}, 2.0 / 35.0},         // C(7, 3) = 35
      {{10, 11, 12, 13}, {1, 2, 3, 4}, 2.0 / 70.0},      // C(8, 4) = 70
      {{1, 2}, {3, 4, 5}, 2.0 / 10.0},                   // C(5, 2) = 10
  };
  for (const Case& c : cases) {
    absl::StatusOr<KolmogorovSmirnovResult> r = KolmogorovSmirnov(c.a, c.b);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_DOUBLE_EQ(r->d, 1.0);
    EXPECT_TRUE(r->exact);
    EXPECT_NEAR(r->p_value / c.expected, 1.0, 1e-12);
  }
}

TEST(KolmogorovSmirnovTest, EqualSizesHandCounted) {
  // a = {1, 2, 4}, b = {3, 5, 6}: F_a - F_b after 1, 2, 3, 4, 5 is 1/3, 2/3, 1/3, 2/3, 1/3, so
  // D = 2/3. Under H0 the 20 orderings of 3 a's and 3 b's have D < 2/3 only when each of the
  // position pairs (1,2), (3,4), (5,6) holds one a and one b: 2^3 = 8 orderings. So the exact
  // p-value is P(D >= 2/3) = 12 / 20 = 0.6.
  absl::StatusOr<KolmogorovSmirnovResult> r = KolmogorovSmirnov({1, 2, 4}, {3, 5, 6});
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->d, 2.0 / 3.0);
  EXPECT_NEAR(r->p_value, 0.6, 1e-12);
}

TEST(KolmogorovSmirnovTest, UnequalSizesHandCounted) {
  // a = {1, 3}, b = {2, 4, 5}: F_a - F_b after 1..5 is 1/2, 1/6, 2/3, 1/3, 0, so D = 2/3, i.e.
  // |3i - 2j| >= 4 in lattice units. Of the C(5, 2) = 10 placements of the a's, those reaching it
  // are {1,2}, {1,3}, {2,3}, {3,4}, {3,5}, {4,5} ({1,4}, {1,5}, {2,4}, {2,5} peak at 3, 3, 2, 3),
  // so the exact p-value is 6 / 10.
  absl::StatusOr<KolmogorovSmirnovResult> r = KolmogorovSmirnov({1, 3}, {2, 4, 5});
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->d, 2.0 / 3.0);
  EXPECT_NEAR(r->p_value, 0.6, 1e-12);
}

TEST(KolmogorovSmirnovTest, TiesAreEvaluatedAfterAllEqualValues) {
  // a = {1, 2, 2, 3}, b = {2, 2, 3, 3}: F_a - F_b is 1/4 after 1, 3/4 - 2/4 = 1/4 after 2 and 0
  // after 3; D = 1/4 (not 3/4, which a comparison in the middle of the tied 2s would give).
  absl::StatusOr<KolmogorovSmirnovResult> r = KolmogorovSmirnov({1, 2, 2, 3}, {2, 2, 3, 3});
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->d, 0.25);
  // Identical samples: D = 0 and p = 1.
  absl::StatusOr<KolmogorovSmirnovResult> same = KolmogorovSmirnov({1, 2, 3}, {3, 2, 1});
  ASSERT_TRUE(same.ok());
  EXPECT_DOUBLE_EQ(same->d, 0.0);
  EXPECT_DOUBLE_EQ(same->p_value, 1.0);
}

TEST(KolmogorovSmirnovTest, AsymptoticWithStephensCorrection) {
  // a = 0..49, b = 15..64: D = 15 / 50 = 0.3. N_e = 50 * 50 / 100 = 25, sqrt(N_e) = 5,
  // lambda = (5 + 0.12 + 0.11 / 5) * 0.3 = 1.5426, and
  // Q_KS(1.5426) = 2 (e^{-2 lambda^2} - e^{-8 lambda^2} + ...) = 2 (0.0085722 - 5.4e-9) = 0.017144.
  std::vector<double> a;
  std::vector<double> b;
  for (int i = 0; i < 50; ++i) {
    a.push_back(i);
    b.push_back(i + 15);
  }
  absl::StatusOr<KolmogorovSmirnovResult> r = KolmogorovSmirnov(a, b, PValueMethod::kAsymptotic);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->d, 0.3);
  EXPECT_FALSE(r->exact);
  EXPECT_NEAR(r->p_value, 0.017144, 2e-6);

  // The exact p-value of the same data is of the same order, and kAuto picks it.
  absl::StatusOr<KolmogorovSmirnovResult> automatic = KolmogorovSmirnov(a, b);
  ASSERT_TRUE(automatic.ok());
  EXPECT_TRUE(automatic->exact);
  EXPECT_GT(automatic->p_value, 0.005);
  EXPECT_LT(automatic->p_value, 0.05);
}

TEST(KolmogorovSmirnovTest, Errors) {
  const std::vector<double> empty;
  EXPECT_EQ(KolmogorovSmirnov(empty, {1.0}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(KolmogorovSmirnov({kNaN}, {1.0}).status().code(), absl::StatusCode::kInvalidArgument);
  // Infinities are ordinary extreme values for a rank statistic.
  absl::StatusOr<KolmogorovSmirnovResult> r = KolmogorovSmirnov({-kInf, 1}, {2, kInf});
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->d, 1.0);
}

// ---------------------------------------------------------------------------------------------
// Bootstrap interval of the ratio of medians.

// Returns 20 values 10 + 0.1 * (k - 5) for k = (i * step) mod 11, i.e. noise in [-5%, +5%].
std::vector<double> Noisy(int step, double scale) {
  std::vector<double> xs;
  for (int i = 0; i < 20; ++i) xs.push_back(scale * (10 + 0.1 * ((i * step) % 11 - 5)));
  return xs;
}

TEST(BootstrapTest, ContainsTrueRatioOfAClearShift) {
  // b is a 20% slowdown of a (each value times 1.2, in another order), so the true ratio of
  // medians is exactly 1.2; the interval must contain it and exclude 1 (no change).
  const std::vector<double> a = Noisy(7, 1.0);
  const std::vector<double> b = Noisy(7, 1.2);
  BootstrapOptions options;
  options.confidence = 0.95;
  options.resamples = 2000;
  options.seed = 42;
  absl::StatusOr<RatioInterval> ci = BootstrapMedianRatio(a, b, options);
  ASSERT_TRUE(ci.ok()) << ci.status();
  EXPECT_NEAR(ci->estimate, 1.2, 1e-12);
  EXPECT_LE(ci->lower, 1.2);
  EXPECT_GE(ci->upper, 1.2);
  EXPECT_GT(ci->lower, 1.1);
  EXPECT_LT(ci->upper, 1.3);
  EXPECT_LT(ci->lower, ci->upper);
}

TEST(BootstrapTest, DeterministicForAFixedSeed) {
  const std::vector<double> a = Noisy(7, 1.0);
  const std::vector<double> b = Noisy(3, 1.05);
  BootstrapOptions options;
  options.resamples = 500;
  options.seed = 7;
  absl::StatusOr<RatioInterval> first = BootstrapMedianRatio(a, b, options);
  absl::StatusOr<RatioInterval> second = BootstrapMedianRatio(a, b, options);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(first->lower, second->lower);
  EXPECT_EQ(first->upper, second->upper);

  // A wider confidence level gives a wider (or equal) interval from the same resamples.
  options.confidence = 0.99;
  absl::StatusOr<RatioInterval> wider = BootstrapMedianRatio(a, b, options);
  ASSERT_TRUE(wider.ok());
  EXPECT_LE(wider->lower, first->lower);
  EXPECT_GE(wider->upper, first->upper);
}

// --verify-revert's figure: how much of GOOD -> BAD the culprit's revert at BAD recovers.
TEST(BootstrapTest, RecoveredShareOfAFullAPartialAndNoRecovery) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0, 0.01);
  auto sample = [&](double level, int n) {
    std::vector<double> v;
    for (int i = 0; i < n; ++i) v.push_back(level * (1 + noise(rng)));
    return v;
  };
  const std::vector<double> good = sample(1.0, 15), bad = sample(1.44, 15);
  BootstrapOptions options;
  options.resamples = 2000;
  absl::StatusOr<ShareInterval> full = BootstrapRecoveredShare(good, bad, sample(1.0, 15), options);
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_NEAR(full->estimate, 1.0, 0.05);
  EXPECT_LT(full->lower, full->estimate);
  EXPECT_GT(full->upper, full->estimate);
  EXPECT_LT(full->lower, 1.0);
  EXPECT_GT(full->upper, 1.0);
  // Two steps of 22% each (in ratio terms): reverting one recovers about half.
  absl::StatusOr<ShareInterval> half = BootstrapRecoveredShare(good, bad, sample(1.2, 15), options);
  ASSERT_TRUE(half.ok()) << half.status();
  EXPECT_NEAR(half->estimate, 0.55, 0.06);
  EXPECT_LT(half->upper, 0.8);
  absl::StatusOr<ShareInterval> none = BootstrapRecoveredShare(good, bad, sample(1.44, 15), options);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_NEAR(none->estimate, 0.0, 0.06);
  // No regression to recover, and bad input.
  EXPECT_FALSE(BootstrapRecoveredShare({1, 2, 3}, {1, 2, 3}, {1}, options).ok());
  EXPECT_FALSE(BootstrapRecoveredShare({}, bad, good, options).ok());
}

TEST(BootstrapTest, Errors) {
  const std::vector<double> ok = {1, 2, 3};
  const std::vector<double> empty;
  BootstrapOptions options;
  EXPECT_EQ(BootstrapMedianRatio(empty, ok, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BootstrapMedianRatio(ok, {kNaN}, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BootstrapMedianRatio({1, 0, 2}, ok, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BootstrapMedianRatio({-1, 1}, ok, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.confidence = 1.0;
  EXPECT_EQ(BootstrapMedianRatio(ok, ok, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.confidence = 0.9;
  options.resamples = 0;
  EXPECT_EQ(BootstrapMedianRatio(ok, ok, options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kbisect
