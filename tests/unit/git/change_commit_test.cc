// Copyright 2026 The kbisect Authors.
#include "common/git/change_commit.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace {

using ::kbisect::testing::GitFixture;
using ::kbisect::testing::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

// main: base (kernel.c = 10 lines), culprit (line 5 slower), unrelated (other.c), touch
// (kernel.c line 9), rework (kernel.c line 5 again, on top of the culprit).
class ChangeCommitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_.Init();
    base_ = repo_.Commit("base", {{"kernel.c", Lines(5, "fast")}, {"other.c", "x\n"}});
    culprit_ = repo_.Commit("Slow down line 5", {{"kernel.c", Lines(5, "slow")}});
    unrelated_ = repo_.Commit("Touch other.c", {{"other.c", "y\n"}});
    head_ = repo_.Head();
    runner_ = NewSubprocessRunner();
  }

  // Ten numbered lines, line 5 reading `word` ("line" elsewhere, and at 9 `nine`).
  static std::string Lines(int at, const std::string& word, const std::string& nine = "line") {
    std::string text;
    for (int i = 1; i <= 10; ++i) {
      absl::StrAppend(&text, i == at ? word : i == 9 ? nine : "line", " ", i, "\n");
    }
    return text;
  }

  TempDir tmp_;
  GitFixture repo_{tmp_.Join("repo")};
  std::string base_, culprit_, unrelated_, head_;
  std::unique_ptr<CommandRunner> runner_;
};

TEST_F(ChangeCommitTest, ARevertIsACommitOnTheBaseUnderItsRefAndTheCheckoutIsUntouched) {
  const std::string status_before = repo_.Git({"status", "--porcelain"});
  absl::StatusOr<ChangeCommit> made =
      MakeChangeCommit(*runner_, repo_.path(), "HEAD", {ChangeSpec::Kind::kRevert, culprit_});
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_FALSE(made->conflict.has_value());
  EXPECT_EQ(made->base, head_);
  EXPECT_EQ(made->ref, absl::StrCat("refs/kbisect/try/", head_.substr(0, 12), "-revert-",
                                    culprit_.substr(0, 12)));
  EXPECT_EQ(repo_.Git({"rev-parse", made->ref}), made->sha);
  EXPECT_EQ(repo_.Git({"rev-parse", absl::StrCat(made->sha, "^")}), head_);
  EXPECT_EQ(repo_.Git({"show", absl::StrCat(made->sha, ":kernel.c")}) + "\n", Lines(5, "fast"));
  EXPECT_EQ(repo_.Git({"show", absl::StrCat(made->sha, ":other.c")}), "y");
  // The user's branch, HEAD and working tree are as they were.
  EXPECT_EQ(repo_.Head(), head_);
  EXPECT_EQ(repo_.Git({"status", "--porcelain"}), status_before);
  // The same change on the same base is the same commit.
  absl::StatusOr<ChangeCommit> again =
      MakeChangeCommit(*runner_, repo_.path(), head_, {ChangeSpec::Kind::kRevert, culprit_});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->sha, made->sha);
}

TEST_F(ChangeCommitTest, ARevertThatConflictsNamesTheFilesAndTheLaterCommits) {
  const std::string rework =
      repo_.Commit("Rework line 5", {{"kernel.c", Lines(5, "reworked")}});
  absl::StatusOr<ChangeCommit> made =
      MakeChangeCommit(*runner_, repo_.path(), rework, {ChangeSpec::Kind::kRevert, culprit_});
  ASSERT_TRUE(made.ok()) << made.status();
  ASSERT_TRUE(made->conflict.has_value());
  EXPECT_TRUE(made->sha.empty());
  EXPECT_THAT(made->conflict->files, ElementsAre("kernel.c"));
  ASSERT_THAT(made->conflict->later_commits, SizeIs(1));
  EXPECT_EQ(made->conflict->later_commits[0], absl::StrCat(rework.substr(0, 12), " Rework line 5"));
  EXPECT_EQ(repo_.Head(), rework);
  EXPECT_EQ(repo_.Git({"for-each-ref", "refs/kbisect"}), "");
}

