// Copyright 2026 The kbisect Authors.
//
// BuildAhead on a real repository (GitFixture), a real build cache and real build processes:
// hinted commits end up built in the cache, a hint that goes away kills its build, a slot's
// running task keeps its commit's build alive, and the concurrency bound holds.
#include "worker/build_ahead.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/git_fixture.h"
#include "tests/testing/process.h"

namespace kbisect {
namespace {

using ::kbisect::testing::GitFixture;
using ::kbisect::testing::ReadFile;
using ::kbisect::testing::ShellQuote;
using ::kbisect::testing::TempDir;
using ::kbisect::testing::Trim;
using ::kbisect::testing::WaitFor;

bool Alive(pid_t pid) { return ::kbisect::testing::ProcessRunning(pid); }

class BuildAheadTest : public ::testing::Test {
 protected:
  BuildAheadTest() : runner_(NewSubprocessRunner()), repo_(tmp_.Join("repo")) {
    repo_.Init();
    for (int i = 0; i < 5; ++i) {
      shas_.push_back(repo_.Commit(absl::StrCat("c", i), {{"file.txt", absl::StrCat(i, "\n")}}));
    }
    cache_ = std::make_unique<BuildCache>(tmp_.Join("cache"), 16, runner_.get());
  }

  v1::Task Hint(int i, const std::string& build) const {
    v1::Task task;
    task.set_kind(v1::PROBE_KIND_BUILD);
    task.set_repository(repo_.path());
    task.set_commit_sha(shas_[i]);
    task.set_commit_index(i);
    task.set_build_command(build);
    return task;
  }

  // A probe's view: whether the cache serves commit `i` built with `build` without building.
  bool CachedFor(int i, const std::string& build) {
    BuildCache probe_cache(tmp_.Join("cache"), 16, runner_.get());
    BuildCache::Request request;
    request.repository = repo_.path();
    request.sha = shas_[i];
    request.build.shell_command = build;
    bool built_now = false;
    BuildCache::Acquired acquired =
        probe_cache.Acquire(request, nullptr, [&] { built_now = true; });
    return acquired.step.ok() && acquired.reused && !built_now;
  }

