// Copyright 2026 The kbisect Authors.
#include "coordinator/job/bisect_job.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "report/event_words.h"
#include "tests/unit/coordinator/bisect_job_testing.h"

namespace kbisect {
namespace {

using ::testing::HasSubstr;

using ::kbisect::bisect_job_testing::ConfirmationPairs;
using ::kbisect::bisect_job_testing::Describe;
using ::kbisect::bisect_job_testing::Failure;
using ::kbisect::bisect_job_testing::kNow;
using ::kbisect::bisect_job_testing::MakeCommits;
using ::kbisect::bisect_job_testing::MakeSpec;
using ::kbisect::bisect_job_testing::ProbeRow;
using ::kbisect::bisect_job_testing::RunRounds;
using ::kbisect::bisect_job_testing::RunSequential;
using ::kbisect::bisect_job_testing::RunToEnd;
using ::kbisect::bisect_job_testing::RunWithSlowWorker;
using ::kbisect::bisect_job_testing::Samples;
using ::kbisect::bisect_job_testing::Simulation;
using ::kbisect::bisect_job_testing::StepAt;
using ::kbisect::bisect_job_testing::Take;
using ::kbisect::bisect_job_testing::WithSlowWorker;

TEST(BisectJobTest, SevenWorkersMeasureGoodBesideBadProbeAndCalibrateWithinTheRoundBound) {
  for (int culprit : {1, 333, 666, 1000}) {
    SCOPED_TRACE(absl::StrCat("culprit ", culprit));
    BisectJob job("job", MakeSpec(), MakeCommits(1000), kNow);
    std::vector<v1::Task> first = job.TakeTasks(7, kNow);
    int bad = 0;
    int good = 0;
    int probes = 0;
    for (const v1::Task& task : first) {
      bad += task.kind() == v1::PROBE_KIND_BASELINE_BAD;
      good += task.kind() == v1::PROBE_KIND_BASELINE_GOOD;
      probes += task.kind() == v1::PROBE_KIND_BISECT;
    }
    // w0 measures BAD, w1 GOOD beside it (the round bound has room: decision 43), the five
    // others probe.
    EXPECT_EQ(bad, 1);
    EXPECT_EQ(good, 1);
    EXPECT_EQ(probes, 5);
    Simulation sim;
    sim.rounds_of_tasks = 1;
    for (const v1::Task& task : first) {
      for (const std::string& id :
           job.OnTaskFinished(task.task_id(), StepAt(culprit)(task), kNow)) {
        sim.cancelled.insert(id);
      }
    }
    Simulation rest = RunToEnd(job, 7, StepAt(culprit));
    const v1::JobStatus& status = job.status();
    ASSERT_EQ(status.status(), v1::OUTCOME_CULPRIT_FOUND) << Describe(status);
    EXPECT_EQ(status.culprit().index(), culprit);
    EXPECT_EQ(status.baseline().good().worker(), "w0");
    EXPECT_EQ(status.baseline().bad().worker(), "w0");
    // Within ceil(log8 1000) = 4 probing rounds, and as many rounds of tasks in all (5 before
    // decision 43): GOOD measured beside BAD lets the search start after the first wave, w0's
    // own GOOD runs beside the second round, and the other calibrations fit in the slack of the
    // round bound. The reference is w0's GOOD again once measured (decision 27).
    EXPECT_LE(status.rounds(), BisectSearch::EstimateRounds(1000, 7));
    EXPECT_LE(sim.rounds_of_tasks + rest.rounds_of_tasks, BisectSearch::EstimateRounds(1000, 7))
        << Describe(status);
    std::set<std::string> calibrated;
    for (const v1::Probe& probe : status.probes()) {
      EXPECT_FALSE(probe.provisional()) << probe.probe_id();
      if (probe.kind() == v1::PROBE_KIND_BASELINE_GOOD) calibrated.insert(probe.worker());
    }
    for (const v1::Probe& probe : status.probes()) {
      if (probe.kind() == v1::PROBE_KIND_BISECT) {
        EXPECT_EQ(calibrated.count(probe.worker()), 1u) << probe.worker() << " never calibrated";
      }
    }
  }
}

TEST(BisectJobTest, NewPointsGoToTheWorkerWhoseCheckoutIsNearest) {
  BisectJob job("job-1", MakeSpec(), MakeCommits(99), kNow);
  auto finish = [&](const std::map<std::string, v1::Task>& tasks) {
    for (const auto& [worker, task] : tasks) {
      const double v = task.commit_index() >= 50 ? 1.5 : 1.0;
      job.OnTaskFinished(task.task_id(), Samples({v, v, v}), kNow);
    }
  };
  finish(Take(job, {"a", "b", "c"}));  // BAD on a; b and c probe ahead.
  // The reference GOOD on a; b and c probe once more.
  std::map<std::string, v1::Task> first = Take(job, {"a", "b", "c"});
  ASSERT_EQ(first["b"].kind(), v1::PROBE_KIND_BISECT);
  ASSERT_EQ(first["c"].kind(), v1::PROBE_KIND_BISECT);
  finish(first);
  const int b_at = first["b"].commit_index();
  const int c_at = first["c"].commit_index();
  ASSERT_NE(b_at, c_at);
  // Whatever order the idle workers come in, each new point goes to the nearer checkout.
  std::map<std::string, v1::Task> second = Take(job, {"c", "b"});
  ASSERT_EQ(second.size(), 2u);
  const int lower = std::min(second["b"].commit_index(), second["c"].commit_index());
  const int upper = std::max(second["b"].commit_index(), second["c"].commit_index());
  EXPECT_EQ(second[b_at < c_at ? "b" : "c"].commit_index(), lower);
  EXPECT_EQ(second[b_at < c_at ? "c" : "b"].commit_index(), upper);
}

// A 100-commit job driven with a test clock: tasks are leased at `now`, and every result says
// commits from 50 on are BAD.
struct ClockedJob {
  std::map<std::string, v1::Task> Take(const std::vector<std::string>& workers) {
    std::map<std::string, v1::Task> out;
    for (BisectJob::Assignment& a : job.TakeTasks(workers, now)) {
      job.OnTaskStarted(a.task.task_id(), a.worker, 1, now);
      out[a.worker] = a.task;
    }
    return out;
  }
  void Finish(const v1::Task& task) {
    const double v = task.commit_index() >= 50 ? 1.5 : 1.0;
    job.OnTaskFinished(task.task_id(), Samples({v, v, v}), now);
  }
  // Round 1 (BAD on a, b and c probe ahead) takes `first` seconds; then a measures the
  // reference GOOD while b and c probe again, and after 10 s more a's GOOD and b's probe report.
  // c's probe is still running.
  void RunUntilOneProbeRuns(absl::Duration first) {
    std::map<std::string, v1::Task> round1 = Take({"a", "b", "c"});
    now += first;
    for (const auto& [worker, task] : round1) Finish(task);
    std::map<std::string, v1::Task> round2 = Take({"a", "b", "c"});
    ASSERT_EQ(round2["a"].kind(), v1::PROBE_KIND_BASELINE_GOOD);
    ASSERT_EQ(round2["b"].kind(), v1::PROBE_KIND_BISECT);
    ASSERT_EQ(round2["c"].kind(), v1::PROBE_KIND_BISECT);
    now += absl::Seconds(10);
    Finish(round2["a"]);
    Finish(round2["b"]);
  }

