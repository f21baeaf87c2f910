// Copyright 2026 The kbisect Authors.
//
// Cluster mode end to end: the real `kbisect-coordinator` daemon on a free loopback port, real
// `kbisect-worker` processes dialing it, and the `kbisect` client commands (submit, status,
// watch, workers, cancel) against it. Also: plaintext refused on a non-loopback address,
// idempotent request ids, a worker drained by SIGTERM mid-probe, workers that serve until a job
// has ended (--until-job), and the Prometheus metrics endpoint. TLS, tokens and roles are in
// cluster_security_test.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/rpc/credentials.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "kbisect/v1/kbisect.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "tests/testing/git_fixture.h"
#include "tests/testing/process.h"

namespace kbisect {
namespace {

using ::kbisect::testing::Bin;
using ::kbisect::testing::CommandResult;
using ::kbisect::testing::Process;
using ::kbisect::testing::ReadFile;
using ::kbisect::testing::RunShell;
using ::kbisect::testing::ShellQuote;
using ::kbisect::testing::TempDir;
using ::kbisect::testing::Trim;
using ::kbisect::testing::WaitFor;
using ::testing::HasSubstr;
using ::testing::Not;

using ClusterTest = ::kbisect::testing::ClusterFixture;

// The value of the sample `series` (e.g. `kbisect_jobs{state="done"}`) in Prometheus text, or -1.
int64_t Sample(const std::string& text, const std::string& series) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, series) || !absl::ConsumePrefix(&line, " ")) continue;
    int64_t value = 0;
    if (absl::SimpleAtoi(line, &value)) return value;
  }
  return -1;
}

TEST_F(ClusterTest, CoordinatorRefusesPlaintextOffLoopbackAndStopsGracefully) {
  CommandResult refused =
      RunShell(absl::StrCat("KBISECT_LISTEN=0.0.0.0:0 ", Bin("kbisect-coordinator"),
                            " --state-dir ", ShellQuote(tmp_.Join("state"))));
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_THAT(refused.err, HasSubstr("refusing to listen on 0.0.0.0:0 without TLS"));
  EXPECT_THAT(refused.err, HasSubstr("--insecure"));

  // Told explicitly, it serves; SIGTERM stops it cleanly.
  const std::string port_file = tmp_.Join("insecure.port");
  Process coordinator(absl::StrCat(Bin("kbisect-coordinator"), " --listen 0.0.0.0:0 --insecure",
                                   " --health-listen 127.0.0.1:0 --state-dir ",
                                   ShellQuote(tmp_.Join("state")), " --port-file ", port_file),
                      tmp_.Join("insecure.log"));
  ASSERT_TRUE(
      WaitFor([&] { return access(port_file.c_str(), F_OK) == 0; }, std::chrono::seconds(15)))
      << coordinator.log();
  address_ = absl::StrCat("127.0.0.1:", Trim(ReadFile(port_file)));
  CommandResult status = Kbisect("status");
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("No jobs"));
  EXPECT_THAT(coordinator.log(), HasSubstr("health checks on 127.0.0.1:"));
  coordinator.Signal(SIGTERM);
  EXPECT_EQ(coordinator.Wait(std::chrono::seconds(15)), 0) << coordinator.log();
  EXPECT_THAT(coordinator.log(), HasSubstr("not serving"));
  EXPECT_THAT(coordinator.log(), HasSubstr("stopped"));
}

// A port already taken (by a listener that does not share it), for the gRPC server or the
// metrics endpoint, is a clear error: before, the first crashed (SIGSEGV) and the second hung.
// And a second coordinator cannot share the first one's port: gRPC's SO_REUSEPORT is off.
TEST_F(ClusterTest, ABusyPortIsNamedNotACrashOrAHang) {
  const std::string port_file = tmp_.Join("taken.port");
  Process taken(absl::StrCat("python3 -c 'import socket, time; s = socket.socket(); "
                             "s.bind((\"127.0.0.1\", 0)); s.listen(); open(\"",
                             port_file,
                             "\", \"w\").write(str(s.getsockname()[1])); "
                             "time.sleep(300)'"),
                tmp_.Join("taken.log"));
  ASSERT_TRUE(WaitFor(
      [&] { return access(port_file.c_str(), F_OK) == 0 && !Trim(ReadFile(port_file)).empty(); },
      std::chrono::seconds(15)))
      << taken.log();
  const std::string busy = absl::StrCat("127.0.0.1:", Trim(ReadFile(port_file)));
  std::unique_ptr<Process> coordinator = StartCoordinator();
  for (const std::string& flags :
       {absl::StrCat("--listen ", busy), absl::StrCat("--listen ", address_),
        absl::StrCat("--listen 127.0.0.1:0 --metrics-listen ", busy)}) {
    SCOPED_TRACE(flags);
    CommandResult second =
        RunShell(absl::StrCat("timeout -s KILL 30 ", Bin("kbisect-coordinator"), " ", flags,
                              " --state-dir ", ShellQuote(tmp_.Join("state-2"))));
    EXPECT_GE(second.exit_code, 1);
    EXPECT_LT(second.exit_code, 124) << "crashed or hung";
    EXPECT_THAT(second.err, HasSubstr("in use"));
  }
}

