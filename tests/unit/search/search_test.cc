// Copyright 2026 The kbisect Authors.

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "common/search/bisect_search.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// ceil(log_{w+1}(n)) by repeated integer multiplication, independently of the library.
int ExpectedRounds(int n, int w) {
  int rounds = 0;
  int64_t power = 1;
  while (power < n) {
    power *= (w + 1);
    ++rounds;
  }
  return rounds;
}

// The monotone oracle with a set of untestable indices (never 0 or n).
struct Oracle {
  int culprit;
  std::set<int> skipped;
  v1::Verdict operator()(int index) const {
    if (skipped.count(index) > 0) return v1::VERDICT_SKIP;
    return index < culprit ? v1::VERDICT_GOOD : v1::VERDICT_BAD;
  }
};

// The culprit by linear scan: the first index whose verdict is bad.
int BruteForceCulprit(int n, const Oracle& oracle) {
  for (int i = 1; i <= n; ++i) {
    if (oracle(i) == v1::VERDICT_BAD) return i;
  }
  return n;
}

// The candidates left when only skipped indices remain: from just above the last testable index
// below the culprit up to the first testable index at or above it.
std::vector<int> BruteForceCandidates(int n, const Oracle& oracle) {
  int lo = 0;
  for (int i = 1; i < n; ++i) {
    if (oracle(i) == v1::VERDICT_GOOD) lo = i;
  }
  int hi = n;
  for (int i = n - 1; i >= 1; --i) {
    if (oracle(i) == v1::VERDICT_BAD) hi = i;
  }
  std::vector<int> result;
  for (int i = lo + 1; i <= hi; ++i) result.push_back(i);
  return result;
}

// Runs synchronous rounds; returns the number of rounds. Checks no index is probed twice.
int RunSynchronous(BisectSearch& search, int workers, const Oracle& oracle) {
  std::set<int> probed;
  int rounds = 0;
  while (!search.Done()) {
    std::vector<int> probes = search.NextProbes(workers);
    EXPECT_FALSE(probes.empty()) << "not done but nothing to probe";
    if (probes.empty()) break;
    EXPECT_LE(static_cast<int>(probes.size()), workers);
    EXPECT_TRUE(std::is_sorted(probes.begin(), probes.end()));
    for (int p : probes) {
      EXPECT_TRUE(probed.insert(p).second) << "probed twice: " << p;
      EXPECT_GT(p, search.last_good());
      EXPECT_LT(p, search.first_bad());
    }
    for (int p : probes) EXPECT_TRUE(search.Record(p, oracle(p)).ok());
    EXPECT_THAT(search.InFlight(), IsEmpty());
    ++rounds;
  }
  return rounds;
}

TEST(EstimateRoundsTest, ExactValues) {
  EXPECT_EQ(BisectSearch::EstimateRounds(1, 1), 0);
  EXPECT_EQ(BisectSearch::EstimateRounds(1, 8), 0);
  EXPECT_EQ(BisectSearch::EstimateRounds(2, 1), 1);
  EXPECT_EQ(BisectSearch::EstimateRounds(8, 7), 1);
  EXPECT_EQ(BisectSearch::EstimateRounds(9, 7), 2);
  EXPECT_EQ(BisectSearch::EstimateRounds(64, 7), 2);
  EXPECT_EQ(BisectSearch::EstimateRounds(65, 7), 3);
  EXPECT_EQ(BisectSearch::EstimateRounds(1000, 7), 4);
  EXPECT_EQ(BisectSearch::EstimateRounds(1000, 1), 10);
  EXPECT_EQ(BisectSearch::EstimateRounds(1024, 1), 10);
  EXPECT_EQ(BisectSearch::EstimateRounds(1025, 1), 11);
  EXPECT_EQ(BisectSearch::EstimateRounds(243, 2), 5);
  EXPECT_EQ(BisectSearch::EstimateRounds(244, 2), 6);
  EXPECT_EQ(BisectSearch::EstimateRounds(2147483647, 1), 31);
  EXPECT_EQ(BisectSearch::EstimateRounds(2147483647, 2147483646), 1);
  EXPECT_EQ(BisectSearch::EstimateRounds(2147483647, 2147483645), 2);
  EXPECT_EQ(BisectSearch::EstimateRounds(2147483647, 2147483647), 1);
  for (int n = 1; n <= 5000; ++n) {
    for (int w = 1; w <= 9; ++w)
      ASSERT_EQ(BisectSearch::EstimateRounds(n, w), ExpectedRounds(n, w));
  }
}

