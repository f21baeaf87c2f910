// Copyright 2026 The kbisect Authors.
//
// MetricsHttpServer is the coordinator's HTTP listener (plain HTTP): GET /metrics answers with
// the Prometheus text a callback renders (coordinator/metrics.h); with JobPages, GET /jobs and
// GET /jobs/ID answer with the live HTML pages (coordinator/job_pages.h), read-only, to
// loopback peers only unless `remote`, and with the bearer token when one is set (401
// otherwise). Anything else is 404. It runs its own thread; the callbacks are called on it,
// once per request.
#ifndef KBISECT_COORDINATOR_METRICS_HTTP_H_
#define KBISECT_COORDINATOR_METRICS_HTTP_H_

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace httplib {
class Server;
}  // namespace httplib

namespace kbisect {

// The live job pages' callbacks and access rules.
struct JobPages {
  // The /jobs page; the /jobs/ID page (NotFound answers 404).
  std::function<absl::StatusOr<std::string>()> list;
  std::function<absl::StatusOr<std::string>(const std::string& job_id)> job;
  // When not empty, requests need "Authorization: Bearer TOKEN".
  std::string token;
  // Answer peers that are not on loopback too (403 otherwise).
  bool remote = false;
};

class MetricsHttpServer {
 public:
  // Starts serving on `listen_address` ("host:port", "[v6]:port"; port 0 picks a free port).
  // `render` returns the exposition text; it must be thread-safe and outlive the server.
  // InvalidArgument for a malformed address, Unavailable when it cannot be bound.
  // `render` may be empty: no /metrics. `pages` adds /jobs and /jobs/ID.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(
      const std::string& listen_address, std::function<std::string()> render,
      std::optional<JobPages> pages = std::nullopt);

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
