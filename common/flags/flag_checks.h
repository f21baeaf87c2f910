// Copyright 2026 The kbisect Authors.
//
// The checks of every numeric flag of kbisect, kbisect-coordinator and kbisect-worker, and the one
// way their commands print a command line CLI11 refused. A refused value reads as a person would
// write it, naming the flag, the rule and what was given:
//
//   kbisect run: --timeout must be positive (seconds), not -5
//   Run `kbisect run --help` for usage.
//
// rather than CLI11's own "Value -5 not in range 0.000000 to 1797693134862315708145...".
//
//   app.add_option("--timeout", seconds, "...")->check(Positive("seconds"));
//   app.add_option("--runs", runs, "...")->check(WholeNumberIn(1, 1000));
//   try {
//     app.parse(args);
//   } catch (const CLI::ParseError& e) {
//     return ReportParseError(app, e);  // 0 after --help, else 2 (usage).
//   }
//
// The declarations need no CLI11: the .cc files that register flags include CLI/CLI.hpp (it costs
// seconds per translation unit), this header does not.
#ifndef KBISECT_COMMON_FLAGS_FLAG_CHECKS_H_
#define KBISECT_COMMON_FLAGS_FLAG_CHECKS_H_

#include <cstdint>
#include <iosfwd>
#include <string>

namespace CLI {
class App;
class ParseError;
class Validator;
}  // namespace CLI

namespace kbisect {

// A whole number from `min` to `max` (inclusive): "must be a whole number from 1 to 1000, not 0".
// `unit`, when given, follows the range in parentheses: "from 0 to 1024 (builds)".
CLI::Validator WholeNumberIn(int64_t min, int64_t max, const std::string& unit = "");

// A number from `min` to `max` (inclusive): "must be a number from 0.01 to 0.99, not 2".
CLI::Validator NumberIn(double min, double max, const std::string& unit = "");

// A number from `min` to `max` (inclusive) or the one word `word`: "must be a number from 0.5
// to 0.9999 or off, not 0.3".
CLI::Validator NumberInOr(double min, double max, const std::string& word);

// A number above 0: "must be positive (seconds), not -5".
CLI::Validator Positive(const std::string& unit = "");

// A number 0 or above: "must be 0 or more (seconds), not -1".
CLI::Validator NonNegative(const std::string& unit = "");

// The text of a command line CLI11 refused, as "APP: WHAT" (APP the app's name, e.g.
// "kbisect run"), with a value one of the checks above refused as "--timeout must be positive
// (seconds), not -5" (CLI11's ValidationError reads "--timeout: must ..."), then a line pointing
// at --help. Empty for --help and --version, which are not errors.
std::string ParseErrorText(const CLI::App& app, const CLI::ParseError& error);

// Prints `error` for the user: --help's and --version's text to stdout, anything else as
// ParseErrorText to `err`. Returns the exit code: 0 for --help and --version, 2 (usage) otherwise.
int ReportParseError(const CLI::App& app, const CLI::ParseError& error, std::ostream& err);
int ReportParseError(const CLI::App& app, const CLI::ParseError& error);  // To std::cerr.

}  // namespace kbisect

#endif  // KBISECT_COMMON_FLAGS_FLAG_CHECKS_H_
