// Copyright 2026 The kbisect Authors.
//
// TaskExecutor is what a WorkerAgent runs its leased tasks with: TaskRunner (worker/task_runner.h)
// runs a task's checkout, build and benchmark in this process's slot; SlurmProbeExecutor
// (worker/slurm_probe.h) runs each task as a Slurm job of its own on a node with a GPU
// (`kbisect-worker --slurm-per-probe`). The agent's session, leases, reports and reconnects are
// the same for both.
#ifndef KBISECT_WORKER_TASK_EXECUTOR_H_
#define KBISECT_WORKER_TASK_EXECUTOR_H_

#include <functional>

#include "common/exec/exec.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

class BuildCache;

class TaskExecutor {
 public:
  // Called at each phase change and after each benchmark run.
  using ProgressCallback = std::function<void(v1::TaskPhase phase, int runs_done, int runs_total)>;

  virtual ~TaskExecutor() = default;

  // Runs `task` to completion or until `cancel` is set (then the outcome is CANCELLED and what
  // the task started has been stopped). `progress` may be null. A failure of the machinery
  // rather than of the commit is TASK_OUTCOME_INFRA_ERROR: the coordinator runs the task again.
  virtual v1::TaskResult Run(const v1::Task& task, const Cancellation* cancel,
                             const ProgressCallback& progress) = 0;

  // The host's build cache the executor's builds use in this process, or null (none, or the
  // builds run elsewhere): the agent announces its build pool from it.
  virtual const BuildCache* build_cache() const = 0;
};

}  // namespace kbisect

#endif  // KBISECT_WORKER_TASK_EXECUTOR_H_
