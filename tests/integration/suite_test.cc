// Copyright 2026 The kbisect Authors.
//
// `kbisect run --suite` on a real repository whose benchmark prints a suite of kernels
// (scripts/make-suite-repo.sh): one job finds every regressed kernel's culprit, groups them by
// culprit in the report, the JSON, the Markdown summary and the page, hands the metrics its lead
// did not explain to follow-ups, and resumes after a kill -9.
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/integration/run_fixture.h"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace {

using ::kbisect::testing::CommandResult;
using ::kbisect::testing::Env;
using ::kbisect::testing::ReadFile;
using ::kbisect::testing::RunShell;
using ::kbisect::testing::ShellQuote;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

class SuiteTest : public ::kbisect::testing::KbisectRunTest {
 protected:
  // Makes the suite repository (40 commits, 20 kernels, the script's default steps) and
  // returns what each kernel should come out as: a culprit sha, "improved" or "unchanged".
  std::map<std::string, std::string> MakeSuiteRepo() {
    CommandResult made =
        RunShell(absl::StrCat(Env("KBISECT_SOURCE_DIR"), "/scripts/make-suite-repo.sh ",
                              ShellQuote(repo_), " --commits 40"));
    EXPECT_EQ(made.exit_code, 0) << made.err;
    std::map<std::string, std::string> expected;
    for (absl::string_view line : absl::StrSplit(made.out, '\n', absl::SkipEmpty())) {
      std::vector<std::string> parts = absl::StrSplit(line, '=');
      if (parts.size() == 2) expected[parts[0]] = parts[1];
    }
    EXPECT_EQ(expected.size(), 20u) << made.out;
    return expected;
  }

  // Checks every kernel's row of `result` against `expected`.
  static void ExpectRows(const nlohmann::json& result,
                         const std::map<std::string, std::string>& expected) {
    ASSERT_EQ(result["suite"].size(), expected.size()) << result["suite"].dump(1);
    for (const nlohmann::json& row : result["suite"]) {
      const std::string name = row["name"];
      const std::string want = expected.at(name);
      if (want == "unchanged") {
        EXPECT_EQ(row["state"], "unchanged") << row.dump(1);
      } else if (want == "improved") {
        EXPECT_EQ(row["state"], "improved") << row.dump(1);
      } else {
        EXPECT_EQ(row["state"], "culprit") << row.dump(1);
        EXPECT_EQ(row["culprit"]["sha"], want) << name;
      }
    }
  }

  std::string repo_ = tmp_.Join("suite");
};

TEST_F(SuiteTest, OneJobFindsEveryRegressedKernelAndGroupsThemByCulprit) {
  const std::map<std::string, std::string> expected = MakeSuiteRepo();
  const std::string json = tmp_.Join("suite.json");
  CommandResult run = Run(absl::StrCat(
      "run v1.0 HEAD --repo ", repo_, " --workers 2 --suite auto --json ", json, " --markdown ",
      tmp_.Join("suite.md"), " --html ", tmp_.Join("suite.html"), " -- ./bench.sh"));
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const nlohmann::json result = nlohmann::json::parse(ReadFile(json));
  ExpectRows(result, expected);
  // The lead is the first kernel printed; it moved, so this job found its culprit itself.
  EXPECT_EQ(result["metric_name"], "kernel_00");
  EXPECT_EQ(result["culprit"]["sha"], expected.at("kernel_00"));
  EXPECT_TRUE(result["suite"][0]["lead"]);
  // The kernels of the other two steps were searched by this job's own suite probes, on its
  // baselines and calibration: no follow-up measured them again.
  EXPECT_TRUE(result["follow_up_job_ids"].empty()) << result["follow_up_job_ids"].dump();
  for (const auto& row : result["suite"]) {
    if (row["state"] == "culprit") {
      EXPECT_EQ(row["job_id"], result["job_id"]) << row.dump(1);
    }
  }
  EXPECT_THAT(run.out, Not(HasSubstr("[suite] ")));

  const std::string first = expected.at("kernel_00").substr(0, 7);
  const std::string second = expected.at("kernel_07").substr(0, 7);
  EXPECT_THAT(run.out,
              HasSubstr(absl::StrCat("7 metrics regressed at ", first, ", 2 at ", second)));
  EXPECT_THAT(run.out, HasSubstr("  improved: kernel_10 -"));
  EXPECT_THAT(run.out, HasSubstr("  unchanged: kernel_11, kernel_12"));
  EXPECT_THAT(run.out, ContainsRegex(absl::StrCat("2 at ", second,
                                                  " \"Retune kernels 7-8 \\(x1.4\\)\": "
                                                  "kernel_07 \\+[34][0-9]\\.[0-9]%")));
  const std::string markdown = ReadFile(tmp_.Join("suite.md"));
  EXPECT_THAT(markdown, HasSubstr(absl::StrCat("- 7 metrics regressed at `", first, "`")));
  EXPECT_THAT(markdown, HasSubstr("- improved: `kernel_10` -"));
  const std::string page = ReadFile(tmp_.Join("suite.html"));
  EXPECT_THAT(page, HasSubstr("<section id=\"suite\">"));
  EXPECT_THAT(page, HasSubstr(absl::StrCat("2 at <span class=\"mono\">", second)));
}

