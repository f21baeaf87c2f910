// Copyright 2026 The kbisect Authors.
//
// TaskRunner against real subprocesses in a temp directory (the workspace is a fake that hands
// out that directory, and a subdirectory of it for the paired lane), so every outcome comes from
// a real exit code, signal or timeout. task_runner_build_cache_test runs it on real checkouts.
#include "worker/task_runner.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <system_error>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/clock/clock.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/time_util.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_command_runner.h"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace {

using ::kbisect::testing::TempDir;
using ::kbisect::testing::WriteFile;
using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Hands out `dir` for the primary lane and `dir`/paired for the paired lane, with the commit's
// id in checked-out.txt.
class DirectoryWorkspace : public Workspace {
 public:
  explicit DirectoryWorkspace(std::string dir) : dir_(std::move(dir)) {}
  absl::StatusOr<std::string> Prepare(const std::string& repository, const std::string& sha,
                                      WorkspaceLane lane) override {
    prepared.push_back(sha);
    lanes.push_back(lane);
    if (sha == "missing") return absl::NotFoundError("commit missing is not in the mirror");
    const std::string dir = lane == WorkspaceLane::kPaired ? dir_ + "/paired" : dir_;
    WriteFile(dir + "/checked-out.txt", sha + "\n");
    return dir;
  }
  std::vector<std::string> prepared;
  std::vector<WorkspaceLane> lanes;

 private:
  std::string dir_;
};

class TaskRunnerTest : public ::testing::Test {
 protected:
  TaskRunnerTest()
      : runner_(NewSubprocessRunner()),
        workspace_(dir_.path()),
        task_runner_(runner_.get(), &workspace_,
                     {{"CUDA_VISIBLE_DEVICES", "3"}, {"KBISECT_WORKER", "3"}}) {}
  // The checkout is dir_ itself, so a build's layer sits beside it (SlotBuilder): remove it too.
  ~TaskRunnerTest() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_.path() + "-layer", ignored);
  }

  v1::Task Task(const std::string& script, int runs = 3) {
    WriteFile(dir_.Join("bench.sh"), "#!/bin/sh\n" + script + "\n");
    chmod(dir_.Join("bench.sh").c_str(), 0755);
    v1::Task task;
    task.set_task_id("t1");
    task.set_commit_sha("0123456789abcdef0123456789abcdef01234567");
    task.set_commit_index(7);
    task.add_bench_command(dir_.Join("bench.sh"));
    task.set_runs(runs);
    task.mutable_metric()->set_kind(v1::METRIC_KIND_AUTO);
    return task;
  }

  TempDir dir_{"kbisect-task-runner"};
  std::unique_ptr<CommandRunner> runner_;
  DirectoryWorkspace workspace_;
  TaskRunner task_runner_;
};

TEST_F(TaskRunnerTest, CollectsOneSamplePerRunWithTheSlotEnvironment) {
  v1::TaskResult result = task_runner_.Run(
      Task("echo \"slot $CUDA_VISIBLE_DEVICES $KBISECT_WORKER $KBISECT_COMMIT_INDEX\" >> env.log\n"
           "n=$(wc -l < env.log)\necho \"Latency: $n.5 ms\""),
      nullptr, nullptr);
  EXPECT_EQ(result.outcome(), v1::TASK_OUTCOME_SUCCEEDED) << result.message();
  EXPECT_THAT(result.samples(), ElementsAre(1.5, 2.5, 3.5));
  EXPECT_EQ(result.runs_size(), 3);
  EXPECT_EQ(result.metric_unit(), "ms");
  EXPECT_EQ(result.metric_direction(), v1::DIRECTION_LOWER_IS_BETTER);
  EXPECT_THAT(testing::ReadFile(dir_.Join("env.log")), HasSubstr("slot 3 3 7"));
  EXPECT_EQ(workspace_.prepared.size(), 1u);
}

