// Copyright 2026 The kbisect Authors.
#include "cli/nightly_command.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/artifact_axis.h"
#include "cli/job_options.h"
#include "cli/run_command.h"
#include "common/exec/exec.h"
#include "common/flags/flag_checks.h"
#include "common/git/git_repo.h"
#include "common/identity/identity.h"
#include "common/manifest/manifest.h"
#include "common/metric/metric.h"
#include "common/metric/metric_suite.h"
#include "common/metric/percent.h"
#include "common/spec/job_spec.h"
#include "common/status_macros.h"
#include "common/text/count.h"
#include "nlohmann/json.hpp"
#include "triage/nightly.h"
#include "worker/build_layer.h"

namespace kbisect {
namespace {

constexpr char kNightlyFooter[] = R"(
Records tonight's result of one benchmark (from --value, from --output FILE, or by running
BENCH_CMD in --repo), with its measurement manifest (hashes of the harness files, the command
line, named environment variables, tool versions, GPU and clocks), in the JSON-lines --history.
Then triages the history (kbisect triage's change-point detector and cross-checks, plus the
manifest across the step) and, only for a real regression step, submits one bisect over
last-good..first-bad to the coordinator (--coordinator / KBISECT_COORDINATOR), with a request id
derived from (benchmark, hardware class, window): a rerun of the night, or a later night that sees
the same step, starts nothing new. BENCH_CMD is also the bisect's benchmark.

Exit codes:
  0  nothing to do (no move, an improvement, too little history)
  1  error (unreadable history, benchmark failed, metric missing, repository, coordinator)
  2  usage error
  3  real regression: a bisect was submitted (tonight or on an earlier night: see the output)
  4  benchmark method change (the manifest or the window names what changed); nothing submitted
  5  hardware issue (GPU, driver or clocks changed); nothing submitted
  6  noise (a spike, a reverted excursion); nothing submitted
  7  gradual regression (drift): no single commit to bisect; nothing submitted
  8  dependency change: only a --track-package moved, or the project's last good commit with
     tonight's packages is already slow; nothing submitted

Example (a CI step after checking out $SHA into ./src):
  kbisect nightly --history /data/nightly.jsonl --benchmark attention --sha "$SHA" \
      --repo ./src --repo-url https://git.example.com/team/kernels.git --build 'make -j16' \
      --record-env 'HELION_AUTOTUNE_*' -- ./bench/attention.sh
)";

std::string Today() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buffer[16];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%d", &tm);
  return buffer;
}

std::string SelfPath() {
  char buffer[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0) return "kbisect";
  return std::string(buffer, n);
}

struct NightlyFlags {
  std::string history;
  std::string benchmark;
  std::string hardware_class;
  std::string sha;
  std::string repo;
  std::string repo_url;
  std::string date;
  int64_t run_id = 0;
  std::vector<double> value;
  std::string output_file;
  std::string metric_name;
  std::string unit;
  std::string metric;
  std::string metric_json;
  std::string suite;  // --suite SPEC: every metric of the output, one series each.
  bool lower = false;
  bool higher = false;
  std::vector<std::string> harness;
  std::vector<std::string> record_env;
  std::vector<std::string> tools;
  std::vector<std::string> tracked_packages;  // --track-package NAME[=MODULE].
  std::string build;
  int runs = 0;
  std::string coordinator;
  std::vector<std::string> submit_args;
  bool no_submit = false;
  // The bisects submitted verify their culprit by reverting it at BAD (--verify-revert) unless
  // --no-verify-revert.
  bool no_verify_revert = false;
  int bench_timeout = 600;
  double min_change_pct = 2.0;
  std::string json_file;
  bool pin_harness = false;
  int pin_runs = 3;
  std::string notify_url;
};

// Exports `sha` of the repository at `repo` into `dir` (git archive), so that a commit can be
// measured without touching the checkout.
absl::Status Export(CommandRunner* runner, const std::string& repo, const std::string& sha,
                    const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  ExecRequest request;
  request.argv = {"sh",     "-c", "git -C \"$1\" archive --format=tar \"$2\" | tar -x -C \"$3\"",
                  "export", repo, sha,
                  dir};
  request.timeout = absl::Minutes(5);
  absl::StatusOr<ExecResult> ran = runner->Run(request);
  if (!ran.ok()) return ran.status();
  if (!ran->ok()) {
    return absl::InternalError(
        absl::StrCat("exporting ", sha.substr(0, 12), " ", ran->Describe(), ": ", ran->Tail(5)));
  }
  return absl::OkStatus();
}

