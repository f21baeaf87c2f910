// Copyright 2026 The kbisect Authors.
//
// TaskRunner executes one task on one slot (the TaskExecutor of a worker that runs its tasks
// itself): its commits prepared -> N benchmark runs, extracting a sample from each run. It builds
// nothing itself: each commit's checkout and build come from the slot's build path
// (task_builder.h: the host's build cache, the slot's checkout, or only a checkout without a build
// command), once each: a confirmation prepares both of its commits once (two cache entries, or the
// workspace's two lanes) and alternates only the benchmark runs between them. It reports every
// failure as a TaskOutcome with a message a user can act on and the tail of the command's output;
// it never throws away the user's data.
#ifndef KBISECT_WORKER_TASK_RUNNER_H_
#define KBISECT_WORKER_TASK_RUNNER_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock/clock.h"
#include "common/exec/exec.h"
#include "kbisect/v1/kbisect.pb.h"
#include "worker/build_cache.h"
#include "worker/build_layer.h"
#include "worker/gpu_watch.h"
#include "worker/task_builder.h"
#include "worker/task_executor.h"
#include "worker/workspace.h"

namespace kbisect {

// A job's environment variable naming the directory its benchmark runs in instead of the
// checkout: a job over installed artifacts (`kbisect run --artifact`) runs the benchmark where
// the user started it, since the checkout only pins the artifact.
inline constexpr char kBenchDirEnv[] = "KBISECT_BENCH_DIR";

// Whether pair `pair` of interleaved task `task_id` runs the paired commit (last-good, or a try's
// base) before the task's commit: drawn from a stable hash of the two, so that either side goes
// first in about half the pairs and the same task always runs in the same order.
bool PairedGoesFirst(const std::string& task_id, int pair);

class TaskRunner : public TaskExecutor {
 public:
  // `runner`, `builder` and `clock` must outlive this object. Each commit a task measures is
  // prepared by `builder`. `slot_env` is added to the environment of every command (e.g.
  // CUDA_VISIBLE_DEVICES=2, KBISECT_WORKER=2); the task's own env wins. The task's total time is
  // measured on `clock` (its checkout, build and benchmark timings are the builder's and the
  // commands' as `runner` reports them).
  TaskRunner(CommandRunner* runner, TaskBuilder* builder,
             std::map<std::string, std::string> slot_env, Clock* clock = Clock::Real());

  // As above, preparing commits with a SlotBuilder of its own over `workspace` (which must
  // outlive this object), its checkouts timed on `clock` and its layers made over `layer_env`
  // (this process's by default); set_build_cache gives it the host's build cache.
  TaskRunner(CommandRunner* runner, Workspace* workspace,
             std::map<std::string, std::string> slot_env, Clock* clock = Clock::Real(),
             std::map<std::string, std::string> layer_env = BuildLayers::ProcessEnvironment());

  // Runs `task` to completion or until `cancel` is set (then the outcome is CANCELLED and the
  // running command's process group has been killed). `progress` may be null.
  v1::TaskResult Run(const v1::Task& task, const Cancellation* cancel,
                     const ProgressCallback& progress) override;

  // Reads the GPU's dynamic state (temperature, clock, throttle reasons); called after each
  // benchmark run when set. A run that ends throttled is flagged in its RunRecord and, when the
  // task asks to discard throttled samples, run again (up to kThrottleRetries times).
  using GpuStateProbe = std::function<std::optional<v1::GpuState>()>;
  void set_gpu_state_probe(GpuStateProbe probe) { gpu_state_probe_ = std::move(probe); }

  static constexpr int kThrottleRetries = 3;

  // Watches the GPU during each benchmark run (worker/gpu_watch.h). Where it watches, a run that
  // saw a hardware slowdown is run again (up to kThrottleRetries times) whatever the task's
  // discard_throttled says, and the run's RunRecord holds what the GPU did during the run
  // (ToGpuState) instead of the reading after it.
  void set_gpu_watcher(GpuWatcher watcher) { gpu_watcher_ = std::move(watcher); }

  // Lists the compute processes on the slot's GPU ("pid 4242 python3 (12034 MiB)"). When set, it
  // is asked before a task's benchmark runs (waiting up to `wait`, every second, for the GPU to
  // be free) and after them; a process found then shared the GPU with the runs, and every run
  // record of the task names it (GpuState.foreign_processes).
  using ComputeAppsProbe = std::function<std::vector<std::string>()>;
  void set_compute_apps_probe(ComputeAppsProbe probe, absl::Duration wait) {
    compute_apps_probe_ = std::move(probe);
    foreign_wait_ = wait;
  }

  // Makes tasks with a build command get their checkout and build from `cache` (which must
  // outlive this object), keeping it in use while their benchmark runs: SlotBuilder's
  // set_build_cache, for a runner made with a SlotBuilder of its own (the Workspace constructor).
  // A runner given its builder ignores it: its builder has the cache it has.
  void set_build_cache(BuildCache* cache) {
    if (own_builder_ != nullptr) own_builder_->set_build_cache(cache);
  }
  // The host's build cache its builds use, or null.
  const BuildCache* build_cache() const override { return builder_->build_cache(); }

 private:
  // One Run()'s state, passed between its steps (defined in task_runner.cc).
  struct RunState;

  // Run()'s steps. Each returns false when it ended the task early (RunState::Finish).

  // Prepares the commits the benchmark runs start with (the paired one in the second lane when
  // both are built), once each, and collects the task's manifest.
  bool PrepareCommits(RunState* run);
  // Prepares `sha` through the builder, in `lane` when it is not taken from the build cache.
  bool PrepareCommit(const std::string& sha, WorkspaceLane lane, RunState* run);
  // Runs the benchmark as the schedule says, keeping each run's sample (or, for a pass/fail
  // benchmark, its verdict).
  bool RunBenchmarks(RunState* run);
  // Records the GPU's state after a run in `record`; returns true when the run ended throttled
  // and the task discards throttled samples (up to kThrottleRetries times): the run is measured
  // again.
  // `watched` is what the GPU did during the run, when it was watched.
  bool MeasureAgain(const std::optional<GpuRunSummary>& watched, v1::RunRecord* record,
                    RunState* run);

  // The compute processes on the GPU before the runs, once it is free or `foreign_wait_` has
  // passed (empty without a probe).
  std::vector<std::string> WaitForTheGpu(RunState* run);
  // Names the processes found before or after the runs in every run record of the task.
  void NameForeignProcesses(std::vector<std::string> before, RunState* run);

  GpuStateProbe gpu_state_probe_;
  std::optional<GpuWatcher> gpu_watcher_;
  ComputeAppsProbe compute_apps_probe_;
  absl::Duration foreign_wait_;
  CommandRunner* const runner_;
  // The builder the Workspace constructor made (null otherwise), and the one commits come from.
  std::unique_ptr<SlotBuilder> own_builder_;
  TaskBuilder* const builder_;
  const std::map<std::string, std::string> slot_env_;
  Clock* const clock_;
};

}  // namespace kbisect

#endif  // KBISECT_WORKER_TASK_RUNNER_H_
