// Copyright 2026 The kbisect Authors.
//
// What the `kbisect run` integration tests share: the binaries and sources from the test's
// environment (KBISECT_BIN_DIR, KBISECT_SOURCE_DIR, set by CMake), demo repositories from
// scripts/make-demo-repo.sh, and a fixture that runs `kbisect` with a private cache and a fast
// demo benchmark in a temporary directory.
#ifndef KBISECT_TESTS_INTEGRATION_RUN_FIXTURE_H_
#define KBISECT_TESTS_INTEGRATION_RUN_FIXTURE_H_

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace testing {

inline std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

inline std::string Kbisect() { return Env("KBISECT_BIN_DIR") + "/kbisect"; }

inline std::string Trim(const std::string& s) { return std::string(absl::StripAsciiWhitespace(s)); }

// Generates a demo repository at `dir` (make-demo-repo.sh with `options`); returns its output
// (the culprit sha, or key=sha lines with --merge-branch / --second-step).
inline std::string MakeRepo(const std::string& dir, const std::string& options) {
  CommandResult made = RunShell(absl::StrCat(
      Env("KBISECT_SOURCE_DIR"), "/scripts/make-demo-repo.sh ", ShellQuote(dir), " ", options));
  EXPECT_EQ(made.exit_code, 0) << made.err;
  return Trim(made.out);
}

class KbisectRunTest : public ::testing::Test {
 protected:
  // Runs kbisect with a private cache and a fast demo benchmark, and `env` ("NAME=VALUE ...")
  // in its environment.
  CommandResult Run(const std::string& args, const std::string& env = "") {
    return RunShell(absl::StrCat("cd ", ShellQuote(tmp_.path()), " && KBISECT_DEMO_SLEEP=0.01 ",
                                 "KBISECT_CACHE_DIR=", ShellQuote(tmp_.Join("cache")), " ", env,
                                 " ", Kbisect(), " ", args));
  }
  // Runs `kbisect run v1.0 HEAD --repo REPO --workers 2 FLAGS --json ... -- ./bench.sh`, expects
  // exit 0 and returns the JSON result (null when there is none).
  nlohmann::json RunForJson(const std::string& repo, const std::string& flags,
                            const std::string& name) {
    const std::string json = tmp_.Join(name);
    CommandResult run = Run(absl::StrCat("run v1.0 HEAD --repo ", repo, " --workers 2 ", flags,
                                         " --json ", json, " -- ./bench.sh"));
    EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
    if (run.exit_code != 0) return nlohmann::json();
    return nlohmann::json::parse(ReadFile(json));
  }

  TempDir tmp_{"kbisect-run-test"};
};

}  // namespace testing
}  // namespace kbisect

#endif  // KBISECT_TESTS_INTEGRATION_RUN_FIXTURE_H_