// `kbisect-worker --lock-clocks max` on the scripted nvidia-smi (tests/fakes): it locks and
// verifies, records the lock in its identity, undoes it on SIGTERM, and after `kill -9` the next
// start undoes what the killed worker left; on a MIG partition it refuses to start.
TEST_F(ClusterTest, LockedClocksAreRestoredEvenAfterAKill) {
  const std::string gpu = tmp_.Join("fake-gpu");
  ASSERT_EQ(RunShell(absl::StrCat("mkdir -p ", gpu)).exit_code, 0);
  worker_env_ = absl::StrCat("PATH=", ::kbisect::testing::Env("KBISECT_SOURCE_DIR"),
                             "/tests/fakes:$PATH FAKE_NVSMI_DIR=", gpu);
  std::unique_ptr<Process> coordinator = StartCoordinator();
  std::unique_ptr<Process> locked =
      StartWorker("locked", 0, "0.01", "--lock-clocks max", "cache-l");
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers() == 1; }, std::chrono::seconds(15)))
      << locked->log();
  EXPECT_THAT(locked->log(), HasSubstr("clocks locked: SM 1980 MHz"));
  EXPECT_EQ(Trim(ReadFile(gpu + "/locked-sm")), "1980");
  EXPECT_THAT(Worker("locked")["identity"]["hardware_class_label"].get<std::string>(),
              HasSubstr("clocks locked at 1980 MHz"));
  locked->Signal(SIGTERM);
  EXPECT_EQ(locked->Wait(std::chrono::seconds(15)), 0) << locked->log();
  EXPECT_EQ(access((gpu + "/locked-sm").c_str(), F_OK), -1) << "SIGTERM undid the lock";

  std::unique_ptr<Process> killed =
      StartWorker("killed", 0, "0.01", "--lock-clocks max", "cache-k");
  ASSERT_TRUE(WaitFor([&] { return access((gpu + "/locked-sm").c_str(), F_OK) == 0; },
                      std::chrono::seconds(15)))
      << killed->log();
  killed->Signal(SIGKILL);
  killed->Wait(std::chrono::seconds(15));
  EXPECT_EQ(Trim(ReadFile(gpu + "/locked-sm")), "1980") << "a killed worker undoes nothing";
  std::unique_ptr<Process> next = StartWorker("next", 0, "0.01", "", "cache-k");
  // The clocks are reset first, persistence last: wait for both (under load the check could
  // fall between them).
  ASSERT_TRUE(WaitFor(
      [&] {
        return access((gpu + "/locked-sm").c_str(), F_OK) == -1 &&
               Trim(ReadFile(gpu + "/persistence")) == "Disabled";
      },
      std::chrono::seconds(15)))
      << next->log();
  EXPECT_THAT(ReadFile(gpu + "/calls"), HasSubstr("--reset-gpu-clocks"));
  EXPECT_EQ(Trim(ReadFile(gpu + "/persistence")), "Disabled");

  ASSERT_EQ(RunShell(absl::StrCat("touch ", gpu, "/mig")).exit_code, 0);
  std::unique_ptr<Process> mig = StartWorker("mig", 0, "0.01", "--lock-clocks max", "cache-m");
  EXPECT_EQ(mig->Wait(std::chrono::seconds(15)), 1) << mig->log();
  EXPECT_THAT(mig->log(), HasSubstr("MIG partition"));
}

