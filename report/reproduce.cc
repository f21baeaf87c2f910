// Copyright 2026 The kbisect Authors.
#include "report/reproduce.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "common/spec/job_spec.h"

namespace kbisect {

std::string ShellWord(absl::string_view s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789@%_-+=:,./") == absl::string_view::npos) {
    return std::string(s);
  }
  return absl::StrCat("'", absl::StrReplaceAll(s, {{"'", "'\\''"}}), "'");
}

namespace {

// The words of a command line being built, unquoted.
struct CommandWords {
  std::vector<std::string> words;

  // Adds one word.
  void Add(absl::string_view word) { words.emplace_back(word); }
  // Adds a flag and its value, two words.
  void Flag(absl::string_view name, absl::string_view value) {
    words.emplace_back(name);
    words.emplace_back(value);
  }
};

// Adds the subcommand's revisions and repository: a dependency follow-up's superproject step
// with the descent that starts it again, a try's base and change, or GOOD and BAD (the resolved
// shas when the job has them).
void AddRevisions(const v1::JobStatus& job, CommandWords* command) {
  const v1::JobSpec& spec = job.spec();
  if (spec.has_dependency()) {
    // A dependency follow-up has no command of its own: the superproject's one-commit step
    // (its culprit's first parent .. the culprit) with the descent that starts it again.
    // A nested one's: the top superproject's, whose descent goes down again.
    const v1::DependencyDescent* descent = &spec.dependency();
    std::string repository = spec.repository();
    for (; descent->has_outer(); descent = &descent->outer()) {
      repository = descent->superproject();
    }
    command->Add(descent->superproject_sha() + "^");
    command->Add(descent->superproject_sha());
    command->Flag("--repo", descent->superproject());
    if (descent->kind() == v1::DEPENDENCY_KIND_PIN_FILE) {
      command->Flag("--descend-pin", absl::StrCat(descent->path(), "=", repository));
    }
    if (descent->kind() != v1::DEPENDENCY_KIND_PIN_FILE || spec.descend_submodules()) {
      command->Add("--descend-submodules");
    }
  } else if (spec.has_try_change()) {
    // A try: the base, and the change as the user gave it (the commit kbisect made from it is
    // made again, the same).
    command->words[1] = "try";
    command->Add(job.good_sha().empty() ? spec.good() : job.good_sha());
    const v1::TryChange& change = spec.try_change();
    command->Flag(change.kind() == v1::TryChange::KIND_PATCH    ? "--patch"
                  : change.kind() == v1::TryChange::KIND_COMMIT ? "--commit"
                                                                : "--revert",
                  change.target());
    command->Flag("--repo", spec.repository());
  } else {
    command->Add(job.good_sha().empty() ? spec.good() : job.good_sha());
    command->Add(job.bad_sha().empty() ? (spec.bad().empty() ? "HEAD" : spec.bad())
                                       : job.bad_sha());
    command->Flag("--repo", spec.repository());
  }
}

// Adds the build command and what is measured: the metric's flag, the direction and --flaky.
void AddMeasurementFlags(const v1::JobSpec& spec, CommandWords* command) {
  if (!spec.build_command().empty()) command->Flag("--build", spec.build_command());
  switch (spec.metric().kind()) {
    case v1::METRIC_KIND_REGEX:
      command->Flag("--metric", spec.metric().pattern());
      break;
    case v1::METRIC_KIND_JSON_PATH:
      command->Flag("--metric-json", spec.metric().pattern());
      break;
    case v1::METRIC_KIND_EXIT_CODE:
      command->Add("--exit-code");
      break;
    default:
      break;
  }
  if (spec.direction() == v1::DIRECTION_LOWER_IS_BETTER) command->Add("--lower-is-better");
  if (spec.direction() == v1::DIRECTION_HIGHER_IS_BETTER) command->Add("--higher-is-better");
  if (spec.flaky()) command->Add("--flaky");
}

// Adds the confidence, the run counts, the threshold and the minimum effect where they differ
// from the defaults of a spec of this shape (NormalizeSpec's), which the command need not repeat.
void AddThresholdFlags(const v1::JobSpec& spec, CommandWords* command) {
  v1::JobSpec defaults;
  *defaults.mutable_metric() = spec.metric();
  defaults.set_flaky(spec.flaky());
  defaults.set_confidence_off(spec.confidence_off());
  NormalizeSpec(&defaults);
  if (spec.confidence_off()) {
    command->Flag("--confidence", "off");
  } else if (spec.confidence() > 0 && spec.confidence() != defaults.confidence()) {
    command->Flag("--confidence", absl::StrFormat("%g", spec.confidence()));
  }
  // A count the spec set is printed even at the default's: left out, a benchmark that repeats
  // exactly would take one run a probe (decision 229).
  if (spec.runs_per_commit() != 0 && !spec.runs_defaulted()) {
    command->Flag("--runs", absl::StrCat(spec.runs_per_commit()));
  }
  if (spec.max_runs() != 0 && spec.max_runs() != defaults.max_runs()) {
    command->Flag("--max-runs", absl::StrCat(spec.max_runs()));
  }
  if (spec.threshold_fraction() != 0 && spec.threshold_fraction() != 0.3) {
    command->Flag("--threshold", absl::StrFormat("%g", spec.threshold_fraction()));
  }
  if (spec.min_effect_fraction() != 0) {
    command->Flag("--min-effect", absl::StrFormat("%g", spec.min_effect_fraction()));
  }
}

// Adds how the search walks the history and what follows a culprit, leaving out what the job's
// kind implies (--allow-improvement with --find-fix or a try, --descend-submodules in a
// dependency follow-up, --no-confirm in a try).
void AddSearchFlags(const v1::JobSpec& spec, CommandWords* command) {
  if (spec.history() == v1::HISTORY_MODE_ALL_COMMITS) command->Add("--no-first-parent");
  if (spec.find_fix()) command->Add("--find-fix");
  if (spec.verify_revert()) command->Add("--verify-revert");
  // Implied by --find-fix and by a try (NormalizeSpec).
  if (spec.allow_improvement() && !spec.find_fix() && !spec.has_try_change()) {
    command->Add("--allow-improvement");
  }
  if (spec.descend_merges()) command->Add("--descend-merges");
  if (spec.descend_submodules() && !spec.has_dependency()) command->Add("--descend-submodules");
  for (const v1::DependencyPin& pin : spec.descend_pins()) {
    command->Flag("--descend-pin", absl::StrCat(pin.file(), "=", pin.repository()));
  }
  if (spec.all_culprits()) command->Add("--all-culprits");
  if (!spec.confirm() && !spec.has_try_change()) command->Add("--no-confirm");
}

// Adds where the job runs: throttled runs discarded, the hardware class, and the environment
// sorted by name (the map's order is unspecified).
void AddPlacementFlags(const v1::JobSpec& spec, CommandWords* command) {
  if (spec.discard_throttled()) command->Add("--discard-throttled");
  if (!spec.hardware_class().empty()) command->Flag("--hardware-class", spec.hardware_class());
  const std::map<std::string, std::string> env(spec.env().begin(), spec.env().end());
  for (const auto& [key, value] : env) command->Flag("--env", absl::StrCat(key, "=", value));
}

}  // namespace

std::string ReproduceCommand(const v1::JobStatus& job) {
  const v1::JobSpec& spec = job.spec();
  CommandWords command{{"kbisect", "run"}};
  AddRevisions(job, &command);
  AddMeasurementFlags(spec, &command);
  AddThresholdFlags(spec, &command);
  AddSearchFlags(spec, &command);
  AddPlacementFlags(spec, &command);
  command.Add("--");
  for (const std::string& arg : spec.bench_command()) command.Add(arg);
  std::vector<std::string> quoted;
  quoted.reserve(command.words.size());
  for (const std::string& w : command.words) quoted.push_back(ShellWord(w));
  return absl::StrJoin(quoted, " ");
}

}  // namespace kbisect
