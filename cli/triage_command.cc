// Copyright 2026 The kbisect Authors.
#include "cli/triage_command.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "common/flags/flag_checks.h"
#include "common/git/git_repo.h"
#include "common/status_macros.h"
#include "common/text/shell_quote.h"
#include "report/html/triage_page.h"
#include "triage/commit_window.h"
#include "triage/parse.h"
#include "triage/report.h"
#include "triage/source.h"
#include "triage/triage.h"

namespace kbisect {
namespace {

constexpr int kTriageOk = 0;
constexpr int kTriageError = 1;
constexpr int kTriageUsage = 2;

constexpr char kTriageFooter[] = R"(
Usage: kbisect triage --dashboard FILE|URL --platform P [--kernel K] [--date YYYY-MM-DD] [options]

Reads nightly history (Helion dashboard-data.json or pretuned-dashboard-data.json, or a generic
CSV / JSON-lines file with date, sha and metric columns), finds the move with change-point
detection, cross-checks it (baselines, independent timer, runner identity, other kernels and
platforms) and classifies it: real_regression, benchmark_method_change, hardware_issue or noise.
With --repo, the commits between the last good and first bad nightly are ranked against the
platform's slice (--slice-map). With --run / --submit and --bench, a real regression is bisected.

Exit codes:
  0  the report was produced (any cause; read it, or `cause` in --json)
  1  error: unreadable, malformed or truncated input, unknown platform/kernel/metric, repository
  2  usage error
  With --run/--submit (no --dry-run) on a real regression: the exit code of kbisect run/submit.

Example:
  kbisect triage --dashboard https://helionlang.com/dashboard/dashboard-data.json \
      --platform b200_cute --kernel layer_norm --date 2026-09-22 --repo ~/helion --json t.json \
      --html t.html
)";

std::string Join(const std::vector<std::string>& argv) {
  std::vector<std::string> quoted;
  for (const std::string& a : argv) quoted.push_back(ShellQuote(a));
  return absl::StrJoin(quoted, " ");
}

struct TriageFlags {
  std::string dashboard;
  std::string format = "auto";
  std::string platform;
  std::string kernel;
  std::string date;
  std::string metric;
  std::vector<std::string> baselines;
  std::string timer;
  bool lower_is_better = false;
  bool higher_is_better = false;
  bool include_non_nightly = false;
  int max_nightlies = 120;
  double min_change_pct = 2.0;
  double max_p = 0.01;
  std::string json_file;
  std::string html_file;
  std::string repo;
  std::string slice_map;
  std::string bench;
  std::string build;
  std::string bench_metric;
  std::string bench_metric_json;
  bool run = false;
  bool submit = false;
  bool dry_run = false;
  std::string repo_url;
  std::string coordinator;
  bool quiet = false;
};

// Registers `kbisect triage`'s flags on `app`.
void AddTriageFlags(CLI::App* app, TriageFlags* f) {
  app->add_option("--dashboard", f->dashboard,
                  "Dashboard file or http(s) URL (dashboard-data.json, pretuned, CSV, JSON lines; "
                  "- for stdin)")
      ->required();
  app->add_option("--format", f->format, "Input format: auto, helion, pretuned, csv, jsonl")
      ->capture_default_str();
  app->add_option("--platform", f->platform, "Platform short name, e.g. b200_cute");
  app->add_option("--kernel", f->kernel, "Kernel (default: every kernel of the platform)");
  app->add_option("--date", f->date,
                  "Date the move was seen, YYYY-MM-DD (default: the latest move)");
  app->add_option("--metric", f->metric, "Metric to explain (default: helion_speedup_geomean)");
  app->add_option(
      "--baseline", f->baselines,
      "Baseline metric on the same machine (repeatable; default: triton_/torch_compile_)");
  app->add_option("--timer", f->timer,
                  "Independent timer of the same kernel (default: helion_latency_avg_ms)");
  auto* lower = app->add_flag("--lower-is-better", f->lower_is_better, "The metric improves down");
  auto* higher = app->add_flag("--higher-is-better", f->higher_is_better, "The metric improves up");
  lower->excludes(higher);
  app->add_flag("--include-non-nightly", f->include_non_nightly,
                "Also use runs with is_nightly: false");
  app->add_option("--max-nightlies", f->max_nightlies, "Most nightlies analysed around --date")
      ->capture_default_str()
      ->check(WholeNumberIn(6, 100000, "nightlies"));
  app->add_option("--min-change", f->min_change_pct, "Smallest move that counts, percent")
      ->capture_default_str()
      ->check(NumberIn(0, 1000, "percent"));
  app->add_option("--max-p", f->max_p, "Largest p-value that counts as significant")
      ->capture_default_str()
      ->check(NumberIn(0.0001, 0.5));
  app->add_option("--json", f->json_file, "Write the result as JSON to FILE (- for stdout)");
  app->add_option("--html", f->html_file,
                  "Write the triage page to FILE: one self-contained HTML file (the series, the "
                  "change point, the evidence, the ranked commit window)");
  app->add_option("--repo", f->repo, "Local clone: list and rank the commit window");
  app->add_option("--slice-map", f->slice_map,
                  "JSON platform -> {tags, paths} map (default: Helion's)");
  app->add_option("--bench", f->bench,
                  "Benchmark command template for --run/--submit; {kernel} {platform} {metric} "
                  "are substituted");
  app->add_option("--build", f->build, "Build command for --run/--submit");
  app->add_option(
      "--bench-metric", f->bench_metric,
      "RE2 regex extracting the metric from the benchmark output (kbisect run --metric)");
  app->add_option("--bench-metric-json", f->bench_metric_json,
                  "JSON path of the metric in the benchmark output (kbisect run --metric-json)");
  auto* run = app->add_flag("--run", f->run, "Bisect a real regression's window on this machine");
  auto* submit = app->add_flag("--submit", f->submit, "Submit the bisect to a coordinator");
  run->excludes(submit);
  app->add_flag("--dry-run", f->dry_run, "With --run/--submit: print the command, do not start it");
  app->add_option("--repo-url", f->repo_url,
                  "Repository URL the cluster's workers clone (--submit)");
  app->add_option("--coordinator", f->coordinator, "Coordinator host:port (--submit)");
  app->add_flag("-q,--quiet", f->quiet, "Do not print the report (with --json)");
}

// Parses `kbisect triage`'s command line into `f` and `format` (--format's). Returns -1 to go on,
// else the exit code (--help, a usage error, said on stderr).
int ParseTriageFlags(int argc, char** argv, TriageFlags* f, triage::InputFormat* format) {
  CLI::App app{
      "Explain a nightly dashboard move: real regression, benchmark method change, "
      "hardware issue or noise.",
      "kbisect triage"};
  app.footer(kTriageFooter);
  AddTriageFlags(&app, f);
  std::vector<std::string> args(argv + 1, argv + argc);
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return ReportParseError(app, e) == 0 ? kTriageOk : kTriageUsage;
  }
  if ((f->run || f->submit) && f->bench.empty() && !f->dry_run) {
    std::cerr << "kbisect triage: --run/--submit need --bench 'COMMAND' (the benchmark to run at "
                 "each commit), or --dry-run to only print the command\n";
    return kTriageUsage;
  }
  absl::StatusOr<triage::InputFormat> parsed = triage::ParseInputFormat(f->format);
  if (!parsed.ok()) {
    std::cerr << "kbisect triage: " << parsed.status().message() << "\n";
    return kTriageUsage;
  }
  *format = *parsed;
  return -1;
}

