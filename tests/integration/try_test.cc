// Copyright 2026 The kbisect Authors.
//
// End to end, issue 50: `kbisect try` (a revert, a commit or a patch on a base, measured against
// the base in interleaved pairs), `--verify-revert` (the confirmed culprit reverted at BAD) and
// `--find-fix` (the commit that made it faster), with the real binary, real generated
// repositories, real git and several local workers.
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/integration/run_fixture.h"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace {

using ::kbisect::testing::CommandResult;
using ::kbisect::testing::MakeRepo;
using ::kbisect::testing::ReadFile;
using ::kbisect::testing::RunShell;
using ::kbisect::testing::Trim;
using ::testing::AllOf;
using ::testing::HasSubstr;

class TryTest : public ::kbisect::testing::KbisectRunTest {
 protected:
  // What the user's repository shows: its HEAD, branches and status, which no command here may
  // change (refs/kbisect/try/ is kbisect's own).
  std::string RepositoryState(const std::string& repo) {
    return RunShell(absl::StrCat("git -C ", repo, " rev-parse HEAD && git -C ", repo,
                                 " branch -a && git -C ", repo, " status --porcelain"))
        .out;
  }

  // The sha of main's commit `n` (0 = v1.0) of a demo repository.
  std::string CommitAt(const std::string& repo, int n) {
    return Trim(RunShell(absl::StrCat("git -C ", repo, " rev-parse v1.0~0 >/dev/null && git -C ",
                                      repo, " rev-list --reverse HEAD | sed -n ", n + 1, "p"))
                    .out);
  }

  nlohmann::json ReadJson(const std::string& name) {
    return nlohmann::json::parse(ReadFile(tmp_.Join(name)));
  }
};

TEST_F(TryTest, RevertingTheCulpritAtHeadIsSignificantAndFaster) {
  const std::string repo = tmp_.Join("repo");
  const std::string culprit = MakeRepo(repo, "--commits 20 --culprit 12");
  const std::string before = RepositoryState(repo);
  // The repository as a path relative to where kbisect runs.
  CommandResult run = Run(absl::StrCat("try HEAD --revert ", culprit.substr(0, 10),
                                       " --repo repo --workers 2 --json try.json -- ./bench.sh"));
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("PERFORMANCE TRY RESULT"));
  EXPECT_THAT(run.out, AllOf(HasSubstr("lower with the change, better"), HasSubstr("significant")));
  const nlohmann::json result = ReadJson("try.json");
  EXPECT_EQ(result["spec"]["try_change"]["kind"], "revert");
  EXPECT_EQ(result["spec"]["try_change"]["target"], culprit);
  EXPECT_TRUE(result["confirmation"]["confirmed"].get<bool>());
  // The culprit made it 1.45x slower: reverting it gives about 1 / 1.45.
  EXPECT_NEAR(result["confirmation"]["ratio"].get<double>(), 1 / 1.45, 0.05);
  EXPECT_GE(result["confirmation"]["fresh_pairs"].get<int>(), 1);
  // The change is a commit whose parent is the base, kept under refs/kbisect/try/.
  const std::string made = result["bad_sha"];
  EXPECT_EQ(Trim(RunShell(absl::StrCat("git -C ", repo, " rev-parse ", made, "^")).out),
            Trim(RunShell(absl::StrCat("git -C ", repo, " rev-parse HEAD")).out));
  EXPECT_THAT(RunShell(absl::StrCat("git -C ", repo, " for-each-ref refs/kbisect/try/")).out,
              HasSubstr(made));
  EXPECT_EQ(RepositoryState(repo), before);
}

TEST_F(TryTest, AChangeThatDoesNothingIsNotSignificant) {
  const std::string repo = tmp_.Join("repo");
  MakeRepo(repo, "--commits 20 --culprit 5");
  // Commit 15 changes a kernel file but not the latency.
  CommandResult run = Run(absl::StrCat("try HEAD --revert ", CommitAt(repo, 15), " --repo ", repo,
                                       " --workers 2 --json try.json -- ./bench.sh"));
  EXPECT_EQ(run.exit_code, 3) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("no significant difference"));
  const nlohmann::json result = ReadJson("try.json");
  EXPECT_FALSE(result["confirmation"]["confirmed"].get<bool>());
  EXPECT_NEAR(result["confirmation"]["ratio"].get<double>(), 1.0, 0.03);
}

TEST_F(TryTest, APatchThatDoesNotApplyNamesItsFileAndHunk) {
  const std::string repo = tmp_.Join("repo");
  MakeRepo(repo, "--commits 10");
  testing::WriteFile(tmp_.Join("fix.patch"),
                     "--- a/params.txt\n+++ b/params.txt\n@@ -1,2 +1,2 @@\n-latency_ms=7.77\n"
                     "+latency_ms=1.00\n noise=0.01\n");
  const std::string before = RepositoryState(repo);
  CommandResult run = Run(absl::StrCat("try HEAD --patch fix.patch --repo ", repo,
                                       " --workers 1 -- ./bench.sh"));
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_THAT(run.err, AllOf(HasSubstr("params.txt"), HasSubstr("@@ -1,2 +1,2 @@")));
  EXPECT_EQ(RepositoryState(repo), before);
}

