// Copyright 2026 The kbisect Authors.
//
// The compiler cache two hosts share (`--compiler-cache-remote`, issue 52) end to end: a real
// redis-server on a free loopback port, the real `kbisect-coordinator`, and two
// `kbisect-worker`s standing for two hosts (each its own name and --cache-dir, so its own build
// cache and local ccache store), bisecting a small C library (scripts/make-c-repo.sh) whose
// build, `make -j2`, compiles every module through the ccache kbisect puts first on the build's
// PATH. What one host compiled is a remote hit on the other, which `kbisect cache stats
// --cache-dir` of that host shows; a remote that does not answer costs each worker a warning
// and each host counted remote errors, never a build or the culprit. Skipped when ccache or
// redis-server is not installed (scripts/install-deps.sh installs both).
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/integration/job_checks.h"
#include "tests/testing/git_fixture.h"
#include "tests/testing/process.h"

namespace kbisect {
namespace {

using ::kbisect::testing::Bin;
using ::kbisect::testing::CommandResult;
using ::kbisect::testing::Env;
using ::kbisect::testing::JobFinished;
using ::kbisect::testing::Process;
using ::kbisect::testing::ReadFile;
using ::kbisect::testing::RunShell;
using ::kbisect::testing::ShellQuote;
using ::kbisect::testing::Trim;
using ::kbisect::testing::WaitFor;
using ::testing::HasSubstr;
using ::testing::Not;

// The C library's shape: 24 modules, of which commits 1..12 edit mod_1..mod_12 (one each), so
// mod_0 and mod_13..mod_23 are the same in every commit: a fresh build of any commit compiles
// those 12 exactly as a fresh build of any other commit did.
constexpr int kCommits = 12;
constexpr int kModules = 24;
constexpr int kModulesNoCommitEdits = kModules - kCommits;

// What `kbisect cache stats --cache-dir` says of a host's compiler cache.
struct CompilerCacheLines {
  bool found = false;  // it printed a "Compiler cache: N hits, M misses" line
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t remote_hits = 0;    // "R from the remote storage" (0 when the line is absent)
  int64_t remote_errors = 0;  // "E remote errors" (0 when the line is absent)
};

// The number that starts `words[i]`, or -1.
int64_t NumberAt(const std::vector<std::string>& words, size_t i) {
  int64_t value = -1;
  return i < words.size() && absl::SimpleAtoi(words[i], &value) ? value : -1;
}

// Reads the compiler cache's lines of `kbisect cache stats` output: "Compiler cache: 3 hits,
// 24 misses (...)" and, with a remote, "  12 served locally, 5 from the remote storage, 0
// remote errors".
CompilerCacheLines ParseCacheStats(const std::string& out) {
  CompilerCacheLines lines;
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    const std::vector<std::string> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (absl::StartsWith(line, "Compiler cache: ") && NumberAt(words, 2) >= 0) {
      lines.found = true;
      lines.hits = NumberAt(words, 2);
      lines.misses = NumberAt(words, 4);
    } else if (absl::StrContains(line, "from the remote storage")) {
      lines.remote_hits = NumberAt(words, 3);
      lines.remote_errors = NumberAt(words, 8);
    }
  }
  return lines;
}

class SharedCompilerCacheTest : public ::kbisect::testing::ClusterFixture {
 protected:
  void SetUp() override {
    if (RunShell("command -v ccache && command -v redis-server").exit_code != 0) {
      GTEST_SKIP() << "ccache or redis-server is not installed (scripts/install-deps.sh)";
    }
    const CommandResult made = RunShell(absl::StrCat(
        Env("KBISECT_SOURCE_DIR"), "/scripts/make-c-repo.sh ", ShellQuote(repo_), " --commits ",
        kCommits, " --culprit 7 --modules ", kModules, " --variants 1"));
    ASSERT_EQ(made.exit_code, 0) << made.err;
    culprit_ = Trim(made.out);
  }

