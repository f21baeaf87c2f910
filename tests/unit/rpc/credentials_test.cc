// Copyright 2026 The kbisect Authors.
//
// The credential rules that need no certificates. Real TLS, mutual TLS and tokens are exercised
// end to end with openssl-made certificates in tests/integration/cluster_test.cc.
#include "common/rpc/credentials.h"

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

  ServerCredentialOptions key_only;
  key_only.key_file = "/etc/server.key";
  EXPECT_EQ(MakeServerCredentials(key_only).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kbisect