// `kbisect submit --lock-clocks max` runs only on the workers whose GPUs are locked so: the job
// is pinned to their hardware class; a lock no worker holds is refused, naming what to start.
TEST_F(ClusterTest, SubmitLockClocksRunsOnlyOnTheLockedWorkers) {
  const std::string repo = tmp_.Join("repo");
  ASSERT_EQ(MakeRepo(repo, "--commits 20 --culprit 13").size(), 40u);
  std::unique_ptr<Process> coordinator = StartCoordinator();
  std::vector<std::unique_ptr<Process>> workers;
  for (const char* name : {"locked", "plain"}) {
    const std::string gpu = tmp_.Join(absl::StrCat("gpu-", name));
    ASSERT_EQ(RunShell(absl::StrCat("mkdir -p ", gpu)).exit_code, 0);
    worker_env_ = absl::StrCat("PATH=", ::kbisect::testing::Env("KBISECT_SOURCE_DIR"),
                               "/tests/fakes:$PATH FAKE_NVSMI_DIR=", gpu);
    workers.push_back(StartWorker(name, 0, "0.01",
                                  std::string(name) == "locked" ? "--lock-clocks max" : "",
                                  absl::StrCat("cache-", name)));
  }
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers() == 2; }, std::chrono::seconds(15)))
      << workers[0]->log() << workers[1]->log();
  const std::string locked_class = Worker("locked")["identity"]["hardware_class"];
  EXPECT_NE(locked_class, Worker("plain")["identity"]["hardware_class"].get<std::string>());

  CommandResult refused =
      Kbisect(absl::StrCat("submit v1.0 HEAD --repo ", repo, " --lock-clocks 1500 -- ./bench.sh"));
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.err, HasSubstr("no live worker has its GPUs locked at --lock-clocks 1500"));
  EXPECT_THAT(refused.err, HasSubstr("kbisect-worker --lock-clocks 1500"));

  const std::string json = tmp_.Join("locked.json");
  CommandResult submitted =
      Kbisect(absl::StrCat("submit v1.0 HEAD --repo ", repo, " --lock-clocks max --wait -q --json ",
                           json, " -- ./bench.sh"));
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
  const nlohmann::json result = nlohmann::json::parse(ReadFile(json));
  EXPECT_EQ(result["spec"]["hardware_class"], locked_class);
  for (const auto& probe : result["probes"]) EXPECT_EQ(probe["worker"], "locked") << probe.dump();
}

TEST_F(ClusterTest, UnreachableCoordinatorIsNamed) {
  address_ = "127.0.0.1:1";
  for (const char* command : {"status", "workers", "watch job-1", "cancel job-1"}) {
    CommandResult result = Kbisect(command);
    EXPECT_EQ(result.exit_code, 1) << command;
    EXPECT_THAT(result.err, HasSubstr("cannot reach the coordinator at 127.0.0.1:1")) << command;
  }
  CommandResult submit = Kbisect("submit v1.0 --repo /nonexistent --coordinator 127.0.0.1:2 -- x");
  EXPECT_EQ(submit.exit_code, 1);
  EXPECT_THAT(submit.err, HasSubstr("127.0.0.1:2"));
  CommandResult no_repo = Kbisect("submit v1.0 -- ./bench.sh");
  EXPECT_EQ(no_repo.exit_code, 2);
  EXPECT_THAT(no_repo.err, HasSubstr("--repo"));
}

