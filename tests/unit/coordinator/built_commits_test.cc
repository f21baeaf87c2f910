// Copyright 2026 The kbisect Authors.
#include "coordinator/built_commits.h"

#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

v1::Task Built(const std::string& sha) {
  v1::Task task;
  task.set_repository("/repo");
  task.set_build_command("make -j8");
  (*task.mutable_env())["CC"] = "clang";
  task.set_commit_sha(sha);
  return task;
}

v1::TaskResult Result(v1::TaskOutcome outcome, const std::string& pool,
                      const std::string& store = "") {
  v1::TaskResult result;
  result.set_outcome(outcome);
  result.mutable_timings()->set_build_pool(pool);
  result.mutable_timings()->set_build_store(store);
  return result;
}

TEST(BuildSignatureTest, TheSameBuildOfTheSameRepositoryHasOneSignature) {
  v1::JobSpec spec;
  spec.set_repository("/repo");
  spec.set_build_command("make -j8");
  (*spec.mutable_env())["CC"] = "clang";
  EXPECT_EQ(BuildSignature(spec), BuildSignature(Built("abc")));
  v1::Task other = Built("abc");
  (*other.mutable_env())["CC"] = "gcc";
  EXPECT_NE(BuildSignature(other), BuildSignature(spec));
  other = Built("abc");
  other.set_build_isolation(v1::BUILD_ISOLATION_NONE);
  EXPECT_NE(BuildSignature(other), BuildSignature(spec));
  // No build command, or a dependency follow-up's build: no signature.
  other = Built("abc");
  other.clear_build_command();
  EXPECT_EQ(BuildSignature(other), "");
  other = Built("abc");
  other.mutable_dependency();
  EXPECT_EQ(BuildSignature(other), "");
}

TEST(BuiltCommitsTest, ACommitIsBuiltInTheHostsPoolAndInTheStoreForItsHardwareClass) {
  BuiltCommits built;
  built.RecordResult(Built("a1"), Result(v1::TASK_OUTCOME_SUCCEEDED, "host-a:/c", "/store"),
                     "h100");
  built.RecordResult(Built("a2"), Result(v1::TASK_OUTCOME_METRIC_MISSING, "host-a:/c"), "h100");
  const std::string signature = BuildSignature(Built(""));
  EXPECT_THAT(built.BuiltIn(signature, BuildPlaces("host-a:/c", "", "h100")),
              ElementsAre("a1", "a2"));
  // Another host reads only what went to the store, for its own hardware class.
  EXPECT_THAT(built.BuiltIn(signature, BuildPlaces("host-b:/c", "/store", "h100")),
              ElementsAre("a1"));
  EXPECT_THAT(built.BuiltIn(signature, BuildPlaces("host-b:/c", "/store", "mi300x")), IsEmpty());
  EXPECT_THAT(built.BuiltIn(signature, BuildPlaces("host-b:/c", "", "h100")), IsEmpty());
}

TEST(BuiltCommitsTest, OnlyABuildThatSucceededThroughABuildCacheCounts) {
  BuiltCommits built;
  const std::string signature = BuildSignature(Built(""));
  for (v1::TaskOutcome failed :
       {v1::TASK_OUTCOME_BUILD_FAILED, v1::TASK_OUTCOME_CHECKOUT_FAILED,
        v1::TASK_OUTCOME_INFRA_ERROR, v1::TASK_OUTCOME_CANCELLED, v1::TASK_OUTCOME_TIMED_OUT}) {
    built.RecordResult(Built("x"), Result(failed, "host-a:/c"), "h100");
  }
  // Built in the slot's own checkout (no build cache): the next checkout overwrites it.
  built.RecordResult(Built("y"), Result(v1::TASK_OUTCOME_SUCCEEDED, ""), "h100");
  EXPECT_EQ(built.size(signature), 0u);
  // A confirmation builds both of its commits.
  v1::Task pair = Built("p1");
  pair.set_paired_commit_sha("p2");
  built.RecordResult(pair, Result(v1::TASK_OUTCOME_SUCCEEDED, "host-a:/c"), "h100");
  EXPECT_THAT(built.BuiltIn(signature, BuildPlaces("host-a:/c", "", "")), ElementsAre("p1", "p2"));
}

TEST(BuiltCommitsTest, TheOldestRecordedGoFirstBeyondTheBound) {
  BuiltCommits built;
  const std::vector<std::string> places = BuildPlaces("host-a:/c", "", "");
  for (size_t i = 0; i < kBuiltCommitsPerBuild + 2; ++i) {
    built.Record("sig", absl::StrCat("c", i), places);
    if (i == 2) built.Record("sig", "c0", places);  // Recorded again: newer than c1, c2.
  }
  EXPECT_EQ(built.size("sig"), kBuiltCommitsPerBuild);
  const std::set<std::string> kept = built.BuiltIn("sig", places);
  EXPECT_EQ(kept.count("c1"), 0u);
  EXPECT_EQ(kept.count("c2"), 0u);
  EXPECT_EQ(kept.count("c0"), 1u);
  EXPECT_EQ(kept.count(absl::StrCat("c", kBuiltCommitsPerBuild + 1)), 1u);
}

}  // namespace
}  // namespace kbisect
