// Copyright 2026 The kbisect Authors.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "coordinator/repository_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace {

using ::kbisect::testing::GitFixture;
using ::kbisect::testing::TempDir;

class GitRepositoryViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    source_.Init();
    first_ = source_.Commit("first", {{"a.txt", "1\n"}});
    second_ = source_.Commit("second", {{"a.txt", "2\n"}});
    source_.Branch("topic");
    source_.Checkout("topic");
    inside_ = source_.Commit("on the branch", {{"b.txt", "x\n"}});
    source_.Checkout("main");
    third_ = source_.Commit("third", {{"c.txt", "3\n"}});
    merge_ = source_.Merge("topic", "merge topic");
    view_ = NewGitRepositoryView(tmp_.Join("cache"));
  }

  v1::JobSpec Spec(const std::string& good, const std::string& bad) {
    v1::JobSpec spec;
    spec.set_repository("file://" + source_.path());
    spec.set_good(good);
    spec.set_bad(bad);
    return spec;
  }

  std::vector<std::string> Shas(const std::vector<v1::CommitRef>& commits) {
    std::vector<std::string> shas;
    for (const v1::CommitRef& commit : commits) shas.push_back(commit.sha());
    return shas;
  }

  TempDir tmp_;
  GitFixture source_{tmp_.Join("source")};
  std::string first_, second_, inside_, third_, merge_;
  std::unique_ptr<RepositoryView> view_;
};

TEST_F(GitRepositoryViewTest, NamesAreFetchedFreshAndFullIdsResolveFromTheMirror) {
  auto range = view_->ResolveRange(Spec(first_, "main"));
  ASSERT_TRUE(range.ok()) << range.status();
  EXPECT_EQ(Shas(*range), (std::vector<std::string>{first_, second_, third_, merge_}));
  EXPECT_TRUE(range->back().is_merge());
  // A new commit on main: the name is fetched again and sees it.
  const std::string fourth = source_.Commit("fourth", {{"d.txt", "4\n"}});
  auto fresh = view_->ResolveRange(Spec(first_, "main"));
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_EQ(fresh->back().sha(), fourth);
  // Two full ids, mirrored or not, resolve too.
  auto pinned = view_->ResolveRange(Spec(second_, merge_));
  ASSERT_TRUE(pinned.ok()) << pinned.status();
  EXPECT_EQ(Shas(*pinned), (std::vector<std::string>{second_, third_, merge_}));
  const std::string fifth = source_.Commit("fifth", {{"e.txt", "5\n"}});
  auto unmirrored = view_->ResolveRange(Spec(fourth, fifth));
  ASSERT_TRUE(unmirrored.ok()) << unmirrored.status();
  EXPECT_EQ(Shas(*unmirrored), (std::vector<std::string>{fourth, fifth}));
}

TEST_F(GitRepositoryViewTest, AFetchThatFailsSaysTheCoordinatorCannotFetchNotThatItIsDown) {
  v1::JobSpec spec = Spec(first_, "main");
  // Nothing listens on port 1: the fetch fails at once with a network error.
  spec.set_repository("http://127.0.0.1:1/nothing.git");
  auto range = view_->ResolveRange(spec);
  ASSERT_FALSE(range.ok());
  EXPECT_EQ(range.status().code(), absl::StatusCode::kFailedPrecondition) << range.status();
  EXPECT_THAT(range.status().message(),
              ::testing::HasSubstr("the coordinator cannot fetch http://127.0.0.1:1/nothing.git"));
  EXPECT_THAT(range.status().message(), ::testing::HasSubstr("Check the URL"));
}

TEST_F(GitRepositoryViewTest, EveryCommitCarriesItsTreeId) {
  // A revert brings back the tree of the merge: two commits, one tree.
  const std::string changed = source_.Commit("change c", {{"c.txt", "changed\n"}});
  const std::string reverted = source_.Commit("revert it", {{"c.txt", "3\n"}});
  auto range = view_->ResolveRange(Spec(first_, "main"));
  ASSERT_TRUE(range.ok()) << range.status();
  ASSERT_EQ(Shas(*range),
            (std::vector<std::string>{first_, second_, third_, merge_, changed, reverted}));
  for (const v1::CommitRef& commit : *range) {
    EXPECT_EQ(commit.tree_sha(), source_.Git({"rev-parse", commit.sha() + "^{tree}"}))
        << commit.subject();
  }
  EXPECT_EQ(range->at(5).tree_sha(), range->at(3).tree_sha());
  EXPECT_NE(range->at(4).tree_sha(), range->at(3).tree_sha());
  // All commits (side branch included) too.
  v1::JobSpec all = Spec(first_, merge_);
  all.set_history(v1::HISTORY_MODE_ALL_COMMITS);
  auto everything = view_->ResolveRange(all);
  ASSERT_TRUE(everything.ok()) << everything.status();
  ASSERT_EQ(everything->size(), 5u);
  for (const v1::CommitRef& commit : *everything) {
    EXPECT_EQ(commit.tree_sha(), source_.Git({"rev-parse", commit.sha() + "^{tree}"}))
        << commit.subject();
    // Each commit's parents by position, first parent first (all in the range here but GOOD's,
    // which the range leaves out).
    std::vector<std::string> parents;
    for (int index : commit.parent_indices()) parents.push_back(everything->at(index).sha());
    const std::vector<std::string> expected =
        commit.index() == 0
            ? std::vector<std::string>()
            : absl::StrSplit(source_.Git({"log", "-1", "--format=%P", commit.sha()}), ' ',
                             absl::SkipEmpty());
    EXPECT_EQ(parents, expected) << commit.subject();
  }
  // The first-parent list carries no parents: its graph is the list.
  for (const v1::CommitRef& commit : *range) EXPECT_TRUE(commit.parent_indices().empty());
}

TEST_F(GitRepositoryViewTest, MergedBranchIsTheMergeBaseToTheSecondParent) {
  auto branch = view_->MergedBranch(source_.path(), merge_);
  ASSERT_TRUE(branch.ok()) << branch.status();
  EXPECT_EQ(branch->base, second_);
  EXPECT_EQ(branch->tip, inside_);
  auto not_merge = view_->MergedBranch(source_.path(), third_);
  EXPECT_EQ(not_merge.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(not_merge.status().message()), ::testing::HasSubstr("not a merge"));
}

}  // namespace
}  // namespace kbisect
