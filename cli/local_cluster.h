// Copyright 2026 The kbisect Authors.
//
// LocalCluster is the embedded deployment behind `kbisect run`: an in-process Coordinator served
// over real gRPC on a loopback port, plus one WorkerAgent per local GPU slot that dials it like
// any remote worker would. Slot i is a WorkerSlot (worker/worker_slot.h): it runs its commands
// with CUDA_VISIBLE_DEVICES=i, HIP_VISIBLE_DEVICES=i, ROCR_VISIBLE_DEVICES=i and
// KBISECT_WORKER=i, in its own checkout under the cache directory.
#ifndef KBISECT_CLI_LOCAL_CLUSTER_H_
#define KBISECT_CLI_LOCAL_CLUSTER_H_

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "common/exec/exec.h"
#include "coordinator/coordinator.h"
#include "coordinator/coordinator_server.h"
#include "coordinator/repository_view.h"
#include "worker/build_ahead.h"
#include "worker/build_cache.h"
#include "worker/clock_lock.h"
#include "worker/worker_slot.h"

namespace kbisect {

struct LocalClusterOptions {
  int workers = 1;
  // The device each slot's commands see (CUDA_VISIBLE_DEVICES, ...), slot i entry i
  // (LocalSlotDevices, worker/device_binding.h); empty: the slot number.
  std::vector<std::string> slot_devices;
  // Mirrors, per-slot checkouts and the build cache live here.
  std::string cache_dir;
  // Built checkouts the build cache keeps; 0 disables it (WorkerSlotOptions::build_cache_size).
  int build_cache_size = kDefaultBuildCacheSize;
  // Builds compile through the host's ccache when it is installed (`--no-compiler-cache`), with
  // a remote storage shared with other hosts (`--compiler-cache-remote`).
  bool compiler_cache = true;
  CompilerCacheRemote compiler_cache_remote;
  // The build store shared with other hosts (`--build-store`, worker/build_store.h); empty: none.
  std::string build_store;
  // Builds the host prepares ahead at once for all its slots (worker/build_ahead.h); 0 disables
  // it, as does a disabled build cache.
  int build_ahead = DefaultBuildAhead();
  // --lock-clocks: each slot's GPU locked while the cluster runs (worker/clock_lock.h).
  std::optional<ClockLockSpec> lock_clocks;
  // With coordinator.store set, Start recovers the store's jobs (Coordinator::Recover) before
  // the workers connect: `kbisect run`'s journal (cli/run_journal.h).
  CoordinatorOptions coordinator;
};

class LocalCluster {
 public:
  // Starts the coordinator server on 127.0.0.1 (a free port) and the worker agents.
  static absl::StatusOr<std::unique_ptr<LocalCluster>> Start(const LocalClusterOptions& options);

  // Stops the workers (killing their running commands) and the server.
  ~LocalCluster();

  // The coordinator's "host:port".
  std::string address() const { return server_->address(); }

  Coordinator* coordinator() { return coordinator_.get(); }

  // What Start recovered from options.coordinator.store (all zero without one).
  const RecoveryReport& recovered() const { return recovered_; }

  // Stops every worker now: running benchmark and build processes are killed. Idempotent.
  void StopWorkers();

 private:
  struct Slot {
    std::unique_ptr<WorkerSlot> worker;
    std::thread thread;
  };
  LocalCluster() = default;

  std::unique_ptr<CommandRunner> command_runner_;
  std::unique_ptr<RepositoryView> repositories_;
  std::unique_ptr<Coordinator> coordinator_;
  std::unique_ptr<CoordinatorServer> server_;
  // The host's builds ahead, shared by the slots, with their own view of the build cache.
  std::unique_ptr<BuildCache> build_ahead_cache_;
  // The slots' clock locks, undone once the slots have stopped (members go in reverse order).
  std::vector<std::unique_ptr<ClockLock>> clock_locks_;
  std::unique_ptr<BuildAhead> build_ahead_;
  std::vector<Slot> slots_;
  RecoveryReport recovered_;
};

}  // namespace kbisect

#endif  // KBISECT_CLI_LOCAL_CLUSTER_H_
