// Copyright 2026 The kbisect Authors.
//
// A flaky pass/fail test (--exit-code --flaky): the verdict rules (flaky_verdicts.h) and the
// real BisectJob driven with a test that fails only sometimes at BAD commits and rarely at GOOD
// ones, as the worker runs it (a task's runs stop at its first failure).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/search/culprit_posterior.h"
#include "coordinator/job/bisect_job.h"
#include "coordinator/job/flaky_verdicts.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

CulpritPosterior Posterior(int n, const std::vector<CommitEvidence>& evidence) {
  absl::StatusOr<CulpritPosterior> posterior =
      ComputeCulpritPosterior(n, evidence, FlakyPosteriorOptions());
  EXPECT_TRUE(posterior.ok()) << posterior.status();
  return *posterior;
}

TEST(FlakyVerdictsTest, CountsPassesAndFailuresOfTheRuns) {
  v1::Probe probe;
  for (int code : {0, 0, 125, 1, 0, 200}) probe.add_runs()->set_exit_code(code);
  const RunCounts counts = CountRuns(probe);
  EXPECT_EQ(counts.passes, 3);
  EXPECT_EQ(counts.failures, 1) << "125 is untestable, 200 outside git bisect run's contract";
}

TEST(FlakyVerdictsTest, OnePassIsNotEnoughButManyAre) {
  // GOOD passed 8 runs, BAD failed 6 of 20; commit 10 of 20 passed once.
  std::vector<CommitEvidence> evidence = {{0, {}, 8, 0}, {20, {}, 14, 6}, {10, {}, 1, 0}};
  FlakyOptions options;
  FlakyJudgement once = JudgeFlakyCommit(Posterior(20, evidence), 10, 1, options);
  EXPECT_EQ(once.verdict, v1::VERDICT_UNSPECIFIED);
  EXPECT_GE(once.more_runs, options.min_runs);
  EXPECT_GT(once.bad_probability, 0.005);
  // Many more passes: GOOD.
  evidence.push_back({10, {}, 60, 0});
  FlakyJudgement many = JudgeFlakyCommit(Posterior(20, evidence), 10, 61, options);
  EXPECT_EQ(many.verdict, v1::VERDICT_GOOD);
  EXPECT_LE(many.bad_probability, 0.005);
}

TEST(FlakyVerdictsTest, FailuresMakeACommitBadAndAtMaxRunsTheLikelierSideSteers) {
  std::vector<CommitEvidence> evidence = {{0, {}, 30, 0}, {20, {}, 14, 6}, {10, {}, 4, 6}};
  FlakyOptions options;
  EXPECT_EQ(JudgeFlakyCommit(Posterior(20, evidence), 10, 7, options).verdict, v1::VERDICT_BAD);
  // One pass and no more runs allowed: neither side is sure, and the likelier one steers the
  // search (a skip would send it to neighbours as hard to judge); the end check weighs it.
  const std::vector<CommitEvidence> thin = {{0, {}, 4, 0}, {20, {}, 0, 1}, {10, {}, 1, 0}};
  options.max_runs = 1;
  const FlakyJudgement at_max = JudgeFlakyCommit(Posterior(20, thin), 10, 1, options);
  EXPECT_GT(at_max.bad_probability, 0.005);
  EXPECT_LT(at_max.bad_probability, 0.5);
  EXPECT_EQ(at_max.verdict, v1::VERDICT_GOOD);
  EXPECT_EQ(at_max.more_runs, 0);
  EXPECT_NE(at_max.reason.find("still unclear after 1 run, taken as GOOD"), std::string::npos)
      << at_max.reason;
}

TEST(FlakyVerdictsTest, GoodRunsUntilABadCommitWouldHaveFailedTenTimes) {
  // BAD failed 5 of 17 runs: p is about 6/19, so GOOD runs about 10 / p = 32 times.
  EXPECT_EQ(FlakyGoodRunsWanted({12, 5}, 4, 120), 32);
  // A rarely failing BAD: as many as allowed.
  EXPECT_EQ(FlakyGoodRunsWanted({95, 5}, 4, 120), 120);
  // A BAD failing every run: --runs is enough.
  EXPECT_EQ(FlakyGoodRunsWanted({0, 40}, 4, 120), 11);
  EXPECT_EQ(FlakyGoodRunsWanted({0, 400}, 12, 120), 12) << "at least --runs";
  EXPECT_EQ(FlakyGoodRunsWanted({10, 5}, 4, 8), 8) << "never past --max-runs";
}

