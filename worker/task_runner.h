// Copyright 2026 The kbisect Authors.
//
// TaskRunner executes one task on one slot: checkout -> build -> N benchmark runs, extracting a
// sample from each run. With a build command and a build cache, the checkout and the build come
// from the cache (and are skipped when it already has the commit built); otherwise they happen in
// the slot's workspace. A confirmation prepares both of its commits once (two cache entries, or
// the workspace's two lanes) and alternates only the benchmark runs between them. It reports
// every failure as a TaskOutcome with a message a user can act on and the tail of the command's
// output; it never throws away the user's data.
#ifndef KBISECT_WORKER_TASK_RUNNER_H_
#define KBISECT_WORKER_TASK_RUNNER_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock/clock.h"
#include "common/exec/exec.h"
#include "kbisect/v1/kbisect.pb.h"
#include "worker/build_cache.h"
#include "worker/build_layer.h"
#include "worker/gpu_watch.h"
#include "worker/workspace.h"

namespace kbisect {

// A job's environment variable naming the directory its benchmark runs in instead of the
// checkout: a job over installed artifacts (`kbisect run --artifact`) runs the benchmark where
// the user started it, since the checkout only pins the artifact.
inline constexpr char kBenchDirEnv[] = "KBISECT_BENCH_DIR";

class TaskRunner {
 public:
  // Called at each phase change and after each benchmark run.
  using ProgressCallback = std::function<void(v1::TaskPhase phase, int runs_done, int runs_total)>;

  // `runner`, `workspace` and `clock` must outlive this object. `slot_env` is added to the
  // environment of every command (e.g. CUDA_VISIBLE_DEVICES=2, KBISECT_WORKER=2); the task's own
  // env wins. The task's total and checkout timings are measured on `clock` (build and
  // benchmark timings are the commands' wall times as `runner` reports them).
  // Builds in the workspace get a layer (build_layer.h) next to their checkout, over the
  // environment `layer_env` (this process's by default).
  TaskRunner(CommandRunner* runner, Workspace* workspace,
             std::map<std::string, std::string> slot_env, Clock* clock = Clock::Real(),
             std::map<std::string, std::string> layer_env = BuildLayers::ProcessEnvironment());

  // Runs `task` to completion or until `cancel` is set (then the outcome is CANCELLED and the
  // running command's process group has been killed). `progress` may be null.
  v1::TaskResult Run(const v1::Task& task, const Cancellation* cancel,
                     const ProgressCallback& progress);

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
  // outlive this object), keeping it in use while their benchmark runs. Null (the default) builds
  // in the workspace's checkouts instead.
  void set_build_cache(BuildCache* cache) { build_cache_ = cache; }
  // The host's build cache its builds use, or null.
  const BuildCache* build_cache() const { return build_cache_; }

 private:
  // One Run()'s state, passed between its steps (defined in task_runner.cc).
  struct RunState;

  // Run()'s steps. Each returns false when it ended the task early (RunState::Finish).

  // Marks the builds the job will use again (Task.keep_build_shas) as used, before this task's
  // builds make room in the cache, so that the room is taken from other builds.
  void MarkKeptBuildsUsed(const v1::Task& task);
  // Checks out and builds the commits the benchmark runs start with (the paired one in the
  // second lane when both are built), once each, and collects the task's manifest.
  bool PrepareCommits(RunState* run);
  // Checks `sha` out and builds it, from the build cache or in `lane` of the workspace.
  bool PrepareCommit(const std::string& sha, WorkspaceLane lane, RunState* run);
  // Takes the build of `sha` from the build cache (building it there when it is not cached),
  // holding it in use until the task ends.
  bool PrepareFromCache(const std::string& sha, RunState* run);
  // Checks `sha` out in `lane` of the workspace and builds it there in a layer of its own.
  bool PrepareInWorkspace(const std::string& sha, WorkspaceLane lane, RunState* run);
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
  BuildCache* build_cache_ = nullptr;
  CommandRunner* const runner_;
  Workspace* const workspace_;
  const std::map<std::string, std::string> slot_env_;
  Clock* const clock_;
  BuildLayers layers_;  // For builds in the workspace's checkouts.
};

}  // namespace kbisect

#endif  // KBISECT_WORKER_TASK_RUNNER_H_
