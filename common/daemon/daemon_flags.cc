// Copyright 2026 The kbisect Authors.
#include "common/daemon/daemon_flags.h"

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/flags/flag_checks.h"
#include "common/rpc/credentials.h"

namespace kbisect {

void AddLogFormatFlag(CLI::App* app, const std::string& help, DaemonFlags* flags) {
  app->add_option("--log-format", flags->log_format, help)
      ->envname("KBISECT_LOG_FORMAT")
      ->capture_default_str();
}

void AddTlsCertificateFlags(CLI::App* app, const std::string& cert_help,
                            const std::string& key_help, DaemonFlags* flags) {
  app->add_option("--tls-cert", flags->tls_cert_file, cert_help)->envname("KBISECT_TLS_CERT");
  app->add_option("--tls-key", flags->tls_key_file, key_help)->envname("KBISECT_TLS_KEY");
}

void AddTokenFileFlag(CLI::App* app, const std::string& help, DaemonFlags* flags) {
  app->add_option("--token-file", flags->token_file, help)->envname("KBISECT_TOKEN_FILE");
}

std::optional<int> ParseDaemonCommandLine(CLI::App* app, int argc, char** argv) {
  try {
    app->parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return ReportParseError(*app, e);
  }
  return std::nullopt;
}

absl::StatusOr<LogFormat> LoadLogFormat(const DaemonFlags& flags) {
  absl::StatusOr<LogFormat> format = ParseLogFormat(flags.log_format);
  if (!format.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--log-format: ", format.status().message()));
  }
  return format;
}

absl::StatusOr<std::string> LoadToken(const DaemonFlags& flags) {
  if (flags.token_file.empty()) return std::string();
  return ReadTokenFile(flags.token_file);
}

}  // namespace kbisect
