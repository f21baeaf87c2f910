// Copyright 2026 The kbisect Authors.
//
// The human report of a finished (or running) bisect job, laid out as the seed's section 4.1
// report, plus small helpers the CLI shares with it.
//
//   ============================================================
//   PERFORMANCE REGRESSION BISECT RESULT
//   ============================================================
//
//   Regression introduced by:
//     Commit:  9f8e7d6c5b4a39281706f5e4d3c2b1a098765432
//     Author:  Ada Lovelace <ada@example.com>
//     Date:    2026-01-02 15:04:05 +0100
//     Message: Halve BLOCK_SIZE in the decode kernel
//
//   Performance impact:
//     Before (1a2b3c4): latency = 1.01ms
//     After (9f8e7d6): latency = 1.52ms
//     Regression: 50.5% slower
//
//   Files changed:
//     kernels/decode.py  +3 -1
//
//   Bisect log:
//     Step 1: 5c6d7e8 = 1.52ms -> BAD [worker w1, round 1]
//     Step 2: 3b4c5d6 = 1.00ms -> GOOD [worker w2, round 1]
//   ...
//
// After the seed's sections come the root-cause hints and hypothesis, the baselines, warnings
// and the job's counters. Other outcomes (candidates, no regression, inconclusive, error,
// cancelled, still running) replace the culprit sections with what the user needs instead.
#ifndef KBISECT_CLI_REPORT_REPORT_H_
#define KBISECT_CLI_REPORT_REPORT_H_

#include <string>
#include <string_view>

#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// Returns the text report of `job`, lines separated by "\n", ending with the closing banner and
// a newline. Values are printed as "%.4g" followed by job.metric_unit() (e.g. "1.52ms").
std::string FormatReport(const v1::JobStatus& job);

// Formats one metric value: "%.4g" followed by `unit` ("1.52ms", "812.3GB/s", "7" without one).
std::string FormatMetricValue(double value, std::string_view unit);

// Lower-case names without the type prefix, as in the JSON form: "culprit_found",
// "bisecting", "build_failed". An unknown value gives its number. (A verdict's word is
// report/words.h's VerdictWord.)
std::string OutcomeName(v1::Outcome outcome);
std::string JobStateName(v1::JobState state);
std::string TaskOutcomeName(v1::TaskOutcome outcome);

// The process exit code for a job's outcome, as `kbisect run` documents it: culprit_found and
// candidates_found 0, no_regression 3, inconclusive 4, anything else (error, cancelled, running,
// unspecified) 1.
int ExitCodeFor(v1::Outcome outcome);

// The exit code for a finished job: ExitCodeFor its outcome, except for a suite
// (JobStatus.suite) that was not cancelled and did not fail, whose outcome is its lead's: 0 when
// any metric has a culprit, else 4 when one moved without a culprit, else ExitCodeFor the
// outcome.
int ExitCodeForJob(const v1::JobStatus& job);

}  // namespace kbisect

#endif  // KBISECT_CLI_REPORT_REPORT_H_