TEST(BisectSearchTest, InitialState) {
  BisectSearch search(10);
  EXPECT_EQ(search.n(), 10);
  EXPECT_EQ(search.last_good(), 0);
  EXPECT_EQ(search.first_bad(), 10);
  EXPECT_EQ(search.RemainingCandidates(), 10);
  EXPECT_FALSE(search.Done());
  EXPECT_EQ(search.VerdictAt(0), v1::VERDICT_GOOD);
  EXPECT_EQ(search.VerdictAt(10), v1::VERDICT_BAD);
  EXPECT_EQ(search.VerdictAt(5), std::nullopt);
  EXPECT_EQ(search.VerdictAt(11), std::nullopt);
}

TEST(BisectSearchTest, SingleCommitIsDoneImmediately) {
  BisectSearch search(1);
  EXPECT_TRUE(search.Done());
  EXPECT_THAT(search.Candidates(), ElementsAre(1));
  EXPECT_THAT(search.NextProbes(4), IsEmpty());
  EXPECT_EQ(search.RemainingCandidates(), 1);
}

TEST(BisectSearchTest, SplitsEvenly) {
  BisectSearch search(100);
  EXPECT_THAT(search.NextProbes(3), ElementsAre(25, 50, 75));
  EXPECT_THAT(search.InFlight(), ElementsAre(25, 50, 75));
  BisectSearch one(100);
  EXPECT_THAT(one.NextProbes(1), ElementsAre(50));
}

TEST(BisectSearchTest, OnePointInAGapOfThreeIsWhereGitBisectTestsIt) {
  // git bisect (2.39) on a linear range of N candidates tests the floor(N/2)-th, except that of
  // three it tests the second (decision 227): (7, 10) probes 9, (7, 11) probes 9, (7, 9) probes 8.
  for (const auto& [bad, expected] : std::vector<std::pair<int, int>>{{10, 9}, {11, 9}, {9, 8}}) {
    BisectSearch search(20);
    ASSERT_TRUE(search.Record(7, v1::VERDICT_GOOD).ok());
    ASSERT_TRUE(search.Record(bad, v1::VERDICT_BAD).ok());
    EXPECT_THAT(search.PlanProbes(1), ElementsAre(expected)) << "(7, " << bad << ")";
  }
  // A skipped ideal point moves to its neighbour: the lower one first.
  BisectSearch skipped(3);
  ASSERT_TRUE(skipped.Record(2, v1::VERDICT_SKIP).ok());
  EXPECT_THAT(skipped.PlanProbes(1), ElementsAre(1));
  // Two points in a gap of three take both inner commits.
  EXPECT_THAT(BisectSearch(3).PlanProbes(2), ElementsAre(1, 2));
}

TEST(BisectSearchTest, FreedWorkerSplitsLargestGap) {
  BisectSearch search(100);
  EXPECT_THAT(search.NextProbes(3), ElementsAre(25, 50, 75));
  ASSERT_TRUE(search.Record(25, v1::VERDICT_GOOD).ok());
  // Open interval (25, 100) with probes at 50 and 75: gaps 25, 25, 25; ties go to the lowest.
  EXPECT_THAT(search.NextProbes(1), ElementsAre(37));
  ASSERT_TRUE(search.Record(75, v1::VERDICT_BAD).ok());
  EXPECT_THAT(search.InFlight(), ElementsAre(37, 50));
  // Gaps (25,37)=12, (37,50)=13, (50,75)=25: the first new point halves the largest gap
  // (pieces of 12.5), the second then goes to the 13-gap rather than thirding the 25-gap.
  EXPECT_THAT(search.NextProbes(2), ElementsAre(43, 62));
}

