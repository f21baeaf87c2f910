// Copyright 2026 The kbisect Authors.
#include "worker/grpc_coordinator_client.h"

#include <chrono>
#include <utility>

#include "common/rpc/status_conversion.h"

namespace kbisect {
namespace {

void SetDeadline(grpc::ClientContext* context, absl::Duration timeout) {
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::milliseconds(absl::ToInt64Milliseconds(timeout)));
}

// Makes one unary call of `method` with a fresh context whose deadline is `timeout` away.
template <typename Response, typename Request, typename Method>
absl::StatusOr<Response> Call(v1::WorkerService::Stub* stub, Method method, const Request& request,
                              absl::Duration timeout) {
  grpc::ClientContext context;
  SetDeadline(&context, timeout);
  Response response;
  grpc::Status status = (stub->*method)(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response;
}

}  // namespace

GrpcCoordinatorClient::GrpcCoordinatorClient(std::shared_ptr<grpc::Channel> channel)
    : stub_(v1::WorkerService::NewStub(std::move(channel))) {}

absl::StatusOr<v1::OpenSessionResponse> GrpcCoordinatorClient::OpenSession(
    const v1::OpenSessionRequest& request, absl::Duration timeout) {
  return Call<v1::OpenSessionResponse>(stub_.get(), &v1::WorkerService::Stub::OpenSession, request,
                                       timeout);
}

absl::StatusOr<v1::SynchronizeResponse> GrpcCoordinatorClient::Synchronize(
    const v1::SynchronizeRequest& request, absl::Duration timeout) {
  grpc::ClientContext context;
  SetDeadline(&context, timeout);
  {
    absl::MutexLock lock(&mu_);
    if (cancel_next_poll_) {
      cancel_next_poll_ = false;
      return absl::CancelledError("the long poll was woken before it started");
    }
    poll_context_ = &context;
  }
  v1::SynchronizeResponse response;
  grpc::Status status = stub_->Synchronize(&context, request, &response);
  {
    absl::MutexLock lock(&mu_);
    poll_context_ = nullptr;
  }
  if (!status.ok()) return FromGrpcStatus(status);
  return response;
}

absl::StatusOr<v1::CompleteLeaseResponse> GrpcCoordinatorClient::CompleteLease(
    const v1::CompleteLeaseRequest& request, absl::Duration timeout) {
  return Call<v1::CompleteLeaseResponse>(stub_.get(), &v1::WorkerService::Stub::CompleteLease,
                                         request, timeout);
}

absl::StatusOr<v1::CloseSessionResponse> GrpcCoordinatorClient::CloseSession(
    const v1::CloseSessionRequest& request, absl::Duration timeout) {
  return Call<v1::CloseSessionResponse>(stub_.get(), &v1::WorkerService::Stub::CloseSession,
                                        request, timeout);
}

void GrpcCoordinatorClient::TryCancel() {
  absl::MutexLock lock(&mu_);
  if (poll_context_ != nullptr) {
    poll_context_->TryCancel();
  } else {
    cancel_next_poll_ = true;
  }
}

}  // namespace kbisect
