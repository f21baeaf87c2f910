// Copyright 2026 The kbisect Authors.
//
// The worker pool on a real Slurm: the fixture starts munged, slurmctld and slurmd (Debian's
// slurm-wlm and munge) as a one-node cluster with its state, spool, logs and config in a temp
// dir, the node advertising four fake GPUs as GRES (gres.conf over /dev/null symlinks, so Slurm
// sets CUDA_VISIBLE_DEVICES). The test submits deploy/slurm/kbisect-workers.sbatch as it ships,
// runs a bisect through the pool with `kbisect submit --wait`, checks the culprit, that each
// worker was bound to its own device (identity and the benchmark's own environment), then
// drains the pool with `scancel --signal=TERM` and checks that no worker process is left. The
// daemons are stopped by PID. Where slurmd cannot run here the test skips and says why.
//
// The per-probe mode (`kbisect-worker --slurm-per-probe`) runs on the same cluster: a launcher
// whose probes each run as an `sbatch --wait --gres=gpu:1` job bisects to the planted culprit
// through a probe job scancelled under it, and SIGTERM leaves nothing of it in Slurm's queue.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/git_fixture.h"
#include "tests/testing/process.h"

namespace kbisect {
namespace {

using ::kbisect::testing::Bin;
using ::kbisect::testing::CommandResult;
using ::kbisect::testing::Env;
using ::kbisect::testing::Process;
using ::kbisect::testing::ProcessRunning;
using ::kbisect::testing::ReadFile;
using ::kbisect::testing::RunShell;
using ::kbisect::testing::ShellQuote;
using ::kbisect::testing::Trim;
using ::kbisect::testing::WaitFor;
using ::kbisect::testing::WriteFile;
using ::testing::HasSubstr;

constexpr int kGpus = 4;

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

// The pid in `file`, or 0.
pid_t PidIn(const std::string& file) {
  if (!Exists(file)) return 0;
  int pid = 0;
  return absl::SimpleAtoi(Trim(ReadFile(file)), &pid) ? pid : 0;
}

// The last lines of the log `file`, for messages.
std::string Tail(const std::string& file) {
  return RunShell(absl::StrCat("tail -n 15 ", ShellQuote(file), " 2>&1")).out;
}

class SlurmTest : public ::kbisect::testing::ClusterFixture {
 protected:
  void SetUp() override {
    for (const char* tool : {"/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd"}) {
      if (!Exists(tool)) {
        GTEST_SKIP() << tool << " is missing: install slurm-wlm and munge "
                     << "(scripts/install-deps.sh)";
      }
    }
    std::string reason = StartSlurm();
    if (!reason.empty()) GTEST_SKIP() << "slurmd cannot run here: " << reason;
  }

  void TearDown() override {
    if (!conf_.empty()) Slurm("timeout 10 scancel --full --signal=KILL --user=$(id -un)");
    // slurmd first (it may otherwise retry a dead controller and ignore SIGTERM), then the
    // controller, then munged; each by the pid its daemon wrote.
    for (const std::string& file :
         {dir_ + "/slurmd.pid", dir_ + "/slurmctld.pid", dir_ + "/munge/munged.pid"}) {
      const pid_t pid = PidIn(file);
      if (pid <= 0) continue;
      kill(pid, SIGTERM);
      if (!WaitFor([&] { return !ProcessRunning(pid); }, std::chrono::seconds(5))) {
        kill(pid, SIGKILL);
        WaitFor([&] { return !ProcessRunning(pid); }, std::chrono::seconds(2));
      }
    }
    if (!node_.empty()) {
      // proctrack/cgroup's empty per-node hierarchy (cgroup v1).
      RunShell(absl::StrCat("find /sys/fs/cgroup/*/slurm_", node_,
                            " -depth -type d -exec rmdir {} + 2>/dev/null"));
    }
  }

  // Runs `command` with SLURM_CONF pointing at the test's cluster.
  CommandResult Slurm(const std::string& command) {
    return RunShell(absl::StrCat("SLURM_CONF=", ShellQuote(conf_), " ", command));
  }

