// Copyright 2026 The kbisect Authors.
//
// The per-probe Slurm mode's decisions: the batch script and the sbatch command line, how a
// finished job's files become the reported result, the node choice the slots share, the slots'
// identity, and the executor and the probe job's side end to end over a scripted sbatch (no
// Slurm). tests/integration/slurm_test runs the mode on a real one-node Slurm.
#include "worker/slurm_probe.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/log/log.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_command_runner.h"
#include "tests/testing/git_fixture.h"
#include "worker/probe_job.h"
#include "worker/slurm_launcher.h"

namespace kbisect {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

SlurmProbeOptions Options(const std::string& jobs_dir) {
  SlurmProbeOptions options;
  options.worker_binary = "/opt/kbisect/bin/kbisect-worker";
  options.jobs_dir = jobs_dir;
  options.sbatch_options = {"--partition=gpu", "--time=30"};
  options.probe_flags = {"--build-cache-size", "16"};
  return options;
}

v1::RunnerIdentity Identity(const std::string& node, const std::string& hardware_class) {
  v1::RunnerIdentity identity;
  identity.set_host(node);
  identity.set_hardware_class(hardware_class);
  identity.set_hardware_class_label("NVIDIA H100 x1");
  identity.mutable_placement()->set_scheduler("slurm");
  identity.mutable_placement()->set_node(node);
  identity.mutable_placement()->set_job_id("77");
  identity.mutable_placement()->set_device_variable("CUDA_VISIBLE_DEVICES");
  return identity;
}

TEST(ProbeBatchScriptTest, RunsTheProbeJobThenWritesItsExitCodeIntoAFile) {
  const std::string script = ProbeBatchScript(Options("/shared/jobs"), "/shared/jobs/slot2-ab", 2);
  EXPECT_THAT(script, HasSubstr("/opt/kbisect/bin/kbisect-worker --slurm-probe-job "
                                "/shared/jobs/slot2-ab --slurm-probe-slot 2 --cache-dir "
                                "\"${SLURM_TMPDIR:-${TMPDIR:-/tmp}}/kbisect-${USER:-$(id -un)}\""
                                " --build-cache-size 16\ncode=$?\n"));
  EXPECT_THAT(script, HasSubstr(">/shared/jobs/slot2-ab/exit-code.tmp && mv "
                                "/shared/jobs/slot2-ab/exit-code.tmp "
                                "/shared/jobs/slot2-ab/exit-code\n"));
  SlurmProbeOptions given = Options("/shared/jobs");
  given.node_cache_dir = "/scratch/my cache";
  EXPECT_THAT(ProbeBatchScript(given, "/j", 0), HasSubstr("--cache-dir '/scratch/my cache' "));
}

TEST(SbatchCommandTest, UserOptionsFirstThenTheLaunchersOwn) {
  EXPECT_THAT(SbatchCommand(Options("/j"), "kbisect-probe-x", "/j/x", SlurmNodeChoice{}),
              ElementsAre("sbatch", "--wait", "--parsable", "--partition=gpu", "--time=30",
                          "--job-name=kbisect-probe-x", "--output=/j/x/job.out", "--gres=gpu:1",
                          "/j/x/probe.sh"));
  SlurmProbeOptions no_gres = Options("/j");
  no_gres.gres = "";
  EXPECT_THAT(SbatchCommand(no_gres, "n", "/j/x", SlurmNodeChoice{"gpu07", {"gpu01", "gpu02"}}),
              ElementsAre("sbatch", "--wait", "--parsable", "--partition=gpu", "--time=30",
                          "--job-name=n", "--output=/j/x/job.out", "--nodelist=gpu07",
                          "--exclude=gpu01,gpu02", "/j/x/probe.sh"));
}

TEST(JudgeProbeJobTest, AResultFromANodeOfTheSessionsClassIsReportedAsItIs) {
  ProbeJobOutput output;
  output.exit_code = 0;
  output.result.emplace().set_outcome(v1::TASK_OUTCOME_BUILD_FAILED);
  output.identity = Identity("gpu07", "class-a");
  const ProbeJobVerdict verdict = JudgeProbeJob(output, "Slurm job 12", "class-a");
  EXPECT_EQ(verdict.result.outcome(), v1::TASK_OUTCOME_BUILD_FAILED);
  EXPECT_EQ(verdict.avoid_node, "");
}

TEST(JudgeProbeJobTest, AJobKilledBeforeItsProbeReturnedIsAnInfrastructureLoss) {
  ProbeJobOutput output;
  output.result.emplace().set_outcome(v1::TASK_OUTCOME_SUCCEEDED);  // Written, then killed.
  output.output_tail = "slurmstepd: error: *** JOB 12 CANCELLED ***";
  const ProbeJobVerdict verdict = JudgeProbeJob(output, "Slurm job 12", "class-a");
  EXPECT_EQ(verdict.result.outcome(), v1::TASK_OUTCOME_INFRA_ERROR);
  EXPECT_THAT(verdict.result.message(), HasSubstr("Slurm job 12 ended before its probe did"));
  EXPECT_THAT(verdict.result.log_tail(), HasSubstr("CANCELLED"));
}

TEST(JudgeProbeJobTest, AnExitWithoutAResultIsAnInfrastructureLoss) {
  ProbeJobOutput output;
  output.exit_code = 1;
  const ProbeJobVerdict verdict = JudgeProbeJob(output, "Slurm job 12", "class-a");
  EXPECT_EQ(verdict.result.outcome(), v1::TASK_OUTCOME_INFRA_ERROR);
  EXPECT_THAT(verdict.result.message(), HasSubstr("exited with code 1 without a result"));
}

TEST(JudgeProbeJobTest, AProbeOnAnotherHardwareClassIsRefusedAndItsNodeAvoided) {
  ProbeJobOutput output;
  output.exit_code = 0;
  output.result.emplace().set_outcome(v1::TASK_OUTCOME_SUCCEEDED);
  output.identity = Identity("gpu09", "class-b");
  const ProbeJobVerdict verdict = JudgeProbeJob(output, "Slurm job 12", "class-a");
  EXPECT_EQ(verdict.result.outcome(), v1::TASK_OUTCOME_INFRA_ERROR);
  EXPECT_EQ(verdict.avoid_node, "gpu09");
  EXPECT_THAT(verdict.result.message(), HasSubstr("hardware class class-b"));
}

TEST(SlurmNodesTest, PinsTheFirstNodeOnlyWhenPinning) {
  SlurmNodes pinning(true);
  pinning.Ran("gpu07");
  pinning.Ran("gpu08");
  pinning.Exclude("gpu09");
  EXPECT_EQ(pinning.Choice().pinned, "gpu07");
  EXPECT_THAT(pinning.Choice().excluded, ElementsAre("gpu09"));
  SlurmNodes free(false);
  free.Ran("gpu07");
  EXPECT_EQ(free.Choice().pinned, "");
}

TEST(LauncherSlotIdentityTest, TheNodesHardwareWithTheSlotAndNoJobOfItsOwn) {
  const v1::RunnerIdentity slot = LauncherSlotIdentity(Identity("gpu07", "class-a"), 3, false);
  EXPECT_EQ(slot.slot(), "3");
  EXPECT_EQ(slot.hardware_class(), "class-a");
  EXPECT_EQ(slot.placement().scheduler(), "slurm");
  EXPECT_EQ(slot.placement().job_id(), "");
  EXPECT_EQ(slot.placement().node(), "");
  EXPECT_EQ(LauncherSlotIdentity(Identity("gpu07", "class-a"), 3, true).placement().node(),
            "gpu07");
}

// A TaskExecutor whose tasks all end with `outcome`.
class FixedExecutor : public TaskExecutor {
 public:
  explicit FixedExecutor(v1::TaskOutcome outcome) : outcome_(outcome) {}
  v1::TaskResult Run(const v1::Task& task, const Cancellation*, const ProgressCallback&) override {
    ran_ = task.task_id();
    v1::TaskResult result;
    result.set_outcome(outcome_);
    return result;
  }
  const BuildCache* build_cache() const override { return nullptr; }
  std::string ran_;

