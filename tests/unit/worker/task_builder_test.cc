// Copyright 2026 The kbisect Authors.
//
// The worker's one build path: which mode a task's commits are prepared in (BuildModeFor), and
// SlotBuilder in each mode with real build processes, on a fake workspace that hands out a temp
// directory per lane (in place, checkout only) and on a real repository's checkouts (the cache).
// The task runner's tests run the same path through TaskRunner.
#include "worker/task_builder.h"

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/git_fixture.h"
#include "worker/build_cache.h"
#include "worker/build_request.h"

namespace kbisect {
namespace {

using ::kbisect::testing::GitFixture;
using ::kbisect::testing::ReadFile;
using ::kbisect::testing::ShellQuote;
using ::kbisect::testing::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

v1::Task WithBuild(const std::string& command) {
  v1::Task task;
  task.set_commit_sha("0123456789abcdef0123456789abcdef01234567");
  task.set_build_command(command);
  return task;
}

TEST(BuildModeForTest, ATaskWithoutABuildCommandIsOnlyCheckedOut) {
  const v1::Task task = WithBuild("");
  EXPECT_EQ(BuildModeFor(task, /*has_cache=*/false), BuildMode::kCheckoutOnly);
  EXPECT_EQ(BuildModeFor(task, /*has_cache=*/true), BuildMode::kCheckoutOnly);
}

TEST(BuildModeForTest, ABuildGoesToTheCacheWhenThereIsOneElseInPlace) {
  const v1::Task task = WithBuild("make");
  EXPECT_EQ(BuildModeFor(task, /*has_cache=*/true), BuildMode::kCached);
  EXPECT_EQ(BuildModeFor(task, /*has_cache=*/false), BuildMode::kInPlace);
}

TEST(BuildModeForTest, ADependencyFollowUpBuildsInPlaceEvenWithACache) {
  v1::Task task = WithBuild("make");
  task.mutable_dependency()->set_kind(v1::DEPENDENCY_KIND_SUBMODULE);
  task.mutable_dependency()->set_path("third_party/lib");
  EXPECT_EQ(BuildModeFor(task, /*has_cache=*/true), BuildMode::kInPlace);
}

// Hands out `dir`/primary and `dir`/paired for the two lanes (`missing` is no commit), and the
// same directories for a dependency follow-up's checkouts.
class LaneWorkspace : public Workspace {
 public:
  explicit LaneWorkspace(std::string dir) : dir_(std::move(dir)) {}
  absl::StatusOr<std::string> Prepare(const std::string&, const std::string& sha,
                                      WorkspaceLane lane) override {
    prepared.push_back(sha);
    if (sha == "missing") return absl::NotFoundError("commit missing is not in the mirror");
    const std::string dir = dir_ + (lane == WorkspaceLane::kPaired ? "/paired" : "/primary");
    testing::WriteFile(dir + "/checked-out.txt", sha + "\n");
    return dir;
  }
  absl::StatusOr<std::string> PrepareWithDependency(const v1::DependencyDescent&,
                                                    const std::string& repository,
                                                    const std::string& sha,
                                                    WorkspaceLane lane) override {
    with_dependency.push_back(sha);
    return Prepare(repository, sha, lane);
  }
  std::vector<std::string> prepared;
  std::vector<std::string> with_dependency;

 private:
  std::string dir_;
};

class SlotBuilderTest : public ::testing::Test {
 protected:
  SlotBuilderTest()
      : runner_(NewSubprocessRunner()),
        workspace_(tmp_.path()),
        // No Python to layer over: the layers are install prefixes (build_layer_test covers the
        // rest).
        builder_(runner_.get(), &workspace_, Clock::Real(), /*layer_env=*/{}) {}

  // Prepares `sha` of `task` in `lane`, counting the builds started in builds_started_.
  BuiltTree Prepare(const v1::Task& task, const std::string& sha,
                    WorkspaceLane lane = WorkspaceLane::kPrimary,
                    const Cancellation* cancel = nullptr) {
    return builder_.Prepare({&task, sha, lane, &env_, cancel, [this] { ++builds_started_; }});
  }

