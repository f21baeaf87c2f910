// Copyright 2026 The kbisect Authors.
//
// Cluster mode's security end to end, against the real `kbisect-coordinator` and
// `kbisect-worker` daemons on loopback: TLS, mutual TLS and bearer tokens with certificates made
// by the openssl CLI (missing, wrong-CA and expired certificates), the role matrix over every
// RPC, session ownership, oversized requests and secrets kept out of logs. cluster_test has the
// rest of cluster mode.
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

class ClusterSecurityTest : public ::kbisect::testing::ClusterFixture {
 protected:
  // Makes, with the openssl CLI, in tmp_/pki: a CA (ca.pem), a rogue CA, the coordinator's
  // certificate for 127.0.0.1 (server), and client certificates (each NAME.pem + NAME.key):
  // worker (OU=kbisect-worker, CN=worker), worker-b (OU=kbisect-worker, CN=worker-b), client
  // (OU=kbisect-client), norole (no OU), worker-rogue (the worker's key, signed by the rogue CA)
  // and expired (OU=kbisect-client, valid only on 2020-01-01); plus the files token and wrong.
  // Returns the directory, or "" after a failure was recorded.
  std::string MakePki() {
    const std::string d = tmp_.Join("pki");
    const std::string self_signed = "-days 2 -nodes -newkey rsa:2048 -x509";
    std::string script = absl::StrCat(
        "set -e; mkdir -p ", d, "; cd ", d, "; exec 2>openssl.log; ", "openssl req ", self_signed,
        " -keyout ca.key -out ca.pem -subj /CN=kbisect-ca; ", "openssl req ", self_signed,
        " -keyout rogue.key -out rogue.pem -subj /CN=rogue-ca; ",
        "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > san.ext; ",
        "openssl req -nodes -newkey rsa:2048 -keyout server.key -out server.csr -subj /CN=coord; ",
        "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
        "-extfile san.ext -out server.pem; ");
    for (const auto& [name, subject] : std::vector<std::pair<std::string, std::string>>{
             {"worker", "/OU=kbisect-worker/CN=worker"},
             {"worker-b", "/OU=kbisect-worker/CN=worker-b"},
             {"client", "/OU=kbisect-client/CN=nightly-ci"},
             {"norole", "/CN=kbisect-worker"}}) {
      absl::StrAppend(&script, "openssl req -nodes -newkey rsa:2048 -keyout ", name, ".key -out ",
                      name, ".csr -subj ", subject, "; ", "openssl x509 -req -in ", name,
                      ".csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -out ", name,
                      ".pem; ");
    }
    absl::StrAppend(
        &script,
        "openssl x509 -req -in worker.csr -CA rogue.pem -CAkey rogue.key -CAcreateserial -days 2 "
        "-out worker-rogue.pem; cp worker.key worker-rogue.key; ",
        // `openssl x509 -days` cannot go back in time; `openssl ca` takes explicit dates.
        "printf '[ca]\\ndefault_ca=k\\n[k]\\ndatabase=index.txt\\nnew_certs_dir=.\\n"
        "serial=serial\\ndefault_md=sha256\\npolicy=any\\nunique_subject=no\\n[any]\\n"
        "commonName=supplied\\norganizationalUnitName=optional\\n' > ca.cnf; ",
        ": > index.txt; echo 01 > serial; ",
        "openssl req -nodes -newkey rsa:2048 -keyout expired.key -out expired.csr "
        "-subj /OU=kbisect-client/CN=expired; ",
        "openssl ca -batch -config ca.cnf -cert ca.pem -keyfile ca.key -in expired.csr "
        "-out expired.pem -notext -startdate 20200101000000Z -enddate 20200102000000Z; ",
        "printf 's3cr3t-planted-token\\n' > token; printf 'wrong-token\\n' > wrong");
    CommandResult pki = RunShell(script);
    EXPECT_EQ(pki.exit_code, 0) << ReadFile(d + "/openssl.log");
    return pki.exit_code == 0 ? d : "";
  }

