// Copyright 2026 The kbisect Authors.
//
// Fault injection with the real daemons: workers killed with SIGKILL at random points of their
// probes (checkout, build, benchmark) across a job, the coordinator killed with SIGKILL mid-job
// and restarted on the same state directory and port, a worker paused (SIGSTOP) past its lease
// and then resumed, and a second worker process started under a running worker's name (the
// first stops, its probe is measured again). In each case the job must find the planted culprit
// with no accepted result lost or counted twice.
//
// "Nothing lost or counted twice" is checked on the final JobStatus (`kbisect status --json`) by
// ExpectNothingLostOrDuplicated (tests/integration/job_checks.h).
#include <signal.h>

#include <chrono>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/integration/job_checks.h"
#include "tests/testing/git_fixture.h"
#include "tests/testing/process.h"

namespace kbisect {
namespace {

using ::kbisect::testing::CommandResult;
using ::kbisect::testing::ExpectNothingLostOrDuplicated;
using ::kbisect::testing::Process;
using ::kbisect::testing::ReadFile;
using ::kbisect::testing::Trim;
using ::kbisect::testing::WaitFor;
using ::testing::HasSubstr;

constexpr char kJobFlags[] = " --runs 3 --build 'sleep 0.1' -- ./bench.sh";

class FaultTest : public ::kbisect::testing::ClusterFixture {
 protected:
  // Submits a job over the demo repository; returns its id.
  std::string Submit(const std::string& repo, const std::string& extra = "") {
    CommandResult submitted =
        Kbisect(absl::StrCat("submit v1.0 HEAD --repo ", repo, " ", extra, kJobFlags));
    EXPECT_EQ(submitted.exit_code, 0) << submitted.err;
    return Trim(submitted.out);
  }

  nlohmann::json Status(const std::string& job_id) { return Json("status --json " + job_id); }

  static bool Finished(const nlohmann::json& job) { return ::kbisect::testing::JobFinished(job); }
};

TEST_F(FaultTest, WorkersKilledAtRandomPointsOfTheirProbes) {
  const std::string repo = tmp_.Join("repo");
  const std::string culprit = MakeRepo(repo, "--commits 1500 --culprit 1037");
  ASSERT_EQ(culprit.size(), 40u);
  std::unique_ptr<Process> coordinator = StartCoordinator("", "2");
  constexpr int kWorkers = 3;
  std::vector<std::unique_ptr<Process>> workers(kWorkers);
  // A replacement keeps the worker's name (so its calibration stays valid) and its cache
  // directory, as a restarted pod does: git lock files its killed predecessor left in the
  // mirror or the worktree must not fail it.
  auto start = [&](int i) {
    workers[i] = StartWorker(absl::StrCat("w", i), i, "0.15", "", absl::StrCat("cache-w", i));
  };
  for (int i = 0; i < kWorkers; ++i) start(i);
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers() == kWorkers; }, std::chrono::seconds(15)))
      << coordinator->log();
  // Kills go on over as many jobs as it takes to reach kKills, so the count does not depend on
  // how fast a job ends on this machine: each job (measured afresh, --no-cache) is checked on its
  // own, and the next one starts where the last one ended.
  constexpr int kKills = 20;
  constexpr int kMaxJobs = 8;
  std::mt19937 random(20261130);
  // Probes take about 0.9 s (checkout, `sleep 0.1` build, 3 bench runs of 0.15 s): kills that
  // come every 30-160 ms land in every phase.
  std::uniform_int_distribution<int> delay_ms(30, 160);
  int kills = 0;
  int jobs = 0;
  std::set<std::string> killed_probes;  // "job/probe_id" of every probe whose worker was killed.
  int retried = 0;
  while (kills < kKills && jobs < kMaxJobs) {
    ++jobs;
    const std::string job_id = Submit(repo, "--no-cache");
    int job_kills = 0;
    while (kills < kKills) {
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(random)));
      const nlohmann::json job = Status(job_id);
      if (Finished(job)) break;
      // A random busy worker whose probe was never killed: each probe loses at most one attempt
      // to the kills (a status read a moment old can show the attempt before a retry, so the
      // attempt number alone could let a probe reach the 3-attempt limit, which would change
      // the answer).
      std::vector<std::pair<int, std::string>> eligible;
      for (int w = 0; w < kWorkers; ++w) {
        for (const auto& probe : job["probes"]) {
          const std::string id = absl::StrCat(job_id, "/", probe.value("probe_id", ""));
          if (probe.value("state", "") == "running" &&
              probe.value("worker", "") == absl::StrCat("w", w) && killed_probes.count(id) == 0) {
            eligible.emplace_back(w, id);
          }
        }
      }
      if (eligible.empty()) continue;
      const auto& [i, probe_id] =
          eligible[std::uniform_int_distribution<size_t>(0, eligible.size() - 1)(random)];
      killed_probes.insert(probe_id);
      workers[i]->Signal(SIGKILL);
      workers[i]->Wait(std::chrono::seconds(5));
      ++kills;
      ++job_kills;
      start(i);
    }
    ASSERT_TRUE(WaitFor([&] { return Finished(Status(job_id)); }, std::chrono::seconds(120)))
        << coordinator->log();
    const nlohmann::json job = Status(job_id);
    EXPECT_EQ(job["status"], "culprit_found")
        << "job " << jobs << ", " << job_kills << " kills: " << job.dump(2);
    EXPECT_EQ(job["culprit"]["sha"], culprit) << "job " << jobs;
    ExpectNothingLostOrDuplicated(job);
    for (const auto& probe : job["probes"]) retried += probe.value("attempt", 0) >= 2 ? 1 : 0;
  }
  EXPECT_EQ(kills, kKills) << "no running probe to kill in " << jobs << " jobs";
  EXPECT_GT(retried, 0) << "killed probes are measured again";
  RecordProperty("kills", kills);
  RecordProperty("jobs", jobs);
  RecordProperty("retried_probes", retried);
}