  TempDir tmp_{"kbisect-task-builder"};
  std::unique_ptr<CommandRunner> runner_;
  LaneWorkspace workspace_;
  SlotBuilder builder_;
  const std::map<std::string, std::string> env_ = {{"KBISECT_WORKER", "3"}};
  int builds_started_ = 0;
};

TEST_F(SlotBuilderTest, InPlaceBuildsInTheLanesCheckoutWithALayerBesideIt) {
  const v1::Task task =
      WithBuild("echo \"$KBISECT_COMMIT $KBISECT_WORKER $KBISECT_PREFIX\" > built.txt");
  const BuiltTree tree = Prepare(task, task.commit_sha(), WorkspaceLane::kPaired);
  ASSERT_TRUE(tree.step.ok()) << tree.step.message;
  EXPECT_EQ(tree.dir, tmp_.Join("paired"));
  EXPECT_EQ(ReadFile(tmp_.Join("paired/built.txt")),
            absl::StrCat(task.commit_sha(), " 3 ", tmp_.Join("paired-layer"), "\n"));
  EXPECT_EQ(tree.layer_env.at("KBISECT_PREFIX"), tmp_.Join("paired-layer"));
  EXPECT_EQ(builds_started_, 1);
  EXPECT_FALSE(tree.reused);
  EXPECT_EQ(tree.in_use, nullptr);
  EXPECT_TRUE(tree.build_pool.empty());
}

TEST_F(SlotBuilderTest, WithoutABuildCommandTheLaneIsOnlyCheckedOut) {
  const v1::Task task = WithBuild("");
  const BuiltTree tree = Prepare(task, task.commit_sha());
  ASSERT_TRUE(tree.step.ok()) << tree.step.message;
  EXPECT_EQ(tree.dir, tmp_.Join("primary"));
  EXPECT_EQ(builds_started_, 0);
  EXPECT_TRUE(tree.layer_env.empty());
  EXPECT_EQ(tree.step.wall_time, absl::ZeroDuration());
}

TEST_F(SlotBuilderTest, AFailedBuildIsTheStepsFailureWithItsTail) {
  const v1::Task task = WithBuild("echo 'error: boom' >&2; exit 2");
  const BuiltTree tree = Prepare(task, task.commit_sha());
  EXPECT_EQ(tree.step.failure, v1::TASK_OUTCOME_BUILD_FAILED);
  EXPECT_THAT(tree.step.message, HasSubstr("build at 0123456 exited with code 2"));
  EXPECT_THAT(tree.step.log_tail, HasSubstr("error: boom"));
}

TEST_F(SlotBuilderTest, ACheckoutFailureIsAnInfrastructureErrorNamingTheCommit) {
  const v1::Task task = WithBuild("touch built.txt");
  const BuiltTree tree = Prepare(task, "missing");
  EXPECT_EQ(tree.step.failure, v1::TASK_OUTCOME_INFRA_ERROR);
  EXPECT_EQ(tree.step.message, "checkout of missing failed: commit missing is not in the mirror");
  EXPECT_EQ(builds_started_, 0);
}

TEST_F(SlotBuilderTest, ACancelledPreparationBuildsNothingAfterItsCheckout) {
  const v1::Task task = WithBuild("touch built.txt");
  Cancellation cancel;
  cancel.Cancel();
  const BuiltTree tree = Prepare(task, task.commit_sha(), WorkspaceLane::kPrimary, &cancel);
  EXPECT_TRUE(tree.step.ok()) << "the task runner ends a cancelled task";
  EXPECT_EQ(builds_started_, 0);
  EXPECT_FALSE(std::filesystem::exists(tmp_.Join("primary/built.txt")));
}

TEST_F(SlotBuilderTest, ADependencyFollowUpBuildsInPlaceWithItsDependencyDirectory) {
  TempDir cache_dir("kbisect-task-builder-cache");
  BuildCache cache(cache_dir.path(), kDefaultBuildCacheSize, runner_.get());
  builder_.set_build_cache(&cache);
  v1::Task task = WithBuild("echo \"$KBISECT_DEPENDENCY_DIR\" > built.txt");
  task.mutable_dependency()->set_kind(v1::DEPENDENCY_KIND_SUBMODULE);
  task.mutable_dependency()->set_path("third_party/lib");
  const BuiltTree tree = Prepare(task, task.commit_sha());
  ASSERT_TRUE(tree.step.ok()) << tree.step.message;
  EXPECT_THAT(workspace_.with_dependency, ElementsAre(task.commit_sha()));
  EXPECT_EQ(ReadFile(tmp_.Join("primary/built.txt")), tmp_.Join("primary/third_party/lib") + "\n");
  EXPECT_EQ(cache.EntryCount(), 0);
}

TEST(SlotBuilderCacheTest, ABuildComesFromTheCacheAndIsHeldThereWhileTheTreeLives) {
  TempDir tmp("kbisect-task-builder-cached");
  GitFixture repo(tmp.Join("repo"));
  repo.Init();
  const std::string sha = repo.Commit("one", {{"value.txt", "1\n"}});
  std::unique_ptr<CommandRunner> runner = NewSubprocessRunner();
  GitWorkspace workspace(tmp.Join("cache"), 0);
  BuildCache cache(tmp.Join("cache"), kDefaultBuildCacheSize, runner.get());
  SlotBuilder builder(runner.get(), &workspace);
  builder.set_build_cache(&cache);
  EXPECT_EQ(builder.build_cache(), &cache);
  v1::Task task =
      WithBuild(absl::StrCat("echo \"$KBISECT_COMMIT\" >> ", ShellQuote(tmp.Join("builds.log")),
                             " && cp value.txt built.txt"));
  task.set_repository(repo.path());
  task.set_commit_sha(sha);
  const std::map<std::string, std::string> env = TaskEnvironment(task, {});
  int builds_started = 0;
  const TreeRequest request{&task, sha,     WorkspaceLane::kPaired,
                            &env,  nullptr, [&] { ++builds_started; }};

  BuiltTree first = builder.Prepare(request);
  ASSERT_TRUE(first.step.ok()) << first.step.message;
  EXPECT_THAT(first.dir, StartsWith(tmp.Join("cache/builds/e")));
  EXPECT_EQ(ReadFile(first.dir + "/built.txt"), "1\n");
  EXPECT_FALSE(first.reused);
  EXPECT_NE(first.in_use, nullptr);
  EXPECT_FALSE(first.build_pool.empty());
  EXPECT_EQ(builds_started, 1);

  const BuiltTree again = builder.Prepare(request);
  ASSERT_TRUE(again.step.ok()) << again.step.message;
  EXPECT_EQ(again.dir, first.dir);
  EXPECT_TRUE(again.reused);
  EXPECT_EQ(builds_started, 1) << "no build ran";
  EXPECT_EQ(ReadFile(tmp.Join("builds.log")), sha + "\n");
}

}  // namespace
}  // namespace kbisect
