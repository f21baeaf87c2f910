// Copyright 2026 The kbisect Authors.
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "coordinator/job/bisect_job.h"
#include "coordinator/job/build_ahead.h"
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
  // 6 BAD leaves (0, 6), split at 3; 6 GOOD leaves (6, 12), split at 9. Pieces ascending.
  EXPECT_THAT(PlanBuildAhead(search, 1, 10, false), ElementsAre(3, 9));
  // While BAD is measured its worker measures the reference GOOD next: index 0 first.
  EXPECT_THAT(PlanBuildAhead(search, 1, 10, true), ElementsAre(0, 3, 9));
}

TEST(PlanBuildAheadTest, TwoProbesInFlightHintThePointsOfEachPieceTheyLeave) {
  BisectSearch search(12);
  search.MarkInFlight(4);
  search.MarkInFlight(8);
  // Once both report, the open interval is one of (0, 4), (4, 8), (8, 12), and the next round
  // splits it with two points: 1 2, 5 6, 9 10 (PlanProbes' split of four candidates, nearest
  // to the piece's ends first). Before decision 44 the hints were the points placed with one
  // probe's result and the other still in flight (6, 2, 9, 10, 1), which the next round does
  // not probe. Round-robin by rank, pieces ascending: 1 5 9 | 2 6 10.
  EXPECT_THAT(PlanBuildAhead(search, 2, 10, false), ElementsAre(1, 5, 9, 2, 6, 10));
}

TEST(PlanBuildAheadTest, TheLimitKeepsTheMostUsefulFirstAndZeroGivesNothing) {
  BisectSearch search(12);
  search.MarkInFlight(4);
  search.MarkInFlight(8);
  EXPECT_THAT(PlanBuildAhead(search, 2, 3, false), ElementsAre(1, 5, 9));
  EXPECT_THAT(PlanBuildAhead(search, 2, 1, true), ElementsAre(0));
  EXPECT_THAT(PlanBuildAhead(search, 2, 0, true), IsEmpty());
}

TEST(PlanBuildAheadTest, InFlightAndRecordedIndicesAreNeverHinted) {
  BisectSearch search(12);
  search.MarkInFlight(6);
  ASSERT_TRUE(search.Record(9, v1::VERDICT_SKIP).ok());
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
  // Nothing in flight: the next probes split the open interval (built while, say, the reference
  // GOOD is measured).
  EXPECT_THAT(PlanBuildAhead(BisectSearch(12), 1, 10, false), ElementsAre(6));
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

TEST(BisectJobBuildAheadTest, HintsAreTheReferenceGoodAndThePointsOfThePiecesLeft) {
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
  // Each piece the probes in flight leave, split as the next round would split it.
  std::vector<int> bounds = {0};
  for (int probe : search.InFlight()) bounds.push_back(probe);
  bounds.push_back(100);
  std::set<int> expected;
  for (size_t i = 0; i + 1 < bounds.size(); ++i) {
    BisectSearch child(100);
    if (bounds[i] > 0) {
      ASSERT_TRUE(child.Record(bounds[i], v1::VERDICT_GOOD).ok());
    }
    if (bounds[i + 1] < 100) {
      ASSERT_TRUE(child.Record(bounds[i + 1], v1::VERDICT_BAD).ok());
    }
    for (int index : child.PlanProbes(4)) expected.insert(index);
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

TEST(BuildsToKeepTest, GoodTheEndsOfTheOpenIntervalAndThePointsInsideItInFlightOnceEach) {
  EXPECT_THAT(BuildsToKeep(0, 100, {}), ElementsAre(0, 100));
  EXPECT_THAT(BuildsToKeep(41, 42, {}), ElementsAre(0, 41, 42));
  // Every later end is one of the points in flight inside the interval; those outside it (a
  // probe the search no longer needs) are not kept.
  EXPECT_THAT(BuildsToKeep(10, 50, {20, 5, 30, 60, 20}), ElementsAre(0, 10, 50, 20, 30));
  std::vector<v1::CommitRef> commits(10);
  for (int i = 0; i < 10; ++i) commits[i].set_sha(absl::StrCat("sha", i));
  v1::Task task;
  task.set_build_command("make");
  task.set_commit_sha("sha4");
  AddBuildsToKeep(commits, 4, 7, {5}, &task);
  EXPECT_THAT(task.keep_build_shas(), ElementsAre("sha0", "sha7", "sha5"))
      << "its own commit left out";
  v1::Task unbuilt;
  unbuilt.set_commit_sha("sha5");
  AddBuildsToKeep(commits, 4, 7, {5}, &unbuilt);
  EXPECT_THAT(unbuilt.keep_build_shas(), IsEmpty()) << "no build command: no build to keep";
}

TEST(BisectJobBuildAheadTest, EveryTaskHandedOutNamesTheBuildsTheJobWillUseAgain) {
  BisectJob job("job", MakeSpec("make"), MakeCommits(100), kNow);
  const std::vector<v1::Task> handed = job.TakeTasks(4, kNow);
  ASSERT_EQ(handed.size(), 4u);
  // GOOD, BAD, then the probes in flight (the points this round placed).
  std::vector<std::string> keep = {"sha0", "sha100"};
  for (const v1::Task& task : handed) {
    if (task.kind() == v1::PROBE_KIND_BISECT) keep.push_back(task.commit_sha());
  }
  ASSERT_GT(keep.size(), 2u);
  for (const v1::Task& task : handed) {
    std::vector<std::string> expected;
    for (const std::string& sha : keep) {
      if (task.commit_sha() != sha) expected.push_back(sha);
    }
    EXPECT_EQ(
        std::vector<std::string>(task.keep_build_shas().begin(), task.keep_build_shas().end()),
        expected)
        << task.commit_sha();
  }
  BisectJob unbuilt("job", MakeSpec(""), MakeCommits(100), kNow);
  for (const v1::Task& task : unbuilt.TakeTasks(3, kNow)) {
    EXPECT_THAT(task.keep_build_shas(), IsEmpty());
  }
}

}  // namespace
}  // namespace kbisect
