// Copyright 2026 The kbisect Authors.
//
// MetricsHttpServer serves Prometheus metrics over plain HTTP: GET /metrics answers with the
// text a callback renders (coordinator/metrics.h), anything else is 404. It runs its own
// thread; the callback is called on it, once per scrape.
#ifndef KBISECT_COORDINATOR_METRICS_HTTP_H_
#define KBISECT_COORDINATOR_METRICS_HTTP_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace httplib {
class Server;
}  // namespace httplib

namespace kbisect {

class MetricsHttpServer {
 public:
  // Starts serving on `listen_address` ("host:port", "[v6]:port"; port 0 picks a free port).
  // `render` returns the exposition text; it must be thread-safe and outlive the server.
  // InvalidArgument for a malformed address, Unavailable when it cannot be bound.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(
      const std::string& listen_address, std::function<std::string()> render);

  // Stops serving and joins the thread.
  ~MetricsHttpServer();

  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  // The bound port.
  int port() const { return port_; }

 private:
  MetricsHttpServer() = default;

  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::atomic<bool> listen_returned_{false};
  int port_ = 0;
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_METRICS_HTTP_H_