TEST_F(ClusterTest, SubmitWaitFindsTheCulpritAndStatusWorkersCancelWork) {
  const std::string repo = tmp_.Join("repo");
  const std::string culprit = MakeRepo(repo, "--commits 60 --culprit 41");
  ASSERT_EQ(culprit.size(), 40u);
  // Structured logs: the coordinator and one worker write JSON lines.
  std::unique_ptr<Process> coordinator = StartCoordinator("--log-format json");
  std::unique_ptr<Process> w0 = StartWorker("node-a/gpu0", 0, "0.01", "--log-format json");
  std::unique_ptr<Process> w1 = StartWorker("node-a/gpu1", 1);
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers() == 2; }, std::chrono::seconds(15)))
      << w0->log() << w1->log();

  CommandResult workers = Kbisect("workers");
  EXPECT_EQ(workers.exit_code, 0) << workers.err;
  EXPECT_THAT(workers.out, HasSubstr("WORKER"));
  EXPECT_THAT(workers.out, HasSubstr("node-a/gpu0"));
  EXPECT_THAT(workers.out, HasSubstr("node-a/gpu1"));
  EXPECT_THAT(workers.out, HasSubstr("idle"));

  const std::string json = tmp_.Join("result.json");
  CommandResult submitted = Kbisect(absl::StrCat(
      "submit v1.0 HEAD --repo ", repo, " --request-id nightly-42 --origin nightly --wait --json ",
      json, " -- ./bench.sh"));
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err << coordinator->log();
  const std::string job_id = Trim(submitted.out.substr(0, submitted.out.find('\n')));
  EXPECT_THAT(job_id, ::testing::StartsWith("job-"));
  EXPECT_THAT(submitted.out, HasSubstr("Total commits in range: 60"));
  EXPECT_THAT(submitted.out, HasSubstr("Workers: 2"));
  EXPECT_THAT(submitted.out, HasSubstr("Baseline results:"));
  EXPECT_THAT(submitted.out, ::testing::ContainsRegex("Round 1 of ~[0-9]+: [0-9a-f]{7} metric="));
  EXPECT_THAT(submitted.out, HasSubstr("PERFORMANCE REGRESSION BISECT RESULT"));
  EXPECT_THAT(submitted.out, HasSubstr(culprit));
  nlohmann::json result = nlohmann::json::parse(ReadFile(json));
  EXPECT_EQ(result["job_id"], job_id);
  EXPECT_EQ(result["status"], "culprit_found");
  EXPECT_EQ(result["culprit"]["sha"], culprit);
  EXPECT_EQ(result["spec"]["origin"]["kind"], "nightly");
  std::set<std::string> probe_workers;
  for (const auto& probe : result["probes"]) probe_workers.insert(probe["worker"]);
  EXPECT_EQ(probe_workers, (std::set<std::string>{"node-a/gpu0", "node-a/gpu1"}));

  // The same request id again: the same job, not a new one.
  CommandResult again = Kbisect(
      absl::StrCat("submit v1.0 HEAD --repo ", repo, " --request-id nightly-42 -- ./bench.sh"));
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(Trim(again.out), job_id);
  EXPECT_THAT(again.err, HasSubstr("submitted before"));

  CommandResult list = Kbisect("status");
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr(job_id));
  EXPECT_THAT(list.out, HasSubstr("culprit_found"));
  EXPECT_THAT(list.out, HasSubstr(culprit.substr(0, 12)));
  nlohmann::json listed = Json("status --json");
  ASSERT_EQ(listed["jobs"].size(), 1u);
  EXPECT_EQ(listed["jobs"][0]["job_id"], job_id);

  CommandResult report = Kbisect("status " + job_id);
  EXPECT_EQ(report.exit_code, 0) << report.err;
  EXPECT_THAT(report.out, HasSubstr("Regression introduced by:"));
  EXPECT_THAT(report.out, HasSubstr(culprit));
  EXPECT_EQ(Json("status --json " + job_id)["culprit"]["sha"], culprit);

  // Watching a finished job replays its progress and ends with the report and exit code.
  CommandResult watched = Kbisect("watch " + job_id);
  EXPECT_EQ(watched.exit_code, 0) << watched.err;
  EXPECT_THAT(watched.out, HasSubstr("Baseline results:"));
  EXPECT_THAT(watched.out, HasSubstr(culprit));

  EXPECT_EQ(Kbisect("status job-unknown").exit_code, 1);

  // Cancel a slow job while its probes run: the job ends cancelled, the workers become idle.
  CommandResult slow = Kbisect(
      absl::StrCat("submit v1.0 --repo ", repo, " --env KBISECT_DEMO_SLEEP=20 -- ./bench.sh"));
  ASSERT_EQ(slow.exit_code, 0) << slow.err;
  const std::string slow_id = Trim(slow.out);
  ASSERT_TRUE(WaitFor(
      [&] {
        nlohmann::json worker = Worker("node-a/gpu0");
        return worker != nullptr && worker["current_job_id"] == slow_id;
      },
      std::chrono::seconds(15)));
  CommandResult cancelled = Kbisect("cancel " + slow_id);
  EXPECT_EQ(cancelled.exit_code, 0) << cancelled.err;
  EXPECT_THAT(cancelled.out, HasSubstr("cancelled"));
  nlohmann::json slow_status = Json("status --json " + slow_id);
  EXPECT_EQ(slow_status["state"], "cancelled");
  EXPECT_EQ(slow_status["status"], "cancelled");
  EXPECT_TRUE(WaitFor(
      [&] {
        const nlohmann::json workers = Json("workers --json");
        for (const auto& worker : workers["workers"]) {
          if (worker["state"] != "idle") return false;
        }
        return true;
      },
      std::chrono::seconds(10)));
  CommandResult watch_cancelled = Kbisect("watch -q " + slow_id);
  EXPECT_EQ(watch_cancelled.exit_code, 1);
  EXPECT_EQ(Kbisect("cancel " + slow_id).exit_code, 0) << "cancel is idempotent";

  // Everything shuts down cleanly.
  w0->Signal(SIGTERM);
  w1->Signal(SIGTERM);
  EXPECT_EQ(w0->Wait(std::chrono::seconds(10)), 0) << w0->log();
  EXPECT_EQ(w1->Wait(std::chrono::seconds(10)), 0) << w1->log();
  coordinator->Signal(SIGTERM);
  EXPECT_EQ(coordinator->Wait(std::chrono::seconds(15)), 0) << coordinator->log();
  EXPECT_THAT(coordinator->log(), HasSubstr("job " + job_id + " done"));
  // Every line of the JSON logs parses, names its component, and the job's end carries its
  // fields.
  bool job_done_logged = false;
  for (const auto& [process, component] : {std::make_pair(coordinator.get(), "kbisect-coordinator"),
                                           std::make_pair(w0.get(), "kbisect-worker")}) {
    int lines = 0;
    for (absl::string_view line : absl::StrSplit(process->log(), '\n', absl::SkipEmpty())) {
      nlohmann::json parsed = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      ASSERT_FALSE(parsed.is_discarded()) << "not JSON: " << line;
      EXPECT_EQ(parsed["component"], component) << line;
      EXPECT_TRUE(parsed.contains("time") && parsed.contains("level") && parsed.contains("msg"))
          << line;
      job_done_logged |= parsed.value("job", "") == job_id && parsed.value("state", "") == "done" &&
                         parsed.value("culprit", "") == culprit;
      ++lines;
    }
    EXPECT_GE(lines, 2) << component;
  }
  EXPECT_TRUE(job_done_logged) << coordinator->log();
}