  TempDir tmp_;
  std::unique_ptr<CommandRunner> runner_;
  GitFixture repo_;
  std::vector<std::string> shas_;
  std::unique_ptr<BuildCache> cache_;
};

TEST_F(BuildAheadTest, HintedCommitsAreBuiltIntoTheCacheOnce) {
  const std::string log = tmp_.Join("builds.log");
  const std::string build = absl::StrCat("echo $KBISECT_COMMIT >> ", ShellQuote(log));
  BuildAhead ahead(cache_.get(), 2);
  EXPECT_EQ(ahead.max_builds(), 2);
  ahead.Update("slot0", {Hint(1, build), Hint(3, build)}, {});
  ahead.Update("slot1", {Hint(3, build)}, {});  // The same build hinted twice: built once.
  ASSERT_TRUE(ahead.WaitIdle(absl::Seconds(30)));
  EXPECT_EQ(ahead.counts().built, 2);
  // Hinted again by a later response: not built again.
  ahead.Update("slot0", {Hint(1, build), Hint(3, build)}, {});
  ASSERT_TRUE(ahead.WaitIdle(absl::Seconds(30)));
  EXPECT_EQ(ahead.counts().started, 2);
  const std::vector<std::string> built = absl::StrSplit(ReadFile(log), '\n', absl::SkipEmpty());
  EXPECT_THAT(built, ::testing::UnorderedElementsAre(shas_[1], shas_[3]));
  EXPECT_TRUE(CachedFor(1, build));
  EXPECT_TRUE(CachedFor(3, build));
  EXPECT_FALSE(CachedFor(2, build));
}

TEST_F(BuildAheadTest, AHintThatGoesAwayKillsItsBuildAndItsProcesses) {
  const std::string pid_file = tmp_.Join("child.pid");
  const std::string build =
      absl::StrCat("sh -c 'sleep 30 & echo $! > ", pid_file, "; wait'");
  BuildAhead ahead(cache_.get(), 1);
  ahead.Update("slot0", {Hint(2, build)}, {});
  // The file is written once `sleep` runs (an empty one is being written).
  ASSERT_TRUE(WaitFor(
      [&] { return ::access(pid_file.c_str(), F_OK) == 0 && !Trim(ReadFile(pid_file)).empty(); },
      std::chrono::seconds(20)));
  int pid = 0;
  ASSERT_TRUE(absl::SimpleAtoi(Trim(ReadFile(pid_file)), &pid));
  EXPECT_TRUE(Alive(pid));
  EXPECT_EQ(ahead.counts().running, 1);

  ahead.Update("slot0", {}, {});  // The next response no longer hints it.
  ASSERT_TRUE(ahead.WaitIdle(absl::Seconds(10)));
  EXPECT_EQ(ahead.counts().cancelled, 1);
  EXPECT_EQ(ahead.counts().built, 0);
  EXPECT_TRUE(WaitFor([&] { return !Alive(pid); }, std::chrono::seconds(5)))
      << "the build's child " << pid << " survived its cancellation";
  // A cancelled build is never served: its entry has no `built` marker.
  EXPECT_EQ(
      Trim(::kbisect::testing::RunShell(absl::StrCat("ls ", tmp_.Join("cache/builds"),
                                                     "/*/built 2>/dev/null | wc -l"))
               .out),
      "0");
}

TEST_F(BuildAheadTest, ABuildASlotsTaskWaitsForIsNotCancelled) {
  const std::string started = tmp_.Join("started");
  const std::string build = absl::StrCat("touch ", ShellQuote(started), "; sleep 1");
  BuildAhead ahead(cache_.get(), 1);
  ahead.Update("slot0", {Hint(2, build)}, {});
  ASSERT_TRUE(WaitFor([&] { return ::access(started.c_str(), F_OK) == 0; },
                      std::chrono::seconds(20)));
  // The commit was handed out to slot1: no longer hinted (it is in flight), but its task uses it.
  ahead.Update("slot1", {}, {shas_[2]});
  ahead.Update("slot0", {}, {});
  ASSERT_TRUE(ahead.WaitIdle(absl::Seconds(20)));
  EXPECT_EQ(ahead.counts().cancelled, 0);
  EXPECT_EQ(ahead.counts().built, 1);
  EXPECT_TRUE(CachedFor(2, build));
}

TEST_F(BuildAheadTest, NoMoreThanMaxBuildsRunAtOnce) {
  const std::string dir = tmp_.Join("running");
  const std::string peaks = tmp_.Join("peaks");
  // Each build marks itself running, records how many are, and stays a moment.
  const std::string build = absl::StrCat(
      "mkdir -p ", dir, " && touch ", dir, "/$KBISECT_COMMIT && ls ", dir, " | wc -l >> ", peaks,
      " && sleep 0.4 && rm ", dir, "/$KBISECT_COMMIT");
  BuildAhead ahead(cache_.get(), 2);
  ahead.Update("slot0", {Hint(0, build), Hint(1, build), Hint(2, build), Hint(3, build),
                         Hint(4, build)},
               {});
  ASSERT_TRUE(ahead.WaitIdle(absl::Seconds(60)));
  EXPECT_EQ(ahead.counts().built, 5);
  EXPECT_EQ(ahead.counts().peak_running, 2);
  int most = 0;
  for (absl::string_view line : absl::StrSplit(ReadFile(peaks), '\n', absl::SkipEmpty())) {
    int count = 0;
    ASSERT_TRUE(absl::SimpleAtoi(Trim(std::string(line)), &count));
    most = std::max(most, count);
  }
  EXPECT_EQ(most, 2);
}

TEST_F(BuildAheadTest, ZeroBuildsNothingAndTheDefaultLeavesHalfTheCores) {
  const std::string log = tmp_.Join("builds.log");
  BuildAhead ahead(cache_.get(), 0);
  ahead.Update("slot0", {Hint(1, absl::StrCat("echo x >> ", log))}, {});
  EXPECT_TRUE(ahead.WaitIdle(absl::Seconds(1)));
  EXPECT_EQ(ahead.counts().started, 0);
  EXPECT_EQ(DefaultBuildAhead(2), 0);
  EXPECT_EQ(DefaultBuildAhead(8), 3);
  EXPECT_EQ(DefaultBuildAhead(64), 31);
  EXPECT_EQ(DefaultBuildAhead(0), 0);
}

}  // namespace
}  // namespace kbisect
