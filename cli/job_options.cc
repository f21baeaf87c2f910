// Copyright 2026 The kbisect Authors.
#include "cli/job_options.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "cli/cache_command.h"
#include "cli/job_log.h"
#include "common/clock/age.h"
#include "common/flags/flag_checks.h"
#include "common/status_macros.h"
#include "google/protobuf/util/time_util.h"

namespace kbisect {
namespace {

google::protobuf::Duration Seconds(double seconds) {
  return google::protobuf::util::TimeUtil::NanosecondsToDuration(
      static_cast<int64_t>(seconds * 1e9));
}

// Registers GOOD, BAD, --repo and --build: which commits, where, and how each is built.
void AddCommitOptions(CLI::App* app, JobOptions* o) {
  app->add_option("GOOD", o->good,
                  "Commit, tag or branch where performance was acceptable (with --find-good: "
                  "BAD, default HEAD)");
  app->add_option("BAD", o->bad, "Commit where performance regressed (default: HEAD)");
  app->add_option("--repo", o->repo, "The git repository (default: the current directory)");
  app->add_option("--build", o->build,
                  "Shell command run in the checkout before benchmarking (e.g. 'make -j')");
}

// Registers what is measured and which way is better: --metric, --metric-json, --exit-code,
// --suite and --lead (mutually exclusive as CLI11 checks), --flaky, --confidence and the
// direction flags.
void AddMetricOptions(CLI::App* app, JobOptions* o) {
  auto* regex = app->add_option("--metric", o->metric_regex,
                                "RE2 regex with one capture group that extracts the metric");
  auto* json = app->add_option("--metric-json", o->metric_json,
                               "Dotted field path into the last JSON object of the output");
  auto* exit_code = app->add_flag("--exit-code", o->exit_code,
                                  "Pass/fail mode: the command's exit code is the verdict "
                                  "(0 good, 1-127 bad, 125 skip), as with git bisect run");
  auto* suite = app->add_option(
      "--suite", o->suite,
      "Bisect every metric the benchmark prints, sharing the runs: auto (Google Benchmark or "
      "pytest-benchmark JSON, a 'name: value unit' table), regex:PATTERN with a (?P<name>...) "
      "group, or json:PATH with one * (e.g. json:results.*.latency_ms). Metrics that moved "
      "are grouped by culprit; try it on a saved output with `kbisect metrics --suite`");
  app->add_option("--lead", o->lead,
                  "With --suite: the metric whose values lead the search (default: the first "
                  "one printed; another that moved is searched after it if it did not)")
      ->needs(suite);
  regex->excludes(json)->excludes(exit_code)->excludes(suite);
  json->excludes(exit_code)->excludes(suite);
  exit_code->excludes(suite);
  auto* flaky = app->add_flag("--flaky", o->flaky,
                              "With --exit-code: the test fails only sometimes at bad commits "
                              "(and rarely at good ones). Runs repeat where one result can't be "
                              "trusted, the fail rates are estimated, and the search stops once "
                              "the culprit's probability reaches --confidence "
                              "(defaults: --runs 4, --max-runs 120, --confidence 0.995)");
  flaky->needs(exit_code);
  app->add_option_function<std::string>(
         "--confidence,--flaky-confidence",
         [o](const std::string& value) {
           o->confidence_off = value == "off";
           o->confidence = o->confidence_off ? 0 : std::strtod(value.c_str(), nullptr);
         },
         "The search does not end before the culprit's probability (the posterior over every "
         "sample, as the report's Confidence line) reaches P: the culprit and its parent are "
         "measured again, and a verdict their new samples contradict is taken back. Default: "
         "0.99 with a metric (--max-runs' default is then 60), 0.995 with --flaky; off ends the "
         "search as soon as it names one commit (not with --flaky)")
      ->type_name("P|off")
      ->check(NumberInOr(0.5, 0.9999, "off"));
  auto* lower = app->add_flag("--lower-is-better", o->lower_is_better,
                              "Smaller metric values are better (latency, time)");
  auto* higher = app->add_flag("--higher-is-better", o->higher_is_better,
                               "Larger metric values are better (throughput, TFLOPS)");
  lower->excludes(higher);
}

// Registers how much is measured and for how long: the run counts, the threshold, the minimum
// effect, the workers and the two timeouts.
void AddRunOptions(CLI::App* app, JobOptions* o) {
  app->add_option("--runs", o->runs, "Benchmark runs per commit")
      ->capture_default_str()
      ->check(WholeNumberIn(1, kMaxRunsPerCommit))
      ->each([o](const std::string&) { o->runs_given = true; });
  app->add_option("--max-runs", o->max_runs, "Most runs per commit when verdicts are unclear")
      ->capture_default_str()
      ->check(WholeNumberIn(1, kMaxRunsPerCommit))
      ->each([o](const std::string&) { o->max_runs_given = true; });
  app->add_option("--threshold", o->threshold, "A commit is bad past good + F*(bad - good)")
      ->capture_default_str()
      ->check(NumberIn(0.01, 0.99));
  app->add_option("--min-effect", o->min_effect,
                  "Regressions under this fraction of GOOD count as no regression")
      ->check(NumberIn(0, 10));
  app->add_option("--workers", o->workers,
                  "Parallel workers (default: number of GPUs detected, else 1)")
      ->check(WholeNumberIn(1, 256));
  app->add_option("--timeout", o->timeout_seconds, "Timeout of one benchmark run, seconds")
      ->capture_default_str()
      ->check(Positive("seconds"));
  app->add_option("--build-timeout", o->build_timeout_seconds, "Timeout of the build, seconds")
      ->capture_default_str()
      ->check(Positive("seconds"));
}

// Registers how the search walks the history and what it does once it has a culprit: the
// first-parent rule, improvements and fixes, the revert check, the descents, every culprit and
// the confirmation.
void AddSearchOptions(CLI::App* app, JobOptions* o) {
  app->add_flag("--no-first-parent", o->no_first_parent,
                "Bisect every commit in the range, not only the first-parent chain");
  app->add_flag("--allow-improvement", o->allow_improvement,
                "Bisect an improvement (BAD faster than GOOD) instead of refusing");
  app->add_flag("--find-fix", o->find_fix,
                "Find the commit that made the metric better: GOOD is the slow commit, BAD the "
                "fast one; the report says \"fixed by\"");
  app->add_flag("--verify-revert", o->verify_revert,
                "Once the culprit is confirmed, revert it at BAD and measure that against BAD in "
                "interleaved pairs: the report gives the share of the regression the revert "
                "recovers (needs a local repository)");
  app->add_flag("--descend-merges", o->descend_merges,
                "When the culprit is a merge, also bisect the merged branch (merge-base..second "
                "parent) and report its culprit as merged_culprit");
  app->add_flag("--descend-submodules", o->descend_submodules,
                "When the culprit bumps a submodule, also bisect the submodule's own commits "
                "(old..new) with the superproject at the culprit, and report the dependency's "
                "first bad commit");
  app->add_option("--descend-pin", o->descend_pins,
                  "FILE=REPOSITORY: when the culprit changes the commit FILE pins (its first line "
                  "of 40 hex digits), also bisect REPOSITORY's commits between the two pins with "
                  "the superproject at the culprit; each probe checks REPOSITORY out beside the "
                  "checkout, in $KBISECT_DEPENDENCY_DIR; repeatable")
      ->type_name("FILE=REPOSITORY");
  app->add_flag("--all-culprits", o->all_culprits,
                "When the culprit explains under 60% of the regression, bisect the ranges on "
                "either side too and report every step, largest first");
  app->add_flag("--no-confirm", o->no_confirm,
                "Skip the final interleaved re-measurement of last-good and culprit");
}

// Registers where builds and measurements live: the result cache, the build isolation, throttled
// runs, the hardware class and the environment.
void AddBuildEnvironmentOptions(CLI::App* app, JobOptions* o) {
  app->add_flag("--no-cache", o->no_cache,
                "Neither reuse nor record measurements of earlier jobs (the result cache)");
  app->add_option("--cache-max-age", o->cache_max_age,
                  "Reuse cached measurements at most this old, e.g. 7d, 12h (default 7d)");
  app->add_option("--isolation", o->isolation,
                  "Where --build installs: auto (a layer of its own per built commit: a virtual "
                  "environment over the active virtualenv, conda environment or python3, seeing "
                  "its packages, when there is a Python; else an install prefix), python, prefix "
                  "($KBISECT_PREFIX only) or none (wherever the build's commands say)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "python", "prefix", "none"}));
  app->add_flag("--discard-throttled", o->discard_throttled,
                "Re-run benchmark runs that end with the GPU thermally or power throttled");
  app->add_option("--hardware-class", o->hardware_class,
                  "Only use workers of this hardware-class fingerprint");
  app->add_option("--env", o->env, "KEY=VALUE added to the build and benchmark environment");
}

// Registers what the search starts from besides GOOD and BAD: --find-good with its bounds, and
// the verdicts already known (--replay, --mark).
void AddStartingPointOptions(CLI::App* app, JobOptions* o) {
  auto* find_good = app->add_flag(
      "--find-good", o->find_good,
      "GOOD is not known: look back from BAD (the one commit given, default HEAD) on the "
      "first-parent chain, BAD~1, ~2, ~4, ... a few at once, for a commit better than BAD by "
      "--min-effect (or passing, with --exit-code), then bisect from it");
  app->add_option("--max-lookback", o->max_lookback,
                  "With --find-good: the farthest commit back from BAD to try")
      ->capture_default_str()
      ->check(WholeNumberIn(1, 1000000, "commits back"))
      ->needs(find_good);
  app->add_option("--since", o->since,
                  "With --find-good: look back only as far as the commits (committer date) at "
                  "or after DATE, e.g. 2026-01-31, '2026-01-31 14:00', 2026-01-31T14:00:00Z or "
                  "an age such as 14d (at most --max-lookback; a date without a zone is local "
                  "time, as git's)")
      ->type_name("DATE")
      ->needs(find_good);
  app->add_option("--replay", o->replay_file,
                  "Start from a log (`kbisect log`): its verdict lines count as --mark; edit a "
                  "line to correct a verdict, delete it to measure that commit again");
  app->add_option("--mark", o->marks,
                  "SHA=good|bad|skip: a verdict you know better than a measurement (a commit you "
                  "know is broken, a result you don't trust); repeatable, listed in the report")
      ->type_name("SHA=VERDICT");
}

}  // namespace

void AddJobOptions(CLI::App* app, JobOptions* o) {
  AddCommitOptions(app, o);
  AddMetricOptions(app, o);
  AddRunOptions(app, o);
  AddSearchOptions(app, o);
  AddBuildEnvironmentOptions(app, o);
  AddStartingPointOptions(app, o);
  app->add_option("--json", o->outputs.json_file, "Write the result as JSON to FILE");
  AddJobOutputFlags(app, &o->outputs, /*notify=*/true);
}

std::vector<std::string> SplitAtDoubleDash(int argc, char** argv,
                                           std::vector<std::string>* bench_command) {
  std::vector<std::string> ours;
  bool after = false;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (!after && arg == "--" && i > 0) {
      after = true;
      continue;
    }
    (after ? *bench_command : ours).push_back(arg);
  }
  return ours;
}

namespace {

// Sets the commits (GOOD and BAD, or with --find-good BAD alone), the build command and the
// benchmark command. Fails when the benchmark command or a needed commit is missing.
absl::Status SetCommitsAndCommands(const JobOptions& o, v1::JobSpec* spec) {
  if (o.bench_command.empty()) {
    return absl::InvalidArgumentError(
        "no benchmark command: put it after `--`, e.g. `kbisect run v1.0 -- ./bench.sh`");
  }
  if (o.find_good) {
    // The one commit given is BAD; GOOD is found by looking back (cli/find_good.h).
    if (!o.good.empty() && !o.bad.empty()) {
      return absl::InvalidArgumentError(
          "--find-good takes one commit, BAD (default HEAD): GOOD is what it finds");
    }
    spec->set_bad(o.good.empty() ? o.bad : o.good);
  } else {
    if (o.good.empty()) {
      return absl::InvalidArgumentError(
          "GOOD is required: the commit where performance was acceptable (or --find-good to "
          "look back from BAD for one)");
    }
    spec->set_good(o.good);
    spec->set_bad(o.bad);
  }
  spec->set_build_command(o.build);
  for (const std::string& arg : o.bench_command) spec->add_bench_command(arg);
  return absl::OkStatus();
}

// Sets what is measured (a regex, a JSON path, the exit code, or the output's own form with an
// optional suite) and the direction when one was given.
void SetMetric(const JobOptions& o, v1::JobSpec* spec) {
  if (!o.metric_regex.empty()) {
    spec->mutable_metric()->set_kind(v1::METRIC_KIND_REGEX);
    spec->mutable_metric()->set_pattern(o.metric_regex);
  } else if (!o.metric_json.empty()) {
    spec->mutable_metric()->set_kind(v1::METRIC_KIND_JSON_PATH);
    spec->mutable_metric()->set_pattern(o.metric_json);
  } else if (o.exit_code) {
    spec->mutable_metric()->set_kind(v1::METRIC_KIND_EXIT_CODE);
  } else {
    spec->mutable_metric()->set_kind(v1::METRIC_KIND_AUTO);
    spec->mutable_metric()->set_suite(o.suite);
    spec->mutable_metric()->set_lead(o.lead);
  }
  if (o.lower_is_better) spec->set_direction(v1::DIRECTION_LOWER_IS_BETTER);
  if (o.higher_is_better) spec->set_direction(v1::DIRECTION_HIGHER_IS_BETTER);
}

// Sets the run counts and the confidence, leaving a count unset (0) where NormalizeSpec's
// default for --flaky or for the confidence stop applies. Fails on a --confidence the mode
// cannot use.
absl::Status SetRunsAndConfidence(const JobOptions& o, v1::JobSpec* spec) {
  // Left out with a metric or --flaky, --runs is left unset: NormalizeSpec fills in the mode's
  // default and marks the count as defaulted (decision 230). A plain --exit-code takes --runs'
  // own default of 3.
  const bool runs_defaulted = !o.runs_given && (!o.exit_code || o.flaky);
  spec->set_runs_per_commit(runs_defaulted ? 0 : o.runs);
  spec->set_max_runs(std::max(o.max_runs, o.runs));
  if (o.exit_code && !o.flaky && o.confidence > 0) {
    return absl::InvalidArgumentError(
        "--confidence needs a metric or --flaky: a plain --exit-code result is taken as certain");
  }
  if (o.flaky && o.confidence_off) {
    return absl::InvalidArgumentError(
        "--confidence off is not for --flaky: a flaky test's search ends at a confidence (give "
        "a lower one, e.g. --confidence 0.9)");
  }
  spec->set_confidence(o.confidence);
  spec->set_confidence_off(o.confidence_off && !o.exit_code);
  if (o.flaky) {
    // Unset counts take --flaky's defaults (NormalizeSpec).
    spec->set_flaky(true);
    if (!o.max_runs_given) spec->set_max_runs(0);
  } else if (!o.exit_code && !o.confidence_off && !o.max_runs_given) {
    spec->set_max_runs(0);  // The confidence stop's default (NormalizeSpec).
  }
  return absl::OkStatus();
}

// Adds each --env KEY=VALUE to the spec's environment. Fails on a pair without a key.
absl::Status AddEnvironment(const std::vector<std::string>& pairs, v1::JobSpec* spec) {
  for (const std::string& pair : pairs) {
    const size_t eq = pair.find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError(absl::StrCat("--env expects KEY=VALUE, got '", pair, "'"));
    }
    (*spec->mutable_env())[pair.substr(0, eq)] = pair.substr(eq + 1);
  }
  return absl::OkStatus();
}

// Adds the verdicts known before the search: each --mark SHA=VERDICT, then those of the
// --replay log. Fails on a mark without a commit or a verdict, or a log that cannot be read.
absl::Status AddKnownVerdicts(const JobOptions& o, v1::JobSpec* spec) {
  for (const std::string& text : o.marks) {
    const size_t eq = text.find('=');
    const std::string verdict = eq == std::string::npos ? "" : text.substr(eq + 1);
    v1::CommitMark* mark = spec->add_marks();
    mark->set_commit(text.substr(0, eq));
    if (verdict == "good") {
      mark->set_verdict(v1::VERDICT_GOOD);
    } else if (verdict == "bad") {
      mark->set_verdict(v1::VERDICT_BAD);
    } else if (verdict == "skip") {
      mark->set_verdict(v1::VERDICT_SKIP);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--mark expects SHA=good, SHA=bad or SHA=skip, got '", text, "'"));
    }
    if (mark->commit().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--mark expects a commit before '=', got '", text, "'"));
    }
  }
  if (!o.replay_file.empty()) {
    if (absl::Status replayed = AddReplayMarks(o.replay_file, spec); !replayed.ok()) {
      return absl::InvalidArgumentError(replayed.message());
    }
  }
  return absl::OkStatus();
}

// Adds each --descend-pin FILE=REPOSITORY, a local repository path made absolute. Fails on a
// pin without a file or a repository.
absl::Status AddDescendPins(const std::vector<std::string>& pins, v1::JobSpec* spec) {
  for (const std::string& text : pins) {
    const size_t equals = text.find('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == text.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--descend-pin expects FILE=REPOSITORY (the pin file's path in the repository, then "
          "the dependency's URL or path), got '",
          text, "'"));
    }
    v1::DependencyPin* pin = spec->add_descend_pins();
    pin->set_file(text.substr(0, equals));
    std::string dependency = text.substr(equals + 1);
    // A local path is made absolute: the workers do not run where the user typed it.
    std::error_code ec;
    if (dependency.find("://") == std::string::npos && std::filesystem::exists(dependency, ec)) {
      dependency = std::filesystem::absolute(dependency, ec).lexically_normal().string();
    }
    pin->set_repository(dependency);
  }
  return absl::OkStatus();
}