TEST(FlakyVerdictsTest, TheCulpritCheckMeasuresTheDoubtfulBoundary) {
  // 9 passed 3 times (it may be BAD), 10 failed twice: the doubt is below 10, so 9 runs again.
  std::vector<CommitEvidence> evidence = {
      {0, {}, 40, 0}, {20, {}, 14, 6}, {9, {}, 3, 0}, {10, {}, 2, 2}};
  FlakyOptions options;
  const FlakyCulpritCheck check = CheckFlakyCulprit(Posterior(20, evidence), 9, 10, 3, 4, options);
  EXPECT_LT(check.probability, options.confidence);
  EXPECT_EQ(check.remeasure, 9);
  EXPECT_GE(check.more_runs, options.min_runs);
  // With 9 at max_runs the other boundary runs instead.
  const FlakyCulpritCheck other =
      CheckFlakyCulprit(Posterior(20, evidence), 9, 10, options.max_runs, 4, options);
  EXPECT_EQ(other.remeasure, 10);
  // Enough evidence on both sides: done.
  evidence.push_back({9, {}, 117, 0});
  evidence.push_back({10, {}, 10, 10});
  const FlakyCulpritCheck done =
      CheckFlakyCulprit(Posterior(20, evidence), 9, 10, 120, 24, options);
  EXPECT_GE(done.probability, options.confidence);
  EXPECT_EQ(done.remeasure, -1);
}

// The real job over n commits with a test failing with `bad_rate` from `culprit` on and
// `good_rate` below; synchronous rounds of `workers` tasks.
v1::JobStatus RunFlakyJob(int n, int culprit, double bad_rate, double good_rate, int workers,
                          uint64_t seed) {
  std::vector<v1::CommitRef> commits(n + 1);
  for (int i = 0; i <= n; ++i) {
    commits[i].set_sha(std::string(39, '0') + static_cast<char>('a' + i % 26) + std::to_string(i));
    commits[i].set_index(i);
  }
  v1::JobSpec spec;
  spec.set_repository("/sim");
  spec.set_good("g");
  spec.add_bench_command("test");
  spec.mutable_metric()->set_kind(v1::METRIC_KIND_EXIT_CODE);
  spec.set_flaky(true);
  BisectJob job("flaky", spec, commits, kNow);
  std::mt19937_64 rng(seed);
  for (int guard = 0; guard < 10000 && !job.finished(); ++guard) {
    const std::vector<v1::Task> tasks = job.TakeTasks(workers, kNow);
    if (tasks.empty()) break;
    std::vector<std::string> cancelled;
    for (const v1::Task& task : tasks) {
      if (std::find(cancelled.begin(), cancelled.end(), task.task_id()) != cancelled.end()) {
        continue;
      }
      std::bernoulli_distribution fails(task.commit_index() >= culprit ? bad_rate : good_rate);
      v1::TaskResult result;
      result.set_outcome(v1::TASK_OUTCOME_PASSED);
      for (int r = 0; r < task.runs(); ++r) {
        const bool failed = fails(rng);
        result.add_runs()->set_exit_code(failed ? 1 : 0);
        if (failed) {
          result.set_outcome(v1::TASK_OUTCOME_FAILED);
          break;
        }
      }
      for (const std::string& id : job.OnTaskFinished(task.task_id(), result, kNow)) {
        cancelled.push_back(id);
      }
    }
  }
  return job.status();
}

TEST(FlakyJobTest, FindsTheCulpritOfATestFailingAThirdOfTheTimeAtBad) {
  // The target cell: 30% at BAD, 1% at GOOD (accuracy_bench: 99-100% exact).
  int exact = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const int culprit = 1 + static_cast<int>(seed * 11 % 40);
    const v1::JobStatus status = RunFlakyJob(40, culprit, 0.3, 0.01, 2, seed);
    ASSERT_EQ(status.status(), v1::OUTCOME_CULPRIT_FOUND) << "seed " << seed << status.error();
    exact += status.culprit().index() == culprit ? 1 : 0;
    EXPECT_GE(status.culprit_probability(), 0.99) << "seed " << seed;
  }
  EXPECT_GE(exact, 19);
}