  // Writes the configuration and starts munged, slurmctld and slurmd; waits for the node to be
  // idle. Returns why it could not, or "".
  std::string StartSlurm() {
    dir_ = tmp_.Join("slurm");
    node_ = absl::StrCat("kbn", getpid());
    const std::string host = Trim(RunShell("hostname -s").out);
    const std::string munge = dir_ + "/munge";
    RunShell(absl::StrCat("mkdir -p ", dir_, "/state ", dir_, "/spool ", dir_, "/dev ", munge,
                          " && chmod 711 ", munge, " && dd if=/dev/urandom of=", munge,
                          "/munge.key bs=1024 count=1 2>/dev/null && chmod 600 ", munge,
                          "/munge.key"));
    for (int i = 0; i < kGpus; ++i) {
      // Character devices: Slurm sets CUDA_VISIBLE_DEVICES only for GRES with device files.
      RunShell(absl::StrCat("ln -s /dev/null ", dir_, "/dev/nvidia", i));
    }
    // proctrack/cgroup kills every process of a job on scancel; it needs root and cgroup v1.
    const bool cgroup = geteuid() == 0 && Exists("/sys/fs/cgroup/freezer/cgroup.procs");
    const std::string user = Trim(RunShell("id -un").out);
    conf_ = dir_ + "/slurm.conf";
    WriteFile(conf_,
              absl::StrCat(
                  "ClusterName=kbisect\nSlurmctldHost=", host, "(127.0.0.1)\n", "SlurmctldPort=",
                  testing::FreeLoopbackPort(), "\nSlurmdPort=", testing::FreeLoopbackPort(), "\n",
                  "AuthType=auth/munge\nCredType=cred/munge\n", "AuthInfo=socket=", munge,
                  "/munge.socket\n", "StateSaveLocation=", dir_, "/state\nSlurmdSpoolDir=", dir_,
                  "/spool\n", "SlurmctldPidFile=", dir_, "/slurmctld.pid\n", "SlurmdPidFile=", dir_,
                  "/slurmd.pid\n", "SlurmctldLogFile=", dir_, "/slurmctld.log\n", "SlurmdLogFile=",
                  dir_, "/slurmd.log\n", "SlurmUser=", user, "\nSlurmdUser=", user, "\n",
                  "ProctrackType=proctrack/", cgroup ? "cgroup" : "pgid", "\n",
                  "TaskPlugin=task/none\nSelectType=select/cons_tres\n",
                  "SelectTypeParameters=CR_Core\nGresTypes=gpu\nMailProg=/bin/true\n",
                  // More CPUs than the machine has, or the 4 tasks stay pending.
                  "SlurmdParameters=config_overrides\nReturnToService=2\n", "FirstJobId=",
                  1000 + getpid() % 50000, "\n", "AccountingStorageType=accounting_storage/none\n",
                  "JobCompType=jobcomp/none\nJobAcctGatherType=jobacct_gather/none\n",
                  "KillWait=5\nMinJobAge=2\n", "NodeName=", node_, " NodeHostname=", host,
                  " NodeAddr=127.0.0.1 CPUs=8 Gres=gpu:", kGpus, " State=UNKNOWN\n",
                  "PartitionName=debug Nodes=", node_, " Default=YES MaxTime=INFINITE State=UP\n"));
    WriteFile(dir_ + "/cgroup.conf",
              "CgroupPlugin=cgroup/v1\nCgroupAutomount=no\nConstrainDevices=no\n");
    WriteFile(dir_ + "/gres.conf",
              absl::StrCat("AutoDetect=off\nNodeName=", node_, " Name=gpu File=", dir_,
                           "/dev/nvidia[0-", kGpus - 1, "]\n"));
    CommandResult munged = RunShell(
        absl::StrCat("/usr/sbin/munged --force --key-file=", munge, "/munge.key --socket=", munge,
                     "/munge.socket --pid-file=", munge, "/munged.pid --log-file=", munge,
                     "/munged.log --seed-file=", munge, "/munged.seed 2>&1"));
    if (munged.exit_code != 0) return absl::StrCat("munged failed: ", munged.out);
    CommandResult ctld = Slurm("/usr/sbin/slurmctld -i 2>&1");
    if (ctld.exit_code != 0) {
      return absl::StrCat("slurmctld failed: ", ctld.out, Tail(dir_ + "/slurmctld.log"));
    }
    CommandResult slurmd = Slurm(absl::StrCat("/usr/sbin/slurmd -N ", node_, " 2>&1"));
    if (slurmd.exit_code != 0) {
      return absl::StrCat("slurmd failed: ", slurmd.out, Tail(dir_ + "/slurmd.log"));
    }
    // sinfo hangs while slurmctld is unreachable: every call has a timeout.
    if (!WaitFor([&] { return Trim(Slurm("timeout 3 sinfo -h -o %t").out) == "idle"; },
                 std::chrono::seconds(20))) {
      return absl::StrCat("node ", node_, " never became idle (",
                          Trim(Slurm("timeout 3 sinfo -h -o '%t %E'").out), "); slurmd.log:\n",
                          Tail(dir_ + "/slurmd.log"), "slurmctld.log:\n",
                          Tail(dir_ + "/slurmctld.log"));
    }
    return "";
  }

