// Copyright 2026 The kbisect Authors.
#include "coordinator/job/probe_book.h"

#include <string>
#include <vector>

#include "common/spec/action_digest.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

class ProbeBookTest : public ::testing::Test {
 protected:
  ProbeBookTest() : book_("job", Spec(), &commits_) {
    for (int i = 0; i <= 10; ++i) {
      v1::CommitRef commit;
      commit.set_sha(std::string(39, 'a') + std::to_string(i % 10));
      commit.set_index(i);
      commits_.push_back(commit);
    }
  }
  // The job's spec: 3 runs a commit of ./bench.sh.
  static v1::JobSpec Spec() {
    v1::JobSpec spec;
    spec.set_runs_per_commit(3);
    spec.add_bench_command("./bench.sh");
    return spec;
  }

  std::vector<v1::CommitRef> commits_;
  ProbeBook book_;
};

TEST_F(ProbeBookTest, TasksGetRowsAndIdsInCreationOrder) {
  const std::string bad = book_.NewTask(v1::PROBE_KIND_BASELINE_BAD, 10, 0);
  const std::string probe = book_.NewTask(v1::PROBE_KIND_BISECT, 5, 1);
  EXPECT_EQ(bad, "job/p0");
  EXPECT_EQ(probe, "job/p1");
  ASSERT_EQ(book_.probe_count(), 2);
  EXPECT_EQ(book_.probe(1).index(), 5);
  EXPECT_EQ(book_.probe(1).round(), 1);
  EXPECT_EQ(book_.probe(1).state(), v1::PROBE_STATE_PENDING);
  EXPECT_EQ(book_.at(probe).task.runs(), 3);
  EXPECT_EQ(book_.at(probe).task.bench_command(0), "./bench.sh");
  EXPECT_EQ(book_.InFlightCount(), 0);
}

TEST_F(ProbeBookTest, HandOutRunsItAndTakesItOffTheQueue) {
  const std::string bad = book_.NewTask(v1::PROBE_KIND_BASELINE_BAD, 10, 0);
  book_.QueueBack(bad);
  book_.HandOut(bad, "w3");
  EXPECT_TRUE(book_.queue().empty());
  EXPECT_TRUE(book_.at(bad).active);
  EXPECT_EQ(book_.probe(0).state(), v1::PROBE_STATE_RUNNING);
  EXPECT_EQ(book_.probe(0).worker(), "w3");
  EXPECT_THAT(book_.ActiveTaskIds(), ::testing::ElementsAre(bad));
}

TEST_F(ProbeBookTest, ExtendAddsRunsToTheSameRowOnTheSameWorkerFirstInLine) {
  const std::string probe = book_.NewTask(v1::PROBE_KIND_BISECT, 5, 1);
  book_.QueueBack(book_.NewTask(v1::PROBE_KIND_BISECT, 7, 1));
  book_.HandOut(probe, "w1");
  book_.mutable_probe(0).add_runs();
  book_.Extend(0, 4);
  ASSERT_EQ(book_.queue().front(), "job/p0.1");
  const ProbeBook::TaskEntry& extension = book_.at("job/p0.1");
  EXPECT_EQ(extension.probe, 0);
  EXPECT_EQ(extension.pinned_worker, "w1");
  EXPECT_EQ(extension.task.runs(), 4);
  EXPECT_EQ(book_.probe(0).state(), v1::PROBE_STATE_PENDING);
  EXPECT_EQ(book_.probe_count(), 2);  // No new row.
}

TEST_F(ProbeBookTest, CancelTaskReportsOnlyRunningTasksForKilling) {
  const std::string running = book_.NewTask(v1::PROBE_KIND_BISECT, 5, 1);
  const std::string waiting = book_.NewTask(v1::PROBE_KIND_BISECT, 7, 1);
  book_.QueueBack(waiting);
  book_.HandOut(running, "w1");
  std::vector<std::string> to_cancel;
  book_.CancelTask(book_.at(running), running, "gone", absl::UnixEpoch(), &to_cancel);
  book_.CancelTask(book_.at(waiting), waiting, "gone", absl::UnixEpoch(), &to_cancel);
  EXPECT_THAT(to_cancel, ::testing::ElementsAre(running));
  EXPECT_EQ(book_.probe(1).state(), v1::PROBE_STATE_CANCELLED);
  EXPECT_EQ(book_.probe(1).message(), "gone");
  book_.DropDoneFromQueue();
  EXPECT_TRUE(book_.queue().empty());
  EXPECT_EQ(book_.InFlightCount(), 0);
}

TEST_F(ProbeBookTest, TasksCarryTheActionDigestOfTheirTreeAndSpec) {
  // Commit 3 and 7 share a tree (a revert); commit 5's tree is unknown.
  commits_[3].set_tree_sha(std::string(40, 'b'));
  commits_[7].set_tree_sha(std::string(40, 'b'));
  const v1::Task& three = book_.at(book_.NewTask(v1::PROBE_KIND_BISECT, 3, 1)).task;
  const v1::Task& seven = book_.at(book_.NewTask(v1::PROBE_KIND_BISECT, 7, 1)).task;
  EXPECT_EQ(three.action_digest(), ActionDigest(std::string(40, 'b'), SpecDigest(Spec()), ""));
  EXPECT_EQ(three.action_digest(), seven.action_digest());
  EXPECT_TRUE(book_.at(book_.NewTask(v1::PROBE_KIND_BISECT, 5, 1)).task.action_digest().empty());
}

TEST(AddTimingsTest, SumsPhasesAndReportsABuildReusedOnlyWhenEveryResultReusedIt) {
  v1::TaskTimings built;
  built.mutable_build()->set_seconds(7);
  v1::TaskTimings reused;
  reused.set_build_reused(true);
  reused.mutable_bench()->set_seconds(2);

  v1::TaskTimings total;
  AddTimings(reused, &total, /*first=*/true);
  EXPECT_TRUE(total.build_reused()) << "the first result replaces the sum";
  AddTimings(reused, &total, /*first=*/false);
  EXPECT_TRUE(total.build_reused());
  EXPECT_EQ(total.bench().seconds(), 4);
  AddTimings(built, &total, /*first=*/false);
  EXPECT_FALSE(total.build_reused()) << "one of the probe's tasks built";
  EXPECT_EQ(total.build().seconds(), 7);
}

TEST(AddTimingsTest, ABuildIsFetchedWhenSomeTaskFetchedItAndNoneBuiltHere) {
  v1::TaskTimings fetched;
  fetched.set_build_fetched(true);
  fetched.set_build_store("/shared/store");
  v1::TaskTimings reused;
  reused.set_build_reused(true);
  v1::TaskTimings built;

  v1::TaskTimings total;
  AddTimings(reused, &total, /*first=*/true);
  AddTimings(fetched, &total, /*first=*/false);
  EXPECT_TRUE(total.build_fetched()) << "one fetched, the other found in the host's cache";
  EXPECT_FALSE(total.build_reused());
  EXPECT_EQ(total.build_store(), "/shared/store");
  AddTimings(reused, &total, /*first=*/false);
  EXPECT_TRUE(total.build_fetched());
  AddTimings(built, &total, /*first=*/false);
  EXPECT_FALSE(total.build_fetched()) << "one of the probe's tasks built here";
}

}  // namespace
}  // namespace kbisect