  // A TLS channel to the coordinator that trusts pki/ca.pem, showing the client certificate
  // pki/`cert`.pem (none when empty) and sending `token` (none when empty).
  std::shared_ptr<grpc::Channel> Channel(const std::string& pki, const std::string& cert,
                                         const std::string& token = "") {
    ClientCredentialOptions options;
    options.ca_file = pki + "/ca.pem";
    if (!cert.empty()) {
      options.cert_file = absl::StrCat(pki, "/", cert, ".pem");
      options.key_file = absl::StrCat(pki, "/", cert, ".key");
    }
    options.token = token;
    absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
        MakeChannelCredentials(options);
    EXPECT_TRUE(credentials.ok()) << credentials.status();
    grpc::ChannelArguments arguments;
    arguments.SetMaxSendMessageSize(-1);
    return grpc::CreateCustomChannel(address_, *credentials, arguments);
  }
};

// A call of one RPC with a minimal request; returns its status.
using Rpc = std::function<grpc::Status(const std::shared_ptr<grpc::Channel>&)>;

std::unique_ptr<grpc::ClientContext> Context() {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  return context;
}

// Every RPC of CoordinatorService with the status it returns once past authorization.
std::vector<std::tuple<std::string, Rpc, grpc::StatusCode>> ClientRpcs() {
  using Stub = v1::CoordinatorService::Stub;
  auto stub = [](const std::shared_ptr<grpc::Channel>& channel) {
    return v1::CoordinatorService::NewStub(channel);
  };
  return {
      {"SubmitJob",
       [=](const std::shared_ptr<grpc::Channel>& channel) {
         v1::SubmitJobRequest request;  // No repository: INVALID_ARGUMENT.
         v1::SubmitJobResponse response;
         return stub(channel)->SubmitJob(Context().get(), request, &response);
       },
       grpc::StatusCode::INVALID_ARGUMENT},
      {"GetJob",
       [=](const std::shared_ptr<grpc::Channel>& channel) {
         v1::GetJobRequest request;
         request.set_job_id("job-none");
         v1::GetJobResponse response;
         return stub(channel)->GetJob(Context().get(), request, &response);
       },
       grpc::StatusCode::NOT_FOUND},
      {"ListJobs",
       [=](const std::shared_ptr<grpc::Channel>& channel) {
         v1::ListJobsResponse response;
         return stub(channel)->ListJobs(Context().get(), v1::ListJobsRequest(), &response);
       },
       grpc::StatusCode::OK},
      {"WatchJob",
       [=](const std::shared_ptr<grpc::Channel>& channel) {
         v1::WatchJobRequest request;
         request.set_job_id("job-none");
         std::unique_ptr<grpc::ClientContext> context = Context();
         std::unique_ptr<Stub> client = stub(channel);
         auto reader = client->WatchJob(context.get(), request);
         v1::WatchJobResponse response;
         while (reader->Read(&response)) {
         }
         return reader->Finish();
       },
       grpc::StatusCode::NOT_FOUND},
      {"CancelJob",
       [=](const std::shared_ptr<grpc::Channel>& channel) {
         v1::CancelJobRequest request;
         request.set_job_id("job-none");
         v1::CancelJobResponse response;
         return stub(channel)->CancelJob(Context().get(), request, &response);
       },
       grpc::StatusCode::NOT_FOUND},
      {"ListWorkers",
       [=](const std::shared_ptr<grpc::Channel>& channel) {
         v1::ListWorkersResponse response;
         return stub(channel)->ListWorkers(Context().get(), v1::ListWorkersRequest(), &response);
       },
       grpc::StatusCode::OK},
  };
}

// Every RPC of WorkerService with the status it returns once past authorization.
std::vector<std::tuple<std::string, Rpc, grpc::StatusCode>> WorkerRpcs() {
  auto stub = [](const std::shared_ptr<grpc::Channel>& channel) {
    return v1::WorkerService::NewStub(channel);
  };
  return {
      {"OpenSession",
       [=](const std::shared_ptr<grpc::Channel>& channel) {
         v1::OpenSessionRequest request;
         request.set_worker_name("matrix");
         v1::OpenSessionResponse response;
         return stub(channel)->OpenSession(Context().get(), request, &response);
       },
       grpc::StatusCode::OK},
      {"Synchronize",
       [=](const std::shared_ptr<grpc::Channel>& channel) {
         v1::SynchronizeRequest request;
         request.set_session_id("session-none");
         v1::SynchronizeResponse response;
         return stub(channel)->Synchronize(Context().get(), request, &response);
       },
       grpc::StatusCode::NOT_FOUND},
      {"CompleteLease",
       [=](const std::shared_ptr<grpc::Channel>& channel) {
         v1::CompleteLeaseRequest request;
         request.set_session_id("session-none");
         v1::CompleteLeaseResponse response;
         return stub(channel)->CompleteLease(Context().get(), request, &response);
       },
       grpc::StatusCode::NOT_FOUND},
      {"CloseSession",
       [=](const std::shared_ptr<grpc::Channel>& channel) {
         v1::CloseSessionRequest request;
         request.set_session_id("session-none");
         v1::CloseSessionResponse response;
         return stub(channel)->CloseSession(Context().get(), request, &response);
       },
       grpc::StatusCode::OK},
  };
}