  // Starts a redis-server on `port` (loopback only, nothing kept on disk) and waits until it
  // accepts connections.
  std::unique_ptr<Process> StartRedis(int port) {
    const std::string log = tmp_.Join("redis.log");
    auto redis = std::make_unique<Process>(
        absl::StrCat("redis-server --port ", port, " --bind 127.0.0.1 --save '' --appendonly no"),
        log);
    EXPECT_TRUE(WaitFor(
        [&] {
          return access(log.c_str(), F_OK) == 0 &&
                 absl::StrContains(redis->log(), "Ready to accept");
        },
        std::chrono::seconds(15)))
        << redis->log();
    return redis;
  }

  // Starts the worker of host `host` (named so, its cache in tmp_/`host`-cache) sharing the
  // compiler cache at `remote`.
  std::unique_ptr<Process> StartHost(const std::string& host, const std::string& remote) {
    return StartWorker(host, 0, "0.01", "--compiler-cache-remote " + remote, host + "-cache");
  }

  // Submits the bisect of the C library: `make -j2` at every probe (through the compiler cache),
  // and a benchmark script outside the repository that first leaves `started_` (its commit is
  // built), then waits for `go_` (the test's signal that every host it wants is serving) and
  // runs the library's benchmark program. Returns the job id.
  std::string SubmitBisect() {
    const std::string bench = tmp_.Join("bench.sh");
    ::kbisect::testing::WriteFile(
        bench, absl::StrCat("#!/bin/sh\ntouch ", ShellQuote(started_), "\nuntil test -e ",
                            ShellQuote(go_), "; do sleep 0.1; done\nexec ./build/bench\n"));
    EXPECT_EQ(RunShell("chmod +x " + ShellQuote(bench)).exit_code, 0);
    // --runs 3 given: the C library's benchmark repeats exactly, and with one run a probe
    // (decision 229) host A alone may finish the job before host B's first probe is measured.
    const CommandResult submitted =
        Kbisect(absl::StrCat("submit v1.0 HEAD --repo ", ShellQuote(repo_),
                             " --build 'make -j2' --no-cache --runs 3 -- ", ShellQuote(bench)));
    EXPECT_EQ(submitted.exit_code, 0) << submitted.err;
    return Trim(submitted.out);
  }

  // Lets the benchmarks run (see SubmitBisect), then waits for job `job_id` to end and returns
  // its final status.
  nlohmann::json Go(const std::string& job_id) {
    RunShell("touch " + ShellQuote(go_));
    EXPECT_TRUE(WaitFor([&] { return JobFinished(Json("status --json " + job_id)); },
                        std::chrono::seconds(240)));
    return Json("status --json " + job_id);
  }

  // What `kbisect cache stats --cache-dir` says of host `host`'s compiler cache.
  CompilerCacheLines HostStats(const std::string& host) {
    const CommandResult stats = RunShell(absl::StrCat(Bin("kbisect"), " cache stats --cache-dir ",
                                                      ShellQuote(tmp_.Join(host + "-cache"))));
    EXPECT_EQ(stats.exit_code, 0) << stats.err;
    const CompilerCacheLines lines = ParseCacheStats(stats.out);
    EXPECT_TRUE(lines.found) << stats.out;
    return lines;
  }

  // The workers that measured a probe of `job`.
  static std::set<std::string> Measured(const nlohmann::json& job) {
    std::set<std::string> workers;
    for (const auto& probe : job["probes"]) {
      if (probe.value("state", "") == "finished") workers.insert(probe.value("worker", ""));
    }
    return workers;
  }

