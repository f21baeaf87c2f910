// Copyright 2026 The kbisect Authors.
//
// A finished job says how sure it is: JobStatus.culprit_probability and culprit_posterior, from
// every sample of the job (common/search/culprit_posterior.h), in the reference worker's frame.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "coordinator/job/bisect_job.h"
#include "gtest/gtest.h"
#include "tests/testing/job_simulator.h"

namespace kbisect {
namespace {

SimulationResult RunJob(int workers, double noise_cv, double odd_factor) {
  SimulationOptions options;
  options.commits = 120;
  options.culprit = 37;
  options.good_value = 100;
  options.bad_value = 110;
  options.noise_cv = noise_cv;
  options.workers = SimulatedWorkers(workers);
  if (odd_factor != 1) options.workers.back().metric_factor = odd_factor;
  return SimulateJob(SimulationSpec(), options);
}

void ExpectSure(const SimulationResult& result) {
  const v1::JobStatus& status = result.status;
  ASSERT_EQ(status.status(), v1::OUTCOME_CULPRIT_FOUND) << status.error();
  ASSERT_EQ(status.culprit().index(), 37);
  EXPECT_GT(status.culprit_probability(), 0.99);
  EXPECT_LE(status.culprit_probability(), 1.0);
  ASSERT_GE(status.culprit_posterior_size(), 1);
  EXPECT_EQ(status.culprit_posterior(0).index(), 37);
  EXPECT_EQ(status.culprit_posterior(0).sha(), status.culprit().sha());
  EXPECT_DOUBLE_EQ(status.culprit_posterior(0).probability(), status.culprit_probability());
  for (int i = 1; i < status.culprit_posterior_size(); ++i) {
    EXPECT_LE(status.culprit_posterior(i).probability(),
              status.culprit_posterior(i - 1).probability());
    EXPECT_GE(status.culprit_posterior(i).probability(), 0.001);
  }
}

TEST(CulpritProbabilityTest, AFinishedJobCarriesIt) { ExpectSure(RunJob(4, 0.01, 1)); }

TEST(CulpritProbabilityTest, AWorkerWithAnOffsetIsTakenInTheReferenceFrame) {
  // One GPU measures everything 4% slower (an offset, under a third of the 10% step: it stays,
  // judged against its own GOOD): its samples are scaled as its verdicts are, not mixed in raw.
  const SimulationResult result = RunJob(4, 0.01, 1.04);
  ExpectSure(result);
}

TEST(CulpritProbabilityTest, AQuarantinedWorkerDoesNotCount) {
  const SimulationResult result = RunJob(4, 0.01, 1.35);
  ExpectSure(result);
  bool quarantined = false;
  for (const v1::JobWorker& worker : result.status.workers()) {
    quarantined = quarantined || worker.quarantined();
  }
  EXPECT_TRUE(quarantined);
}

TEST(CulpritProbabilityTest, NoisyJobsAreLessSure) {
  // Noise as large as half the step: the job still decides, but the answer cannot be as sure as
  // in a 1% noise.
  const SimulationResult noisy = RunJob(2, 0.05, 1);
  const SimulationResult quiet = RunJob(2, 0.002, 1);
  ASSERT_EQ(quiet.status.status(), v1::OUTCOME_CULPRIT_FOUND);
  EXPECT_GT(quiet.status.culprit_probability(), 0.999);
  if (noisy.status.status() == v1::OUTCOME_CULPRIT_FOUND) {
    EXPECT_GT(noisy.status.culprit_probability(), 0);
    EXPECT_LE(noisy.status.culprit_probability(), quiet.status.culprit_probability());
  }
}

TEST(CulpritProbabilityTest, PassFailJobsAreSureWhenNeighboursAreDecided) {
  v1::JobSpec spec;
  spec.set_repository("/sim");
  spec.set_good("g");
  spec.add_bench_command("test");
  spec.mutable_metric()->set_kind(v1::METRIC_KIND_EXIT_CODE);
  const int n = 200;
  const int culprit = 123;
  std::vector<v1::CommitRef> commits(n + 1);
  for (int i = 0; i <= n; ++i) {
    commits[i].set_sha(absl::StrFormat("%040d", i));
    commits[i].set_index(i);
  }
  const absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  BisectJob job("pf", spec, commits, now);
  for (int guard = 0; guard < 1000 && !job.finished(); ++guard) {
    const std::vector<v1::Task> tasks = job.TakeTasks(3, now);
    if (tasks.empty()) break;
    std::vector<std::string> cancelled;
    for (const v1::Task& task : tasks) {
      if (std::find(cancelled.begin(), cancelled.end(), task.task_id()) != cancelled.end()) {
        continue;
      }
      v1::TaskResult result;
      const bool bad = task.commit_index() >= culprit;
      result.set_outcome(bad ? v1::TASK_OUTCOME_FAILED : v1::TASK_OUTCOME_PASSED);
      result.add_runs()->set_exit_code(bad ? 1 : 0);
      for (const std::string& id : job.OnTaskFinished(task.task_id(), result, now)) {
        cancelled.push_back(id);
      }
    }
  }
  const v1::JobStatus& status = job.status();
  ASSERT_EQ(status.status(), v1::OUTCOME_CULPRIT_FOUND) << status.error();
  EXPECT_EQ(status.culprit().index(), culprit);
  EXPECT_GT(status.culprit_probability(), 0.99);
}

}  // namespace
}  // namespace kbisect