  // Live kbisect-worker processes that dial this test's coordinator.
  std::string WorkerProcesses() {
    return Trim(RunShell(absl::StrCat("pgrep -af -- ", ShellQuote("--coordinator " + address_),
                                      " | grep kbisect-worker | grep -v pgrep"))
                    .out);
  }

  // Starts a `kbisect-worker --slurm-per-probe` launcher named "launcher" on this test's cluster
  // (its probe jobs' cache in tmp_/node-cache), with `flags`.
  std::unique_ptr<Process> StartLauncher(const std::string& flags) {
    return std::make_unique<Process>(
        absl::StrCat("env SLURM_CONF=", ShellQuote(conf_), " KBISECT_DEMO_SLEEP=0.01 ",
                     Bin("kbisect-worker"), " --slurm-per-probe --coordinator ", address_,
                     " --cache-dir ", ShellQuote(tmp_.Join("launcher")), " --name launcher",
                     " --idle-poll 1 --slurm-option=--time=10 --slurm-node-cache-dir ",
                     ShellQuote(tmp_.Join("node-cache")), " ", flags),
        tmp_.Join("launcher.log"));
  }

  // This test's probe jobs in Slurm's queue (queued or running), one "ID STATE" a line.
  std::string ProbeJobs() {
    return Trim(Slurm("timeout 3 squeue -h -o '%i %T %j' | grep kbisect-probe").out);
  }