TEST_F(ClusterTest, SigtermDrainsAWorkerMidProbeAndItsResultCounts) {
  const std::string repo = tmp_.Join("repo");
  const std::string culprit = MakeRepo(repo, "--commits 30 --culprit 12");
  std::unique_ptr<Process> coordinator = StartCoordinator();
  // Alone, the slow worker gets the first baseline; each of its bench runs takes a second.
  std::unique_ptr<Process> drainer = StartWorker("drainer", 0, "1");
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers() == 1; }, std::chrono::seconds(15)))
      << drainer->log() << coordinator->log() << Kbisect("workers").out;
  CommandResult submitted =
      Kbisect(absl::StrCat("submit v1.0 --repo ", repo, " --runs 3 -- ./bench.sh"));
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const std::string job_id = Trim(submitted.out);
  ASSERT_TRUE(WaitFor(
      [&] {
        nlohmann::json worker = Worker("drainer");
        return worker != nullptr && worker["state"] == "busy";
      },
      std::chrono::seconds(15)));

  drainer->Signal(SIGTERM);
  EXPECT_EQ(drainer->Wait(std::chrono::seconds(30)), 0) << drainer->log();
  EXPECT_THAT(drainer->log(), HasSubstr("draining"));
  EXPECT_THAT(drainer->log(), HasSubstr("exiting after 1 reported probe(s)"));
  nlohmann::json gone = Worker("drainer");
  EXPECT_EQ(gone["tasks_completed"], 1);
  EXPECT_EQ(gone["state"], "lost");

  // A fresh worker finishes the job; the drained worker's measurement is part of it.
  std::unique_ptr<Process> fresh = StartWorker("fresh", 0);
  const std::string json = tmp_.Join("drained.json");
  CommandResult watched = Kbisect(absl::StrCat("watch -q --json ", json, " ", job_id));
  ASSERT_EQ(watched.exit_code, 0) << watched.out << watched.err;
  nlohmann::json result = nlohmann::json::parse(ReadFile(json));
  EXPECT_EQ(result["culprit"]["sha"], culprit);
  std::set<std::string> measured_by = {result["baseline"]["good"]["worker"],
                                       result["baseline"]["bad"]["worker"]};
  for (const auto& probe : result["probes"]) measured_by.insert(probe["worker"]);
  EXPECT_EQ(measured_by.count("drainer"), 1u) << result.dump(2);
}

