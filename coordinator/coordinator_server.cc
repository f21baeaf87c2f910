// Copyright 2026 The kbisect Authors.
#include "coordinator/coordinator_server.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "common/rpc/credentials.h"
#include "common/rpc/status_conversion.h"
#include "common/sync/mutex.h"
#include "coordinator/health_service.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/impl/server_builder_option.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "kbisect/v1/kbisect.grpc.pb.h"

namespace kbisect {
namespace {

// Server reflection on one ServerBuilder, or none. libgrpc++_reflection adds its plugin to every
// ServerBuilder of the process (a static initializer of the library registers it), so the
// health-only port served reflection too. This option leaves exactly one reflection plugin on a
// builder, or none.
class ReflectionOption final : public grpc::ServerBuilderOption {
 public:
  explicit ReflectionOption(bool enabled) : enabled_(enabled) {}

  void UpdateArguments(grpc::ChannelArguments*) override {}

  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    auto reflection = std::make_unique<grpc::reflection::ProtoServerReflectionPlugin>();
    const std::string name = reflection->name();
    plugins->erase(std::remove_if(plugins->begin(), plugins->end(),
                                  [&name](const std::unique_ptr<grpc::ServerBuilderPlugin>& p) {
                                    return p->name() == name;
                                  }),
                   plugins->end());
    if (enabled_) plugins->push_back(std::move(reflection));
  }

 private:
  const bool enabled_;
};

}  // namespace

std::vector<std::string> HealthCheckedServices() {
  return {"", v1::CoordinatorService::service_full_name(), v1::WorkerService::service_full_name()};
}

absl::StatusOr<std::unique_ptr<HealthServer>> HealthServer::Start(const std::string& address) {
  std::unique_ptr<HealthServer> server(new HealthServer());
  server->health_ = std::make_unique<HealthService>(HealthCheckedServices());
  grpc::ServerBuilder builder;
  builder.SetOption(std::make_unique<ReflectionOption>(/*enabled=*/false));
  builder.RegisterService(server->health_.get());
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &server->port_);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on --health-listen ", address,
                                               ": the address is invalid or in use"));
  }
  return server;
}

HealthServer::~HealthServer() { Shutdown(); }

void HealthServer::SetServing(bool serving) { health_->SetServing(serving); }

void HealthServer::Shutdown() {
  if (shut_down_ || server_ == nullptr) return;
  shut_down_ = true;
  health_->Shutdown();
  server_->Shutdown();
}

class CoordinatorServer::CoordinatorServiceImpl final : public v1::CoordinatorService::Service {
 public:
  explicit CoordinatorServiceImpl(Coordinator* coordinator) : coordinator_(coordinator) {}

  grpc::Status SubmitJob(grpc::ServerContext*, const v1::SubmitJobRequest* request,
                         v1::SubmitJobResponse* response) override {
    absl::StatusOr<v1::SubmitJobResponse> result = coordinator_->SubmitJob(*request);
    if (!result.ok()) return ToGrpcStatus(result.status());
    *response = *std::move(result);
    return grpc::Status::OK;
  }

  grpc::Status GetJob(grpc::ServerContext*, const v1::GetJobRequest* request,
                      v1::GetJobResponse* response) override {
    absl::StatusOr<v1::JobStatus> job = coordinator_->GetJob(request->job_id());
    if (!job.ok()) return ToGrpcStatus(job.status());
    *response->mutable_job() = *std::move(job);
    return grpc::Status::OK;
  }

  grpc::Status ListJobs(grpc::ServerContext*, const v1::ListJobsRequest* request,
                        v1::ListJobsResponse* response) override {
    *response = coordinator_->ListJobs(*request);
    return grpc::Status::OK;
  }

  grpc::Status WatchJob(grpc::ServerContext* context, const v1::WatchJobRequest* request,
                        grpc::ServerWriter<v1::WatchJobResponse>* writer) override {
    absl::Status status = coordinator_->WatchJob(
        request->job_id(), request->after_sequence(),
        [&](const v1::JobEvent& event) {
          v1::WatchJobResponse response;
          *response.mutable_event() = event;
          return writer->Write(response);
        },
        [context] { return context->IsCancelled(); });
    return ToGrpcStatus(status);
  }

