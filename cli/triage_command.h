// Copyright 2026 The kbisect Authors.
//
// `kbisect triage`: explain a nightly dashboard move (real regression, benchmark method change,
// hardware issue or noise) and, for a real regression, rank the commits of its window and start
// (--run, --submit) or print the bisect over it.
#ifndef KBISECT_CLI_TRIAGE_COMMAND_H_
#define KBISECT_CLI_TRIAGE_COMMAND_H_

namespace kbisect {

// Runs `kbisect triage` with argv starting at the subcommand name ("triage", ...). Returns 0 when
// the report was produced (whatever the cause), 1 on an error (unreadable or malformed input, an
// unknown platform, kernel or metric, a repository problem), 2 on a usage error; with --run or
// --submit (and no --dry-run) for a real regression, the process becomes that `kbisect run` /
// `kbisect submit` and exits with its code.
int TriageCommand(int argc, char** argv);

}  // namespace kbisect

#endif  // KBISECT_CLI_TRIAGE_COMMAND_H_