  std::string dir_;
  std::string conf_;
  std::string node_;
};

TEST_F(SlurmTest, TheSbatchPoolBisectsWithOneBoundGpuPerWorkerAndDrainsOnScancel) {
  const std::string repo = tmp_.Join("repo");
  const std::string culprit = MakeRepo(repo, "--commits 40 --culprit 27");
  ASSERT_EQ(culprit.size(), 40u);
  std::unique_ptr<Process> coordinator = StartCoordinator();
  ASSERT_FALSE(address_.empty());

  // The benchmark records the device its worker gave it, then runs the demo benchmark.
  const std::string seen = tmp_.Join("seen.txt");
  const std::string bench = tmp_.Join("bench-seen.sh");
  WriteFile(bench, absl::StrCat("#!/bin/sh\necho \"$KBISECT_WORKER $CUDA_VISIBLE_DEVICES\" >> ",
                                seen, "\nexec ./bench.sh\n"));
  RunShell("chmod +x " + ShellQuote(bench));

  const std::string script = Env("KBISECT_SOURCE_DIR") + "/deploy/slurm/kbisect-workers.sbatch";
  const std::string output = tmp_.Join("pool-%j.out");
  const auto started = std::chrono::steady_clock::now();
  CommandResult submitted = Slurm(absl::StrCat(
      "KBISECT_COORDINATOR=", address_, " KBISECT_BIN=", ShellQuote(Env("KBISECT_BIN_DIR")),
      " KBISECT_SCRATCH=", ShellQuote(tmp_.path()), " KBISECT_DEMO_SLEEP=0.01",
      " timeout 20 sbatch --parsable --ntasks-per-node=", kGpus,
      " --time=10 --output=", ShellQuote(output), " --chdir=", ShellQuote(tmp_.path()), " ",
      ShellQuote(script), " --idle-poll 1"));
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
  const std::string job = Trim(submitted.out);
  const std::string pool_log = tmp_.Join(absl::StrCat("pool-", job, ".out"));
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers() == kGpus; }, std::chrono::seconds(30)))
      << Slurm("timeout 3 squeue").out << (Exists(pool_log) ? ReadFile(pool_log) : "no output")
      << Tail(dir_ + "/slurmd.log");
  std::cout << "pool of " << kGpus << " workers up after "
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - started)
                   .count()
            << " ms\n";

  // Each worker: named NODE/jobJOB/slotN, bound to device N, placed in job JOB, step 0.
  std::set<std::string> names;
  std::set<std::string> devices;
  const nlohmann::json workers = Json("workers --json");
  for (const auto& worker : workers["workers"]) {
    const std::string name = worker["worker_id"];
    const nlohmann::json& identity = worker["identity"];
    const nlohmann::json& placement = identity["placement"];
    const int local_id = placement.value("local_id", 0);
    EXPECT_EQ(name, absl::StrCat(node_, "/job", job, "/slot", local_id));
    EXPECT_EQ(identity.value("slot", ""), absl::StrCat(local_id)) << worker.dump();
    EXPECT_EQ(identity.value("visible_devices", ""), absl::StrCat(local_id)) << worker.dump();
    EXPECT_EQ(placement.value("scheduler", ""), "slurm");
    EXPECT_EQ(placement.value("job_id", ""), job);
    EXPECT_EQ(placement.value("node", ""), node_);
    EXPECT_EQ(placement.value("step_id", ""), "0");
    EXPECT_EQ(placement.value("device_variable", ""), "CUDA_VISIBLE_DEVICES");
    names.insert(name);
    devices.insert(identity.value("visible_devices", ""));
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(kGpus));
  EXPECT_EQ(devices, (std::set<std::string>{"0", "1", "2", "3"}));

  const std::string json = tmp_.Join("result.json");
  CommandResult bisect =
      Kbisect(absl::StrCat("submit v1.0 HEAD --repo ", ShellQuote(repo), " --wait --json ",
                           ShellQuote(json), " -- ", ShellQuote(bench)));
  ASSERT_EQ(bisect.exit_code, 0) << bisect.out << bisect.err << coordinator->log();
  EXPECT_THAT(bisect.out, HasSubstr(absl::StrCat("Workers: ", kGpus)));
  const nlohmann::json result = nlohmann::json::parse(ReadFile(json));
  EXPECT_EQ(result["status"], "culprit_found");
  EXPECT_EQ(result["culprit"]["sha"], culprit);
  std::set<std::string> probe_workers;
  for (const auto& probe : result["probes"]) probe_workers.insert(probe["worker"]);
  EXPECT_GE(probe_workers.size(), 2u) << "the probes were spread over the pool";
  for (const std::string& worker : probe_workers) EXPECT_TRUE(names.count(worker)) << worker;

  // Every benchmark run saw its own worker's device: KBISECT_WORKER N ran with
  // CUDA_VISIBLE_DEVICES=N, the value Slurm gave that task.
  std::set<std::string> slots_seen;
  for (absl::string_view line : absl::StrSplit(ReadFile(seen), '\n', absl::SkipEmpty())) {
    const std::vector<std::string> fields = absl::StrSplit(line, ' ');
    ASSERT_EQ(fields.size(), 2u) << line;
    EXPECT_EQ(fields[0], fields[1]) << "a run of slot " << fields[0] << " saw device " << fields[1];
    slots_seen.insert(fields[0]);
  }
  EXPECT_GE(slots_seen.size(), 2u);

  // Drain: every worker gets SIGTERM, finishes, exits; the job ends and nothing is left.
  CommandResult cancel = Slurm("timeout 10 scancel --signal=TERM " + job);
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
  const bool gone = WaitFor(
      [&] {
        return Trim(Slurm("timeout 3 squeue -h -j " + job + " -o %T 2>/dev/null").out).empty() &&
               WorkerProcesses().empty();
      },
      std::chrono::seconds(30));
  EXPECT_TRUE(gone) << Slurm("timeout 3 squeue").out << WorkerProcesses() << "\n"
                    << ReadFile(pool_log);
  const std::string log = ReadFile(pool_log);
  EXPECT_THAT(log, HasSubstr(absl::StrCat("kbisect-workers: job ", job)));
  EXPECT_THAT(log, HasSubstr("SIGTERM: draining"));
  EXPECT_THAT(log, HasSubstr("(CUDA_VISIBLE_DEVICES)"));
  EXPECT_EQ(WorkerProcesses(), "");
}