  grpc::Status CancelJob(grpc::ServerContext*, const v1::CancelJobRequest* request,
                         v1::CancelJobResponse* response) override {
    absl::StatusOr<v1::JobStatus> job =
        coordinator_->CancelJob(request->job_id(), request->reason());
    if (!job.ok()) return ToGrpcStatus(job.status());
    *response->mutable_job() = *std::move(job);
    return grpc::Status::OK;
  }

  grpc::Status ListWorkers(grpc::ServerContext*, const v1::ListWorkersRequest*,
                           v1::ListWorkersResponse* response) override {
    *response = coordinator_->ListWorkers();
    return grpc::Status::OK;
  }

 private:
  Coordinator* const coordinator_;
};

// With mutual TLS, each worker session is bound to the certificate subject that opened it: the
// session's Synchronize, CompleteLease and CloseSession must come with the same subject, so a
// worker can only heartbeat and report on the leases of its own sessions. A worker name is bound
// the same way: reopening it under another subject (e.g. a rotated certificate with a new CN)
// works, but the leases the old session held are not carried over (they are re-dispatched).
// Without client certificates (plaintext, `kbisect run`) nothing is bound.
// Synchronize is served on gRPC's callback API: a long poll that waits holds no thread
// (WorkerSessions::SynchronizeAsync), where the synchronous API holds one per idle worker.
class CoordinatorServer::WorkerServiceImpl final
    : public v1::WorkerService::WithCallbackMethod_Synchronize<v1::WorkerService::Service> {
 public:
  // Serves the sessions' calls with `sessions`, and GetJobState with `coordinator`.
  WorkerServiceImpl(WorkerSessions* sessions, const Coordinator* coordinator)
      : worker_sessions_(sessions), coordinator_(coordinator) {}

  grpc::Status OpenSession(grpc::ServerContext* context, const v1::OpenSessionRequest* request,
                           v1::OpenSessionResponse* response) override {
    const std::string subject = Subject(context);
    v1::OpenSessionRequest checked = *request;
    {
      kbisect::MutexLock lock(&mu_);
      auto name = names_.find(request->worker_name());
      if (!request->worker_name().empty() && name != names_.end() &&
          name->second.subject != subject) {
        checked.clear_held_leases();
      }
    }
    absl::StatusOr<v1::OpenSessionResponse> opened = worker_sessions_->OpenSession(checked);
    if (opened.ok() && !subject.empty()) {
      kbisect::MutexLock lock(&mu_);
      Binding& binding = names_[opened->worker_id()];
      sessions_.erase(binding.session_id);
      binding = Binding{subject, opened->session_id()};
      sessions_[opened->session_id()] = subject;
    }
    return Reply(std::move(opened), response);
  }

  grpc::ServerUnaryReactor* Synchronize(grpc::CallbackServerContext* context,
                                        const v1::SynchronizeRequest* request,
                                        v1::SynchronizeResponse* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    if (grpc::Status owner = CheckOwner(context, request->session_id()); !owner.ok()) {
      reactor->Finish(owner);
      return reactor;
    }
    // `request` and `response` live until Finish: the reply is written into `response` then.
    worker_sessions_->SynchronizeAsync(
        *request, [reactor, response](absl::StatusOr<v1::SynchronizeResponse> answer) {
          reactor->Finish(Reply(std::move(answer), response));
        });
    return reactor;
  }

  grpc::Status CompleteLease(grpc::ServerContext* context, const v1::CompleteLeaseRequest* request,
                             v1::CompleteLeaseResponse* response) override {
    if (grpc::Status owner = CheckOwner(context, request->session_id()); !owner.ok()) {
      return owner;
    }
    return Reply(worker_sessions_->CompleteLease(*request), response);
  }

  grpc::Status CloseSession(grpc::ServerContext* context, const v1::CloseSessionRequest* request,
                            v1::CloseSessionResponse*) override {
    if (grpc::Status owner = CheckOwner(context, request->session_id()); !owner.ok()) {
      return owner;
    }
    return ToGrpcStatus(worker_sessions_->CloseSession(*request));
  }

  // A job's state alone: what a worker with --until-job needs, and no more of the job.
  grpc::Status GetJobState(grpc::ServerContext*, const v1::GetJobStateRequest* request,
                           v1::GetJobStateResponse* response) override {
    absl::StatusOr<v1::JobState> state = coordinator_->GetJobState(request->job_id());
    if (!state.ok()) return ToGrpcStatus(state.status());
    response->set_state(*state);
    return grpc::Status::OK;
  }

 private:
  struct Binding {
    std::string subject;
    std::string session_id;
  };

  static std::string Subject(const grpc::ServerContextBase* context) {
    const std::shared_ptr<const grpc::AuthContext> auth = context->auth_context();
    return auth == nullptr ? std::string() : PeerCertificateSubject(*auth);
  }

  // PermissionDenied when the session was opened under another certificate subject.
  grpc::Status CheckOwner(const grpc::ServerContextBase* context, const std::string& session_id) {
    const std::string subject = Subject(context);
    kbisect::MutexLock lock(&mu_);
    auto it = sessions_.find(session_id);
    if (it == sessions_.end() || it->second == subject) return grpc::Status::OK;
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        "the session belongs to a worker with another client certificate");
  }

  template <typename T>
  static grpc::Status Reply(absl::StatusOr<T> result, T* response) {
    if (!result.ok()) return ToGrpcStatus(result.status());
    *response = *std::move(result);
    return grpc::Status::OK;
  }

  WorkerSessions* const worker_sessions_;
  const Coordinator* const coordinator_;
  kbisect::Mutex mu_;
  // Session id -> the certificate subject that opened it (mutual TLS only).
  std::map<std::string, std::string> sessions_ ABSL_GUARDED_BY(mu_);
  // Worker name -> the subject and session of its latest OpenSession.
  std::map<std::string, Binding> names_ ABSL_GUARDED_BY(mu_);
};

