// Copyright 2026 The kbisect Authors.
//
// What the benchmarks in bench/ share: running shell commands, quoting, scratch directories,
// reading timestamps and durations out of `kbisect run --json` output, and medians.
#ifndef KBISECT_BENCH_BENCH_UTIL_H_
#define KBISECT_BENCH_BENCH_UTIL_H_

#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace kbisect_bench {

struct Shell {
  int exit_code;    // -1 when the command could not be started or did not exit normally
  std::string out;  // its stdout
};

// Runs `command` with /bin/sh and returns its exit code and stdout (stderr is left alone).
Shell RunShell(const std::string& command);

// `s` single-quoted for /bin/sh.
std::string ShellQuote(const std::string& s);

// Creates a fresh directory /tmp/PREFIX.XXXXXX and returns its path ("" on failure).
std::string MakeTempDir(const std::string& prefix);

// The contents of `path` ("" when it cannot be read).
std::string ReadFile(const std::string& path);

// The number of lines in `path` (0 when it does not exist): the build counters.
int CountLines(const std::string& path);

// Seconds since the epoch of an RFC 3339 timestamp (0 when it does not parse).
double Seconds(const nlohmann::json& rfc3339);

// Seconds of a proto3 JSON duration ("1.5s"; 0 when it is not a string).
double DurationSeconds(const nlohmann::json& duration);

// The median of `v` (0 when empty).
double Median(std::vector<double> v);

}  // namespace kbisect_bench

#endif  // KBISECT_BENCH_BENCH_UTIL_H_
