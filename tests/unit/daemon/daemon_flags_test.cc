// Copyright 2026 The kbisect Authors.
#include "common/daemon/daemon_flags.h"

#include <stdlib.h>

#include <vector>

#include "CLI/CLI.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace {

using ::kbisect::testing::TempDir;
using ::kbisect::testing::WriteFile;
using ::testing::HasSubstr;

// Parses `args` (after the program name) with every shared flag added.
std::optional<int> Parse(std::vector<std::string> args, DaemonFlags* flags) {
  CLI::App app{"test daemon", "kbisect-test"};
  AddTlsCertificateFlags(&app, "certificate", "key", flags);
  AddTokenFileFlag(&app, "token", flags);
  AddLogFormatFlag(&app, "format", flags);
  args.insert(args.begin(), "kbisect-test");
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  return ParseDaemonCommandLine(&app, static_cast<int>(argv.size()), argv.data());
}

TEST(DaemonFlagsTest, DefaultsAreTextLogsAndNoToken) {
  DaemonFlags flags;
  EXPECT_EQ(Parse({}, &flags), std::nullopt);
  EXPECT_EQ(LoadLogFormat(flags).value(), LogFormat::kText);
  EXPECT_EQ(LoadToken(flags).value(), "");
  EXPECT_EQ(flags.tls_cert_file, "");
}

TEST(DaemonFlagsTest, FlagsAndEnvironmentVariablesAreRead) {
  TempDir dir("kbisect-daemon-flags");
  WriteFile(dir.Join("token"), "s3cret\n");
  setenv("KBISECT_TLS_KEY", "/keys/server.key", 1);
  DaemonFlags flags;
  EXPECT_EQ(Parse({"--log-format", "json", "--tls-cert", "/certs/server.pem", "--token-file",
                   dir.Join("token")},
                  &flags),
            std::nullopt);
  unsetenv("KBISECT_TLS_KEY");
  EXPECT_EQ(LoadLogFormat(flags).value(), LogFormat::kJson);
  EXPECT_EQ(flags.tls_cert_file, "/certs/server.pem");
  EXPECT_EQ(flags.tls_key_file, "/keys/server.key");
  EXPECT_EQ(LoadToken(flags).value(), "s3cret");
}

TEST(DaemonFlagsTest, ErrorsNameTheFlagOrTheFile) {
  DaemonFlags flags;
  flags.log_format = "xml";
  EXPECT_THAT(std::string(LoadLogFormat(flags).status().message()),
              HasSubstr("--log-format: unknown log format 'xml'"));
  flags.token_file = "/nonexistent/token";
  EXPECT_THAT(std::string(LoadToken(flags).status().message()), HasSubstr("/nonexistent/token"));
}

TEST(DaemonFlagsTest, HelpExitsZeroAndABadCommandLineExitsTwo) {
  DaemonFlags flags;
  EXPECT_EQ(Parse({"--help"}, &flags), 0);
  EXPECT_EQ(Parse({"--no-such-flag"}, &flags), 2);
}

}  // namespace
}  // namespace kbisect
