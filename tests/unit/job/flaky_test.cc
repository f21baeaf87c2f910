// Copyright 2026 The kbisect Authors.
//
// A flaky pass/fail test (--exit-code --flaky): the verdict rules (flaky_verdicts.h) and the
// real BisectJob driven with a test that fails only sometimes at BAD commits and rarely at GOOD
// ones, as the worker runs it (a task's runs stop at its first failure).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
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

TEST(FlakySearchRulesTest, ThePosteriorIsKeptToTheIntervalAndTheLikeliestNamed) {
  const std::vector<CommitEvidence> evidence = {{0, {}, 8, 0}, {20, {}, 14, 6}, {10, {}, 1, 3}};
  const CulpritPosterior within = WithinInterval(Posterior(20, evidence), 4, 12);
  double inside = 0;
  for (int k = 0; k <= 20; ++k) {
    if (k <= 4 || k > 12) {
      EXPECT_EQ(within.probability[k], 0) << k;
    }
    inside += within.probability[k];
  }
  EXPECT_NEAR(inside, 1, 1e-9);
  EXPECT_GT(within.most_likely, 4);
  EXPECT_LE(within.most_likely, 10) << "10 failed 3 of 4 runs: the culprit is at or below it";
}

TEST(FlakySearchRulesTest, TheSearchEndsAtTheConfidenceOrTheBudget) {
  CulpritPosterior sure;
  sure.n = 4;
  sure.probability = {0, 0.001, 0.996, 0.002, 0.001};
  sure.most_likely = 2;
  EXPECT_EQ(NextFlakyStep(sure, 0.995, 10, 100, false).culprit, 2);
  EXPECT_FALSE(NextFlakyStep(sure, 0.995, 10, 100, false).short_of_confidence);
  CulpritPosterior unsure = sure;
  unsure.probability = {0, 0.1, 0.6, 0.2, 0.1};
  EXPECT_EQ(NextFlakyStep(unsure, 0.995, 10, 100, false).culprit, -1) << "it goes on";
  const FlakyStep spent = NextFlakyStep(unsure, 0.995, 100, 100, false);
  EXPECT_EQ(spent.culprit, 2);
  EXPECT_TRUE(spent.short_of_confidence);
  EXPECT_TRUE(NextFlakyStep(unsure, 0.995, 10, 100, /*nothing_left=*/true).short_of_confidence);
  // Twice max_runs per bit of the range.
  EXPECT_EQ(FlakyRunBudget(100, 120), 2 * 120 * 7);
  EXPECT_EQ(FlakyRunBudget(1, 120), 2 * 120);
}

TEST(FlakySearchRulesTest, ProbesGoInsideTheIntervalAndSkipCommitsAtMaxRuns) {
  const std::vector<CommitEvidence> evidence = {{0, {}, 8, 0}, {40, {}, 10, 6}};
  const CulpritPosterior posterior = WithinInterval(Posterior(40, evidence), 10, 30);
  const std::vector<int> next = NextFlakyProbes(posterior, {}, {}, 3, 10, 30, 120);
  ASSERT_EQ(next.size(), 3u);
  for (int index : next) {
    EXPECT_GE(index, 10) << "the interval's ends may run again: they pin the rates";
    EXPECT_LE(index, 30);
  }
  // The best commit has had max_runs runs: another one goes instead.
  std::map<int, int> runs = {{next[0], 120}};
  const std::vector<int> capped = NextFlakyProbes(posterior, {}, runs, 1, 10, 30, 120);
  ASSERT_EQ(capped.size(), 1u);
  EXPECT_NE(capped[0], next[0]);
}