// `kbisect-worker --until-job JOB`, the pods of `kbisect k8s-job`'s Indexed Job: a job the
// coordinator does not know exits 2 at once; workers serving a job exit 0 once it has ended, and
// one started after it ended (an index Kueue admitted late) exits 0 without serving.
TEST_F(ClusterTest, UntilJobWorkersExitOnceTheirJobHasEnded) {
  const std::string repo = tmp_.Join("repo");
  const std::string culprit = MakeRepo(repo, "--commits 20 --culprit 9");
  std::unique_ptr<Process> coordinator = StartCoordinator();
  std::unique_ptr<Process> typo = StartWorker("typo", 0, "0.01", "--until-job job-none");
  EXPECT_EQ(typo->Wait(std::chrono::seconds(30)), 2) << typo->log();
  EXPECT_THAT(typo->log(), HasSubstr("--until-job job-none: the coordinator knows no such job"));

  CommandResult submitted = Kbisect(absl::StrCat("submit v1.0 --repo ", repo, " -- ./bench.sh"));
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const std::string job_id = Trim(submitted.out);
  std::unique_ptr<Process> w0 = StartWorker("pod-0", 0, "0.01", "--until-job " + job_id);
  std::unique_ptr<Process> w1 =
      StartWorker("pod-1", 1, "0.01", "--until-job " + job_id + " --log-format json");
  CommandResult watched = Kbisect("watch -q " + job_id);
  ASSERT_EQ(watched.exit_code, 0) << watched.out << watched.err << w0->log();
  EXPECT_EQ(Json("status --json " + job_id)["culprit"]["sha"], culprit);
  for (Process* worker : {w0.get(), w1.get()}) {
    EXPECT_EQ(worker->Wait(std::chrono::seconds(30)), 0) << worker->log();
    EXPECT_THAT(worker->log(), HasSubstr("serves until job " + job_id + " has ended"));
    EXPECT_THAT(worker->log(), HasSubstr("job " + job_id + " has ended (done)"));
  }
  EXPECT_GE(Json("workers --json")["workers"].size(), 2u);

  std::unique_ptr<Process> late = StartWorker("pod-2", 0, "0.01", "--until-job " + job_id);
  EXPECT_EQ(late->Wait(std::chrono::seconds(30)), 0) << late->log();
  EXPECT_THAT(late->log(), HasSubstr("exiting after 0 reported probe(s)"));
}

