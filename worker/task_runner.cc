// Copyright 2026 The kbisect Authors.
#include "worker/task_runner.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/metric/metric.h"
#include "common/metric/metric_suite.h"
#include "common/rpc/proto_time.h"
#include "common/spec/job_spec.h"
#include "common/text/fnv.h"
#include "google/protobuf/util/time_util.h"
#include "worker/build_request.h"
#include "worker/build_step.h"
#include "worker/task_builder.h"
#include "worker/task_manifest.h"

namespace kbisect {
namespace {

using google::protobuf::util::TimeUtil;

constexpr int kTailLines = kBuildTailLines;
constexpr int kGitSkipExitCode = 125;

// The task's benchmark timeout, or kDefaultBenchTimeout when it has none.
absl::Duration BenchTimeout(const v1::Task& task) {
  if (!task.has_bench_timeout()) return kDefaultBenchTimeout;
  const int64_t nanos = TimeUtil::DurationToNanoseconds(task.bench_timeout());
  return nanos > 0 ? absl::Nanoseconds(nanos) : kDefaultBenchTimeout;
}

v1::Direction ToProto(Direction direction) {
  switch (direction) {
    case Direction::kLowerIsBetter:
      return v1::DIRECTION_LOWER_IS_BETTER;
    case Direction::kHigherIsBetter:
      return v1::DIRECTION_HIGHER_IS_BETTER;
    default:
      return v1::DIRECTION_UNSPECIFIED;
  }
}

// Whether `task`'s benchmark runs alternate between two commits: a confirmation interleaves
// last-good and culprit (A/B/A/B...) so that both see the same machine state.
bool IsInterleaved(const v1::Task& task) {
  return task.kind() == v1::PROBE_KIND_CONFIRM && !task.paired_commit_sha().empty();
}

}  // namespace

bool PairedGoesFirst(const std::string& task_id, int pair) {
  return (Fnv1a64(absl::StrCat(task_id, "/", pair)) >> 17) & 1;
}

namespace {

// Which commit each benchmark run measures: when `interleaved`, pairs of the paired commit and
// the task's, each pair's order drawn from the task's id and the pair's index (PairGoesFirst), so
// that either side goes first about half the time and a rerun of the task keeps its order; else
// the task's commit alone. At least one run.
std::vector<std::string> BenchSchedule(const v1::Task& task, bool interleaved) {
  std::vector<std::string> schedule;
  for (int run = 0; run < std::max(1, task.runs()); ++run) {
    if (!interleaved) {
      schedule.push_back(task.commit_sha());
      continue;
    }
    const bool paired_first = PairedGoesFirst(task.task_id(), run);
    schedule.push_back(paired_first ? task.paired_commit_sha() : task.commit_sha());
    schedule.push_back(paired_first ? task.commit_sha() : task.paired_commit_sha());
  }
  return schedule;
}

// How a task ends before its last run: its outcome, a message a user can act on, and the tail
// of the command's output.
struct Ending {
  v1::TaskOutcome outcome;
  std::string message;
  std::string log_tail;
};

// How benchmark run `ran` (described as `where`) ends the task, if it does: cancelled, timed
// out, asking for a skip (exit 125), failing, or outside git bisect run's contract for a
// pass/fail benchmark (`pass_fail`). nullopt when the run counts: a pass/fail benchmark passed,
// or the output of any other holds its sample.
std::optional<Ending> EndingOf(const ExecResult& ran, const std::string& where, bool pass_fail) {
  if (ran.cancelled) return Ending{v1::TASK_OUTCOME_CANCELLED, "cancelled", ""};
  if (ran.timed_out) {
    return Ending{v1::TASK_OUTCOME_TIMED_OUT, absl::StrCat(where, " ", ran.Describe()),
                  ran.Tail(kTailLines)};
  }
  if (ran.signal == 0 && ran.exit_code == kGitSkipExitCode) {
    return Ending{v1::TASK_OUTCOME_SKIP_REQUESTED,
                  absl::StrCat(where, " exited 125: untestable commit (skip)"),
                  ran.Tail(kTailLines)};
  }
  if (pass_fail) {
    // git bisect run's contract: 0 good, 1..127 bad (125 skip, above), anything else aborts.
    if (ran.signal == 0 && ran.exit_code == 0) return std::nullopt;
    if (ran.signal == 0 && ran.exit_code >= 1 && ran.exit_code <= 127) {
      return Ending{v1::TASK_OUTCOME_FAILED, absl::StrCat(where, " ", ran.Describe()),
                    ran.Tail(kTailLines)};
    }
    return Ending{
        v1::TASK_OUTCOME_BENCH_FAILED,
        absl::StrCat(where, " ", ran.Describe(), " (outside git bisect run's 0..127 contract)"),
        ran.Tail(kTailLines)};
  }
  if (!ran.ok()) {
    return Ending{v1::TASK_OUTCOME_BENCH_FAILED, absl::StrCat(where, " ", ran.Describe()),
                  ran.Tail(kTailLines)};
  }
  return std::nullopt;
}

// How a task's benchmark output becomes a sample: its metric, or its suite (MetricSpec.suite:
// every metric of each run, the lead's value the sample).
struct SampleReader {
  MetricSpec metric;
  std::optional<MetricSuiteSpec> suite;
  std::string lead;
  std::vector<std::string> members;
};

// The reader of the samples `spec` describes; the error of a suite that is not valid.
absl::StatusOr<SampleReader> SampleReaderFor(const v1::MetricSpec& spec) {
  SampleReader reader;
  reader.metric = ToMetricSpec(spec);
  if (!spec.suite().empty()) {
    absl::StatusOr<MetricSuiteSpec> parsed = ParseMetricSuiteSpec(spec.suite());
    if (!parsed.ok()) return parsed.status();
    reader.suite = *std::move(parsed);
  }
  reader.lead = spec.lead();
  reader.members.assign(spec.members().begin(), spec.members().end());
  return reader;
}

// One benchmark run's sample, and every metric of its suite when the task has one.
struct Sample {
  Metric metric;
  std::optional<SuiteReading> suite;
};

// Reads the sample of a run that printed `output`; the error says why there is none.
absl::StatusOr<Sample> ReadSample(const SampleReader& reader, const std::string& output) {
  Sample sample;
  if (reader.suite) {
    absl::StatusOr<SuiteReading> read =
        ReadSuite(*reader.suite, output, reader.lead, reader.members);
    if (!read.ok()) return read.status();
    sample.suite = *std::move(read);
  }
  absl::StatusOr<Metric> metric =
      sample.suite ? absl::StatusOr<Metric>(sample.suite->metrics[sample.suite->lead].metric)
                   : ExtractMetric(reader.metric, output);
  if (!metric.ok()) return metric.status();
  sample.metric = *std::move(metric);
  return sample;
}

// Records every metric of a suite's run in `record`, and each metric's unit and direction in
// `result` the first time the task sees it.
void RecordSuiteRun(const SuiteReading& suite, v1::RunRecord* record, v1::TaskResult* result) {
  for (const NamedMetric& named : suite.metrics) {
    v1::SuiteValue* value = record->add_suite_values();
    value->set_name(named.name);
    value->set_value(named.metric.value);
    const bool known =
        std::any_of(result->suite_metrics().begin(), result->suite_metrics().end(),
                    [&](const v1::SuiteMetricInfo& info) { return info.name() == named.name; });
    if (known) continue;
    v1::SuiteMetricInfo* info = result->add_suite_metrics();
    info->set_name(named.name);
    info->set_unit(named.metric.unit);
    info->set_direction(ToProto(named.metric.direction));
  }
}

// Keeps `sample` as the value of run `record` and as a sample of the task's commit (or, when
// `paired`, of the paired commit) in `result`, with the metric's name, unit and direction.
void KeepSample(const Sample& sample, bool paired, v1::RunRecord* record, v1::TaskResult* result) {
  record->set_value(sample.metric.value);
  record->set_has_value(true);
  if (sample.suite) RecordSuiteRun(*sample.suite, record, result);
  if (!paired) {
    result->add_samples(sample.metric.value);
  } else {
    result->add_paired_samples(sample.metric.value);
  }
  result->set_metric_name(sample.metric.name);
  result->set_metric_unit(sample.metric.unit);
  result->set_metric_direction(ToProto(sample.metric.direction));
}

}  // namespace

// One Run(): the task, where its commits are prepared, and its result so far, passed between
// Run()'s steps.
struct TaskRunner::RunState {
  RunState(const v1::Task& task, const Cancellation* cancel, const ProgressCallback& progress,
           Clock* clock)
      : task(task), cancel(cancel), progress(progress), clock(clock), start(clock->Now()) {}

