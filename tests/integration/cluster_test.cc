// Copyright 2026 The kbisect Authors.
//
// Cluster mode end to end: the real `kbisect-coordinator` daemon on a free loopback port, real
// `kbisect-worker` processes dialing it, and the `kbisect` client commands (submit, status,
// watch, workers, cancel) against it. Also: plaintext refused on a non-loopback address,
// idempotent request ids, a worker drained by SIGTERM mid-probe, and TLS / mutual TLS / bearer
// tokens with certificates made by the openssl CLI.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
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

class ClusterTest : public ::kbisect::testing::ClusterFixture {};

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
  std::unique_ptr<Process> coordinator = StartCoordinator();
  std::unique_ptr<Process> w0 = StartWorker("node-a/gpu0", 0);
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
  EXPECT_THAT(submitted.out, ::testing::ContainsRegex("Step 1/[0-9]+: [0-9a-f]{7} metric="));
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

// Mutual TLS and bearer tokens, with certificates made by the openssl CLI.
TEST_F(ClusterTest, TlsClientCertificatesAndTokens) {
  if (RunShell("command -v openssl").exit_code != 0) GTEST_SKIP() << "openssl is not installed";
  const std::string d = tmp_.Join("pki");
  const std::string ca = "-days 2 -nodes -newkey rsa:2048 -x509";
  CommandResult pki = RunShell(absl::StrCat(
      "set -e; mkdir -p ", d, "; cd ", d, "; exec 2>openssl.log; ", "openssl req ", ca,
      " -keyout ca.key -out ca.pem -subj /CN=kbisect-ca; ", "openssl req ", ca,
      " -keyout rogue.key -out rogue.pem -subj /CN=rogue-ca; ",
      "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > san.ext; ",
      "openssl req -nodes -newkey rsa:2048 -keyout server.key -out server.csr -subj /CN=coord; ",
      "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
      "-extfile san.ext -out server.pem; ",
      "openssl req -nodes -newkey rsa:2048 -keyout worker.key -out worker.csr -subj /CN=worker; ",
      "openssl x509 -req -in worker.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
      "-out worker.pem; ",
      "openssl x509 -req -in worker.csr -CA rogue.pem -CAkey rogue.key -CAcreateserial -days 2 "
      "-out worker-rogue.pem; ",
      "printf 's3cr3t-planted-token\\n' > token; printf 'wrong-token\\n' > wrong"));
  ASSERT_EQ(pki.exit_code, 0) << ReadFile(d + "/openssl.log");

  // A token or a client CA without a certificate of its own is refused up front.
  CommandResult half = RunShell(absl::StrCat(Bin("kbisect-coordinator"), " --token-file ", d,
                                             "/token --state-dir ", tmp_.Join("state")));
  EXPECT_EQ(half.exit_code, 2);
  EXPECT_THAT(half.err, HasSubstr("need TLS"));

  std::unique_ptr<Process> coordinator = StartCoordinator(
      absl::StrCat("--tls-cert ", d, "/server.pem --tls-key ", d, "/server.key --client-ca ", d,
                   "/ca.pem --token-file ", d, "/token"));
  const std::string tls = absl::StrCat(" --tls-ca ", d, "/ca.pem");

  // Clients: the token or a certificate of the CA; nothing else.
  CommandResult with_token = Kbisect("workers --json" + tls + " --token-file " + d + "/token");
  EXPECT_EQ(with_token.exit_code, 0) << with_token.err;
  CommandResult with_env_token = Kbisect(
      "status" + tls + "; KBISECT_TOKEN=s3cr3t-planted-token KBISECT_COORDINATOR=" + address_ +
      " " + Bin("kbisect") + " status" + tls);
  EXPECT_EQ(with_env_token.exit_code, 0) << with_env_token.err;
  EXPECT_THAT(with_env_token.err, HasSubstr("refused the credentials"));  // The first, tokenless.
  CommandResult with_cert = Kbisect(
      absl::StrCat("workers", tls, " --tls-cert ", d, "/worker.pem --tls-key ", d, "/worker.key"));
  EXPECT_EQ(with_cert.exit_code, 0) << with_cert.err;
  CommandResult wrong_token = Kbisect("workers" + tls + " --token-file " + d + "/wrong");
  EXPECT_EQ(wrong_token.exit_code, 1);
  EXPECT_THAT(wrong_token.err, HasSubstr("refused the credentials"));
  CommandResult rogue_cert = Kbisect(absl::StrCat(
      "workers", tls, " --tls-cert ", d, "/worker-rogue.pem --tls-key ", d, "/worker.key"));
  EXPECT_EQ(rogue_cert.exit_code, 1);
  CommandResult plaintext = Kbisect("workers");
  EXPECT_EQ(plaintext.exit_code, 1);
  EXPECT_THAT(plaintext.err, HasSubstr("cannot reach the coordinator"));

  // Workers: a certificate of the CA registers; a rogue certificate or a mere token does not.
  std::unique_ptr<Process> good =
      StartWorker("good", 0, "0.01",
                  absl::StrCat(tls, " --tls-cert ", d, "/worker.pem --tls-key ", d, "/worker.key"));
  std::unique_ptr<Process> rogue = StartWorker(
      "rogue", 1, "0.01",
      absl::StrCat(tls, " --tls-cert ", d, "/worker-rogue.pem --tls-key ", d, "/worker.key"));
  std::unique_ptr<Process> token_only =
      StartWorker("token-only", 2, "0.01", absl::StrCat(tls, " --token-file ", d, "/token"));
  const std::string client = tls + " --token-file " + d + "/token";
  ASSERT_TRUE(WaitFor(
      [&] { return Kbisect("workers --json" + client).out.find("\"good\"") != std::string::npos; },
      std::chrono::seconds(15)))
      << good->log();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  CommandResult listed = Kbisect("workers --json" + client);
  EXPECT_THAT(listed.out, Not(HasSubstr("rogue")));
  EXPECT_THAT(listed.out, Not(HasSubstr("token-only")));

  // The token never shows in logs or status output.
  coordinator->Signal(SIGTERM);
  EXPECT_EQ(coordinator->Wait(std::chrono::seconds(15)), 0);
  for (const std::string& text : {coordinator->log(), good->log(), with_token.out, with_token.err,
                                  listed.out, with_env_token.err}) {
    EXPECT_THAT(text, Not(HasSubstr("s3cr3t-planted-token")));
  }
}

}  // namespace
}  // namespace kbisect
