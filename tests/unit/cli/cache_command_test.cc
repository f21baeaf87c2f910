// Copyright 2026 The kbisect Authors.
//
// `kbisect cache stats|prune` on real cache files in temp dirs: through CacheCommand for the
// output and exit codes, and through the built `kbisect` binary for the dispatch, the usage and
// the default cache directory.
#include "cli/cache_command.h"

#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/clock/age.h"
#include "common/rpc/proto_time.h"
#include "coordinator/result_cache.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace {

using ::kbisect::testing::CommandResult;
using ::kbisect::testing::RunShell;
using ::kbisect::testing::ShellQuote;
using ::kbisect::testing::TempDir;
using ::kbisect::testing::WriteFile;
using ::testing::HasSubstr;
using ::testing::Not;

using Output = CommandResult;

// Runs CacheCommand on `args` (after "cache") and captures what it prints.
Output Cache(const std::vector<std::string>& args) {
  std::vector<std::string> words = {"cache"};
  words.insert(words.end(), args.begin(), args.end());
  return ::kbisect::testing::RunCommandInProcess(CacheCommand, std::move(words));
}

// Stores `count` results of spec `spec` measured `age` ago, on worker `worker`, trees t<i>.
void Fill(const std::string& cache_dir, const std::string& spec, const std::string& worker,
          int count, absl::Duration age) {
  auto cache = OpenSqliteResultCache(DefaultResultCachePath(cache_dir));
  ASSERT_TRUE(cache.ok()) << cache.status();
  for (int i = 0; i < count; ++i) {
    v1::CachedResult result;
    result.set_tree_sha(absl::StrCat("t", i));
    result.set_commit_sha(absl::StrCat("c", i));
    result.set_worker(worker);
    result.set_hardware_class("hc");
    result.add_samples(1.0);
    *result.mutable_measure_time() = ToProto(absl::Now() - age);
    ASSERT_TRUE((*cache)->Put(spec, result).ok());
  }
}

TEST(ParseAgeTest, AcceptsDaysAndDurationUnits) {
  EXPECT_EQ(*ParseAge("30d"), absl::Hours(24 * 30));
  EXPECT_EQ(*ParseAge("12h"), absl::Hours(12));
  EXPECT_EQ(*ParseAge("1d12h"), absl::Hours(36));
  EXPECT_EQ(*ParseAge("1.5d"), absl::Hours(36));
  EXPECT_EQ(*ParseAge("90m"), absl::Minutes(90));
  EXPECT_EQ(*ParseAge("2h30m"), absl::Minutes(150));
  EXPECT_EQ(*ParseAge("0s"), absl::ZeroDuration());
  EXPECT_EQ(*ParseAge("0d"), absl::ZeroDuration());
  for (const char* bad :
       {"", "d", "30 days", "-1d", "-2h", "1dd", "1d-2h", "xd", "inf", "infd", "1w", "nand"}) {
    auto age = ParseAge(bad);
    EXPECT_FALSE(age.ok()) << bad;
    if (!age.ok()) {
      EXPECT_EQ(age.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(std::string(age.status().message()), HasSubstr("30d"));
    }
  }
  // A bare number has no unit: absl::ParseDuration takes only "0" without one.
  EXPECT_FALSE(ParseAge("30").ok());
  EXPECT_EQ(*ParseAge("0"), absl::ZeroDuration());
}

TEST(CacheCommandTest, StatsPrintsWhatTheCacheHolds) {
  TempDir tmp;
  const std::string dir = tmp.Join("cache");
  Fill(dir, "spec-a", "host/slot0", 3, absl::Hours(50));
  Fill(dir, "spec-b", "host/slot1", 2, absl::Minutes(5));
  const Output stats = Cache({"stats", "--cache-dir", dir});
  EXPECT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_THAT(stats.out, HasSubstr(absl::StrCat("Result cache ", dir, "/results.sqlite\n")));
  EXPECT_THAT(stats.out, HasSubstr("Results:  5\n"));
  EXPECT_THAT(stats.out, HasSubstr("Specs:    2\n"));
  EXPECT_THAT(stats.out, HasSubstr("Workers:  2\n"));
  EXPECT_THAT(stats.out, HasSubstr("Trees:    3\n"));
  EXPECT_THAT(stats.out, HasSubstr("(2d ago)\nNewest:   "));
  EXPECT_THAT(stats.out, HasSubstr("(5m ago)\nSize:     "));
  EXPECT_THAT(stats.out, HasSubstr(" KiB ("));
}

TEST(CacheCommandTest, PruneRemovesResultsOlderThanTheAge) {
  TempDir tmp;
  const std::string dir = tmp.Join("cache");
  Fill(dir, "old", "w0", 4, absl::Hours(24 * 40));
  Fill(dir, "recent", "w0", 3, absl::Hours(24 * 10));
  const Output pruned = Cache({"prune", "--cache-dir", dir, "--older-than", "30d"});
  EXPECT_EQ(pruned.exit_code, 0) << pruned.err;
  EXPECT_THAT(pruned.out, HasSubstr("Removed 4 results measured before "));
  EXPECT_THAT(pruned.out, HasSubstr("(older than 30d)"));
  EXPECT_THAT(pruned.out, HasSubstr("; 3 left, "));
  auto cache = OpenSqliteResultCache(DefaultResultCachePath(dir));
  ASSERT_TRUE(cache.ok()) << cache.status();
  auto stats = (*cache)->GetStats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->results, 3);
  EXPECT_EQ(stats->specs, 1);
  const Output again = Cache({"prune", "--older-than", "1d12h", "--cache-dir", dir});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("Removed 3 results"));
  EXPECT_THAT(again.out, HasSubstr("; 0 left, "));
}

