// Copyright 2026 The kbisect Authors.
//
// The real kbisect-coordinator on a state volume that fills up or is read-only: its state
// directory is a small tmpfs mounted for the test (it needs root and mount permission, and is
// skipped without them; CI runs as root).
//   * Full: a job runs while the volume is filled to the last byte. The coordinator's next commit
//     fails with ENOSPC; from then on `kbisect submit` is refused with RESOURCE_EXHAUSTED saying
//     to free space, `kbisect status` and `kbisect watch` keep answering, and no acknowledged
//     probe is lost: once space is freed the coordinator accepts jobs again by itself, and a
//     restart shows every probe that was finished when the volume filled.
//   * Read-only: a coordinator does not start on a read-only state directory (it could not
//     take a single change) and says so; remounted read-write, it recovers every job.
#include <signal.h>
#include <sys/mount.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
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
using ::kbisect::testing::JobFinished;
using ::kbisect::testing::Process;
using ::kbisect::testing::RunShell;
using ::kbisect::testing::ShellQuote;
using ::kbisect::testing::Trim;
using ::kbisect::testing::WaitFor;
using ::testing::HasSubstr;

class StateVolumeTest : public ::kbisect::testing::ClusterFixture {
 protected:
  void SetUp() override {
    state_ = tmp_.Join("state");
    RunShell("mkdir -p " + ShellQuote(state_));
    if (mount("tmpfs", state_.c_str(), "tmpfs", 0, "size=16m") != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs for the state directory (needs root): "
                   << std::strerror(errno);
    }
    mounted_ = true;
  }

  void TearDown() override {
    workers_.clear();
    coordinator_.reset();
    if (mounted_) umount2(state_.c_str(), MNT_DETACH);
  }

  std::set<std::string> FinishedProbes(const nlohmann::json& job) {
    std::set<std::string> finished;
    for (const auto& probe : job["probes"]) {
      if (probe.value("state", "") == "finished") finished.insert(probe["probe_id"]);
    }
    return finished;
  }

  std::string state_;
  bool mounted_ = false;
  std::unique_ptr<Process> coordinator_;
  std::vector<std::unique_ptr<Process>> workers_;
};

TEST_F(StateVolumeTest, AFullVolumeRefusesNewJobsServesReadsAndLosesNothing) {
  const std::string repo = tmp_.Join("repo");
  const std::string culprit = MakeRepo(repo, "--commits 40 --culprit 27 --files 2");
  coordinator_ = StartCoordinator();
  for (int i = 0; i < 2; ++i) workers_.push_back(StartWorker(absl::StrCat("w", i), i, "0.2"));
  CommandResult submitted =
      Kbisect(absl::StrCat("submit v1.0 HEAD --repo ", repo, " --runs 3 --no-cache -- ./bench.sh"));
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const std::string job_id = Trim(submitted.out);
  ASSERT_TRUE(WaitFor(
      [&] { return Json("status --json " + job_id)["progress"].value("probes_finished", 0) >= 2; },
      std::chrono::seconds(60)))
      << coordinator_->log();

  // Fill the volume; the coordinator's next commit fails.
  const std::string filler = state_ + "/filler";
  RunShell("dd if=/dev/zero of=" + ShellQuote(filler) + " bs=64k 2>/dev/null");
  ASSERT_TRUE(WaitFor(
      [&] { return coordinator_->log().find("cannot persist the job state") != std::string::npos; },
      std::chrono::seconds(30)))
      << coordinator_->log();
  const nlohmann::json acknowledged = Json("status --json " + job_id);
  EXPECT_FALSE(JobFinished(acknowledged));

  CommandResult refused =
      Kbisect(absl::StrCat("submit v1.0 HEAD --repo ", repo, " --runs 3 --no-cache -- ./bench.sh"));
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.err, HasSubstr("database or disk is full")) << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("Free space on the volume of --state-dir")) << refused.err;
  // Reads go on: status, the job list, the event log.
  EXPECT_EQ(Json("status --json " + job_id)["job_id"], job_id);
  CommandResult listed = Kbisect("status");
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_THAT(listed.out, HasSubstr(job_id));
  CommandResult cancel = Kbisect("cancel " + job_id);
  EXPECT_NE(cancel.exit_code, 0);
  EXPECT_THAT(cancel.err, HasSubstr("database or disk is full"));

  // Space again: the coordinator takes writes by itself (within 5 s) and the job ends.
  RunShell("rm -f " + ShellQuote(filler));
  ASSERT_TRUE(
      WaitFor([&] { return coordinator_->log().find("can be written again") != std::string::npos; },
              std::chrono::seconds(30)))
      << coordinator_->log();
  ASSERT_TRUE(WaitFor([&] { return JobFinished(Json("status --json " + job_id)); },
                      std::chrono::seconds(90)))
      << coordinator_->log();
  coordinator_->Signal(SIGKILL);
  coordinator_->Wait(std::chrono::seconds(5));
  coordinator_ = StartCoordinator("", "5", address_);
  const nlohmann::json job = Json("status --json " + job_id);
  EXPECT_EQ(job["culprit"]["sha"], culprit) << job.dump(2);
  ::kbisect::testing::ExpectNothingLostOrDuplicated(job, 3);
  const std::set<std::string> finished = FinishedProbes(job);
  for (const std::string& probe : FinishedProbes(acknowledged)) {
    EXPECT_EQ(finished.count(probe), 1u) << "acknowledged probe " << probe << " was lost";
  }
}

TEST_F(StateVolumeTest, AReadOnlyStateDirectoryIsRefusedAtStartAndNothingIsLost) {
  const std::string repo = tmp_.Join("repo");
  const std::string culprit = MakeRepo(repo, "--commits 12 --culprit 7 --files 2");
  coordinator_ = StartCoordinator();
  workers_.push_back(StartWorker("w0", 0, "0.01"));
  CommandResult submitted =
      Kbisect(absl::StrCat("submit v1.0 HEAD --repo ", repo, " --runs 1 -- ./bench.sh"));
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const std::string job_id = Trim(submitted.out);
  ASSERT_TRUE(WaitFor([&] { return JobFinished(Json("status --json " + job_id)); },
                      std::chrono::seconds(60)));
  const std::string listen = address_;
  coordinator_->Signal(SIGKILL);
  coordinator_->Wait(std::chrono::seconds(5));
  ASSERT_EQ(mount(nullptr, state_.c_str(), nullptr, MS_REMOUNT | MS_RDONLY, nullptr), 0)
      << std::strerror(errno);
  const std::string log = tmp_.Join("read-only.log");
  CommandResult refused =
      RunShell(absl::StrCat(::kbisect::testing::Bin("kbisect-coordinator"), " --listen ", listen,
                            " --state-dir ", ShellQuote(state_)));
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.err, HasSubstr("check that the state directory is writable")) << refused.err;
  ASSERT_EQ(mount(nullptr, state_.c_str(), nullptr, MS_REMOUNT, nullptr), 0)
      << std::strerror(errno);
  coordinator_ = StartCoordinator("", "5", listen);
  EXPECT_EQ(Json("status --json " + job_id)["culprit"]["sha"], culprit);
}

}  // namespace
}  // namespace kbisect