TEST_F(TryTest, ARevertThatConflictsNamesTheFilesAndTheLaterCommits) {
  const std::string repo = tmp_.Join("repo");
  // The second step edits the same line of params.txt after the culprit.
  const std::string steps = MakeRepo(repo, "--commits 20 --culprit 8 --second-step 14:1.2");
  const std::string culprit = steps.substr(steps.find("culprit=") + 8, 40);
  CommandResult run = Run(absl::StrCat("try HEAD --revert ", culprit, " --repo ", repo,
                                       " --workers 1 -- ./bench.sh"));
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_THAT(run.err, AllOf(HasSubstr("does not apply cleanly"), HasSubstr("params.txt"),
                             HasSubstr("later commits that touched them")));
}

TEST_F(TryTest, NeedsExactlyOneChange) {
  const std::string repo = tmp_.Join("repo");
  MakeRepo(repo, "--commits 5");
  CommandResult none = Run(absl::StrCat("try HEAD --repo ", repo, " -- ./bench.sh"));
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_THAT(none.err, HasSubstr("exactly one change"));
  CommandResult two = Run(absl::StrCat("try HEAD~2 HEAD --revert HEAD~1 --repo ", repo,
                                       " -- ./bench.sh"));
  EXPECT_EQ(two.exit_code, 2);
  EXPECT_THAT(two.err, HasSubstr("give one commit"));
}

TEST_F(TryTest, VerifyRevertReportsTheShareTheRevertRecovers) {
  const std::string repo = tmp_.Join("repo");
  const std::string culprit = MakeRepo(repo, "--commits 24 --culprit 15");
  const std::string before = RepositoryState(repo);
  CommandResult run = Run(absl::StrCat("run v1.0 HEAD --verify-revert --repo ", repo,
                                       " --workers 2 --json run.json -- ./bench.sh"));
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  const nlohmann::json result = ReadJson("run.json");
  EXPECT_EQ(result["culprit"]["sha"], culprit);
  const nlohmann::json& check = result["revert_check"];
  EXPECT_EQ(check["state"], "done") << check.dump();
  EXPECT_EQ(check["culprit_sha"], culprit);
  EXPECT_TRUE(check["significant"].get<bool>());
  // The one step is the culprit's: its revert recovers all of it.
  EXPECT_NEAR(check["recovered_share"].get<double>(), 1.0, 0.15);
  EXPECT_LE(check["share_low"].get<double>(), check["recovered_share"].get<double>());
  EXPECT_GE(check["share_high"].get<double>(), check["recovered_share"].get<double>());
  EXPECT_THAT(run.out, AllOf(HasSubstr("Revert check: Reverting "), HasSubstr("recovers")));
  EXPECT_EQ(RepositoryState(repo), before);
}

TEST_F(TryTest, VerifyRevertSaysWhenTheRevertConflictsAndTheJobStillSucceeds) {
  const std::string repo = tmp_.Join("repo");
  const std::string steps = MakeRepo(repo, "--commits 20 --culprit 8 --second-step 14:1.1");
  CommandResult run = Run(absl::StrCat("run v1.0 HEAD --verify-revert --repo ", repo,
                                       " --workers 2 --json run.json -- ./bench.sh"));
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  const nlohmann::json result = ReadJson("run.json");
  EXPECT_EQ(result["revert_check"]["state"], "conflict") << result["revert_check"].dump();
  EXPECT_THAT(result["revert_check"]["conflict_files"].dump(), HasSubstr("params.txt"));
  EXPECT_THAT(run.out, HasSubstr("does not apply cleanly"));
}

// A repository of 12 commits whose benchmark prints a.txt times b.txt: commit 4 takes a.txt from
// 1.0 to 1.5 and commit 8 takes b.txt from 1.0 to 1.3, two steps in two files. Returns the
// first step's sha.
std::string MakeTwoStepRepo(const std::string& dir) {
  RunShell(absl::StrCat("mkdir -p ", dir));
  testing::WriteFile(dir + "/bench.sh",
                     "#!/bin/sh\na=$(cat a.txt); b=$(cat b.txt)\n"
                     "awk -v a=\"$a\" -v b=\"$b\" 'BEGIN { printf \"Latency: %.4f ms\\n\", a * b }'\n");
  const CommandResult made = RunShell(absl::StrCat(
      "set -e; cd ", dir,
      " && chmod +x bench.sh && git init -q -b main . && git config user.email t@example.com && "
      "git config user.name t && echo 1.0 > a.txt && echo 1.0 > b.txt && git add . && git "
      "commit -qm c0 && git tag v1.0 && for i in $(seq 1 12); do echo $i > notes$i.txt; "
      "if [ $i = 4 ]; then echo 1.5 > a.txt; fi; if [ $i = 8 ]; then echo 1.3 > b.txt; fi; "
      "git add . && git commit -qm c$i; done && git rev-parse HEAD~8"));
  EXPECT_EQ(made.exit_code, 0) << made.err;
  return Trim(made.out);
}