// Says `status` on stderr and returns `code` (an error by default).
int TriageFail(const absl::Status& status, int code = kTriageError) {
  std::cerr << "kbisect triage: " << status.message() << "\n";
  return code;
}

// The commit of a nightly: its full sha when known.
std::string CommitOf(const triage::NightlyRef& r) {
  return r.full_sha.empty() ? r.sha : r.full_sha;
}

// The platform slices: --slice-map's, else Helion's. Errors name --slice-map.
absl::StatusOr<triage::SliceMap> LoadSliceMap(const TriageFlags& f) {
  if (f.slice_map.empty()) return triage::SliceMap::HelionDefault();
  absl::StatusOr<std::string> text = triage::ReadSource(f.slice_map);
  absl::StatusOr<triage::SliceMap> parsed =
      text.ok() ? triage::ParseSliceMap(*text) : absl::StatusOr<triage::SliceMap>(text.status());
  if (!parsed.ok()) {
    return absl::Status(parsed.status().code(),
                        absl::StrCat("--slice-map ", f.slice_map, ": ", parsed.status().message()));
  }
  return parsed;
}

// Reads and parses --dashboard as `format`. Errors of parsing name the dashboard.
absl::StatusOr<triage::Dataset> LoadDataset(const TriageFlags& f, triage::InputFormat format) {
  ASSIGN_OR_RETURN(std::string text, triage::ReadSource(f.dashboard));
  absl::StatusOr<triage::Dataset> data = triage::ParseDataset(text, format, f.dashboard);
  if (!data.ok()) {
    return absl::Status(data.status().code(),
                        absl::StrCat(f.dashboard, ": ", data.status().message()));
  }
  return data;
}

