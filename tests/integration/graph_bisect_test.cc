// Copyright 2026 The kbisect Authors.
//
// `kbisect run --no-first-parent --exit-code` against `git bisect run` on the shape of
// Mercurial's bisect tests (19 commits, a side branch merged three times): the same command
// decides both bisects, and they must name the same commit, or list the same commits when
// skipped ones (exit 125) leave several.
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/integration/run_fixture.h"
#include "tests/testing/commit_graphs.h"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace {

using ::kbisect::testing::CommandResult;
using ::kbisect::testing::ReadFile;
using ::kbisect::testing::RunShell;
using ::kbisect::testing::ShellQuote;
using ::testing::HasSubstr;

// Writes the graph into a repository at `path` (branch main at the last node): node i's tree
// holds f<j> for i and each of its ancestors j, and `node` holding i. Returns the node's ids.
std::vector<std::string> WriteGraphRepo(const std::string& path,
                                        const testing::CommitGraph& graph) {
  const int size = static_cast<int>(graph.parents.size());
  std::vector<std::set<int>> ancestors(size);
  for (int i = 0; i < size; ++i) {
    ancestors[i] = {i};
    for (int p : graph.parents[i]) ancestors[i].insert(ancestors[p].begin(), ancestors[p].end());
  }
  const std::string stream = testing::FastImportStream(graph, [&](int i) {
    testing::CommitFiles files;
    for (int j : ancestors[i]) files.emplace_back(absl::StrCat("f", j), "f\n");
    files.emplace_back("node", absl::StrCat(i, "\n"));
    return files;
  });
  testing::WriteFile(path + ".stream", stream);
  const std::string git = absl::StrCat("GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null git -C ",
                                       ShellQuote(path), " ");
  CommandResult made =
      RunShell(absl::StrCat("git init -q -b main ", ShellQuote(path), " && ", git,
                            "fast-import --quiet --export-marks=", ShellQuote(path + ".marks"),
                            " < ", ShellQuote(path + ".stream"), " && ", git, "checkout -q main"));
  EXPECT_EQ(made.exit_code, 0) << made.err;
  std::vector<std::string> shas(size);
  for (absl::string_view line :
       absl::StrSplit(ReadFile(path + ".marks"), '\n', absl::SkipEmpty())) {
    std::vector<std::string> words = absl::StrSplit(line, ' ');
    shas[std::stoi(words[0].substr(1)) - 1] = words[1];
  }
  return shas;
}

// The test both bisects run: bad once f<culprit> is in the tree, skip (125) at the `skipped`
// nodes.
std::string Check(int culprit, const std::vector<int>& skipped) {
  std::string check = "n=$(cat node); ";
  for (int s : skipped) absl::StrAppend(&check, "[ $n = ", s, " ] && exit 125; ");
  absl::StrAppend(&check, "test ! -e f", culprit);
  return check;
}

// `git bisect run` in a clone of `repo`: the first bad commit, or the commits it could be any of.
std::set<std::string> GitBisectRun(const std::string& repo, const std::string& clone,
                                   const std::string& good, const std::string& bad,
                                   const std::string& check) {
  const std::string git = absl::StrCat("GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null git -C ",
                                       ShellQuote(clone), " ");
  CommandResult run = RunShell(absl::StrCat(
      "git clone -q ", ShellQuote(repo), " ", ShellQuote(clone), " && ", git, "bisect start ", bad,
      " ", good, " >/dev/null && ", git, "bisect run sh -c ", ShellQuote(check)));
  const std::set<std::string> answer = testing::GitBisectAnswer(run.out + run.err);
  EXPECT_FALSE(answer.empty()) << run.out << run.err;
  return answer;
}

class GraphBisectTest : public ::kbisect::testing::KbisectRunTest {
 protected:
  // Runs `kbisect run GOOD BAD FLAGS --exit-code -- sh -c CHECK` over the whole graph and returns
  // its JSON result (null when it failed).
  nlohmann::json RunGraph(const std::string& repo, const std::vector<std::string>& shas,
                          const std::string& flags, const std::string& check,
                          const std::string& json) {
    CommandResult run =
        Run(absl::StrCat("run ", shas.front(), " ", shas.back(), " --repo ", repo, " ", flags,
                         " --exit-code --json ", json, " -- sh -c ", ShellQuote(check)));
    EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
    if (run.exit_code != 0) return nlohmann::json();
    return nlohmann::json::parse(ReadFile(json));
  }
};

TEST_F(GraphBisectTest, NamesTheCommitGitBisectRunNames) {
  const std::string repo = tmp_.Join("hg");
  const std::vector<std::string> shas = WriteGraphRepo(repo, testing::MercurialBisectGraph());
  ASSERT_EQ(shas.size(), 19u);
  // The range laid out as one list (git rev-list --topo-order) is 0, 1, ..., 18 here: a bad
  // change at 2 or 11 is followed by good commits of the other branch (4, 7, 8; 12, 13), and
  // the list's bisection named the merges 5 and 14.
  for (int culprit : {2, 11}) {
    const std::string check = Check(culprit, {});
    const std::set<std::string> git =
        GitBisectRun(repo, tmp_.Join(absl::StrCat("clone", culprit)), shas[0], shas[18], check);
    ASSERT_EQ(git, std::set<std::string>({shas[culprit]}));
    const nlohmann::json result = RunGraph(repo, shas, "--workers 3 --no-first-parent", check,
                                           tmp_.Join(absl::StrCat(culprit, ".json")));
    ASSERT_FALSE(result.is_null());
    EXPECT_EQ(result["status"], "culprit_found") << culprit;
    EXPECT_EQ(result["culprit"]["sha"], shas[culprit]) << culprit;
  }
}