  // Reports `phase` with `done` of the task's runs done, when there is a progress callback.
  void Report(v1::TaskPhase phase, int done) const {
    if (progress) progress(phase, done, task.runs());
  }

  // Whether the task was cancelled.
  bool Cancelled() const { return cancel != nullptr && cancel->IsCancelled(); }

  // Ends the task with `outcome`, `message` and the command output's `tail`, timing it. Returns
  // false, so that a step that ends the task early can return what Finish() does.
  bool Finish(v1::TaskOutcome outcome, std::string message, std::string tail) {
    result.set_outcome(outcome);
    result.set_message(std::move(message));
    result.set_log_tail(std::move(tail));
    *result.mutable_timings()->mutable_total() = ToProto(clock->Now() - start);
    return false;
  }

  // Adds a commit's checkout time and its build's times to the task's timings.
  void AddTimings(absl::Duration checkout, const BuildStep& build) {
    checkout_total += checkout;
    build_total += build.wall_time;
    build_cpu_total += build.cpu_time;
    *result.mutable_timings()->mutable_checkout() = ToProto(checkout_total);
    if (!task.build_command().empty()) {
      *result.mutable_timings()->mutable_build() = ToProto(build_total);
      *result.mutable_timings()->mutable_build_cpu() = ToProto(build_cpu_total);
    }
  }