TEST(CacheCommandTest, AMissingCacheIsEmptyAndNotCreated) {
  TempDir tmp;
  const std::string dir = tmp.Join("nothing-here");
  const Output stats = Cache({"stats", "--cache-dir", dir});
  EXPECT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_THAT(stats.out, HasSubstr("No result cache at " + dir + "/results.sqlite"));
  EXPECT_THAT(stats.out, HasSubstr("Builds:   0 builds kept in " + dir + "/builds\n"));
  EXPECT_THAT(stats.out, HasSubstr("Compiler cache: none (no compiler cache in " + dir + ")"));
  const Output pruned = Cache({"prune", "--cache-dir", dir, "--older-than", "1h"});
  EXPECT_EQ(pruned.exit_code, 0) << pruned.err;
  EXPECT_THAT(pruned.out, HasSubstr("nothing to remove"));
  EXPECT_NE(RunShell("test -e " + ShellQuote(dir)).exit_code, 0) << "created " << dir;
}

TEST(CacheCommandTest, AnUnreadableCacheExitsOneSayingWhatToDo) {
  TempDir tmp;
  const std::string dir = tmp.Join("cache");
  WriteFile(DefaultResultCachePath(dir), std::string(4096, 'z'));
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"stats", "--cache-dir", dir},
        std::vector<std::string>{"prune", "--cache-dir", dir, "--older-than", "1d"}}) {
    const Output output = Cache(args);
    EXPECT_EQ(output.exit_code, 1) << args[0];
    EXPECT_THAT(output.err, HasSubstr(DefaultResultCachePath(dir))) << args[0];
    EXPECT_THAT(output.err, HasSubstr("delete it")) << args[0];
  }
}

TEST(CacheCommandTest, UsageErrorsExitTwo) {
  TempDir tmp;
  const std::string dir = tmp.Join("cache");
  Fill(dir, "spec", "w0", 1, absl::Hours(24 * 400));
  EXPECT_EQ(Cache({}).exit_code, 2);
  EXPECT_EQ(Cache({"compact", "--cache-dir", dir}).exit_code, 2);
  EXPECT_EQ(Cache({"prune", "--cache-dir", dir}).exit_code, 2) << "--older-than is required";
  const Output bad_age = Cache({"prune", "--cache-dir", dir, "--older-than", "30 days"});
  EXPECT_EQ(bad_age.exit_code, 2);
  EXPECT_THAT(bad_age.err, HasSubstr("--older-than: cannot read the age '30 days'"));
  EXPECT_EQ(Cache({"stats", "--cache-dir", dir, "--older-than", "1d"}).exit_code, 2);
  // Nothing was removed by the refused commands.
  const Output stats = Cache({"stats", "--cache-dir", dir});
  EXPECT_THAT(stats.out, HasSubstr("Results:  1\n"));
  EXPECT_EQ(Cache({"--help"}).exit_code, 0);
}

// The real binary: `kbisect cache` is dispatched and listed, and uses KBISECT_CACHE_DIR (the
// default of `kbisect run`) when --cache-dir is not given.
TEST(CacheCommandBinaryTest, DispatchesAndUsesTheDefaultCacheDir) {
  const char* bin_dir = std::getenv("KBISECT_BIN_DIR");
  ASSERT_NE(bin_dir, nullptr) << "run through ctest";
  const std::string kbisect = absl::StrCat(bin_dir, "/kbisect");
  TempDir tmp;
  const std::string dir = tmp.Join("cache");
  Fill(dir, "spec", "w0", 2, absl::Hours(24 * 3));
  const std::string env = absl::StrCat("KBISECT_CACHE_DIR=", ShellQuote(dir), " ");
  const CommandResult help = RunShell(kbisect + " --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("kbisect cache stats"));
  EXPECT_THAT(help.out, HasSubstr("kbisect cache prune --older-than AGE"));
  const CommandResult stats = RunShell(env + kbisect + " cache stats");
  EXPECT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_THAT(stats.out, HasSubstr("Results:  2\n"));
  const CommandResult keep = RunShell(env + kbisect + " cache prune --older-than 4d");
  EXPECT_EQ(keep.exit_code, 0) << keep.err;
  EXPECT_THAT(keep.out, HasSubstr("Removed 0 results"));
  const CommandResult remove = RunShell(env + kbisect + " cache prune --older-than 2d");
  EXPECT_EQ(remove.exit_code, 0) << remove.err;
  EXPECT_THAT(remove.out, HasSubstr("Removed 2 results"));
  const CommandResult usage = RunShell(env + kbisect + " cache prune");
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_THAT(usage.out + usage.err, Not(HasSubstr("Removed")));
}

}  // namespace
}  // namespace kbisect
