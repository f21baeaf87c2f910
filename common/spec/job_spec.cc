// Copyright 2026 The kbisect Authors.
#include "common/spec/job_spec.h"

#include <algorithm>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/metric/metric_suite.h"

namespace kbisect {

void NormalizeSpec(v1::JobSpec* spec) {
  const bool pass_fail = spec->metric().kind() == v1::METRIC_KIND_EXIT_CODE;
  const bool flaky = pass_fail && spec->flaky();
  if (spec->runs_per_commit() <= 0) {
    spec->set_runs_defaulted(true);
    spec->set_runs_per_commit(flaky       ? kDefaultFlakyRuns
                              : pass_fail ? kDefaultPassFailRuns
                                          : kDefaultRunsPerCommit);
  }
  if (flaky && spec->max_runs() <= 0) {
    spec->set_max_runs(std::max(kDefaultFlakyMaxRuns, spec->runs_per_commit()));
  }
  if (flaky && spec->confidence() <= 0) spec->set_confidence(kDefaultFlakyConfidence);
  if (!pass_fail && !spec->confidence_off() && spec->confidence() <= 0) {
    spec->set_confidence(kDefaultMetricConfidence);
  }
  if (!pass_fail && spec->confidence() > 0 && spec->max_runs() <= 0) {
    spec->set_max_runs(std::max(kDefaultConfidenceMaxRuns, spec->runs_per_commit()));
  }
  if (spec->max_runs() < spec->runs_per_commit()) {
    spec->set_max_runs(std::max(kDefaultMaxRuns, spec->runs_per_commit()));
  }
  if (spec->threshold_fraction() <= 0) spec->set_threshold_fraction(kDefaultThresholdFraction);
  if (spec->history() == v1::HISTORY_MODE_UNSPECIFIED) {
    spec->set_history(v1::HISTORY_MODE_FIRST_PARENT);
  }
  // A fix is an improvement bisected; a try measures the change whichever way it goes, and its
  // answer is the confirmation's interval.
  if (spec->find_fix() || spec->has_try_change()) spec->set_allow_improvement(true);
  if (spec->has_try_change()) spec->set_confirm(true);
}

bool MayRunOncePerProbe(const v1::JobSpec& spec) {
  return spec.runs_defaulted() && spec.runs_per_commit() > 1 &&
         spec.metric().kind() != v1::METRIC_KIND_EXIT_CODE && spec.metric().suite().empty();
}

absl::Status ValidateSpec(const v1::JobSpec& spec) {
  if (spec.repository().empty()) {
    return absl::InvalidArgumentError("the job has no repository: pass --repo PATH or a URL");
  }
  if (spec.good().empty()) {
    return absl::InvalidArgumentError("the job has no GOOD revision");
  }
  if (spec.bench_command().empty() || spec.bench_command(0).empty()) {
    return absl::InvalidArgumentError(
        "the job has no benchmark command: put it after `--`, e.g. `kbisect run v1.0 -- "
        "./bench.sh`");
  }
  return ValidateJobSettings(spec);
}

absl::Status ValidateJobSettings(const v1::JobSpec& spec) {
  if (spec.threshold_fraction() < 0 || spec.threshold_fraction() >= 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--threshold must be from 0 up to (not including) 1, not ", spec.threshold_fraction()));
  }
  if (spec.runs_per_commit() < 0 || spec.runs_per_commit() > kMaxRunsPerCommit) {
    return absl::InvalidArgumentError(absl::StrCat("--runs must be a whole number from 1 to ",
                                                   kMaxRunsPerCommit, ", not ",
                                                   spec.runs_per_commit()));
  }
  if (spec.flaky() && spec.metric().kind() != v1::METRIC_KIND_EXIT_CODE) {
    return absl::InvalidArgumentError(
        "--flaky is for pass/fail tests: add --exit-code (a flaky benchmark's noise is measured "
        "anyway)");
  }
  if (spec.confidence() < 0 || spec.confidence() >= 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--confidence must be from 0 up to (not including) 1, not ", spec.confidence()));
  }
  if (spec.confidence_off() && spec.confidence() > 0) {
    return absl::InvalidArgumentError(
        "--confidence is either a probability or off, not both (confidence and confidence_off)");
  }
  if (spec.confidence_off() && spec.flaky()) {
    return absl::InvalidArgumentError(
        "--confidence off is not for --flaky: a flaky test's search ends at a confidence (give "
        "a lower one, e.g. --confidence 0.9)");
  }
  if (spec.confidence() > 0 && spec.metric().kind() == v1::METRIC_KIND_EXIT_CODE && !spec.flaky()) {
    return absl::InvalidArgumentError(
        "--confidence needs a metric or --flaky: a plain --exit-code result is taken as certain");
  }
  if (spec.find_fix() && spec.metric().kind() == v1::METRIC_KIND_EXIT_CODE) {
    return absl::InvalidArgumentError(
        "--find-fix needs a metric: with --exit-code the fix is the first passing commit, so "
        "bisect with GOOD and BAD swapped instead");
  }
  if (spec.find_fix() && !spec.metric().suite().empty()) {
    return absl::InvalidArgumentError(
        "--find-fix bisects one metric: drop --suite, or name the metric with --metric");
  }
  if (spec.has_try_change() && spec.metric().kind() == v1::METRIC_KIND_EXIT_CODE) {
    return absl::InvalidArgumentError(
        "kbisect try compares a metric: give --metric (or let it find one), not --exit-code");
  }
  for (const v1::DependencyPin& pin : spec.descend_pins()) {
    if (pin.file().empty() || pin.repository().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--descend-pin needs FILE=REPOSITORY, both given, not '", pin.file(), "=",
                       pin.repository(), "'"));
    }
  }
  if (!spec.metric().suite().empty()) {
    if (spec.metric().kind() != v1::METRIC_KIND_AUTO &&
        spec.metric().kind() != v1::METRIC_KIND_UNSPECIFIED) {
      return absl::InvalidArgumentError(
          "--suite reads every metric of the output: give it alone, without --metric, "
          "--metric-json or --exit-code (name the metric that leads the search with --lead)");
    }
    if (absl::StatusOr<MetricSuiteSpec> suite = ParseMetricSuiteSpec(spec.metric().suite());
        !suite.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--suite: ", suite.status().message(),
          ". Give auto, regex:PATTERN with a (?P<name>...) group and one value group, or "
          "json:PATH with one * component (e.g. json:results.*.latency_ms)"));
    }
  } else if (!spec.metric().lead().empty() || spec.metric().members_size() > 0) {
    return absl::InvalidArgumentError(
        "--lead names a metric of a suite: add --suite (auto, regex:... or json:...)");
  }
  if (spec.metric().kind() == v1::METRIC_KIND_REGEX ||
      spec.metric().kind() == v1::METRIC_KIND_JSON_PATH) {
    return ValidateMetricFlags(ToMetricSpec(spec.metric()));
  }
  return absl::OkStatus();
}