// Sets how the search walks the history and what follows a culprit: the first-parent rule,
// improvements and fixes, the revert check, the descents (their pins included), every culprit
// and the confirmation. Fails on a malformed --descend-pin.
absl::Status SetSearchChoices(const JobOptions& o, v1::JobSpec* spec) {
  spec->set_history(o.no_first_parent ? v1::HISTORY_MODE_ALL_COMMITS
                                      : v1::HISTORY_MODE_FIRST_PARENT);
  spec->set_allow_improvement(o.allow_improvement);
  spec->set_find_fix(o.find_fix);
  spec->set_verify_revert(o.verify_revert);
  spec->set_descend_merges(o.descend_merges);
  spec->set_descend_submodules(o.descend_submodules);
  RETURN_IF_ERROR(AddDescendPins(o.descend_pins, spec));
  spec->set_all_culprits(o.all_culprits);
  spec->set_confirm(!o.no_confirm && !o.exit_code);
  return absl::OkStatus();
}

// Sets where builds and measurements run and what they may reuse: the hardware class, throttled
// runs, the build isolation, the result cache and its age, and the workers. Fails on a
// --cache-max-age that is not a duration.
absl::Status SetPlacementAndCache(const JobOptions& o, v1::JobSpec* spec) {
  spec->set_hardware_class(o.hardware_class);
  spec->set_discard_throttled(o.discard_throttled);
  if (o.isolation == "python") spec->set_build_isolation(v1::BUILD_ISOLATION_PYTHON);
  if (o.isolation == "prefix") spec->set_build_isolation(v1::BUILD_ISOLATION_PREFIX);
  if (o.isolation == "none") spec->set_build_isolation(v1::BUILD_ISOLATION_NONE);
  spec->set_no_cache(o.no_cache);
  if (!o.cache_max_age.empty()) {
    absl::StatusOr<absl::Duration> age = ParseAge(o.cache_max_age);
    if (!age.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--cache-max-age expects a duration such as 7d, 12h or 90m, got '",
                       o.cache_max_age, "'"));
    }
    *spec->mutable_cache_max_age() = Seconds(absl::ToDoubleSeconds(*age));
  }
  spec->set_max_workers(o.workers);
  return absl::OkStatus();
}