absl::StatusOr<std::unique_ptr<CoordinatorServer>> CoordinatorServer::Start(
    Coordinator* coordinator, const CoordinatorServerOptions& options) {
  std::unique_ptr<CoordinatorServer> server(new CoordinatorServer());
  server->coordinator_ = coordinator;
  server->client_service_ = std::make_unique<CoordinatorServiceImpl>(coordinator);
  server->worker_service_ =
      std::make_unique<WorkerServiceImpl>(&coordinator->worker_sessions(), coordinator);

  // Not gRPC's default health service: see coordinator/health_service.h.
  server->health_ = std::make_unique<HealthService>(HealthCheckedServices());
  grpc::ServerBuilder builder;
  builder.SetOption(std::make_unique<ReflectionOption>(/*enabled=*/true));
  // gRPC shares a port with SO_REUSEPORT by default: a second coordinator on the same address
  // would take half of the calls. Refuse the port instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  int port = 0;
  builder.AddListeningPort(
      options.listen_address,
      options.credentials ? options.credentials : grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(options.max_receive_message_bytes);
  builder.RegisterService(server->client_service_.get());
  builder.RegisterService(server->worker_service_.get());
  builder.RegisterService(server->health_.get());
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || port == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options.listen_address,
                     ": the address is invalid or in use; pick another with --listen"));
  }
  server->port_ = port;
  const std::string& address = options.listen_address;
  server->host_ = address.substr(0, address.rfind(':'));
  if (server->host_.empty() || server->host_ == "0.0.0.0" || server->host_ == "[::]") {
    server->host_ = "127.0.0.1";
  }
  return server;
}

CoordinatorServer::~CoordinatorServer() { Shutdown(absl::Seconds(1)); }

std::string CoordinatorServer::address() const { return absl::StrCat(host_, ":", port_); }

void CoordinatorServer::Shutdown(absl::Duration deadline) {
  // A server that never started (Start failed: the port was taken) has nothing to stop.
  if (shut_down_ || server_ == nullptr) return;
  shut_down_ = true;
  health_->Shutdown();
  coordinator_->Shutdown();
  server_->Shutdown(std::chrono::system_clock::now() +
                    std::chrono::milliseconds(absl::ToInt64Milliseconds(deadline)));
}

void CoordinatorServer::Wait() { server_->Wait(); }

}  // namespace kbisect