// The triage's request from the flags: what to triage, the metric roles and the thresholds.
triage::TriageRequest TriageRequestOf(const TriageFlags& f) {
  triage::TriageRequest request;
  request.platform = f.platform;
  request.kernel = f.kernel;
  request.date = f.date;
  request.roles.primary = f.metric;
  request.roles.baselines = f.baselines;
  request.roles.timer = f.timer;
  if (f.lower_is_better) request.roles.primary_direction = Direction::kLowerIsBetter;
  if (f.higher_is_better) request.roles.primary_direction = Direction::kHigherIsBetter;
  request.include_non_nightly = f.include_non_nightly;
  request.max_nightlies = f.max_nightlies;
  request.change_point.min_relative_change = f.min_change_pct / 100;
  request.change_point.max_p_value = f.max_p;
  request.cross_check_p = f.max_p;
  return request;
}

// With --repo and a step or drift: ranks the headline's commit window against `slice_map` into
// extras->window and folds it into the verdict (extras->window_error when it cannot).
void CommitWindowStage(const TriageFlags& f, const triage::SliceMap& slice_map,
                       triage::KernelTriage* head, triage::ReportExtras* extras) {
  const bool moved =
      head->evidence.shape == triage::Shape::kStep || head->evidence.shape == triage::Shape::kDrift;
  if (f.repo.empty() || !moved) return;
  absl::StatusOr<std::unique_ptr<GitRepo>> repo = GitRepo::Open(f.repo);
  absl::StatusOr<triage::CommitWindow> window =
      repo.ok() ? triage::RankWindow(**repo, CommitOf(*head->last_good), CommitOf(*head->first_bad),
                                     head->platform_short, slice_map)
                : absl::StatusOr<triage::CommitWindow>(repo.status());
  if (window.ok()) {
    triage::ApplyWindowEvidence(*window, &head->evidence);
    triage::Reclassify(head);
    extras->window = *std::move(window);
  } else {
    extras->window_error = std::string(window.status().message());
  }
}

// The `kbisect run` (or, with --submit, `kbisect submit`) command that bisects a real
// regression's window, with the flags' build, metric, direction and bench (its {kernel},
// {platform} and {metric} substituted); empty when the cause is not a real regression step.
std::vector<std::string> BisectCommand(const TriageFlags& f, const triage::KernelTriage& head) {
  std::vector<std::string> bisect;
  if (head.diagnosis.cause != v1::CAUSE_REAL_REGRESSION || !head.last_good.has_value()) {
    return bisect;
  }
  const std::string verb = f.submit ? "submit" : "run";
  bisect = {"kbisect", verb, CommitOf(*head.last_good), CommitOf(*head.first_bad)};
  std::string repo = f.submit && !f.repo_url.empty() ? f.repo_url : f.repo;
  if (!repo.empty()) {
    bisect.push_back("--repo");
    bisect.push_back(repo);
  }
  if (!f.build.empty()) {
    bisect.push_back("--build");
    bisect.push_back(f.build);
  }
  if (!f.bench_metric.empty()) {
    bisect.push_back("--metric");
    bisect.push_back(f.bench_metric);
  } else if (!f.bench_metric_json.empty()) {
    bisect.push_back("--metric-json");
    bisect.push_back(f.bench_metric_json);
  }
  if (head.direction == Direction::kHigherIsBetter) bisect.push_back("--higher-is-better");
  if (head.direction == Direction::kLowerIsBetter) bisect.push_back("--lower-is-better");
  if (!head.IsRegression()) bisect.push_back("--allow-improvement");
  if (f.submit) {
    if (!f.coordinator.empty()) {
      bisect.push_back("--coordinator");
      bisect.push_back(f.coordinator);
    }
    bisect.insert(bisect.end(), {"--origin", "triage", "--trigger", f.dashboard});
  }
  std::string bench = f.bench.empty() ? "BENCH_COMMAND" : f.bench;
  bench = absl::StrReplaceAll(bench, {{"{kernel}", head.kernel},
                                      {"{platform}", head.platform_short},
                                      {"{metric}", head.primary_metric}});
  bisect.insert(bisect.end(), {"--", "sh", "-c", bench});
  return bisect;
}

