// Copyright 2026 The kbisect Authors.
//
// The build store two hosts share (`--build-store DIR`, issue 52) end to end: the real
// `kbisect-coordinator` and two `kbisect-worker`s standing for two hosts of one hardware class
// (each its own name and --cache-dir, so its own build cache at its own path) with one store
// directory, bisecting a small C library (scripts/make-c-repo.sh). Host A bisects it alone and
// publishes its builds; then A leaves, host B joins and the same bisect runs again: B fetches
// the builds A made instead of building them (TaskTimings.build_fetched on the job's probe rows,
// and B's counters in `kbisect cache stats --cache-dir`), and finds the same culprit. A store
// that is not mounted costs a warning, never a build or the culprit.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
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
using ::kbisect::testing::RunShell;
using ::kbisect::testing::ShellQuote;
using ::kbisect::testing::Trim;
using ::kbisect::testing::WaitFor;
using ::testing::HasSubstr;
using ::testing::Not;

class BuildStoreTest : public ::kbisect::testing::ClusterFixture {
 protected:
  void SetUp() override {
    const CommandResult made = RunShell(
        absl::StrCat(Env("KBISECT_SOURCE_DIR"), "/scripts/make-c-repo.sh ", ShellQuote(repo_),
                     " --commits 12 --culprit 7 --modules 12 --variants 1"));
    ASSERT_EQ(made.exit_code, 0) << made.err;
    culprit_ = Trim(made.out);
    ASSERT_EQ(RunShell("mkdir -p " + ShellQuote(store_)).exit_code, 0);
  }

  // Starts the worker of host `host` (named so, its cache in tmp_/`host`-cache) with the build
  // store at `store`.
  std::unique_ptr<Process> StartHost(const std::string& host, const std::string& store) {
    return StartWorker(host, 0, "0.01", "--build-store " + ShellQuote(store), host + "-cache");
  }

  // Bisects the C library and returns the job's final status. Each build is `make -j2` and a
  // second more (a build long enough for a fetch to pay: build_store.h's floor), without the
  // result cache, so that a second bisect measures again.
  nlohmann::json Bisect() {
    const CommandResult submitted =
        Kbisect(absl::StrCat("submit v1.0 HEAD --repo ", ShellQuote(repo_),
                             " --build 'make -j2 && sleep 1' --no-cache -- ./build/bench"));
    EXPECT_EQ(submitted.exit_code, 0) << submitted.err;
    const std::string job_id = Trim(submitted.out);
    EXPECT_TRUE(WaitFor([&] { return JobFinished(Json("status --json " + job_id)); },
                        std::chrono::seconds(240)));
    return Json("status --json " + job_id);
  }

  // The probe rows of `job` that `worker` measured, and how many of them fetched their builds.
  static std::pair<int, int> ProbesAndFetches(const nlohmann::json& job,
                                              const std::string& worker) {
    int probes = 0;
    int fetched = 0;
    for (const auto& probe : job["probes"]) {
      if (probe.value("worker", "") != worker || probe.value("state", "") != "finished") continue;
      ++probes;
      if (probe["timings"].is_object() && probe["timings"].value("build_fetched", false)) {
        ++fetched;
      }
    }
    return {probes, fetched};
  }

  // What `kbisect cache stats --cache-dir` prints for host `host`.
  std::string HostStats(const std::string& host) {
    const CommandResult stats = RunShell(absl::StrCat(Bin("kbisect"), " cache stats --cache-dir ",
                                                      ShellQuote(tmp_.Join(host + "-cache"))));
    EXPECT_EQ(stats.exit_code, 0) << stats.err;
    return stats.out;
  }

  const std::string repo_ = tmp_.Join("libkb");
  const std::string store_ = tmp_.Join("shared/builds");
  std::string culprit_;
};

TEST_F(BuildStoreTest, TheSecondHostFetchesTheBuildsTheFirstPublished) {
  std::unique_ptr<Process> coordinator = StartCoordinator();
  std::unique_ptr<Process> host_a = StartHost("host-a", store_);
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers() == 1; }, std::chrono::seconds(15)))
      << host_a->log();
  const nlohmann::json first = Bisect();
  ASSERT_EQ(first.value("state", ""), "done") << first.dump();
  EXPECT_EQ(first["culprit"]["sha"], culprit_);
  EXPECT_EQ(ProbesAndFetches(first, "host-a").second, 0) << "nothing was in the store yet";
  const std::string a_stats = HostStats("host-a");
  EXPECT_THAT(a_stats, HasSubstr("Build store: "));
  EXPECT_THAT(a_stats, Not(HasSubstr("0 builds published")));
  host_a->Signal(SIGTERM);
  ASSERT_EQ(host_a->Wait(std::chrono::seconds(30)), 0) << host_a->log();
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers() == 0; }, std::chrono::seconds(30)));

  std::unique_ptr<Process> host_b = StartHost("host-b", store_);
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers() == 1; }, std::chrono::seconds(15)))
      << host_b->log();
  const nlohmann::json second = Bisect();
  ASSERT_EQ(second.value("state", ""), "done") << second.dump();
  EXPECT_EQ(second["culprit"]["sha"], culprit_);
  ::kbisect::testing::ExpectNothingLostOrDuplicated(second);
  const auto [probes, fetched] = ProbesAndFetches(second, "host-b");
  std::printf("host-b: %d of %d probes fetched their builds\n", fetched, probes);
  EXPECT_GE(fetched, 2) << "at least GOOD's and BAD's builds came from host-a";
  const std::string stats = HostStats("host-b");
  std::printf("%s", stats.c_str());
  EXPECT_THAT(stats, HasSubstr("Build store: "));
  EXPECT_THAT(stats, Not(HasSubstr("Build store: 0 builds fetched")));
  for (const auto* host : {host_a.get(), host_b.get()}) {
    EXPECT_THAT(host->log(), Not(HasSubstr("the build store")));
  }
}

TEST_F(BuildStoreTest, AStoreThatIsNotMountedCostsAWarningOnly) {
  const std::string missing = tmp_.Join("not-mounted");
  std::unique_ptr<Process> coordinator = StartCoordinator();
  std::unique_ptr<Process> host_a = StartHost("host-a", missing);
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers() == 1; }, std::chrono::seconds(15)))
      << host_a->log();
  const nlohmann::json job = Bisect();
  ASSERT_EQ(job.value("state", ""), "done") << job.dump();
  EXPECT_EQ(job["culprit"]["sha"], culprit_);
  ::kbisect::testing::ExpectNothingLostOrDuplicated(job);
  EXPECT_THAT(host_a->log(), HasSubstr(absl::StrCat("the build store ", missing,
                                                    " does not exist: builds go on without it")));
  EXPECT_THAT(HostStats("host-a"), Not(HasSubstr("Build store:")));
}

}  // namespace
}  // namespace kbisect