TEST_F(TaskRunnerTest, RecordsTheMeasurementManifestOfTheCheckout) {
  ASSERT_EQ(mkdir(dir_.Join("benchmarks").c_str(), 0755), 0);
  WriteFile(dir_.Join("benchmarks/run.py"), "hello\n");
  v1::Task task = Task("echo 'Latency: 1 ms'", 1);
  (*task.mutable_env())["KBISECT_MANIFEST_ENV"] = "HELION_*";
  (*task.mutable_env())["HELION_AUTOTUNE_EFFORT"] = "quick";
  v1::TaskResult result = task_runner_.Run(task, nullptr, nullptr);
  ASSERT_EQ(result.outcome(), v1::TASK_OUTCOME_SUCCEEDED) << result.message();
  const v1::MeasurementManifest& m = result.manifest();
  ASSERT_EQ(m.harness_files_size(), 1);
  EXPECT_EQ(m.harness_files(0).path(), "benchmarks/run.py");
  EXPECT_EQ(m.harness_files(0).blob_id(), "ce013625030ba8dba906f756967f9e9ca394464a");
  EXPECT_FALSE(m.harness_digest().empty());
  EXPECT_THAT(m.bench_command(), ElementsAre(dir_.Join("bench.sh")));
  EXPECT_EQ(m.env().at("HELION_AUTOTUNE_EFFORT"), "quick");
}

TEST_F(TaskRunnerTest, BuildRunsFirstAndItsFailureIsReportedWithTheTail) {
  v1::Task task = Task("echo 'Latency: 1 ms'");
  task.set_build_command("echo compiling; echo 'error: boom' >&2; exit 2");
  v1::TaskResult result = task_runner_.Run(task, nullptr, nullptr);
  EXPECT_EQ(result.outcome(), v1::TASK_OUTCOME_BUILD_FAILED);
  EXPECT_THAT(result.message(), HasSubstr("exited with code 2"));
  EXPECT_THAT(result.log_tail(), HasSubstr("error: boom"));
  EXPECT_EQ(result.samples_size(), 0);
}

// EX_TEMPFAIL: the build could not run here (an index out of reach), which says nothing of the
// commit: an infrastructure error, tried again elsewhere, never a skip.
TEST_F(TaskRunnerTest, ABuildExiting75CouldNotRunHere) {
  v1::Task task = Task("echo 'Latency: 1 ms'");
  task.set_build_command("echo 'the index cannot be reached' >&2; exit 75");
  v1::TaskResult result = task_runner_.Run(task, nullptr, nullptr);
  EXPECT_EQ(result.outcome(), v1::TASK_OUTCOME_INFRA_ERROR);
  EXPECT_THAT(result.message(), HasSubstr("could not run on this worker"));
  EXPECT_THAT(result.log_tail(), HasSubstr("the index cannot be reached"));
}

TEST_F(TaskRunnerTest, ExitCode125IsASkip) {
  v1::TaskResult result = task_runner_.Run(Task("exit 125"), nullptr, nullptr);
  EXPECT_EQ(result.outcome(), v1::TASK_OUTCOME_SKIP_REQUESTED);
}

TEST_F(TaskRunnerTest, CrashIsABenchFailure) {
  v1::TaskResult result = task_runner_.Run(Task("echo dying; kill -SEGV $$"), nullptr, nullptr);
  EXPECT_EQ(result.outcome(), v1::TASK_OUTCOME_BENCH_FAILED);
  EXPECT_THAT(result.message(), HasSubstr("signal"));
  EXPECT_THAT(result.log_tail(), HasSubstr("dying"));
}

TEST_F(TaskRunnerTest, MissingMetricNamesTheProblem) {
  v1::TaskResult result =
      task_runner_.Run(Task("echo 'all good, no numbers here'"), nullptr, nullptr);
  EXPECT_EQ(result.outcome(), v1::TASK_OUTCOME_METRIC_MISSING);
  EXPECT_THAT(result.log_tail(), HasSubstr("no numbers here"));
}

