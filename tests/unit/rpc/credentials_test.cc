// Copyright 2026 The kbisect Authors.
//
// The credential rules that need no certificates. Real TLS, mutual TLS and tokens are exercised
// end to end with openssl-made certificates in tests/integration/cluster_test.cc.
#include "common/rpc/credentials.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace {

using ::kbisect::testing::TempDir;
using ::kbisect::testing::WriteFile;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kSecret[] = "planted-secret-token";

TEST(IsLoopbackAddressTest, OnlyThisMachine) {
  for (const char* address : {"127.0.0.1:7070", "127.1.2.3:0", "localhost:7070", "LOCALHOST:1",
                              "[::1]:7070", "unix:/tmp/kbisect.sock"}) {
    EXPECT_TRUE(IsLoopbackAddress(address)) << address;
  }
  for (const char* address : {"0.0.0.0:7070", "[::]:7070", ":7070", "10.0.0.5:7070",
                              "coordinator.kbisect.svc:7070", "[fe80::1]:7070"}) {
    EXPECT_FALSE(IsLoopbackAddress(address)) << address;
  }
}

TEST(ReadTokenFileTest, TrimsTheNewlineAndRefusesBlankFiles) {
  TempDir tmp;
  WriteFile(tmp.Join("token"), std::string(kSecret) + "\n");
  absl::StatusOr<std::string> token = ReadTokenFile(tmp.Join("token"));
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(*token, kSecret);
  WriteFile(tmp.Join("blank"), " \n");
  EXPECT_EQ(ReadTokenFile(tmp.Join("blank")).status().code(), absl::StatusCode::kInvalidArgument);
  absl::Status missing = ReadTokenFile(tmp.Join("missing")).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.message(), HasSubstr(tmp.Join("missing")));
}

TEST(MakeChannelCredentialsTest, PlaintextByDefaultAndNoTokenWithoutTls) {
  EXPECT_TRUE(MakeChannelCredentials({}).ok());
  ClientCredentialOptions token_only;
  token_only.token = kSecret;
  absl::Status status = MakeChannelCredentials(token_only).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("--tls-ca"));
  EXPECT_THAT(status.message(), Not(HasSubstr(kSecret)));
}

TEST(MakeChannelCredentialsTest, CertificateNeedsItsKeyAndFilesMustExist) {
  ClientCredentialOptions cert_only;
  cert_only.cert_file = "/nonexistent/worker.pem";
  EXPECT_EQ(MakeChannelCredentials(cert_only).status().code(), absl::StatusCode::kInvalidArgument);
  ClientCredentialOptions missing_ca;
  missing_ca.ca_file = "/nonexistent/ca.pem";
  absl::Status status = MakeChannelCredentials(missing_ca).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("/nonexistent/ca.pem"));
}

TEST(MakeServerCredentialsTest, NullWithoutACertificateAndNoSecretsInPlaintext) {
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> none = MakeServerCredentials({});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, nullptr);

  ServerCredentialOptions token_only;
  token_only.token = kSecret;
  absl::Status status = MakeServerCredentials(token_only).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("need TLS"));
  EXPECT_THAT(status.message(), Not(HasSubstr(kSecret)));

  ServerCredentialOptions ca_only;
  ca_only.client_ca_file = "/etc/ca.pem";
  EXPECT_EQ(MakeServerCredentials(ca_only).status().code(), absl::StatusCode::kInvalidArgument);

  // A token without a client CA would leave workers no way in.
  ServerCredentialOptions token_without_ca;
  token_without_ca.cert_file = "/etc/server.pem";
  token_without_ca.key_file = "/etc/server.key";
  token_without_ca.token = kSecret;
  status = MakeServerCredentials(token_without_ca).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("--client-ca"));
  EXPECT_THAT(status.message(), Not(HasSubstr(kSecret)));

  ServerCredentialOptions key_only;
  key_only.key_file = "/etc/server.key";
  EXPECT_EQ(MakeServerCredentials(key_only).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RolesFromSubjectTest, ReadsTheOrganizationalUnits) {
  CallerRoles worker = RolesFromSubject("CN=node-3/gpu0,OU=kbisect-worker,O=Example Corp");
  EXPECT_TRUE(worker.worker);
  EXPECT_FALSE(worker.client);
  CallerRoles client = RolesFromSubject("CN=nightly,ou=kbisect-client");
  EXPECT_FALSE(client.worker);
  EXPECT_TRUE(client.client);
  CallerRoles both = RolesFromSubject("CN=ops,OU=kbisect-client+OU=kbisect-worker");
  EXPECT_TRUE(both.worker);
  EXPECT_TRUE(both.client);
  // By OID, and with escaped characters.
  EXPECT_TRUE(RolesFromSubject("2.5.4.11=kbisect-worker,CN=x").worker);
  EXPECT_TRUE(RolesFromSubject("CN=a\\,OU=kbisect-client,OU=kbisect\\2Dworker").worker);
  EXPECT_FALSE(RolesFromSubject("CN=a\\,OU=kbisect-client").client) << "the OU is in the CN";
  for (const char* subject : {"", "CN=kbisect-worker", "CN=w,OU=kbisect-workers",
                              "CN=w,O=kbisect-worker", "CN=w,OU=Kbisect-Worker"}) {
    CallerRoles none = RolesFromSubject(subject);
    EXPECT_FALSE(none.worker || none.client) << subject;
  }
}