// The job's probe table read by FlakyPoints: the baselines' runs and every bisect task that
// is not done (it will add runs) count; a commit that has had --max-runs runs, or is untestable,
// runs no more.
TEST(FlakySearchRulesTest, PointsCountTheRunsOfTheProbeTableAndTheTasksNotDone) {
  constexpr int kN = 40;
  JobFrame frame;
  frame.job_id = "job";
  frame.commit_count = kN;
  frame.spec.set_max_runs(6);
  frame.spec.set_runs_per_commit(3);
  frame.spec.set_flaky(true);
  frame.spec.mutable_metric()->set_kind(v1::METRIC_KIND_EXIT_CODE);
  std::vector<v1::CommitRef> commits(kN + 1);
  for (int i = 0; i <= kN; ++i) commits[i].set_sha("sha" + std::to_string(i));
  ProbeBook book(frame.job_id, frame.spec, &commits);
  Calibration calibration(&frame, &book.rows(), /*pass_fail=*/true);
  BisectSearch search(kN);
  auto finish = [&](v1::ProbeKind kind, int index, std::vector<int> exit_codes) {
    const std::string id = book.NewTask(kind, index, 0);
    book.HandOut(id, "w0");
    book.at(id).done = true;
    book.Deactivate(id);
    v1::Probe& probe = book.ProbeOf(book.at(id));
    probe.set_state(v1::PROBE_STATE_FINISHED);
    for (int code : exit_codes) probe.add_runs()->set_exit_code(code);
    return book.at(id).probe;
  };
  calibration.SetReference("w0", finish(v1::PROBE_KIND_BASELINE_GOOD, 0, {0, 0, 0, 0, 0, 0}));
  calibration.SetBadProbe(finish(v1::PROBE_KIND_BASELINE_BAD, kN, {0, 1, 0, 1, 1, 0}));
  ASSERT_TRUE(FlakyPosteriorWithin(kN, book.rows(), calibration, search).ok());

  const std::vector<int> first = FlakyPoints(kN, 6, calibration, book, search, 1);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_GT(first[0], 0);
  EXPECT_LT(first[0], kN);
  // That commit has had --max-runs runs, all passing: the next point is another.
  finish(v1::PROBE_KIND_BISECT, first[0], {0, 0, 0, 0, 0, 0});
  const std::vector<int> second = FlakyPoints(kN, 6, calibration, book, search, 1);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_NE(second[0], first[0]);
  // A queued task of --max-runs runs at that one counts too: both points go elsewhere.
  const std::string queued = book.NewTask(v1::PROBE_KIND_BISECT, second[0], 1);
  book.at(queued).task.set_runs(6);
  const std::vector<int> third = FlakyPoints(kN, 6, calibration, book, search, 2);
  EXPECT_FALSE(third.empty());
  for (int index : third) {
    EXPECT_NE(index, first[0]);
    EXPECT_NE(index, second[0]);
  }
  EXPECT_TRUE(FlakyPoints(kN, 6, calibration, book, search, 0).empty());
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

TEST(FlakyJobTest, TheSearchEndsOnThePosteriorAndEveryProbeGetsItsSide) {
  const v1::JobStatus status = RunFlakyJob(40, 20, 0.3, 0.0, 1, 3);
  ASSERT_EQ(status.status(), v1::OUTCOME_CULPRIT_FOUND) << status.error();
  EXPECT_EQ(status.culprit().index(), 20);
  EXPECT_GE(status.culprit_probability(), 0.995);
  int bad_failures = 0;
  int good_runs = 0;
  for (const v1::Probe& probe : status.probes()) {
    if (probe.kind() == v1::PROBE_KIND_BASELINE_GOOD) good_runs += probe.runs_size();
    if (probe.kind() == v1::PROBE_KIND_BASELINE_BAD) {
      for (const v1::RunRecord& run : probe.runs()) bad_failures += run.exit_code() != 0 ? 1 : 0;
    }
    if (probe.kind() != v1::PROBE_KIND_BISECT || probe.state() != v1::PROBE_STATE_FINISHED) {
      continue;
    }
    // No commit is judged on its own runs; once the search ends, each gets its side.
    EXPECT_EQ(probe.verdict(), probe.index() >= 20 ? v1::VERDICT_BAD : v1::VERDICT_GOOD)
        << probe.index();
    EXPECT_NE(probe.message().find("likeliest culprit"), std::string::npos) << probe.message();
  }
  // The endpoints show a regression and no broken GOOD: BAD until it fails once, GOOD --runs.
  EXPECT_EQ(bad_failures, 1);
  EXPECT_EQ(good_runs, 4);
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
    EXPECT_GT(status.bench_runs(), 12) << "more than git bisect's one run per step";
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