  const std::string repo_ = tmp_.Join("libkb");
  const std::string started_ = tmp_.Join("a-commit-is-built");
  const std::string go_ = tmp_.Join("go");
  std::string culprit_;
};

// Host A builds a commit while it serves alone; then host B joins the same bisect. B's first
// build is a fresh one in its own cache directory, yet every module A compiled as B needs it is
// a remote hit: at least the 12 modules no commit edits.
TEST_F(SharedCompilerCacheTest, TheSecondHostGetsRemoteHitsForWhatTheFirstCompiled) {
  const int port = testing::FreeLoopbackPort();
  std::unique_ptr<Process> redis = StartRedis(port);
  const std::string remote = absl::StrCat("redis://127.0.0.1:", port);
  std::unique_ptr<Process> coordinator = StartCoordinator();
  std::unique_ptr<Process> host_a = StartHost("host-a", remote);
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers() == 1; }, std::chrono::seconds(15)))
      << host_a->log();
  const std::string job_id = SubmitBisect();
  ASSERT_FALSE(job_id.empty());
  // A has built a commit: its benchmark started, and waits.
  ASSERT_TRUE(
      WaitFor([&] { return access(started_.c_str(), F_OK) == 0; }, std::chrono::seconds(120)))
      << host_a->log();
  const CompilerCacheLines a_first = HostStats("host-a");
  EXPECT_GE(a_first.misses, kModules) << "a fresh build compiles every module";
  EXPECT_EQ(a_first.remote_hits, 0) << "nothing was in the remote yet";

  std::unique_ptr<Process> host_b = StartHost("host-b", remote);
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers() == 2; }, std::chrono::seconds(15)))
      << host_b->log();
  const nlohmann::json job = Go(job_id);
  ASSERT_EQ(job.value("state", ""), "done") << job.dump();
  EXPECT_EQ(job["culprit"]["sha"], culprit_);
  ::kbisect::testing::ExpectNothingLostOrDuplicated(job);
  EXPECT_EQ(Measured(job), (std::set<std::string>{"host-a", "host-b"})) << "both hosts measured";

  const CompilerCacheLines a = HostStats("host-a");
  const CompilerCacheLines b = HostStats("host-b");
  std::printf(
      "host-a: %lld hits (%lld remote), %lld misses; host-b: %lld hits (%lld remote), "
      "%lld misses\n",
      static_cast<long long>(a.hits), static_cast<long long>(a.remote_hits),
      static_cast<long long>(a.misses), static_cast<long long>(b.hits),
      static_cast<long long>(b.remote_hits), static_cast<long long>(b.misses));
  EXPECT_GE(b.remote_hits, kModulesNoCommitEdits) << "compiled on host-a, served to host-b";
  EXPECT_EQ(b.remote_errors, 0);
  EXPECT_EQ(a.remote_errors, 0);
  for (const auto* host : {host_a.get(), host_b.get()}) {
    EXPECT_THAT(host->log(), Not(HasSubstr("cannot be reached")));
  }
}

// The remote is a closed port: each worker says so once at start, every build compiles with its
// host's local store (the failed remote reads counted as remote errors), and the bisect ends as
// it would without a remote.
TEST_F(SharedCompilerCacheTest, ARemoteThatIsDownCostsAWarningOnly) {
  const std::string remote = absl::StrCat("redis://127.0.0.1:", testing::FreeLoopbackPort());
  std::unique_ptr<Process> coordinator = StartCoordinator();
  std::unique_ptr<Process> host_a = StartHost("host-a", remote);
  std::unique_ptr<Process> host_b = StartHost("host-b", remote);
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers() == 2; }, std::chrono::seconds(15)))
      << host_a->log() << host_b->log();
  const std::string job_id = SubmitBisect();
  ASSERT_FALSE(job_id.empty());
  const nlohmann::json job = Go(job_id);
  ASSERT_EQ(job.value("state", ""), "done") << job.dump();
  EXPECT_EQ(job["culprit"]["sha"], culprit_);
  ::kbisect::testing::ExpectNothingLostOrDuplicated(job);
  EXPECT_EQ(Measured(job), (std::set<std::string>{"host-a", "host-b"})) << "both hosts measured";

  const std::vector<std::pair<std::string, Process*>> hosts = {{"host-a", host_a.get()},
                                                               {"host-b", host_b.get()}};
  for (const auto& [name, host] : hosts) {
    SCOPED_TRACE(name);
    EXPECT_THAT(host->log(), HasSubstr(absl::StrCat("the compiler cache's remote storage ", remote,
                                                    " cannot be reached")));
    const CompilerCacheLines stats = HostStats(name);
    EXPECT_GE(stats.misses, kModules) << "its builds compiled";
    EXPECT_EQ(stats.remote_hits, 0);
    EXPECT_GE(stats.remote_errors, 1) << "each failed remote read is counted";
  }
}

}  // namespace
}  // namespace kbisect
