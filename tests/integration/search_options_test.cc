// Copyright 2026 The kbisect Authors.
//
// `kbisect run`'s search options on real demo repositories: marks (`--mark SHA=good|bad|skip`),
// resume, replay, `--find-good` (with `--max-lookback` or `--since`) and `--confidence`.
#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
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
using ::kbisect::testing::MakeRepo;
using ::kbisect::testing::ReadFile;
using ::kbisect::testing::RunShell;
using ::testing::HasSubstr;
using ::testing::Not;

using SearchOptionsTest = ::kbisect::testing::KbisectRunTest;

// The first-parent commits of `repo` from v1.0 (index 0) to HEAD.
std::vector<std::string> Commits(const std::string& repo) {
  std::vector<std::string> shas =
      absl::StrSplit(RunShell("git -C " + repo + " rev-list --first-parent --reverse HEAD").out,
                     '\n', absl::SkipEmpty());
  return shas;
}

// Lines in the file at `path` (0 when it does not exist).
int CountLines(const std::string& path) {
  const std::string text = ReadFile(path);
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

TEST_F(SearchOptionsTest, MarksStandInForMeasurementsAndAreListedInTheReport) {
  const std::string repo = tmp_.Join("repo");
  const std::string culprit = MakeRepo(repo, "--commits 60 --culprit 41");
  const std::vector<std::string> shas = Commits(repo);
  ASSERT_EQ(shas.size(), 61u);
  ASSERT_EQ(shas[41], culprit);
  const std::string json = tmp_.Join("marks.json");
  // 30 good, 50 bad (full sha), 38 skip (a short prefix, upper case).
  CommandResult run =
      Run(absl::StrCat("run v1.0 HEAD --repo ", repo, " --workers 2 --json ", json, " --mark ",
                       shas[30].substr(0, 10), "=good --mark ", shas[50], "=bad --mark ",
                       absl::AsciiStrToUpper(shas[38].substr(0, 8)), "=skip -- ./bench.sh"));
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("Marked by you (not measured):"));
  EXPECT_THAT(run.out, HasSubstr(absl::StrCat(shas[38].substr(0, 7), " skip")));  // Header.
  EXPECT_THAT(run.out, HasSubstr("20 commits left to search"));                   // 31..50.
  EXPECT_THAT(run.out, ::testing::ContainsRegex(absl::StrCat(shas[38].substr(0, 7),
                                                             "[0-9a-f]* = skip")));  // Report.
  const nlohmann::json result = nlohmann::json::parse(ReadFile(json));
  EXPECT_EQ(result["status"], "culprit_found");
  EXPECT_EQ(result["culprit"]["sha"], culprit);
  ASSERT_EQ(result["marks"].size(), 3u);
  EXPECT_EQ(result["marks"][0]["sha"], shas[30]);
  EXPECT_EQ(result["marks"][0]["verdict"], "good");
  EXPECT_EQ(result["marks"][1]["index"], 38);
  EXPECT_EQ(result["marks"][2]["verdict"], "bad");
  for (const auto& probe : result["probes"]) {
    if (probe["kind"] != "bisect") continue;
    const int index = probe["index"];
    EXPECT_GT(index, 30);
    EXPECT_LT(index, 50);
    EXPECT_NE(index, 38) << "a skip mark is never probed";
  }
}

TEST_F(SearchOptionsTest, BadMarksAreRefusedBeforeAnythingRuns) {
  const std::string repo = tmp_.Join("repo");
  MakeRepo(repo, "--commits 20 --culprit 9");
  const std::vector<std::string> shas = Commits(repo);
  const std::string head_before = RunShell("git -C " + repo + " rev-parse HEAD").out;
  struct Case {
    std::string flags;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"--mark ffffffff=good", "no commit of the range"},
      {"--mark " + shas[5] + "=maybe", "--mark expects SHA=good, SHA=bad or SHA=skip"},
      {"--mark " + shas[0].substr(0, 8) + "=bad", "an end of the range"},
      {absl::StrCat("--mark ", shas[12], "=good --mark ", shas[6], "=bad"),
       "contradict each other"},
  };
  for (const Case& c : cases) {
    CommandResult run =
        Run(absl::StrCat("run v1.0 HEAD --repo ", repo, " ", c.flags, " -- ./bench.sh"));
    EXPECT_NE(run.exit_code, 0) << c.flags;
    EXPECT_THAT(run.err, HasSubstr(c.error)) << c.flags << "\n" << run.out;
    EXPECT_THAT(run.out, ::testing::Not(HasSubstr("Baseline results"))) << c.flags;
  }
  EXPECT_EQ(RunShell("git -C " + repo + " rev-parse HEAD").out, head_before);
  EXPECT_EQ(RunShell("git -C " + repo + " status --porcelain").out, "");
}

