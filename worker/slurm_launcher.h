// Copyright 2026 The kbisect Authors.
//
// The launcher of `kbisect-worker --slurm-per-probe` (worker/slurm_probe.h): on a login node, it
// runs one identity job to learn the hardware its probes will run on, then serves the coordinator
// with `max_jobs` slots, each a WorkerAgent whose tasks run as Slurm jobs, one at a time. The
// first SIGTERM or SIGINT stops every slot: its running Slurm job is scancelled and its lease
// handed back to the coordinator, then the launcher exits 0 with nothing of its own left in
// Slurm's queue.
#ifndef KBISECT_WORKER_SLURM_LAUNCHER_H_
#define KBISECT_WORKER_SLURM_LAUNCHER_H_

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "common/exec/exec.h"
#include "common/log/log.h"
#include "grpcpp/channel.h"
#include "kbisect/v1/kbisect.pb.h"
#include "worker/slurm_probe.h"

namespace kbisect {

struct SlurmLauncherOptions {
  // How the jobs are submitted.
  SlurmProbeOptions probe;
  // Slurm jobs at once: one slot (a worker session with one lease) each.
  int max_jobs = 4;
  // Whether every job after the identity job goes to the node the identity job ran on.
  bool pin_node = false;
  // The slots' names are "<name_prefix>/slurm-probe<i>".
  std::string name_prefix;
  // How long an idle slot's Synchronize long poll lasts.
  absl::Duration idle_poll = absl::Seconds(5);
};

// The identity slot `slot` opens its session with: the identity job's `node` identity (the
// node's GPU, driver, toolkit and hardware class) with `slot` as its slot and a placement that
// names the scheduler, and the node only when the jobs are pinned to it (`pinned`).
v1::RunnerIdentity LauncherSlotIdentity(const v1::RunnerIdentity& node, int slot, bool pinned);

// Runs the launcher until a signal (BlockTerminationSignals must have been called) or until a
// slot stops on its own error. `runner` runs sbatch and scancel. Returns the exit code: 0 after a
// signal, 1 when the identity job gave no identity or a slot stopped on an error (said through
// `log`).
int RunSlurmLauncher(const SlurmLauncherOptions& options, std::shared_ptr<grpc::Channel> channel,
                     CommandRunner* runner, const Logger& log);

}  // namespace kbisect

#endif  // KBISECT_WORKER_SLURM_LAUNCHER_H_
