// Copyright 2026 The kbisect Authors.
#include "coordinator/job/build_ahead.h"

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "coordinator/job/bisect_job.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

TEST(PlanBuildAheadTest, OneProbeInFlightHintsTheMidpointsOfBothHalves) {
  BisectSearch search(12);
  search.MarkInFlight(6);
  // 6 GOOD leaves (6, 12), split at 9; 6 BAD leaves (0, 6), split at 3. GOOD's child first.
  EXPECT_THAT(PlanBuildAhead(search, 1, 10, false), ElementsAre(9, 3));
  // While BAD is measured its worker measures the reference GOOD next: index 0 first.
  EXPECT_THAT(PlanBuildAhead(search, 1, 10, true), ElementsAre(0, 9, 3));
}

TEST(PlanBuildAheadTest, TwoProbesInFlightHintExactlyTheirChildrensPointsNearestFirst) {
  BisectSearch search(12);
  search.MarkInFlight(4);
  search.MarkInFlight(8);
  // Children, each nearest to its probe first:
  //   4 GOOD: (4, 12) with 8 in flight -> 6, 10     4 BAD: (0, 4) -> 2, 1
  //   8 GOOD: (8, 12) -> 9, 10                       8 BAD: (0, 8) with 4 in flight -> 6, 2
  // Round-robin by rank, without repeats: 6 2 9 | 10 1.
  EXPECT_THAT(PlanBuildAhead(search, 2, 10, false), ElementsAre(6, 2, 9, 10, 1));
}

TEST(PlanBuildAheadTest, TheLimitKeepsTheMostUsefulFirstAndZeroGivesNothing) {
  BisectSearch search(12);
  search.MarkInFlight(4);
  search.MarkInFlight(8);
  EXPECT_THAT(PlanBuildAhead(search, 2, 3, false), ElementsAre(6, 2, 9));
  EXPECT_THAT(PlanBuildAhead(search, 2, 1, true), ElementsAre(0));
  EXPECT_THAT(PlanBuildAhead(search, 2, 0, true), IsEmpty());
}

TEST(PlanBuildAheadTest, InFlightAndRecordedIndicesAreNeverHinted) {
  BisectSearch search(12);
  search.MarkInFlight(6);
  ASSERT_TRUE(search.Record(9, Verdict::kSkip).ok());
  search.MarkInFlight(3);
  const std::vector<int> hints = PlanBuildAhead(search, 2, 20, false);
  EXPECT_FALSE(hints.empty());
  for (int index : hints) {
    EXPECT_NE(index, 3);
    EXPECT_NE(index, 6);
    EXPECT_NE(index, 9);
    EXPECT_GT(index, 0);
    EXPECT_LT(index, 12);
  }
  // Nothing in flight: nothing to guess from.
  EXPECT_THAT(PlanBuildAhead(BisectSearch(12), 4, 10, false), IsEmpty());
}

std::vector<v1::CommitRef> MakeCommits(int n) {
  std::vector<v1::CommitRef> commits;
  for (int i = 0; i <= n; ++i) {
    v1::CommitRef ref;
    ref.set_sha(absl::StrCat("sha", i));
    ref.set_index(i);
    commits.push_back(ref);
  }
  return commits;
}

v1::JobSpec MakeSpec(const std::string& build) {
  v1::JobSpec spec;
  spec.set_repository("/repo");
  spec.set_good("v1");
  spec.add_bench_command("./bench.sh");
  spec.set_build_command(build);
  (*spec.mutable_env())["MODE"] = "fast";
  spec.mutable_build_timeout()->set_seconds(77);
  return spec;
}

TEST(BisectJobBuildAheadTest, HintsAreTheReferenceGoodAndTheChildrenOfTheProbesInFlight) {
  BisectJob job("job", MakeSpec("make"), MakeCommits(100), kNow);
  const std::vector<v1::Task> handed = job.TakeTasks(4, kNow);
  ASSERT_EQ(handed.size(), 4u);
  // With a build step the second worker calibrates, building GOOD beside BAD (decision 35).
  EXPECT_EQ(handed[1].kind(), v1::PROBE_KIND_BASELINE_GOOD);
  BisectSearch search(100);
  for (const v1::Task& task : handed) {
    if (task.kind() == v1::PROBE_KIND_BISECT) search.MarkInFlight(task.commit_index());
  }
  ASSERT_EQ(search.InFlight().size(), 2u) << "BAD, GOOD and two first-wave probes";
  const std::vector<v1::Task> hints = job.BuildAheadTasks(50);
  ASSERT_FALSE(hints.empty());
  EXPECT_EQ(hints[0].commit_index(), 0) << "the reference GOOD while BAD is measured";
  std::set<int> expected;
  for (int probe : search.InFlight()) {
    for (Verdict verdict : {Verdict::kGood, Verdict::kBad}) {
      BisectSearch child = search;
      ASSERT_TRUE(child.Record(probe, verdict).ok());
      for (int index : child.PlanProbes(4)) expected.insert(index);
    }
  }
  std::set<int> got;
  for (size_t i = 1; i < hints.size(); ++i) got.insert(hints[i].commit_index());
  EXPECT_EQ(got, expected);
  for (const v1::Task& hint : hints) {
    EXPECT_EQ(hint.kind(), v1::PROBE_KIND_BUILD);
    EXPECT_EQ(hint.job_id(), "job");
    EXPECT_EQ(hint.repository(), "/repo");
    EXPECT_EQ(hint.commit_sha(), absl::StrCat("sha", hint.commit_index()));
    EXPECT_EQ(hint.build_command(), "make");
    EXPECT_EQ(hint.env().at("MODE"), "fast");
    EXPECT_EQ(hint.build_timeout().seconds(), 77);
    EXPECT_TRUE(hint.task_id().empty());
    EXPECT_EQ(hint.bench_command_size(), 0);
  }
  EXPECT_EQ(job.BuildAheadTasks(2).size(), 2u);
  EXPECT_THAT(job.BuildAheadTasks(0), IsEmpty());
}

TEST(BisectJobBuildAheadTest, NothingWithoutABuildCommandOrOnceCancelled) {
  BisectJob unbuilt("job", MakeSpec(""), MakeCommits(100), kNow);
  ASSERT_EQ(unbuilt.TakeTasks(3, kNow).size(), 3u);
  EXPECT_THAT(unbuilt.BuildAheadTasks(10), IsEmpty());

  BisectJob built("job", MakeSpec("make"), MakeCommits(100), kNow);
  ASSERT_EQ(built.TakeTasks(3, kNow).size(), 3u);
  ASSERT_FALSE(built.BuildAheadTasks(10).empty());
  built.Cancel("test", kNow);
  EXPECT_THAT(built.BuildAheadTasks(10), IsEmpty());
}

}  // namespace
}  // namespace kbisect