// Writes the result: --json (to stdout for -), then --html, then the text report on stdout
// (unless --quiet or --json -). Errors say what could not be written.
absl::Status WriteOutputs(const TriageFlags& f, const triage::TriageResult& result,
                          const triage::ReportExtras& extras) {
  if (!f.json_file.empty()) {
    const std::string json = triage::ToJson(result, extras).dump(2) + "\n";
    if (f.json_file == "-") {
      std::cout << json;
    } else {
      std::ofstream out(f.json_file);
      out << json;
      if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", f.json_file));
    }
  }
  if (!f.html_file.empty()) {
    absl::StatusOr<std::string> page = html::RenderTriagePage(result, extras, absl::Now());
    if (!page.ok()) {
      return absl::Status(page.status().code(),
                          absl::StrCat("the triage page: ", page.status().message()));
    }
    std::ofstream out(f.html_file);
    out << *page;
    if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", f.html_file));
  }
  if (!f.quiet && f.json_file != "-") std::cout << triage::FormatReport(result, extras);
  return absl::OkStatus();
}

// With --run/--submit: starts `bisect` in place of this process (or, with --dry-run, prints it),
// or says why there is nothing to bisect. Returns the exit code when it does not exec.
int BisectStage(const TriageFlags& f, std::vector<std::string> bisect,
                const triage::ReportExtras& extras, const triage::KernelTriage& head) {
  if ((f.run || f.submit) && !bisect.empty()) {
    if (f.dry_run) {
      std::cerr << "kbisect triage: --dry-run: would run: " << extras.bisect_command << "\n";
      return kTriageOk;
    }
    std::cout.flush();
    std::vector<char*> exec_argv;
    for (std::string& a : bisect) exec_argv.push_back(a.data());
    exec_argv.push_back(nullptr);
    execv("/proc/self/exe", exec_argv.data());
    std::cerr << "kbisect triage: cannot start `" << extras.bisect_command
              << "`: " << std::strerror(errno) << "; run it yourself\n";
    return kTriageError;
  }
  if ((f.run || f.submit) && bisect.empty()) {
    std::cerr << "kbisect triage: not bisecting: the cause is "
              << triage::CauseName(head.diagnosis.cause)
              << ", so the data does not point at a commit\n";
  }
  return kTriageOk;
}

}  // namespace

int TriageCommand(int argc, char** argv) {
  TriageFlags f;
  triage::InputFormat format = triage::InputFormat::kAuto;
  if (int code = ParseTriageFlags(argc, argv, &f, &format); code >= 0) return code;
  absl::StatusOr<triage::SliceMap> slice_map = LoadSliceMap(f);
  if (!slice_map.ok()) return TriageFail(slice_map.status());
  absl::StatusOr<triage::Dataset> data = LoadDataset(f, format);
  if (!data.ok()) return TriageFail(data.status());
  absl::StatusOr<triage::TriageResult> result = triage::Triage(*data, TriageRequestOf(f));
  if (!result.ok()) return TriageFail(result.status());
  triage::KernelTriage& head = result->kernels.front();
  triage::ReportExtras extras;
  CommitWindowStage(f, *slice_map, &head, &extras);
  // The bisect over the window.
  std::vector<std::string> bisect = BisectCommand(f, head);
  if (!bisect.empty()) extras.bisect_command = Join(bisect);
  if (absl::Status written = WriteOutputs(f, *result, extras); !written.ok()) {
    return TriageFail(written);
  }
  return BisectStage(f, std::move(bisect), extras, head);
}

}  // namespace kbisect