  // The request of a benchmark run at `sha`, a prepared commit: in its directory (or the job's
  // KBISECT_BENCH_DIR), with its layer's variables and KBISECT_COMMIT on the task's environment.
  ExecRequest BenchRequestAt(const std::string& sha) {
    ExecRequest bench;
    bench.argv.assign(task.bench_command().begin(), task.bench_command().end());
    auto bench_dir = env.find(kBenchDirEnv);
    bench.cwd =
        bench_dir != env.end() && !bench_dir->second.empty() ? bench_dir->second : dirs[sha];
    bench.env = env;
    for (const auto& [name, value] : layer_envs[sha]) bench.env[name] = value;
    bench.env["KBISECT_COMMIT"] = sha;
    if (dependency) {
      bench.env["KBISECT_DEPENDENCY_DIR"] = DependencyDir(dirs[sha], task.dependency());
    }
    bench.timeout = BenchTimeout(task);
    return bench;
  }

  // Adds benchmark run `ran` to the result (its exit code and wall time) and to the task's
  // benchmark time; returns its record.
  v1::RunRecord* RecordRun(const ExecResult& ran) {
    bench_total += ran.wall_time;
    *result.mutable_timings()->mutable_bench() = ToProto(bench_total);
    v1::RunRecord* record = result.add_runs();
    record->set_exit_code(ran.exit_code);
    *record->mutable_wall_time() = ToProto(ran.wall_time);
    return record;
  }

  const v1::Task& task;
  const Cancellation* const cancel;
  const ProgressCallback& progress;
  Clock* const clock;
  const absl::Time start;
  v1::TaskResult result;

  // Which commit each benchmark run measures (BenchSchedule).
  bool interleaved = false;
  std::vector<std::string> schedule;
  // The environment of the task's commands (TaskEnvironment).
  std::map<std::string, std::string> env;
  // A dependency follow-up (Task.dependency): its commits are two repositories' commits.
  bool dependency = false;
  // Whether both commits take turns in the workspace's primary lane, and the one it has now.
  bool one_lane = false;
  std::string checked_out;

