// Copyright 2026 The kbisect Authors.
//
// HealthService implements grpc.health.v1.Health (proto/grpc/health/v1/health.proto) for the
// coordinator's servers: one status shared by a fixed set of names ("" for the server as a
// whole, and each service it serves). It replaces gRPC C++'s default health service for two
// reasons (docs/decisions.md 82, 83): that one has no protobuf descriptor, so server reflection
// cannot describe it and grpcurl cannot call it, and its Watch streams stay open through a
// graceful shutdown, so one watcher held the coordinator's exit for the whole drain deadline.
// Here Shutdown() ends every Watch, as the coordinator releases its own blocked calls.
#ifndef KBISECT_COORDINATOR_HEALTH_SERVICE_H_
#define KBISECT_COORDINATOR_HEALTH_SERVICE_H_

#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "common/sync/mutex.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/status.h"
#include "grpcpp/support/sync_stream.h"

namespace kbisect {

class HealthService final : public grpc::health::v1::Health::Service {
 public:
  // Answers for `services`, all SERVING. Check on any other name is NOT_FOUND; Watch on one
  // streams SERVICE_UNKNOWN.
  explicit HealthService(const std::vector<std::string>& services);

  // Sets every name SERVING or NOT_SERVING; watchers see the change.
  void SetServing(bool serving) ABSL_LOCKS_EXCLUDED(mu_);

  // Every name NOT_SERVING for good, and every Watch stream ends (UNAVAILABLE, after sending
  // NOT_SERVING) instead of holding the server's graceful shutdown. Idempotent.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

  grpc::Status Check(grpc::ServerContext* context,
                     const grpc::health::v1::HealthCheckRequest* request,
                     grpc::health::v1::HealthCheckResponse* response) override
      ABSL_LOCKS_EXCLUDED(mu_);

  // The status now, then each change, until the caller goes away or Shutdown().
  grpc::Status Watch(grpc::ServerContext* context,
                     const grpc::health::v1::HealthCheckRequest* request,
                     grpc::ServerWriter<grpc::health::v1::HealthCheckResponse>* writer) override
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  grpc::health::v1::HealthCheckResponse::ServingStatus StatusLocked(
      const std::string& service) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::set<std::string> services_;
  kbisect::Mutex mu_;
  kbisect::CondVar changed_;
  bool serving_ ABSL_GUARDED_BY(mu_) = true;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_HEALTH_SERVICE_H_