TEST(BisectSearchTest, MarkInFlightIsRespected) {
  BisectSearch search(100);
  search.MarkInFlight(50);
  EXPECT_THAT(search.NextProbes(1), ElementsAre(25));
  EXPECT_THAT(search.NextProbes(1), ElementsAre(75));
  EXPECT_THAT(search.InFlight(), ElementsAre(25, 50, 75));
  search.Abandon(50);
  EXPECT_THAT(search.InFlight(), ElementsAre(25, 75));
  EXPECT_THAT(search.NextProbes(1), ElementsAre(50));
  search.MarkInFlight(-1);
  search.MarkInFlight(101);
  EXPECT_THAT(search.InFlight(), ElementsAre(25, 50, 75));
}

TEST(BisectSearchTest, CountLargerThanEligibleReturnsAll) {
  BisectSearch search(6);
  ASSERT_TRUE(search.Record(3, v1::VERDICT_SKIP).ok());
  EXPECT_THAT(search.NextProbes(100), ElementsAre(1, 2, 4, 5));
  EXPECT_THAT(search.NextProbes(100), IsEmpty());
  EXPECT_FALSE(search.Done());
  EXPECT_THAT(search.NextProbes(0), IsEmpty());
  EXPECT_THAT(search.NextProbes(-3), IsEmpty());
}

TEST(BisectSearchTest, ContradictionsRejectedAndStateUnchanged) {
  BisectSearch search(20);
  ASSERT_TRUE(search.Record(5, v1::VERDICT_GOOD).ok());
  ASSERT_TRUE(search.Record(15, v1::VERDICT_BAD).ok());
  search.MarkInFlight(10);
  const std::vector<int> in_flight = search.InFlight();

  absl::Status status = search.Record(15, v1::VERDICT_GOOD);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  status = search.Record(17, v1::VERDICT_GOOD);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  status = search.Record(5, v1::VERDICT_BAD);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  status = search.Record(0, v1::VERDICT_BAD);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  status = search.Record(20, v1::VERDICT_GOOD);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  status = search.Record(21, v1::VERDICT_GOOD);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  status = search.Record(-1, v1::VERDICT_SKIP);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);

  EXPECT_EQ(search.last_good(), 5);
  EXPECT_EQ(search.first_bad(), 15);
  EXPECT_EQ(search.VerdictAt(17), std::nullopt);
  EXPECT_EQ(search.VerdictAt(15), v1::VERDICT_BAD);
  EXPECT_EQ(search.VerdictAt(5), v1::VERDICT_GOOD);
  EXPECT_EQ(search.InFlight(), in_flight);
}

TEST(BisectSearchTest, OutsideVerdictsRecordedButNeverWiden) {
  BisectSearch search(20);
  ASSERT_TRUE(search.Record(10, v1::VERDICT_GOOD).ok());
  ASSERT_TRUE(search.Record(4, v1::VERDICT_GOOD).ok());
  EXPECT_EQ(search.last_good(), 10);
  EXPECT_EQ(search.VerdictAt(4), v1::VERDICT_GOOD);
  ASSERT_TRUE(search.Record(15, v1::VERDICT_BAD).ok());
  ASSERT_TRUE(search.Record(18, v1::VERDICT_BAD).ok());
  EXPECT_EQ(search.first_bad(), 15);
  ASSERT_TRUE(search.Record(18, v1::VERDICT_SKIP).ok());
  EXPECT_EQ(search.VerdictAt(18), v1::VERDICT_BAD);  // A skip never replaces a verdict.
  ASSERT_TRUE(search.Record(12, v1::VERDICT_SKIP).ok());
  ASSERT_TRUE(search.Record(12, v1::VERDICT_GOOD).ok());  // A verdict replaces a skip.
  EXPECT_EQ(search.VerdictAt(12), v1::VERDICT_GOOD);
  EXPECT_EQ(search.last_good(), 12);
  EXPECT_EQ(search.RemainingCandidates(), 3);
}

