// Copyright 2026 The kbisect Authors.
//
// `kbisect nightly`: the nightly trigger. Takes (or runs) tonight's benchmark result for a commit,
// records it with its measurement manifest in a JSON-lines history, triages the history, and
// submits one bisect to the coordinator only for a real regression step, keyed so that reruns and
// later nights never start a second one.
#ifndef KBISECT_CLI_NIGHTLY_COMMAND_H_
#define KBISECT_CLI_NIGHTLY_COMMAND_H_

namespace kbisect {

// Runs `kbisect nightly` with argv starting at "nightly". Exit codes: 0 nothing to do, 1 error,
// 2 usage, 3 real regression (a bisect submitted now or on an earlier night), 4 benchmark method
// change, 5 hardware issue, 6 noise, 7 gradual drift (see triage::NightlyExitCode).
int NightlyCommand(int argc, char** argv);

}  // namespace kbisect

#endif  // KBISECT_CLI_NIGHTLY_COMMAND_H_
