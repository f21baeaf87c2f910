// Copyright 2026 The kbisect Authors.
//
// The fake RepositoryView's tree ids: deterministic, distinct per commit, overridable.
#include "tests/testing/fake_repository_view.h"

#include <set>
#include <string>

#include "gtest/gtest.h"

namespace kbisect {
namespace {

v1::JobSpec Spec(const std::string& good, const std::string& bad) {
  v1::JobSpec spec;
  spec.set_repository("/repo");
  spec.set_good(good);
  spec.set_bad(bad);
  return spec;
}

TEST(FakeRepositoryViewTest, EveryCommitHasADistinctDeterministicTreeId) {
  FakeRepositoryView view(20);
  view.AddMergedBranch(12, 5, 4);
  auto main = view.ResolveRange(Spec("v1", ""));
  auto branch =
      view.ResolveRange(Spec(FakeRepositoryView::MainSha(5), FakeRepositoryView::BranchSha(4)));
  ASSERT_TRUE(main.ok()) << main.status();
  ASSERT_TRUE(branch.ok()) << branch.status();
  std::set<std::string> trees;
  for (const auto* range : {&*main, &*branch}) {
    for (const v1::CommitRef& commit : *range) {
      EXPECT_EQ(commit.tree_sha(), FakeRepositoryView::TreeSha(commit.sha()));
      EXPECT_EQ(commit.tree_sha().size(), 40u);
      EXPECT_NE(commit.tree_sha(), commit.sha());
      trees.insert(commit.tree_sha());
    }
  }
  // 21 mainline commits and 4 branch commits (the fork point is on the mainline).
  EXPECT_EQ(trees.size(), 25u);
  auto again = FakeRepositoryView(20).ResolveRange(Spec("v1", ""));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->at(7).tree_sha(), main->at(7).tree_sha());
}

TEST(FakeRepositoryViewTest, SetTreeShaGivesTwoCommitsOneTree) {
  FakeRepositoryView view(10);
  view.SetTreeSha(FakeRepositoryView::MainSha(6),
                  FakeRepositoryView::TreeSha(FakeRepositoryView::MainSha(4)));
  auto range = view.ResolveRange(Spec("v1", ""));
  ASSERT_TRUE(range.ok()) << range.status();
  EXPECT_EQ(range->at(6).tree_sha(), range->at(4).tree_sha());
  EXPECT_NE(range->at(5).tree_sha(), range->at(4).tree_sha());
}

}  // namespace
}  // namespace kbisect