TEST_F(SuiteTest, ALeadThatDidNotMoveStillHasTheKernelsThatDidSearchedInTheJob) {
  const std::map<std::string, std::string> expected = MakeSuiteRepo();
  const std::string json = tmp_.Join("lead.json");
  CommandResult run = Run(absl::StrCat("run v1.0 HEAD --repo ", repo_,
                                       " --workers 2 --suite auto --lead kernel_15 --json ", json,
                                       " -- ./bench.sh"));
  ASSERT_EQ(run.exit_code, 0) << "kernels have culprits\n" << run.out << run.err;
  const nlohmann::json result = nlohmann::json::parse(ReadFile(json));
  EXPECT_EQ(result["status"], "no_regression") << "the lead's own outcome";
  ExpectRows(result, expected);
  EXPECT_THAT(run.out, HasSubstr("No regression of the lead metric kernel_15"));
  // The job searched the kernels that moved itself, on its own baselines.
  EXPECT_TRUE(result["follow_up_job_ids"].empty()) << result["follow_up_job_ids"].dump();
}

TEST_F(SuiteTest, ALeadTheOutputDoesNotPrintIsAClearError) {
  MakeSuiteRepo();
  CommandResult run = Run(absl::StrCat("run v1.0 HEAD --repo ", repo_,
                                       " --workers 1 --suite auto --lead kernel_99 -- ./bench.sh"));
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_THAT(run.out + run.err, HasSubstr("no metric 'kernel_99' (the lead)"));
  EXPECT_THAT(run.out + run.err, HasSubstr("kernel_00, kernel_01"));
  // A suite and a single metric do not mix.
  CommandResult both = Run(absl::StrCat("run v1.0 HEAD --repo ", repo_,
                                        " --suite auto --metric 'x: ([0-9.]+)' -- ./bench.sh"));
  EXPECT_NE(both.exit_code, 0);
  EXPECT_THAT(both.out + both.err, HasSubstr("--suite"));
  EXPECT_EQ(RunShell("git -C " + repo_ + " status --porcelain").out, "") << "checkout untouched";
}

TEST_F(SuiteTest, AKilledSuiteRunResumesWithTheSameAnswer) {
  const std::map<std::string, std::string> expected = MakeSuiteRepo();
  const std::string json = tmp_.Join("resume.json");
  const std::string command =
      absl::StrCat("cd ", ShellQuote(tmp_.path()),
                   " && KBISECT_DEMO_SLEEP=0.1 KBISECT_CACHE_DIR=", ShellQuote(tmp_.Join("cache")),
                   " ", ::kbisect::testing::Kbisect(), " run v1.0 HEAD --repo ", repo_,
                   " --workers 2 --no-cache --suite auto --json ", json, " -- ./bench.sh");
  const std::string started = tmp_.Join("first.out");
  ASSERT_EQ(RunShell(absl::StrCat("(", command, " > ", started, " 2>&1 & echo $! > ",
                                  tmp_.Join("pid"), ")"))
                .exit_code,
            0);
  // Kill it once it has measured a commit for the suite's other steps.
  bool searching = false;
  for (int i = 0; i < 900 && !searching; ++i) {
    searching = ReadFile(started).find("Suite: measured ") != std::string::npos;
    if (!searching) RunShell("sleep 0.1");
  }
  ASSERT_TRUE(searching) << ReadFile(started);
  ASSERT_EQ(RunShell("kill -9 $(cat " + tmp_.Join("pid") + ")").exit_code, 0);
  RunShell("sleep 0.5");

  CommandResult resumed = RunShell(command);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_THAT(resumed.out, HasSubstr("Resuming the interrupted bisect"));
  ExpectRows(nlohmann::json::parse(ReadFile(json)), expected);
}

}  // namespace
}  // namespace kbisect
