// Copyright 2026 The kbisect Authors.
#include "worker/grpc_coordinator_client.h"

#include <chrono>
#include <utility>

#include "common/rpc/status_conversion.h"

namespace kbisect {
namespace {

// Calls wait for the channel to connect (up to their deadline) rather than fail at once while it
// is reconnecting: without this, every call made while gRPC waits between connection attempts
// fails, and a restarted coordinator was seen by its workers only after 11 s.
void SetDeadline(grpc::ClientContext* context, absl::Duration timeout) {
  context->set_wait_for_ready(true);
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::milliseconds(absl::ToInt64Milliseconds(timeout)));
}

// After a call found the coordinator unreachable, gRPC would wait out its own reconnect backoff
// before it tries to connect again: a worker would stay away for seconds after a coordinator
// restart. Resetting it makes the next call connect at once.
void AfterFailure(grpc::Channel* channel, const grpc::Status& status) {
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
      status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    grpc::experimental::ChannelResetConnectionBackoff(channel);
  }
}

// Makes one unary call of `method` with a fresh context whose deadline is `timeout` away.
template <typename Response, typename Request, typename Method>
absl::StatusOr<Response> Call(grpc::Channel* channel, v1::WorkerService::Stub* stub, Method method,
                              const Request& request, absl::Duration timeout) {
  grpc::ClientContext context;
  SetDeadline(&context, timeout);
  Response response;
  grpc::Status status = (stub->*method)(&context, request, &response);
  if (!status.ok()) {
    AfterFailure(channel, status);
    return FromGrpcStatus(status);
  }
  return response;
}

}  // namespace

GrpcCoordinatorClient::GrpcCoordinatorClient(std::shared_ptr<grpc::Channel> channel)
    : channel_(std::move(channel)), stub_(v1::WorkerService::NewStub(channel_)) {}

absl::StatusOr<v1::OpenSessionResponse> GrpcCoordinatorClient::OpenSession(
    const v1::OpenSessionRequest& request, absl::Duration timeout) {
  return Call<v1::OpenSessionResponse>(channel_.get(), stub_.get(),
                                       &v1::WorkerService::Stub::OpenSession, request, timeout);
}

absl::StatusOr<v1::SynchronizeResponse> GrpcCoordinatorClient::Synchronize(
    const v1::SynchronizeRequest& request, absl::Duration timeout) {
  grpc::ClientContext context;
  SetDeadline(&context, timeout);
  {
    kbisect::MutexLock lock(&mu_);
    if (cancel_next_poll_) {
      cancel_next_poll_ = false;
      return absl::CancelledError("the long poll was woken before it started");
    }
    poll_context_ = &context;
  }
  v1::SynchronizeResponse response;
  grpc::Status status = stub_->Synchronize(&context, request, &response);
  {
    kbisect::MutexLock lock(&mu_);
    poll_context_ = nullptr;
  }
  if (!status.ok()) {
    AfterFailure(channel_.get(), status);
    return FromGrpcStatus(status);
  }
  return response;
}

absl::StatusOr<v1::CompleteLeaseResponse> GrpcCoordinatorClient::CompleteLease(
    const v1::CompleteLeaseRequest& request, absl::Duration timeout) {
  return Call<v1::CompleteLeaseResponse>(channel_.get(), stub_.get(),
                                         &v1::WorkerService::Stub::CompleteLease, request, timeout);
}

absl::StatusOr<v1::CloseSessionResponse> GrpcCoordinatorClient::CloseSession(
    const v1::CloseSessionRequest& request, absl::Duration timeout) {
  return Call<v1::CloseSessionResponse>(channel_.get(), stub_.get(),
                                        &v1::WorkerService::Stub::CloseSession, request, timeout);
}

void GrpcCoordinatorClient::TryCancel() {
  kbisect::MutexLock lock(&mu_);
  if (poll_context_ != nullptr) {
    poll_context_->TryCancel();
  } else {
    cancel_next_poll_ = true;
  }
}

}  // namespace kbisect