TEST_F(SearchOptionsTest, AKilledRunResumesFromItsJournal) {
  const std::string repo = tmp_.Join("repo");
  const std::string culprit = MakeRepo(repo, "--commits 150 --culprit 97");
  // Every benchmark run appends a line to the counter of the run it belongs to.
  // Every run of the command appends to one counter (the command must be the same to resume),
  // which is moved aside after each run.
  const std::string counter = tmp_.Join("count");
  auto command = [&](const std::string& flags) {
    return absl::StrCat(
        "cd ", testing::ShellQuote(tmp_.path()),
        " && KBISECT_DEMO_SLEEP=0.15 KBISECT_CACHE_DIR=", testing::ShellQuote(tmp_.Join("cache")),
        " ", testing::Kbisect(), " run v1.0 HEAD --repo ", repo, " --workers 2 --no-cache ", flags,
        " --json ", tmp_.Join("resume.json"), " -- sh -c 'echo run >> ", counter,
        "; exec ./bench.sh'");
  };
  // Start, wait for the second round, kill -9.
  const std::string started = tmp_.Join("first.out");
  ASSERT_EQ(RunShell(absl::StrCat("(", command(""), " > ", started, " 2>&1 & echo $! > ",
                                  tmp_.Join("pid"), ")"))
                .exit_code,
            0);
  bool second_round = false;
  for (int i = 0; i < 600 && !second_round; ++i) {
    second_round = ReadFile(started).find("Round 2 of") != std::string::npos;
    if (!second_round) RunShell("sleep 0.1");
  }
  ASSERT_TRUE(second_round) << ReadFile(started);
  ASSERT_EQ(RunShell("kill -9 $(cat " + tmp_.Join("pid") + ")").exit_code, 0);
  RunShell("sleep 0.5");  // Its last benchmark processes end.
  const int runs_before = CountLines(counter);
  RunShell(absl::StrCat("mv ", counter, " ", tmp_.Join("first.count")));

  // The same command resumes the job: same culprit, fewer new runs than a fresh bisect.
  CommandResult resumed = RunShell(command(""));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_THAT(resumed.out,
              ::testing::ContainsRegex(
                  "Resuming the interrupted bisect from [0-9]+:[0-9]+ \\(job-[^)]+\\): "
                  "[1-9][0-9]* probes? kept; --fresh starts over"));
  EXPECT_EQ(nlohmann::json::parse(ReadFile(tmp_.Join("resume.json")))["culprit"]["sha"], culprit);
  const int resumed_runs = CountLines(counter);
  RunShell(absl::StrCat("mv ", counter, " ", tmp_.Join("second.count")));

  // Once finished nothing is left to resume: the same command (--fresh too) starts over.
  CommandResult fresh = RunShell(command("--fresh"));
  ASSERT_EQ(fresh.exit_code, 0) << fresh.out << fresh.err;
  EXPECT_THAT(fresh.out, ::testing::Not(HasSubstr("Resuming")));
  EXPECT_EQ(nlohmann::json::parse(ReadFile(tmp_.Join("resume.json")))["culprit"]["sha"], culprit);
  const int fresh_runs = CountLines(counter);
  std::printf("kill -9 after %d runs; the resumed run took %d more, a fresh one %d\n", runs_before,
              resumed_runs, fresh_runs);
  EXPECT_GT(runs_before, 0);
  EXPECT_LT(resumed_runs, fresh_runs);
  EXPECT_EQ(RunShell("ls " + tmp_.Join("cache/runs") + " | grep -v '^last.log$'").out, "")
      << "finished runs leave no journal";
}

