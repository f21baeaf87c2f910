// Copyright 2026 The kbisect Authors.
//
// `kbisect run`: bisect on this machine with an embedded coordinator and one worker per GPU.
#ifndef KBISECT_CLI_RUN_COMMAND_H_
#define KBISECT_CLI_RUN_COMMAND_H_

namespace kbisect {

// Exit codes shared by `run` and `submit --wait`.
enum ExitCode {
  kExitCulprit = 0,        // Culprit (or candidate range) found.
  kExitError = 1,          // Bad input, failing GOOD/BAD, infrastructure error, cancelled.
  kExitUsage = 2,          // Command-line usage error.
  kExitNoRegression = 3,   // GOOD and BAD do not differ.
  kExitInconclusive = 4,   // Failures or noise left no answer.
  kExitInterrupted = 130,  // Ctrl-C / SIGTERM: every process was stopped.
};

// Runs `kbisect run` with argv starting at the subcommand name ("run", ...); with "try", `kbisect
// try` (cli/try_change.h): the same local cluster, measuring a change on BASE.
int RunCommand(int argc, char** argv);

}  // namespace kbisect

#endif  // KBISECT_CLI_RUN_COMMAND_H_