TEST_F(FaultTest, CoordinatorKilledMidJobAndRestartedLosesNothing) {
  const std::string repo = tmp_.Join("repo");
  const std::string culprit = MakeRepo(repo, "--commits 120 --culprit 33");
  std::unique_ptr<Process> coordinator = StartCoordinator("", "2");
  const std::string listen = address_;
  std::vector<std::unique_ptr<Process>> workers;
  for (int i = 0; i < 3; ++i) workers.push_back(StartWorker(absl::StrCat("w", i), i, "0.1"));
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers() == 3; }, std::chrono::seconds(15)));
  const std::string job_id = Submit(repo, "--request-id nightly-fault");

  // Two crashes: one after the baselines, one later in the bisection.
  for (int crash = 1; crash <= 2; ++crash) {
    ASSERT_TRUE(WaitFor(
        [&] {
          const nlohmann::json job = Status(job_id);
          return job["progress"].value("probes_finished", 0) >= 3 * crash;
        },
        std::chrono::seconds(60)))
        << coordinator->log();
    const nlohmann::json before = Status(job_id);
    ASSERT_FALSE(Finished(before)) << "the job ended before the crash";
    coordinator->Signal(SIGKILL);
    EXPECT_EQ(coordinator->Wait(std::chrono::seconds(5)), 128 + SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    coordinator = StartCoordinator("", "2", listen);
    ASSERT_EQ(address_, listen);
    EXPECT_THAT(coordinator->log(), HasSubstr("recovered 1 job (1 unfinished"));
    // Nothing acknowledged before the crash is lost: every finished probe is still there.
    const nlohmann::json after = Status(job_id);
    std::set<std::string> finished_after;
    for (const auto& probe : after["probes"]) {
      if (probe.value("state", "") == "finished") finished_after.insert(probe["probe_id"]);
    }
    for (const auto& probe : before["probes"]) {
      if (probe.value("state", "") == "finished") {
        EXPECT_EQ(finished_after.count(probe["probe_id"]), 1u) << probe.dump();
      }
    }
    // The nightly request id still names the job.
    CommandResult again = Kbisect(
        absl::StrCat("submit v1.0 HEAD --repo ", repo, " --request-id nightly-fault", kJobFlags));
    EXPECT_EQ(Trim(again.out), job_id) << again.err;
  }

  // The workers reconnect by themselves and finish the job.
  const std::string json = tmp_.Join("result.json");
  CommandResult watched = Kbisect(absl::StrCat("watch -q --json ", json, " ", job_id));
  ASSERT_EQ(watched.exit_code, 0) << watched.out << watched.err << coordinator->log();
  const nlohmann::json job = Status(job_id);
  EXPECT_EQ(job["status"], "culprit_found");
  EXPECT_EQ(job["culprit"]["sha"], culprit);
  EXPECT_EQ(nlohmann::json::parse(ReadFile(json))["culprit"]["sha"], culprit);
  ExpectNothingLostOrDuplicated(job);
  // Watching from the start replays the whole log across both restarts.
  CommandResult replay = Kbisect("watch " + job_id);
  EXPECT_EQ(replay.exit_code, 0) << replay.err;
  EXPECT_THAT(replay.out, HasSubstr("Baseline results:"));
  EXPECT_THAT(replay.out, HasSubstr(culprit));
  for (auto& worker : workers) EXPECT_TRUE(worker->running()) << worker->log();
}