TEST_F(SearchOptionsTest, TheLogOfARunReplaysAndAnEditedLineCorrectsAVerdict) {
  const std::string repo = tmp_.Join("repo");
  const std::string culprit = MakeRepo(repo, "--commits 80 --culprit 52");
  const std::vector<std::string> shas = Commits(repo);
  const nlohmann::json first = RunForJson(repo, "", "first.json");
  ASSERT_EQ(first["culprit"]["sha"], culprit);
  CommandResult log = Run("log");
  ASSERT_EQ(log.exit_code, 0) << log.err;
  EXPECT_THAT(log.out, HasSubstr("# kbisect log of " + first["job_id"].get<std::string>()));
  EXPECT_THAT(log.out, HasSubstr("bad " + culprit));
  EXPECT_THAT(log.out, HasSubstr("good " + shas[51]));
  testing::WriteFile(tmp_.Join("first.log"), log.out);

  // Replayed as it is: every interior verdict is known, only the ends and the confirmation
  // are measured.
  const nlohmann::json replayed =
      RunForJson(repo, "--replay " + tmp_.Join("first.log"), "replayed.json");
  EXPECT_EQ(replayed["culprit"]["sha"], culprit);
  EXPECT_LT(replayed["bench_runs"].get<int>(), first["bench_runs"].get<int>());
  for (const auto& probe : replayed["probes"]) EXPECT_NE(probe["kind"], "bisect");

  // The user distrusts the verdict on the culprit's parent: deleting its line measures it again.
  std::string edited;
  for (absl::string_view line : absl::StrSplit(log.out, '\n')) {
    if (line.find(shas[51]) == absl::string_view::npos) absl::StrAppend(&edited, line, "\n");
  }
  testing::WriteFile(tmp_.Join("edited.log"), edited);
  const nlohmann::json corrected =
      RunForJson(repo, "--no-cache --replay " + tmp_.Join("edited.log"), "edited.json");
  EXPECT_EQ(corrected["culprit"]["sha"], culprit);
  bool remeasured = false;
  for (const auto& probe : corrected["probes"]) {
    remeasured = remeasured || (probe["kind"] == "bisect" && probe["sha"] == shas[51] &&
                                !probe["cached"].get<bool>());
  }
  EXPECT_TRUE(remeasured) << "the deleted line's commit is probed again";

  // A mistake in the log names the line.
  testing::WriteFile(tmp_.Join("bad.log"), "good " + shas[10] + "\nperhaps " + shas[20] + "\n");
  CommandResult bad = Run(absl::StrCat("run v1.0 HEAD --repo ", repo, " --replay ",
                                       tmp_.Join("bad.log"), " -- ./bench.sh"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("line 2: 'perhaps' is not a verdict"));
}

TEST_F(SearchOptionsTest, FindGoodLooksBackFromBadAndBisectsTheBracket) {
  const std::string repo = tmp_.Join("repo");
  // 100 commits, the step 20 back from HEAD: the lookback tries HEAD~1, ~2, ~4, then ~8, ~16,
  // ~32 (3 workers), finds ~32 better and ~16 not, and bisects HEAD~32..HEAD.
  const std::string culprit = MakeRepo(repo, "--commits 100 --culprit 80");
  const std::vector<std::string> shas = Commits(repo);
  ASSERT_EQ(shas.size(), 101u);
  const std::string json = tmp_.Join("find-good.json");
  CommandResult run = Run(absl::StrCat("run --find-good --repo ", repo, " --workers 3 --json ",
                                       json, " -- ./bench.sh"));
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("Looking back: is HEAD~1 better than HEAD?"));
  EXPECT_THAT(run.out, HasSubstr("HEAD~16 is not better than HEAD"));
  EXPECT_THAT(run.out, HasSubstr("GOOD found by looking back: HEAD~32 is better than HEAD; "
                                 "HEAD~16 is not, so the step is in HEAD~32..HEAD~16 "
                                 "(6 lookback jobs in 2 rounds)"));
  const nlohmann::json result = nlohmann::json::parse(ReadFile(json));
  EXPECT_EQ(result["status"], "culprit_found");
  EXPECT_EQ(result["culprit"]["sha"], culprit);
  EXPECT_EQ(result["good_sha"], shas[68]);
  EXPECT_EQ(result["bad_sha"], shas[100]);

  // Nothing better within the lookback: exit 3, saying how far it looked.
  CommandResult short_lookback = Run(absl::StrCat("run --find-good HEAD --max-lookback 10 --repo ",
                                                  repo, " --workers 3 -- ./bench.sh"));
  EXPECT_EQ(short_lookback.exit_code, 3) << short_lookback.out << short_lookback.err;
  EXPECT_THAT(short_lookback.err,
              HasSubstr("no commit within HEAD~1..HEAD~10 is better than HEAD"));

  // Usage: one commit only.
  CommandResult both =
      Run(absl::StrCat("run --find-good v1.0 HEAD --repo ", repo, " -- ./bench.sh"));
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_THAT(both.err, HasSubstr("--find-good takes one commit"));
}

