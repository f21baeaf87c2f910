// Copyright 2026 The kbisect Authors.
#include "cli/local_cluster.h"

#include <cstdlib>
#include <map>

#include "absl/strings/str_cat.h"
#include "common/identity/identity.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"

namespace kbisect {

std::string DefaultCacheDir() {
  if (const char* dir = std::getenv("KBISECT_CACHE_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return absl::StrCat(xdg, "/kbisect");
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return absl::StrCat(home, "/.cache/kbisect");
  }
  return "/tmp/kbisect-cache";
}

absl::StatusOr<std::unique_ptr<LocalCluster>> LocalCluster::Start(
    const LocalClusterOptions& options) {
  std::unique_ptr<LocalCluster> cluster(new LocalCluster());
  cluster->command_runner_ = NewSubprocessRunner();
  cluster->repositories_ = NewGitRepositoryView(options.cache_dir);
  cluster->coordinator_ = std::make_unique<Coordinator>(
      options.coordinator, cluster->repositories_.get(), Clock::Real());
  cluster->coordinator_->StartHousekeeping(absl::Milliseconds(250));
  CoordinatorServerOptions server_options;
  server_options.listen_address = "127.0.0.1:0";
  absl::StatusOr<std::unique_ptr<CoordinatorServer>> server =
      CoordinatorServer::Start(cluster->coordinator_.get(), server_options);
  if (!server.ok()) return server.status();
  cluster->server_ = *std::move(server);

  const v1::RunnerIdentity host_identity = ProbeRunnerIdentity(cluster->command_runner_.get(), "");
  cluster->slots_.resize(std::max(1, options.workers));
  for (size_t i = 0; i < cluster->slots_.size(); ++i) {
    Slot& slot = cluster->slots_[i];
    const std::string index = absl::StrCat(i);
    std::map<std::string, std::string> env = {{"CUDA_VISIBLE_DEVICES", index},
                                              {"HIP_VISIBLE_DEVICES", index},
                                              {"ROCR_VISIBLE_DEVICES", index},
                                              {"KBISECT_WORKER", index}};
    slot.workspace = std::make_unique<GitWorkspace>(options.cache_dir, static_cast<int>(i));
    slot.task_runner = std::make_unique<TaskRunner>(cluster->command_runner_.get(),
                                                    slot.workspace.get(), std::move(env));
    WorkerAgentOptions agent_options;
    agent_options.name = absl::StrCat(host_identity.host(), "/slot", i);
    agent_options.identity = host_identity;
    // The slot sees one device of the host.
    v1::RunnerIdentity& identity = agent_options.identity;
    identity.set_slot(index);
    if (identity.gpus_size() > static_cast<int>(i)) {
      v1::GpuInfo gpu = identity.gpus(static_cast<int>(i));
      identity.clear_gpus();
      *identity.add_gpus() = gpu;
      identity.set_gpu_count(1);
      AssignHardwareClass(&identity);
    }
    agent_options.idle_poll = absl::Seconds(5);
    slot.agent = std::make_unique<WorkerAgent>(
        std::move(agent_options),
        grpc::CreateChannel(cluster->address(), grpc::InsecureChannelCredentials()),
        slot.task_runner.get());
    WorkerAgent* agent = slot.agent.get();
    slot.thread = std::thread([agent] { agent->Run(); });
  }
  return cluster;
}

void LocalCluster::StopWorkers() {
  for (Slot& slot : slots_) {
    if (slot.agent != nullptr) slot.agent->Stop();
  }
  for (Slot& slot : slots_) {
    if (slot.thread.joinable()) slot.thread.join();
  }
}

LocalCluster::~LocalCluster() {
  StopWorkers();
  if (server_ != nullptr) server_->Shutdown(absl::Seconds(1));
}

}  // namespace kbisect
