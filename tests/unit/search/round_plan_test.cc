// Copyright 2026 The kbisect Authors.
#include "common/search/round_plan.h"

#include <algorithm>
#include <set>
#include <utility>

#include "common/search/bisect_search.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

int CeilDiv(int a, int b) { return (a + b - 1) / b; }

// Independent reference: breadth-first search over (candidates, owed) states, one level per
// round, trying every split of the free slots. Returns the fewest rounds to (1, 0).
int FewestRounds(int candidates, int workers, int owed, int busy) {
  std::set<std::pair<int, int>> level = {{candidates, owed}};
  for (int round = 0; round < 200; ++round) {
    if (level.count({1, 0}) > 0) return round;
    std::set<std::pair<int, int>> next;
    for (const auto& [m, d] : level) {
      const int free = workers - (round == 0 ? busy : 0);
      for (int c = 0; c <= std::min(d, free); ++c) {
        const int probes = free - c;
        next.insert({m <= 1 ? m : CeilDiv(m, probes + 1), d - c});
      }
    }
    level = std::move(next);
  }
  return -1;
}

// Follows the plan round by round and returns how many rounds it took.
int FollowPlan(int candidates, int workers, int owed, int busy) {
  int rounds = 0;
  while (candidates > 1 || owed > 0) {
    const RoundPlan plan = PlanRound(candidates, workers, owed, busy);
    EXPECT_GE(plan.calibrations, 0);
    EXPECT_LE(plan.calibrations, owed);
    EXPECT_LE(plan.calibrations + plan.probes + busy, workers);
    if (candidates > 1) {
      EXPECT_EQ(plan.calibrations + plan.probes + busy, workers);
      candidates = CeilDiv(candidates, plan.probes + 1);
    }
    owed -= plan.calibrations;
    busy = 0;
    if (++rounds > 100) return -1;
  }
  return rounds;
}

TEST(RoundPlanTest, SevenWorkersCalibrateWithinTheFourRoundsOfAThousandCommits) {
  // Round 1 holds the BAD baseline; all 7 workers owe a GOOD calibration.
  const RoundPlan first = PlanRound(1000, 7, 7, 1);
  EXPECT_EQ(first.rounds, 4);
  EXPECT_EQ(first.rounds, BisectSearch::EstimateRounds(1000, 7));
  EXPECT_GE(first.calibrations, 1);
  EXPECT_EQ(first.calibrations + first.probes, 6);
  EXPECT_EQ(FollowPlan(1000, 7, 7, 1), 4);
  // Calibrating everyone first would take a fifth round.
  EXPECT_EQ(1 + BisectSearch::EstimateRounds(1000, 7), 5);
}

TEST(RoundPlanTest, FollowingThePlanTakesTheFewestRoundsPossible) {
  for (int workers = 1; workers <= 8; ++workers) {
    for (int candidates = 1; candidates <= 64; ++candidates) {
      for (int owed = 0; owed <= workers; ++owed) {
        for (int busy = 0; busy <= std::min(1, workers - 1); ++busy) {
          const int fewest = FewestRounds(candidates, workers, owed, busy);
          const RoundPlan plan = PlanRound(candidates, workers, owed, busy);
          ASSERT_EQ(plan.rounds, fewest)
              << "W=" << workers << " m=" << candidates << " owed=" << owed << " busy=" << busy;
          ASSERT_EQ(FollowPlan(candidates, workers, owed, busy), fewest)
              << "W=" << workers << " m=" << candidates << " owed=" << owed;
          // Never slower than calibrating everyone in the first free slots.
          if (busy == 0 && owed == workers) {
            EXPECT_LE(fewest, 1 + BisectSearch::EstimateRounds(candidates, workers));
          }
        }
      }
    }
  }
}

TEST(RoundPlanTest, KeepsCapacityToSpareAmongTheFastestPlans) {
  // 1,000 commits on 7 workers, BAD in round 1: 4 rounds whichever way. Calibrating as early as
  // possible would probe 2, 5, 6 and 7 points (capacity 3*6*7*8 = 1,008: any uneven split costs
  // a fifth round); the plan probes 5 points in every round (6^4 = 1,296).
  int candidates = 1000;
  int owed = 7;
  int busy = 1;
  double capacity = 1;
  while (candidates > 1 || owed > 0) {
    const RoundPlan plan = PlanRound(candidates, 7, owed, busy);
    EXPECT_EQ(plan.probes, 5) << "at " << candidates << " candidates";
    if (candidates > 1) capacity *= plan.probes + 1;
    if (candidates > 1) candidates = CeilDiv(candidates, plan.probes + 1);
    owed -= plan.calibrations;
    busy = 0;
  }
  EXPECT_GE(capacity, 1296);
}

TEST(RoundPlanTest, CalibratesAsEarlyAsTheBestPlanAllows) {
  // 10 candidates on 7 workers: 2 rounds. Splitting capacity ties between 3 probes then 4 (4*5)
  // and 4 probes then 3 (5*4); the plan calibrates more workers first.
  const RoundPlan plan = PlanRound(10, 7, 7, 0);
  EXPECT_EQ(plan.rounds, 2);
  EXPECT_EQ(plan.calibrations, 4);
  // Nothing owed: every free slot probes.
  EXPECT_EQ(PlanRound(100, 4, 0, 0).calibrations, 0);
  EXPECT_EQ(PlanRound(100, 4, 0, 0).probes, 4);
  // The culprit is found: everything owed is calibrated now, and nothing probes.
  const RoundPlan done = PlanRound(1, 4, 3, 0);
  EXPECT_EQ(done.calibrations, 3);
  EXPECT_EQ(done.probes, 0);
  EXPECT_EQ(done.rounds, 1);
  EXPECT_EQ(PlanRound(1, 4, 0, 0).rounds, 0);
}

TEST(RoundPlanTest, OutOfRangeInputsAreClamped) {
  EXPECT_EQ(PlanRound(0, 0, -3, -1).rounds, 0);
  const RoundPlan plan = PlanRound(50, 2, 9, 9);  // owed and busy clamp to 2.
  EXPECT_EQ(plan.calibrations, 0);
  EXPECT_EQ(plan.probes, 0);
}

}  // namespace
}  // namespace kbisect
