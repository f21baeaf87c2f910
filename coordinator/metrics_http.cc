// Copyright 2026 The kbisect Authors.
#include "coordinator/metrics_http.h"

#include <chrono>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "coordinator/metrics.h"
#include "httplib.h"

namespace kbisect {

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& listen_address, std::function<std::string()> render) {
  const size_t colon = listen_address.rfind(':');
  int port = -1;
  if (colon == std::string::npos || !absl::SimpleAtoi(listen_address.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--metrics-listen ", listen_address, " is not host:port (e.g. 0.0.0.0:9464)"));
  }
  std::string host = listen_address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) host = "0.0.0.0";

  std::unique_ptr<MetricsHttpServer> server(new MetricsHttpServer());
  server->server_ = std::make_unique<httplib::Server>();
  server->server_->Get("/metrics", [render = std::move(render)](const httplib::Request&,
                                                                httplib::Response& response) {
    response.set_content(render(), kPrometheusContentType);
  });
  if (port == 0) {
    port = server->server_->bind_to_any_port(host);
  } else if (!server->server_->bind_to_port(host, port)) {
    port = -1;
  }
  if (port <= 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on --metrics-listen ", listen_address,
                                               ": the address is invalid or in use"));
  }
  server->port_ = port;
  httplib::Server* http = server->server_.get();
  MetricsHttpServer* self = server.get();
  server->thread_ = std::thread([http, self] {
    http->listen_after_bind();
    self->listen_returned_ = true;
  });
  return server;
}

MetricsHttpServer::~MetricsHttpServer() {
  // stop() only takes effect once the listening loop runs.
  while (!server_->is_running() && !listen_returned_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace kbisect
