// Copyright 2026 The kbisect Authors.
//
// TaskRunner on a superproject whose benchmark lives in a submodule, with real checkouts
// (GitWorkspace, BuildCache), real builds and real benchmark processes: every probe measures the
// submodule commit its superproject commit records, a build is cached per recorded submodule
// commit (the superproject's tree pins it), and a submodule commit nobody can fetch fails the
// probe as the commit's fault, naming the submodule.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/git_fixture.h"
#include "worker/build_cache.h"
#include "worker/build_key.h"
#include "worker/task_runner.h"
#include "worker/workspace.h"

namespace kbisect {
namespace {

using ::kbisect::testing::GitFixture;
using ::kbisect::testing::RunShell;
using ::kbisect::testing::ShellQuote;
using ::kbisect::testing::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class TaskRunnerSubmodulesTest : public ::testing::Test {
 protected:
  TaskRunnerSubmodulesTest() : runner_(NewSubprocessRunner()) {
    dep_.Init();
    fast_ = dep_.Commit("fast kernel", {{"latency.txt", "1\n"}});
    slow_ = dep_.Commit("slow kernel", {{"latency.txt", "2\n"}});
    super_.Init();
    super_.SetGitlink("third_party/dep", fast_);
    with_fast_ = super_.Commit("add dep", {{".gitmodules",
                                            "[submodule \"dep\"]\n\tpath = third_party/dep\n"
                                            "\turl = ../dep\n"}});
    super_.SetGitlink("third_party/dep", slow_);
    with_slow_ = super_.Commit("bump dep");
  }

  // A task whose build "compiles" the submodule's latency.txt into built.txt (or, without a
  // build, whose benchmark reads the submodule's file itself).
  v1::Task Task(const std::string& sha, bool build) const {
    v1::Task task;
    task.set_task_id("t");
    task.set_repository(super_.path());
    task.set_commit_sha(sha);
    task.set_runs(2);
    if (build) task.set_build_command("cp third_party/dep/latency.txt built.txt");
    task.add_bench_command("sh");
    task.add_bench_command("-c");
    task.add_bench_command(build ? "echo \"Latency: $(cat built.txt) ms\""
                                 : "echo \"Latency: $(cat third_party/dep/latency.txt) ms\"");
    task.mutable_metric()->set_kind(v1::METRIC_KIND_AUTO);
    return task;
  }

  // A superproject commit on branch "lost" that records a dependency commit never pushed.
  std::string CommitRecordingALostDependency() {
    GitFixture unpushed(tmp_.Join("dep-clone"));
    EXPECT_EQ(RunShell(absl::StrCat("git clone -q ", ShellQuote(dep_.path()), " ",
                                    ShellQuote(unpushed.path())))
                  .exit_code,
              0);
    lost_ = unpushed.Commit("never pushed", {{"latency.txt", "9\n"}});
    super_.Branch("lost", with_slow_);
    super_.Checkout("lost");
    super_.SetGitlink("third_party/dep", lost_);
    return super_.Commit("bump dep to a commit it does not have");
  }

  TempDir tmp_{"kbisect-task-runner-submodules"};
  std::unique_ptr<CommandRunner> runner_;
  GitFixture dep_{tmp_.Join("dep")};
  GitFixture super_{tmp_.Join("super")};
  std::string fast_, slow_, lost_, with_fast_, with_slow_;
};

TEST_F(TaskRunnerSubmodulesTest, EachProbeMeasuresTheSubmoduleCommitItRecords) {
  GitWorkspace workspace(tmp_.Join("cache"), 0);
  TaskRunner runner(runner_.get(), &workspace, {});
  for (int i = 0; i < 2; ++i) {
    const v1::TaskResult slow = runner.Run(Task(with_slow_, false), nullptr, nullptr);
    ASSERT_EQ(slow.outcome(), v1::TASK_OUTCOME_SUCCEEDED) << slow.message();
    EXPECT_THAT(slow.samples(), ElementsAre(2, 2));
    const v1::TaskResult fast = runner.Run(Task(with_fast_, false), nullptr, nullptr);
    ASSERT_EQ(fast.outcome(), v1::TASK_OUTCOME_SUCCEEDED) << fast.message();
    EXPECT_THAT(fast.samples(), ElementsAre(1, 1));
  }
}

TEST_F(TaskRunnerSubmodulesTest, ABuildIsCachedPerRecordedSubmoduleCommit) {
  GitWorkspace workspace(tmp_.Join("cache"), 0);
  BuildCache cache(tmp_.Join("cache"), kDefaultBuildCacheSize, runner_.get());
  TaskRunner runner(runner_.get(), &workspace, {});
  runner.set_build_cache(&cache);
  const v1::TaskResult fast = runner.Run(Task(with_fast_, true), nullptr, nullptr);
  ASSERT_EQ(fast.outcome(), v1::TASK_OUTCOME_SUCCEEDED) << fast.message();
  EXPECT_THAT(fast.samples(), ElementsAre(1, 1));
  // The two superproject commits differ only in the gitlink: two trees, two builds.
  const v1::TaskResult slow = runner.Run(Task(with_slow_, true), nullptr, nullptr);
  ASSERT_EQ(slow.outcome(), v1::TASK_OUTCOME_SUCCEEDED) << slow.message();
  EXPECT_THAT(slow.samples(), ElementsAre(2, 2));
  EXPECT_FALSE(slow.timings().build_reused());
  EXPECT_EQ(cache.EntryCount(), 2);
  // And each is served again as built.
  const v1::TaskResult again = runner.Run(Task(with_fast_, true), nullptr, nullptr);
  ASSERT_EQ(again.outcome(), v1::TASK_OUTCOME_SUCCEEDED) << again.message();
  EXPECT_THAT(again.samples(), ElementsAre(1, 1));
  EXPECT_TRUE(again.timings().build_reused());
  EXPECT_EQ(cache.EntryCount(), 2);
}

// A dependency follow-up's probe (Task.dependency): the superproject stays at the commit that
// records the fast kernel, the submodule (or, for a pin, a checkout beside it) moves to the
// probed dependency commit; builds happen in the slot's checkout, never in the build cache.
TEST_F(TaskRunnerSubmodulesTest, ADependencyProbeMeasuresTheProbedDependencyCommit) {
  for (v1::DependencyKind kind : {v1::DEPENDENCY_KIND_SUBMODULE, v1::DEPENDENCY_KIND_PIN_FILE}) {
    const bool submodule = kind == v1::DEPENDENCY_KIND_SUBMODULE;
    SCOPED_TRACE(submodule ? "a submodule" : "a pin file");
    const std::string cache_dir = tmp_.Join(submodule ? "cache-s" : "cache-p");
    GitWorkspace workspace(cache_dir, 0);
    BuildCache cache(cache_dir, kDefaultBuildCacheSize, runner_.get());
    TaskRunner runner(runner_.get(), &workspace, {});
    runner.set_build_cache(&cache);
    auto task = [&](const std::string& dependency_sha) {
      v1::Task task;
      task.set_task_id("d");
      task.set_repository(dep_.path());
      task.set_commit_sha(dependency_sha);
      task.set_runs(2);
      v1::DependencyDescent* descent = task.mutable_dependency();
      descent->set_kind(kind);
      descent->set_superproject(super_.path());
      descent->set_superproject_sha(with_fast_);
      descent->set_path(submodule ? "third_party/dep" : "pins/dep.txt");
      task.set_build_command(
          "cp \"$KBISECT_DEPENDENCY_DIR/latency.txt\" built.txt && "
          "echo \"$KBISECT_SUPERPROJECT_COMMIT\" > superproject.txt");
      task.add_bench_command("sh");
      task.add_bench_command("-c");
      task.add_bench_command(
          "test \"$(cat superproject.txt)\" = \"$KBISECT_SUPERPROJECT_COMMIT\" && "
          "echo \"Latency: $(cat built.txt) ms\"");
      task.mutable_metric()->set_kind(v1::METRIC_KIND_AUTO);
      return task;
    };
    for (int i = 0; i < 2; ++i) {
      const v1::TaskResult slow = runner.Run(task(slow_), nullptr, nullptr);
      ASSERT_EQ(slow.outcome(), v1::TASK_OUTCOME_SUCCEEDED) << slow.message() << slow.log_tail();
      EXPECT_THAT(slow.samples(), ElementsAre(2, 2));
      const v1::TaskResult fast = runner.Run(task(fast_), nullptr, nullptr);
      ASSERT_EQ(fast.outcome(), v1::TASK_OUTCOME_SUCCEEDED) << fast.message() << fast.log_tail();
      EXPECT_THAT(fast.samples(), ElementsAre(1, 1));
    }
    EXPECT_EQ(cache.EntryCount(), 0);
  }
}

// A nested descent under a pin: a top repository pins the superproject (checked out beside
// its checkout), whose submodule moves to the probed commit there, without first going to the
// commit the superproject records.
TEST_F(TaskRunnerSubmodulesTest, ANestedDescentUnderAPinChecksTheChainOut) {
  GitFixture top(tmp_.Join("top"));
  top.Init();
  const std::string pinned = top.Commit("pin super", {{"pins/super.txt", with_fast_ + "\n"}});
  GitWorkspace workspace(tmp_.Join("cache-n"), 0);
  TaskRunner runner(runner_.get(), &workspace, {});
  auto task = [&](const std::string& dependency_sha) {
    v1::Task task;
    task.set_task_id("n");
    task.set_repository(dep_.path());
    task.set_commit_sha(dependency_sha);
    task.set_runs(1);
    v1::DependencyDescent* descent = task.mutable_dependency();
    descent->set_kind(v1::DEPENDENCY_KIND_SUBMODULE);
    descent->set_superproject(super_.path());
    descent->set_superproject_sha(with_fast_);
    descent->set_path("third_party/dep");
    v1::DependencyDescent* pin = descent->mutable_outer();
    pin->set_kind(v1::DEPENDENCY_KIND_PIN_FILE);
    pin->set_superproject(top.path());
    pin->set_superproject_sha(pinned);
    pin->set_path("pins/super.txt");
    task.add_bench_command("sh");
    task.add_bench_command("-c");
    task.add_bench_command(
        "test -f pins/super.txt && echo \"Latency: $(cat \"$KBISECT_DEPENDENCY_DIR/latency.txt\") "
        "ms\"");
    task.mutable_metric()->set_kind(v1::METRIC_KIND_AUTO);
    return task;
  };
  const v1::TaskResult slow = runner.Run(task(slow_), nullptr, nullptr);
  ASSERT_EQ(slow.outcome(), v1::TASK_OUTCOME_SUCCEEDED) << slow.message() << slow.log_tail();
  EXPECT_THAT(slow.samples(), ElementsAre(2));
  const v1::TaskResult fast = runner.Run(task(fast_), nullptr, nullptr);
  ASSERT_EQ(fast.outcome(), v1::TASK_OUTCOME_SUCCEEDED) << fast.message() << fast.log_tail();
  EXPECT_THAT(fast.samples(), ElementsAre(1));
}

TEST(DependencyDirTest, ASubmoduleIsAtItsPathAPinBesideTheCheckout) {
  v1::DependencyDescent descent;
  descent.set_kind(v1::DEPENDENCY_KIND_SUBMODULE);
  descent.set_path("third_party/dep");
  EXPECT_EQ(DependencyDir("/cache/worktrees/k/slot-0", descent),
            "/cache/worktrees/k/slot-0/third_party/dep");
  descent.set_kind(v1::DEPENDENCY_KIND_PIN_FILE);
  descent.set_path("cmake/llvm-hash.txt");
  EXPECT_EQ(DependencyDir("/cache/worktrees/k/slot-0", descent),
            "/cache/worktrees/k/slot-0-dependency");
  // Nested: inside the outer dependency's directory.
  v1::DependencyDescent nested;
  nested.set_kind(v1::DEPENDENCY_KIND_SUBMODULE);
  nested.set_path("third_party/mlir");
  *nested.mutable_outer() = descent;
  EXPECT_EQ(DependencyDir("/w/slot-0", nested), "/w/slot-0-dependency/third_party/mlir");
  descent.set_kind(v1::DEPENDENCY_KIND_SUBMODULE);
  descent.set_path("third_party/dep");
  *nested.mutable_outer() = descent;
  EXPECT_EQ(DependencyDir("/w/slot-0", nested), "/w/slot-0/third_party/dep/third_party/mlir");
}

TEST_F(TaskRunnerSubmodulesTest, AnUnfetchableSubmoduleCommitFailsTheProbeNamingIt) {
  const std::string broken = CommitRecordingALostDependency();
  for (bool build : {false, true}) {
    SCOPED_TRACE(build ? "with a cached build" : "without a build");
    GitWorkspace workspace(tmp_.Join(build ? "cache-b" : "cache"), 0);
    BuildCache cache(tmp_.Join("cache-b"), kDefaultBuildCacheSize, runner_.get());
    TaskRunner runner(runner_.get(), &workspace, {});
    if (build) runner.set_build_cache(&cache);
    const v1::TaskResult result = runner.Run(Task(broken, build), nullptr, nullptr);
    // Not an infrastructure error, which another worker would retry in vain.
    EXPECT_EQ(result.outcome(), v1::TASK_OUTCOME_CHECKOUT_FAILED) << result.message();
    EXPECT_THAT(result.message(), HasSubstr(absl::StrCat("checkout of ", broken.substr(0, 7))));
    EXPECT_THAT(result.message(), HasSubstr("submodule 'third_party/dep'"));
    EXPECT_THAT(result.message(), HasSubstr(lost_.substr(0, 12)));
    EXPECT_THAT(result.message(), HasSubstr(dep_.path()));
    EXPECT_EQ(result.samples_size(), 0);
    // The commit before it still checks out and measures in the same place.
    const v1::TaskResult slow = runner.Run(Task(with_slow_, build), nullptr, nullptr);
    ASSERT_EQ(slow.outcome(), v1::TASK_OUTCOME_SUCCEEDED) << slow.message();
    EXPECT_THAT(slow.samples(), ElementsAre(2, 2));
  }
}

}  // namespace
}  // namespace kbisect
