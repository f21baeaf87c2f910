// Copyright 2026 The kbisect Authors.
//
// TaskRunner on real checkouts of a generated repository (GitWorkspace, BuildCache) with real
// build and benchmark processes: a confirmation builds each of its commits once and alternates
// only its runs; a commit built before is not built again.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/time_util.h"
#include "gtest/gtest.h"
#include "tests/testing/git_fixture.h"
#include "worker/build_cache.h"
#include "worker/task_runner.h"
#include "worker/workspace.h"

namespace kbisect {
namespace {

using ::google::protobuf::util::TimeUtil;
using ::kbisect::testing::GitFixture;
using ::kbisect::testing::ReadFile;
using ::kbisect::testing::ShellQuote;
using ::kbisect::testing::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class TaskRunnerBuildCacheTest : public ::testing::Test {
 protected:
  TaskRunnerBuildCacheTest() : runner_(NewSubprocessRunner()), repo_(tmp_.Join("repo")) {
    repo_.Init();
    good_ = repo_.Commit("good", {{"latency.txt", "1\n"}});
    last_good_ = repo_.Commit("docs", {{"README", "fast\n"}});
    culprit_ = repo_.Commit("slower", {{"latency.txt", "2\n"}});
  }

  // A task whose build logs its commit and "compiles" latency.txt into built.txt, and whose
  // benchmark logs the commit it measures and reports built.txt.
  v1::Task Task(const std::string& sha) const {
    v1::Task task;
    task.set_task_id("t");
    task.set_repository(repo_.path());
    task.set_commit_sha(sha);
    task.set_runs(3);
    task.set_build_command(absl::StrCat("echo \"$KBISECT_COMMIT\" >> ", ShellQuote(builds_log_),
                                        " && cp latency.txt built.txt"));
    task.add_bench_command("sh");
    task.add_bench_command("-c");
    task.add_bench_command(absl::StrCat("echo \"$KBISECT_COMMIT\" >> ", ShellQuote(runs_log_),
                                        " && echo \"Latency: $(cat built.txt) ms\""));
    task.mutable_metric()->set_kind(v1::METRIC_KIND_AUTO);
    return task;
  }

  v1::Task Confirmation() const {
    v1::Task task = Task(culprit_);
    task.set_kind(v1::PROBE_KIND_CONFIRM);
    task.set_paired_commit_sha(last_good_);
    return task;
  }

  static std::vector<std::string> Lines(const std::string& path) {
    return absl::StrSplit(ReadFile(path), '\n', absl::SkipEmpty());
  }

  // A slot: its workspace, the host's build cache (when `cached`) and its task runner.
  struct Slot {
    Slot(const std::string& cache_dir, int slot, bool cached, CommandRunner* commands)
        : workspace(cache_dir, slot), runner(commands, &workspace, {}) {
      if (cached) {
        cache = std::make_unique<BuildCache>(cache_dir, kDefaultBuildCacheSize, commands);
        runner.set_build_cache(cache.get());
      }
    }
    GitWorkspace workspace;
    std::unique_ptr<BuildCache> cache;
    TaskRunner runner;
  };

  TempDir tmp_{"kbisect-task-runner-cache"};
  std::unique_ptr<CommandRunner> runner_;
  GitFixture repo_;
  std::string good_, last_good_, culprit_;
  const std::string builds_log_ = tmp_.Join("builds.log");
  const std::string runs_log_ = tmp_.Join("runs.log");
};

TEST_F(TaskRunnerBuildCacheTest, AConfirmationBuildsEachCommitOnceAndAlternatesOnlyTheRuns) {
  Slot slot(tmp_.Join("cache"), 0, /*cached=*/true, runner_.get());
  const v1::TaskResult result = slot.runner.Run(Confirmation(), nullptr, nullptr);
  ASSERT_EQ(result.outcome(), v1::TASK_OUTCOME_SUCCEEDED) << result.message();
  EXPECT_THAT(result.samples(), ElementsAre(2, 2, 2));
  EXPECT_THAT(result.paired_samples(), ElementsAre(1, 1, 1));
  EXPECT_THAT(Lines(builds_log_), ElementsAre(last_good_, culprit_));
  EXPECT_THAT(Lines(runs_log_),
              ElementsAre(last_good_, culprit_, last_good_, culprit_, last_good_, culprit_));
  EXPECT_FALSE(result.timings().build_reused());

  // The search probed both commits before; confirming again builds nothing.
  const v1::TaskResult again = slot.runner.Run(Confirmation(), nullptr, nullptr);
  ASSERT_EQ(again.outcome(), v1::TASK_OUTCOME_SUCCEEDED) << again.message();
  EXPECT_THAT(again.samples(), ElementsAre(2, 2, 2));
  EXPECT_THAT(again.paired_samples(), ElementsAre(1, 1, 1));
  EXPECT_EQ(Lines(builds_log_).size(), 2u);
  EXPECT_TRUE(again.timings().build_reused());
}

TEST_F(TaskRunnerBuildCacheTest, ASecondProbeOfABuiltCommitRunsNoBuildOnAnySlot) {
  Slot slot0(tmp_.Join("cache"), 0, /*cached=*/true, runner_.get());
  const v1::TaskResult first = slot0.runner.Run(Task(culprit_), nullptr, nullptr);
  ASSERT_EQ(first.outcome(), v1::TASK_OUTCOME_SUCCEEDED) << first.message();
  EXPECT_FALSE(first.timings().build_reused());
  EXPECT_THAT(Lines(builds_log_), ElementsAre(culprit_));

  std::vector<v1::TaskPhase> phases;
  const v1::TaskResult second = slot0.runner.Run(
      Task(culprit_), nullptr, [&](v1::TaskPhase phase, int, int) { phases.push_back(phase); });
  ASSERT_EQ(second.outcome(), v1::TASK_OUTCOME_SUCCEEDED) << second.message();
  EXPECT_THAT(second.samples(), ElementsAre(2, 2, 2));
  EXPECT_TRUE(second.timings().build_reused());
  EXPECT_EQ(TimeUtil::DurationToNanoseconds(second.timings().build()), 0);
  EXPECT_THAT(phases,
              ElementsAre(v1::TASK_PHASE_CHECKOUT, v1::TASK_PHASE_BENCH, v1::TASK_PHASE_BENCH,
                          v1::TASK_PHASE_BENCH, v1::TASK_PHASE_REPORTING))
      << "no build phase";

  // Another slot of the host (another process would do the same) reuses it too.
  Slot slot1(tmp_.Join("cache"), 1, /*cached=*/true, runner_.get());
  const v1::TaskResult other = slot1.runner.Run(Task(culprit_), nullptr, nullptr);
  ASSERT_EQ(other.outcome(), v1::TASK_OUTCOME_SUCCEEDED) << other.message();
  EXPECT_TRUE(other.timings().build_reused());
  EXPECT_THAT(Lines(builds_log_), ElementsAre(culprit_));
}

TEST_F(TaskRunnerBuildCacheTest, ABuildFailureInTheCacheIsReportedLikeAnyBuildFailure) {
  Slot slot(tmp_.Join("cache"), 0, /*cached=*/true, runner_.get());
  v1::Task task = Task(culprit_);
  task.set_build_command("echo compiling; echo 'error: boom' >&2; exit 2");
  const v1::TaskResult result = slot.runner.Run(task, nullptr, nullptr);
  EXPECT_EQ(result.outcome(), v1::TASK_OUTCOME_BUILD_FAILED);
  EXPECT_THAT(result.message(), HasSubstr(absl::StrCat("build at ", culprit_.substr(0, 7))));
  EXPECT_THAT(result.message(), HasSubstr("exited with code 2"));
  EXPECT_THAT(result.log_tail(), HasSubstr("error: boom"));
  EXPECT_EQ(result.samples_size(), 0);
  EXPECT_FALSE(result.timings().build_reused());
}

TEST_F(TaskRunnerBuildCacheTest, WithoutTheCacheAConfirmationBuildsOnceInEachOfTwoCheckouts) {
  Slot slot(tmp_.Join("cache"), 2, /*cached=*/false, runner_.get());
  v1::Task task = Confirmation();
  task.set_bench_command(
      2, absl::StrCat("pwd >> ", ShellQuote(tmp_.Join("dirs.log")), " && ", task.bench_command(2)));
  const v1::TaskResult result = slot.runner.Run(task, nullptr, nullptr);
  ASSERT_EQ(result.outcome(), v1::TASK_OUTCOME_SUCCEEDED) << result.message();
  EXPECT_THAT(result.samples(), ElementsAre(2, 2, 2));
  EXPECT_THAT(result.paired_samples(), ElementsAre(1, 1, 1));
  EXPECT_THAT(Lines(builds_log_), ElementsAre(last_good_, culprit_));
  EXPECT_THAT(Lines(runs_log_),
              ElementsAre(last_good_, culprit_, last_good_, culprit_, last_good_, culprit_));
  const std::vector<std::string> dirs = Lines(tmp_.Join("dirs.log"));
  ASSERT_EQ(dirs.size(), 6u);
  EXPECT_THAT(dirs[0], ::testing::EndsWith("/slot-2-b"));
  EXPECT_THAT(dirs[1], ::testing::EndsWith("/slot-2"));
  EXPECT_EQ(dirs[2], dirs[0]);
  EXPECT_EQ(dirs[3], dirs[1]);
  EXPECT_FALSE(result.timings().build_reused());
}

TEST_F(TaskRunnerBuildCacheTest, WithoutABuildCommandNothingIsCached) {
  Slot slot(tmp_.Join("cache"), 0, /*cached=*/true, runner_.get());
  v1::Task task = Task(culprit_);
  task.clear_build_command();
  task.set_bench_command(2, "echo \"Latency: $(cat latency.txt) ms\"");
  const v1::TaskResult result = slot.runner.Run(task, nullptr, nullptr);
  ASSERT_EQ(result.outcome(), v1::TASK_OUTCOME_SUCCEEDED) << result.message();
  EXPECT_THAT(result.samples(), ElementsAre(2, 2, 2));
  EXPECT_FALSE(result.timings().build_reused());
  EXPECT_EQ(slot.cache->EntryCount(), 0) << "measured in the slot's checkout";
}

}  // namespace
}  // namespace kbisect