TEST(FlakyJobTest, GoodRunsEnoughToPinItsFailRateBeforeTheSearchStarts) {
  const v1::JobStatus status = RunFlakyJob(40, 20, 0.3, 0.0, 1, 3);
  ASSERT_EQ(status.status(), v1::OUTCOME_CULPRIT_FOUND) << status.error();
  int good_runs = 0;
  int bad_failures = 0;
  int bad_runs = 0;
  for (const v1::Probe& probe : status.probes()) {
    if (probe.kind() == v1::PROBE_KIND_BASELINE_GOOD) good_runs += probe.runs_size();
    if (probe.kind() == v1::PROBE_KIND_BASELINE_BAD) {
      bad_runs += probe.runs_size();
      for (const v1::RunRecord& run : probe.runs()) bad_failures += run.exit_code() != 0 ? 1 : 0;
    }
  }
  EXPECT_GE(bad_failures, 5);
  // About as many runs as a BAD commit takes to fail ten times at BAD's rate (30%), not --runs.
  EXPECT_GE(good_runs, 20);
  EXPECT_GT(bad_runs, 5);
}

TEST(FlakyJobTest, FindsTheCulpritOfATestFailingHalfTheTimeAtBad) {
  int exact = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const int culprit = 1 + static_cast<int>(seed * 7 % 40);
    const v1::JobStatus status = RunFlakyJob(40, culprit, 0.5, 0.01, 2, seed);
    ASSERT_EQ(status.status(), v1::OUTCOME_CULPRIT_FOUND) << "seed " << seed << status.error();
    exact += status.culprit().index() == culprit ? 1 : 0;
    EXPECT_GE(status.culprit_probability(), 0.99) << "seed " << seed;
    EXPECT_GT(status.bad_fail_rate(), status.good_fail_rate());
    EXPECT_GT(status.bench_runs(), 40) << "a flaky test runs each commit more than once";
  }
  EXPECT_GE(exact, 19);
}

TEST(FlakyJobTest, PlainExitCodeIsFooledWhereFlakyIsNot) {
  // Plain --exit-code believes one run: a BAD commit that passed by chance sends the search the
  // wrong way. Over these seeds it misses at least once; --flaky does not.
  int plain_misses = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    std::vector<v1::CommitRef> commits(31);
    for (int i = 0; i <= 30; ++i) {
      commits[i].set_sha(std::string(38, '1') + std::to_string(10 + i));
      commits[i].set_index(i);
    }
    v1::JobSpec spec;
    spec.set_repository("/sim");
    spec.set_good("g");
    spec.add_bench_command("test");
    spec.mutable_metric()->set_kind(v1::METRIC_KIND_EXIT_CODE);
    BisectJob job("plain", spec, commits, kNow);
    std::mt19937_64 rng(seed);
    for (int guard = 0; guard < 1000 && !job.finished(); ++guard) {
      const std::vector<v1::Task> tasks = job.TakeTasks(1, kNow);
      if (tasks.empty()) break;
      for (const v1::Task& task : tasks) {
        // BAD (the endpoint) always fails here, so the plain job starts; inside, 50%.
        const double rate = task.commit_index() == 30 ? 1.0 : task.commit_index() >= 12 ? 0.5 : 0;
        const bool failed = std::bernoulli_distribution(rate)(rng);
        v1::TaskResult result;
        result.set_outcome(failed ? v1::TASK_OUTCOME_FAILED : v1::TASK_OUTCOME_PASSED);
        result.add_runs()->set_exit_code(failed ? 1 : 0);
        job.OnTaskFinished(task.task_id(), result, kNow);
      }
    }
    const bool found =
        job.status().status() == v1::OUTCOME_CULPRIT_FOUND && job.status().culprit().index() == 12;
    plain_misses += found ? 0 : 1;
    const v1::JobStatus flaky = RunFlakyJob(30, 12, 0.5, 0.0, 1, seed);
    EXPECT_EQ(flaky.culprit().index(), 12) << "seed " << seed;
  }
  EXPECT_GE(plain_misses, 1);
}

TEST(FlakyJobTest, ABadThatNeverFailsIsNoRegressionAndAFailingGoodIsAnError) {
  const v1::JobStatus never = RunFlakyJob(10, 5, 0.0, 0.0, 1, 1);
  EXPECT_EQ(never.status(), v1::OUTCOME_NO_REGRESSION);
  EXPECT_NE(never.error().find("passed all 120 runs at BAD"), std::string::npos) << never.error();
  const v1::JobStatus broken = RunFlakyJob(10, 5, 0.9, 0.9, 1, 1);
  EXPECT_EQ(broken.status(), v1::OUTCOME_ERROR);
  EXPECT_NE(broken.error().find("fails at GOOD"), std::string::npos) << broken.error();
}

}  // namespace
}  // namespace kbisect