// GET /metrics on --metrics-listen: Prometheus text whose numbers match a finished job.
TEST_F(ClusterTest, PrometheusMetricsMatchTheJob) {
  const std::string repo = tmp_.Join("repo");
  const std::string culprit = MakeRepo(repo, "--commits 20 --culprit 13");
  std::unique_ptr<Process> coordinator = StartCoordinator("--metrics-listen 127.0.0.1:0");
  int metrics_port = 0;
  const std::string marker = "metrics on http://127.0.0.1:";
  ASSERT_TRUE(WaitFor(
      [&] {
        const std::string log = coordinator->log();
        const size_t at = log.find(marker);
        if (at == std::string::npos) return false;
        const size_t end = log.find("/metrics", at + marker.size());
        return absl::SimpleAtoi(log.substr(at + marker.size(), end - at - marker.size()),
                                &metrics_port);
      },
      std::chrono::seconds(15)))
      << coordinator->log();
  httplib::Client http("127.0.0.1", metrics_port);
  auto scrape = [&]() -> std::string {
    httplib::Result response = http.Get("/metrics");
    if (!response) return "";
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->get_header_value("Content-Type"),
              "text/plain; version=0.0.4; charset=utf-8");
    return response->body;
  };
  const std::string before = scrape();
  EXPECT_THAT(before, HasSubstr("# TYPE kbisect_jobs gauge\n"));
  EXPECT_THAT(before, HasSubstr("# TYPE kbisect_probes_total counter\n"));
  EXPECT_EQ(Sample(before, "kbisect_jobs{state=\"done\"}"), 0);
  EXPECT_EQ(Sample(before, "kbisect_bench_runs_total"), 0);
  EXPECT_EQ(http.Get("/other")->status, 404);

  std::unique_ptr<Process> w0 = StartWorker("node-m/gpu0", 0);
  std::unique_ptr<Process> w1 = StartWorker("node-m/gpu1", 1);
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers() == 2; }, std::chrono::seconds(15)));
  const std::string json = tmp_.Join("metrics.json");
  CommandResult submitted =
      Kbisect(absl::StrCat("submit v1.0 --repo ", repo, " --wait --json ", json, " -- ./bench.sh"));
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const nlohmann::json result = nlohmann::json::parse(ReadFile(json));
  ASSERT_EQ(result["culprit"]["sha"], culprit);
  std::map<std::string, int64_t> verdicts;
  for (const auto& probe : result["probes"]) {
    if (probe.contains("verdict") && probe["verdict"] != "unspecified") {
      ++verdicts[probe["verdict"].get<std::string>()];
    }
  }
  const std::string hardware_class =
      Worker("node-m/gpu0")["identity"]["hardware_class"].get<std::string>();
  // Both workers idle again before the scrape.
  ASSERT_TRUE(WaitFor(
      [&] {
        return Sample(scrape(), absl::StrCat("kbisect_workers{hardware_class=\"", hardware_class,
                                             "\",state=\"idle\"}")) == 2;
      },
      std::chrono::seconds(15)));

  const std::string text = scrape();
  EXPECT_EQ(Sample(text, "kbisect_jobs{state=\"done\"}"), 1) << text;
  for (const char* state :
       {"queued", "baselines", "bisecting", "confirming", "cancelled", "failed"}) {
    EXPECT_EQ(Sample(text, absl::StrCat("kbisect_jobs{state=\"", state, "\"}")), 0) << state;
  }
  EXPECT_GT(result["bench_runs"].get<int64_t>(), 0);
  EXPECT_EQ(Sample(text, "kbisect_bench_runs_total"), result["bench_runs"].get<int64_t>());
  ASSERT_GT(verdicts["good"] + verdicts["bad"], 0);
  for (const char* verdict : {"good", "bad", "skip", "ambiguous"}) {
    EXPECT_EQ(Sample(text, absl::StrCat("kbisect_probes_total{verdict=\"", verdict, "\"}")),
              verdicts[verdict])
        << verdict;
  }
  EXPECT_EQ(Sample(text, "kbisect_drift_events_total"), 0);
  EXPECT_EQ(Sample(text, "kbisect_quarantines_total"), 0);
  EXPECT_EQ(Sample(text, "kbisect_lease_expiries_total"), 0);
  // Every bisect probe a worker measured to its end is one observation of its duration.
  int64_t measured_bisects = 0;
  for (const auto& probe : result["probes"]) {
    measured_bisects +=
        probe["kind"] == "bisect" && probe["state"] == "finished" && !probe.value("cached", false);
  }
  ASSERT_GT(measured_bisects, 0);
  EXPECT_EQ(Sample(text, "kbisect_probe_duration_seconds_count{kind=\"bisect\"}"), measured_bisects)
      << text;
  EXPECT_EQ(Sample(text, "kbisect_probe_duration_seconds_bucket{kind=\"bisect\",le=\"+Inf\"}"),
            measured_bisects);
  EXPECT_EQ(Sample(text, "kbisect_probe_duration_seconds_bucket{kind=\"bisect\",le=\"3600\"}"),
            measured_bisects)
      << "a demo probe takes well under an hour";
  EXPECT_THAT(text, HasSubstr("kbisect_build_info{version=\"0.1.0\",grpc_version=\""));

  // A worker killed mid-probe: its lease expires, which the counter shows, and it is lost.
  CommandResult slow = Kbisect(
      absl::StrCat("submit v1.0 --repo ", repo, " --env KBISECT_DEMO_SLEEP=20 -- ./bench.sh"));
  ASSERT_EQ(slow.exit_code, 0) << slow.err;
  ASSERT_TRUE(WaitFor(
      [&] {
        nlohmann::json worker = Worker("node-m/gpu0");
        return worker != nullptr && worker["state"] == "busy";
      },
      std::chrono::seconds(15)));
  w0->Signal(SIGKILL);
  EXPECT_TRUE(WaitFor([&] { return Sample(scrape(), "kbisect_lease_expiries_total") == 1; },
                      std::chrono::seconds(30)))
      << scrape();
  const std::string after = scrape();
  EXPECT_EQ(Sample(after, absl::StrCat("kbisect_workers{hardware_class=\"", hardware_class,
                                       "\",state=\"lost\"}")),
            1)
      << after;
  EXPECT_EQ(Kbisect("cancel " + Trim(slow.out)).exit_code, 0);
  EXPECT_EQ(Sample(scrape(), "kbisect_jobs{state=\"cancelled\"}"), 1);
  coordinator->Signal(SIGTERM);
  EXPECT_EQ(coordinator->Wait(std::chrono::seconds(15)), 0) << coordinator->log();
}

