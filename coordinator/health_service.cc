// Copyright 2026 The kbisect Authors.
#include "coordinator/health_service.h"

#include "absl/time/time.h"

namespace kbisect {

using ::grpc::health::v1::HealthCheckRequest;
using ::grpc::health::v1::HealthCheckResponse;

HealthService::HealthService(const std::vector<std::string>& services)
    : services_(services.begin(), services.end()) {}

void HealthService::SetServing(bool serving) {
  kbisect::MutexLock lock(&mu_);
  if (shut_down_) return;
  serving_ = serving;
  changed_.SignalAll();
}

void HealthService::Shutdown() {
  kbisect::MutexLock lock(&mu_);
  serving_ = false;
  shut_down_ = true;
  changed_.SignalAll();
}

HealthCheckResponse::ServingStatus HealthService::StatusLocked(const std::string& service) const {
  if (services_.count(service) == 0) return HealthCheckResponse::SERVICE_UNKNOWN;
  return serving_ ? HealthCheckResponse::SERVING : HealthCheckResponse::NOT_SERVING;
}

grpc::Status HealthService::Check(grpc::ServerContext*, const HealthCheckRequest* request,
                                  HealthCheckResponse* response) {
  kbisect::MutexLock lock(&mu_);
  const HealthCheckResponse::ServingStatus status = StatusLocked(request->service());
  if (status == HealthCheckResponse::SERVICE_UNKNOWN) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        "unknown service '" + request->service() + "'");
  }
  response->set_status(status);
  return grpc::Status::OK;
}

grpc::Status HealthService::Watch(grpc::ServerContext* context, const HealthCheckRequest* request,
                                  grpc::ServerWriter<HealthCheckResponse>* writer) {
  bool sent = false;
  HealthCheckResponse::ServingStatus last = HealthCheckResponse::UNKNOWN;
  while (true) {
    HealthCheckResponse response;
    bool shut_down = false;
    {
      kbisect::MutexLock lock(&mu_);
      auto ready = [&]() {
        mu_.AssertHeld();
        return shut_down_ || !sent || StatusLocked(request->service()) != last;
      };
      while (!ready()) {
        // A cancelled call wakes no condition variable: look every second.
        if (context->IsCancelled()) {
          return grpc::Status(grpc::StatusCode::CANCELLED, "the watcher went away");
        }
        changed_.WaitWithTimeout(&mu_, absl::Seconds(1));
      }
      response.set_status(StatusLocked(request->service()));
      shut_down = shut_down_;
    }
    // Written without the lock: a slow reader must not block SetServing.
    if (!sent || response.status() != last) {
      if (!writer->Write(response)) {
        return grpc::Status(grpc::StatusCode::CANCELLED, "the watcher went away");
      }
      sent = true;
      last = response.status();
    }
    if (shut_down) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down");
    }
  }
}

}  // namespace kbisect