TEST_F(SearchOptionsTest, FindGoodSinceADateLooksBackOnlyThatFar) {
  const std::string repo = tmp_.Join("repo");
  // make-demo-repo dates commit i at 2026-01-01 00:00 UTC + (i + 1) hours: HEAD (commit 100) is
  // 2026-01-05 05:00, the step (commit 80) 2026-01-04 09:00.
  const std::string culprit = MakeRepo(repo, "--commits 100 --culprit 80");
  const std::vector<std::string> shas = Commits(repo);
  ASSERT_EQ(shas.size(), 101u);
  // Since 2026-01-04 00:00: commits 71..99, HEAD~1..HEAD~29. With 3 workers: HEAD~1, ~2, ~4,
  // then ~8, ~16 and ~29 (the last commit that recent), which is better.
  const std::string json = tmp_.Join("since.json");
  CommandResult run = Run(absl::StrCat("run --find-good --since '2026-01-04 00:00 +0000' --repo ",
                                       repo, " --workers 3 --json ", json, " -- ./bench.sh"));
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("Looking back: is HEAD~29 better than HEAD?"));
  EXPECT_THAT(run.out, Not(HasSubstr("HEAD~32")));
  EXPECT_THAT(run.out, HasSubstr("GOOD found by looking back: HEAD~29 is better than HEAD; "
                                 "HEAD~16 is not, so the step is in HEAD~29..HEAD~16 "
                                 "(6 lookback jobs in 2 rounds)"));
  const nlohmann::json result = nlohmann::json::parse(ReadFile(json));
  EXPECT_EQ(result["status"], "culprit_found");
  EXPECT_EQ(result["culprit"]["sha"], culprit);
  EXPECT_EQ(result["good_sha"], shas[71]);

  // Since 2026-01-04 23:00: HEAD~1..HEAD~6 only, none better: exit 3 with the range searched.
  CommandResult recent = Run(absl::StrCat("run --find-good --since 2026-01-04T23:00:00Z --repo ",
                                          repo, " --workers 3 -- ./bench.sh"));
  EXPECT_EQ(recent.exit_code, 3) << recent.out << recent.err;
  EXPECT_THAT(recent.err, HasSubstr("no commit within HEAD~1..HEAD~6 (the commits since "
                                    "2026-01-04T23:00:00Z) is better than HEAD"));
  // Nothing as recent as two weeks ago (the clock is past January): nothing is run.
  CommandResult none =
      Run(absl::StrCat("run --find-good --since 14d --repo ", repo, " -- ./bench.sh"));
  EXPECT_EQ(none.exit_code, 3) << none.out << none.err;
  EXPECT_THAT(none.err, HasSubstr("is as recent as --since 14d"));
  EXPECT_THAT(none.out, Not(HasSubstr("Looking back")));
  // Usage: a date it cannot read, and --since without --find-good.
  CommandResult unreadable =
      Run(absl::StrCat("run --find-good --since yesterday --repo ", repo, " -- ./bench.sh"));
  EXPECT_EQ(unreadable.exit_code, 2) << unreadable.out << unreadable.err;
  EXPECT_THAT(unreadable.err, HasSubstr("--since expects a date"));
  CommandResult alone =
      Run(absl::StrCat("run v1.0 --since 2026-01-04 --repo ", repo, " -- ./bench.sh"));
  EXPECT_EQ(alone.exit_code, 2) << alone.out << alone.err;
}