TEST(BisectSearchTest, UselessInFlightAfterNarrowing) {
  BisectSearch search(100);
  EXPECT_THAT(search.NextProbes(4), ElementsAre(20, 40, 60, 80));
  ASSERT_TRUE(search.Record(40, v1::VERDICT_BAD).ok());
  EXPECT_THAT(search.UselessInFlight(), ElementsAre(60, 80));
  EXPECT_THAT(search.UselessInFlight(), ElementsAre(60, 80));  // Calling it changes nothing.
  EXPECT_THAT(search.InFlight(), ElementsAre(20, 60, 80));
  search.Abandon(60);
  ASSERT_TRUE(search.Record(80, v1::VERDICT_BAD).ok());  // A late result outside the interval.
  EXPECT_EQ(search.first_bad(), 40);
  EXPECT_THAT(search.UselessInFlight(), IsEmpty());
  EXPECT_THAT(search.InFlight(), ElementsAre(20));
  ASSERT_TRUE(search.Record(20, v1::VERDICT_GOOD).ok());
  EXPECT_THAT(search.NextProbes(1), ElementsAre(30));
  ASSERT_TRUE(search.Record(30, v1::VERDICT_SKIP).ok());
  // A late probe of an already-good index counts as useless.
  search.MarkInFlight(10);
  EXPECT_THAT(search.UselessInFlight(), ElementsAre(10));
}

TEST(BisectSearchTest, NotDoneWhileUsefulProbeInFlight) {
  BisectSearch search(2);
  EXPECT_THAT(search.NextProbes(3), ElementsAre(1));
  EXPECT_FALSE(search.Done());
  EXPECT_THAT(search.NextProbes(1), IsEmpty());
  search.Abandon(1);
  EXPECT_FALSE(search.Done());
  EXPECT_THAT(search.NextProbes(1), ElementsAre(1));
  ASSERT_TRUE(search.Record(1, v1::VERDICT_GOOD).ok());
  EXPECT_TRUE(search.Done());
  EXPECT_THAT(search.Candidates(), ElementsAre(2));
}

TEST(BisectSearchTest, SkippedIndexIsReplacedByNeighbour) {
  BisectSearch search(10);
  EXPECT_THAT(search.NextProbes(1), ElementsAre(5));
  ASSERT_TRUE(search.Record(5, v1::VERDICT_SKIP).ok());
  std::vector<int> next = search.NextProbes(1);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_TRUE(next[0] == 4 || next[0] == 6) << next[0];

  BisectSearch wide(100);
  EXPECT_THAT(wide.NextProbes(3), ElementsAre(25, 50, 75));
  for (int p : {25, 50, 75}) ASSERT_TRUE(wide.Record(p, v1::VERDICT_SKIP).ok());
  for (int p : {24, 26, 49, 51}) ASSERT_TRUE(wide.Record(p, v1::VERDICT_SKIP).ok());
  std::vector<int> probes = wide.NextProbes(3);
  EXPECT_THAT(probes, ElementsAre(23, 48, 74));
}

TEST(BisectSearchTest, AllInteriorSkippedIsDone) {
  BisectSearch search(6);
  for (int i = 1; i <= 5; ++i) ASSERT_TRUE(search.Record(i, v1::VERDICT_SKIP).ok());
  EXPECT_TRUE(search.Done());
  EXPECT_THAT(search.NextProbes(2), IsEmpty());
  EXPECT_THAT(search.Candidates(), ElementsAre(1, 2, 3, 4, 5, 6));
}

