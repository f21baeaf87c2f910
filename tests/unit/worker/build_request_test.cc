// Copyright 2026 The kbisect Authors.
#include "worker/build_request.h"

#include <map>
#include <string>

#include "common/spec/job_spec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

v1::Task BuildTask() {
  v1::Task task;
  task.set_repository("https://example.com/repo.git");
  task.set_commit_sha("c0ffee");
  task.set_build_command("make -j8");
  (*task.mutable_env())["OPT"] = "1";
  task.add_keep_build_shas("1111111");
  task.add_keep_build_shas("2222222");
  task.set_build_isolation(v1::BUILD_ISOLATION_NONE);
  task.set_build_order(7);
  task.mutable_build_timeout()->set_seconds(90);
  return task;
}

TEST(BuildRequestTest, TheDefaultsNameTheBuildWithoutRunningIt) {
  const BuildRequest request = BuildRequestFor(BuildTask(), "1111111", {});
  EXPECT_EQ(request.repository, "https://example.com/repo.git");
  EXPECT_EQ(request.sha, "1111111");
  EXPECT_EQ(request.build.shell_command, "make -j8");
  EXPECT_THAT(request.build.env, IsEmpty());
  EXPECT_EQ(request.build.timeout, absl::InfiniteDuration());
  EXPECT_THAT(request.key_env, ElementsAre(Pair("OPT", "1")));
  EXPECT_THAT(request.keep_shas, IsEmpty());
  EXPECT_EQ(request.isolation, v1::BUILD_ISOLATION_NONE);
  EXPECT_EQ(request.build_order, 0);
}

TEST(BuildRequestTest, ABuildRunsWithTheGivenEnvironmentAndTheTasksTimeout) {
  const std::map<std::string, std::string> env = {{"OPT", "1"}, {"CUDA_VISIBLE_DEVICES", "2"}};
  BuildRequestOptions options;
  options.env = &env;
  options.keep_builds = true;
  options.build_order = 7;
  const BuildRequest request = BuildRequestFor(BuildTask(), "c0ffee", options);
  EXPECT_THAT(request.build.env, ElementsAre(Pair("CUDA_VISIBLE_DEVICES", "2"),
                                             Pair("KBISECT_COMMIT", "c0ffee"), Pair("OPT", "1")));
  EXPECT_EQ(request.build.timeout, absl::Seconds(90));
  // The key is the job's environment alone, never the slot's.
  EXPECT_THAT(request.key_env, ElementsAre(Pair("OPT", "1")));
  EXPECT_THAT(request.keep_shas, ElementsAre("1111111", "2222222"));
  EXPECT_EQ(request.build_order, 7);
}

TEST(BuildRequestTest, ATaskWithoutABuildTimeoutGetsTheDefault) {
  v1::Task task = BuildTask();
  task.clear_build_timeout();
  EXPECT_EQ(BuildCommandFor(task, "c0ffee", {}).timeout, kDefaultBuildTimeout);
  task.mutable_build_timeout()->set_seconds(0);
  EXPECT_EQ(BuildCommandFor(task, "c0ffee", {}).timeout, kDefaultBuildTimeout);
}

TEST(TaskEnvironmentTest, TheJobsVariablesWinOverTheSlotsAndTheIndexIsAdded) {
  v1::Task task = BuildTask();
  task.set_commit_index(12);
  (*task.mutable_env())["CUDA_VISIBLE_DEVICES"] = "0";
  EXPECT_THAT(TaskEnvironment(task, {{"CUDA_VISIBLE_DEVICES", "2"}, {"KBISECT_WORKER", "2"}}),
              ElementsAre(Pair("CUDA_VISIBLE_DEVICES", "0"), Pair("KBISECT_COMMIT_INDEX", "12"),
                          Pair("KBISECT_WORKER", "2"), Pair("OPT", "1")));
}

TEST(TaskEnvironmentTest, ADependencyFollowUpNamesItsSuperprojectCommit) {
  v1::Task task = BuildTask();
  task.mutable_dependency()->set_superproject_sha("5ca1ab1e");
  EXPECT_EQ(TaskEnvironment(task, {}).at("KBISECT_SUPERPROJECT_COMMIT"), "5ca1ab1e");
  EXPECT_EQ(TaskEnvironment(BuildTask(), {}).count("KBISECT_SUPERPROJECT_COMMIT"), 0u);
}

}  // namespace
}  // namespace kbisect