TEST_F(TaskRunnerTest, TimeoutKillsTheBenchmark) {
  v1::Task task = Task("sleep 30");
  *task.mutable_bench_timeout() = google::protobuf::util::TimeUtil::MillisecondsToDuration(300);
  const absl::Time start = absl::Now();
  v1::TaskResult result = task_runner_.Run(task, nullptr, nullptr);
  EXPECT_EQ(result.outcome(), v1::TASK_OUTCOME_TIMED_OUT);
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
}

TEST_F(TaskRunnerTest, CancellationStopsTheRunningCommand) {
  Cancellation cancel;
  std::thread canceller([&] {
    absl::SleepFor(absl::Milliseconds(200));
    cancel.Cancel();
  });
  v1::TaskResult result = task_runner_.Run(Task("sleep 30"), &cancel, nullptr);
  canceller.join();
  EXPECT_EQ(result.outcome(), v1::TASK_OUTCOME_CANCELLED);
}

TEST_F(TaskRunnerTest, CheckoutFailureIsAnInfrastructureErrorForRetryElsewhere) {
  v1::Task task = Task("echo 'Latency: 1 ms'");
  task.set_commit_sha("missing");
  v1::TaskResult result = task_runner_.Run(task, nullptr, nullptr);
  EXPECT_EQ(result.outcome(), v1::TASK_OUTCOME_INFRA_ERROR);
  EXPECT_THAT(result.message(), HasSubstr("not in the mirror"));
}

TEST_F(TaskRunnerTest, PassFailModeFollowsGitBisectRun) {
  v1::Task pass = Task("exit 0", 1);
  pass.mutable_metric()->set_kind(v1::METRIC_KIND_EXIT_CODE);
  EXPECT_EQ(task_runner_.Run(pass, nullptr, nullptr).outcome(), v1::TASK_OUTCOME_PASSED);
  v1::Task fail = Task("exit 3", 1);
  fail.mutable_metric()->set_kind(v1::METRIC_KIND_EXIT_CODE);
  EXPECT_EQ(task_runner_.Run(fail, nullptr, nullptr).outcome(), v1::TASK_OUTCOME_FAILED);
}

TEST_F(TaskRunnerTest, ReportsProgressPhases) {
  std::vector<v1::TaskPhase> phases;
  v1::Task task = Task("echo 'Latency: 1 ms'", 2);
  task.set_build_command("true");
  task_runner_.Run(task, nullptr, [&](v1::TaskPhase phase, int, int) { phases.push_back(phase); });
  EXPECT_THAT(phases,
              ElementsAre(v1::TASK_PHASE_CHECKOUT, v1::TASK_PHASE_BUILD, v1::TASK_PHASE_BENCH,
                          v1::TASK_PHASE_BENCH, v1::TASK_PHASE_REPORTING));
}

TEST_F(TaskRunnerTest, ThrottledRunsAreFlaggedAndDiscardedOnRequest) {
  // The "GPU" is throttled during the first two runs only.
  int probes = 0;
  task_runner_.set_gpu_state_probe([&]() -> std::optional<v1::GpuState> {
    v1::GpuState state;
    state.set_temperature_c(probes < 2 ? 88 : 60);
    if (probes++ < 2) {
      state.add_throttle_reasons("hw_thermal_slowdown");
      state.set_throttled(true);
    }
    return state;
  });
  v1::Task task = Task("echo 'Latency: 1 ms'", 2);
  v1::TaskResult kept = task_runner_.Run(task, nullptr, nullptr);
  ASSERT_EQ(kept.outcome(), v1::TASK_OUTCOME_SUCCEEDED);
  EXPECT_EQ(kept.samples_size(), 2);
  EXPECT_TRUE(kept.runs(0).gpu_state().throttled());
  EXPECT_EQ(kept.runs(0).gpu_state().throttle_reasons(0), "hw_thermal_slowdown");

  probes = 0;
  task.set_discard_throttled(true);
  v1::TaskResult discarded = task_runner_.Run(task, nullptr, nullptr);
  ASSERT_EQ(discarded.outcome(), v1::TASK_OUTCOME_SUCCEEDED);
  EXPECT_EQ(discarded.samples_size(), 2) << "two clean samples after two re-runs";
  EXPECT_EQ(discarded.runs_size(), 4);
  EXPECT_FALSE(discarded.runs(0).has_value());
  EXPECT_TRUE(discarded.runs(3).has_value());
  EXPECT_FALSE(discarded.runs(3).gpu_state().throttled());
}