// grpc.health.v1.Health/Check with an empty request (the server's overall health).
grpc::Status HealthCheck(const std::shared_ptr<grpc::Channel>& channel) {
  grpc::GenericStub stub(channel);
  std::unique_ptr<grpc::ClientContext> context = Context();
  grpc::CompletionQueue queue;
  grpc::Slice empty(std::string{});
  const grpc::ByteBuffer request(&empty, 1);
  grpc::ByteBuffer response;
  grpc::Status status;
  auto call = stub.PrepareUnaryCall(context.get(), "/grpc.health.v1.Health/Check", request, &queue);
  call->StartCall();
  call->Finish(&response, &status, reinterpret_cast<void*>(1));
  void* tag = nullptr;
  bool ok = false;
  EXPECT_TRUE(queue.Next(&tag, &ok));
  queue.Shutdown();
  while (queue.Next(&tag, &ok)) {
  }
  return status;
}

// Mutual TLS and bearer tokens, with certificates made by the openssl CLI.
TEST_F(ClusterSecurityTest, TlsClientCertificatesAndTokens) {
  if (RunShell("command -v openssl").exit_code != 0) GTEST_SKIP() << "openssl is not installed";
  const std::string d = MakePki();
  ASSERT_FALSE(d.empty());

  // A token or a client CA without a certificate of its own is refused up front, and so is a
  // token without a client CA (workers would have no way in).
  CommandResult half = RunShell(absl::StrCat(Bin("kbisect-coordinator"), " --token-file ", d,
                                             "/token --state-dir ", tmp_.Join("state")));
  EXPECT_EQ(half.exit_code, 2);
  EXPECT_THAT(half.err, HasSubstr("need TLS"));
  CommandResult no_ca = RunShell(
      absl::StrCat(Bin("kbisect-coordinator"), " --tls-cert ", d, "/server.pem --tls-key ", d,
                   "/server.key", " --token-file ", d, "/token --state-dir ", tmp_.Join("state")));
  EXPECT_EQ(no_ca.exit_code, 2);
  EXPECT_THAT(no_ca.err, HasSubstr("give --client-ca too"));
  // TLS without client authentication is refused off loopback like plaintext.
  CommandResult open_tls = RunShell(absl::StrCat(
      Bin("kbisect-coordinator"), " --listen 0.0.0.0:0 --tls-cert ", d, "/server.pem --tls-key ", d,
      "/server.key", " --state-dir ", tmp_.Join("state")));
  EXPECT_EQ(open_tls.exit_code, 2);
  EXPECT_THAT(open_tls.err, HasSubstr("without client authentication"));

  std::unique_ptr<Process> coordinator = StartCoordinator(
      absl::StrCat("--tls-cert ", d, "/server.pem --tls-key ", d, "/server.key --client-ca ", d,
                   "/ca.pem --token-file ", d, "/token"));
  const std::string tls = absl::StrCat(" --tls-ca ", d, "/ca.pem");

  // Clients: the token or a client certificate of the CA; nothing else.
  CommandResult with_token = Kbisect("workers --json" + tls + " --token-file " + d + "/token");
  EXPECT_EQ(with_token.exit_code, 0) << with_token.err;
  CommandResult with_env_token = Kbisect(
      "status" + tls + "; KBISECT_TOKEN=s3cr3t-planted-token KBISECT_COORDINATOR=" + address_ +
      " " + Bin("kbisect") + " status" + tls);
  EXPECT_EQ(with_env_token.exit_code, 0) << with_env_token.err;
  EXPECT_THAT(with_env_token.err, HasSubstr("refused the credentials"));  // The first, tokenless.
  CommandResult with_cert = Kbisect(
      absl::StrCat("workers", tls, " --tls-cert ", d, "/client.pem --tls-key ", d, "/client.key"));
  EXPECT_EQ(with_cert.exit_code, 0) << with_cert.err;
  CommandResult wrong_token = Kbisect("workers" + tls + " --token-file " + d + "/wrong");
  EXPECT_EQ(wrong_token.exit_code, 1);
  EXPECT_THAT(wrong_token.err, HasSubstr("refused the credentials"));
  CommandResult rogue_cert = Kbisect(absl::StrCat(
      "workers", tls, " --tls-cert ", d, "/worker-rogue.pem --tls-key ", d, "/worker.key"));
  EXPECT_EQ(rogue_cert.exit_code, 1);
  CommandResult worker_cert = Kbisect(
      absl::StrCat("workers", tls, " --tls-cert ", d, "/worker.pem --tls-key ", d, "/worker.key"));
  EXPECT_EQ(worker_cert.exit_code, 1) << "a worker's certificate cannot call client RPCs";
  EXPECT_THAT(worker_cert.err, HasSubstr("denied the request"));
  EXPECT_THAT(worker_cert.err, HasSubstr("OU=kbisect-client"));
  CommandResult plaintext = Kbisect("workers");
  EXPECT_EQ(plaintext.exit_code, 1);
  EXPECT_THAT(plaintext.err, HasSubstr("cannot reach the coordinator"));

  // Workers: a worker certificate of the CA registers; a rogue certificate, a client's
  // certificate, one without a role, or a mere token do not.
  auto cert = [&](const std::string& name) {
    return absl::StrCat(tls, " --tls-cert ", d, "/", name, ".pem --tls-key ", d, "/", name, ".key");
  };
  std::unique_ptr<Process> good = StartWorker("good", 0, "0.01", cert("worker"));
  std::unique_ptr<Process> rogue = StartWorker("rogue", 1, "0.01", cert("worker-rogue"));
  std::unique_ptr<Process> as_client = StartWorker("as-client", 2, "0.01", cert("client"));
  std::unique_ptr<Process> no_role = StartWorker("no-role", 3, "0.01", cert("norole"));
  std::unique_ptr<Process> token_only =
      StartWorker("token-only", 4, "0.01", absl::StrCat(tls, " --token-file ", d, "/token"));
  const std::string client = tls + " --token-file " + d + "/token";
  ASSERT_TRUE(WaitFor(
      [&] { return Kbisect("workers --json" + client).out.find("\"good\"") != std::string::npos; },
      std::chrono::seconds(15)))
      << good->log();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  CommandResult listed = Kbisect("workers --json" + client);
  for (const char* refused : {"rogue", "as-client", "no-role", "token-only"}) {
    EXPECT_THAT(listed.out, Not(HasSubstr(refused)));
  }
  // A token alone is refused by the worker itself, before it dials.
  EXPECT_EQ(token_only->Wait(std::chrono::seconds(5)), 2);
  EXPECT_THAT(token_only->log(), HasSubstr("--token-file cannot authenticate a worker"));

  // The token and the keys never show in logs or status output.
  coordinator->Signal(SIGTERM);
  EXPECT_EQ(coordinator->Wait(std::chrono::seconds(15)), 0);
  const std::string server_key = ReadFile(d + "/server.key");
  const std::string worker_key = ReadFile(d + "/worker.key");
  auto key_body = [](const std::string& pem) {
    return pem.substr(pem.find('\n') + 1, 64);  // The first base64 line.
  };
  for (const std::string& text :
       {coordinator->log(), good->log(), no_role->log(), token_only->log(), with_token.out,
        with_token.err, listed.out, with_env_token.err, wrong_token.err}) {
    EXPECT_THAT(text, Not(HasSubstr("s3cr3t-planted-token")));
    EXPECT_THAT(text, Not(HasSubstr(key_body(server_key))));
    EXPECT_THAT(text, Not(HasSubstr(key_body(worker_key))));
  }
}

