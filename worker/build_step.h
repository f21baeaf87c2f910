// Copyright 2026 The kbisect Authors.
//
// One run of a task's build command, and how it ended in the terms of a task's result: the
// outcome a failure maps to, a sentence naming the commit, and the output's tail. Shared by the
// task runner (builds in a slot's checkout) and the build cache (builds in a cache entry), so a
// build fails, times out and is cancelled the same way in both.
#ifndef KBISECT_WORKER_BUILD_STEP_H_
#define KBISECT_WORKER_BUILD_STEP_H_

#include <functional>
#include <map>
#include <string>

#include "absl/time/time.h"
#include "common/exec/exec.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// How a build (or the preparation around it) ended.
struct BuildStep {
  // TASK_OUTCOME_UNSPECIFIED when it succeeded; otherwise the task's outcome: INFRA_ERROR (the
  // build could not start, or the checkout around it failed), CANCELLED, TIMED_OUT or
  // BUILD_FAILED.
  v1::TaskOutcome failure = v1::TASK_OUTCOME_UNSPECIFIED;
  // When it failed: one sentence a user can act on, and the build output's last lines.
  std::string message;
  std::string log_tail;
  // The build command's wall time as the CommandRunner reports it (zero when none ran).
  absl::Duration wall_time = absl::ZeroDuration();
  // The CPU time the build command used (ExecResult::cpu_time): wall_time and cpu_time say how
  // many cores a build keeps busy (build_slots.h).
  absl::Duration cpu_time = absl::ZeroDuration();

  bool ok() const { return failure == v1::TASK_OUTCOME_UNSPECIFIED; }
};

// What to build: the shell command, its environment and timeout.
struct BuildCommand {
  std::string shell_command;
  std::map<std::string, std::string> env;
  absl::Duration timeout = absl::InfiniteDuration();
  // ExecRequest::on_started of the build's process (unset: nothing): a build is measured while
  // it runs (HostBuildSlots::Register).
  std::function<void(int process_group)> on_started;
};

// The number of output lines a failure keeps in its log tail.
inline constexpr int kBuildTailLines = 20;

// A build that exits with this code (sysexits' EX_TEMPFAIL) says it could not run here, not that
// the commit is broken: an index or a cache it needs cannot be reached from this worker. Its step
// is an infrastructure error (the task is tried again, elsewhere), never a failed build (a skip).
inline constexpr int kBuildCannotRunHereExitCode = 75;

// Runs `build` in `dir`, the checkout of commit `sha`, through `runner`, stopping when `cancel`
// (may be null) is set: then the command's process group has been killed and the step is
// CANCELLED. A build exiting with kBuildCannotRunHereExitCode is an INFRA_ERROR. Never returns
// an error status: every way a build can end is a BuildStep.
BuildStep RunBuild(CommandRunner* runner, const BuildCommand& build, const std::string& dir,
                   const std::string& sha, const Cancellation* cancel);

// A failed step with `failure`, `message` and no output (a checkout or cache error, or a
// cancellation outside the build command).
BuildStep FailedStep(v1::TaskOutcome failure, std::string message);

}  // namespace kbisect

#endif  // KBISECT_WORKER_BUILD_STEP_H_