// Issue 49: the GPU is throttled (HwSlowdown) only while the first benchmark run runs, and clean
// before and after it, as a scripted nvidia-smi streams it. Read after the run it would look
// clean; watched during it, the run is caught and run again, without --discard-throttled.
TEST_F(TaskRunnerTest, AGpuThrottledOnlyWhileTheBenchmarkRunsIsCaughtAndRunAgain) {
  const std::string path = getenv("PATH");
  setenv("PATH", absl::StrCat(KBISECT_FAKES_DIR, ":", path).c_str(), 1);
  TempDir gpu("fake-gpu");
  setenv("FAKE_NVSMI_DIR", gpu.path().c_str(), 1);
  GpuWatchOptions options;
  options.nvml_library = "";
  options.runner = runner_.get();
  options.period = absl::Milliseconds(20);
  GpuWatcher watcher = GpuWatcher::Detect(options);
  ASSERT_TRUE(watcher.available());
  task_runner_.set_gpu_watcher(std::move(watcher));
  // The first run throttles the GPU until the watch has read it twice more.
  const std::string readings = gpu.Join("readings");
  v1::Task task = Task(
      absl::StrCat("if [ ! -e ", dir_.Join("ran-once"), " ]; then touch ", dir_.Join("ran-once"),
                   " ", gpu.Join("throttled"), "; n=$(wc -l < ", readings, "); while [ $(wc -l < ",
                   readings, ") -lt $((n + 2)) ]; do sleep 0.01; done; rm ", gpu.Join("throttled"),
                   "; fi; echo 'Latency: 1 ms'"),
      2);
  WriteFile(readings, "");
  const v1::TaskResult result = task_runner_.Run(task, nullptr, nullptr);
  setenv("PATH", path.c_str(), 1);
  ASSERT_EQ(result.outcome(), v1::TASK_OUTCOME_SUCCEEDED) << result.message();
  EXPECT_FALSE(task.discard_throttled());
  ASSERT_EQ(result.runs_size(), 3);
  EXPECT_TRUE(result.runs(0).gpu_state().throttled());
  EXPECT_THAT(result.runs(0).gpu_state().throttle_reasons(), ElementsAre("hw_slowdown"));
  EXPECT_EQ(result.runs(0).gpu_state().sm_clock_mhz(), 1005);
  EXPECT_FALSE(result.runs(0).has_value()) << "the throttled run is not kept";
  EXPECT_FALSE(result.runs(1).gpu_state().throttled());
  EXPECT_FALSE(result.runs(2).gpu_state().throttled());
  EXPECT_EQ(result.samples_size(), 2);
}

// Another compute process on the GPU: the task waits for it to go (up to the wait), and a
// process that stays, or comes, is named in every run record of the task.
TEST_F(TaskRunnerTest, AForeignProcessOnTheGpuIsWaitedForAndNamed) {
  int asked = 0;
  task_runner_.set_compute_apps_probe(
      [&] {
        ++asked;
        return asked <= 2 ? std::vector<std::string>{"pid 4242 python3 (12034 MiB)"}
                          : std::vector<std::string>{};
      },
      absl::Seconds(30));
  v1::TaskResult waited = task_runner_.Run(Task("echo 'Latency: 1 ms'", 2), nullptr, nullptr);
  ASSERT_EQ(waited.outcome(), v1::TASK_OUTCOME_SUCCEEDED);
  EXPECT_EQ(asked, 4) << "twice busy, once free before the runs, once after them";
  for (const v1::RunRecord& run : waited.runs()) {
    EXPECT_EQ(run.gpu_state().foreign_processes_size(), 0);
  }

  task_runner_.set_compute_apps_probe(
      [] { return std::vector<std::string>{"pid 917 ollama (3000 MiB)"}; }, absl::ZeroDuration());
  v1::TaskResult shared = task_runner_.Run(Task("echo 'Latency: 1 ms'", 2), nullptr, nullptr);
  ASSERT_EQ(shared.outcome(), v1::TASK_OUTCOME_SUCCEEDED);
  ASSERT_EQ(shared.runs_size(), 2);
  for (const v1::RunRecord& run : shared.runs()) {
    EXPECT_THAT(run.gpu_state().foreign_processes(), ElementsAre("pid 917 ollama (3000 MiB)"));
  }
}

