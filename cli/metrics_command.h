// Copyright 2026 The kbisect Authors.
//
// `kbisect metrics`: what kbisect reads from a benchmark's output, before a job runs on it.
//
//   kbisect metrics [FILE]                       every metric of a suite's output (auto)
//   kbisect metrics --suite regex:PATTERN [FILE] ... found by a regex with a (?P<name>...) group
//   kbisect metrics --suite json:PATH [FILE]     ... found by a JSON path with one '*'
//   kbisect metrics --metric REGEX [FILE]        the one metric `kbisect run --metric` reads
//   kbisect metrics --metric-json PATH [FILE]    the one metric `kbisect run --metric-json` reads
//   kbisect metrics --single [FILE]              the one metric `kbisect run` reads by default
//
// FILE is the benchmark's saved output; without it (or with "-") standard input is read, so
// `./bench | kbisect metrics` works. Each metric is printed on a line with its value in the
// canonical unit, the unit and which way it improves; --json prints them as a JSON array.
// The suite forms are those of common/metric/metric_suite.h (Google Benchmark JSON,
// pytest-benchmark JSON, a "name: value unit" table), the single forms those of metric.h.
#ifndef KBISECT_CLI_METRICS_COMMAND_H_
#define KBISECT_CLI_METRICS_COMMAND_H_

namespace kbisect {

// Runs `kbisect metrics` with argv starting at "metrics". Prints the metrics found to stdout.
// Returns 0 when it found at least one, 1 when it found none or cannot read FILE (the message
// says what was looked for and quotes the output's last lines), 2 on a usage error or an invalid
// spec.
int MetricsCommand(int argc, char** argv);

}  // namespace kbisect

#endif  // KBISECT_CLI_METRICS_COMMAND_H_
