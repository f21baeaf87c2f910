// Copyright 2026 The kbisect Authors.
//
// CoordinatorServer exposes a Coordinator over gRPC: CoordinatorService (clients) and
// WorkerService (workers) on one port, plus gRPC health checking (for "" and each service) and
// server reflection (which can describe the health service too). The same server runs inside
// `kbisect run` (on 127.0.0.1, port 0) and as `kbisect-coordinator`, whose --health-listen port
// is a HealthServer.
#ifndef KBISECT_COORDINATOR_COORDINATOR_SERVER_H_
#define KBISECT_COORDINATOR_COORDINATOR_SERVER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "coordinator/coordinator.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"

namespace kbisect {

struct CoordinatorServerOptions {
  // host:port to listen on; port 0 picks a free port (see CoordinatorServer::port()).
  std::string listen_address = "127.0.0.1:0";
  // Insecure when null.
  std::shared_ptr<grpc::ServerCredentials> credentials;
  // Largest request accepted, in bytes.
  int max_receive_message_bytes = 16 << 20;
};

// The names grpc.health.v1.Health answers for: "" (the server as a whole),
// "kbisect.v1.CoordinatorService" and "kbisect.v1.WorkerService". Any other name is NOT_FOUND.
std::vector<std::string> HealthCheckedServices();

class HealthService;

// A plaintext server of grpc.health.v1.Health alone (kubelet's gRPC probes cannot speak TLS),
// answering for the names of HealthCheckedServices(); no reflection, no other service.
class HealthServer {
 public:
  // Starts serving on `address`, every name SERVING. Fails when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<HealthServer>> Start(const std::string& address);

  ~HealthServer();

  // The bound port.
  int port() const { return port_; }

  // Sets every name SERVING or NOT_SERVING.
  void SetServing(bool serving);

  // Ends Watch streams and stops serving. Idempotent.
  void Shutdown();

 private:
  HealthServer() = default;

  std::unique_ptr<HealthService> health_;  // Outlives server_.
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  bool shut_down_ = false;
};

class CoordinatorServer {
 public:
  // Starts serving `coordinator` (which must outlive the server). Fails when the address cannot
  // be bound, with a message naming it.
  static absl::StatusOr<std::unique_ptr<CoordinatorServer>> Start(
      Coordinator* coordinator, const CoordinatorServerOptions& options);

  ~CoordinatorServer();

  // The bound port.
  int port() const { return port_; }

  // "host:port" clients can dial.
  std::string address() const;

  // Graceful stop: health goes NOT_SERVING (every name), blocked calls (health watches too) are
  // released, in-flight RPCs get until `deadline` to finish, then the server stops. Idempotent.
  void Shutdown(absl::Duration deadline);

  // Blocks until the server has shut down.
  void Wait();

 private:
  class CoordinatorServiceImpl;
  class WorkerServiceImpl;
  CoordinatorServer() = default;

  Coordinator* coordinator_ = nullptr;
  std::string host_;
  int port_ = 0;
  std::unique_ptr<CoordinatorServiceImpl> client_service_;
  std::unique_ptr<WorkerServiceImpl> worker_service_;
  std::unique_ptr<HealthService> health_;
  std::unique_ptr<grpc::Server> server_;
  bool shut_down_ = false;
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_COORDINATOR_SERVER_H_
