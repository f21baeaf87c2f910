// Copyright 2026 The kbisect Authors.
#include "common/search/lookback.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using Outcome = Lookback::Outcome;

TEST(LookbackTest, GallopsBackAFewAtATimeAndFindsTheNearestBetterDistance) {
  Lookback lookback(100);
  EXPECT_THAT(lookback.Next(3), ElementsAre(1, 2, 4));
  lookback.Record(2, Outcome::kNotBetter);
  lookback.Record(4, Outcome::kNotBetter);
  EXPECT_FALSE(lookback.Found().has_value()) << "1 is still running";
  lookback.Record(1, Outcome::kNotBetter);
  EXPECT_THAT(lookback.Next(3), ElementsAre(8, 16, 32));
  lookback.Record(32, Outcome::kBetter);
  lookback.Record(8, Outcome::kNotBetter);
  EXPECT_FALSE(lookback.Found().has_value()) << "16 may be better too";
  lookback.Record(16, Outcome::kBetter);
  ASSERT_TRUE(lookback.Found().has_value());
  EXPECT_EQ(*lookback.Found(), 16);
  EXPECT_EQ(lookback.LargestNotBetter(), 8);
  EXPECT_THAT(lookback.Next(3), IsEmpty());
  EXPECT_FALSE(lookback.Exhausted());
}

TEST(LookbackTest, TheLookbacksEndIsTriedLastAndNothingBetterExhaustsIt) {
  Lookback lookback(20);
  EXPECT_THAT(lookback.Next(10), ElementsAre(1, 2, 4, 8, 16, 20));
  for (int d : {1, 2, 4, 8, 16}) lookback.Record(d, Outcome::kNotBetter);
  EXPECT_FALSE(lookback.Exhausted());
  lookback.Record(20, Outcome::kUntestable);
  EXPECT_TRUE(lookback.Exhausted());
  EXPECT_FALSE(lookback.Found().has_value());
}

TEST(LookbackTest, UntestableDistancesAreStepsOverAndBetterOnesStopTheGallop) {
  Lookback lookback(64);
  EXPECT_THAT(lookback.Next(2), ElementsAre(1, 2));
  lookback.Record(1, Outcome::kUntestable);
  lookback.Record(2, Outcome::kBetter);
  EXPECT_EQ(lookback.Found(), 2);
  EXPECT_EQ(lookback.LargestNotBetter(), 0) << "the step is in (BAD~2, BAD]";
}

TEST(LookbackTest, AShortHistoryEndsTheSearchAtTheFarthestDistanceItHas) {
  Lookback lookback(256);
  EXPECT_THAT(lookback.Next(9), ElementsAre(1, 2, 4, 8, 16, 32, 64, 128, 256));
  for (int d : {1, 2, 4, 8, 16, 32}) lookback.Record(d, Outcome::kNotBetter);
  lookback.Record(64, Outcome::kNotBetter);
  lookback.Record(256, Outcome::kBeyondHistory);
  lookback.Record(128, Outcome::kBeyondHistory);
  EXPECT_EQ(lookback.Reach(), 64);
  EXPECT_TRUE(lookback.Exhausted());
  EXPECT_THAT(lookback.Next(4), IsEmpty());
}

TEST(LookbackTest, RoundsForADeterministicStepStayWithinTheBound) {
  // A step at distance d is found once the first sequence element >= d and every nearer one
  // are known: simulate rounds of `workers` synchronous lookback jobs.
  for (int workers : {1, 2, 4, 7}) {
    for (int d = 1; d <= 300; ++d) {
      Lookback lookback(300);
      int rounds = 0;
      while (!lookback.Found().has_value() && !lookback.Exhausted()) {
        const std::vector<int> next = lookback.Next(workers);
        ASSERT_FALSE(next.empty());
        ++rounds;
        for (int t : next) lookback.Record(t, t >= d ? Outcome::kBetter : Outcome::kNotBetter);
      }
      ASSERT_TRUE(lookback.Found().has_value()) << d;
      EXPECT_GE(*lookback.Found(), d);
      EXPECT_LT(lookback.LargestNotBetter(), d);
      EXPECT_LE(*lookback.Found(), std::max(1, 2 * d - 1)) << "the bracket is under twice d";
      EXPECT_EQ(rounds, LookbackRoundsBound(d, 300, workers)) << "d=" << d << " W=" << workers;
    }
  }
  EXPECT_EQ(LookbackRoundsBound(20, 256, 7), 1);   // 1..64 in one round.
  EXPECT_EQ(LookbackRoundsBound(200, 256, 7), 2);  // 128, 256 in the second.
}

TEST(LookbackTest, SinceEndsTheChainAtTheFirstOlderCommit) {
  // BAD~1..BAD~5, newest first; BAD~4 is older than the cutoff, BAD~5 newer again (a rebased
  // commit): the walk stops at BAD~4, as `git log --first-parent --since` does.
  const std::vector<int64_t> times = {500, 400, 300, 100, 450};
  EXPECT_EQ(LookbackReachSince(times, 300, 100), 3);
  EXPECT_EQ(LookbackReachSince(times, 301, 100), 2) << "at or after the date";
  EXPECT_EQ(LookbackReachSince(times, 600, 100), 0) << "not even BAD~1";
  EXPECT_EQ(LookbackReachSince(times, 0, 100), 5) << "the chain ends where the caller stopped";
  EXPECT_EQ(LookbackReachSince(times, 0, 2), 2) << "never past --max-lookback";
  EXPECT_EQ(LookbackReachSince({}, 0, 10), 0);
}

}  // namespace
}  // namespace kbisect