TEST_F(ChangeCommitTest, APickAndAPatchApplyAndAPatchThatDoesNotApplyNamesItsHunk) {
  repo_.Checkout(base_);
  repo_.Branch("fix");
  repo_.Checkout("fix");
  const std::string fix = repo_.Commit("Fix line 9", {{"kernel.c", Lines(5, "fast", "better")}});
  repo_.Checkout("main");
  absl::StatusOr<ChangeCommit> picked =
      MakeChangeCommit(*runner_, repo_.path(), head_, {ChangeSpec::Kind::kCommit, fix});
  ASSERT_TRUE(picked.ok()) << picked.status();
  EXPECT_THAT(repo_.Git({"show", absl::StrCat(picked->sha, ":kernel.c")}),
              HasSubstr("better 9"));

  const std::string patch = tmp_.Join("fix.patch");
  ::kbisect::testing::WriteFile(patch, repo_.Git({"format-patch", "-1", "--stdout", fix}) + "\n");
  absl::StatusOr<ChangeCommit> patched =
      MakeChangeCommit(*runner_, repo_.path(), head_, {ChangeSpec::Kind::kPatch, patch});
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ(repo_.Git({"rev-parse", absl::StrCat(patched->sha, "^{tree}")}),
            repo_.Git({"rev-parse", absl::StrCat(picked->sha, "^{tree}")}));

  // The culprit's patch does not apply once line 5 was reworked on top of it.
  const std::string stale = tmp_.Join("stale.patch");
  ::kbisect::testing::WriteFile(stale,
                                repo_.Git({"format-patch", "-1", "--stdout", culprit_}) + "\n");
  repo_.Commit("Rework line 5", {{"kernel.c", Lines(5, "reworked")}});
  absl::StatusOr<ChangeCommit> refused =
      MakeChangeCommit(*runner_, repo_.path(), "HEAD", {ChangeSpec::Kind::kPatch, stale});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("kernel.c: hunk @@ -2,7 +2,7 @@"));
}

TEST_F(ChangeCommitTest, UnknownRevisionsAndEmptyChangesAreRefused) {
  absl::StatusOr<ChangeCommit> unknown =
      MakeChangeCommit(*runner_, repo_.path(), "nosuch", {ChangeSpec::Kind::kRevert, culprit_});
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unknown.status().message(), HasSubstr("unknown base commit 'nosuch'"));
  absl::StatusOr<ChangeCommit> no_target =
      MakeChangeCommit(*runner_, repo_.path(), "HEAD", {ChangeSpec::Kind::kRevert, "deadbeef"});
  EXPECT_THAT(no_target.status().message(), HasSubstr("unknown commit to revert 'deadbeef'"));
  absl::StatusOr<ChangeCommit> no_patch =
      MakeChangeCommit(*runner_, repo_.path(), "HEAD", {ChangeSpec::Kind::kPatch, "/no/such"});
  EXPECT_THAT(no_patch.status().message(), HasSubstr("is not a readable file"));
  // Picking the culprit onto HEAD, which has it, changes nothing.
  absl::StatusOr<ChangeCommit> empty =
      MakeChangeCommit(*runner_, repo_.path(), "HEAD", {ChangeSpec::Kind::kCommit, unrelated_});
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kFailedPrecondition) << empty.status();
}

TEST(ParseApplyFailureTest, NamesTheFileTheLineAndTheHunk) {
  const std::string patch =
      "--- a/src/a.c\n+++ b/src/a.c\n@@ -1,3 +1,3 @@\n-x\n+y\n"
      "--- a/src/kernel.cu\n+++ b/src/kernel.cu\n@@ -12,7 +12,8 @@ void f()\n-a\n+b\n";
  const ApplyFailure failure = ParseApplyFailure(
      "error: patch failed: src/kernel.cu:12\nerror: src/kernel.cu: patch does not apply\n", patch);
  EXPECT_EQ(failure.file, "src/kernel.cu");
  EXPECT_EQ(failure.line, 12);
  EXPECT_EQ(failure.hunk, "@@ -12,7 +12,8 @@");
  EXPECT_EQ(failure.what, "patch does not apply");
  const ApplyFailure missing =
      ParseApplyFailure("error: src/gone.c: No such file or directory\n", patch);
  EXPECT_EQ(missing.file, "src/gone.c");
  EXPECT_EQ(missing.what, "No such file or directory");
  EXPECT_TRUE(missing.hunk.empty());
}

}  // namespace
}  // namespace kbisect
