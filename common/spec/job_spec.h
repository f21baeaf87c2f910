// Copyright 2026 The kbisect Authors.
//
// The one home of a job's defaults and of the checks a spec must pass before any work starts.
// The CLI's flags (cli/job_options.h), the coordinator (BisectJob, Coordinator::SubmitJob), the
// probe classifier's options and the worker's TaskRunner all read their defaults from here, so
// `kbisect run` without flags, a bare SubmitJob over gRPC and a task with unset timeouts mean
// the same job.
#ifndef KBISECT_COMMON_SPEC_JOB_SPEC_H_
#define KBISECT_COMMON_SPEC_JOB_SPEC_H_

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/metric/metric.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// Benchmark runs per commit in perf mode (the seed procedure's three runs).
inline constexpr int kDefaultRunsPerCommit = 3;
// Runs per commit in pass/fail (--exit-code) mode: one exit code is a verdict.
inline constexpr int kDefaultPassFailRuns = 1;
// Most runs per commit when a verdict is unclear.
inline constexpr int kDefaultMaxRuns = 30;
// A flaky pass/fail test (--flaky): runs of a commit's first task, and the most runs per commit
// (telling "fails 10% of the time" from "never fails" to 0.5% takes about 50 passes).
inline constexpr int kDefaultFlakyRuns = 4;
inline constexpr int kDefaultFlakyMaxRuns = 120;
// The culprit probability a flaky bisect stops at (--confidence).
inline constexpr double kDefaultFlakyConfidence = 0.995;
// The culprit probability a bisect with a metric goes on to unless `--confidence off`
// (decision 138): at CV 5% / effect 5% it lifts the right-commit rate from 80-88% to >= 98%.
inline constexpr double kDefaultMetricConfidence = 0.99;
// Most runs per commit with a metric and --confidence: room for the end check to reach it.
inline constexpr int kDefaultConfidenceMaxRuns = 60;
// The seed's point rule: a commit is BAD past good + 0.3 * (bad - good).
inline constexpr double kDefaultThresholdFraction = 0.3;
// Time limits of one build and one benchmark run.
inline constexpr absl::Duration kDefaultBuildTimeout = absl::Minutes(30);
inline constexpr absl::Duration kDefaultBenchTimeout = absl::Minutes(10);
// Cached results older than this are not reused (`--cache-max-age`).
inline constexpr absl::Duration kDefaultCacheMaxAge = absl::Hours(7 * 24);
// `--find-good`: the farthest commit back from BAD the lookback tries (cli/find_good.h).
inline constexpr int kDefaultMaxLookback = 512;
// Largest accepted runs_per_commit / max_runs.
inline constexpr int kMaxRunsPerCommit = 1000;

// Fills the unset fields of `spec` with the defaults above: runs per commit (1 with
// --exit-code, 4 with --flaky, else 3), max runs (at least runs per commit; 120 with --flaky, 60
// with a metric and a confidence), the confidence (0.995 with --flaky, 0.99 with a metric unless
// confidence_off), the threshold, first-parent history; improvements allowed with --find-fix
// and for a try job, which is also confirmed. Set fields are kept.
void NormalizeSpec(v1::JobSpec* spec);

// True when the spec lets a benchmark that repeats exactly take one run a probe (decision 229):
// --runs was left at its default of more than one run, and the job measures one metric (not a
// pass/fail test, not a suite). Whether the benchmark does repeat exactly is the job's to see
// (Calibration::RepeatsExactly).
bool MayRunOncePerProbe(const v1::JobSpec& spec);

// Checks a spec as submitted (before NormalizeSpec): a repository, a GOOD revision and a
// benchmark command are present, and ValidateJobSettings. A bad --metric fails at submit rather
// than on a worker after a checkout and a build. Errors: InvalidArgument saying what to fix, in
// the words of the flags (`--metric`, `--threshold`) a user of `kbisect run` or `submit` gives.
absl::Status ValidateSpec(const v1::JobSpec& spec);

// The checks of ValidateSpec on the flags' values, which need no repository, no GOOD and no
// benchmark command: the threshold is in [0, 1), runs per commit in 0..1000, --flaky needs
// --exit-code, the confidence is in [0, 1) and not for a plain --exit-code test, --find-fix and
// a try job have a metric (and --find-fix no suite), every
// --descend-pin names a file and a repository, and the metric passes ValidateMetricFlags. `kbisect
// run` and `submit` run them (cli/job_options.h, ToJobSpec) before anything starts: no cluster, no
// worker, no mirror.
absl::Status ValidateJobSettings(const v1::JobSpec& spec);

// Checks a metric given by --metric (kRegex) or --metric-json (kJsonPath): the pattern is not
// empty, a regex compiles with exactly one capturing group, a JSON path has no empty component.
// InvalidArgument quotes the pattern as the user gave it and says what --metric and
// --metric-json take, e.g. "invalid metric regex '(': missing ): (. Give --metric an RE2 regex
// with one capturing group around the number (...), or --metric-json a dotted path (...)".
absl::Status ValidateMetricFlags(const MetricSpec& metric);

// The metric extractor's form of the spec's metric (kAuto for AUTO and for EXIT_CODE, which
// extracts nothing).
MetricSpec ToMetricSpec(const v1::MetricSpec& spec);

}  // namespace kbisect

#endif  // KBISECT_COMMON_SPEC_JOB_SPEC_H_