// Records who submitted the job from where: the user ($USER) and this host's name.
void SetUserOrigin(v1::JobSpec* spec) {
  v1::JobOrigin* origin = spec->mutable_origin();
  origin->set_kind(v1::ORIGIN_KIND_USER);
  if (const char* user = std::getenv("USER")) origin->set_user(user);
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) == 0) origin->set_host(host);
}

}  // namespace

absl::StatusOr<v1::JobSpec> ToJobSpec(const JobOptions& o, const std::string& repository) {
  v1::JobSpec spec;
  spec.set_repository(repository);
  RETURN_IF_ERROR(SetCommitsAndCommands(o, &spec));
  SetMetric(o, &spec);
  RETURN_IF_ERROR(SetRunsAndConfidence(o, &spec));
  spec.set_threshold_fraction(o.threshold);
  spec.set_min_effect_fraction(o.min_effect);
  *spec.mutable_bench_timeout() = Seconds(o.timeout_seconds);
  *spec.mutable_build_timeout() = Seconds(o.build_timeout_seconds);
  RETURN_IF_ERROR(AddEnvironment(o.env, &spec));
  RETURN_IF_ERROR(AddKnownVerdicts(o, &spec));
  RETURN_IF_ERROR(SetSearchChoices(o, &spec));
  RETURN_IF_ERROR(SetPlacementAndCache(o, &spec));
  // The checks the coordinator's SubmitJob makes (a --metric that does not compile, ...), here,
  // before anything starts: the error is a usage error, in the flags' words.
  RETURN_IF_ERROR(ValidateJobSettings(spec));
  SetUserOrigin(&spec);
  return spec;
}

}  // namespace kbisect
