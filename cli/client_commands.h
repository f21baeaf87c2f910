// Copyright 2026 The kbisect Authors.
//
// The `kbisect` commands that talk to a running kbisect-coordinator (cluster mode):
//
//   kbisect submit GOOD [BAD] --repo URL [job options] [--request-id ID] [--wait] -- BENCH...
//   kbisect status [JOB] [--json]
//   kbisect watch JOB
//   kbisect workers [--json]
//   kbisect cancel JOB [--reason TEXT]
//
// Each takes --coordinator ADDR (KBISECT_COORDINATOR, default 127.0.0.1:7070), --token
// (KBISECT_TOKEN) or --token-file, and --tls-ca / --tls-cert / --tls-key for TLS. An unreachable
// coordinator is reported with its address and exit code 1; usage errors exit 2.
#ifndef KBISECT_CLI_CLIENT_COMMANDS_H_
#define KBISECT_CLI_CLIENT_COMMANDS_H_

#include <string>

namespace kbisect {

// True for "submit", "status", "watch", "workers" and "cancel".
bool IsClientCommand(const std::string& name);

// Runs one of them with argv starting at the subcommand name; returns the exit code.
int ClientCommand(int argc, char** argv);

}  // namespace kbisect

#endif  // KBISECT_CLI_CLIENT_COMMANDS_H_
