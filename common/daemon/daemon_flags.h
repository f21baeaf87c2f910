// Copyright 2026 The kbisect Authors.
//
// The command-line pieces the two daemons, kbisect-coordinator and kbisect-worker, share: the
// --log-format, --tls-cert/--tls-key and --token-file flags with their environment variables,
// parsing the command line with the daemons' exit codes, and loading what those flags name. Each
// daemon still words its own help texts (they differ: a server certificate, a client one) and
// places these flags among its own, so its --help reads as before.
//
//   DaemonFlags flags;
//   AddLogFormatFlag(&app, "text or json", &flags);
//   AddTokenFileFlag(&app, "File holding the bearer token", &flags);
//   if (std::optional<int> exit_code = ParseDaemonCommandLine(&app, argc, argv)) return *exit_code;
//   absl::StatusOr<LogFormat> format = LoadLogFormat(flags);
//   if (!format.ok()) { std::cerr << "kbisect-x: " << format.status().message() << "\n"; ... }
//   absl::StatusOr<std::string> token = LoadToken(flags);  // "" without --token-file.
#ifndef KBISECT_COMMON_DAEMON_DAEMON_FLAGS_H_
#define KBISECT_COMMON_DAEMON_DAEMON_FLAGS_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "common/log/log.h"

// CLI11 is included only where flags are registered: it costs seconds per translation unit.
namespace CLI {
class App;
}  // namespace CLI

namespace kbisect {

// The values of the shared flags, as given (nothing is read or checked until Load*).
struct DaemonFlags {
  std::string log_format = "text";  // --log-format [KBISECT_LOG_FORMAT]
  std::string tls_cert_file;        // --tls-cert [KBISECT_TLS_CERT]
  std::string tls_key_file;         // --tls-key [KBISECT_TLS_KEY]
  std::string token_file;           // --token-file [KBISECT_TOKEN_FILE]
};

// Adds --log-format (default "text", shown in --help) to `app`. `flags` must outlive parsing.
void AddLogFormatFlag(CLI::App* app, const std::string& help, DaemonFlags* flags);

// Adds --tls-cert and --tls-key (in that order) to `app`. `flags` must outlive parsing.
void AddTlsCertificateFlags(CLI::App* app, const std::string& cert_help,
                            const std::string& key_help, DaemonFlags* flags);

// Adds --token-file to `app`. `flags` must outlive parsing.
void AddTokenFileFlag(CLI::App* app, const std::string& help, DaemonFlags* flags);

// Parses the command line. Returns the exit code when the daemon should exit at once: 0 after
// --help, 2 for a bad command line (printed by ReportParseError, common/flags/flag_checks.h:
// "kbisect-worker: --gpu must be ..."); nullopt when it should go on.
std::optional<int> ParseDaemonCommandLine(CLI::App* app, int argc, char** argv);

// Returns the format named by --log-format; InvalidArgument "--log-format: <why>" otherwise.
absl::StatusOr<LogFormat> LoadLogFormat(const DaemonFlags& flags);

// Returns the token in the --token-file (ReadTokenFile: surrounding whitespace removed), or ""
// when no token file is given. The error of an unreadable or empty file names the file, never a
// token.
absl::StatusOr<std::string> LoadToken(const DaemonFlags& flags);

}  // namespace kbisect

#endif  // KBISECT_COMMON_DAEMON_DAEMON_FLAGS_H_