TEST(BisectSearchTest, SkipsAdjacentToCulprit) {
  // Culprit 5; 4 and 5 are untestable, 3 is good and 6 bad.
  Oracle oracle{5, {4, 5}};
  BisectSearch search(10);
  RunSynchronous(search, 2, oracle);
  EXPECT_TRUE(search.Done());
  EXPECT_THAT(search.Candidates(), ElementsAre(4, 5, 6));
  EXPECT_EQ(search.last_good(), 3);
  EXPECT_EQ(search.first_bad(), 6);
}

TEST(BisectSearchTest, ExhaustiveSynchronous) {
  int simulations = 0;
  for (int n = 1; n <= 64; ++n) {
    for (int w = 1; w <= 8; ++w) {
      const int bound = ExpectedRounds(n, w);
      ASSERT_EQ(BisectSearch::EstimateRounds(n, w), bound);
      for (int c = 1; c <= n; ++c) {
        Oracle oracle{c, {}};
        BisectSearch search(n);
        const int rounds = RunSynchronous(search, w, oracle);
        ASSERT_TRUE(search.Done());
        ASSERT_THAT(search.Candidates(), ElementsAre(BruteForceCulprit(n, oracle)))
            << "n=" << n << " w=" << w << " c=" << c;
        ASSERT_LE(rounds, bound) << "n=" << n << " w=" << w << " c=" << c;
        ++simulations;
      }
    }
  }
  EXPECT_EQ(simulations, 8 * 64 * 65 / 2);
}

TEST(BisectSearchTest, ThousandCommitsWorstCase) {
  for (int w : {1, 7}) {
    int worst = 0;
    for (int c = 1; c <= 1000; ++c) {
      Oracle oracle{c, {}};
      BisectSearch search(1000);
      const int rounds = RunSynchronous(search, w, oracle);
      ASSERT_THAT(search.Candidates(), ElementsAre(c));
      worst = std::max(worst, rounds);
    }
    EXPECT_EQ(worst, w == 7 ? 4 : 10) << "w=" << w;
  }
}

// Asynchronous simulation: results return one at a time in random order; freed workers at once get
// new probes; useless probes are cancelled (or, when `cancel` is false, left to finish).
void RunAsynchronous(int n, int workers, const Oracle& oracle, std::mt19937& rng, bool cancel) {
  BisectSearch search(n);
  std::set<int> probed;
  std::vector<int> running;
  auto refill = [&]() {
    const int free_workers = workers - static_cast<int>(running.size());
    for (int p : search.NextProbes(free_workers)) {
      ASSERT_TRUE(probed.insert(p).second) << "probed twice: " << p;
      running.push_back(p);
    }
  };
  refill();
  int steps = 0;
  while (!search.Done()) {
    ASSERT_FALSE(running.empty()) << "not done but nothing running";
    ASSERT_LT(++steps, 10 * n + 10);
    std::uniform_int_distribution<size_t> pick(0, running.size() - 1);
    const size_t i = pick(rng);
    const int p = running[i];
    running.erase(running.begin() + i);
    ASSERT_TRUE(search.Record(p, oracle(p)).ok());
    if (cancel) {
      for (int useless : search.UselessInFlight()) {
        search.Abandon(useless);
        running.erase(std::find(running.begin(), running.end(), useless));
      }
      ASSERT_THAT(search.UselessInFlight(), IsEmpty());
    }
    std::vector<int> tracked = running;
    std::sort(tracked.begin(), tracked.end());
    ASSERT_EQ(search.InFlight(), tracked);
    refill();
  }
  ASSERT_EQ(search.Candidates(), BruteForceCandidates(n, oracle))
      << "n=" << n << " w=" << workers << " c=" << oracle.culprit;
}

