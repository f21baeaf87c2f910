// Copyright 2026 The kbisect Authors.
#include "worker/build_step.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace kbisect {

BuildStep FailedStep(v1::TaskOutcome failure, std::string message) {
  BuildStep step;
  step.failure = failure;
  step.message = std::move(message);
  return step;
}

BuildStep RunBuild(CommandRunner* runner, const BuildCommand& build, const std::string& dir,
                   const std::string& sha, const Cancellation* cancel) {
  ExecRequest request;
  request.shell_command = build.shell_command;
  request.cwd = dir;
  request.env = build.env;
  request.timeout = build.timeout;
  request.on_started = build.on_started;
  absl::StatusOr<ExecResult> built = runner->Run(request, cancel);
  if (!built.ok()) {
    return FailedStep(v1::TASK_OUTCOME_INFRA_ERROR,
                      absl::StrCat("could not start the build: ", built.status().message()));
  }
  BuildStep step;
  step.wall_time = built->wall_time;
  step.cpu_time = built->cpu_time;
  if (built->cancelled) {
    step.failure = v1::TASK_OUTCOME_CANCELLED;
    step.message = "cancelled";
  } else if (!built->timed_out && built->exit_code == kBuildCannotRunHereExitCode) {
    step.failure = v1::TASK_OUTCOME_INFRA_ERROR;
    step.message =
        absl::StrCat("the build at ", sha.substr(0, 7), " could not run on this worker (exit ",
                     kBuildCannotRunHereExitCode, ": something it needs is out of reach)");
    step.log_tail = built->Tail(kBuildTailLines);
  } else if (!built->ok()) {
    step.failure = built->timed_out ? v1::TASK_OUTCOME_TIMED_OUT : v1::TASK_OUTCOME_BUILD_FAILED;
    step.message = absl::StrCat("build at ", sha.substr(0, 7), " ", built->Describe());
    step.log_tail = built->Tail(kBuildTailLines);
  }
  return step;
}

}  // namespace kbisect