  BisectJob job{"job-1", MakeSpec(), MakeCommits(100), kNow};
  absl::Time now = kNow;
};

TEST(BisectJobTest, IdleWorkersWaitForAResultThatIsDueAndNotForAStraggler) {
  ClockedJob clocked;
  clocked.RunUntilOneProbeRuns(absl::Seconds(10));  // Every measurement takes 10 s.
  // c's probe has run 10 s, the typical span: its result is due, so b waits for it...
  EXPECT_TRUE(clocked.Take({"a", "b"}).empty()) << "new points now would split the old interval";
  // ...and at 14 s (140% of the typical span), late, still: c's probe is of round 1, b's point
  // would be of round 2, and placed now it would leave more than the round bound (4 rounds for
  // 100 commits and 3 workers) can split; after c's verdict it is still of round 2.
  clocked.now += absl::Seconds(4);
  EXPECT_TRUE(clocked.Take({"b"}).empty()) << "a point placed now would cost a round";
  // But not forever: past 3x the typical span c's probe is a straggler (a hung benchmark holds
  // nobody), and b goes on.
  clocked.now += absl::Seconds(17);
  std::map<std::string, v1::Task> third = clocked.Take({"b"});
  ASSERT_EQ(third.size(), 1u);
  EXPECT_EQ(third["b"].kind(), v1::PROBE_KIND_BISECT);
}

TEST(BisectJobTest, AWorkersFirstSlowCheckoutDoesNotSetTheTypicalSpan) {
  ClockedJob clocked;
  // Each worker's first task writes a whole tree: 30 s. Later ones take 10 s.
  clocked.RunUntilOneProbeRuns(absl::Seconds(30));
  // c's probe has run 10 s, the typical span once the first checkouts are left out (with them
  // the median would be 30 s, and a and b would split the old interval now).
  EXPECT_TRUE(clocked.Take({"a", "b"}).empty());
}

TEST(BisectJobTest, FindsTheCulpritAtEveryPositionWithinTheRoundBound) {
  for (int workers : {1, 3, 7}) {
    for (int culprit = 1; culprit <= 40; ++culprit) {
      BisectJob job("job", MakeSpec(), MakeCommits(40), kNow);
      RunToEnd(job, workers, StepAt(culprit));
      const v1::JobStatus& status = job.status();
      ASSERT_EQ(status.status(), v1::OUTCOME_CULPRIT_FOUND) << status.error();
      EXPECT_EQ(status.culprit().index(), culprit) << "workers=" << workers;
      EXPECT_EQ(status.last_good().index(), culprit - 1);
      EXPECT_LE(status.rounds(), BisectSearch::EstimateRounds(40, workers) + 1)
          << "workers=" << workers << " culprit=" << culprit;
      EXPECT_NEAR(status.before(), 1.0, 1e-9);
      EXPECT_NEAR(status.after(), 1.5, 1e-9);
      EXPECT_NEAR(status.culprit_regression_pct(), 50.0, 1e-6);
      EXPECT_EQ(status.state(), v1::JOB_STATE_DONE);
    }
  }
}

TEST(BisectJobTest, ResultsBeforeBaselinesAreClassifiedWhenTheyArrive) {
  BisectJob job("job", MakeSpec(), MakeCommits(10), kNow);
  std::map<std::string, v1::Task> first = Take(job, {"a", "b"});
  ASSERT_EQ(first["a"].kind(), v1::PROBE_KIND_BASELINE_BAD);
  ASSERT_EQ(first["b"].kind(), v1::PROBE_KIND_BISECT);
  // b's probe finishes before a has measured BAD and GOOD: it waits for them.
  job.OnTaskFinished(first["b"].task_id(), Samples({1.5, 1.5, 1.5}), kNow);
  const int position = ProbeRow(job, first["b"].task_id());
  ASSERT_GE(position, 0);
  EXPECT_EQ(job.status().probes(position).verdict(), v1::VERDICT_UNSPECIFIED);
  job.OnTaskFinished(first["a"].task_id(), Samples({1.5, 1.5, 1.5}), kNow);  // a's BAD.
  EXPECT_EQ(job.status().probes(position).verdict(), v1::VERDICT_UNSPECIFIED) << "no GOOD yet";
  EXPECT_EQ(job.status().state(), v1::JOB_STATE_BASELINES);
  std::map<std::string, v1::Task> ref = Take(job, {"a"});
  ASSERT_EQ(ref["a"].kind(), v1::PROBE_KIND_BASELINE_GOOD);
  job.OnTaskFinished(ref["a"].task_id(), Samples({1.0, 1.0, 1.0}), kNow);
  EXPECT_EQ(job.status().state(), v1::JOB_STATE_BISECTING);
  EXPECT_EQ(job.status().probes(position).verdict(), v1::VERDICT_BAD);
  EXPECT_TRUE(job.status().probes(position).provisional()) << "b has not calibrated";
  EXPECT_EQ(job.status().first_bad_index(), first["b"].commit_index());
  EXPECT_EQ(job.status().baseline().good().median(), 1.0);
  EXPECT_EQ(job.status().baseline().bad().median(), 1.5);
  EXPECT_NEAR(job.status().regression_pct(), 50.0, 1e-9);
}

TEST(BisectJobTest, UselessProbesAreCancelled) {
  BisectJob job("job", MakeSpec(), MakeCommits(100), kNow);
  // a measures BAD while b, c and d probe ahead; then a measures the reference GOOD.
  std::map<std::string, v1::Task> probes = Take(job, {"a", "b", "c", "d"});
  ASSERT_EQ(probes["a"].kind(), v1::PROBE_KIND_BASELINE_BAD);
  job.OnTaskFinished(probes["a"].task_id(), Samples({2.0, 2.0, 2.0}), kNow);
  std::map<std::string, v1::Task> good = Take(job, {"a"});
  ASSERT_EQ(good["a"].kind(), v1::PROBE_KIND_BASELINE_GOOD);
  job.OnTaskFinished(good["a"].task_id(), Samples({1.0, 1.0, 1.0}), kNow);
  ASSERT_EQ(job.status().state(), v1::JOB_STATE_BISECTING);
  // Three probes across the interval on b, c, d: the lowest is BAD, the other two are useless
  // now.
  std::vector<std::pair<int, std::string>> by_index;
  for (const char* w : {"b", "c", "d"}) {
    ASSERT_EQ(probes[w].kind(), v1::PROBE_KIND_BISECT) << w;
    by_index.emplace_back(probes[w].commit_index(), w);
  }
  std::sort(by_index.begin(), by_index.end());
  std::vector<std::string> cancel =
      job.OnTaskFinished(probes[by_index[0].second].task_id(), Samples({2.0, 2.0, 2.0}), kNow);
  EXPECT_THAT(cancel, ::testing::UnorderedElementsAre(probes[by_index[1].second].task_id(),
                                                      probes[by_index[2].second].task_id()));
  EXPECT_EQ(job.status().progress().probes_cancelled(), 2);
  // A late result of a cancelled probe is ignored.
  EXPECT_TRUE(
      job.OnTaskFinished(probes[by_index[1].second].task_id(), Samples({1.0}), kNow).empty());
  EXPECT_EQ(job.status().first_bad_index(), by_index[0].first);
}

TEST(BisectJobTest, SwappedEndpointsStopWithAClearError) {
  BisectJob job("job", MakeSpec(), MakeCommits(20), kNow);
  RunToEnd(job, 2, StepAt(10, /*good=*/2.0, /*bad=*/1.0));
  EXPECT_EQ(job.status().status(), v1::OUTCOME_ERROR);
  EXPECT_THAT(job.status().error(), HasSubstr("swapped"));
  EXPECT_THAT(job.status().error(), HasSubstr("--allow-improvement"));
}

TEST(BisectJobTest, AllowImprovementBisectsTheImprovement) {
  v1::JobSpec spec = MakeSpec();
  spec.set_allow_improvement(true);
  BisectJob job("job", spec, MakeCommits(20), kNow);
  RunToEnd(job, 2, StepAt(13, /*good=*/2.0, /*bad=*/1.0));
  EXPECT_EQ(job.status().status(), v1::OUTCOME_CULPRIT_FOUND);
  EXPECT_EQ(job.status().culprit().index(), 13);
}

TEST(BisectJobTest, NoRegressionIsReportedAndNothingIsBlamed) {
  BisectJob job("job", MakeSpec(), MakeCommits(20), kNow);
  RunToEnd(job, 2, StepAt(10, 1.0, 1.002));
  EXPECT_EQ(job.status().status(), v1::OUTCOME_NO_REGRESSION);
  EXPECT_FALSE(job.status().has_culprit());
  EXPECT_EQ(job.status().cause(), v1::CAUSE_NOISE);
}

TEST(BisectJobTest, BaselineFailureIsAnErrorWithTheLogTail) {
  BisectJob job("job", MakeSpec(), MakeCommits(20), kNow);
  RunToEnd(job, 2, [](const v1::Task& task) {
    if (task.kind() == v1::PROBE_KIND_BASELINE_BAD) {
      return Failure(v1::TASK_OUTCOME_BUILD_FAILED, "build exited with code 2");
    }
    return Samples({1.0});
  });
  EXPECT_EQ(job.status().status(), v1::OUTCOME_ERROR);
  EXPECT_THAT(job.status().error(), HasSubstr("BAD"));
  EXPECT_THAT(job.status().error(), HasSubstr("build exited with code 2"));
  EXPECT_THAT(job.status().error(), HasSubstr("something broke"));
}

TEST(BisectJobTest, BuildFailuresNextToTheCulpritLeaveCandidates) {
  BisectJob job("job", MakeSpec(), MakeCommits(30), kNow);
  RunToEnd(job, 3, [](const v1::Task& task) {
    const int i = task.commit_index();
    if (i >= 12 && i <= 14) return Failure(v1::TASK_OUTCOME_BUILD_FAILED, "broken");
    return Samples({i >= 14 ? 2.0 : 1.0});
  });
  const v1::JobStatus& status = job.status();
  EXPECT_EQ(status.status(), v1::OUTCOME_CANDIDATES_FOUND);
  EXPECT_EQ(status.last_good().index(), 11);
  // 12, 13, 14 are skipped and 15 is the first measured bad commit.
  ASSERT_EQ(status.candidates_size(), 4);
  EXPECT_EQ(status.candidates(0), MakeCommits(30)[12].sha());
  EXPECT_EQ(status.candidates(3), MakeCommits(30)[15].sha());
  EXPECT_GE(status.progress().skips(), 3);
}

TEST(BisectJobTest, EverythingFailingIsInconclusive) {
  BisectJob job("job", MakeSpec(), MakeCommits(30), kNow);
  RunToEnd(job, 3, [](const v1::Task& task) {
    if (task.kind() == v1::PROBE_KIND_BISECT) {
      return Failure(v1::TASK_OUTCOME_BENCH_FAILED, "crash");
    }
    return Samples({task.commit_index() == 0 ? 1.0 : 2.0});
  });
  EXPECT_EQ(job.status().status(), v1::OUTCOME_INCONCLUSIVE);
  EXPECT_THAT(job.status().error(), HasSubstr("could not be tested"));
}

TEST(BisectJobTest, LostTasksAreRetriedThenSkipped) {
  BisectJob job("job", MakeSpec(), MakeCommits(4), kNow);
  std::map<std::string, v1::Task> calibrate = Take(job, {"a"});
  job.OnTaskFinished(calibrate["a"].task_id(), Samples({2, 2, 2}), kNow);
  std::map<std::string, v1::Task> good = Take(job, {"a"});
  job.OnTaskFinished(good["a"].task_id(), Samples({1, 1, 1}), kNow);
  std::map<std::string, v1::Task> first = Take(job, {"a"});
  ASSERT_EQ(first["a"].kind(), v1::PROBE_KIND_BISECT);
  const std::string probe = first["a"].task_id();
  for (int attempt = 1; attempt <= BisectJob::kMaxAttempts; ++attempt) {
    job.OnTaskStarted(probe, "a", attempt, kNow);
    job.OnTaskLost(probe, "worker died", kNow);
    if (attempt < BisectJob::kMaxAttempts) {
      std::vector<BisectJob::Assignment> retry = job.TakeTasks({"a"}, kNow);
      ASSERT_EQ(retry.size(), 1u);
      EXPECT_EQ(retry[0].task.task_id(), probe) << "the same task is handed out again";
    }
  }
  const v1::Probe& lost = job.status().probes(job.status().probes_size() - 1);
  EXPECT_EQ(lost.verdict(), v1::VERDICT_SKIP);
  EXPECT_THAT(lost.message(), HasSubstr("gave up after 3 attempts"));
}

TEST(BisectJobTest, CancelStopsEverything) {
  BisectJob job("job", MakeSpec(), MakeCommits(50), kNow);
  std::vector<v1::Task> tasks = job.TakeTasks(4, kNow);
  std::vector<std::string> cancel = job.Cancel("user pressed Ctrl-C", kNow);
  EXPECT_EQ(cancel.size(), 4u);
  EXPECT_EQ(job.status().state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(job.status().status(), v1::OUTCOME_CANCELLED);
  EXPECT_TRUE(job.TakeTasks(4, kNow).empty());
  std::vector<v1::JobEvent> events = job.TakeEvents();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().kind(), v1::JOB_EVENT_KIND_FINISHED);
}

TEST(BisectJobTest, ProgressLinesFollowTheSeedFormat) {
  BisectJob job("job", MakeSpec(), MakeCommits(16), kNow);
  RunToEnd(job, 1, StepAt(5));
  std::vector<std::string> steps;
  for (const v1::JobEvent& event : job.TakeEvents()) {
    if (event.kind() == v1::JOB_EVENT_KIND_PROBE_FINISHED) steps.push_back(event.message());
  }
  ASSERT_EQ(steps.size(), 4u);  // log2(16) probes with one worker.
  EXPECT_THAT(steps[0], ::testing::MatchesRegex(
                            R"(Step 1/[0-9]+: [0-9a-f]{7} metric=1\.5ms -> BAD \([0-9]+ commits )"
                            R"(left, 0 probes in flight\))"));
}

TEST(BisectJobTest, MaxWorkersCapsTheTasksInFlight) {
  v1::JobSpec spec = MakeSpec();
  spec.set_max_workers(2);
  BisectJob job("job", spec, MakeCommits(100), kNow);
  EXPECT_EQ(job.TakeTasks(8, kNow).size(), 2u);
  EXPECT_TRUE(job.TakeTasks(8, kNow).empty());
}

TEST(BisectJobTest, BeforeTheBaselinesSettleEachWorkerProbesAheadTwice) {
  BisectJob job("job", MakeSpec(), MakeCommits(100), kNow);
  // Overlapping baselines: GOOD and BAD need more runs.
  auto noisy = [](const v1::Task& task) {
    std::vector<double> values;
    for (int i = 0; i < task.runs(); ++i) {
      const double base = task.commit_index() >= 50 ? 1.1 : 1.0;
      values.push_back(base + (i % 2 ? 0.08 : -0.08));
    }
    return Samples(values);
  };
  std::map<std::string, int> probes_ahead;
  std::vector<int> points;
  for (int step = 0; step < 20; ++step) {
    std::map<std::string, v1::Task> tasks = Take(job, {"a", "b", "c"});
    for (const auto& [worker, task] : tasks) {
      if (task.kind() == v1::PROBE_KIND_BISECT) {
        ++probes_ahead[worker];
        points.push_back(task.commit_index());
      }
      job.OnTaskFinished(task.task_id(), noisy(task), kNow);
    }
    if (job.status().state() == v1::JOB_STATE_BISECTING) break;
  }
  ASSERT_EQ(job.status().state(), v1::JOB_STATE_BISECTING) << Describe(job.status());
  EXPECT_GT(job.status().baseline().good().samples_size(), 3) << "the baselines took more runs";
  // a measures the baselines; b and c probe ahead twice each, no more, while it does.
  EXPECT_EQ(probes_ahead.count("a"), 0u);
  EXPECT_EQ(probes_ahead["b"], BisectJob::kProbesAheadOfBaselines);
  EXPECT_EQ(probes_ahead["c"], BisectJob::kProbesAheadOfBaselines);
  // The first wave's two points are two of an even split in three (25, 75): whichever worker is
  // free first completes it in the same round, so a slow second wave costs no round (decision
  // 138). The second wave's points go into the widest gap.
  ASSERT_EQ(points.size(), 4u);
  EXPECT_NEAR(points[0], 25, 1);
  EXPECT_NEAR(points[1], 75, 1);
  std::sort(points.begin(), points.end());
  int widest = points[0];
  for (int i = 1; i < 4; ++i) widest = std::max(widest, points[i] - points[i - 1]);
  widest = std::max(widest, 100 - points[3]);
  EXPECT_LE(widest, 26) << "no piece wider than the first wave's";
}

TEST(BisectJobTest, NoisyProbesNearTheThresholdGetMoreRuns) {
  // GOOD 1.0, BAD 1.1 with +-3% noise: a commit at the culprit is 1.1, before it 1.0. Three
  // samples cannot separate them reliably from the threshold 1.03, so runs double.
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0, 0.03);
  BisectJob job("job", MakeSpec(), MakeCommits(32), kNow);
  RunSequential(job, [&](const v1::Task& task) {
    std::vector<double> values;
    for (int i = 0; i < task.runs(); ++i) {
      values.push_back((task.commit_index() >= 20 ? 1.1 : 1.0) * (1 + noise(rng)));
    }
    return Samples(values);
  });
  ASSERT_EQ(job.status().status(), v1::OUTCOME_CULPRIT_FOUND) << job.status().error();
  EXPECT_EQ(job.status().culprit().index(), 20);
  int extended = 0;
  for (const v1::Probe& probe : job.status().probes()) {
    if (probe.samples_size() > 3) ++extended;
    EXPECT_LE(probe.samples_size(), 30);
  }
  EXPECT_GT(extended, 0) << "noisy probes must have been re-measured";
  EXPECT_GT(job.status().bench_runs(), 3 * (int)job.status().probes_size() / 2);
}

TEST(BisectJobTest, IndistinguishableProbeBecomesAmbiguousAndIsTreatedLikeASkip) {
  v1::JobSpec spec = MakeSpec();
  spec.set_max_runs(6);
  // With the confidence stop (the default) an ambiguous probe is taken as the side the posterior
  // puts it on (confidence_test); without it, it is a skip.
  spec.set_confidence_off(true);
  BisectJob job("job", spec, MakeCommits(2), kNow);
  // Commit 1 flips between the GOOD and the BAD value (bimodal): never decidable.
  int flip = 0;
  RunSequential(
      job,
      [&](const v1::Task& task) {
        std::vector<double> values;
        for (int i = 0; i < task.runs(); ++i) {
          const int k = task.commit_index();
          values.push_back(k == 0   ? 1.0 + 0.01 * i
                           : k == 2 ? 2.0 + 0.01 * i
                                    : (flip++ % 2 ? 2.0 : 1.0));
        }
        return Samples(values);
      },
      1);
  const v1::JobStatus& status = job.status();
  const v1::Probe* middle = nullptr;
  for (const v1::Probe& probe : status.probes()) {
    if (probe.index() == 1) middle = &probe;
  }
  ASSERT_NE(middle, nullptr);
  EXPECT_EQ(middle->verdict(), v1::VERDICT_AMBIGUOUS);
  EXPECT_EQ(middle->samples_size(), 6);
  EXPECT_THAT(middle->message(), HasSubstr("not distinguishable"));
  EXPECT_EQ(status.status(), v1::OUTCOME_CANDIDATES_FOUND);
  EXPECT_EQ(status.candidates_size(), 2);
}

TEST(BisectJobTest, PassFailModeUsesExitCodes) {
  v1::JobSpec spec = MakeSpec();
  spec.mutable_metric()->set_kind(v1::METRIC_KIND_EXIT_CODE);
  BisectJob job("job", spec, MakeCommits(50), kNow);
  RunToEnd(job, 3, [](const v1::Task& task) {
    v1::TaskResult result;
    result.set_outcome(task.commit_index() >= 17 ? v1::TASK_OUTCOME_FAILED
                                                 : v1::TASK_OUTCOME_PASSED);
    result.add_runs()->set_exit_code(task.commit_index() >= 17 ? 1 : 0);
    return result;
  });
  EXPECT_EQ(job.status().status(), v1::OUTCOME_CULPRIT_FOUND) << job.status().error();
  EXPECT_EQ(job.status().culprit().index(), 17);
  EXPECT_EQ(job.status().spec().runs_per_commit(), 1);
}

TEST(BisectJobTest, PassFailModeRefusesAFailingGood) {
  v1::JobSpec spec = MakeSpec();
  spec.mutable_metric()->set_kind(v1::METRIC_KIND_EXIT_CODE);
  BisectJob job("job", spec, MakeCommits(10), kNow);
  RunToEnd(job, 2, [](const v1::Task&) {
    v1::TaskResult result;
    result.set_outcome(v1::TASK_OUTCOME_FAILED);
    return result;
  });
  EXPECT_EQ(job.status().status(), v1::OUTCOME_ERROR);
  EXPECT_THAT(job.status().error(), HasSubstr("already fails at GOOD"));
}

TEST(BisectJobTest, ASmallStepAmongSeveralIsFlagged) {
  // Two steps: +0.2 at 10 and +0.8 at 30. The threshold rule finds the big one; it explains
  // 80%: fine. With the steps swapped (+0.8 then +0.2) it still finds the big one first.
  BisectJob job("job", MakeSpec(), MakeCommits(40), kNow);
  RunToEnd(job, 3, [](const v1::Task& task) {
    const int k = task.commit_index();
    const double v = 1.0 + (k >= 10 ? 0.45 : 0) + (k >= 30 ? 0.55 : 0);
    return Samples({v, v, v});
  });
  ASSERT_EQ(job.status().status(), v1::OUTCOME_CULPRIT_FOUND);
  EXPECT_EQ(job.status().culprit().index(), 10);
  EXPECT_TRUE(job.status().multiple_steps());
  ASSERT_EQ(job.status().culprits_size(), 1);
  EXPECT_NEAR(job.status().culprits(0).share_of_total(), 0.45, 1e-9);
  EXPECT_THAT(job.status().warnings(), ::testing::Contains(HasSubstr("several steps")));
  // Each warning is in the status as its fact and as that fact's words, in the same order.
  ASSERT_EQ(job.status().warnings_size(), job.status().warning_facts_size());
  for (int i = 0; i < job.status().warnings_size(); ++i) {
    EXPECT_EQ(job.status().warnings(i), WarningWords(job.status().warning_facts(i)));
  }
}

TEST(BisectJobTest, NoisyButRealBaselinesAreReMeasuredBeforeJudging) {
  // 3% apart with 2% noise: three runs each overlap; more runs settle it.
  std::mt19937_64 rng(11);
  std::normal_distribution<double> noise(0, 0.02);
  BisectJob job("job", MakeSpec(), MakeCommits(8), kNow);
  RunSequential(job, [&](const v1::Task& task) {
    std::vector<double> values;
    for (int i = 0; i < task.runs(); ++i) {
      values.push_back((task.commit_index() >= 5 ? 1.03 : 1.0) * (1 + noise(rng)));
    }
    return Samples(values);
  });
  EXPECT_GT(job.status().baseline().good().samples_size(), 3);
  EXPECT_THAT(job.status().warnings(), ::testing::Contains(HasSubstr("may be noise")));
}

// Answers every task like RunToEnd, and confirmation tasks with `step` between the pair.
void RunWithConfirmation(BisectJob& job, int culprit, double step) {
  for (int guard = 0; guard < 1000 && !job.finished(); ++guard) {
    std::vector<v1::Task> tasks = job.TakeTasks(2, kNow);
    if (tasks.empty()) break;
    for (const v1::Task& task : tasks) {
      if (task.kind() == v1::PROBE_KIND_CONFIRM) {
        job.OnTaskFinished(task.task_id(), ConfirmationPairs(task, step), kNow);
        continue;
      }
      const double v = task.commit_index() >= culprit ? 1.5 : 1.0;
      job.OnTaskFinished(task.task_id(), Samples({v, v * 1.001, v * 0.999}), kNow);
    }
  }
}

TEST(BisectJobTest, ConfirmationReproducesTheStepWithAConfidenceInterval) {
  v1::JobSpec spec = MakeSpec();
  spec.set_confirm(true);
  BisectJob job("job", spec, MakeCommits(30), kNow);
  RunWithConfirmation(job, 12, 1.5);
  const v1::JobStatus& status = job.status();
  ASSERT_EQ(status.status(), v1::OUTCOME_CULPRIT_FOUND) << status.error();
  EXPECT_EQ(status.culprit().index(), 12);
  EXPECT_TRUE(status.confirmation().confirmed());
  EXPECT_NEAR(status.confirmation().ratio(), 1.5, 0.02);
  EXPECT_GT(status.confirmation().ci_low(), 1.0);
  // Sized by the evidence: 0.1% noise against a 50% step needs the user's floor of 3 pairs; the
  // search's own samples of the two commits count where one worker measured both.
  EXPECT_GE(status.confirmation().fresh_pairs() + status.confirmation().reused_pairs(), 3)
      << Describe(status);
  EXPECT_EQ(status.confirmation().culprit_samples_size(), status.confirmation().fresh_pairs());
  EXPECT_GE(status.confirmation().sets_size(), 1);
  EXPECT_NEAR(status.culprit_regression_pct(), 50, 2);
}

TEST(BisectJobTest, AStepThatDoesNotReproduceIsNotBlamed) {
  v1::JobSpec spec = MakeSpec();
  spec.set_confirm(true);
  BisectJob job("job", spec, MakeCommits(30), kNow);
  RunWithConfirmation(job, 12, 1.0);
  const v1::JobStatus& status = job.status();
  EXPECT_EQ(status.status(), v1::OUTCOME_INCONCLUSIVE);
  EXPECT_FALSE(status.has_culprit());
  EXPECT_FALSE(status.confirmation().confirmed());
  EXPECT_THAT(status.error(), HasSubstr("did not reproduce"));
}

TEST(BisectJobTest, AMergeCulpritIsNamedWithHowToBisectItsBranch) {
  std::vector<v1::CommitRef> commits = MakeCommits(20);
  commits[13].set_is_merge(true);
  BisectJob job("job", MakeSpec(), commits, kNow);
  RunToEnd(job, 2, StepAt(13));
  ASSERT_EQ(job.status().status(), v1::OUTCOME_CULPRIT_FOUND);
  EXPECT_TRUE(job.status().culprit().is_merge());
  EXPECT_THAT(job.status().warnings(),
              ::testing::Contains(
                  ::testing::AllOf(HasSubstr("merge commit"), HasSubstr("git merge-base"))));
}

}  // namespace
}  // namespace kbisect