// The role matrix: every kind of caller against each service.
TEST(AuthorizeCallTest, RoleMatrix) {
  constexpr char kWorkerRpc[] = "/kbisect.v1.WorkerService/CompleteLease";
  constexpr char kClientRpc[] = "/kbisect.v1.CoordinatorService/SubmitJob";
  constexpr char kHealth[] = "/grpc.health.v1.Health/Check";
  CallerCredentials nobody;
  CallerCredentials token;
  token.valid_token = true;
  CallerCredentials worker;
  worker.has_certificate = true;
  worker.certificate_roles.worker = true;
  CallerCredentials client;
  client.has_certificate = true;
  client.certificate_roles.client = true;
  CallerCredentials no_role;
  no_role.has_certificate = true;
  CallerCredentials no_role_with_token = no_role;
  no_role_with_token.valid_token = true;
  const absl::StatusCode ok = absl::StatusCode::kOk;
  const absl::StatusCode unauthenticated = absl::StatusCode::kUnauthenticated;
  const absl::StatusCode denied = absl::StatusCode::kPermissionDenied;
  struct Case {
    const char* name;
    CallerCredentials caller;
    absl::StatusCode worker_rpc, client_rpc, health;
  };
  for (const Case& c : std::vector<Case>{
           {"nobody", nobody, unauthenticated, unauthenticated, unauthenticated},
           {"token", token, denied, ok, ok},
           {"worker certificate", worker, ok, denied, ok},
           {"client certificate", client, denied, ok, ok},
           {"certificate without a role", no_role, denied, denied, ok},
           {"certificate without a role, and the token", no_role_with_token, denied, ok, ok},
       }) {
    EXPECT_EQ(AuthorizeCall(c.caller, kWorkerRpc, true).code(), c.worker_rpc) << c.name;
    EXPECT_EQ(AuthorizeCall(c.caller, kClientRpc, true).code(), c.client_rpc) << c.name;
    EXPECT_EQ(AuthorizeCall(c.caller, kHealth, true).code(), c.health) << c.name;
  }
  // The messages say what to set.
  EXPECT_THAT(AuthorizeCall(no_role, kWorkerRpc, true).message(), HasSubstr("OU=kbisect-worker"));
  EXPECT_THAT(AuthorizeCall(no_role, kClientRpc, false).message(), HasSubstr("OU=kbisect-client"));
  EXPECT_THAT(AuthorizeCall(token, kWorkerRpc, true).message(), HasSubstr("not a token"));
  EXPECT_THAT(AuthorizeCall(worker, kClientRpc, true).message(), HasSubstr("bearer token"));
  EXPECT_THAT(AuthorizeCall(nobody, kClientRpc, false).message(), Not(HasSubstr("bearer token")));
}

}  // namespace
}  // namespace kbisect