TEST_F(TryTest, VerifyRevertOfOneOfTwoStepsRecoversPartOfTheRegression) {
  const std::string repo = tmp_.Join("repo");
  const std::string first_step = MakeTwoStepRepo(repo);
  CommandResult run = Run(absl::StrCat("run v1.0 HEAD --verify-revert --repo ", repo,
                                       " --workers 2 --json run.json -- ./bench.sh"));
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  const nlohmann::json result = ReadJson("run.json");
  // The threshold lands on the first step (1.5 of 1.95); its revert leaves b's 1.3 of 1.95:
  // (1.95 - 1.3) / 0.95 = 68% of the regression.
  EXPECT_EQ(result["culprit"]["sha"], first_step);
  const nlohmann::json& check = result["revert_check"];
  ASSERT_EQ(check["state"], "done") << check.dump();
  EXPECT_NEAR(check["recovered_share"].get<double>(), 0.68, 0.05);
  EXPECT_THAT(run.out, HasSubstr("other commits of the range matter too"));
}

TEST_F(TryTest, TryingACommitOnAnotherBaseOverFourWorkers) {
  const std::string repo = tmp_.Join("repo");
  const std::string culprit = MakeRepo(repo, "--commits 20 --culprit 12");
  // The culprit picked onto v1.0 makes it 1.45x slower there too.
  CommandResult run = Run(absl::StrCat("try v1.0 --commit ", culprit, " --repo ", repo,
                                       " --workers 4 --runs 4 --json try.json -- ./bench.sh"));
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("higher with the change, worse"));
  const nlohmann::json result = ReadJson("try.json");
  EXPECT_EQ(result["spec"]["try_change"]["kind"], "commit");
  EXPECT_NEAR(result["confirmation"]["ratio"].get<double>(), 1.45, 0.07);
  // At least --runs fresh interleaved pairs, spread over tasks of at most --runs pairs.
  EXPECT_GE(result["confirmation"]["fresh_pairs"].get<int>(), 4);
}

TEST_F(TryTest, TryingAPatchOnOneWorker) {
  const std::string repo = tmp_.Join("repo");
  MakeRepo(repo, "--commits 10 --culprit 9");
  const std::string latency = Trim(RunShell(absl::StrCat(
      "git -C ", repo, " show HEAD:params.txt | sed -n 's/^latency_ms=//p'")).out);
  testing::WriteFile(tmp_.Join("fix.patch"),
                     absl::StrCat("--- a/params.txt\n+++ b/params.txt\n@@ -1,2 +1,2 @@\n",
                                  "-latency_ms=", latency, "\n+latency_ms=1.00\n noise=0.01\n"));
  CommandResult run = Run(absl::StrCat("try HEAD --patch fix.patch --repo ", repo,
                                       " --workers 1 --json try.json -- ./bench.sh"));
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  const nlohmann::json result = ReadJson("try.json");
  EXPECT_EQ(result["spec"]["try_change"]["kind"], "patch");
  EXPECT_NEAR(result["confirmation"]["ratio"].get<double>(), 1 / 1.45, 0.05);
}

TEST_F(TryTest, FindFixNamesTheCommitThatMadeItFaster) {
  const std::string repo = tmp_.Join("repo");
  // The planted step makes the benchmark 0.6x as slow: a fix.
  const std::string fix = MakeRepo(repo, "--commits 30 --culprit 19 --slowdown 0.6");
  CommandResult run = Run(absl::StrCat("run v1.0 HEAD --find-fix --repo ", repo,
                                       " --workers 2 --json fix.json -- ./bench.sh"));
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_THAT(run.out, AllOf(HasSubstr("PERFORMANCE FIX BISECT RESULT"), HasSubstr("Fixed by:"),
                             HasSubstr("Improvement: "), HasSubstr("faster")));
  EXPECT_EQ(ReadJson("fix.json")["culprit"]["sha"], fix);
}

TEST_F(TryTest, FindFixRefusesARegressionWithWhatToDo) {
  const std::string repo = tmp_.Join("repo");
  MakeRepo(repo, "--commits 12 --culprit 6");
  CommandResult run = Run(absl::StrCat("run v1.0 HEAD --find-fix --repo ", repo,
                                       " --workers 1 -- ./bench.sh"));
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_THAT(run.out + run.err, HasSubstr("With --find-fix GOOD is the slow commit"));
}

}  // namespace
}  // namespace kbisect