// The role matrix: every RPC of both services and the health check, for each kind of caller,
// with the exact status code. "Past authorization" shows as the code the coordinator itself
// gives the minimal request (NOT_FOUND for an unknown job, INVALID_ARGUMENT for an empty spec).
TEST_F(ClusterSecurityTest, RoleMatrixOverEveryRpc) {
  if (RunShell("command -v openssl").exit_code != 0) GTEST_SKIP() << "openssl is not installed";
  const std::string d = MakePki();
  ASSERT_FALSE(d.empty());
  std::unique_ptr<Process> coordinator = StartCoordinator(
      absl::StrCat("--tls-cert ", d, "/server.pem --tls-key ", d, "/server.key --client-ca ", d,
                   "/ca.pem --token-file ", d, "/token"));
  const std::string token = "s3cr3t-planted-token";
  enum class Role { kNone, kClient, kWorker };
  struct Caller {
    std::string name;
    std::shared_ptr<grpc::Channel> channel;
    Role may_call;  // Which service it may call (kNone: neither).
    bool authenticated;
  };
  const std::vector<Caller> callers = {
      {"no credentials", Channel(d, ""), Role::kNone, false},
      {"wrong token", Channel(d, "", "wrong-token"), Role::kNone, false},
      {"token", Channel(d, "", token), Role::kClient, true},
      {"client certificate", Channel(d, "client"), Role::kClient, true},
      {"worker certificate", Channel(d, "worker"), Role::kWorker, true},
      {"certificate without a role", Channel(d, "norole"), Role::kNone, true},
  };
  int cells = 0;
  for (const Caller& caller : callers) {
    for (const auto& [service, rpcs] :
         std::vector<std::pair<Role, std::vector<std::tuple<std::string, Rpc, grpc::StatusCode>>>>{
             {Role::kClient, ClientRpcs()}, {Role::kWorker, WorkerRpcs()}}) {
      for (const auto& [method, rpc, past_auth] : rpcs) {
        const grpc::StatusCode expected = !caller.authenticated ? grpc::StatusCode::UNAUTHENTICATED
                                          : caller.may_call == service
                                              ? past_auth
                                              : grpc::StatusCode::PERMISSION_DENIED;
        const grpc::Status status = rpc(caller.channel);
        EXPECT_EQ(status.error_code(), expected)
            << caller.name << " calling " << method << ": " << status.error_message();
        ++cells;
      }
    }
    const grpc::Status health = HealthCheck(caller.channel);
    EXPECT_EQ(health.error_code(),
              caller.authenticated ? grpc::StatusCode::OK : grpc::StatusCode::UNAUTHENTICATED)
        << caller.name << " calling Health/Check: " << health.error_message();
  }
  EXPECT_EQ(cells, 6 * 10);

  // The refusals say what to do.
  v1::OpenSessionRequest open;
  v1::OpenSessionResponse opened;
  grpc::Status no_role =
      v1::WorkerService::NewStub(Channel(d, "norole"))->OpenSession(Context().get(), open, &opened);
  EXPECT_THAT(no_role.error_message(), HasSubstr("OU=kbisect-worker"));
  grpc::Status token_worker = v1::WorkerService::NewStub(Channel(d, "", token))
                                  ->OpenSession(Context().get(), open, &opened);
  EXPECT_THAT(token_worker.error_message(), HasSubstr("not a token"));

  // An oversized request (over the default 16 MiB) is refused, whoever sends it.
  v1::SubmitJobRequest huge;
  huge.mutable_spec()->set_repository(std::string(17 << 20, 'x'));
  v1::SubmitJobResponse submitted;
  grpc::Status oversized = v1::CoordinatorService::NewStub(Channel(d, "client"))
                               ->SubmitJob(Context().get(), huge, &submitted);
  EXPECT_EQ(oversized.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << oversized.error_message();

  coordinator->Signal(SIGTERM);
  EXPECT_EQ(coordinator->Wait(std::chrono::seconds(15)), 0);
  EXPECT_THAT(coordinator->log(), Not(HasSubstr(token)));
}

// With mutual TLS required (no token): a missing client certificate, one of another CA and an
// expired one all fail the handshake; a valid one works. --max-message-bytes is enforced.
TEST_F(ClusterSecurityTest, MissingWrongCaAndExpiredClientCertificatesAreRejected) {
  if (RunShell("command -v openssl").exit_code != 0) GTEST_SKIP() << "openssl is not installed";
  const std::string d = MakePki();
  ASSERT_FALSE(d.empty());
  std::unique_ptr<Process> coordinator = StartCoordinator(
      absl::StrCat("--tls-cert ", d, "/server.pem --tls-key ", d, "/server.key --client-ca ", d,
                   "/ca.pem --max-message-bytes 65536"));
  auto list_jobs = [&](const std::string& cert) {
    v1::ListJobsResponse response;
    return v1::CoordinatorService::NewStub(Channel(d, cert))
        ->ListJobs(Context().get(), v1::ListJobsRequest(), &response);
  };
  EXPECT_EQ(list_jobs("client").error_code(), grpc::StatusCode::OK);
  for (const char* cert : {"", "worker-rogue", "expired"}) {
    const grpc::Status status = list_jobs(cert);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
        << "certificate '" << cert << "': " << status.error_message();
  }
  // The same for a worker's call.
  v1::OpenSessionRequest open;
  open.set_worker_name("rogue");
  v1::OpenSessionResponse opened;
  EXPECT_EQ(v1::WorkerService::NewStub(Channel(d, "worker-rogue"))
                ->OpenSession(Context().get(), open, &opened)
                .error_code(),
            grpc::StatusCode::UNAVAILABLE);

  // 64 KiB accepted at most: a larger request is RESOURCE_EXHAUSTED, a smaller one gets through.
  v1::SubmitJobRequest big;
  big.mutable_spec()->set_repository(std::string(70000, 'x'));
  v1::SubmitJobResponse submitted;
  grpc::Status oversized = v1::CoordinatorService::NewStub(Channel(d, "client"))
                               ->SubmitJob(Context().get(), big, &submitted);
  EXPECT_EQ(oversized.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << oversized.error_message();
  v1::SubmitJobRequest small;
  small.mutable_spec()->set_repository(std::string(60000, 'x'));  // No GOOD: INVALID_ARGUMENT.
  EXPECT_EQ(v1::CoordinatorService::NewStub(Channel(d, "client"))
                ->SubmitJob(Context().get(), small, &submitted)
                .error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

// A worker session belongs to the certificate that opened it: another worker certificate can
// neither heartbeat on it, report on its leases nor close it.
TEST_F(ClusterSecurityTest, AWorkerCannotUseAnotherWorkersSession) {
  if (RunShell("command -v openssl").exit_code != 0) GTEST_SKIP() << "openssl is not installed";
  const std::string d = MakePki();
  ASSERT_FALSE(d.empty());
  std::unique_ptr<Process> coordinator = StartCoordinator(absl::StrCat(
      "--tls-cert ", d, "/server.pem --tls-key ", d, "/server.key --client-ca ", d, "/ca.pem"));
  std::unique_ptr<v1::WorkerService::Stub> a = v1::WorkerService::NewStub(Channel(d, "worker"));
  std::unique_ptr<v1::WorkerService::Stub> b = v1::WorkerService::NewStub(Channel(d, "worker-b"));
  v1::OpenSessionRequest open;
  open.set_worker_name("node-a/gpu0");
  v1::OpenSessionResponse session;
  ASSERT_TRUE(a->OpenSession(Context().get(), open, &session).ok());

  v1::SynchronizeRequest sync;
  sync.set_session_id(session.session_id());
  v1::SynchronizeResponse synced;
  v1::CompleteLeaseRequest complete;
  complete.set_session_id(session.session_id());
  complete.set_lease_id("lease-x");
  v1::CompleteLeaseResponse completed;
  v1::CloseSessionRequest close;
  close.set_session_id(session.session_id());
  v1::CloseSessionResponse closed;
  EXPECT_EQ(b->Synchronize(Context().get(), sync, &synced).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(b->CompleteLease(Context().get(), complete, &completed).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(b->CloseSession(Context().get(), close, &closed).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // Its owner still can.
  EXPECT_EQ(a->Synchronize(Context().get(), sync, &synced).error_code(), grpc::StatusCode::OK);
  EXPECT_EQ(a->CompleteLease(Context().get(), complete, &completed).error_code(),
            grpc::StatusCode::OK);
  EXPECT_FALSE(completed.accepted());
  EXPECT_EQ(completed.reason(), "unknown lease");
  EXPECT_EQ(a->CloseSession(Context().get(), close, &closed).error_code(), grpc::StatusCode::OK);
}

}  // namespace
}  // namespace kbisect
