// Copyright 2026 The kbisect Authors.
#include "coordinator/metrics_http.h"

#include <chrono>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "coordinator/metrics.h"
#include "httplib.h"

namespace kbisect {

namespace {

bool IsLoopbackPeer(const std::string& address) {
  return absl::StartsWith(address, "127.") || address == "::1" ||
         absl::StartsWith(address, "::ffff:127.");
}

// Answers the request itself (403, 401) and returns false when it may not see the pages.
bool MaySeePages(const JobPages& pages, const httplib::Request& request,
                 httplib::Response& response) {
  if (!pages.remote && !IsLoopbackPeer(request.remote_addr)) {
    response.status = 403;
    response.set_content(
        "the job pages answer loopback peers only (kbisect-coordinator "
        "--pages-remote)\n",
        "text/plain");
    return false;
  }
  if (!pages.token.empty()) {
    const std::string expected = absl::StrCat("Bearer ", pages.token);
    const std::string given = request.get_header_value("Authorization");
    // Compared in constant time for equal lengths.
    unsigned char diff = given.size() == expected.size() ? 0 : 1;
    for (size_t i = 0; i < given.size() && i < expected.size(); ++i) {
      diff |= static_cast<unsigned char>(given[i] ^ expected[i]);
    }
    if (diff != 0) {
      response.status = 401;
      response.set_header("WWW-Authenticate", "Bearer");
      response.set_content("the job pages need the bearer token: Authorization: Bearer TOKEN\n",
                           "text/plain");
      return false;
    }
  }
  return true;
}

void Answer(const absl::StatusOr<std::string>& page, httplib::Response& response) {
  response.set_header("Cache-Control", "no-store");
  if (page.ok()) {
    response.set_content(*page, "text/html; charset=utf-8");
    return;
  }
  response.status = absl::IsNotFound(page.status()) ? 404 : 500;
  response.set_content(absl::StrCat(page.status().message(), "\n"), "text/plain");
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& listen_address, std::function<std::string()> render,
    std::optional<JobPages> pages) {
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
  if (render) {
    server->server_->Get("/metrics", [render = std::move(render)](const httplib::Request&,
                                                                  httplib::Response& response) {
      response.set_content(render(), kPrometheusContentType);
    });
  }
  if (pages.has_value()) {
    auto shared = std::make_shared<JobPages>(*std::move(pages));
    server->server_->Get("/jobs/?",
                         [shared](const httplib::Request& request, httplib::Response& response) {
                           if (MaySeePages(*shared, request, response))
                             Answer(shared->list(), response);
                         });
    server->server_->Get(R"(/jobs/([A-Za-z0-9._-]+))",
                         [shared](const httplib::Request& request, httplib::Response& response) {
                           if (MaySeePages(*shared, request, response)) {
                             Answer(shared->job(request.matches[1].str()), response);
                           }
                         });
  }
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
  // A server whose Start failed (the port was taken) never listened: nothing to stop.
  if (!thread_.joinable()) return;
  // stop() only takes effect once the listening loop runs.
  while (!server_->is_running() && !listen_returned_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace kbisect
