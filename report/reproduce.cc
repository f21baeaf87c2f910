// Copyright 2026 The kbisect Authors.
#include "report/reproduce.h"

#include <map>
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

std::string ReproduceCommand(const v1::JobStatus& job) {
  const v1::JobSpec& spec = job.spec();
  std::vector<std::string> words = {"kbisect", "run"};
  auto flag = [&](absl::string_view name, absl::string_view value) {
    words.emplace_back(name);
    words.emplace_back(value);
  };
  if (spec.has_dependency()) {
    // A dependency follow-up has no command of its own: the superproject's one-commit step
    // (its culprit's first parent .. the culprit) with the descent that starts it again.
    // A nested one's: the top superproject's, whose descent goes down again.
    const v1::DependencyDescent* descent = &spec.dependency();
    std::string repository = spec.repository();
    for (; descent->has_outer(); descent = &descent->outer()) {
      repository = descent->superproject();
    }
    words.push_back(descent->superproject_sha() + "^");
    words.push_back(descent->superproject_sha());
    flag("--repo", descent->superproject());
    if (descent->kind() == v1::DEPENDENCY_KIND_PIN_FILE) {
      flag("--descend-pin", absl::StrCat(descent->path(), "=", repository));
    }
    if (descent->kind() != v1::DEPENDENCY_KIND_PIN_FILE || spec.descend_submodules()) {
      words.push_back("--descend-submodules");
    }
  } else if (spec.has_try_change()) {
    // A try: the base, and the change as the user gave it (the commit kbisect made from it is
    // made again, the same).
    words[1] = "try";
    words.push_back(job.good_sha().empty() ? spec.good() : job.good_sha());
    const v1::TryChange& change = spec.try_change();
    flag(change.kind() == v1::TryChange::KIND_PATCH    ? "--patch"
         : change.kind() == v1::TryChange::KIND_COMMIT ? "--commit"
                                                       : "--revert",
         change.target());
    flag("--repo", spec.repository());
  } else {
    words.push_back(job.good_sha().empty() ? spec.good() : job.good_sha());
    words.push_back(job.bad_sha().empty() ? (spec.bad().empty() ? "HEAD" : spec.bad())
                                          : job.bad_sha());
    flag("--repo", spec.repository());
  }
  if (!spec.build_command().empty()) flag("--build", spec.build_command());
  switch (spec.metric().kind()) {
    case v1::METRIC_KIND_REGEX:
      flag("--metric", spec.metric().pattern());
      break;
    case v1::METRIC_KIND_JSON_PATH:
      flag("--metric-json", spec.metric().pattern());
      break;
    case v1::METRIC_KIND_EXIT_CODE:
      words.push_back("--exit-code");
      break;
    default:
      break;
  }
  if (spec.direction() == v1::DIRECTION_LOWER_IS_BETTER) words.push_back("--lower-is-better");
  if (spec.direction() == v1::DIRECTION_HIGHER_IS_BETTER) words.push_back("--higher-is-better");
  if (spec.flaky()) words.push_back("--flaky");
  // The defaults of a spec of this shape (NormalizeSpec's), which the command need not repeat.
  v1::JobSpec defaults;
  *defaults.mutable_metric() = spec.metric();
  defaults.set_flaky(spec.flaky());
  defaults.set_confidence_off(spec.confidence_off());
  NormalizeSpec(&defaults);
  if (spec.confidence_off()) {
    flag("--confidence", "off");
  } else if (spec.confidence() > 0 && spec.confidence() != defaults.confidence()) {
    flag("--confidence", absl::StrFormat("%g", spec.confidence()));
  }
  if (spec.runs_per_commit() != 0 && spec.runs_per_commit() != defaults.runs_per_commit()) {
    flag("--runs", absl::StrCat(spec.runs_per_commit()));
  }
  if (spec.max_runs() != 0 && spec.max_runs() != defaults.max_runs()) {
    flag("--max-runs", absl::StrCat(spec.max_runs()));
  }
  if (spec.threshold_fraction() != 0 && spec.threshold_fraction() != 0.3) {
    flag("--threshold", absl::StrFormat("%g", spec.threshold_fraction()));
  }
  if (spec.min_effect_fraction() != 0) {
    flag("--min-effect", absl::StrFormat("%g", spec.min_effect_fraction()));
  }
  if (spec.history() == v1::HISTORY_MODE_ALL_COMMITS) words.push_back("--no-first-parent");
  if (spec.find_fix()) words.push_back("--find-fix");
  if (spec.verify_revert()) words.push_back("--verify-revert");
  // Implied by --find-fix and by a try (NormalizeSpec).
  if (spec.allow_improvement() && !spec.find_fix() && !spec.has_try_change()) {
    words.push_back("--allow-improvement");
  }
  if (spec.descend_merges()) words.push_back("--descend-merges");
  if (spec.descend_submodules() && !spec.has_dependency()) {
    words.push_back("--descend-submodules");
  }
  for (const v1::DependencyPin& pin : spec.descend_pins()) {
    flag("--descend-pin", absl::StrCat(pin.file(), "=", pin.repository()));
  }
  if (spec.all_culprits()) words.push_back("--all-culprits");
  if (!spec.confirm() && !spec.has_try_change()) words.push_back("--no-confirm");
  if (spec.discard_throttled()) words.push_back("--discard-throttled");
  if (!spec.hardware_class().empty()) flag("--hardware-class", spec.hardware_class());
  // The map's order is unspecified; sort for a stable command.
  const std::map<std::string, std::string> env(spec.env().begin(), spec.env().end());
  for (const auto& [key, value] : env) flag("--env", absl::StrCat(key, "=", value));
  words.push_back("--");
  for (const std::string& arg : spec.bench_command()) words.push_back(arg);
  std::vector<std::string> quoted;
  quoted.reserve(words.size());
  for (const std::string& w : words) quoted.push_back(ShellWord(w));
  return absl::StrJoin(quoted, " ");
}

}  // namespace kbisect
