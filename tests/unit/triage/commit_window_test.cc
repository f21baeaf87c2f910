// Copyright 2026 The kbisect Authors.
#include "triage/commit_window.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/git_fixture.h"
#include "triage/parse.h"

namespace kbisect {
namespace triage {
namespace {

using kbisect::testing::GitFixture;
using kbisect::testing::TempDir;
using ::testing::HasSubstr;

TEST(GlobTest, Matches) {
  EXPECT_TRUE(GlobMatch("helion/_compiler/cute/**", "helion/_compiler/cute/a.py"));
  EXPECT_TRUE(GlobMatch("helion/_compiler/cute/**", "helion/_compiler/cute/x/y/z.py"));
  EXPECT_FALSE(GlobMatch("helion/_compiler/cute/**", "helion/_compiler/pallas/a.py"));
  EXPECT_TRUE(GlobMatch("benchmarks/**", "benchmarks/run.py"));
  EXPECT_TRUE(GlobMatch("*_cute", "b200_cute"));
  EXPECT_FALSE(GlobMatch("*_cute", "b200"));
  EXPECT_TRUE(GlobMatch("*.py", "run.py"));
  EXPECT_FALSE(GlobMatch("*.py", "dir/run.py"));
  EXPECT_TRUE(GlobMatch("**/*.py", "run.py"));
  EXPECT_TRUE(GlobMatch("**/*.py", "a/b/run.py"));
  EXPECT_TRUE(GlobMatch("a?c", "abc"));
  EXPECT_FALSE(GlobMatch("a?c", "a/c"));
  EXPECT_TRUE(GlobMatch("*", "anything"));
  EXPECT_TRUE(GlobMatch("", ""));
  EXPECT_FALSE(GlobMatch("", "x"));
}

TEST(SliceMapTest, HelionDefaultAndParsing) {
  SliceMap map = SliceMap::HelionDefault();
  ASSERT_NE(map.RuleFor("b200_cute"), nullptr);
  EXPECT_EQ(map.RuleFor("b200_cute")->tags[0], "[cute]");
  EXPECT_EQ(map.RuleFor("b200")->paths[0], "helion/**");
  absl::StatusOr<SliceMap> parsed = ParseSliceMap(
      R"({"platforms": {"h100": {"tags": ["[hopper]"], "paths": ["src/hopper/**"]}},
          "method_paths": ["bench/**"]})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->RuleFor("h100")->tags[0], "[hopper]");
  EXPECT_EQ(parsed->RuleFor("b200"), nullptr);
  EXPECT_EQ(parsed->method_paths, std::vector<std::string>{"bench/**"});
  EXPECT_THAT(ParseSliceMap("{").status().message(), HasSubstr("not valid JSON"));
  EXPECT_THAT(ParseSliceMap(R"({"platforms": {"h100": {"tags": "[x]"}}})").status().message(),
              HasSubstr("platforms.h100.tags"));
  EXPECT_THAT(ParseSliceMap(R"({"platforms": {"h100": {"paths": [1]}}})").status().message(),
              HasSubstr("platforms.h100.paths[0]"));
}

class CommitWindowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_.Init();
    good_ = repo_.Commit("initial", {{"helion/_compiler/cute/tile.py", "TILE = 64\n"},
                                     {"helion/_compiler/pallas/x.py", "x = 1\n"},
                                     {"benchmarks/run.py", "WARMUP = 10\n"},
                                     {"README.md", "hi\n"}});
    pallas_ =
        repo_.Commit("[pallas] tweak block sizes", {{"helion/_compiler/pallas/x.py", "x = 2\n"}});
    harness_ = repo_.Commit("benchmarks: fewer warmup iterations",
                            {{"benchmarks/run.py", "WARMUP = 1\n"}});
    repo_.Branch("topic");
    repo_.Checkout("topic");
    cute_ =
        repo_.Commit("[cute] smaller tiles", {{"helion/_compiler/cute/tile.py", "TILE = 32\n"}});
    repo_.Checkout("main");
    merge_ = repo_.Merge("topic", "Merge [cute] tiles");
    bad_ = repo_.Commit("docs: README", {{"README.md", "hello\n"}});
  }

  TempDir tmp_;
  GitFixture repo_{tmp_.Join("helion")};
  std::string good_, pallas_, harness_, cute_, merge_, bad_;
};

TEST_F(CommitWindowTest, RanksTheSliceFirstAndFlagsTheHarness) {
  absl::StatusOr<std::unique_ptr<GitRepo>> repo = GitRepo::Open(repo_.path());
  ASSERT_TRUE(repo.ok()) << repo.status();
  absl::StatusOr<CommitWindow> w =
      RankWindow(**repo, good_.substr(0, 8), bad_, "b200_cute", SliceMap::HelionDefault());
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->good, good_);
  EXPECT_EQ(w->bad, bad_);
  // First parent: the merge, not the side-branch commit itself.
  ASSERT_EQ(w->commits.size(), 4u);
  EXPECT_EQ(w->commits[0].sha, merge_);
  EXPECT_TRUE(w->commits[0].tag_match);
  EXPECT_EQ(w->commits[0].matching_paths, 1);
  EXPECT_EQ(w->commits[0].position, 3);
  const RankedCommit* harness = nullptr;
  const RankedCommit* pallas = nullptr;
  for (const RankedCommit& c : w->commits) {
    EXPECT_NE(c.sha, cute_);
    if (c.sha == harness_) harness = &c;
    if (c.sha == pallas_) pallas = &c;
  }
  ASSERT_NE(harness, nullptr);
  EXPECT_TRUE(harness->harness_only);
  ASSERT_NE(pallas, nullptr);
  EXPECT_TRUE(pallas->other_slice);
  EXPECT_EQ(w->commits.back().sha, pallas_);  // -2 for another slice's tag.

  Evidence e;
  ApplyWindowEvidence(*w, &e);
  EXPECT_EQ(e.harness_only_commit, Tri::kYes);
  EXPECT_EQ(e.slice_commit, Tri::kYes);
}

TEST_F(CommitWindowTest, UnknownCommitSaysToFetch) {
  absl::StatusOr<std::unique_ptr<GitRepo>> repo = GitRepo::Open(repo_.path());
  ASSERT_TRUE(repo.ok());
  absl::StatusOr<CommitWindow> w =
      RankWindow(**repo, "deadbeefdeadbeef", bad_, "b200_cute", SliceMap::HelionDefault());
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(w.status().message(), HasSubstr("last good"));
  EXPECT_THAT(w.status().message(), HasSubstr("git fetch"));
  w = RankWindow(**repo, bad_, good_, "b200_cute", SliceMap::HelionDefault());
  EXPECT_FALSE(w.ok());
}

}  // namespace
}  // namespace triage
}  // namespace kbisect