 private:
  const v1::TaskOutcome outcome_;
};

// A scripted sbatch: plays the node's side of the job in the script's directory (the probe job
// run with `executor` and `identity`, then the exit code unless `killed`) and prints a job id.
FakeCommandRunner::Handler FakeSbatch(TaskExecutor* executor, v1::RunnerIdentity identity,
                                      bool killed) {
  return [executor, identity, killed](const ExecRequest& request) -> absl::StatusOr<ExecResult> {
    if (request.argv[0] != "sbatch") return FakeCommandRunner::Exited(0);
    const std::string dir = std::filesystem::path(request.argv.back()).parent_path().string();
    const Logger log("test", LogFormat::kText, &std::cerr);
    const int code = RunProbeJob(dir, identity, executor, log);
    if (!killed) std::ofstream(absl::StrCat(dir, "/exit-code")) << code << "\n";
    return FakeCommandRunner::Exited(killed ? 1 : 0, "4242\n");
  };
}

TEST(SlurmProbeExecutorTest, RunsTheTaskInAJobAndReportsItsResult) {
  testing::TempDir jobs("kbisect-slurm-probe-test");
  FixedExecutor node_runner(v1::TASK_OUTCOME_SUCCEEDED);
  FakeCommandRunner runner(FakeSbatch(&node_runner, Identity("gpu07", "class-a"), false));
  SlurmNodes nodes(true);
  const Logger log("test", LogFormat::kText, &std::cerr);
  SlurmProbeExecutor executor(Options(jobs.path()), 1, "class-a", &nodes, &runner, &log);
  v1::Task task;
  task.set_task_id("t-1");
  EXPECT_EQ(executor.Run(task, nullptr, nullptr).outcome(), v1::TASK_OUTCOME_SUCCEEDED);
  EXPECT_EQ(node_runner.ran_, "t-1");
  EXPECT_EQ(nodes.Choice().pinned, "gpu07");
  EXPECT_EQ(executor.Run(task, nullptr, nullptr).outcome(), v1::TASK_OUTCOME_SUCCEEDED);
  EXPECT_THAT(runner.requests().back().argv, Contains("--nodelist=gpu07"));
  EXPECT_THAT(std::filesystem::is_empty(jobs.path()), true) << "each job's directory is removed";
}

TEST(SlurmProbeExecutorTest, AJobKilledBySlurmIsAnInfrastructureLoss) {
  testing::TempDir jobs("kbisect-slurm-probe-test");
  FixedExecutor node_runner(v1::TASK_OUTCOME_SUCCEEDED);
  FakeCommandRunner runner(FakeSbatch(&node_runner, Identity("gpu07", "class-a"), true));
  SlurmNodes nodes(false);
  const Logger log("test", LogFormat::kText, &std::cerr);
  SlurmProbeExecutor executor(Options(jobs.path()), 0, "class-a", &nodes, &runner, &log);
  const v1::TaskResult result = executor.Run(v1::Task(), nullptr, nullptr);
  EXPECT_EQ(result.outcome(), v1::TASK_OUTCOME_INFRA_ERROR);
  EXPECT_THAT(result.message(), HasSubstr("Slurm job 4242"));
}

TEST(SlurmProbeExecutorTest, AStoppedTaskScancelsItsJobByName) {
  testing::TempDir jobs("kbisect-slurm-probe-test");
  FakeCommandRunner runner;
  SlurmNodes nodes(false);
  const Logger log("test", LogFormat::kText, &std::cerr);
  SlurmProbeExecutor executor(Options(jobs.path()), 0, "class-a", &nodes, &runner, &log);
  Cancellation cancel;
  cancel.Cancel();
  EXPECT_EQ(executor.Run(v1::Task(), &cancel, nullptr).outcome(), v1::TASK_OUTCOME_CANCELLED);
  const std::vector<ExecRequest> requests = runner.requests();
  ASSERT_EQ(requests.size(), 2u);
  const std::string name = requests[0].argv[5];  // --job-name=...
  ASSERT_THAT(name, HasSubstr("--job-name=kbisect-probe-slot0-"));
  EXPECT_THAT(requests[1].argv, ElementsAre("scancel", absl::StrCat("--name=", name.substr(11))));
}

TEST(SlurmProbeExecutorTest, SbatchThatSubmitsNothingIsAnInfrastructureLoss) {
  testing::TempDir jobs("kbisect-slurm-probe-test");
  FakeCommandRunner runner([](const ExecRequest&) -> absl::StatusOr<ExecResult> {
    return FakeCommandRunner::Exited(1, "sbatch: error: invalid partition specified: gpu\n");
  });
  SlurmNodes nodes(false);
  const Logger log("test", LogFormat::kText, &std::cerr);
  SlurmProbeExecutor executor(Options(jobs.path()), 0, "class-a", &nodes, &runner, &log);
  const v1::TaskResult result = executor.Run(v1::Task(), nullptr, nullptr);
  EXPECT_EQ(result.outcome(), v1::TASK_OUTCOME_INFRA_ERROR);
  EXPECT_THAT(result.message(), HasSubstr("sbatch could not submit the probe job"));
  EXPECT_THAT(result.log_tail(), HasSubstr("invalid partition"));
}

TEST(ProbeJobTest, TheIdentityJobWritesOnlyTheIdentity) {
  testing::TempDir dir("kbisect-probe-job-test");
  FixedExecutor node_runner(v1::TASK_OUTCOME_SUCCEEDED);
  const Logger log("test", LogFormat::kText, &std::cerr);
  EXPECT_EQ(RunProbeJob(dir.path(), Identity("gpu07", "class-a"), &node_runner, log), 0);
  const ProbeJobOutput output = ReadProbeJob(dir.path());
  ASSERT_TRUE(output.identity.has_value());
  EXPECT_EQ(output.identity->placement().node(), "gpu07");
  EXPECT_FALSE(output.result.has_value());
  EXPECT_THAT(node_runner.ran_, IsEmpty());
}

TEST(ProbeJobTest, ATaskResultCarriesTheNodesHardwareClass) {
  testing::TempDir dir("kbisect-probe-job-test");
  v1::Task task;
  task.set_task_id("t-9");
  ASSERT_TRUE(WriteProtoFile(dir.Join("task.pb"), task).ok());
  FixedExecutor node_runner(v1::TASK_OUTCOME_BENCH_FAILED);
  const Logger log("test", LogFormat::kText, &std::cerr);
  EXPECT_EQ(RunProbeJob(dir.path(), Identity("gpu07", "class-a"), &node_runner, log), 0);
  const ProbeJobOutput output = ReadProbeJob(dir.path());
  ASSERT_TRUE(output.result.has_value());
  EXPECT_EQ(output.result->outcome(), v1::TASK_OUTCOME_BENCH_FAILED);
  EXPECT_EQ(output.result->hardware_class(), "class-a");
  EXPECT_FALSE(output.exit_code.has_value()) << "the batch script writes it, not the probe";
}

}  // namespace
}  // namespace kbisect