  std::map<std::string, std::string> dirs;  // Each commit's prepared directory.
  std::map<std::string, std::map<std::string, std::string>> layer_envs;  // Each one's layer's.
  std::vector<std::unique_ptr<FileLock>> held_builds;  // Cache entries in use until the end.
  // Whether every commit prepared so far was found built in the build cache; whether one was
  // fetched from the build store, and one was built on this host.
  bool builds_reused = true;
  bool any_fetched = false;
  bool any_built = false;
  absl::Duration checkout_total;
  absl::Duration build_total;
  absl::Duration build_cpu_total;
  absl::Duration bench_total;
  int throttle_retries = 0;
};

TaskRunner::TaskRunner(CommandRunner* runner, TaskBuilder* builder,
                       std::map<std::string, std::string> slot_env, Clock* clock)
    : runner_(runner), builder_(builder), slot_env_(std::move(slot_env)), clock_(clock) {}

TaskRunner::TaskRunner(CommandRunner* runner, Workspace* workspace,
                       std::map<std::string, std::string> slot_env, Clock* clock,
                       std::map<std::string, std::string> layer_env)
    : runner_(runner),
      own_builder_(std::make_unique<SlotBuilder>(runner, workspace, clock, std::move(layer_env))),
      builder_(own_builder_.get()),
      slot_env_(std::move(slot_env)),
      clock_(clock) {}

v1::TaskResult TaskRunner::Run(const v1::Task& task, const Cancellation* cancel,
                               const ProgressCallback& progress) {
  RunState run(task, cancel, progress, clock_);
  run.interleaved = IsInterleaved(task);
  run.schedule = BenchSchedule(task, run.interleaved);
  run.env = TaskEnvironment(task, slot_env_);
  run.dependency = task.has_dependency();
  // With a build, the paired commit (last-good) is prepared in the second lane, so that neither
  // is built twice. Without one, a switch is a checkout of the few files the two commits differ
  // in, far cheaper than a second lane's first checkout of the whole tree: both commits take
  // turns in the primary lane.
  run.one_lane = run.interleaved && task.build_command().empty();

  builder_->StartTask(task);
  if (!PrepareCommits(&run)) return std::move(run.result);
  std::vector<std::string> foreign = WaitForTheGpu(&run);
  if (!RunBenchmarks(&run)) return std::move(run.result);
  NameForeignProcesses(std::move(foreign), &run);
  run.Report(v1::TASK_PHASE_REPORTING, static_cast<int>(run.schedule.size()));
  const bool pass_fail = task.metric().kind() == v1::METRIC_KIND_EXIT_CODE;
  run.Finish(pass_fail ? v1::TASK_OUTCOME_PASSED : v1::TASK_OUTCOME_SUCCEEDED, "", "");
  return std::move(run.result);
}

bool TaskRunner::PrepareCommits(RunState* run) {
  const v1::Task& task = run->task;
  if (run->interleaved && !run->one_lane &&
      !PrepareCommit(task.paired_commit_sha(), WorkspaceLane::kPaired, run)) {
    return false;
  }
  const std::string& first = run->one_lane ? run->schedule.front() : task.commit_sha();
  if (!PrepareCommit(first, WorkspaceLane::kPrimary, run)) return false;
  run->checked_out = first;
  run->result.mutable_timings()->set_build_reused(run->builds_reused);
  std::map<std::string, std::string>& dirs = run->dirs;
  *run->result.mutable_manifest() = CollectTaskManifest(
      task, dirs.count(task.commit_sha()) > 0 ? dirs[task.commit_sha()] : dirs[run->checked_out],
      run->env, runner_);
  return true;
}

bool TaskRunner::PrepareCommit(const std::string& sha, WorkspaceLane lane, RunState* run) {
  run->Report(v1::TASK_PHASE_CHECKOUT, 0);
  BuiltTree tree = builder_->Prepare({&run->task, sha, lane, &run->env, run->cancel,
                                      [run] { run->Report(v1::TASK_PHASE_BUILD, 0); }});
  run->AddTimings(tree.checkout_time, tree.step);
  if (!tree.build_pool.empty()) {
    run->result.mutable_timings()->set_build_pool(tree.build_pool);
    run->result.mutable_timings()->set_build_pool_slots(tree.build_pool_slots);
  }
  if (!tree.build_store.empty()) run->result.mutable_timings()->set_build_store(tree.build_store);
  if (!tree.step.ok()) return run->Finish(tree.step.failure, tree.step.message, tree.step.log_tail);
  run->builds_reused = run->builds_reused && tree.reused;
  run->any_fetched = run->any_fetched || tree.fetched;
  run->any_built = run->any_built || (!tree.reused && !tree.fetched);
  // Every build the task needed and its host did not have was fetched.
  run->result.mutable_timings()->set_build_fetched(run->any_fetched && !run->any_built);
  if (tree.in_use != nullptr) run->held_builds.push_back(std::move(tree.in_use));
  run->dirs[sha] = std::move(tree.dir);
  run->layer_envs[sha] = std::move(tree.layer_env);
  if (run->Cancelled()) return run->Finish(v1::TASK_OUTCOME_CANCELLED, "cancelled", "");
  return true;
}

bool TaskRunner::RunBenchmarks(RunState* run) {
  const v1::Task& task = run->task;
  const bool pass_fail = task.metric().kind() == v1::METRIC_KIND_EXIT_CODE;
  absl::StatusOr<SampleReader> reader = SampleReaderFor(task.metric());
  if (!reader.ok()) {
    return run->Finish(v1::TASK_OUTCOME_METRIC_MISSING,
                       absl::StrCat("the job's --suite is not valid: ", reader.status().message()),
                       "");
  }
  for (int i = 0; i < static_cast<int>(run->schedule.size()); ++i) {
    const std::string& sha = run->schedule[i];
    if (run->one_lane && sha != run->checked_out) {
      if (!PrepareCommit(sha, WorkspaceLane::kPrimary, run)) return false;
      run->checked_out = sha;
    }
    run->Report(v1::TASK_PHASE_BENCH, i);
    std::unique_ptr<GpuWatch> watch = gpu_watcher_.has_value() ? gpu_watcher_->Watch() : nullptr;
    absl::StatusOr<ExecResult> ran = runner_->Run(run->BenchRequestAt(sha), run->cancel);
    std::optional<GpuRunSummary> watched;
    if (watch != nullptr) watched = watch->Stop();
    if (!ran.ok()) {
      return run->Finish(
          v1::TASK_OUTCOME_BENCH_FAILED,
          absl::StrCat("could not start the benchmark `", absl::StrJoin(task.bench_command(), " "),
                       "`: ", ran.status().message()),
          "");
    }
    v1::RunRecord* record = run->RecordRun(*ran);
    const std::string where = absl::StrCat("benchmark at ", sha.substr(0, 7), " (run ", i + 1, ")");
    if (std::optional<Ending> ending = EndingOf(*ran, where, pass_fail)) {
      return run->Finish(ending->outcome, std::move(ending->message), std::move(ending->log_tail));
    }
    if (pass_fail) continue;
    absl::StatusOr<Sample> sample = ReadSample(*reader, ran->output);
    if (!sample.ok()) {
      return run->Finish(v1::TASK_OUTCOME_METRIC_MISSING,
                         absl::StrCat(where, ": ", sample.status().message()),
                         ran->Tail(kTailLines));
    }
    if (MeasureAgain(watched, record, run)) {
      --i;  // The sample is recorded as a run but not kept; measure again.
      continue;
    }
    KeepSample(*sample, /*paired=*/sha != task.commit_sha(), record, &run->result);
  }
  return true;
}

std::vector<std::string> TaskRunner::WaitForTheGpu(RunState* run) {
  if (!compute_apps_probe_) return {};
  const absl::Time deadline = clock_->Now() + foreign_wait_;
  std::vector<std::string> apps = compute_apps_probe_();
  while (!apps.empty() && clock_->Now() < deadline && !run->Cancelled()) {
    clock_->SleepFor(absl::Seconds(1));
    apps = compute_apps_probe_();
  }
  return apps;
}

void TaskRunner::NameForeignProcesses(std::vector<std::string> before, RunState* run) {
  if (!compute_apps_probe_) return;
  for (std::string& app : compute_apps_probe_()) {
    if (std::find(before.begin(), before.end(), app) == before.end()) {
      before.push_back(std::move(app));
    }
  }
  if (before.empty()) return;
  for (v1::RunRecord& record : *run->result.mutable_runs()) {
    for (const std::string& app : before) record.mutable_gpu_state()->add_foreign_processes(app);
  }
}

bool TaskRunner::MeasureAgain(const std::optional<GpuRunSummary>& watched, v1::RunRecord* record,
                              RunState* run) {
  // Watched during the run, a hardware slowdown is never trusted; read after it, a throttled
  // state reruns only when the task asks (--discard-throttled).
  std::optional<v1::GpuState> state;
  bool rerun_throttled = run->task.discard_throttled();
  if (watched.has_value() && watched->samples > 0) {
    state = ToGpuState(*watched);
    rerun_throttled = true;
  } else if (gpu_state_probe_) {
    state = gpu_state_probe_();
  }
  if (!state) return false;
  *record->mutable_gpu_state() = *state;
  if (!state->throttled() || !rerun_throttled || run->throttle_retries >= kThrottleRetries) {
    return false;
  }
  ++run->throttle_retries;
  return true;
}

}  // namespace kbisect
