// Copyright 2026 The kbisect Authors.
//
// HealthService over a real loopback gRPC server and the generated grpc.health.v1 stub: Check
// per name (NOT_FOUND for others), Watch streaming each change, and Shutdown ending every Watch
// (UNAVAILABLE) so that a watcher cannot hold a graceful shutdown. The daemon's ports, seen by
// another gRPC implementation, are in tests/integration/health_reflection_test.py.
#include "coordinator/health_service.h"

#include <memory>
#include <string>
#include <vector>

#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using ::grpc::health::v1::Health;
using ::grpc::health::v1::HealthCheckRequest;
using ::grpc::health::v1::HealthCheckResponse;

class HealthServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&health_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_NE(port, 0);
    stub_ = Health::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                                grpc::InsecureChannelCredentials()));
  }

  void TearDown() override {
    health_.Shutdown();
    server_->Shutdown();
  }

  // The status Check answers for `service`; NOT_FOUND and other failures as -code.
  int Check(const std::string& service) {
    grpc::ClientContext context;
    HealthCheckRequest request;
    request.set_service(service);
    HealthCheckResponse response;
    grpc::Status status = stub_->Check(&context, request, &response);
    if (!status.ok()) return -status.error_code();
    return response.status();
  }

  std::unique_ptr<grpc::ClientReader<HealthCheckResponse>> Watch(grpc::ClientContext* context,
                                                                 const std::string& service) {
    HealthCheckRequest request;
    request.set_service(service);
    return stub_->Watch(context, request);
  }

  // The next status the watch streams, or -1 when the stream ended.
  static int Next(grpc::ClientReader<HealthCheckResponse>* reader) {
    HealthCheckResponse response;
    if (!reader->Read(&response)) return -1;
    return response.status();
  }

  const std::vector<std::string> names_ = {"", "kbisect.v1.CoordinatorService",
                                           "kbisect.v1.WorkerService"};
  HealthService health_{names_};
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Health::Stub> stub_;
};

TEST_F(HealthServiceTest, CheckAnswersForEachNameAndNotFoundForOthers) {
  for (const std::string& name : names_) {
    EXPECT_EQ(Check(name), HealthCheckResponse::SERVING) << "'" << name << "'";
  }
  EXPECT_EQ(Check("kbisect.v1.NoSuchService"), -grpc::StatusCode::NOT_FOUND);

  health_.SetServing(false);
  for (const std::string& name : names_) {
    EXPECT_EQ(Check(name), HealthCheckResponse::NOT_SERVING) << "'" << name << "'";
  }
  EXPECT_EQ(Check("kbisect.v1.NoSuchService"), -grpc::StatusCode::NOT_FOUND);

  health_.SetServing(true);
  EXPECT_EQ(Check("kbisect.v1.WorkerService"), HealthCheckResponse::SERVING);
}

TEST_F(HealthServiceTest, WatchStreamsEachChangeAndShutdownEndsIt) {
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReader<HealthCheckResponse>> watch =
      Watch(&context, "kbisect.v1.CoordinatorService");
  EXPECT_EQ(Next(watch.get()), HealthCheckResponse::SERVING);
  health_.SetServing(false);
  EXPECT_EQ(Next(watch.get()), HealthCheckResponse::NOT_SERVING);
  health_.SetServing(true);
  EXPECT_EQ(Next(watch.get()), HealthCheckResponse::SERVING);

  // Shutdown: NOT_SERVING, then the stream ends while the server still runs.
  health_.Shutdown();
  EXPECT_EQ(Next(watch.get()), HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(Next(watch.get()), -1);
  grpc::Status status = watch->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();

  // For good: SetServing cannot bring a shut-down service back.
  health_.SetServing(true);
  EXPECT_EQ(Check(""), HealthCheckResponse::NOT_SERVING);
}

TEST_F(HealthServiceTest, WatchOfAnUnknownNameStreamsServiceUnknownUntilShutdown) {
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReader<HealthCheckResponse>> watch =
      Watch(&context, "kbisect.v1.NoSuchService");
  EXPECT_EQ(Next(watch.get()), HealthCheckResponse::SERVICE_UNKNOWN);
  health_.SetServing(false);  // Not its status: nothing is sent.
  health_.Shutdown();
  EXPECT_EQ(Next(watch.get()), -1);
  EXPECT_EQ(watch->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(HealthServiceTest, ACancelledWatchLetsTheServerShutDown) {
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReader<HealthCheckResponse>> watch = Watch(&context, "");
  EXPECT_EQ(Next(watch.get()), HealthCheckResponse::SERVING);
  context.TryCancel();
  EXPECT_EQ(watch->Finish().error_code(), grpc::StatusCode::CANCELLED);
  // Without a deadline, Shutdown waits for every handler: it returns once Watch has noticed.
  server_->Shutdown();
}

}  // namespace
}  // namespace kbisect