TEST_F(SlurmTest, ThePoolScriptRefusesToStartWithoutACoordinatorAddress) {
  const std::string output = tmp_.Join("nocoord-%j.out");
  CommandResult submitted = Slurm(absl::StrCat(
      "env -u KBISECT_COORDINATOR timeout 30 sbatch --wait --parsable --ntasks-per-node=1 "
      "--time=1 --output=",
      ShellQuote(output), " ",
      ShellQuote(Env("KBISECT_SOURCE_DIR") + "/deploy/slurm/kbisect-workers.sbatch")));
  EXPECT_NE(submitted.exit_code, 0);
  const std::string job = Trim(submitted.out);
  EXPECT_THAT(ReadFile(tmp_.Join(absl::StrCat("nocoord-", job, ".out"))),
              HasSubstr("set KBISECT_COORDINATOR=host:port"));
}

// The per-probe mode (issue 52 item 4): a launcher leases like three workers but runs each task as
// a Slurm job of its own with --gres=gpu:1, pinned to the node of its identity job. The first
// benchmark run hangs and the test scancels its job: that probe is an infrastructure loss, run
// again, and the bisect still finds the planted culprit. Every benchmark ran inside a Slurm job on
// the test's node with a device Slurm bound. SIGTERM then stops the launcher, which exits 0.
TEST_F(SlurmTest, ThePerProbeLauncherBisectsWithOneSlurmJobPerProbe) {
  const std::string repo = tmp_.Join("repo");
  const std::string culprit = MakeRepo(repo, "--commits 16 --culprit 11");
  ASSERT_EQ(culprit.size(), 40u);
  std::unique_ptr<Process> coordinator = StartCoordinator();
  ASSERT_FALSE(address_.empty());

  // The first run anywhere records its job and hangs; every run records its job, device, node.
  const std::string seen = tmp_.Join("seen.txt");
  const std::string hung = tmp_.Join("hung");
  const std::string bench = tmp_.Join("bench-slurm.sh");
  WriteFile(bench, absl::StrCat("#!/bin/sh\nif mkdir ", hung, " 2>/dev/null; then\n  echo ",
                                "\"$SLURM_JOB_ID\" > ", hung, "/job\n  sleep 600\nfi\n",
                                "echo \"$SLURM_JOB_ID $CUDA_VISIBLE_DEVICES $SLURMD_NODENAME\" >> ",
                                seen, "\nexec ./bench.sh\n"));
  RunShell("chmod +x " + ShellQuote(bench));

  std::unique_ptr<Process> launcher = StartLauncher("--slurm-max-jobs 3 --slurm-pin-node");
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers() == 3; }, std::chrono::seconds(60)))
      << launcher->log() << Slurm("timeout 3 squeue").out;
  for (const auto& worker : Json("workers --json")["workers"]) {
    const std::string name = worker["worker_id"];
    EXPECT_THAT(name, ::testing::StartsWith("launcher/slurm-probe"));
    const nlohmann::json& placement = worker["identity"]["placement"];
    EXPECT_EQ(placement.value("scheduler", ""), "slurm") << worker.dump();
    EXPECT_EQ(placement.value("node", ""), node_) << "pinned to the identity job's node";
  }

  const std::string json = tmp_.Join("result.json");
  std::unique_ptr<Process> bisect = std::make_unique<Process>(
      absl::StrCat("env KBISECT_COORDINATOR=", address_, " ", Bin("kbisect"), " submit v1.0 HEAD",
                   " --repo ", ShellQuote(repo), " --wait --json ", ShellQuote(json), " -- ",
                   ShellQuote(bench)),
      tmp_.Join("submit.log"));
  ASSERT_TRUE(WaitFor([&] { return Exists(hung + "/job"); }, std::chrono::seconds(60)))
      << launcher->log();
  const std::string hung_job = Trim(ReadFile(hung + "/job"));
  ASSERT_FALSE(hung_job.empty());
  EXPECT_EQ(Slurm("timeout 10 scancel " + hung_job).exit_code, 0);

  ASSERT_EQ(bisect->Wait(std::chrono::seconds(150)), 0)
      << ReadFile(tmp_.Join("submit.log")) << launcher->log() << coordinator->log();
  const nlohmann::json result = nlohmann::json::parse(ReadFile(json));
  EXPECT_EQ(result["status"], "culprit_found");
  EXPECT_EQ(result["culprit"]["sha"], culprit);

  // Every run ran in a Slurm job on the node with a bound device; one job per task.
  std::set<std::string> jobs;
  for (absl::string_view line : absl::StrSplit(ReadFile(seen), '\n', absl::SkipEmpty())) {
    const std::vector<std::string> fields = absl::StrSplit(line, ' ');
    ASSERT_EQ(fields.size(), 3u) << line;
    EXPECT_NE(fields[0], hung_job);
    EXPECT_THAT(fields[1], ::testing::MatchesRegex("[0-3]")) << line;
    EXPECT_EQ(fields[2], node_) << line;
    jobs.insert(fields[0]);
  }
  EXPECT_GE(jobs.size(), 3u);
  const std::string log = launcher->log();
  // Each job's end is in the log: it ran, or the coordinator dropped its probe (outside the
  // interval by then) and the launcher cancelled it.
  for (const std::string& job : jobs) {
    EXPECT_THAT(log, HasSubstr(absl::StrCat("Slurm job ", job, " (")));
  }
  EXPECT_THAT(log, HasSubstr(absl::StrCat("Slurm job ", hung_job)));
  EXPECT_THAT(log, HasSubstr("ended before its probe did"));
  EXPECT_THAT(log, HasSubstr(absl::StrCat("every job pinned to ", node_)));

  launcher->Signal(SIGTERM);
  EXPECT_EQ(launcher->Wait(std::chrono::seconds(30)), 0) << launcher->log();
  EXPECT_EQ(ProbeJobs(), "");
}