TEST_F(FaultTest, AWorkerPausedPastItsLeaseIsFencedOff) {
  const std::string repo = tmp_.Join("repo");
  const std::string culprit = MakeRepo(repo, "--commits 40 --culprit 13");
  std::unique_ptr<Process> coordinator = StartCoordinator("", "2");
  // Alone at first, the sleeper takes the BAD baseline; each of its bench runs takes a second.
  std::unique_ptr<Process> sleeper = StartWorker("sleeper", 0, "1");
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers() == 1; }, std::chrono::seconds(15)));
  const std::string job_id = Submit(repo);
  ASSERT_TRUE(WaitFor(
      [&] {
        const nlohmann::json worker = Worker("sleeper");
        return worker != nullptr && worker["state"] == "busy";
      },
      std::chrono::seconds(15)));

  // Paused past its 2 s lease (its benchmark keeps running and finishes meanwhile).
  sleeper->Signal(SIGSTOP);
  ASSERT_TRUE(WaitFor(
      [&] {
        const nlohmann::json job = Status(job_id);
        for (const auto& probe : job["probes"]) {
          if (probe.value("message", "").find("lease expired") != std::string::npos) return true;
        }
        return false;
      },
      std::chrono::seconds(15)))
      << Status(job_id).dump(2) << coordinator->log();
  std::unique_ptr<Process> fresh = StartWorker("fresh", 1, "0.05");
  ASSERT_TRUE(WaitFor(
      [&] {
        const nlohmann::json job = Status(job_id);
        for (const auto& probe : job["probes"]) {
          if (probe.value("worker", "") == "fresh" && probe.value("attempt", 0) == 2) return true;
        }
        return false;
      },
      std::chrono::seconds(15)));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  // Resumed: it reports its late result, which is rejected; then it drains and exits.
  sleeper->Signal(SIGCONT);
  sleeper->Signal(SIGTERM);
  EXPECT_EQ(sleeper->Wait(std::chrono::seconds(30)), 0) << sleeper->log();
  EXPECT_THAT(sleeper->log(), HasSubstr("exiting after 0 reported probe(s)"));
  const nlohmann::json gone = Worker("sleeper");
  EXPECT_EQ(gone.value("tasks_completed", 0), 0) << gone.dump();

  ASSERT_TRUE(WaitFor([&] { return Finished(Status(job_id)); }, std::chrono::seconds(60)))
      << coordinator->log();
  const nlohmann::json job = Status(job_id);
  EXPECT_EQ(job["status"], "culprit_found") << job.dump(2);
  EXPECT_EQ(job["culprit"]["sha"], culprit);
  ExpectNothingLostOrDuplicated(job);
  for (const auto& probe : job["probes"]) {
    if (probe.value("state", "") == "finished") {
      EXPECT_EQ(probe["worker"], "fresh");
    }
  }
}

TEST_F(FaultTest, ASecondProcessWithAWorkersNameTakesItOverAndTheFirstStops) {
  const std::string repo = tmp_.Join("repo");
  const std::string culprit = MakeRepo(repo, "--commits 30 --culprit 11");
  std::unique_ptr<Process> coordinator = StartCoordinator("", "2");
  // Alone, the first w0 takes the BAD baseline; each of its bench runs takes a second.
  std::unique_ptr<Process> first = StartWorker("w0", 0, "1", "", "cache-first");
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers() == 1; }, std::chrono::seconds(15)));
  const std::string job_id = Submit(repo);
  ASSERT_TRUE(WaitFor(
      [&] {
        const nlohmann::json worker = Worker("w0");
        return worker != nullptr && worker["state"] == "busy";
      },
      std::chrono::seconds(15)));
  // Another process under the same name (a second pod, a copy-pasted --name).
  std::unique_ptr<Process> second = StartWorker("w0", 1, "0.05", "", "cache-second");
  EXPECT_EQ(first->Wait(std::chrono::seconds(30)), 1) << first->log();
  EXPECT_THAT(first->log(), HasSubstr("another process took over the worker name 'w0'"));
  ASSERT_TRUE(WaitFor([&] { return Finished(Status(job_id)); }, std::chrono::seconds(60)))
      << coordinator->log();
  const nlohmann::json job = Status(job_id);
  EXPECT_EQ(job["status"], "culprit_found") << job.dump(2);
  EXPECT_EQ(job["culprit"]["sha"], culprit);
  ExpectNothingLostOrDuplicated(job);
  EXPECT_TRUE(second->running()) << second->log();
}

}  // namespace
}  // namespace kbisect
