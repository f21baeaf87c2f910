// Copyright 2026 The kbisect Authors.
//
// GitWorkspace on a real repository: each lane is a checkout of its own under the slot's
// directory, so alternating two commits between the lanes never rewrites either.
#include "worker/workspace.h"

#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/git/mirror.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace {

namespace fs = std::filesystem;

using ::kbisect::testing::GitFixture;
using ::kbisect::testing::ReadFile;
using ::kbisect::testing::TempDir;
using ::kbisect::testing::WriteFile;
using ::testing::HasSubstr;

TEST(GitWorkspaceTest, ThePairedLaneIsASecondCheckoutOfTheSlot) {
  TempDir tmp("kbisect-workspace");
  GitFixture repo(tmp.Join("repo"));
  repo.Init();
  const std::string a = repo.Commit("a", {{".gitignore", "build/\n"}, {"file.txt", "a\n"}});
  const std::string b = repo.Commit("b", {{"file.txt", "b\n"}});
  GitWorkspace workspace(tmp.Join("cache"), 3);

  auto primary = workspace.Prepare(repo.path(), b, WorkspaceLane::kPrimary);
  ASSERT_TRUE(primary.ok()) << primary.status();
  auto paired = workspace.Prepare(repo.path(), a, WorkspaceLane::kPaired);
  ASSERT_TRUE(paired.ok()) << paired.status();
  const std::string slot_dir =
      fs::absolute(tmp.Join(absl::StrCat("cache/worktrees/", MirrorKey(repo.path()), "/slot-3")))
          .lexically_normal()
          .string();
  EXPECT_EQ(*primary, slot_dir);
  EXPECT_EQ(*paired, slot_dir + "-b");
  EXPECT_EQ(ReadFile(*primary + "/file.txt"), "b\n");
  EXPECT_EQ(ReadFile(*paired + "/file.txt"), "a\n");

  // Build outputs of each lane stay in it while the other lane is used.
  WriteFile(*primary + "/build/out", "built b");
  WriteFile(*paired + "/build/out", "built a");
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(*workspace.Prepare(repo.path(), a, WorkspaceLane::kPaired), *paired);
    EXPECT_EQ(*workspace.Prepare(repo.path(), b, WorkspaceLane::kPrimary), *primary);
  }
  EXPECT_EQ(ReadFile(*primary + "/build/out"), "built b");
  EXPECT_EQ(ReadFile(*paired + "/build/out"), "built a");

  // A lane moves to whatever commit it is given, keeping its ignored files.
  EXPECT_EQ(*workspace.Prepare(repo.path(), a, WorkspaceLane::kPrimary), *primary);
  EXPECT_EQ(ReadFile(*primary + "/file.txt"), "a\n");
  EXPECT_EQ(ReadFile(*primary + "/build/out"), "built b");
}

TEST(GitWorkspaceTest, ACommitMissingFromTheRepositoryIsNotFound) {
  TempDir tmp("kbisect-workspace");
  GitFixture repo(tmp.Join("repo"));
  repo.Init();
  repo.Commit("a", {{"file.txt", "a\n"}});
  GitWorkspace workspace(tmp.Join("cache"), 0);
  auto missing = workspace.Prepare(repo.path(), "0123456789abcdef0123456789abcdef01234567",
                                   WorkspaceLane::kPrimary);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("even after a fetch"));
}

}  // namespace
}  // namespace kbisect