absl::Status ValidateMetricFlags(const MetricSpec& metric) {
  constexpr char kHowTo[] =
      "Give --metric an RE2 regex with one capturing group around the number (e.g. --metric "
      "'latency: ([0-9.]+) ms'), or --metric-json a dotted path into the output's last JSON "
      "object (e.g. --metric-json results.latency_ms)";
  if (metric.kind != MetricSpec::Kind::kAuto && metric.pattern.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(metric.kind == MetricSpec::Kind::kRegex ? "--metric" : "--metric-json",
                     " is empty. ", kHowTo, "; without either the metric is detected"));
  }
  if (absl::Status valid = ValidateMetricSpec(metric); !valid.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(valid.message(), ". ", kHowTo));
  }
  return absl::OkStatus();
}

MetricSpec ToMetricSpec(const v1::MetricSpec& spec) {
  MetricSpec out;
  switch (spec.kind()) {
    case v1::METRIC_KIND_REGEX:
      out.kind = MetricSpec::Kind::kRegex;
      break;
    case v1::METRIC_KIND_JSON_PATH:
      out.kind = MetricSpec::Kind::kJsonPath;
      break;
    default:
      out.kind = MetricSpec::Kind::kAuto;
  }
  out.pattern = spec.pattern();
  return out;
}

}  // namespace kbisect
