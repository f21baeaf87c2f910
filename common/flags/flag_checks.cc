// Copyright 2026 The kbisect Authors.
#include "common/flags/flag_checks.h"

#include <cmath>
#include <iostream>
#include <utility>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace kbisect {
namespace {

constexpr int kExitUsage = 2;  // As cli/run_command.h's kExitUsage and the daemons' usage code.

// " (seconds)" after a rule, or nothing.
std::string UnitSuffix(const std::string& unit) {
  return unit.empty() ? "" : absl::StrCat(" (", unit, ")");
}

// The value as given, quoted when it is not a plain number (empty, text).
std::string AsGiven(const std::string& input) {
  double ignored = 0;
  if (absl::SimpleAtod(input, &ignored) && std::isfinite(ignored)) return input;
  return absl::StrCat("'", input, "'");
}

bool ParseNumber(const std::string& input, double* value) {
  return absl::SimpleAtod(input, value) && std::isfinite(*value);
}

// A validator whose failure reads "must be <rule>, not <input>"; `ok` says whether a value passes.
template <typename Ok>
CLI::Validator Check(std::string rule, std::string description, Ok ok) {
  return CLI::Validator(
      [rule = std::move(rule), ok](std::string& input) -> std::string {
        if (ok(input)) return "";
        return absl::StrCat("must be ", rule, ", not ", AsGiven(input));
      },
      std::move(description));
}

}  // namespace

CLI::Validator WholeNumberIn(int64_t min, int64_t max, const std::string& unit) {
  return Check(absl::StrCat("a whole number from ", min, " to ", max, UnitSuffix(unit)),
               absl::StrCat(min, "..", max), [min, max](const std::string& input) {
                 int64_t value = 0;
                 return absl::SimpleAtoi(input, &value) && value >= min && value <= max;
               });
}

CLI::Validator NumberIn(double min, double max, const std::string& unit) {
  return Check(absl::StrCat("a number from ", min, " to ", max, UnitSuffix(unit)),
               absl::StrCat(min, "..", max), [min, max](const std::string& input) {
                 double value = 0;
                 return ParseNumber(input, &value) && value >= min && value <= max;
               });
}

CLI::Validator NumberInOr(double min, double max, const std::string& word) {
  return Check(absl::StrCat("a number from ", min, " to ", max, " or ", word),
               absl::StrCat(min, "..", max, "|", word), [min, max, word](const std::string& input) {
                 double value = 0;
                 return input == word || (ParseNumber(input, &value) && value >= min && value <= max);
               });
}

CLI::Validator Positive(const std::string& unit) {
  return Check(absl::StrCat("positive", UnitSuffix(unit)), "POSITIVE", [](const std::string& in) {
    double value = 0;
    return ParseNumber(in, &value) && value > 0;
  });
}

CLI::Validator NonNegative(const std::string& unit) {
  return Check(absl::StrCat("0 or more", UnitSuffix(unit)), "NONNEGATIVE",
               [](const std::string& in) {
                 double value = 0;
                 return ParseNumber(in, &value) && value >= 0;
               });
}

std::string ParseErrorText(const CLI::App& app, const CLI::ParseError& error) {
  if (error.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return "";
  std::string what = error.what();
  // CLI11 words a refused value "NAME: MESSAGE"; the checks above word MESSAGE "must be ...", so
  // "--timeout must be positive (seconds), not -5" reads as one sentence.
  if (error.get_name() == "ValidationError") {
    const size_t colon = what.find(": must be ");
    if (colon != std::string::npos) what.erase(colon, 1);
  }
  const std::string& name = app.get_name();
  return absl::StrCat(name.empty() ? "kbisect" : name, ": ", what, "\nRun `",
                      name.empty() ? "kbisect" : name, " --help` for usage.\n");
}

int ReportParseError(const CLI::App& app, const CLI::ParseError& error, std::ostream& err) {
  if (error.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
    return app.exit(error, std::cout, err);  // --help, --help-all, --version.
  }
  err << ParseErrorText(app, error) << std::flush;
  return kExitUsage;
}

int ReportParseError(const CLI::App& app, const CLI::ParseError& error) {
  return ReportParseError(app, error, std::cerr);
}

}  // namespace kbisect