namespace kbisect {
namespace {

TEST(BisectJobTest, ProgressEstimatesCountTheJobsWorkers) {
  // 1,000 commits on 7 workers take 4 rounds (8^4 >= 1,000), not git bisect's 10, and the step
  // counter's total stays within what 7 workers need.
  BisectJob job("job-1", MakeSpec(), MakeCommits(1000), kNow);
  std::vector<int> estimated_rounds;
  std::vector<int> step_totals;
  for (int guard = 0; guard < 200 && !job.finished(); ++guard) {
    std::vector<v1::Task> tasks = job.TakeTasks(7, kNow);
    if (tasks.empty()) break;
    estimated_rounds.push_back(job.status().progress().estimated_rounds());
    for (const v1::Task& task : tasks) {
      const double v = task.commit_index() >= 617 ? 1.5 : 1.0;
      job.OnTaskFinished(task.task_id(), Samples({v, v * 1.001, v * 0.999}), kNow);
    }
    for (const v1::JobEvent& event : job.TakeEvents()) {
      if (event.kind() != v1::JOB_EVENT_KIND_PROBE_FINISHED) continue;
      int step = 0;
      int total = 0;
      ASSERT_EQ(std::sscanf(event.message().c_str(), "Step %d/%d", &step, &total), 2)
          << event.message();
      EXPECT_LE(step, total) << event.message();
      step_totals.push_back(total);
    }
  }
  ASSERT_EQ(job.status().status(), v1::OUTCOME_CULPRIT_FOUND);
  EXPECT_EQ(job.status().culprit().index(), 617);
  ASSERT_FALSE(estimated_rounds.empty());
  // From the first dispatch on, 7 workers take part: at most ceil(log8 1000) = 4 rounds, never
  // git bisect's ceil(log2 1000) = 10, and the estimate only shrinks.
  EXPECT_EQ(estimated_rounds.front(), 4);
  for (size_t i = 1; i < estimated_rounds.size(); ++i) {
    EXPECT_LE(estimated_rounds[i], estimated_rounds[i - 1]) << i;
  }
  // The step total is about the probes this job runs: never more than twice, never under half.
  ASSERT_FALSE(step_totals.empty());
  const int probes = static_cast<int>(step_totals.size());
  for (int total : step_totals) {
    EXPECT_LE(total, 2 * probes);
    EXPECT_GE(2 * total, probes);
  }
  EXPECT_EQ(job.status().progress().estimated_rounds(), 0);
}

// A benchmark that prints the same number on every run: `value_at(index)` at each commit, as
// many runs as the task asks for. Records the runs each bisect probe's task asked for.
std::function<v1::TaskResult(const v1::Task&)> Exact(std::function<double(int)> value_at,
                                                     std::vector<int>* probe_runs) {
  return [=](const v1::Task& task) {
    if (task.kind() == v1::PROBE_KIND_BISECT) probe_runs->push_back(task.runs());
    return Samples(std::vector<double>(task.runs(), value_at(task.commit_index())));
  };
}

TEST(BisectJobTest, ABenchmarkThatRepeatsExactlyTakesOneRunAProbe) {
  // Decision 229: GOOD's three runs all 100, BAD's all 130, so every probe after them takes one
  // run, and one run equal to a baseline's value decides its commit. The confirmation takes the
  // search's one pair at the culprit and its parent, measured on one worker.
  std::vector<int> probe_runs;
  v1::JobSpec spec = MakeSpec();
  spec.set_confirm(true);
  BisectJob job("job", spec, MakeCommits(64), kNow);
  RunSequential(job, Exact([](int i) { return i >= 37 ? 130.0 : 100.0; }, &probe_runs),
                /*workers=*/1);
  const v1::JobStatus& status = job.status();
  ASSERT_EQ(status.status(), v1::OUTCOME_CULPRIT_FOUND) << Describe(status);
  EXPECT_EQ(status.culprit().index(), 37);
  ASSERT_FALSE(probe_runs.empty());
  for (int runs : probe_runs) EXPECT_EQ(runs, 1) << Describe(status);
  for (const v1::Probe& probe : status.probes()) {
    EXPECT_NE(probe.kind(), v1::PROBE_KIND_CONFIRM) << Describe(status);
    if (probe.kind() != v1::PROBE_KIND_BISECT) continue;
    EXPECT_EQ(probe.samples_size(), 1);
  }
  EXPECT_TRUE(status.confirmation().confirmed()) << Describe(status);
  EXPECT_EQ(status.confirmation().reused_pairs(), 1);
  EXPECT_EQ(status.confirmation().fresh_pairs(), 0);
  bool said = false;
  for (const v1::JobEvent& event : job.TakeEvents()) {
    if (!event.has_measured_baseline()) continue;
    said = event.measured_baseline().one_run_per_probe();
    EXPECT_THAT(EventWords(event), HasSubstr("one run a probe"));
  }
  EXPECT_TRUE(said);
}

TEST(BisectJobTest, SevenWorkersThatMeasureGoodAlikeConfirmWithTheSearchsOwnProbes) {
  // Decision 232: `--runs 1` on seven workers, every run at a commit one value. The culprit and
  // its parent are measured by whichever workers take them; every worker measures GOOD as 100,
  // so those two probes confirm the step and no pair is measured after the search.
  v1::JobSpec spec = MakeSpec();
  spec.set_runs_per_commit(1);
  spec.set_confirm(true);
  BisectJob job("job", spec, MakeCommits(1000), kNow);
  const auto value = [](int index) { return index >= 666 ? 145.0 : 100.0; };
  RunRounds(job, {"w0", "w1", "w2", "w3", "w4", "w5", "w6"},
            [&](const std::string&, const v1::Task& task) {
              v1::TaskResult result = Samples(
                  std::vector<double>(std::max(1, task.runs()), value(task.commit_index())));
              if (task.kind() == v1::PROBE_KIND_CONFIRM) {
                for (int i = 0; i < result.samples_size(); ++i) {
                  result.add_paired_samples(value(task.commit_index() - 1));
                }
              }
              return result;
            });
  const v1::JobStatus& status = job.status();
  ASSERT_EQ(status.status(), v1::OUTCOME_CULPRIT_FOUND) << Describe(status);
  EXPECT_EQ(status.culprit().index(), 666);
  EXPECT_TRUE(status.confirmation().confirmed()) << Describe(status);
  EXPECT_EQ(status.confirmation().fresh_pairs(), 0) << Describe(status);
  EXPECT_EQ(status.confirmation().reused_pairs(), 1) << Describe(status);
  ASSERT_EQ(status.confirmation().sets_size(), 1);
  const v1::ConfirmationPairs& set = status.confirmation().sets(0);
  EXPECT_NE(set.culprit_worker(), set.worker()) << Describe(status);
}

// The spec of `--runs 3`, given on the command line, or left unset for the default's 3.
v1::JobSpec ThreeRuns(bool given) {
  v1::JobSpec spec = MakeSpec();
  spec.set_runs_per_commit(given ? 3 : 0);
  return spec;
}

TEST(BisectJobTest, GivenRunsAreTakenAtEveryProbeEvenWhenTheBenchmarkRepeatsExactly) {
  std::vector<int> probe_runs;
  BisectJob job("job", ThreeRuns(/*given=*/true), MakeCommits(64), kNow);
  RunSequential(job, Exact([](int i) { return i >= 37 ? 130.0 : 100.0; }, &probe_runs), 1);
  ASSERT_EQ(job.status().culprit().index(), 37) << Describe(job.status());
  ASSERT_FALSE(probe_runs.empty());
  for (int runs : probe_runs) EXPECT_EQ(runs, 3);
}

TEST(BisectJobTest, ARunThatMatchesNeitherBaselineIsMeasuredAsOftenAsRunsSays) {
  // A partial step at 20 (120, between 100 and 130) and the full one at 37: the one run at a
  // commit from 20 to 36 matches neither baseline, so that probe runs three times in all before
  // it is judged; every probe before it takes one run.
  std::vector<int> probe_runs;
  BisectJob job("job", MakeSpec(), MakeCommits(64), kNow);
  RunSequential(
      job, Exact([](int i) { return i >= 37   ? 130.0
                                    : i >= 20 ? 120.0
                                              : 100.0; }, &probe_runs), 1);
  const v1::JobStatus& status = job.status();
  ASSERT_EQ(status.status(), v1::OUTCOME_CULPRIT_FOUND) << Describe(status);
  ASSERT_GE(status.probes_size(), 3);
  int partial = 0;
  for (const v1::Probe& probe : status.probes()) {
    if (probe.kind() != v1::PROBE_KIND_BISECT) continue;
    if (probe.index() >= 20 && probe.index() < 37) {
      ++partial;
      EXPECT_EQ(probe.samples_size(), 3) << Describe(status);
    }
  }
  EXPECT_GT(partial, 0) << Describe(status);
  EXPECT_EQ(probe_runs.front(), 1) << "the first probe (32) is handed out with one run";
  EXPECT_EQ(probe_runs.back(), 3) << "a verdict on 120 brings back --runs a probe";
}

TEST(BisectJobTest, BaselinesWithAnySpreadKeepTheRunsAProbe) {
  // GOOD's runs 100, 100, 100.5: not a benchmark that repeats exactly.
  std::vector<int> probe_runs;
  BisectJob job("job", MakeSpec(), MakeCommits(64), kNow);
  RunSequential(
      job,
      [&](const v1::Task& task) {
        if (task.kind() == v1::PROBE_KIND_BISECT) probe_runs.push_back(task.runs());
        std::vector<double> values(task.runs(), task.commit_index() >= 37 ? 130.0 : 100.0);
        if (task.kind() == v1::PROBE_KIND_BASELINE_GOOD) values.back() += 0.5;
        return Samples(values);
      },
      1);
  ASSERT_EQ(job.status().culprit().index(), 37) << Describe(job.status());
  ASSERT_FALSE(probe_runs.empty());
  for (int runs : probe_runs) EXPECT_EQ(runs, 3);
}

TEST(BisectJobTest, ASmallStepOfABenchmarkThatRepeatsExactlyIsNotCalledNoise) {
  // 100 -> 101.7 on every run: the seed's "under 5%, it may be noise; consider more --runs" is
  // not said, since more runs give the same numbers. With --runs given it still is.
  for (bool runs_given : {false, true}) {
    std::vector<int> probe_runs;
    BisectJob job("job", ThreeRuns(runs_given), MakeCommits(64), kNow);
    RunSequential(job, Exact([](int i) { return i >= 37 ? 101.7 : 100.0; }, &probe_runs), 1);
    const v1::JobStatus& status = job.status();
    ASSERT_EQ(status.culprit().index(), 37) << Describe(status);
    bool small = false;
    for (const v1::JobWarning& warning : status.warning_facts()) {
      small = small || warning.has_small_regression();
    }
    EXPECT_EQ(small, runs_given);
  }
}

}  // namespace
}  // namespace kbisect
