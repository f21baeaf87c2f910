// Copyright 2026 The kbisect Authors.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
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

// A branch forked below GOOD: none of its first commit's parents is in the range, and GOOD
// (index 0) stands for them, so that the search follows the graph (issue 46).
TEST_F(GitRepositoryViewTest, ACommitWhoseParentsAreAllBelowGoodHangsFromGood) {
  v1::JobSpec all = Spec(third_, merge_);
  all.set_history(v1::HISTORY_MODE_ALL_COMMITS);
  auto range = view_->ResolveRange(all);
  ASSERT_TRUE(range.ok()) << range.status();
  ASSERT_EQ(Shas(*range), (std::vector<std::string>{third_, inside_, merge_}));
  EXPECT_TRUE(range->at(0).parent_indices().empty());
  EXPECT_THAT(range->at(1).parent_indices(), ::testing::ElementsAre(0));
  EXPECT_THAT(range->at(2).parent_indices(), ::testing::ElementsAre(0, 1));
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

// A culprit that bumps a submodule names the dependency's range: 8 commits, the first 3 and the
// last 3 listed; a move back, an addition and a dependency that cannot be read are named too.
TEST(GitRepositoryViewSubmodulesTest, NamesTheDependencyRangeOfABump) {
  TempDir tmp;
  GitFixture dep(tmp.Join("dep"));
  dep.Init();
  std::vector<std::string> dep_commits;
  for (int i = 0; i <= 8; ++i) {
    dep_commits.push_back(
        dep.Commit(absl::StrCat("dep change ", i), {{"k.txt", std::to_string(i)}}));
  }
  GitFixture super(tmp.Join("super"));
  super.Init();
  const std::string none = super.Commit("no submodule", {{"main.txt", "x\n"}});
  super.SetGitlink("third_party/dep", dep_commits[0]);
  const std::string added = super.Commit(
      "add dep",
      {{".gitmodules", "[submodule \"dep\"]\n\tpath = third_party/dep\n\turl = ../dep\n"}});
  super.SetGitlink("third_party/dep", dep_commits[8]);
  const std::string bumped = super.Commit("bump dep");
  super.SetGitlink("third_party/dep", dep_commits[6]);
  const std::string back = super.Commit("move dep back");
  super.SetGitlink("third_party/dep", "1234567890123456789012345678901234567890");
  const std::string lost = super.Commit("bump dep to a commit it does not have");
  std::unique_ptr<RepositoryView> view = NewGitRepositoryView(tmp.Join("cache"));

  absl::StatusOr<std::vector<v1::SubmoduleBump>> bumps =
      view->SubmoduleBumps(super.path(), added, bumped);
  ASSERT_TRUE(bumps.ok()) << bumps.status();
  ASSERT_EQ(bumps->size(), 1u);
  const v1::SubmoduleBump& bump = (*bumps)[0];
  EXPECT_EQ(bump.path(), "third_party/dep");
  EXPECT_EQ(bump.url(), dep.path());
  EXPECT_EQ(bump.old_sha(), dep_commits[0]);
  EXPECT_EQ(bump.new_sha(), dep_commits[8]);
  EXPECT_EQ(bump.commit_count(), 8);
  EXPECT_FALSE(bump.backwards());
  std::vector<std::string> subjects;
  for (const v1::CommitRef& commit : bump.commits()) subjects.push_back(commit.subject());
  EXPECT_THAT(subjects, ::testing::ElementsAre("dep change 1", "dep change 2", "dep change 3",
                                               "dep change 6", "dep change 7", "dep change 8"));
  EXPECT_EQ(bump.error(), "");

  bumps = view->SubmoduleBumps(super.path(), bumped, back);
  ASSERT_TRUE(bumps.ok()) << bumps.status();
  ASSERT_EQ(bumps->size(), 1u);
  EXPECT_TRUE((*bumps)[0].backwards());
  EXPECT_EQ((*bumps)[0].commit_count(), 2);

  bumps = view->SubmoduleBumps(super.path(), none, added);
  ASSERT_TRUE(bumps.ok()) << bumps.status();
  ASSERT_EQ(bumps->size(), 1u);
  EXPECT_EQ((*bumps)[0].old_sha(), "");
  EXPECT_EQ((*bumps)[0].new_sha(), dep_commits[0]);

  bumps = view->SubmoduleBumps(super.path(), back, lost);
  ASSERT_TRUE(bumps.ok()) << bumps.status();
  ASSERT_EQ(bumps->size(), 1u);
  EXPECT_THAT((*bumps)[0].error(), ::testing::HasSubstr("1234567890"));

  bumps = view->SubmoduleBumps(super.path(), none, none);
  ASSERT_TRUE(bumps.ok()) << bumps.status();
  EXPECT_TRUE(bumps->empty());
}

}  // namespace
}  // namespace kbisect
