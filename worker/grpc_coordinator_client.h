// Copyright 2026 The kbisect Authors.
//
// The CoordinatorClient that calls a coordinator's WorkerService over a gRPC channel.
#ifndef KBISECT_WORKER_GRPC_COORDINATOR_CLIENT_H_
#define KBISECT_WORKER_GRPC_COORDINATOR_CLIENT_H_

#include <memory>

#include "absl/base/thread_annotations.h"
#include "common/sync/mutex.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "kbisect/v1/kbisect.grpc.pb.h"
#include "worker/coordinator_client.h"

namespace kbisect {

// Each call gets its own grpc::ClientContext with the call's timeout as its deadline; gRPC
// statuses become absl statuses with the same code (common/rpc/status_conversion.h). Thread-safe.
class GrpcCoordinatorClient : public CoordinatorClient {
 public:
  // `channel` connects to the coordinator (plaintext or TLS, with call credentials if any).
  explicit GrpcCoordinatorClient(std::shared_ptr<grpc::Channel> channel);

  GrpcCoordinatorClient(const GrpcCoordinatorClient&) = delete;
  GrpcCoordinatorClient& operator=(const GrpcCoordinatorClient&) = delete;

  absl::StatusOr<v1::OpenSessionResponse> OpenSession(const v1::OpenSessionRequest& request,
                                                      absl::Duration timeout) override;
  absl::StatusOr<v1::SynchronizeResponse> Synchronize(const v1::SynchronizeRequest& request,
                                                      absl::Duration timeout) override;
  absl::StatusOr<v1::CompleteLeaseResponse> CompleteLease(const v1::CompleteLeaseRequest& request,
                                                          absl::Duration timeout) override;
  absl::StatusOr<v1::CloseSessionResponse> CloseSession(const v1::CloseSessionRequest& request,
                                                        absl::Duration timeout) override;
  void TryCancel() override ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<v1::WorkerService::Stub> stub_;

  kbisect::Mutex mu_;
  // The context of the Synchronize call in flight, or null.
  grpc::ClientContext* poll_context_ ABSL_GUARDED_BY(mu_) = nullptr;
  // TryCancel() came while no Synchronize was in flight: cancel the next one.
  bool cancel_next_poll_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace kbisect

#endif  // KBISECT_WORKER_GRPC_COORDINATOR_CLIENT_H_
