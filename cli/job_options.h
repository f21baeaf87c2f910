// Copyright 2026 The kbisect Authors.
//
// The job options shared by `kbisect run` and `kbisect submit`: one definition of every flag,
// turned into a v1::JobSpec. Splitting at `--` keeps the benchmark's own flags away from ours.
#ifndef KBISECT_CLI_JOB_OPTIONS_H_
#define KBISECT_CLI_JOB_OPTIONS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/job_outputs.h"
#include "common/spec/job_spec.h"
#include "kbisect/v1/kbisect.pb.h"

// CLI11 is included only where flags are registered: it costs seconds per translation unit.
namespace CLI {
class App;
}  // namespace CLI

namespace kbisect {

// Flag values as parsed; converted to a JobSpec by ToJobSpec.
struct JobOptions {
  std::string good;
  std::string bad;
  std::string repo;
  std::string build;
  std::string metric_regex;
  std::string metric_json;
  std::string suite;  // --suite SPEC: every metric of the output (metric_suite.h).
  std::string lead;   // --lead NAME: the suite's metric that leads the search.
  bool exit_code = false;
  bool flaky = false;           // --flaky (with --exit-code).
  double confidence = 0;        // --confidence P; 0: the default (NormalizeSpec).
  bool confidence_off = false;  // --confidence off.
  bool runs_given = false;      // --runs was given (--flaky has its own defaults).
  bool max_runs_given = false;
  bool lower_is_better = false;
  bool higher_is_better = false;
  int runs = kDefaultRunsPerCommit;
  int max_runs = kDefaultMaxRuns;
  double threshold = kDefaultThresholdFraction;
  double min_effect = 0;
  int workers = 0;
  double timeout_seconds = absl::ToDoubleSeconds(kDefaultBenchTimeout);
  double build_timeout_seconds = absl::ToDoubleSeconds(kDefaultBuildTimeout);
  bool no_first_parent = false;
  bool allow_improvement = false;
  bool find_fix = false;       // --find-fix: the first commit that made it faster.
  bool verify_revert = false;  // --verify-revert: the culprit reverted at BAD, measured.
  bool descend_merges = false;
  bool descend_submodules = false;        // --descend-submodules.
  std::vector<std::string> descend_pins;  // --descend-pin FILE=REPOSITORY, as given.
  bool all_culprits = false;
  bool discard_throttled = false;
  // Where builds install (--isolation): auto, python, prefix or none.
  std::string isolation = "auto";
  bool no_confirm = false;
  bool no_cache = false;
  std::string cache_max_age;  // "7d", "12h"; empty: kDefaultCacheMaxAge.
  std::string hardware_class;
  std::vector<std::string> env;
  bool find_good = false;  // GOOD unknown: look back from BAD (cli/find_good.h).
  int max_lookback = kDefaultMaxLookback;
  std::string since;               // --since DATE: look back only as far as commits that recent.
  std::vector<std::string> marks;  // --mark SHA=good|bad|skip, as given.
  std::string replay_file;         // --replay: a `kbisect log` whose verdicts become marks.
  JobOutputs outputs;              // --json, --html, --markdown, --notify-url.
  std::vector<std::string> bench_command;
};

// Registers every job flag on `app` (GOOD and BAD positionals included), writing into `options`.
void AddJobOptions(CLI::App* app, JobOptions* options);

// Splits argv at the first "--": everything before goes to CLI11 (returned, program name
// first), everything after is the benchmark command.
std::vector<std::string> SplitAtDoubleDash(int argc, char** argv,
                                           std::vector<std::string>* bench_command);

// Validates the parsed options and builds the spec. `repository` is the resolved repository
// location. The spec passes ValidateJobSettings (common/spec/job_spec.h): a --metric that does
// not compile fails here, before any cluster or worker starts. InvalidArgument describes a usage
// error (exit code 2).
absl::StatusOr<v1::JobSpec> ToJobSpec(const JobOptions& options, const std::string& repository);

}  // namespace kbisect

#endif  // KBISECT_CLI_JOB_OPTIONS_H_
