// Copyright 2026 The kbisect Authors.
//
// The per-probe Slurm mode (`kbisect-worker --slurm-per-probe`, issue 52): a launcher on a login
// node without a GPU holds the coordinator sessions and leases like workers do, but runs each
// leased task as a Slurm job of its own, `sbatch --wait --gres=gpu:1`, whose batch script runs
// `kbisect-worker --slurm-probe-job DIR` on the node (worker/probe_job.h). The launcher reads the
// task's result and the job's exit code from files in DIR, not from sacct (whose ExitCode mixes in
// signals and OOM kills), and reports the result like a worker. A job Slurm ended before the
// probe did (time limit, memory, node failure, scancel) left no exit code: an infrastructure
// loss, reported as TASK_OUTCOME_INFRA_ERROR so that the coordinator runs the task again.
//
// A queue friendlier than one allocation holding every GPU for the whole bisect; each probe waits
// in the queue, and its node's build cache is cold unless later probes are pinned to the node
// the first job ran on (`--slurm-pin-node`).
//
//   SlurmNodes nodes(/*pin=*/true);
//   absl::StatusOr<v1::RunnerIdentity> node = ProbeSlurmIdentity(options, &nodes, runner, &cancel);
//   SlurmProbeExecutor executor(options, /*slot=*/0, node->hardware_class(), &nodes, runner, &log);
//   WorkerAgent agent(agent_options, channel, &executor);
#ifndef KBISECT_WORKER_SLURM_PROBE_H_
#define KBISECT_WORKER_SLURM_PROBE_H_

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "common/exec/exec.h"
#include "common/log/log.h"
#include "common/sync/mutex.h"
#include "kbisect/v1/kbisect.pb.h"
#include "worker/task_executor.h"

namespace kbisect {

// How the launcher submits its probe jobs.
struct SlurmProbeOptions {
  // The kbisect-worker the batch script runs, at a path the compute nodes see.
  std::string worker_binary;
  // Where each job gets a directory of its own (task, result, identity, exit code, output): a
  // directory every node sees at the same path (a shared filesystem).
  std::string jobs_dir;
  // The probe's cache directory on the node (mirrors, checkouts, the node's build cache); empty:
  // ${SLURM_TMPDIR:-${TMPDIR:-/tmp}}/kbisect-$USER, expanded on the node.
  std::string node_cache_dir;
  // What each job asks for with --gres; empty asks for no GRES.
  std::string gres = "gpu:1";
  // The user's sbatch options (--partition=gpu, --account=..., --time=...), passed as they are
  // before the launcher's own.
  std::vector<std::string> sbatch_options;
  // kbisect-worker flags the probe job runs with (the build cache's size, the compiler cache,
  // the hardware-class keys).
  std::vector<std::string> probe_flags;
};

// Where the next jobs may run: the node they are pinned to (empty: any) and the nodes they must
// avoid (their GPUs are of another hardware class than the launcher's sessions).
struct SlurmNodeChoice {
  std::string pinned;
  std::vector<std::string> excluded;
};

// The node choice the launcher's slots share. Thread-safe.
class SlurmNodes {
 public:
  // With `pin`, the first node a job reports (Ran) is where every later job goes.
  explicit SlurmNodes(bool pin) : pin_(pin) {}

  // The choice for the next job.
  SlurmNodeChoice Choice() const;
  // A job ran on `node`: pins it when pinning and nothing is pinned yet.
  void Ran(const std::string& node);
  // Later jobs avoid `node`.
  void Exclude(const std::string& node);