// The commits an interleaved task runs, in order: each pair's order is PairedGoesFirst's.
std::vector<std::string> Schedule(const v1::Task& task) {
  std::vector<std::string> schedule;
  for (int pair = 0; pair < task.runs(); ++pair) {
    const bool paired_first = PairedGoesFirst(task.task_id(), pair);
    schedule.push_back(paired_first ? task.paired_commit_sha() : task.commit_sha());
    schedule.push_back(paired_first ? task.commit_sha() : task.paired_commit_sha());
  }
  return schedule;
}

TEST_F(TaskRunnerTest, ConfirmationInterleavesLastGoodAndCulpritWithoutRebuilding) {
  // The "culprit" (the task's commit) is twice as slow as its paired last-good commit.
  const std::string bench =
      absl::StrCat("if grep -q 0123456789 checked-out.txt; then echo 'Latency: 2 ms'; ",
                   "else echo 'Latency: 1 ms'; fi; cat checked-out.txt >> ", dir_.Join("runs.log"));
  v1::Task task = Task(bench, 3);
  task.set_kind(v1::PROBE_KIND_CONFIRM);
  task.set_paired_commit_sha("fedcba9876543210fedcba9876543210fedcba98");
  task.set_build_command("echo built >> builds.log");
  v1::TaskResult result = task_runner_.Run(task, nullptr, nullptr);
  ASSERT_EQ(result.outcome(), v1::TASK_OUTCOME_SUCCEEDED) << result.message();
  EXPECT_THAT(result.samples(), ElementsAre(2, 2, 2));
  EXPECT_THAT(result.paired_samples(), ElementsAre(1, 1, 1));
  // One checkout and one build per commit, each in its own lane; only the runs alternate.
  EXPECT_THAT(workspace_.prepared, ElementsAre(task.paired_commit_sha(), task.commit_sha()));
  EXPECT_THAT(workspace_.lanes, ElementsAre(WorkspaceLane::kPaired, WorkspaceLane::kPrimary));
  EXPECT_EQ(testing::ReadFile(dir_.Join("paired/builds.log")), "built\n");
  EXPECT_EQ(testing::ReadFile(dir_.Join("builds.log")), "built\n");
  std::string runs;
  for (const std::string& sha : Schedule(task)) absl::StrAppend(&runs, sha, "\n");
  EXPECT_EQ(testing::ReadFile(dir_.Join("runs.log")), runs);
  EXPECT_FALSE(result.timings().build_reused()) << "no build cache here";
}

