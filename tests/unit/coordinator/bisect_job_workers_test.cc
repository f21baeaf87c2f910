// Copyright 2026 The kbisect Authors.
//
// BisectJob with its workers: who measures the reference baselines, calibrations and offsets,
// pooling, quarantine of an odd or broken GPU, A/A controls, and workers that leave.
#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/rpc/enum_label.h"
#include "coordinator/job/bisect_job.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/time_util.h"
#include "gtest/gtest.h"
#include "tests/unit/coordinator/bisect_job_testing.h"

namespace kbisect {
namespace {

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
using ::testing::HasSubstr;

TEST(BisectJobTest, BadsWorkerMeasuresTheReferenceGoodAndOtherVerdictsWaitForTheirCalibration) {
  BisectJob job("job-1", MakeSpec(), MakeCommits(100), kNow);
  const auto measure = StepAt(20);
  std::map<std::string, v1::Task> first = Take(job, {"a", "b", "c"});
  ASSERT_EQ(first.size(), 3u);
  // The first worker measures BAD. Nobody else measures GOOD: b and c probe ahead, at two of
  // the points of a three-way split (whichever worker is free first completes it; decision 139).
  EXPECT_EQ(first["a"].kind(), v1::PROBE_KIND_BASELINE_BAD);
  EXPECT_EQ(first["a"].commit_index(), 100);
  ASSERT_EQ(first["b"].kind(), v1::PROBE_KIND_BISECT);
  ASSERT_EQ(first["c"].kind(), v1::PROBE_KIND_BISECT);
  EXPECT_NEAR(first["b"].commit_index(), 25, 1);
  EXPECT_NEAR(first["c"].commit_index(), 75, 1);
  for (const auto& [worker, task] : first) job.OnTaskFinished(task.task_id(), measure(task), kNow);
  EXPECT_EQ(job.status().state(), v1::JOB_STATE_BASELINES);
  // a measures GOOD next, on the same GPU as BAD; b and c probe once more meanwhile.
  std::map<std::string, v1::Task> second = Take(job, {"a", "b", "c"});
  ASSERT_EQ(second.size(), 3u);
  EXPECT_EQ(second["a"].kind(), v1::PROBE_KIND_BASELINE_GOOD);
  EXPECT_EQ(second["a"].commit_index(), 0);
  EXPECT_EQ(second["a"].runs(), 3);
  EXPECT_EQ(second["a"].bench_command(0), "./bench.sh");
  EXPECT_EQ(second["b"].kind(), v1::PROBE_KIND_BISECT);
  EXPECT_EQ(second["c"].kind(), v1::PROBE_KIND_BISECT);
  job.OnTaskFinished(second["a"].task_id(), measure(second["a"]), kNow);
  // Both endpoints come from a's GPU: a is the reference.
  ASSERT_EQ(job.status().state(), v1::JOB_STATE_BISECTING) << Describe(job.status());
  EXPECT_EQ(job.status().baseline().good().worker(), "a");
  EXPECT_EQ(job.status().baseline().bad().worker(), "a");
  EXPECT_NEAR(job.status().regression_pct(), 50, 1);
  // b's first probe (BAD) narrows the search at once but is provisional: b has not measured
  // GOOD yet.
  const int b_row = ProbeRow(job, first["b"].task_id());
  ASSERT_GE(b_row, 0);
  EXPECT_EQ(job.status().probes(b_row).verdict(), v1::VERDICT_BAD);
  EXPECT_TRUE(job.status().probes(b_row).provisional());
  EXPECT_EQ(job.status().first_bad_index(), first["b"].commit_index());
  for (const char* worker : {"b", "c"}) {
    job.OnTaskFinished(second[worker].task_id(), measure(second[worker]), kNow);
  }
  // The job cannot end on provisional verdicts: b and c calibrate, and then they count.
  std::set<std::string> provisional_from;
  RunRounds(job, {"a", "b", "c"}, [&](const std::string& worker, const v1::Task& task) {
    for (const v1::JobEvent& event : job.TakeEvents()) {
      if (event.kind() == v1::JOB_EVENT_KIND_PROBE_FINISHED && event.probe().provisional()) {
        provisional_from.insert(event.probe().worker());
      }
    }
    return measure(task);
  });
  const v1::JobStatus& status = job.status();
  ASSERT_EQ(status.status(), v1::OUTCOME_CULPRIT_FOUND) << Describe(status);
  EXPECT_EQ(status.culprit().index(), 20);
  EXPECT_EQ(provisional_from.count("a"), 0u) << "the reference's verdicts count at once";
  std::map<std::string, int> calibrations;
  for (const v1::Probe& probe : status.probes()) {
    EXPECT_FALSE(probe.provisional()) << probe.probe_id();
    if (probe.kind() == v1::PROBE_KIND_BASELINE_GOOD) ++calibrations[probe.worker()];
  }
  // One GOOD each: a's is the reference GOOD, nobody measured another.
  EXPECT_EQ(calibrations, (std::map<std::string, int>{{"a", 1}, {"b", 1}, {"c", 1}}));
  EXPECT_EQ(status.probes(b_row).verdict(), v1::VERDICT_BAD) << "it counts as it stood";
  EXPECT_FALSE(status.probes(b_row).provisional());
}

TEST(BisectJobTest, ABadMeasuredOnAnOffsetWorkerIsComparedWithGoodFromTheSameGpu) {
  // w0 measures BAD and is 10% slower everywhere (a clear offset, under a third of the 50%
  // step). It measures the reference GOOD too, so the endpoint verdict compares two
  // measurements of one GPU and the offset cancels: BAD needs no rescaling. The other workers
  // are off the reference: each is judged against its own GOOD and the BAD scaled to it, and
  // the culprit's step is reported in the reference's frame.
  BisectJob job("job", MakeSpec(), MakeCommits(200), kNow);
  RunWithSlowWorker(job, {"w0", "w1", "w2", "w3"}, "w0", 1.1, StepAt(137));
  const v1::JobStatus& status = job.status();
  ASSERT_EQ(status.status(), v1::OUTCOME_CULPRIT_FOUND) << Describe(status);
  EXPECT_EQ(status.culprit().index(), 137);
  EXPECT_EQ(status.baseline().good().worker(), "w0");
  EXPECT_EQ(status.baseline().bad().worker(), "w0");
  EXPECT_NEAR(status.baseline().good().median(), 1.1, 0.01);
  EXPECT_NEAR(status.baseline().bad().median(), 1.65, 0.01);
  EXPECT_NEAR(status.regression_pct(), 50, 1);
  EXPECT_NEAR(status.before(), 1.1, 0.01) << "last good in the reference's frame";
  EXPECT_NEAR(status.after(), 1.65, 0.01);
  EXPECT_NEAR(status.culprit_regression_pct(), 50, 1);
  EXPECT_EQ(status.drift_events_size(), 0);
  int others = 0;
  for (const v1::JobWorker& worker : status.workers()) {
    EXPECT_FALSE(worker.quarantined()) << worker.worker();
    if (worker.worker() == "w0") continue;
    ++others;
    EXPECT_NEAR(worker.calibration_good(), 1.0, 0.01) << worker.worker();
    EXPECT_NEAR(worker.calibration_bad(), 1.5, 0.01) << worker.worker() << ": BAD in its frame";
  }
  EXPECT_EQ(others, 3);
  for (const v1::Probe& probe : status.probes()) {
    if (probe.kind() != v1::PROBE_KIND_BISECT || probe.state() != v1::PROBE_STATE_FINISHED ||
        probe.verdict() == v1::VERDICT_UNSPECIFIED) {
      continue;
    }
    EXPECT_EQ(probe.verdict(), probe.index() >= 137 ? v1::VERDICT_BAD : v1::VERDICT_GOOD)
        << probe.worker() << " at " << probe.index();
  }
  for (const v1::JobEvent& event : job.TakeEvents()) {
    EXPECT_THAT(event.message(), ::testing::Not(HasSubstr("which measured BAD")));
  }
}

TEST(BisectJobTest, ASlowReferenceIsQuarantinedOnceAThirdWorkerCalibratesAndBothBaselinesMove) {
  // w0 measures BAD and then the reference GOOD, and it is 30% slower everywhere (more than a
  // third of the 50% step). Two calibrations cannot tell which GPU is odd; the third can: w0 is
  // quarantined, BAD is measured again on a normal worker, which becomes the reference.
  BisectJob job("job", MakeSpec(), MakeCommits(60), kNow);
  RunWithSlowWorker(job, {"w0", "w1", "w2"}, "w0", 1.3, StepAt(41));
  const v1::JobStatus& status = job.status();
  ASSERT_EQ(status.status(), v1::OUTCOME_CULPRIT_FOUND) << Describe(status);
  EXPECT_EQ(status.culprit().index(), 41);
  ASSERT_EQ(status.drift_events_size(), 1);
  EXPECT_EQ(status.drift_events(0).worker(), "w0");
  EXPECT_EQ(EnumLabel(status.drift_events(0).kind()), "baseline_outlier");
  EXPECT_NE(status.baseline().good().worker(), "w0");
  EXPECT_EQ(status.baseline().bad().worker(), status.baseline().good().worker())
      << "the new reference measured both endpoints";
  EXPECT_NEAR(status.baseline().good().median(), 1.0, 0.01);
  EXPECT_NEAR(status.baseline().bad().median(), 1.5, 0.01);
  EXPECT_NEAR(status.regression_pct(), 50, 1);
  EXPECT_NEAR(status.before(), 1.0, 0.01);
  EXPECT_NEAR(status.after(), 1.5, 0.01);
  for (const v1::Probe& probe : status.probes()) {
    if (probe.worker() == "w0" && probe.kind() == v1::PROBE_KIND_BISECT) {
      EXPECT_NE(probe.state(), v1::PROBE_STATE_FINISHED) << "no verdict from the slow GPU";
    }
  }
  bool remeasured = false;
  for (const v1::JobEvent& event : job.TakeEvents()) {
    remeasured |= event.message().find("BAD is measured again") != std::string::npos;
  }
  EXPECT_TRUE(remeasured);
}

TEST(BisectJobTest, AnOutlierWorkerIsQuarantinedAndTheCulpritIsStillRight) {
  // Worker "w2" is 30% slower on every commit. Its GOOD calibration gives it away.
  BisectJob job("job", MakeSpec(), MakeCommits(60), kNow);
  RunWithSlowWorker(job, {"w0", "w1", "w2", "w3"}, "w2", 1.3, StepAt(23, 1.0, 1.45));
  const v1::JobStatus& status = job.status();
  ASSERT_EQ(status.status(), v1::OUTCOME_CULPRIT_FOUND) << status.error();
  EXPECT_EQ(status.culprit().index(), 23);
  ASSERT_EQ(status.drift_events_size(), 1);
  EXPECT_EQ(status.drift_events(0).worker(), "w2");
  EXPECT_EQ(EnumLabel(status.drift_events(0).kind()), "baseline_outlier");
  EXPECT_NEAR(status.drift_events(0).offset_fraction(), 0.3, 0.01);
  for (const v1::Probe& probe : status.probes()) {
    if (probe.worker() == "w2") {
      EXPECT_NE(probe.verdict(), v1::VERDICT_BAD);
    }
  }
  bool reported = false;
  for (const v1::JobWorker& worker : status.workers()) {
    if (worker.worker() != "w2") continue;
    reported = true;
    EXPECT_TRUE(worker.quarantined());
    EXPECT_NEAR(worker.calibration_good(), 1.3, 1e-9);
    EXPECT_THAT(worker.reason(), HasSubstr("third of the regression"));
  }
  EXPECT_TRUE(reported);
}

TEST(BisectJobTest, AWorkerThatCannotRunGoodIsQuarantinedNotTheJob) {
  // The benchmark fails at GOOD (commit 0) on `broken` and works everywhere else.
  auto run = [](const std::string& broken) {
    auto job = std::make_unique<BisectJob>("job", MakeSpec(), MakeCommits(20), kNow);
    RunRounds(*job, {"w0", "w1"}, [&](const std::string& worker, const v1::Task& task) {
      if (worker == broken && task.commit_index() == 0) {
        return Failure(v1::TASK_OUTCOME_BENCH_FAILED, "no GPU");
      }
      const double v = task.commit_index() >= 9 ? 2.0 : 1.0;
      return Samples({v, v, v});
    });
    return job;
  };
  {
    // w1 probes (ahead of the baselines and in the search) and owes a calibration: once the
    // search is done it tries GOOD, fails, and is quarantined; its verdicts are discarded and
    // w0 probes their commits again.
    std::unique_ptr<BisectJob> job = run("w1");
    const v1::JobStatus& status = job->status();
    ASSERT_EQ(status.status(), v1::OUTCOME_CULPRIT_FOUND) << Describe(status);
    EXPECT_EQ(status.culprit().index(), 9);
    ASSERT_EQ(status.drift_events_size(), 1);
    EXPECT_EQ(status.drift_events(0).worker(), "w1");
    EXPECT_EQ(EnumLabel(status.drift_events(0).kind()), "calibration_failed");
    int probed_by_w1 = 0;
    for (const v1::Probe& probe : status.probes()) {
      if (probe.worker() != "w1" || probe.kind() != v1::PROBE_KIND_BISECT) continue;
      ++probed_by_w1;
      EXPECT_EQ(probe.verdict(), v1::VERDICT_UNSPECIFIED) << "at " << probe.index();
    }
    EXPECT_GT(probed_by_w1, 0);
    EXPECT_EQ(status.baseline().good().worker(), "w0");
  }
  {
    // w0 measured BAD and cannot measure the reference GOOD after it: as w1 is there to take
    // over, w0 is quarantined, BAD is measured again on w1, and w1 measures GOOD as the new
    // reference.
    std::unique_ptr<BisectJob> job = run("w0");
    const v1::JobStatus& status = job->status();
    ASSERT_EQ(status.status(), v1::OUTCOME_CULPRIT_FOUND) << Describe(status);
    EXPECT_EQ(status.culprit().index(), 9);
    ASSERT_EQ(status.drift_events_size(), 1);
    EXPECT_EQ(status.drift_events(0).worker(), "w0");
    EXPECT_EQ(EnumLabel(status.drift_events(0).kind()), "calibration_failed");
    EXPECT_EQ(status.baseline().bad().worker(), "w1");
    EXPECT_EQ(status.baseline().good().worker(), "w1");
    EXPECT_NEAR(status.regression_pct(), 100, 1e-9);
  }
}

TEST(BisectJobTest, AControlThatMovedQuarantinesTheDriftingWorker) {
  // 4,000 commits, one worker, whose GPU becomes 40% slower after its 8th probe (the interval
  // still holds about 15 commits then, so the control is worth running).
  BisectJob job("job", MakeSpec(), MakeCommits(4000), kNow);
  int probes_done = 0;
  for (int guard = 0; guard < 500 && !job.finished(); ++guard) {
    std::vector<BisectJob::Assignment> tasks = job.TakeTasks({"w0"}, kNow);
    if (tasks.empty()) break;
    const auto& a = tasks[0];
    job.OnTaskStarted(a.task.task_id(), a.worker, 1, kNow);
    const double drift = probes_done >= 8 ? 1.4 : 1.0;
    if (a.task.kind() == v1::PROBE_KIND_BISECT) ++probes_done;
    const double v = (a.task.commit_index() >= 3000 ? 2.0 : 1.0) * drift;
    job.OnTaskFinished(a.task.task_id(), Samples({v, v, v}), kNow);
  }
  bool moved = false;
  for (const v1::DriftEvent& event : job.status().drift_events()) {
    moved |= event.kind() == v1::DRIFT_KIND_CONTROL_MOVED;
  }
  EXPECT_TRUE(moved);
  EXPECT_EQ(job.status().status(), v1::OUTCOME_ERROR);
  EXPECT_THAT(job.status().error(), HasSubstr("every worker was quarantined"));
}

TEST(BisectJobTest, NoControlWhenOnlyAProbeOrTwoAreLeft) {
  // 256 commits, one worker: after its 8th probe the interval holds one untested commit.
  BisectJob job("job", MakeSpec(), MakeCommits(256), kNow);
  RunToEnd(job, 1, StepAt(77));
  ASSERT_EQ(job.status().status(), v1::OUTCOME_CULPRIT_FOUND) << job.status().error();
  EXPECT_EQ(job.status().culprit().index(), 77);
  for (const v1::Probe& probe : job.status().probes()) {
    EXPECT_NE(probe.kind(), v1::PROBE_KIND_CONTROL) << "probe of " << probe.index();
  }
}

TEST(BisectJobTest, AWorkerThatAgreesWithTheReferenceJoinsThePoolWithoutSharpening) {
  // 5% noise, 10% step: the reference's baselines need many runs; the other workers' three
  // GOOD runs agree with them, join the pool and are not re-measured.
  std::mt19937_64 rng(21);
  std::normal_distribution<double> noise(0, 0.05);
  BisectJob job("job", MakeSpec(), MakeCommits(60), kNow);
  RunSequential(
      job,
      [&](const v1::Task& task) {
        std::vector<double> values;
        for (int i = 0; i < task.runs(); ++i) {
          values.push_back((task.commit_index() >= 37 ? 1.1 : 1.0) * (1 + noise(rng)));
        }
        return Samples(values);
      },
      4);
  const v1::JobStatus& status = job.status();
  ASSERT_EQ(status.status(), v1::OUTCOME_CULPRIT_FOUND) << status.error();
  EXPECT_EQ(status.culprit().index(), 37);
  EXPECT_GT(status.baseline().good().samples_size(), 6);
  EXPECT_EQ(status.drift_events_size(), 0);
  int calibrations = 0;
  for (const v1::Probe& probe : status.probes()) {
    if (probe.kind() != v1::PROBE_KIND_BASELINE_GOOD ||
        probe.worker() == status.baseline().good().worker()) {
      continue;
    }
    ++calibrations;
    EXPECT_EQ(probe.samples_size(), 3) << probe.worker() << " was re-measured";
  }
  EXPECT_EQ(calibrations, 3);
}

TEST(BisectJobTest, AWorkerWithAClearOffsetIsJudgedAgainstItsOwnGood) {
  // "w1" is 10% slower everywhere: a clear offset, but under a third of the 50% step. It is
  // not BAD's worker w0, which measures the reference GOOD too. Its first probes read near the
  // pool's threshold, so they wait for its calibration instead of taking more runs; from then on
  // its verdicts use its own GOOD (and BAD scaled to it), so its probes are still right.
  BisectJob job("job", MakeSpec(), MakeCommits(600), kNow);
  RunWithSlowWorker(job, {"w0", "w1", "w2"}, "w1", 1.1, StepAt(411));
  const v1::JobStatus& status = job.status();
  ASSERT_EQ(status.status(), v1::OUTCOME_CULPRIT_FOUND) << status.error();
  EXPECT_EQ(status.culprit().index(), 411);
  EXPECT_EQ(status.drift_events_size(), 0);
  int judged_by_w1 = 0;
  for (const v1::Probe& probe : status.probes()) {
    if (probe.worker() != "w1" || probe.kind() != v1::PROBE_KIND_BISECT ||
        probe.verdict() == v1::VERDICT_UNSPECIFIED) {
      continue;
    }
    ++judged_by_w1;
    EXPECT_EQ(probe.verdict(), probe.index() >= 411 ? v1::VERDICT_BAD : v1::VERDICT_GOOD)
        << "probe of " << probe.index();
    EXPECT_FALSE(probe.provisional());
  }
  EXPECT_GT(judged_by_w1, 0) << Describe(status);
}

TEST(BisectJobTest, AnUncalibratedWorkersProvisionalVerdictsAreDiscardedWhenItIsQuarantined) {
  // 1,000 commits on four workers: w2 and w3 probe in the first round, before they calibrate.
  // w3 is 30% slower (more than a third of the 50% step): once its calibration is compared
  // with three others it is quarantined, and every verdict it gave is discarded.
  BisectJob job("job", MakeSpec(), MakeCommits(1000), kNow);
  std::vector<std::string> provisional_from_w3;
  RunWithSlowWorker(job, {"w0", "w1", "w2", "w3"}, "w3", 1.3, [&](const v1::Task& task) {
    for (const v1::JobEvent& event : job.TakeEvents()) {
      if (event.has_probe() && event.probe().worker() == "w3" && event.probe().provisional()) {
        provisional_from_w3.push_back(event.probe().probe_id());
      }
    }
    return StepAt(666)(task);
  });
  const v1::JobStatus& status = job.status();
  ASSERT_EQ(status.status(), v1::OUTCOME_CULPRIT_FOUND) << status.error();
  EXPECT_EQ(status.culprit().index(), 666);
  ASSERT_EQ(status.drift_events_size(), 1);
  EXPECT_EQ(status.drift_events(0).worker(), "w3");
  EXPECT_FALSE(provisional_from_w3.empty()) << "w3 probed before it calibrated";
  for (const v1::Probe& probe : status.probes()) {
    if (probe.worker() != "w3" || probe.kind() != v1::PROBE_KIND_BISECT) continue;
    EXPECT_EQ(probe.verdict(), v1::VERDICT_UNSPECIFIED) << probe.probe_id();
    EXPECT_EQ(probe.state(), v1::PROBE_STATE_CANCELLED) << probe.probe_id();
  }
}

TEST(BisectJobTest, AWorkerThatLeavesBeforeCalibratingHasItsProvisionalVerdictsProbedAgain) {
  BisectJob job("job", MakeSpec(), MakeCommits(1000), kNow);
  std::map<std::string, v1::Task> first = Take(job, {"a", "b", "c", "d"});
  ASSERT_EQ(first["a"].kind(), v1::PROBE_KIND_BASELINE_BAD);
  for (const char* w : {"b", "c", "d"}) {
    ASSERT_EQ(first[w].kind(), v1::PROBE_KIND_BISECT) << w << " probes before it calibrates";
  }
  for (const auto& [worker, task] : first) {
    job.OnTaskFinished(task.task_id(), StepAt(500)(task), kNow);
  }
  // a measures the reference GOOD: the probes that waited for it are classified, provisionally.
  std::map<std::string, v1::Task> good = Take(job, {"a"});
  ASSERT_EQ(good["a"].kind(), v1::PROBE_KIND_BASELINE_GOOD);
  job.OnTaskFinished(good["a"].task_id(), StepAt(500)(good["a"]), kNow);
  ASSERT_EQ(job.status().state(), v1::JOB_STATE_BISECTING);
  // c's probe is the lowest BAD one.
  const int index = first["c"].commit_index();
  ASSERT_GT(index, 500);
  ASSERT_LT(first["b"].commit_index(), 500);
  EXPECT_EQ(job.status().first_bad_index(), index) << "the provisional verdict narrowed it";
  const int position = ProbeRow(job, first["c"].task_id());
  ASSERT_GE(position, 0);
  EXPECT_EQ(job.status().probes(position).verdict(), v1::VERDICT_BAD);
  EXPECT_TRUE(job.status().probes(position).provisional());
  job.OnWorkerGone("c", "closed its session", kNow);
  EXPECT_EQ(job.status().probes(position).state(), v1::PROBE_STATE_CANCELLED);
  EXPECT_EQ(job.status().probes(position).verdict(), v1::VERDICT_UNSPECIFIED);
  EXPECT_GT(job.status().first_bad_index(), index) << "the interval widened again";
  RunWithSlowWorker(job, {"a", "b", "d"}, "", 1.0, StepAt(500));
  const v1::JobStatus& status = job.status();
  ASSERT_EQ(status.status(), v1::OUTCOME_CULPRIT_FOUND) << Describe(status);
  EXPECT_EQ(status.culprit().index(), 500);
  for (const v1::Probe& probe : status.probes()) {
    EXPECT_FALSE(probe.provisional()) << probe.probe_id();
    if (probe.worker() == "c") {
      EXPECT_NE(probe.state(), v1::PROBE_STATE_FINISHED) << "c's measurements were discarded";
    }
  }
}

TEST(BisectJobTest, NoisyWorkersAreNotQuarantinedForThreeUnluckyRuns) {
  // 5% noise, 10% step, four identical workers: a third of the step is 3.3%, well inside what
  // three runs of GOOD scatter by. Over many seeded jobs nobody is quarantined.
  for (unsigned seed = 1; seed <= 25; ++seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> noise(0, 0.05);
    BisectJob job("job", MakeSpec(), MakeCommits(40), kNow);
    RunSequential(
        job,
        [&](const v1::Task& task) {
          std::vector<double> values;
          for (int i = 0; i < task.runs(); ++i) {
            values.push_back((task.commit_index() >= 13 ? 1.1 : 1.0) * (1 + noise(rng)));
          }
          return Samples(values);
        },
        4);
    EXPECT_EQ(job.status().drift_events_size(), 0) << "seed " << seed;
    EXPECT_EQ(job.status().status(), v1::OUTCOME_CULPRIT_FOUND) << "seed " << seed;
  }
}

TEST(BisectJobTest, AWorkerThatLeavesKeepsTheMeasurementsItsCalibrationCanJudge) {
  // w0 measured both baselines and is 30% slower: once the third worker calibrates, w0 is
  // quarantined, BAD is measured again and every verdict waits for it. w2 has calibrated and
  // leaves now: its measurements stay, and are judged once w1 has measured BAD again.
  BisectJob job("job", MakeSpec(), MakeCommits(60), kNow);
  const auto measure = WithSlowWorker("w0", 1.3, StepAt(41));
  RunRounds(job, {"w0", "w1", "w2"}, measure, [&] { return job.status().drift_events_size() > 0; });
  ASSERT_EQ(job.status().drift_events_size(), 1) << Describe(job.status());
  ASSERT_EQ(job.status().drift_events(0).worker(), "w0");
  ASSERT_EQ(job.status().state(), v1::JOB_STATE_BASELINES) << "BAD is measured again";
  std::vector<int> kept;
  for (int i = 0; i < job.status().probes_size(); ++i) {
    const v1::Probe& probe = job.status().probes(i);
    if (probe.worker() == "w2" && probe.kind() == v1::PROBE_KIND_BISECT &&
        probe.state() == v1::PROBE_STATE_FINISHED && probe.samples_size() > 0) {
      EXPECT_EQ(probe.verdict(), v1::VERDICT_UNSPECIFIED) << "it waits for the new BAD";
      kept.push_back(i);
    }
  }
  ASSERT_FALSE(kept.empty()) << Describe(job.status());
  job.OnWorkerGone("w2", "closed its session", kNow);
  for (int i : kept) EXPECT_EQ(job.status().probes(i).state(), v1::PROBE_STATE_FINISHED);
  RunRounds(job, {"w1"}, measure);
  const v1::JobStatus& status = job.status();
  ASSERT_EQ(status.status(), v1::OUTCOME_CULPRIT_FOUND) << Describe(status);
  EXPECT_EQ(status.culprit().index(), 41);
  EXPECT_EQ(status.baseline().bad().worker(), "w1");
  int judged = 0;
  for (int i : kept) {
    const v1::Probe& probe = status.probes(i);
    EXPECT_EQ(probe.state(), v1::PROBE_STATE_FINISHED);
    if (probe.verdict() == v1::VERDICT_UNSPECIFIED) continue;  // Outside the interval by then.
    ++judged;
    EXPECT_FALSE(probe.provisional());
    EXPECT_EQ(probe.verdict(), probe.index() >= 41 ? v1::VERDICT_BAD : v1::VERDICT_GOOD)
        << "at " << probe.index();
  }
  EXPECT_GT(judged, 0) << Describe(status);
}

// A confirmation task's answer (ConfirmationPairs with `step`); any other task's: 1.5 from
// `culprit` on, else 1.0.
v1::TaskResult AnswerWithConfirmation(const v1::Task& task, int culprit, double step) {
  const double wiggle[] = {1.0, 1.01, 0.99};
  if (task.kind() == v1::PROBE_KIND_CONFIRM) return ConfirmationPairs(task, step);
  const double v = task.commit_index() >= culprit ? 1.5 : 1.0;
  std::vector<double> values;
  for (int i = 0; i < std::max(1, task.runs()); ++i) values.push_back(v * wiggle[i % 3]);
  return Samples(values);
}

TEST(BisectJobTest, AConfirmationPairLostWithItsWorkerIsMeasuredAgainByAnother) {
  // fault_test under TSan: a worker that left while measuring the last confirmation pair had it
  // cancelled with its other tasks, and the job waited in CONFIRMING for ever.
  v1::JobSpec spec = MakeSpec();
  spec.set_confirm(true);
  BisectJob job("job", spec, MakeCommits(30), kNow);
  const std::vector<std::string> workers = {"a", "b", "c"};
  std::string lost;
  for (int guard = 0; guard < 200 && !job.finished() && lost.empty(); ++guard) {
    std::map<std::string, v1::Task> tasks = Take(job, workers);
    if (tasks.empty()) break;
    // One confirmation task is held back, on a worker other than the reference's, until every
    // other task is answered; then its worker leaves.
    std::string held;
    for (const auto& [worker, task] : tasks) {
      if (held.empty() && task.kind() == v1::PROBE_KIND_CONFIRM &&
          worker != job.status().baseline().bad().worker()) {
        held = worker;
      }
    }
    for (const auto& [worker, task] : tasks) {
      if (worker != held)
        job.OnTaskFinished(task.task_id(), AnswerWithConfirmation(task, 12, 1.5), kNow);
    }
    if (!held.empty()) {
      job.OnWorkerGone(held, "closed its session", kNow);
      lost = held;
    }
  }
  ASSERT_FALSE(lost.empty()) << "no confirmation task reached a worker other than the reference's";
  std::vector<std::string> others;
  for (const std::string& worker : workers) {
    if (worker != lost) others.push_back(worker);
  }
  for (int guard = 0; guard < 200 && !job.finished(); ++guard) {
    std::map<std::string, v1::Task> tasks = Take(job, others);
    if (tasks.empty()) break;
    for (const auto& [worker, task] : tasks) {
      job.OnTaskFinished(task.task_id(), AnswerWithConfirmation(task, 12, 1.5), kNow);
    }
  }
  const v1::JobStatus& status = job.status();
  ASSERT_EQ(status.status(), v1::OUTCOME_CULPRIT_FOUND) << Describe(status);
  EXPECT_EQ(status.culprit().index(), 12);
  EXPECT_TRUE(status.confirmation().confirmed());
}

TEST(BisectJobTest, ASmallHostsBuildSlotsCapTheTasksInFlight) {
  // Four workers on one host whose build pool runs one build at a time; builds take 10 s and
  // the benchmark 0.1 s (build_capacity.h): once a build is measured, one task at a time.
  v1::JobSpec spec = MakeSpec();
  spec.set_build_command("make -j2");
  BisectJob job("job-1", spec, MakeCommits(200), kNow);
  const auto step = StepAt(137);
  auto measured = [&](const std::string& worker, const v1::Task& task) {
    v1::TaskResult result = step(task);
    v1::TaskTimings* timings = result.mutable_timings();
    *timings->mutable_build() = google::protobuf::util::TimeUtil::SecondsToDuration(10);
    *timings->mutable_bench() = google::protobuf::util::TimeUtil::MillisecondsToDuration(100);
    timings->set_build_pool("host:/cache");
    timings->set_build_pool_slots(1);
    return result;
  };
  const std::vector<std::string> workers = {"a", "b", "c", "d"};
  size_t most_after_first_wave = 0;
  bool first_wave = true;
  for (int guard = 0; guard < 500 && !job.finished(); ++guard) {
    std::vector<BisectJob::Assignment> tasks = job.TakeTasks(workers, kNow);
    if (tasks.empty()) break;
    if (!first_wave) most_after_first_wave = std::max(most_after_first_wave, tasks.size());
    first_wave = false;
    for (const auto& a : tasks) job.OnTaskStarted(a.task.task_id(), a.worker, 1, kNow);
    std::set<std::string> cancelled;
    for (const auto& a : tasks) {
      if (cancelled.count(a.task.task_id()) > 0) continue;
      for (const std::string& id :
           job.OnTaskFinished(a.task.task_id(), measured(a.worker, a.task), kNow)) {
        cancelled.insert(id);
      }
    }
  }
  const v1::JobStatus& status = job.status();
  ASSERT_EQ(status.status(), v1::OUTCOME_CULPRIT_FOUND) << Describe(status);
  EXPECT_EQ(status.culprit().index(), 137);
  EXPECT_EQ(most_after_first_wave, 1u) << Describe(status);
}

TEST(BisectJobTest, WorkersThatAnnounceOneSmallHostGetTheFirstWaveItCanBuild) {
  // Four workers of one 2-core host (one build at a time, nothing measured yet): BAD and GOOD,
  // the builds git bisect makes first; not BAD, GOOD and points at a third and two thirds of the
  // range, which the host would build before the first verdict.
  v1::JobSpec spec = MakeSpec();
  spec.set_build_command("make -j2");
  BisectJob job("job-1", spec, MakeCommits(200), kNow);
  const std::vector<std::string> workers = {"a", "b", "c", "d"};
  std::map<std::string, BuildPool> pools;
  for (const std::string& worker : workers) pools[worker] = BuildPool{"host:/cache", 1};
  std::vector<BisectJob::Assignment> tasks = job.TakeTasks(workers, kNow, pools);
  std::vector<std::pair<v1::ProbeKind, int>> handed;
  for (const BisectJob::Assignment& a : tasks)
    handed.emplace_back(a.task.kind(), a.task.commit_index());
  EXPECT_THAT(handed,
              ::testing::UnorderedElementsAre(std::make_pair(v1::PROBE_KIND_BASELINE_BAD, 200),
                                              std::make_pair(v1::PROBE_KIND_BASELINE_GOOD, 0)));
  // The announcements are remembered: asked again (without them), nothing more is handed out.
  for (const auto& a : tasks) job.OnTaskStarted(a.task.task_id(), a.worker, 1, kNow);
  EXPECT_THAT(job.TakeTasks({"c", "d"}, kNow), ::testing::IsEmpty());
  // Without announcements every worker may be a host of its own: the whole first wave.
  BisectJob unknown("job-2", spec, MakeCommits(200), kNow);
  EXPECT_GE(unknown.TakeTasks(workers, kNow).size(), 4u);
  // A job that builds nothing is not held back by the hosts' build slots.
  BisectJob unbuilt("job-3", MakeSpec(), MakeCommits(200), kNow);
  EXPECT_GE(unbuilt.TakeTasks(workers, kNow, pools).size(), 4u);
}

TEST(BisectJobTest, TasksWithABuildCarryTheirBuildOrder) {
  // The first wave of seven workers: the baselines build first, then the points from the
  // interval's middle outwards (Task.build_order), so a host that builds one at a time builds
  // them in bisection order.
  v1::JobSpec spec = MakeSpec();
  spec.set_build_command("make -j2");
  BisectJob job("job-1", spec, MakeCommits(200), kNow);
  std::vector<BisectJob::Assignment> tasks =
      job.TakeTasks({"a", "b", "c", "d", "e", "f", "g"}, kNow);
  std::vector<std::pair<int, int>> points;  // (build order, distance from the middle)
  for (const BisectJob::Assignment& a : tasks) {
    if (a.task.kind() == v1::PROBE_KIND_BISECT) {
      EXPECT_GE(a.task.build_order(), 1);
      points.emplace_back(a.task.build_order(), std::abs(2 * a.task.commit_index() - 200));
    } else {
      EXPECT_EQ(a.task.build_order(), 0) << v1::ProbeKind_Name(a.task.kind());
    }
  }
  ASSERT_GE(points.size(), 2u);
  std::sort(points.begin(), points.end());
  for (size_t i = 1; i < points.size(); ++i) {
    EXPECT_LE(points[i - 1].second, points[i].second) << "ordered by distance from the middle";
  }
  // Without a build step nothing is ordered.
  BisectJob unbuilt("job-2", MakeSpec(), MakeCommits(200), kNow);
  for (const BisectJob::Assignment& a : unbuilt.TakeTasks({"a", "b", "c"}, kNow)) {
    EXPECT_EQ(a.task.build_order(), 0);
  }
}

}  // namespace
}  // namespace kbisect
