// Copyright 2026 The kbisect Authors.
//
// `kbisect run` (and `submit`, `nightly`) given bad input: a clear message naming what was wrong
// and what to do, a non-zero exit, and nothing started or left behind.
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/run_fixture.h"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace {

using ::kbisect::testing::CommandResult;
using ::kbisect::testing::Kbisect;
using ::kbisect::testing::MakeRepo;
using ::kbisect::testing::ReadFile;
using ::kbisect::testing::RunShell;
using ::kbisect::testing::ShellQuote;
using ::kbisect::testing::TempDir;
using ::testing::HasSubstr;
using ::testing::Not;

using BadInputTest = ::kbisect::testing::KbisectRunTest;

TEST_F(BadInputTest, BadInputsFailFastWithAClearMessage) {
  const std::string repo = tmp_.Join("repo");
  MakeRepo(repo, "--commits 10 --culprit 4");

  CommandResult unknown = Run("run deadbeef --repo " + repo + " -- ./bench.sh");
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("unknown revision 'deadbeef'"));

  CommandResult not_repo = Run("run v1.0 --repo " + tmp_.path() + " -- ./bench.sh");
  EXPECT_EQ(not_repo.exit_code, 1);
  EXPECT_THAT(not_repo.err, HasSubstr("not inside a git repository"));

  CommandResult no_bench = Run("run v1.0 --repo " + repo);
  EXPECT_EQ(no_bench.exit_code, 2);
  EXPECT_THAT(no_bench.err, HasSubstr("no benchmark command"));

  CommandResult empty = Run("run HEAD HEAD --repo " + repo + " -- ./bench.sh");
  EXPECT_EQ(empty.exit_code, 1);
  EXPECT_THAT(empty.err, ::testing::AnyOf(HasSubstr("empty"), HasSubstr("same commit")));

  CommandResult reversed = Run("run HEAD v1.0 --repo " + repo + " -- ./bench.sh");
  EXPECT_EQ(reversed.exit_code, 1);
  EXPECT_THAT(reversed.err, HasSubstr("ancestor"));

  CommandResult missing_cmd = Run("run v1.0 --repo " + repo + " -- ./no-such-bench");
  EXPECT_EQ(missing_cmd.exit_code, 1);
  EXPECT_THAT(missing_cmd.err, HasSubstr("no-such-bench"));

  CommandResult no_metric = Run("run v1.0 --repo " + repo +
                                " --metric 'Throughput: ([0-9.]+)' "
                                "-- ./bench.sh");
  EXPECT_EQ(no_metric.exit_code, 1);
  EXPECT_THAT(no_metric.err, HasSubstr("Throughput"));
  EXPECT_THAT(no_metric.err, HasSubstr("Latency:"));  // The output's last lines are shown.

  CommandResult swapped = Run("run v1.0 --repo " + repo +
                              " -- sh -c "
                              "'./bench.sh | awk \"{ print \\$1, 3 - \\$2, \\$3 }\"'");
  EXPECT_EQ(swapped.exit_code, 1);
  EXPECT_THAT(swapped.err, HasSubstr("swapped"));

  CommandResult usage = Run("run --runs 0 v1.0 --repo " + repo + " -- ./bench.sh");
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_THAT(usage.err, HasSubstr("kbisect run: --runs must be a whole number from 1 to 1000, "
                                   "not 0\nRun `kbisect run --help` for usage."));
}

// A bad flag value is a usage error (exit 2) said in the user's words, before anything starts:
// no coordinator, no worker, no mirror and no journal in the cache directory.
TEST_F(BadInputTest, BadFlagsAreRefusedBeforeAnythingStarts) {
  const std::string repo = tmp_.Join("repo");
  MakeRepo(repo, "--commits 10 --culprit 4");
  const std::string cache = tmp_.Join("untouched-cache");
  const std::string flags = absl::StrCat("--repo ", repo, " --cache-dir ", cache);

  CommandResult regex = Run("run v1.0 HEAD --metric '(' " + flags + " -- ./bench.sh");
  EXPECT_EQ(regex.exit_code, 2) << regex.err;
  EXPECT_THAT(regex.err, HasSubstr("kbisect run: invalid metric regex '(': missing ): ("));
  EXPECT_THAT(regex.err, HasSubstr("Give --metric an RE2 regex with one capturing group"));
  EXPECT_THAT(regex.err, HasSubstr("or --metric-json a dotted path"));
  EXPECT_THAT(regex.err, HasSubstr("Run `kbisect run --help` for usage."));
  EXPECT_THAT(regex.err, Not(HasSubstr("(?m)")));
  EXPECT_THAT(regex.err, Not(HasSubstr("--metric-regex")));
  EXPECT_EQ(regex.out, "");  // No job header: nothing was submitted.

  CommandResult groups = Run("run v1.0 --metric 'a(b)(c)' " + flags + " -- ./bench.sh");
  EXPECT_EQ(groups.exit_code, 2);
  EXPECT_THAT(groups.err, HasSubstr("'a(b)(c)' must have exactly one capturing group"));

  CommandResult path = Run("run v1.0 --metric-json 'results..ms' " + flags + " -- ./bench.sh");
  EXPECT_EQ(path.exit_code, 2);
  EXPECT_THAT(path.err, HasSubstr("results..ms"));
  EXPECT_THAT(path.err, HasSubstr("--metric-json"));

  CommandResult timeout = Run("run v1.0 --timeout -5 " + flags + " -- ./bench.sh");
  EXPECT_EQ(timeout.exit_code, 2);
  EXPECT_EQ(timeout.err,
            "kbisect run: --timeout must be positive (seconds), not -5\n"
            "Run `kbisect run --help` for usage.\n");

  CommandResult threshold = Run("run v1.0 --threshold 2 " + flags + " -- ./bench.sh");
  EXPECT_EQ(threshold.exit_code, 2);
  EXPECT_THAT(threshold.err,
              HasSubstr("kbisect run: --threshold must be a number from 0.01 to 0.99, not 2"));

  CommandResult workers = Run("run v1.0 --workers lots " + flags + " -- ./bench.sh");
  EXPECT_EQ(workers.exit_code, 2);
  EXPECT_THAT(workers.err,
              HasSubstr("kbisect run: --workers must be a whole number from 1 to 256, not 'lots'"));

  // `kbisect submit` checks the same before it dials a coordinator (none listens at port 1).
  CommandResult submit =
      Run("submit v1.0 --metric '(' --coordinator 127.0.0.1:1 --repo " + repo + " -- ./bench.sh");
  EXPECT_EQ(submit.exit_code, 2);
  EXPECT_THAT(submit.err, HasSubstr("kbisect submit: invalid metric regex '(': missing ): ("));
  EXPECT_THAT(submit.err, Not(HasSubstr("127.0.0.1:1")));

  // `kbisect nightly` before it runs tonight's benchmark or touches its history.
  const std::string history = tmp_.Join("history.jsonl");
  CommandResult nightly =
      Run(absl::StrCat("nightly --history ", history, " --benchmark b --sha HEAD --repo ", repo,
                       " --no-submit --metric '(' -- ./bench.sh"));
  EXPECT_EQ(nightly.exit_code, 2);
  EXPECT_THAT(nightly.err, HasSubstr("kbisect nightly: invalid metric regex '(': missing ): ("));
  EXPECT_FALSE(std::filesystem::exists(history));

  EXPECT_FALSE(std::filesystem::exists(cache)) << "something started: " << cache << " exists";
}

}  // namespace
}  // namespace kbisect
