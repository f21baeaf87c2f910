// Copyright 2026 The kbisect Authors.
//
// One probe job of `kbisect-worker --slurm-per-probe` (worker/slurm_probe.h), on the compute node
// Slurm gave it: the launcher on the login node writes the task into a job directory on a shared
// filesystem and submits a batch script that runs `kbisect-worker --slurm-probe-job DIR` there.
// That mode runs exactly one task with the normal TaskRunner of a slot whose device is the one
// Slurm bound, in the node's cache directory, and writes what the launcher reads back:
//
//   DIR/task.pb       the v1::Task (written by the launcher; absent for the identity job)
//   DIR/identity.pb   the v1::RunnerIdentity of the slot on the node (always)
//   DIR/result.pb     the v1::TaskResult (only when the task ran to an outcome)
//   DIR/exit-code     the probe's exit code, written by the batch script after it returned
//   DIR/job.out       the job's stdout and stderr (sbatch --output)
//
// Each file is written under a temporary name and renamed, so a file that exists is whole. A job
// that Slurm killed (time limit, memory, node failure, scancel) leaves no exit-code file.
#ifndef KBISECT_WORKER_PROBE_JOB_H_
#define KBISECT_WORKER_PROBE_JOB_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/log/log.h"
#include "google/protobuf/message_lite.h"
#include "kbisect/v1/kbisect.pb.h"
#include "worker/task_executor.h"

namespace kbisect {

// The file names of a probe job's directory (above).
inline constexpr char kProbeTaskFile[] = "task.pb";
inline constexpr char kProbeIdentityFile[] = "identity.pb";
inline constexpr char kProbeResultFile[] = "result.pb";
inline constexpr char kProbeExitCodeFile[] = "exit-code";
inline constexpr char kProbeOutputFile[] = "job.out";
inline constexpr char kProbeScriptFile[] = "probe.sh";

// Writes `message` to `path` in its binary form, through `path`.tmp renamed (so a reader sees
// the whole file or none). Errors name the path.
absl::Status WriteProtoFile(const std::string& path, const google::protobuf::MessageLite& message);

// Reads `path` into `message`: NotFound when there is no such file, DataLoss when it does not
// parse.
absl::Status ReadProtoFile(const std::string& path, google::protobuf::MessageLite* message);

// The probe job's work in `dir`: writes `identity` to identity.pb, then, when task.pb exists,
// runs its task with `executor` and writes the result (its hardware class set from `identity`)
// to result.pb. The first SIGTERM or SIGINT (which the caller must have blocked,
// BlockTerminationSignals) cancels the task, which kills its commands; no result is written.
// Returns the process's exit code: 0 when the files were written (whatever the task's outcome),
// 1 when one could not be read or written (said through `log`), 143 after a signal.
int RunProbeJob(const std::string& dir, const v1::RunnerIdentity& identity, TaskExecutor* executor,
                const Logger& log);

}  // namespace kbisect

#endif  // KBISECT_WORKER_PROBE_JOB_H_
