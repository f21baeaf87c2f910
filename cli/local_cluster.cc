// Copyright 2026 The kbisect Authors.
#include "cli/local_cluster.h"

#include <iostream>

#include "absl/strings/str_cat.h"
#include "common/identity/identity.h"
#include "common/status_macros.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"

namespace kbisect {

absl::StatusOr<std::unique_ptr<LocalCluster>> LocalCluster::Start(
    const LocalClusterOptions& options) {
  std::unique_ptr<LocalCluster> cluster(new LocalCluster());
  cluster->command_runner_ = NewSubprocessRunner();
  cluster->repositories_ = NewGitRepositoryView(options.cache_dir);
  cluster->coordinator_ = std::make_unique<Coordinator>(
      options.coordinator, cluster->repositories_.get(), Clock::Real());
  if (options.coordinator.store != nullptr) {
    // Jobs of an interrupted run come back from their journal before any worker connects.
    absl::StatusOr<RecoveryReport> recovered = cluster->coordinator_->Recover();
    if (!recovered.ok()) return recovered.status();
    cluster->recovered_ = *recovered;
  }
  cluster->coordinator_->StartHousekeeping(absl::Milliseconds(250));
  CoordinatorServerOptions server_options;
  server_options.listen_address = "127.0.0.1:0";
  absl::StatusOr<std::unique_ptr<CoordinatorServer>> server =
      CoordinatorServer::Start(cluster->coordinator_.get(), server_options);
  if (!server.ok()) return server.status();
  cluster->server_ = *std::move(server);

  v1::RunnerIdentity host_identity = ProbeRunnerIdentity(cluster->command_runner_.get(), "");
  if (options.build_ahead > 0 && options.build_cache_size > 0) {
    BuildCacheOptions cache_options;
    cache_options.max_entries = options.build_cache_size;
    cache_options.compiler_cache = options.compiler_cache;
    cache_options.compiler_cache_remote = options.compiler_cache_remote;
    cache_options.build_store = options.build_store;
    // Slot 0's class: the slots of one host share it unless their GPUs differ.
    cache_options.hardware_class = SlotIdentity(host_identity, 0).hardware_class();
    cluster->build_ahead_cache_ = std::make_unique<BuildCache>(options.cache_dir, cache_options,
                                                               cluster->command_runner_.get());
    cluster->build_ahead_ =
        std::make_unique<BuildAhead>(cluster->build_ahead_cache_.get(), options.build_ahead);
  }
  cluster->slots_.resize(std::max(1, options.workers));
  for (size_t i = 0; i < cluster->slots_.size(); ++i) {
    Slot& slot = cluster->slots_[i];
    WorkerSlotOptions slot_options;
    slot_options.cache_dir = options.cache_dir;
    slot_options.build_cache_size = options.build_cache_size;
    slot_options.compiler_cache = options.compiler_cache;
    slot_options.compiler_cache_remote = options.compiler_cache_remote;
    slot_options.build_store = options.build_store;
    slot_options.slot = static_cast<int>(i);
    if (i < options.slot_devices.size()) {
      slot_options.visible_devices = options.slot_devices[i];
      slot_options.probe_device = options.slot_devices[i];
    }
    slot_options.idle_poll = absl::Seconds(5);
    slot_options.build_ahead = cluster->build_ahead_.get();
    // --lock-clocks (and a lock an earlier run left when it was killed).
    std::string warning;
    ASSIGN_OR_RETURN(
        std::unique_ptr<ClockLock> lock,
        LockSlotClocks(cluster->command_runner_.get(), options.cache_dir, slot_options.slot,
                       slot_options.ProbedDevice(), options.lock_clocks, &host_identity, &warning));
    if (!warning.empty()) std::cerr << "kbisect: warning: " << warning << "\n";
    if (lock != nullptr) cluster->clock_locks_.push_back(std::move(lock));
    slot.worker = std::make_unique<WorkerSlot>(
        slot_options, cluster->command_runner_.get(), host_identity,
        grpc::CreateChannel(cluster->address(), grpc::InsecureChannelCredentials()));
    WorkerAgent* agent = slot.worker->agent();
    slot.thread = std::thread([agent] { agent->Run(); });
  }
  return cluster;
}

void LocalCluster::StopWorkers() {
  for (Slot& slot : slots_) {
    if (slot.worker != nullptr) slot.worker->agent()->Stop();
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
