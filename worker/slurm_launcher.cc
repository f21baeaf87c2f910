// Copyright 2026 The kbisect Authors.
#include "worker/slurm_launcher.h"

#include <signal.h>

#include <atomic>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/exec/signals.h"
#include "common/sync/notification.h"
#include "worker/worker_agent.h"

namespace kbisect {
namespace {

// The identity job, stopped by the first signal. Returns nullopt after a signal or an error
// (said through `log`, with `*exit_code` set).
std::optional<v1::RunnerIdentity> IdentityJob(const SlurmLauncherOptions& options,
                                              SlurmNodes* nodes, CommandRunner* runner,
                                              const Logger& log, int* exit_code) {
  log.Info("submitting the identity job (the hardware the probes run on)");
  Cancellation cancel;
  absl::StatusOr<v1::RunnerIdentity> identity;
  kbisect::Notification done;
  std::thread job([&] {
    identity = ProbeSlurmIdentity(options.probe, nodes, runner, &cancel);
    done.Notify();
  });
  while (!done.HasBeenNotified()) {
    if (WaitForTerminationSignal(absl::Milliseconds(200)) != 0) cancel.Cancel();
  }
  job.join();
  if (cancel.IsCancelled()) {
    log.Info("signalled: the identity job was cancelled; exiting");
    *exit_code = 0;
    return std::nullopt;
  }
  if (!identity.ok()) {
    log.Error(absl::StrCat("--slurm-per-probe: ", identity.status().message()));
    *exit_code = 1;
    return std::nullopt;
  }
  return *std::move(identity);
}

// One launcher slot: its executor and the agent that leases for it.
struct LauncherSlot {
  std::unique_ptr<SlurmProbeExecutor> executor;
  std::unique_ptr<WorkerAgent> agent;
  std::thread thread;
};

// Runs the slots' agents until they all returned; the first signal stops them all.
void ServeSlots(std::vector<LauncherSlot>* slots, const Logger& log) {
  kbisect::Notification done;
  std::atomic<int> running{static_cast<int>(slots->size())};
  for (LauncherSlot& slot : *slots) {
    slot.thread = std::thread([&running, &done, agent = slot.agent.get()] {
      agent->Run();
      if (--running == 0) done.Notify();
    });
  }
  bool signalled = false;
  while (!done.HasBeenNotified()) {
    const int sig = WaitForTerminationSignal(absl::Milliseconds(200));
    if (sig == 0 || signalled) continue;
    signalled = true;
    log.Info(absl::StrCat(sig == SIGTERM ? "SIGTERM" : "SIGINT",
                          ": stopping; running Slurm jobs are cancelled and their probes handed "
                          "back"));
    for (LauncherSlot& slot : *slots) slot.agent->Stop();
  }
  for (LauncherSlot& slot : *slots) slot.thread.join();
}

}  // namespace

v1::RunnerIdentity LauncherSlotIdentity(const v1::RunnerIdentity& node, int slot, bool pinned) {
  v1::RunnerIdentity identity = node;
  identity.set_slot(absl::StrCat(slot));
  v1::SchedulerPlacement placement;
  placement.set_scheduler("slurm");
  if (pinned) placement.set_node(node.placement().node());
  placement.set_device_variable(node.placement().device_variable());
  *identity.mutable_placement() = std::move(placement);
  return identity;
}

int RunSlurmLauncher(const SlurmLauncherOptions& options, std::shared_ptr<grpc::Channel> channel,
                     CommandRunner* runner, const Logger& log) {
  SlurmNodes nodes(options.pin_node);
  int exit_code = 0;
  std::optional<v1::RunnerIdentity> node = IdentityJob(options, &nodes, runner, log, &exit_code);
  if (!node.has_value()) return exit_code;
  const std::string pinned = nodes.Choice().pinned;
  log.Info(absl::StrCat("probes run on ", node->hardware_class_label(), " (class ",
                        node->hardware_class(), "), first seen on node ", node->placement().node(),
                        pinned.empty() ? "" : absl::StrCat("; every job pinned to ", pinned), "; ",
                        options.max_jobs, " Slurm job(s) at once, job files in ",
                        options.probe.jobs_dir));
  std::vector<LauncherSlot> slots(options.max_jobs);
  for (int i = 0; i < options.max_jobs; ++i) {
    slots[i].executor = std::make_unique<SlurmProbeExecutor>(
        options.probe, i, node->hardware_class(), &nodes, runner, &log);
    WorkerAgentOptions agent_options;
    agent_options.name = absl::StrCat(options.name_prefix, "/slurm-probe", i);
    agent_options.identity = LauncherSlotIdentity(*node, i, !pinned.empty());
    agent_options.idle_poll = options.idle_poll;
    slots[i].agent =
        std::make_unique<WorkerAgent>(std::move(agent_options), channel, slots[i].executor.get());
  }
  ServeSlots(&slots, log);
  for (LauncherSlot& slot : slots) {
    if (const absl::Status reason = slot.agent->stop_reason(); !reason.ok()) {
      log.Error(absl::StrCat("--slurm-per-probe: ", reason.message()));
      exit_code = 1;
    }
  }
  int reported = 0;
  for (LauncherSlot& slot : slots) reported += slot.agent->tasks_reported();
  log.Info(absl::StrCat("launcher exiting after ", reported, " reported probe(s)"));
  return exit_code;
}

}  // namespace kbisect