TEST_F(TaskRunnerTest, AConfirmationWithoutABuildAlternatesInOneCheckout) {
  // Without a build, switching commits checks out only the files that differ: cheaper than a
  // second lane's first checkout of the whole tree.
  const std::string bench =
      absl::StrCat("if grep -q 0123456789 checked-out.txt; then echo 'Latency: 2 ms'; ",
                   "else echo 'Latency: 1 ms'; fi; cat checked-out.txt >> ", dir_.Join("runs.log"));
  v1::Task task = Task(bench, 2);
  task.set_kind(v1::PROBE_KIND_CONFIRM);
  task.set_paired_commit_sha("fedcba9876543210fedcba9876543210fedcba98");
  v1::TaskResult result = task_runner_.Run(task, nullptr, nullptr);
  ASSERT_EQ(result.outcome(), v1::TASK_OUTCOME_SUCCEEDED) << result.message();
  EXPECT_THAT(result.samples(), ElementsAre(2, 2));
  EXPECT_THAT(result.paired_samples(), ElementsAre(1, 1));
  // A checkout whenever the next run's commit differs from the one checked out.
  std::vector<std::string> checkouts;
  std::string runs;
  for (const std::string& sha : Schedule(task)) {
    if (checkouts.empty() || checkouts.back() != sha) checkouts.push_back(sha);
    absl::StrAppend(&runs, sha, "\n");
  }
  EXPECT_EQ(workspace_.prepared, checkouts);
  EXPECT_THAT(workspace_.lanes, Each(WorkspaceLane::kPrimary));
  EXPECT_EQ(testing::ReadFile(dir_.Join("runs.log")), runs);
}

TEST(PairOrderTest, EitherSideGoesFirstAboutHalfTheTimeAndATaskKeepsItsOrder) {
  int paired_first = 0;
  for (int task = 0; task < 50; ++task) {
    for (int pair = 0; pair < 20; ++pair) {
      const std::string id = absl::StrCat("job-7/p", task);
      paired_first += PairedGoesFirst(id, pair) ? 1 : 0;
      EXPECT_EQ(PairedGoesFirst(id, pair), PairedGoesFirst(id, pair));
    }
  }
  // 1,000 pairs: a fair coin lands within 450..550 with probability > 99.8%; the hash is fixed,
  // so this either always holds or never does.
  EXPECT_GT(paired_first, 450);
  EXPECT_LT(paired_first, 550);
}

// The task's total and checkout timings come from the runner's clock, the build and benchmark
// timings from the commands' wall times.
TEST(TaskRunnerClockTest, TimingsAreMeasuredOnTheClockAndTheCommands) {
  FakeClock clock;
  class SlowCheckout : public Workspace {
   public:
    explicit SlowCheckout(FakeClock* clock) : clock_(clock) {}
    absl::StatusOr<std::string> Prepare(const std::string&, const std::string&,
                                        WorkspaceLane) override {
      clock_->Advance(absl::Seconds(3));
      return std::string("/nonexistent/kbisect-task-runner-test");
    }

   private:
    FakeClock* const clock_;
  } workspace(&clock);
  FakeCommandRunner commands([&](const ExecRequest& request) -> absl::StatusOr<ExecResult> {
    clock.Advance(absl::Seconds(1));
    ExecResult result = FakeCommandRunner::Exited(0, "Latency: 2 ms\n");
    result.wall_time = request.shell_command.empty() ? absl::Seconds(5) : absl::Seconds(7);
    return result;
  });
  // No Python to layer over: the fake runs no venv commands (build_layer_test covers layers).
  TaskRunner task_runner(&commands, &workspace, {}, &clock, /*layer_env=*/{});
  v1::Task task;
  task.set_commit_sha("0123456789abcdef0123456789abcdef01234567");
  task.set_build_command("make");
  task.add_bench_command("./bench");
  task.set_runs(2);
  v1::TaskResult result = task_runner.Run(task, nullptr, nullptr);
  ASSERT_EQ(result.outcome(), v1::TASK_OUTCOME_SUCCEEDED) << result.message();
  using google::protobuf::util::TimeUtil;
  EXPECT_EQ(TimeUtil::DurationToSeconds(result.timings().checkout()), 3);
  EXPECT_EQ(TimeUtil::DurationToSeconds(result.timings().build()), 7);
  EXPECT_EQ(TimeUtil::DurationToSeconds(result.timings().bench()), 10);
  // The fake clock moved 3 s in the checkout, 1 s in the build and 1 s in each run.
  EXPECT_EQ(TimeUtil::DurationToSeconds(result.timings().total()), 3 + 1 + 2);
}

}  // namespace
}  // namespace kbisect
