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
#include "common/git/submodules.h"
#include "common/metric/metric.h"
#include "common/metric/metric_suite.h"
#include "common/rpc/proto_time.h"
#include "common/spec/job_spec.h"
#include "google/protobuf/util/time_util.h"
#include "worker/build_step.h"
#include "worker/task_manifest.h"

namespace kbisect {
namespace {

using google::protobuf::util::TimeUtil;

constexpr int kTailLines = kBuildTailLines;
constexpr int kGitSkipExitCode = 125;

absl::Duration TimeoutOr(const v1::Task& task, bool build, absl::Duration fallback) {
  const auto& d = build ? task.build_timeout() : task.bench_timeout();
  const bool has = build ? task.has_build_timeout() : task.has_bench_timeout();
  if (!has) return fallback;
  const int64_t nanos = TimeUtil::DurationToNanoseconds(d);
  return nanos > 0 ? absl::Nanoseconds(nanos) : fallback;
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

}  // namespace

TaskRunner::TaskRunner(CommandRunner* runner, Workspace* workspace,
                       std::map<std::string, std::string> slot_env, Clock* clock,
                       std::map<std::string, std::string> layer_env)
    : runner_(runner),
      workspace_(workspace),
      slot_env_(std::move(slot_env)),
      clock_(clock),
      layers_(runner, std::move(layer_env)) {}

v1::TaskResult TaskRunner::Run(const v1::Task& task, const Cancellation* cancel,
                               const ProgressCallback& progress) {
  v1::TaskResult result;
  const absl::Time start = clock_->Now();
  auto report = [&](v1::TaskPhase phase, int done) {
    if (progress) progress(phase, done, task.runs());
  };
  auto finish = [&](v1::TaskOutcome outcome, std::string message, std::string tail) {
    result.set_outcome(outcome);
    result.set_message(std::move(message));
    result.set_log_tail(std::move(tail));
    *result.mutable_timings()->mutable_total() = ToProto(clock_->Now() - start);
    return result;
  };
  auto cancelled = [&]() { return cancel != nullptr && cancel->IsCancelled(); };

  // Which commit each benchmark run measures. A confirmation interleaves last-good and culprit
  // (A/B/A/B...) so that both see the same machine state; everything else measures one commit.
  const bool interleaved =
      task.kind() == v1::PROBE_KIND_CONFIRM && !task.paired_commit_sha().empty();
  std::vector<std::string> schedule;
  for (int run = 0; run < std::max(1, task.runs()); ++run) {
    if (interleaved) schedule.push_back(task.paired_commit_sha());
    schedule.push_back(task.commit_sha());
  }

  std::map<std::string, std::string> env = slot_env_;
  for (const auto& [key, value] : task.env()) env[key] = value;
  env["KBISECT_COMMIT_INDEX"] = absl::StrCat(task.commit_index());
  // A dependency follow-up's probe builds in the slot's own checkout: the host's build cache
  // keys a build by one repository's commit, and this one is two repositories' commits.
  const bool dependency = task.has_dependency();
  if (dependency) env["KBISECT_SUPERPROJECT_COMMIT"] = task.dependency().superproject_sha();
  const bool cached_build = !task.build_command().empty() && build_cache_ != nullptr && !dependency;
  std::map<std::string, std::string> dirs;  // Each commit's prepared directory.
  std::map<std::string, std::map<std::string, std::string>> layer_envs;  // Each one's layer's.
  std::vector<std::unique_ptr<FileLock>> held_builds;  // Cache entries in use until the end.
  bool builds_reused = cached_build;
  absl::Duration checkout_total;
  absl::Duration build_total;
  absl::Duration build_cpu_total;
  auto add_timings = [&](absl::Duration checkout, const BuildStep& build) {
    checkout_total += checkout;
    build_total += build.wall_time;
    build_cpu_total += build.cpu_time;
    *result.mutable_timings()->mutable_checkout() = ToProto(checkout_total);
    if (!task.build_command().empty()) {
      *result.mutable_timings()->mutable_build() = ToProto(build_total);
      *result.mutable_timings()->mutable_build_cpu() = ToProto(build_cpu_total);
    }
  };

  // The builds the job will use again are marked used first, so that room made for this task's
  // builds is taken from others.
  if (cached_build) {
    for (const std::string& sha : task.keep_build_shas()) {
      BuildCache::Request keep;
      keep.repository = task.repository();
      keep.sha = sha;
      keep.build.shell_command = task.build_command();
      keep.key_env.insert(task.env().begin(), task.env().end());
      keep.isolation = task.build_isolation();
      build_cache_->MarkUsed(keep);
    }
  }

  // Checks `sha` out and builds it, once per task: from the build cache, or in `lane` of the
  // workspace. Returns false (with `result` finished) on failure.
  auto prepare = [&](const std::string& sha, WorkspaceLane lane) {
    const std::string short_sha = sha.substr(0, 7);
    report(v1::TASK_PHASE_CHECKOUT, 0);
    BuildCommand build;
    build.shell_command = task.build_command();
    build.env = env;
    build.env["KBISECT_COMMIT"] = sha;
    build.timeout = TimeoutOr(task, /*build=*/true, kDefaultBuildTimeout);
    if (cached_build) {
      BuildCache::Request request;
      request.repository = task.repository();
      request.sha = sha;
      request.build = std::move(build);
      request.key_env.insert(task.env().begin(), task.env().end());
      request.keep_shas.assign(task.keep_build_shas().begin(), task.keep_build_shas().end());
      request.isolation = task.build_isolation();
      request.build_order = task.build_order();
      BuildCache::Acquired built =
          build_cache_->Acquire(request, cancel, [&] { report(v1::TASK_PHASE_BUILD, 0); });
      add_timings(built.checkout_time, built.step);
      if (!built.build_pool.empty()) {
        result.mutable_timings()->set_build_pool(built.build_pool);
        result.mutable_timings()->set_build_pool_slots(built.build_pool_slots);
      }
      if (!built.step.ok()) {
        finish(built.step.failure, built.step.message, built.step.log_tail);
        return false;
      }
      builds_reused = builds_reused && built.reused;
      held_builds.push_back(std::move(built.in_use));
      dirs[sha] = built.dir;
      layer_envs[sha] = std::move(built.layer_env);
    } else {
      const absl::Time checkout_start = clock_->Now();
      absl::StatusOr<std::string> prepared =
          dependency
              ? workspace_->PrepareWithDependency(task.dependency(), task.repository(), sha, lane)
              : workspace_->Prepare(task.repository(), sha, lane);
      add_timings(clock_->Now() - checkout_start, BuildStep());
      if (!prepared.ok()) {
        // A worker that cannot check out is an infrastructure problem: retried elsewhere. A
        // submodule commit nobody can fetch is the commit's: it is skipped, like a failed build.
        finish(IsUnfetchableSubmodule(prepared.status()) ? v1::TASK_OUTCOME_CHECKOUT_FAILED
                                                         : v1::TASK_OUTCOME_INFRA_ERROR,
               absl::StrCat("checkout of ", short_sha, " failed: ", prepared.status().message()),
               "");
        return false;
      }
      dirs[sha] = *prepared;
      if (dependency) {
        build.env["KBISECT_DEPENDENCY_DIR"] = DependencyDir(*prepared, task.dependency());
      }
      if (!task.build_command().empty() && !cancelled()) {
        report(v1::TASK_PHASE_BUILD, 0);
        // The checkout's layer sits beside it, made afresh for each build (build_layer.h).
        const BuildStep built =
            layers_.BuildInLayer(build, *prepared, *prepared + "-layer", task.build_isolation(),
                                 sha, cancel, &layer_envs[sha]);
        add_timings(absl::ZeroDuration(), built);
        if (!built.ok()) {
          finish(built.failure, built.message, built.log_tail);
          return false;
        }
      }
    }
    if (cancelled()) {
      finish(v1::TASK_OUTCOME_CANCELLED, "cancelled", "");
      return false;
    }
    return true;
  };
  // 1. and 2. Checkouts and builds: with a build, the paired commit (last-good) in the second
  // lane, so that neither is built twice. Without one, a switch is a checkout of the few files
  // the two commits differ in, far cheaper than a second lane's first checkout of the whole
  // tree: both commits take turns in the primary lane.
  const bool one_lane = interleaved && task.build_command().empty();
  std::string checked_out;
  if (interleaved && !one_lane && !prepare(task.paired_commit_sha(), WorkspaceLane::kPaired)) {
    return result;
  }
  if (!prepare(one_lane ? schedule.front() : task.commit_sha(), WorkspaceLane::kPrimary)) {
    return result;
  }
  checked_out = one_lane ? schedule.front() : task.commit_sha();
  result.mutable_timings()->set_build_reused(builds_reused);
  *result.mutable_manifest() = CollectTaskManifest(
      task, dirs.count(task.commit_sha()) > 0 ? dirs[task.commit_sha()] : dirs[checked_out], env,
      runner_);

  // 3. Benchmark runs.
  const bool pass_fail = task.metric().kind() == v1::METRIC_KIND_EXIT_CODE;
  const MetricSpec metric_spec = ToMetricSpec(task.metric());
  // A suite (MetricSpec.suite): every metric of each run, the lead's value its sample.
  std::optional<MetricSuiteSpec> suite_spec;
  if (!task.metric().suite().empty()) {
    absl::StatusOr<MetricSuiteSpec> parsed = ParseMetricSuiteSpec(task.metric().suite());
    if (!parsed.ok()) {
      return finish(v1::TASK_OUTCOME_METRIC_MISSING,
                    absl::StrCat("the job's --suite is not valid: ", parsed.status().message()),
                    "");
    }
    suite_spec = *std::move(parsed);
  }
  const std::vector<std::string> suite_members(task.metric().members().begin(),
                                               task.metric().members().end());
  std::vector<std::string> argv(task.bench_command().begin(), task.bench_command().end());
  absl::Duration bench_total;
  int throttle_retries = 0;
  for (int run = 0; run < static_cast<int>(schedule.size()); ++run) {
    const std::string& sha = schedule[run];
    const std::string short_sha = sha.substr(0, 7);
    if (one_lane && sha != checked_out) {
      if (!prepare(sha, WorkspaceLane::kPrimary)) return result;
      checked_out = sha;
    }
    report(v1::TASK_PHASE_BENCH, run);
    ExecRequest bench;
    bench.argv = argv;
    auto bench_dir = env.find(kBenchDirEnv);
    bench.cwd =
        bench_dir != env.end() && !bench_dir->second.empty() ? bench_dir->second : dirs[sha];
    bench.env = env;
    for (const auto& [name, value] : layer_envs[sha]) bench.env[name] = value;
    bench.env["KBISECT_COMMIT"] = sha;
    if (dependency) {
      bench.env["KBISECT_DEPENDENCY_DIR"] = DependencyDir(dirs[sha], task.dependency());
    }
    bench.timeout = TimeoutOr(task, /*build=*/false, kDefaultBenchTimeout);
    absl::StatusOr<ExecResult> ran = runner_->Run(bench, cancel);
    if (!ran.ok()) {
      return finish(v1::TASK_OUTCOME_BENCH_FAILED,
                    absl::StrCat("could not start the benchmark `", absl::StrJoin(argv, " "),
                                 "`: ", ran.status().message()),
                    "");
    }
    bench_total += ran->wall_time;
    *result.mutable_timings()->mutable_bench() = ToProto(bench_total);
    v1::RunRecord* record = result.add_runs();
    record->set_exit_code(ran->exit_code);
    *record->mutable_wall_time() = ToProto(ran->wall_time);
    if (ran->cancelled) return finish(v1::TASK_OUTCOME_CANCELLED, "cancelled", "");
    const std::string where = absl::StrCat("benchmark at ", short_sha, " (run ", run + 1, ")");
    if (ran->timed_out) {
      return finish(v1::TASK_OUTCOME_TIMED_OUT, absl::StrCat(where, " ", ran->Describe()),
                    ran->Tail(kTailLines));
    }
    if (ran->signal == 0 && ran->exit_code == kGitSkipExitCode) {
      return finish(v1::TASK_OUTCOME_SKIP_REQUESTED,
                    absl::StrCat(where, " exited 125: untestable commit (skip)"),
                    ran->Tail(kTailLines));
    }
    if (pass_fail) {
      // git bisect run's contract: 0 good, 1..127 bad (125 skip, above), anything else aborts.
      if (ran->signal == 0 && ran->exit_code == 0) continue;
      if (ran->signal == 0 && ran->exit_code >= 1 && ran->exit_code <= 127) {
        return finish(v1::TASK_OUTCOME_FAILED, absl::StrCat(where, " ", ran->Describe()),
                      ran->Tail(kTailLines));
      }
      return finish(
          v1::TASK_OUTCOME_BENCH_FAILED,
          absl::StrCat(where, " ", ran->Describe(), " (outside git bisect run's 0..127 contract)"),
          ran->Tail(kTailLines));
    }
    if (!ran->ok()) {
      return finish(v1::TASK_OUTCOME_BENCH_FAILED, absl::StrCat(where, " ", ran->Describe()),
                    ran->Tail(kTailLines));
    }
    std::optional<SuiteReading> suite;
    if (suite_spec) {
      absl::StatusOr<SuiteReading> read =
          ReadSuite(*suite_spec, ran->output, task.metric().lead(), suite_members);
      if (!read.ok()) {
        return finish(v1::TASK_OUTCOME_METRIC_MISSING,
                      absl::StrCat(where, ": ", read.status().message()), ran->Tail(kTailLines));
      }
      suite = *std::move(read);
    }
    absl::StatusOr<Metric> metric = suite
                                        ? absl::StatusOr<Metric>(suite->metrics[suite->lead].metric)
                                        : ExtractMetric(metric_spec, ran->output);
    if (!metric.ok()) {
      return finish(v1::TASK_OUTCOME_METRIC_MISSING,
                    absl::StrCat(where, ": ", metric.status().message()), ran->Tail(kTailLines));
    }
    if (gpu_state_probe_) {
      if (std::optional<v1::GpuState> state = gpu_state_probe_()) {
        *record->mutable_gpu_state() = *state;
        if (state->throttled() && task.discard_throttled() && throttle_retries < kThrottleRetries) {
          ++throttle_retries;
          --run;  // The sample is recorded as a run but not kept; measure again.
          continue;
        }
      }
    }
    record->set_value(metric->value);
    record->set_has_value(true);
    if (suite) RecordSuiteRun(*suite, record, &result);
    if (sha == task.commit_sha()) {
      result.add_samples(metric->value);
    } else {
      result.add_paired_samples(metric->value);
    }
    result.set_metric_name(metric->name);
    result.set_metric_unit(metric->unit);
    result.set_metric_direction(ToProto(metric->direction));
  }
  report(v1::TASK_PHASE_REPORTING, static_cast<int>(schedule.size()));
  return finish(pass_fail ? v1::TASK_OUTCOME_PASSED : v1::TASK_OUTCOME_SUCCEEDED, "", "");
}

}  // namespace kbisect