// SIGTERM while probe jobs run: the launcher scancels them, hands their leases back and exits 0;
// nothing of it is left in Slurm's queue, and the coordinator has the probes to give out again.
TEST_F(SlurmTest, SigtermStopsThePerProbeLauncherAndLeavesNothingInSlurm) {
  const std::string repo = tmp_.Join("repo");
  ASSERT_EQ(MakeRepo(repo, "--commits 8 --culprit 5").size(), 40u);
  std::unique_ptr<Process> coordinator = StartCoordinator();
  ASSERT_FALSE(address_.empty());
  const std::string bench = tmp_.Join("bench-hang.sh");
  WriteFile(bench, "#!/bin/sh\nsleep 600\n");
  RunShell("chmod +x " + ShellQuote(bench));
  std::unique_ptr<Process> launcher = StartLauncher("--slurm-max-jobs 2");
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers() == 2; }, std::chrono::seconds(60)))
      << launcher->log();
  CommandResult submitted = Kbisect(
      absl::StrCat("submit v1.0 HEAD --repo ", ShellQuote(repo), " -- ", ShellQuote(bench)));
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  ASSERT_TRUE(WaitFor(
      [&] {
        const std::string jobs = ProbeJobs();
        return std::count(jobs.begin(), jobs.end(), '\n') == 1 &&
               jobs.find("PENDING") == std::string::npos;
      },
      std::chrono::seconds(60)))
      << ProbeJobs() << launcher->log();

  launcher->Signal(SIGTERM);
  EXPECT_EQ(launcher->Wait(std::chrono::seconds(60)), 0) << launcher->log();
  // Cancelled before the launcher exited: none queued or running, at most completing (Slurm's
  // KillWait), and soon gone.
  const std::string left = ProbeJobs();
  EXPECT_EQ(left.find("PENDING"), std::string::npos) << left;
  EXPECT_EQ(left.find("RUNNING"), std::string::npos) << left;
  EXPECT_TRUE(WaitFor([&] { return ProbeJobs().empty(); }, std::chrono::seconds(30)))
      << ProbeJobs();
  EXPECT_THAT(launcher->log(), HasSubstr("cancelled"));
  EXPECT_THAT(launcher->log(), HasSubstr("SIGTERM: stopping"));
  // The leases were handed back or their session closed, not left to lapse: each leased probe
  // says the launcher stopped, and none is still running.
  const std::string job_id = Trim(submitted.out.substr(0, submitted.out.find('\n')));
  nlohmann::json status;
  const bool settled = WaitFor(
      [&] {
        status = Json("status --json " + job_id);
        int leased = 0;
        for (const auto& probe : status["probes"]) {
          if (probe.value("attempt", 0) == 0) continue;
          ++leased;
          const std::string message = probe.value("message", "");
          if (probe.value("state", "") == "running" ||
              (message.find("the worker was stopped") == std::string::npos &&
               message.find("it closed its session") == std::string::npos)) {
            return false;
          }
        }
        return leased == 2;
      },
      std::chrono::seconds(20));
  EXPECT_TRUE(settled) << status.dump();
}

}  // namespace
}  // namespace kbisect