TEST_F(GraphBisectTest, FirstParentStaysTheDefault) {
  const std::string repo = tmp_.Join("hg");
  const std::vector<std::string> shas = WriteGraphRepo(repo, testing::MercurialBisectGraph());
  ASSERT_EQ(shas.size(), 19u);
  // A bad change at 7, on the side branch: git names 7, and so does --no-first-parent; the
  // first-parent default names the merge 9 that brought it into the mainline.
  const std::string check = Check(7, {});
  ASSERT_EQ(GitBisectRun(repo, tmp_.Join("clone"), shas[0], shas[18], check),
            std::set<std::string>({shas[7]}));
  const nlohmann::json graph =
      RunGraph(repo, shas, "--workers 2 --no-first-parent", check, tmp_.Join("graph.json"));
  ASSERT_FALSE(graph.is_null());
  EXPECT_EQ(graph["culprit"]["sha"], shas[7]);
  const nlohmann::json first_parent =
      RunGraph(repo, shas, "--workers 2", check, tmp_.Join("first-parent.json"));
  ASSERT_FALSE(first_parent.is_null());
  EXPECT_EQ(first_parent["culprit"]["sha"], shas[9]);
}

TEST_F(GraphBisectTest, ListsTheCommitsGitBisectRunListsWhenSkipsBlock) {
  const std::string repo = tmp_.Join("hg");
  const std::vector<std::string> shas = WriteGraphRepo(repo, testing::MercurialBisectGraph());
  ASSERT_EQ(shas.size(), 19u);
  // The bad change is 11; 10, 11 and 13 are skipped, so the first bad commit could be any of 10,
  // 11, 13 and the merge 14, whichever commits git tries first (the list's bisection said 13 or
  // 14).
  const std::string check = Check(11, {10, 11, 13});
  const std::set<std::string> git =
      GitBisectRun(repo, tmp_.Join("clone"), shas[0], shas[18], check);
  ASSERT_EQ(git, std::set<std::string>({shas[10], shas[11], shas[13], shas[14]}));
  for (int workers : {1, 3}) {
    const nlohmann::json result =
        RunGraph(repo, shas, absl::StrCat("--workers ", workers, " --no-first-parent"), check,
                 tmp_.Join(absl::StrCat("skips", workers, ".json")));
    ASSERT_FALSE(result.is_null());
    EXPECT_EQ(result["status"], "candidates_found") << workers;
    std::set<std::string> candidates;
    for (const auto& sha : result["candidates"]) candidates.insert(sha.get<std::string>());
    EXPECT_EQ(candidates, git) << workers;
  }
}

// Issue 46: Mercurial's tests/test-bisect2.t DAG made with `git commit` and `git merge --no-ff`,
// bisected from revision 11 to 17 for the revision 9 (bad when it contains 9). Revisions 2 and 9
// fork below GOOD, so none of their parents is in the range: the range was searched as a list,
// and two runs in three named the merge 10.
TEST_F(GraphBisectTest, BranchesForkedBelowGoodNameTheCommitNotTheMerge) {
  const std::string repo = tmp_.Join("hg2");
  const std::string git = absl::StrCat("GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null git -C ",
                                       ShellQuote(repo), " -c user.name=t -c user.email=t@t ");
  std::string script = absl::StrCat("set -e; git init -q -b main ", ShellQuote(repo), "; ");
  auto commit = [&](int r) {
    absl::StrAppend(&script, "echo ", r, " > ", ShellQuote(absl::StrCat(repo, "/f", r)), "; ", git,
                    "add -A; ", git, "commit -q -m r", r, "; ", git, "tag r", r, "; ");
  };
  auto checkout = [&](int r) { absl::StrAppend(&script, git, "checkout -q r", r, "; "); };
  auto merge = [&](int r, int first, int second) {
    checkout(first);
    absl::StrAppend(&script, git, "merge -q --no-ff --no-edit -m r", r, " r", second,
                    " >/dev/null; ", git, "tag r", r, "; ");
  };
  for (int r = 0; r <= 4; ++r) commit(r);
  checkout(2);
  commit(5);
  merge(6, 5, 4);
  checkout(4);
  commit(7);
  checkout(1);
  commit(8);
  commit(9);
  merge(10, 9, 6);
  checkout(8);
  commit(11);
  commit(12);
  commit(13);
  checkout(11);
  commit(14);
  merge(15, 13, 10);
  commit(16);
  commit(17);
  checkout(15);
  commit(18);
  checkout(17);
  CommandResult made = RunShell(script);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  auto sha = [&](int r) {
    return std::string(
        absl::StripAsciiWhitespace(RunShell(absl::StrCat(git, "rev-parse r", r)).out));
  };
  const std::string check = absl::StrCat("! git merge-base --is-ancestor ", sha(9), " HEAD");
  ASSERT_EQ(GitBisectRun(repo, tmp_.Join("clone"), sha(11), sha(17), check),
            std::set<std::string>({sha(9)}));
  for (int workers : {2, 3}) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      const nlohmann::json result =
          RunGraph(repo, {sha(11), sha(17)},
                   absl::StrCat("--workers ", workers, " --runs 1 --no-first-parent"), check,
                   tmp_.Join(absl::StrCat("hg2-", workers, "-", attempt, ".json")));
      ASSERT_FALSE(result.is_null());
      EXPECT_EQ(result["status"], "culprit_found") << workers;
      EXPECT_EQ(result["culprit"]["sha"], sha(9)) << workers << " " << result["candidates"];
    }
  }
}

}  // namespace
}  // namespace kbisect