TEST_F(ClusterTest, SubmitTakesTheSearchOptionsFindGoodSinceAndConfidence) {
  const std::string repo = tmp_.Join("repo");
  // Commit i is dated 2026-01-01 00:00 UTC + (i + 1) hours: HEAD (commit 60) 2026-01-03 13:00.
  const std::string culprit = MakeRepo(repo, "--commits 60 --culprit 50");
  std::unique_ptr<Process> coordinator = StartCoordinator();
  std::unique_ptr<Process> w0 = StartWorker("node-s/gpu0", 0);
  std::unique_ptr<Process> w1 = StartWorker("node-s/gpu1", 1);
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers() == 2; }, std::chrono::seconds(15)));

  // Since 2026-01-03 00:00 (commits 47..59: HEAD~1..HEAD~13); 2 workers: ~1, ~2, then ~4, ~8,
  // then ~13, which is better.
  const std::string json = tmp_.Join("since.json");
  CommandResult since = Kbisect(absl::StrCat("submit --find-good --since 2026-01-03T00:00Z --repo ",
                                             repo, " --wait --json ", json, " -- ./bench.sh"));
  ASSERT_EQ(since.exit_code, 0) << since.out << since.err << coordinator->log();
  EXPECT_THAT(since.err, HasSubstr("GOOD found by looking back: HEAD~13 is better than HEAD"));
  nlohmann::json result = nlohmann::json::parse(ReadFile(json));
  EXPECT_EQ(result["culprit"]["sha"], culprit);
  // Nothing in the window is better: exit 3, the range searched said.
  CommandResult recent = Kbisect(absl::StrCat(
      "submit --find-good --since 2026-01-03T09:00Z --repo ", repo, " --wait -- ./bench.sh"));
  EXPECT_EQ(recent.exit_code, 3) << recent.out << recent.err;
  EXPECT_THAT(recent.err, HasSubstr("no commit within HEAD~1..HEAD~4 (the commits since "));

  // --confidence travels in the spec and the job reaches it.
  const std::string sure = tmp_.Join("confidence.json");
  CommandResult confident = Kbisect(absl::StrCat(
      "submit v1.0 --repo ", repo, " --confidence 0.999 --wait --json ", sure, " -- ./bench.sh"));
  ASSERT_EQ(confident.exit_code, 0) << confident.out << confident.err;
  result = nlohmann::json::parse(ReadFile(sure));
  EXPECT_EQ(result["culprit"]["sha"], culprit);
  EXPECT_DOUBLE_EQ(result["spec"]["confidence"].get<double>(), 0.999);
  EXPECT_GE(result["culprit_probability"].get<double>(), 0.999);
  coordinator->Signal(SIGTERM);
  EXPECT_EQ(coordinator->Wait(std::chrono::seconds(15)), 0) << coordinator->log();
}

// Issue 50 on a cluster: the coordinator reverts a bisect's culprit at BAD by itself
// (--verify-revert, a follow-up job), and `submit --try` measures a change on the same workers.
TEST_F(ClusterTest, SubmitVerifiesTheRevertAndTriesAChange) {
  const std::string repo = tmp_.Join("repo");
  const std::string culprit = MakeRepo(repo, "--commits 30 --culprit 25");
  std::unique_ptr<Process> coordinator = StartCoordinator();
  std::unique_ptr<Process> w0 = StartWorker("node-t/gpu0", 0);
  std::unique_ptr<Process> w1 = StartWorker("node-t/gpu1", 1);
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers() == 2; }, std::chrono::seconds(15)));

  const std::string bisect = tmp_.Join("bisect.json");
  CommandResult verified = Kbisect(absl::StrCat(
      "submit v1.0 --repo ", repo, " --verify-revert --wait --json ", bisect, " -- ./bench.sh"));
  ASSERT_EQ(verified.exit_code, 0) << verified.out << verified.err << coordinator->log();
  nlohmann::json result = nlohmann::json::parse(ReadFile(bisect));
  EXPECT_EQ(result["culprit"]["sha"], culprit);
  EXPECT_EQ(result["revert_check"]["state"], "done") << result["revert_check"].dump(2);
  EXPECT_NEAR(result["revert_check"]["recovered_share"].get<double>(), 1.0, 0.15);
  EXPECT_EQ(result["follow_up_job_ids"].size(), 1u);

  const std::string tried = tmp_.Join("try.json");
  CommandResult change = Kbisect(absl::StrCat("submit --try HEAD --revert ", culprit, " --repo ",
                                              repo, " --wait --json ", tried, " -- ./bench.sh"));
  EXPECT_EQ(change.exit_code, 0) << change.out << change.err << coordinator->log();
  EXPECT_THAT(change.out, HasSubstr("PERFORMANCE TRY RESULT"));
  result = nlohmann::json::parse(ReadFile(tried));
  EXPECT_TRUE(result["confirmation"]["confirmed"].get<bool>());
  // The revert the check made is the same commit: the same change on the same base.
  EXPECT_EQ(result["bad_sha"],
            nlohmann::json::parse(ReadFile(bisect))["revert_check"]["revert_sha"]);
  coordinator->Signal(SIGTERM);
  EXPECT_EQ(coordinator->Wait(std::chrono::seconds(15)), 0) << coordinator->log();
}

}  // namespace
}  // namespace kbisect