// Builds (when `build` is set) and runs `bench` `runs` times in `dir`; returns the median. The
// build installs into a layer of its own beside `dir` (worker/build_layer.h), never into the
// user's environment, and the runs see what it installed.
absl::StatusOr<double> MeasureIn(CommandRunner* runner, const std::string& dir,
                                 const std::string& build, const std::vector<std::string>& bench,
                                 const MetricSpec& spec, int runs, int timeout_s) {
  std::map<std::string, std::string> layer_env;
  if (!build.empty()) {
    BuildLayers layers(runner, BuildLayers::ProcessEnvironment());
    ASSIGN_OR_RETURN(BuildLayer layer,
                     layers.Create(dir + ".layer", v1::BUILD_ISOLATION_UNSPECIFIED, {}));
    layer_env = layer.variables;
    ExecRequest request;
    request.shell_command = build;
    request.cwd = dir;
    request.env = layer_env;
    request.timeout = absl::Minutes(30);
    absl::StatusOr<ExecResult> ran = runner->Run(request);
    if (!ran.ok()) return ran.status();
    if (!ran->ok()) return absl::InternalError(absl::StrCat("the build ", ran->Describe()));
  }
  std::vector<double> values;
  for (int i = 0; i < std::max(1, runs); ++i) {
    ExecRequest request;
    request.argv = bench;
    request.cwd = dir;
    request.env = layer_env;
    request.timeout = absl::Seconds(timeout_s);
    absl::StatusOr<ExecResult> ran = runner->Run(request);
    if (!ran.ok()) return ran.status();
    if (!ran->ok()) return absl::InternalError(absl::StrCat("the benchmark ", ran->Describe()));
    absl::StatusOr<Metric> metric = ExtractMetric(spec, ran->output);
    if (!metric.ok()) return metric.status();
    values.push_back(metric->value);
  }
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// A temporary directory under /tmp, removed with everything in it when this goes.
class ScratchDir {
 public:
  static absl::StatusOr<std::unique_ptr<ScratchDir>> Make() {
    char pattern[] = "/tmp/kbisect-pin-XXXXXX";
    if (mkdtemp(pattern) == nullptr) {
      return absl::InternalError("cannot create a temporary directory");
    }
    return std::unique_ptr<ScratchDir>(new ScratchDir(pattern));
  }
  ~ScratchDir() {
    std::error_code error;
    std::filesystem::remove_all(path_, error);
  }
  const std::string& path() const { return path_; }

 private:
  explicit ScratchDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// Commit `sha` of `repo` exported into a scratch directory, built and measured there (MeasureIn)
// in this environment: the median of `runs` runs.
absl::StatusOr<double> MeasureCommit(CommandRunner* runner, const std::string& repo,
                                     const std::string& sha, const std::string& build,
                                     const std::vector<std::string>& bench, const MetricSpec& spec,
                                     int runs, int timeout_s) {
  ASSIGN_OR_RETURN(std::unique_ptr<ScratchDir> scratch, ScratchDir::Make());
  const std::string tree = scratch->path() + "/commit";
  RETURN_IF_ERROR(Export(runner, repo, sha, tree));
  return MeasureIn(runner, tree, build, bench, spec, runs, timeout_s);
}

// The kernel's true change across a method change: last-good's and first-bad's trees measured
// under one harness, first-bad's (its harness files copied over last-good's).
struct Pinned {
  double before = 0;
  double after = 0;
};
absl::StatusOr<Pinned> MeasurePinned(CommandRunner* runner, const std::string& repo,
                                     const triage::NightlyRecord& good,
                                     const triage::NightlyRecord& bad, const std::string& build,
                                     const std::vector<std::string>& bench, const MetricSpec& spec,
                                     int runs, int timeout_s) {
  namespace fs = std::filesystem;
  ASSIGN_OR_RETURN(std::unique_ptr<ScratchDir> scratch, ScratchDir::Make());
  const std::string& root = scratch->path();
  const std::string before = root + "/last-good", after = root + "/first-bad";
  RETURN_IF_ERROR(Export(runner, repo, good.full_sha, before));
  RETURN_IF_ERROR(Export(runner, repo, bad.full_sha, after));
  std::error_code error;
  if (good.manifest.has_value()) {
    for (const v1::HarnessFile& f : good.manifest->harness_files())
      fs::remove(before + "/" + f.path(), error);
  }
  for (const v1::HarnessFile& f : bad.manifest->harness_files()) {
    fs::create_directories(fs::path(before + "/" + f.path()).parent_path(), error);
    fs::copy_file(after + "/" + f.path(), before + "/" + f.path(),
                  fs::copy_options::overwrite_existing, error);
    if (error) {
      return absl::InternalError(absl::StrCat("pinning ", f.path(), ": ", error.message()));
    }
  }
  Pinned p;
  ASSIGN_OR_RETURN(p.before, MeasureIn(runner, before, build, bench, spec, runs, timeout_s));
  ASSIGN_OR_RETURN(p.after, MeasureIn(runner, after, build, bench, spec, runs, timeout_s));
  return p;
}

// The job's trigger text: where it came from and the triage evidence, so that the job (its
// report, its JSON, a webhook) says why it was started.
std::string Trigger(const NightlyFlags& f, const triage::NightlyDecision& d) {
  const triage::KernelTriage& k = d.triage;
  std::string text = absl::StrCat("kbisect nightly ", f.benchmark, " on ", f.hardware_class, " ",
                                  f.date, f.run_id != 0 ? absl::StrCat(" run ", f.run_id) : "",
                                  ": ", triage::CauseName(k.diagnosis.cause),
                                  absl::StrFormat(" (confidence %.2f)", k.diagnosis.confidence));
  if (k.evidence.primary.present && k.last_good.has_value() && k.first_bad.has_value()) {
    absl::StrAppend(
        &text,
        absl::StrFormat(", %s %.4g -> %.4g (%s) between the nightlies of %s and %s",
                        k.primary_metric, k.evidence.primary.before, k.evidence.primary.after,
                        FormatSignedPercent(100 * k.evidence.primary.relative_change),
                        k.last_good->date, k.first_bad->date));
  }
  absl::StrAppend(&text, d.manifest_changes.empty() ? "; measurement manifest unchanged" : "");
  return text;
}

// What `kbisect submit` answered.
struct Submitted {
  std::string job_id;
  bool existed = false;  // The request id was submitted before: its job.
};

// Submits the bisect of last_good..first_bad through `kbisect submit` with the nightly's
// options, `metric_args` (how the bisect reads its metric) and the trigger text. Errors say what
// failed; the night is recorded already, and a rerun submits again safely (the request id).
absl::StatusOr<Submitted> SubmitBisect(CommandRunner* runner, const NightlyFlags& f,
                                       const std::vector<std::string>& bench,
                                       const std::string& last_good, const std::string& first_bad,
                                       const std::string& request_id, const std::string& trigger,
                                       const std::vector<std::string>& metric_args) {
  std::vector<std::string> submit = {SelfPath(), "submit",
                                     last_good,  first_bad,
                                     "--repo",   f.repo_url.empty() ? f.repo : f.repo_url};
  submit.insert(submit.end(),
                {"--request-id", request_id, "--origin", "nightly", "--trigger", trigger});
  if (!f.coordinator.empty()) submit.insert(submit.end(), {"--coordinator", f.coordinator});
  if (!f.build.empty()) submit.insert(submit.end(), {"--build", f.build});
  if (f.runs > 0) submit.insert(submit.end(), {"--runs", absl::StrCat(f.runs)});
  submit.insert(submit.end(), metric_args.begin(), metric_args.end());
  // The bisect's probes record the same manifest (worker/task_manifest.h).
  if (!f.harness.empty()) {
    submit.insert(submit.end(),
                  {"--env", absl::StrCat(kManifestHarnessEnv, "=", absl::StrJoin(f.harness, ","))});
  }
  if (!f.record_env.empty()) {
    submit.insert(submit.end(),
                  {"--env", absl::StrCat(kManifestEnvEnv, "=", absl::StrJoin(f.record_env, ","))});
  }
  if (!f.no_verify_revert) submit.push_back("--verify-revert");
  for (const std::string& a : f.submit_args) submit.push_back(a);
  submit.push_back("--");
  submit.insert(submit.end(), bench.begin(), bench.end());
  ExecRequest request_submit;
  request_submit.argv = submit;
  request_submit.timeout = absl::Minutes(2);
  absl::StatusOr<ExecResult> ran = runner->Run(request_submit);
  if (!ran.ok() || !ran->ok()) {
    return absl::UnavailableError(absl::StrCat(
        "`kbisect submit` ",
        ran.ok() ? ran->Describe() + ":\n" + ran->Tail(10) : std::string(ran.status().message()),
        "\nThe night is recorded; rerun to submit again (the request id makes that safe)."));
  }
  Submitted submitted;
  for (absl::string_view line : absl::StrSplit(ran->output, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (!line.empty() && !absl::StartsWith(line, "kbisect")) {
      submitted.job_id = std::string(line);
      break;
    }
  }
  submitted.existed = absl::StrContains(ran->output, "was submitted before");
  return submitted;
}

// Follows job `job_id` to its end and posts its result to --notify-url (`kbisect watch
// --notify-url`), printing what watch printed. Errors say why.
absl::Status NotifyWhenDone(CommandRunner* runner, const NightlyFlags& f,
                            const std::string& job_id) {
  ExecRequest watch;
  watch.argv = {SelfPath(), "watch", job_id, "-q", "--notify-url", f.notify_url};
  if (!f.coordinator.empty()) watch.argv.insert(watch.argv.end(), {"--coordinator", f.coordinator});
  absl::StatusOr<ExecResult> watched = runner->Run(watch);
  if (watched.ok()) std::cout << watched->output;
  if (!watched.ok() || watched->exit_code == kExitError || watched->signal != 0) {
    return absl::UnavailableError(
        absl::StrCat("following job ", job_id, " to notify ", f.notify_url, " failed",
                     watched.ok() ? absl::StrCat(" (", watched->Describe(), ")")
                                  : absl::StrCat(": ", watched.status().message())));
  }
  return absl::OkStatus();
}

// Writes the night's decision `out` to `path` (--json; nothing when empty). False, having said
// so, when it cannot be written.
bool WriteDecisionJson(const std::string& path, const nlohmann::json& out) {
  if (path.empty()) return true;
  std::ofstream file(path);
  file << out.dump(2) << "\n";
  if (!file) std::cerr << "kbisect nightly: cannot write " << path << "\n";
  return static_cast<bool>(file);
}

// A suite's series: one per metric, "<benchmark>/<metric>".
std::string SuiteSeries(const std::string& benchmark, const std::string& metric) {
  return absl::StrCat(benchmark, "/", metric);
}

// The exit code of a suite's night: that of a submission when a metric's step was (or had been)
// submitted, else the first of a method change, a hardware issue, a drift and noise that a
// metric shows, else nothing's.
int SuiteExitCode(const std::vector<triage::NightlyDecision>& decisions) {
  using triage::NightlyAction;
  for (NightlyAction action :
       {NightlyAction::kSubmitBisect, NightlyAction::kAlreadySubmitted,
        NightlyAction::kMethodChange, NightlyAction::kHardware, NightlyAction::kDependencyChange,
        NightlyAction::kDrift, NightlyAction::kNoise}) {
    for (const triage::NightlyDecision& d : decisions) {
      if (d.action == action) return triage::NightlyExitCode(action);
    }
  }
  return triage::NightlyExitCode(NightlyAction::kNothing);
}

// Tonight's suite once recorded: every metric of the output, and the history with each metric's
// night added to its series.
struct RecordedSuite {
  SuiteReading reading;
  triage::History history;
};

// Reads every metric of tonight's `output` (--suite), adds each to its own series of the history
// (`base` with the metric's name, unit and value), writes the history file and prints the night's
// line. Errors say what failed; one about the output says "tonight's suite".
absl::StatusOr<RecordedSuite> RecordSuiteNight(const NightlyFlags& f, const std::string& output,
                                               const triage::NightlyRecord& base) {
  const absl::StatusOr<MetricSuiteSpec> spec = ParseMetricSuiteSpec(f.suite);
  absl::StatusOr<SuiteReading> reading =
      spec.ok() ? ReadSuite(*spec, output, "", {}) : absl::StatusOr<SuiteReading>(spec.status());
  if (!reading.ok()) {
    return absl::Status(reading.status().code(),
                        absl::StrCat("tonight's suite: ", reading.status().message()));
  }
  ASSIGN_OR_RETURN(triage::History history, triage::ReadHistoryFile(f.history));
  for (const NamedMetric& named : reading->metrics) {
    triage::NightlyRecord record = base;
    record.benchmark = SuiteSeries(f.benchmark, named.name);
    record.metric = named.name;
    record.unit = named.metric.unit;
    record.value = named.metric.value;
    triage::AddNightly(&history, std::move(record));
  }
  RETURN_IF_ERROR(triage::WriteHistoryFile(f.history, history));
  std::cout << "Night " << f.date << ": " << f.benchmark << " on " << f.hardware_class << " at "
            << base.sha << ": " << Count(static_cast<int>(reading->metrics.size()), "metric")
            << " of the suite\n";
  return RecordedSuite{*std::move(reading), std::move(history)};
}

// What the triage of a suite's night found: each metric's decision (in the reading's order) and
// its JSON row, and for the metrics with a regression step to bisect, the window that covers
// every step, the metric that moved most and each one's move ("name +12.3%").
struct SuiteTriage {
  std::vector<triage::NightlyDecision> decisions;
  nlohmann::json metrics = nlohmann::json::array();
  const NamedMetric* lead = nullptr;  // Into the reading triaged; null: nothing to bisect.
  std::optional<triage::NightlyRef> last_good;
  std::optional<triage::NightlyRef> first_bad;
  std::vector<std::string> moved;
};

// Prints metric `named`'s line of the night with its decision `d`, and returns its JSON row. A
// step to bisect is said as such: the suite's one job bisects it, not the series' own request id
// that the decision's summary names.
nlohmann::json ReportSuiteMetric(const NightlyFlags& f, const NamedMetric& named,
                                 const triage::NightlyDecision& d) {
  const std::string summary =
      d.action == triage::NightlyAction::kSubmitBisect
          ? absl::StrCat("a real regression step between the nightlies of ",
                         d.triage.last_good->date, " and ", d.triage.first_bad->date)
          : d.summary;
  std::cout << "  " << named.name << " = " << FormatValue(named.metric.value, named.metric.unit)
            << ": " << triage::NightlyActionName(d.action) << " (" << summary << ")\n";
  return {{"metric", named.name},
          {"series", SuiteSeries(f.benchmark, named.name)},
          {"value", named.metric.value},
          {"unit", named.metric.unit},
          {"action", triage::NightlyActionName(d.action)},
          {"cause", triage::CauseName(d.triage.diagnosis.cause)},
          {"summary", summary}};
}

// Triages each metric of `reading` in its series of `history` (its own direction where the
// request has none), printing its line, and gathers the steps to bisect into one window. Errors
// name the metric whose triage failed.
absl::StatusOr<SuiteTriage> TriageSuiteMetrics(const NightlyFlags& f, const SuiteReading& reading,
                                               const triage::History& history,
                                               const triage::TriageRequest& request,
                                               const GitRepo* repo,
                                               const std::vector<std::string>& harness_globs) {
  SuiteTriage found;
  double lead_move = -1;
  for (const NamedMetric& named : reading.metrics) {
    triage::TriageRequest metric_request = request;
    if (metric_request.roles.primary_direction == Direction::kUnknown) {
      metric_request.roles.primary_direction = named.metric.direction;
    }
    absl::StatusOr<triage::NightlyDecision> decision =
        triage::DecideNightly(history, SuiteSeries(f.benchmark, named.name), f.hardware_class,
                              metric_request, repo, harness_globs);
    if (!decision.ok()) {
      return absl::Status(decision.status().code(),
                          absl::StrCat(named.name, ": ", decision.status().message()));
    }
    found.decisions.push_back(*std::move(decision));
    const triage::NightlyDecision& d = found.decisions.back();
    found.metrics.push_back(ReportSuiteMetric(f, named, d));
    if (d.action != triage::NightlyAction::kSubmitBisect) continue;
    const triage::KernelTriage& k = d.triage;
    const double move = std::fabs(k.evidence.primary.relative_change);
    found.moved.push_back(absl::StrCat(
        named.name, " ", FormatSignedPercent(100 * k.evidence.primary.relative_change)));
    if (move > lead_move) {
      lead_move = move;
      found.lead = &named;
    }
    // Copies: `decisions` grows.
    if (!found.last_good.has_value() || k.last_good->date < found.last_good->date) {
      found.last_good = k.last_good;
    }
    if (!found.first_bad.has_value() || k.first_bad->date > found.first_bad->date) {
      found.first_bad = k.first_bad;
    }
  }
  return found;
}

// The trigger text of the suite's bisect: the night, and which metrics regressed between which
// nightlies by how much.
std::string SuiteTrigger(const NightlyFlags& f, const SuiteTriage& found) {
  return absl::StrCat("kbisect nightly ", f.benchmark, " on ", f.hardware_class, " ", f.date,
                      f.run_id != 0 ? absl::StrCat(" run ", f.run_id) : "", ": ",
                      Count(found.moved.size(), "metric"),
                      " of the suite regressed between the nightlies of ", found.last_good->date,
                      " and ", found.first_bad->date, ": ", absl::StrJoin(found.moved, ", "));
}

// Records the suite's bisect, job `job_id` under `request_id`, in each regressed series of
// `recorded`'s history, so that later nights do not submit its step again, and writes the
// history file. Errors say why it could not be written.
absl::Status RecordSuiteBisect(const NightlyFlags& f, const SuiteTriage& found,
                               const std::string& request_id, const std::string& job_id,
                               RecordedSuite* recorded) {
  for (size_t i = 0; i < found.decisions.size(); ++i) {
    if (found.decisions[i].action != triage::NightlyAction::kSubmitBisect) continue;
    triage::BisectRecord record;
    record.benchmark = SuiteSeries(f.benchmark, recorded->reading.metrics[i].name);
    record.hardware_class = f.hardware_class;
    record.last_good = found.last_good->full_sha;
    record.last_good_date = found.last_good->date;
    record.first_bad = found.first_bad->full_sha;
    record.first_bad_date = found.first_bad->date;
    record.request_id = request_id;
    record.job_id = job_id;
    record.date = f.date;
    recorded->history.bisects.push_back(record);
  }
  return triage::WriteHistoryFile(f.history, recorded->history);
}

// Submits the suite's one bisect of `found`'s window, led by the metric that moved most (unless
// --no-submit), records it in the history and follows it to --notify-url when set, printing what
// was done. Adds the request id, the lead, the job and whether it was submitted to `out`, and
// writes it to --json. Returns the night's exit code.
int SubmitSuiteBisect(const NightlyFlags& f, const std::vector<std::string>& bench,
                      const SuiteTriage& found, CommandRunner* runner, RecordedSuite* recorded,
                      nlohmann::json* out) {
  const std::string request_id = triage::NightlyRequestId(
      f.benchmark, f.hardware_class, found.last_good->full_sha, found.first_bad->full_sha);
  std::cout << "Regressed: " << absl::StrJoin(found.moved, ", ") << "; one bisect of "
            << found.last_good->sha << ".." << found.first_bad->sha << " led by "
            << found.lead->name << "\n";
  (*out)["request_id"] = request_id;
  (*out)["lead"] = found.lead->name;
  const int exit_code = SuiteExitCode(found.decisions);
  auto write_json = [&]() { return WriteDecisionJson(f.json_file, *out); };
  if (f.no_submit) {
    std::cout << "Not submitted (--no-submit).\n";
    return write_json() ? exit_code : kExitError;
  }
  absl::StatusOr<Submitted> submitted = SubmitBisect(
      runner, f, bench, found.last_good->full_sha, found.first_bad->full_sha, request_id,
      SuiteTrigger(f, found), {"--suite", f.suite, "--lead", found.lead->name});
  if (!submitted.ok()) {
    std::cerr << "kbisect nightly: " << submitted.status().message() << "\n";
    return kExitError;
  }
  std::cout << (submitted->existed ? "Already submitted: job " : "Submitted: job ")
            << submitted->job_id << " (request " << request_id << ")\n";
  if (absl::Status written = RecordSuiteBisect(f, found, request_id, submitted->job_id, recorded);
      !written.ok()) {
    std::cerr << "kbisect nightly: " << written.message() << "\n";
    return kExitError;
  }
  (*out)["job_id"] = submitted->job_id;
  (*out)["submitted"] = !submitted->existed;
  if (!f.notify_url.empty() && !submitted->job_id.empty() && !submitted->existed) {
    if (absl::Status notified = NotifyWhenDone(runner, f, submitted->job_id); !notified.ok()) {
      std::cerr << "kbisect nightly: " << notified.message() << "\n";
      write_json();
      return kExitError;
    }
  }
  return write_json() ? exit_code : kExitError;
}

// A night of a suite (--suite): every metric of tonight's output is its own series
// ("<benchmark>/<metric>") in the history, each is triaged, and the metrics with a real
// regression step are bisected by ONE suite job over the window that covers all their steps,
// led by the metric that moved most.
int SuiteNight(const NightlyFlags& f, const std::vector<std::string>& bench,
               const std::string& output, const triage::NightlyRecord& base,
               const triage::TriageRequest& request, const GitRepo* repo,
               const std::vector<std::string>& harness_globs, CommandRunner* runner) {
  absl::StatusOr<RecordedSuite> recorded = RecordSuiteNight(f, output, base);
  if (!recorded.ok()) {
    std::cerr << "kbisect nightly: " << recorded.status().message() << "\n";
    return kExitError;
  }
  absl::StatusOr<SuiteTriage> found =
      TriageSuiteMetrics(f, recorded->reading, recorded->history, request, repo, harness_globs);
  if (!found.ok()) {
    std::cerr << "kbisect nightly: " << found.status().message() << "\n";
    return kExitError;
  }
  nlohmann::json out = {
      {"schema", "kbisect.nightly.v1"}, {"date", f.date},
      {"benchmark", f.benchmark},       {"hardware_class", f.hardware_class},
      {"sha", base.full_sha},           {"suite", f.suite},
      {"metrics", found->metrics},      {"exit_code", SuiteExitCode(found->decisions)}};
  if (found->lead == nullptr) {
    return WriteDecisionJson(f.json_file, out) ? SuiteExitCode(found->decisions) : kExitError;
  }
  return SubmitSuiteBisect(f, bench, *found, runner, &*recorded, &out);
}

// Registers `kbisect nightly`'s flags on `app`.
void AddNightlyFlags(CLI::App* app, NightlyFlags* f) {
  app->add_option("--history", f->history, "JSON-lines history file (created when missing)")
      ->required();
  app->add_option("--benchmark", f->benchmark, "Benchmark name: one series per name and class")
      ->required();
  app->add_option("--hardware-class", f->hardware_class,
                  "Series key for the machine (default: the probed hardware class label)");
  app->add_option("--sha", f->sha, "The commit tonight measured (any revision of --repo)")
      ->required();
  app->add_option("--repo", f->repo, "Local checkout of --sha: runs BENCH_CMD, hashes the harness")
      ->required();
  app->add_option("--repo-url", f->repo_url,
                  "Repository the cluster's workers clone for the bisect (default: --repo)");
  app->add_option("--date", f->date, "The night, YYYY-MM-DD (default: today, UTC)");
  app->add_option("--run-id", f->run_id, "CI run id, recorded");
  auto* value = app->add_option("--value", f->value, "Tonight's value (the benchmark is not run)")
                    ->expected(1);
  auto* output = app->add_option("--output", f->output_file,
                                 "File holding tonight's benchmark output (not run again)");
  value->excludes(output);
  app->add_option("--metric-name", f->metric_name, "Name of the --value metric (default: value)");
  app->add_option("--unit", f->unit, "Unit of the --value metric (ms, GB/s, x, ...)");
  auto* metric =
      app->add_option("--metric", f->metric, "RE2 regex with one group: the metric in the output");
  auto* metric_json = app->add_option("--metric-json", f->metric_json,
                                      "Dotted JSON path of the metric in the output");
  app->add_option("--suite", f->suite,
                  "Every metric of the output (auto, regex:PATTERN with a (?P<name>...) group, "
                  "json:PATH with one *): one series each, BENCHMARK/METRIC; the metrics that "
                  "regressed are bisected by one `--suite` job")
      ->excludes(metric)
      ->excludes(metric_json)
      ->excludes(value);
  auto* lower = app->add_flag("--lower-is-better", f->lower, "The metric improves down");
  auto* higher = app->add_flag("--higher-is-better", f->higher, "The metric improves up");
  lower->excludes(higher);
  app->add_option("--harness", f->harness,
                  "Harness glob for the manifest (repeatable; default benchmarks/** bench/** "
                  ".github/workflows/**); only files the commit holds count");
  app->add_option("--record-env", f->record_env,
                  "Environment variable (or PREFIX_*) recorded in the manifest (repeatable)");
  app->add_option("--track-package", f->tracked_packages,
                  "NAME[=MODULE]: a dependency installed as a built artifact (a torch or triton "
                  "nightly) whose version and commit each night records; a step across which "
                  "only it moved is a dependency change, not bisected here (repeatable)");
  app->add_option("--tool", f->tools,
                  "NAME=COMMAND whose first output line is a tool version in the manifest "
                  "(repeatable)");
  app->add_option("--build", f->build, "Build command of the bisect");
  app->add_option("--runs", f->runs, "Benchmark runs per commit in the bisect");
  app->add_option("--coordinator", f->coordinator,
                  "Coordinator host:port for the bisect (default $KBISECT_COORDINATOR)");
  app->add_option(
      "--submit-arg", f->submit_args,
      "Extra argument passed to `kbisect submit` (repeatable, e.g. --submit-arg=--all-culprits)");
  app->add_flag("--no-submit", f->no_submit, "Decide and print, but submit nothing");
  app->add_flag("--no-verify-revert", f->no_verify_revert,
                "Submit the bisect without --verify-revert (by default its confirmed culprit is "
                "reverted at BAD and measured, which needs a repository the coordinator can "
                "write: a local path)");
  app->add_option("--bench-timeout", f->bench_timeout, "Timeout of tonight's benchmark, seconds")
      ->capture_default_str();
  app->add_option("--min-change", f->min_change_pct, "Smallest move that counts, percent")
      ->capture_default_str();
  app->add_option("--json", f->json_file, "Write the decision as JSON to FILE");
  app->add_option(
      "--notify-url", f->notify_url,
      "After submitting, follow the bisect to its end and POST its result (with the "
      "triage evidence in spec.origin.trigger) to URL, as `kbisect watch --notify-url`");
  app->add_flag("--pin-harness", f->pin_harness,
                "On a method change, measure last-good's and first-bad's kernels under one "
                "harness (first-bad's) to give the kernel's true change");
  app->add_option("--pin-runs", f->pin_runs, "Benchmark runs per side with --pin-harness")
      ->capture_default_str()
      ->check(WholeNumberIn(1, 100, "runs"));
}

// Parses `kbisect nightly`'s command line into `f`, `bench` and `metric_spec`. Returns -1 to go
// on, else the exit code (--help, a usage error, said on stderr).
int ParseNightlyFlags(int argc, char** argv, NightlyFlags* f, std::vector<std::string>* bench,
                      MetricSpec* metric_spec) {
  std::vector<std::string> args = SplitAtDoubleDash(argc, argv, bench);
  CLI::App app{"Record tonight's benchmark result and bisect only a real regression.",
               "kbisect nightly"};
  app.footer(kNightlyFooter);
  AddNightlyFlags(&app, f);
  std::reverse(args.begin(), args.end());
  args.pop_back();
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return ReportParseError(app, e);
  }
  if (bench->empty()) {
    std::cerr << "kbisect nightly: give the benchmark after `--` (it is tonight's benchmark "
                 "unless --value/--output are given, and the bisect's)\n";
    return kExitUsage;
  }
  // A --metric that does not compile is a usage error before anything runs (as in `kbisect run`).
  if (!f->metric.empty()) *metric_spec = {MetricSpec::Kind::kRegex, f->metric};
  if (!f->metric_json.empty()) *metric_spec = {MetricSpec::Kind::kJsonPath, f->metric_json};
  if (absl::Status valid = ValidateMetricFlags(*metric_spec); !valid.ok()) {
    std::cerr << "kbisect nightly: " << valid.message() << "\n"
              << "Run `kbisect nightly --help` for usage.\n";
    return kExitUsage;
  }
  if (!f->suite.empty()) {
    if (absl::StatusOr<MetricSuiteSpec> suite = ParseMetricSuiteSpec(f->suite); !suite.ok()) {
      std::cerr << "kbisect nightly: --suite: " << suite.status().message() << "\n"
                << "Run `kbisect nightly --help` for usage.\n";
      return kExitUsage;
    }
  }
  if (f->date.empty()) f->date = Today();
  if (f->date.size() != 10 || f->date[4] != '-' || f->date[7] != '-') {
    std::cerr << "kbisect nightly: --date " << f->date << ": expected YYYY-MM-DD\n";
    return kExitUsage;
  }

  return -1;
}

// Says `status` on stderr and returns `code` (an error by default).
int Fail(const absl::Status& status, int code = kExitError) {
  std::cerr << "kbisect nightly: " << status.message() << "\n";
  return code;
}

// The manifest's spec: the default harness globs unless --harness, --record-env, and the tool
// commands of --track-package and --tool. InvalidArgument for a malformed one.
absl::StatusOr<ManifestSpec> NightManifestSpec(const NightlyFlags& f) {
  ManifestSpec spec = ManifestSpec::Default();
  if (!f.harness.empty()) spec.harness_globs = f.harness;
  spec.env_names = f.record_env;
  for (const std::string& package : f.tracked_packages) {
    ASSIGN_OR_RETURN(auto tool, TrackedPackageTool(package));
    spec.tool_commands[tool.first] = tool.second;
  }
  for (const std::string& t : f.tools) {
    const size_t eq = t.find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError(absl::StrCat("--tool ", t, ": expected NAME=COMMAND"));
    }
    spec.tool_commands[t.substr(0, eq)] = t.substr(eq + 1);
  }
  return spec;
}

// Tonight before its value: the repository, the manifest's spec and the night's record with its
// commit and manifest (taken before the run).
struct Tonight {
  std::unique_ptr<GitRepo> repo;
  ManifestSpec spec;
  triage::NightlyRecord record;
};

// Opens --repo, resolves --sha and collects the manifest `spec` asks for. Errors name the flag
// at fault.
absl::StatusOr<Tonight> OpenTonight(NightlyFlags* f, ManifestSpec spec,
                                    const std::vector<std::string>& bench, CommandRunner* runner) {
  Tonight tonight;
  tonight.spec = std::move(spec);
  absl::StatusOr<std::unique_ptr<GitRepo>> repo = GitRepo::Open(f->repo);
  if (!repo.ok()) {
    return absl::NotFoundError(absl::StrCat("--repo ", f->repo, ": ", repo.status().message()));
  }
  tonight.repo = *std::move(repo);
  absl::StatusOr<std::string> full_sha = tonight.repo->ResolveCommit(f->sha);
  if (!full_sha.ok()) {
    return absl::NotFoundError(absl::StrCat("--sha ", f->sha, ": ", full_sha.status().message()));
  }
  const v1::RunnerIdentity identity = ProbeRunnerIdentity(runner, "");
  if (f->hardware_class.empty()) f->hardware_class = identity.hardware_class_label();
  ManifestInputs inputs;
  inputs.dir = f->repo;
  inputs.bench_argv = bench;
  inputs.tracked = TrackedInCommit(f->repo, *full_sha);
  inputs.runner = runner;
  inputs.identity = &identity;
  inputs.gpu_state = ProbeGpuState(runner, "");
  absl::StatusOr<v1::MeasurementManifest> manifest = CollectManifest(tonight.spec, inputs);
  if (!manifest.ok()) return absl::InternalError(manifest.status().message());

  triage::NightlyRecord& r = tonight.record;
  r.date = f->date;
  r.full_sha = *full_sha;
  r.sha = full_sha->substr(0, 12);
  r.benchmark = f->benchmark;
  r.hardware_class = f->hardware_class;
  r.run_id = f->run_id;
  r.manifest = *std::move(manifest);
  return tonight;
}

// Tonight's benchmark output: --output's file, or BENCH_CMD run in --repo.
absl::StatusOr<std::string> TonightsOutput(const NightlyFlags& f,
                                           const std::vector<std::string>& bench,
                                           CommandRunner* runner) {
  if (!f.output_file.empty()) {
    std::ifstream in(f.output_file);
    if (!in) return absl::NotFoundError(absl::StrCat("cannot read --output ", f.output_file));
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  ExecRequest request;
  request.argv = bench;
  request.cwd = f.repo;
  request.timeout = absl::Seconds(f.bench_timeout);
  absl::StatusOr<ExecResult> ran = runner->Run(request);
  if (!ran.ok()) {
    return absl::InternalError(
        absl::StrCat("cannot start `", absl::StrJoin(bench, " "), "`: ", ran.status().message()));
  }
  if (!ran->ok()) {
    return absl::InternalError(
        absl::StrCat("tonight's benchmark ", ran->Describe(), ":\n", ran->Tail(20)));
  }
  return ran->output;
}

// Sets the record's value, metric and unit: --value's, or the metric read from `text`.
absl::Status ReadTonightsValue(const NightlyFlags& f, const MetricSpec& metric_spec,
                               const std::string& text, triage::NightlyRecord* tonight) {
  if (!f.value.empty()) {
    tonight->value = f.value.front();
    tonight->metric = f.metric_name.empty() ? "value" : f.metric_name;
    tonight->unit = f.unit;
    return absl::OkStatus();
  }
  absl::StatusOr<Metric> metric = ExtractMetric(metric_spec, text);
  if (!metric.ok()) {
    return absl::NotFoundError(absl::StrCat("tonight's metric: ", metric.status().message()));
  }
  tonight->value = metric->value;
  tonight->metric = f.metric_name.empty() ? metric->name : f.metric_name;
  tonight->unit = metric->unit;
  return absl::OkStatus();
}

// Adds tonight to the --history file (a rerun replaces the night) and says so; returns the
// history with it.
absl::StatusOr<triage::History> RecordNight(const NightlyFlags& f,
                                            const triage::NightlyRecord& tonight) {
  ASSIGN_OR_RETURN(triage::History history, triage::ReadHistoryFile(f.history));
  const bool rerun = triage::AddNightly(&history, tonight);
  RETURN_IF_ERROR(triage::WriteHistoryFile(f.history, history));
  std::cout << "Night " << f.date << ": " << f.benchmark << " on " << f.hardware_class << " at "
            << tonight.sha << ": " << tonight.metric << " = "
            << FormatValue(tonight.value, tonight.unit)
            << (rerun ? " (a rerun: replaces the night's earlier result)" : "") << "\n";
  return history;
}

// The triage's request from the flags: the direction and the smallest move that counts.
triage::TriageRequest NightTriageRequest(const NightlyFlags& f) {
  triage::TriageRequest request;
  if (f.lower) request.roles.primary_direction = Direction::kLowerIsBetter;
  if (f.higher) request.roles.primary_direction = Direction::kHigherIsBetter;
  request.change_point.min_relative_change = f.min_change_pct / 100;
  return request;
}

// The --json form of the night's decision.
nlohmann::json DecisionJson(const NightlyFlags& f, const triage::NightlyRecord& tonight,
                            const triage::NightlyDecision& d) {
  nlohmann::json out = {{"schema", "kbisect.nightly.v1"},
                        {"date", f.date},
                        {"benchmark", f.benchmark},
                        {"hardware_class", f.hardware_class},
                        {"sha", tonight.full_sha},
                        {"value", tonight.value},
                        {"metric", tonight.metric},
                        {"unit", tonight.unit},
                        {"action", triage::NightlyActionName(d.action)},
                        {"exit_code", triage::NightlyExitCode(d.action)},
                        {"cause", triage::CauseName(d.triage.diagnosis.cause)},
                        {"confidence", d.triage.diagnosis.confidence},
                        {"summary", d.summary},
                        {"reasons", d.triage.diagnosis.reasons},
                        {"request_id", d.request_id},
                        {"job_id", d.existing.has_value() ? d.existing->job_id : ""}};
  auto ref_json = [](const std::optional<triage::NightlyRef>& r) -> nlohmann::json {
    if (!r.has_value()) return nullptr;
    return {{"sha", r->sha}, {"full_sha", r->full_sha}, {"date", r->date}};
  };
  out["last_good"] = ref_json(d.triage.last_good);
  out["first_bad"] = ref_json(d.triage.first_bad);
  out["manifest_changes"] = nlohmann::json::array();
  for (const ManifestChange& c : d.manifest_changes) {
    out["manifest_changes"].push_back({{"kind", ManifestChangeKindName(c.kind)},
                                       {"name", c.name},
                                       {"before", c.before},
                                       {"after", c.after},
                                       {"hardware", c.IsHardware()}});
  }
  return out;
}

// The step's two nights of the series in `history` (null where missing).
struct StepNights {
  const triage::NightlyRecord* last_good = nullptr;
  const triage::NightlyRecord* first_bad = nullptr;
};
StepNights FindStepNights(const NightlyFlags& f, const triage::History& history,
                          const triage::NightlyDecision& d) {
  StepNights nights;
  if (!d.triage.last_good.has_value() || !d.triage.first_bad.has_value()) return nights;
  for (const triage::NightlyRecord& r : history.nightlies) {
    if (r.benchmark != f.benchmark || r.hardware_class != f.hardware_class) continue;
    if (r.date == d.triage.last_good->date) nights.last_good = &r;
    if (r.date == d.triage.first_bad->date) nights.first_bad = &r;
  }
  return nights;
}

// --pin-harness on a method change: the kernel's true change under one harness, printed and in
// `out["pinned_harness"]`.
void PinHarnessStage(const NightlyFlags& f, const std::vector<std::string>& bench,
                     const MetricSpec& metric_spec, const triage::NightlyRecord& tonight,
                     const StepNights& nights, double min_relative_change, CommandRunner* runner,
                     nlohmann::json* out) {
  absl::StatusOr<Pinned> pinned =
      nights.last_good != nullptr && nights.first_bad != nullptr &&
              nights.first_bad->manifest.has_value()
          ? MeasurePinned(runner, f.repo, *nights.last_good, *nights.first_bad, f.build, bench,
                          metric_spec, f.pin_runs, f.bench_timeout)
          : absl::StatusOr<Pinned>(absl::NotFoundError("the step's nightlies have no manifest"));
  if (!pinned.ok()) {
    std::cout << "Same harness: not measured (" << pinned.status().message() << ")\n";
    (*out)["pinned_harness"] = {{"error", std::string(pinned.status().message())}};
    return;
  }
  const double change = (pinned->after - pinned->before) / std::fabs(pinned->before);
  std::cout << "Same harness (first-bad's, " << Count(f.pin_runs, "run")
            << " each): last-good kernel " << FormatValue(pinned->before, tonight.unit)
            << ", first-bad kernel " << FormatValue(pinned->after, tonight.unit)
            << ": the kernel changed by " << FormatSignedPercent(100 * change)
            << (std::fabs(change) < min_relative_change
                    ? " (the step is the method's; the honest value is the new method's "
                      "if it is intended)\n"
                    : " (the kernel moved too: bisect the window with the harness pinned)\n");
  (*out)["pinned_harness"] = {
      {"before", pinned->before}, {"after", pinned->after}, {"relative_change", change}};
}

// The tracked packages' versions a manifest recorded (tool versions under "package:").
std::map<std::string, std::string> TrackedPackages(
    const std::optional<v1::MeasurementManifest>& manifest) {
  std::map<std::string, std::string> packages;
  if (!manifest.has_value()) return packages;
  for (const auto& [name, version] : manifest->tool_versions()) {
    if (absl::StartsWith(name, kTrackedPackagePrefix)) packages[name] = version;
  }
  return packages;
}

// Why the step's last good commit cannot be measured with the first bad night's packages here
// and now; "" when it can.
std::string WhyNotMeasurable(const NightlyFlags& f, const triage::NightlyRecord& tonight,
                             const StepNights& nights) {
  if (!f.value.empty()) return "--value: the benchmark does not run here";
  if (nights.last_good == nullptr || nights.first_bad == nullptr) {
    return "the step's nightlies are not in the history";
  }
  if (TrackedPackages(tonight.manifest) != TrackedPackages(nights.first_bad->manifest)) {
    return "tonight's packages are not the first bad night's any more";
  }
  return "";
}

// When the project's code and tracked packages both moved across a step to bisect (issue 47):
// measures the project's last good commit with tonight's packages, which are the first bad
// night's, and lets that say whose step it is (triage::ApplyStepAttribution: the packages' turns
// the decision into a dependency change). Printed and in `out["package_check"]`.
void PackageCheckStage(const NightlyFlags& f, const std::vector<std::string>& bench,
                       const MetricSpec& metric_spec, const triage::NightlyRecord& tonight,
                       const StepNights& nights, CommandRunner* runner, triage::NightlyDecision* d,
                       nlohmann::json* out) {
  std::vector<std::string> packages;
  for (const ManifestChange& c : d->manifest_changes) {
    if (c.kind == ManifestChange::Kind::kPackage) packages.push_back(c.Describe());
  }
  const triage::KernelTriage& k = d->triage;
  if (d->action != triage::NightlyAction::kSubmitBisect || packages.empty() ||
      !k.evidence.primary.present || k.evidence.primary.before == k.evidence.primary.after) {
    return;
  }
  const std::string why_not = WhyNotMeasurable(f, tonight, nights);
  const absl::StatusOr<double> measured =
      why_not.empty() ? MeasureCommit(runner, f.repo, nights.last_good->full_sha, f.build, bench,
                                      metric_spec, f.pin_runs, f.bench_timeout)
                      : absl::StatusOr<double>(absl::FailedPreconditionError(why_not));
  if (!measured.ok()) {
    std::cout << "The packages moved too; the last good commit with tonight's packages: not "
                 "measured ("
              << measured.status().message() << "), bisected as the project's\n";
    (*out)["package_check"] = {{"error", std::string(measured.status().message())}};
    return;
  }
  const triage::StepAttribution attribution =
      triage::AttributeStep(k.evidence.primary.before, k.evidence.primary.after, *measured);
  std::cout << "The packages moved too: the last good commit " << k.last_good->sha
            << " with tonight's packages (" << Count(f.pin_runs, "run") << ") measures "
            << FormatValue(*measured, tonight.unit) << "\n";
  triage::ApplyStepAttribution(attribution, *measured, packages, d);
  (*out)["package_check"] = {{"measured", *measured},
                             {"share", attribution.share},
                             {"owner", triage::StepOwnerName(attribution.owner)}};
}

// Submits the bisect of the decision's window (kSubmitBisect), records it in the history and,
// with --notify-url, follows it to post its end. Returns -1 to go on, else the exit code.
int SubmitStage(const NightlyFlags& f, const std::vector<std::string>& bench,
                const triage::NightlyDecision& d, triage::History* history, CommandRunner* runner,
                nlohmann::json* out) {
  if (f.no_submit) {
    std::cout << "Not submitted (--no-submit).\n";
    return -1;
  }
  const triage::KernelTriage& k = d.triage;
  std::vector<std::string> metric_args;
  if (!f.metric.empty()) metric_args.insert(metric_args.end(), {"--metric", f.metric});
  if (!f.metric_json.empty())
    metric_args.insert(metric_args.end(), {"--metric-json", f.metric_json});
  metric_args.push_back(k.direction == Direction::kHigherIsBetter ? "--higher-is-better"
                                                                  : "--lower-is-better");
  absl::StatusOr<Submitted> submitted =
      SubmitBisect(runner, f, bench, k.last_good->full_sha, k.first_bad->full_sha, d.request_id,
                   Trigger(f, d), metric_args);
  if (!submitted.ok()) return Fail(submitted.status());
  const std::string& job_id = submitted->job_id;
  std::cout << (submitted->existed ? "Already submitted: job " : "Submitted: job ") << job_id
            << " (request " << d.request_id << ")\n";
  triage::BisectRecord record;
  record.benchmark = f.benchmark;
  record.hardware_class = f.hardware_class;
  record.last_good = k.last_good->full_sha;
  record.last_good_date = k.last_good->date;
  record.first_bad = k.first_bad->full_sha;
  record.first_bad_date = k.first_bad->date;
  record.request_id = d.request_id;
  record.job_id = job_id;
  record.date = f.date;
  history->bisects.push_back(record);
  if (absl::Status written = triage::WriteHistoryFile(f.history, *history); !written.ok()) {
    return Fail(written);
  }
  (*out)["job_id"] = job_id;
  (*out)["submitted"] = !submitted->existed;
  // The notification when the bisect ends: `kbisect watch --notify-url` posts the job's
  // result, whose spec.origin.trigger carries the triage evidence (Trigger above).
  if (!f.notify_url.empty() && !job_id.empty() && !submitted->existed) {
    if (absl::Status notified = NotifyWhenDone(runner, f, job_id); !notified.ok()) {
      WriteDecisionJson(f.json_file, *out);
      return Fail(notified);
    }
  }
  return -1;
}

}  // namespace

int NightlyCommand(int argc, char** argv) {
  NightlyFlags f;
  std::vector<std::string> bench;
  MetricSpec metric_spec;
  if (int code = ParseNightlyFlags(argc, argv, &f, &bench, &metric_spec); code >= 0) return code;
  absl::StatusOr<ManifestSpec> manifest_spec = NightManifestSpec(f);
  if (!manifest_spec.ok()) return Fail(manifest_spec.status(), kExitUsage);
  std::unique_ptr<CommandRunner> runner = NewSubprocessRunner();
  absl::StatusOr<Tonight> tonight = OpenTonight(&f, *std::move(manifest_spec), bench, runner.get());
  if (!tonight.ok()) return Fail(tonight.status());
  const triage::TriageRequest request = NightTriageRequest(f);
  std::string output;
  if (f.value.empty()) {
    absl::StatusOr<std::string> text = TonightsOutput(f, bench, runner.get());
    if (!text.ok()) return Fail(text.status());
    if (!f.suite.empty()) {
      return SuiteNight(f, bench, *text, tonight->record, request, tonight->repo.get(),
                        tonight->spec.harness_globs, runner.get());
    }
    output = *std::move(text);
  }
  if (absl::Status read = ReadTonightsValue(f, metric_spec, output, &tonight->record); !read.ok()) {
    return Fail(read);
  }
  absl::StatusOr<triage::History> history = RecordNight(f, tonight->record);
  if (!history.ok()) return Fail(history.status());

  absl::StatusOr<triage::NightlyDecision> decision =
      triage::DecideNightly(*history, f.benchmark, f.hardware_class, request, tonight->repo.get(),
                            tonight->spec.harness_globs);
  if (!decision.ok()) return Fail(decision.status());
  const StepNights nights = FindStepNights(f, *history, *decision);
  nlohmann::json checks = nlohmann::json::object();
  PackageCheckStage(f, bench, metric_spec, tonight->record, nights, runner.get(), &*decision,
                    &checks);
  std::cout << triage::FormatNightlyDecision(*decision);
  nlohmann::json out = DecisionJson(f, tonight->record, *decision);
  out.update(checks);
  // A method change: the kernel's true change under one harness.
  if (decision->action == triage::NightlyAction::kMethodChange && f.pin_harness &&
      decision->triage.last_good.has_value()) {
    PinHarnessStage(f, bench, metric_spec, tonight->record, nights,
                    request.change_point.min_relative_change, runner.get(), &out);
  }
  if (decision->action == triage::NightlyAction::kSubmitBisect) {
    if (int code = SubmitStage(f, bench, *decision, &*history, runner.get(), &out); code >= 0) {
      return code;
    }
  }
  if (!WriteDecisionJson(f.json_file, out)) return kExitError;
  return triage::NightlyExitCode(decision->action);
}

}  // namespace kbisect
