// Copyright 2026 The kbisect Authors.
//
// Conversions between absl::Status (used inside kbisect) and grpc::Status (on the wire). The
// numeric codes of both are the canonical gRPC codes, so the mapping is exact.
#ifndef KBISECT_COMMON_RPC_STATUS_CONVERSION_H_
#define KBISECT_COMMON_RPC_STATUS_CONVERSION_H_

#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace kbisect {

// Returns the grpc::Status with the same code and message.
inline grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

// Returns the absl::Status with the same code and message; an unreachable coordinator
// (UNAVAILABLE) gets a message that says so.
inline absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  std::string message = status.error_message();
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    message = "the coordinator is unreachable (" + message + ")";
  } else if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED && message.empty()) {
    message = "the coordinator did not answer in time";
  }
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), message);
}

}  // namespace kbisect

#endif  // KBISECT_COMMON_RPC_STATUS_CONVERSION_H_