 private:
  const bool pin_;
  mutable kbisect::Mutex mu_;
  std::string pinned_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> excluded_ ABSL_GUARDED_BY(mu_);
};

// The batch script of the job in `job_dir` for launcher slot `slot`: runs the probe job with the
// options' worker binary, cache directory and flags (the slot names its checkouts on the node),
// then writes its exit code to job_dir/exit-code (renamed into place) and exits with it. A job
// killed before the probe returned writes none.
std::string ProbeBatchScript(const SlurmProbeOptions& options, const std::string& job_dir,
                             int slot);

// The sbatch command line of the job named `job_name` in `job_dir`: --wait --parsable, the user's
// options, then the launcher's own (which win): --job-name, --output=job_dir/job.out,
// --gres (unless empty), --nodelist when pinned, --exclude for avoided nodes, and the script.
std::vector<std::string> SbatchCommand(const SlurmProbeOptions& options,
                                       const std::string& job_name, const std::string& job_dir,
                                       const SlurmNodeChoice& nodes);

// What a probe job left in its directory.
struct ProbeJobOutput {
  std::optional<int> exit_code;  // exit-code's number; nullopt when there is none.
  std::optional<v1::TaskResult> result;
  std::optional<v1::RunnerIdentity> identity;
  std::string output_tail;  // The last lines of job.out.
};

// Reads what the job in `job_dir` left (a file that is missing or does not parse is nullopt).
ProbeJobOutput ReadProbeJob(const std::string& job_dir);

// The result to report for a finished probe job, and the node to avoid from now on (empty:
// none). `job` names the job for messages ("Slurm job kbisect-probe-... (sbatch exited with code
// 1)"); `hardware_class` is the launcher sessions' class. The task's own result when the job
// exited and wrote one on a node of that class; otherwise TASK_OUTCOME_INFRA_ERROR (the
// coordinator runs the task again) saying why: the job ended without an exit code (killed by
// Slurm), exited without a result, or ran on a node of another class (that node is avoided).
struct ProbeJobVerdict {
  v1::TaskResult result;
  std::string avoid_node;
};
ProbeJobVerdict JudgeProbeJob(const ProbeJobOutput& output, const std::string& job,
                              const std::string& hardware_class);

// One job submitted and waited for (RunSlurmProbeJob): its name, the directory it used (removed
// when it returns), how sbatch ended, and what the job left.
struct SlurmProbeJob {
  std::string name;
  ExecResult sbatch;
  ProbeJobOutput output;
};

// Submits a probe job for launcher slot `slot` running `task` (null: the identity job, which only
// probes the node) in a new directory under options.jobs_dir, placed by `nodes`, and waits for it
// through `runner`. When `cancel` is set meanwhile, sbatch is stopped and the job scancelled by
// its name before this returns (sbatch.cancelled is then set). Errors: the directory or its files
// could not be written, or sbatch could not be started.
absl::StatusOr<SlurmProbeJob> RunSlurmProbeJob(const SlurmProbeOptions& options, int slot,
                                               const v1::Task* task, const SlurmNodes& nodes,
                                               CommandRunner* runner, const Cancellation* cancel);

// The identity of a node the jobs run on, as the first job (the identity job) reports it; records
// its node in `nodes` (the pin). Errors say why the job gave none, with its output's tail.
absl::StatusOr<v1::RunnerIdentity> ProbeSlurmIdentity(const SlurmProbeOptions& options,
                                                      SlurmNodes* nodes, CommandRunner* runner,
                                                      const Cancellation* cancel);

// A TaskExecutor that runs each task as a Slurm job (above), for one launcher slot: one job at a
// time. Its results are judged by JudgeProbeJob; each job is logged with its node and outcome.
class SlurmProbeExecutor : public TaskExecutor {
 public:
  // `nodes`, `runner` and `log` must outlive the executor. `hardware_class` is the class the
  // slot's session announced (the identity job's).
  SlurmProbeExecutor(SlurmProbeOptions options, int slot, std::string hardware_class,
                     SlurmNodes* nodes, CommandRunner* runner, const Logger* log);

  v1::TaskResult Run(const v1::Task& task, const Cancellation* cancel,
                     const ProgressCallback& progress) override;

  // None in this process: the builds run on the nodes.
  const BuildCache* build_cache() const override { return nullptr; }

 private:
  const SlurmProbeOptions options_;
  const int slot_;
  const std::string hardware_class_;
  SlurmNodes* const nodes_;
  CommandRunner* const runner_;
  const Logger* const log_;
};

}  // namespace kbisect

#endif  // KBISECT_WORKER_SLURM_PROBE_H_