TEST(BisectSearchTest, ExhaustiveAsynchronous) {
  std::mt19937 rng(12345);
  for (int n = 1; n <= 40; ++n) {
    for (int w = 1; w <= 8; ++w) {
      for (int c = 1; c <= n; ++c) {
        for (int trial = 0; trial < 4; ++trial) {
          Oracle oracle{c, {}};
          RunAsynchronous(n, w, oracle, rng, /*cancel=*/trial != 3);
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST(BisectSearchTest, RandomSkipSetsMatchBruteForce) {
  std::mt19937 rng(777);
  for (int n = 1; n <= 16; ++n) {
    for (int c = 1; c <= n; ++c) {
      for (int trial = 0; trial < 20; ++trial) {
        Oracle oracle{c, {}};
        std::bernoulli_distribution skip(trial % 2 == 0 ? 0.3 : 0.7);
        for (int i = 1; i < n; ++i) {
          if (skip(rng)) oracle.skipped.insert(i);
        }
        const std::vector<int> expected = BruteForceCandidates(n, oracle);
        for (int w : {1, 2, 5}) {
          BisectSearch search(n);
          RunSynchronous(search, w, oracle);
          ASSERT_TRUE(search.Done());
          ASSERT_EQ(search.Candidates(), expected) << "n=" << n << " c=" << c << " w=" << w;
          ASSERT_EQ(search.RemainingCandidates(), static_cast<int>(expected.size()));
          for (int i = search.last_good() + 1; i < search.first_bad(); ++i) {
            ASSERT_EQ(search.VerdictAt(i), v1::VERDICT_SKIP);
          }
          // The culprit is always among the candidates.
          ASSERT_NE(std::find(expected.begin(), expected.end(), c), expected.end());
        }
        RunAsynchronous(n, 3, oracle, rng, /*cancel=*/true);
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST(BisectSearchTest, CopyIsIndependent) {
  BisectSearch a(50);
  a.NextProbes(1);
  BisectSearch b = a;
  ASSERT_TRUE(b.Record(25, v1::VERDICT_GOOD).ok());
  EXPECT_EQ(a.last_good(), 0);
  EXPECT_THAT(a.InFlight(), ElementsAre(25));
  EXPECT_EQ(b.last_good(), 25);
  EXPECT_THAT(b.InFlight(), IsEmpty());
}

TEST(EstimateProbesTest, CountsThePointsOfEveryRound) {
  EXPECT_EQ(BisectSearch::EstimateProbes(1, 7), 0);
  EXPECT_EQ(BisectSearch::EstimateProbes(2, 7), 1);
  EXPECT_EQ(BisectSearch::EstimateProbes(1000, 1), 10);  // git bisect's steps.
  // 1,000 on 7 workers: 7 points in each of 4 rounds (1000 -> 125 -> 16 -> 2 -> 1), the last
  // with only one point left to place.
  EXPECT_EQ(BisectSearch::EstimateProbes(1000, 7), 7 + 7 + 7 + 1);
  for (int n = 1; n <= 300; ++n) {
    for (int w = 1; w <= 8; ++w) {
      EXPECT_LE(BisectSearch::EstimateProbes(n, w), (n - 1)) << n << " " << w;
    }
  }
}

TEST(SearchVerdictTest, AnythingButGoodOrBadCountsAsASkip) {
  BisectSearch search(8);
  ASSERT_TRUE(search.Record(3, v1::VERDICT_AMBIGUOUS).ok());
  ASSERT_TRUE(search.Record(5, v1::VERDICT_UNSPECIFIED).ok());
  EXPECT_EQ(search.VerdictAt(3), v1::VERDICT_SKIP);
  EXPECT_EQ(search.VerdictAt(5), v1::VERDICT_SKIP);
  EXPECT_EQ(search.last_good(), 0);
  EXPECT_EQ(search.first_bad(), 8);
  // A good verdict replaces the skip.
  ASSERT_TRUE(search.Record(3, v1::VERDICT_GOOD).ok());
  EXPECT_EQ(search.VerdictAt(3), v1::VERDICT_GOOD);
  EXPECT_EQ(search.last_good(), 3);
}

}  // namespace
}  // namespace kbisect