TEST_F(SearchOptionsTest, ConfidenceRunsUntilTheCulpritIsThatProbable) {
  const std::string repo = tmp_.Join("repo");
  // A 10% step under +-5% noise: a verdict takes several runs, and the culprit's own
  // probability is what the search must reach.
  const std::string culprit =
      MakeRepo(repo, "--commits 30 --culprit 17 --noise 0.05 --slowdown 1.1");
  const std::string json = tmp_.Join("confidence.json");
  CommandResult run = Run(absl::StrCat("run v1.0 HEAD --repo ", repo,
                                       " --workers 2 --confidence 0.999 --no-confirm --json ", json,
                                       " -- ./bench.sh"));
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const nlohmann::json result = nlohmann::json::parse(ReadFile(json));
  EXPECT_EQ(result["status"], "culprit_found");
  EXPECT_EQ(result["culprit"]["sha"], culprit);
  EXPECT_GE(result["culprit_probability"].get<double>(), 0.999);
  EXPECT_DOUBLE_EQ(result["spec"]["confidence"].get<double>(), 0.999);
  EXPECT_EQ(result["spec"]["max_runs"], 60) << "--confidence's --max-runs default";
  EXPECT_THAT(run.out, HasSubstr("Confidence:"));

  // A plain pass/fail result is taken as certain: --confidence wants a metric or --flaky.
  CommandResult plain =
      Run(absl::StrCat("run v1.0 --repo ", repo, " --exit-code --confidence 0.99 -- ./bench.sh"));
  EXPECT_EQ(plain.exit_code, 2) << plain.out << plain.err;
  EXPECT_THAT(plain.err, HasSubstr("--confidence needs a metric or --flaky"));
}

TEST_F(SearchOptionsTest, TheConfidenceStopIsTheDefaultWithAMetricAndCanBeTurnedOff) {
  const std::string repo = tmp_.Join("repo");
  const std::string culprit =
      MakeRepo(repo, "--commits 30 --culprit 11 --noise 0.05 --slowdown 1.1");
  const std::string json = tmp_.Join("default.json");
  CommandResult run = Run(absl::StrCat("run v1.0 HEAD --repo ", repo, " --workers 2 --no-confirm "
                                       "--json ", json, " -- ./bench.sh"));
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const nlohmann::json result = nlohmann::json::parse(ReadFile(json));
  EXPECT_EQ(result["culprit"]["sha"], culprit);
  // The defaults (common/spec/job_spec.h): the stop at 0.99, room for it in --max-runs 60.
  EXPECT_DOUBLE_EQ(result["spec"]["confidence"].get<double>(), 0.99);
  EXPECT_EQ(result["spec"]["max_runs"], 60);
  EXPECT_GE(result["culprit_probability"].get<double>(), 0.99);

  const std::string off_json = tmp_.Join("off.json");
  CommandResult off = Run(absl::StrCat("run v1.0 HEAD --repo ", repo, " --workers 2 --no-confirm "
                                       "--confidence off --json ", off_json, " -- ./bench.sh"));
  ASSERT_EQ(off.exit_code, 0) << off.out << off.err;
  const nlohmann::json without = nlohmann::json::parse(ReadFile(off_json));
  EXPECT_EQ(without["culprit"]["sha"], culprit);
  EXPECT_TRUE(without["spec"]["confidence_off"].get<bool>());
  EXPECT_EQ(without["spec"]["max_runs"], 30);

  // A flaky test's search ends at a confidence: off is refused before anything starts.
  CommandResult flaky = Run(absl::StrCat("run v1.0 --repo ", repo,
                                         " --exit-code --flaky --confidence off -- ./bench.sh"));
  EXPECT_EQ(flaky.exit_code, 2) << flaky.out << flaky.err;
  EXPECT_THAT(flaky.err, HasSubstr("not for --flaky"));
}

}  // namespace
}  // namespace kbisect
