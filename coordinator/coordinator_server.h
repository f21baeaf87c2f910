// Copyright 2026 The kbisect Authors.
//
// CoordinatorServer exposes a Coordinator over gRPC: CoordinatorService (clients) and
// WorkerService (workers) on one port, plus gRPC health checking and server reflection. The
// same server runs inside `kbisect run` (on 127.0.0.1, port 0) and as `kbisect-coordinator`.
#ifndef KBISECT_COORDINATOR_COORDINATOR_SERVER_H_
#define KBISECT_COORDINATOR_COORDINATOR_SERVER_H_

#include <memory>
#include <string>

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

  // Graceful stop: health goes NOT_SERVING, blocked calls are released, in-flight RPCs get until
  // `deadline` to finish, then the server stops. Idempotent.
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
  std::unique_ptr<grpc::Server> server_;
  bool shut_down_ = false;
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_COORDINATOR_SERVER_H_
