// Copyright 2026 The kbisect Authors.
#include "common/flags/flag_checks.h"

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Parses `args` (no program name) on an app with one flag of each check; returns what would be
// printed and sets `code` to the exit code.
std::string Parse(std::vector<std::string> args, int* code) {
  CLI::App app{"test", "kbisect test"};
  double timeout = 1;
  double drain = 0;
  int runs = 3;
  double threshold = 0.3;
  app.add_option("--timeout", timeout)->check(Positive("seconds"));
  app.add_option("--drain", drain)->check(NonNegative("seconds"));
  app.add_option("--runs", runs)->check(WholeNumberIn(1, 1000));
  app.add_option("--threshold", threshold)->check(NumberIn(0.01, 0.99));
  std::reverse(args.begin(), args.end());
  std::ostringstream err;
  *code = -1;
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    *code = ReportParseError(app, e, err);
  }
  return err.str();
}

TEST(FlagChecksTest, RefusedValuesReadAsAPersonWouldWriteThem) {
  int code = 0;
  EXPECT_EQ(Parse({"--timeout", "-5"}, &code),
            "kbisect test: --timeout must be positive (seconds), not -5\n"
            "Run `kbisect test --help` for usage.\n");
  EXPECT_EQ(code, 2);
  EXPECT_THAT(Parse({"--timeout", "0"}, &code), HasSubstr("--timeout must be positive"));
  EXPECT_THAT(Parse({"--timeout", "abc"}, &code), HasSubstr("not 'abc'"));
  EXPECT_THAT(Parse({"--drain", "-1"}, &code),
              HasSubstr("--drain must be 0 or more (seconds), not -1"));
  EXPECT_THAT(Parse({"--runs", "0"}, &code),
              HasSubstr("--runs must be a whole number from 1 to 1000, not 0"));
  EXPECT_THAT(Parse({"--runs", "2.5"}, &code), HasSubstr("not 2.5"));
  EXPECT_THAT(Parse({"--threshold", "2"}, &code),
              HasSubstr("--threshold must be a number from 0.01 to 0.99, not 2"));
  EXPECT_EQ(code, 2);
  const std::string digits = Parse({"--timeout", "-5"}, &code);
  EXPECT_THAT(digits, Not(HasSubstr("179769")));
  EXPECT_THAT(digits, Not(HasSubstr("0.000000")));
}

TEST(FlagChecksTest, ValuesInRangePass) {
  int code = 0;
  EXPECT_EQ(
      Parse({"--timeout", "0.5", "--drain", "0", "--runs", "1000", "--threshold", "0.01"}, &code),
      "");
  EXPECT_EQ(code, -1);
}

TEST(FlagChecksTest, OtherErrorsKeepCli11sWordsUnderTheCommandsName) {
  int code = 0;
  EXPECT_THAT(Parse({"--no-such-flag"}, &code), HasSubstr("kbisect test: "));
  EXPECT_EQ(code, 2);
}

}  // namespace
}  // namespace kbisect
