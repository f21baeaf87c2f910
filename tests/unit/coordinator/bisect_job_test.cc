// Copyright 2026 The kbisect Authors.
#include "coordinator/job/bisect_job.h"

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

namespace kbisect {
namespace {

using ::testing::HasSubstr;

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

std::vector<v1::CommitRef> MakeCommits(int n) {
  std::vector<v1::CommitRef> commits;
  for (int i = 0; i <= n; ++i) {
    v1::CommitRef ref;
    ref.set_sha(absl::StrCat(std::string(33, 'a' + (i % 6)), absl::StrFormat("%07d", i)));
    ref.set_index(i);
    ref.set_subject(absl::StrCat("commit ", i));
    commits.push_back(ref);
  }
  return commits;
}

v1::JobSpec MakeSpec() {
  v1::JobSpec spec;
  spec.set_repository("/repo");
  spec.set_good("v1");
  spec.add_bench_command("./bench.sh");
  spec.set_direction(v1::DIRECTION_LOWER_IS_BETTER);
  return spec;
}

v1::TaskResult Samples(std::vector<double> values) {
  v1::TaskResult result;
  result.set_outcome(v1::TASK_OUTCOME_SUCCEEDED);
  for (double v : values) {
    result.add_samples(v);
    result.add_runs()->set_value(v);
  }
  result.set_metric_name("Latency");
  result.set_metric_unit("ms");
  return result;
}

v1::TaskResult Failure(v1::TaskOutcome outcome, const std::string& message) {
  v1::TaskResult result;
  result.set_outcome(outcome);
  result.set_message(message);
  result.set_log_tail("error: something broke");
  result.add_runs()->set_exit_code(1);
  return result;
}

// The probe table, one line a probe, for failure messages.
std::string Describe(const v1::JobStatus& status) {
  std::string out =
      absl::StrCat("state=", v1::JobState_Name(status.state()),
                   " outcome=", v1::Outcome_Name(status.status()), " error=", status.error(), "\n");
  for (const v1::Probe& probe : status.probes()) {
    absl::StrAppend(&out, "  ", v1::ProbeKind_Name(probe.kind()), " i=", probe.index(),
                    " w=", probe.worker(), " round=", probe.round(),
                    " verdict=", v1::Verdict_Name(probe.verdict()),
                    probe.provisional() ? " provisional" : "", " median=", probe.median(),
                    " n=", probe.samples_size(), " state=", v1::ProbeState_Name(probe.state()),
                    probe.message().empty() ? "" : " (" + probe.message() + ")", "\n");
  }
  for (const v1::DriftEvent& event : status.drift_events()) {
    absl::StrAppend(&out, "  drift ", event.worker(), " ", event.kind(), "\n");
  }
  return out;
}

// Runs a job to the end with `workers` synchronous workers. `measure` gives each task's result.
struct Simulation {
  int rounds_of_tasks = 0;
  std::set<std::string> cancelled;
  int bisect_tasks = 0;
};

Simulation RunToEnd(BisectJob& job, int workers,
                    const std::function<v1::TaskResult(const v1::Task&)>& measure) {
  Simulation sim;
  for (int guard = 0; guard < 1000 && !job.finished(); ++guard) {
    std::vector<v1::Task> tasks = job.TakeTasks(workers, kNow);
    if (tasks.empty()) break;
    ++sim.rounds_of_tasks;
    for (const v1::Task& task : tasks) {
      if (task.kind() == v1::PROBE_KIND_BISECT) ++sim.bisect_tasks;
      if (sim.cancelled.count(task.task_id()) > 0) continue;
      for (const std::string& id : job.OnTaskFinished(task.task_id(), measure(task), kNow)) {
        sim.cancelled.insert(id);
      }
    }
  }
  return sim;
}

std::function<v1::TaskResult(const v1::Task&)> StepAt(int culprit, double good = 1.0,
                                                      double bad = 1.5) {
  return [=](const v1::Task& task) {
    const double v = task.commit_index() >= culprit ? bad : good;
    return Samples({v, v * 1.001, v * 0.999});
  };
}

// Runs synchronous rounds with the named workers: each round every idle worker asks, then the
// tasks finish in turn, `measure` giving each worker's result. Stops when the job is finished,
// nothing is handed out, or `stop` (when set) is true after a round.
void RunRounds(BisectJob& job, const std::vector<std::string>& workers,
               const std::function<v1::TaskResult(const std::string&, const v1::Task&)>& measure,
               const std::function<bool()>& stop = nullptr) {
  for (int guard = 0; guard < 500 && !job.finished(); ++guard) {
    std::vector<BisectJob::Assignment> tasks = job.TakeTasks(workers, kNow);
    if (tasks.empty()) break;
    std::set<std::string> cancelled;
    for (const auto& a : tasks) job.OnTaskStarted(a.task.task_id(), a.worker, 1, kNow);
    for (const auto& a : tasks) {
      if (cancelled.count(a.task.task_id()) > 0) continue;
      for (const std::string& id :
           job.OnTaskFinished(a.task.task_id(), measure(a.worker, a.task), kNow)) {
        cancelled.insert(id);
      }
    }
    if (stop && stop()) break;
  }
}

// `measure`, with every sample of `slow_worker` `factor` times slower (a GPU with a constant
// offset).
std::function<v1::TaskResult(const std::string&, const v1::Task&)> WithSlowWorker(
    const std::string& slow_worker, double factor,
    const std::function<v1::TaskResult(const v1::Task&)>& measure) {
  return [=](const std::string& worker, const v1::Task& task) {
    v1::TaskResult result = measure(task);
    if (worker == slow_worker) {
      for (int i = 0; i < result.samples_size(); ++i) {
        result.set_samples(i, result.samples(i) * factor);
        result.mutable_runs(i)->set_value(result.samples(i));
      }
    }
    return result;
  };
}

// Runs the job to the end with named synchronous workers; `slow_worker` measures every commit
// `factor` times slower than `measure` says (a GPU with a constant offset).
void RunWithSlowWorker(BisectJob& job, const std::vector<std::string>& workers,
                       const std::string& slow_worker, double factor,
                       const std::function<v1::TaskResult(const v1::Task&)>& measure) {
  RunRounds(job, workers, WithSlowWorker(slow_worker, factor, measure));
}

// The row of the probe table that task `task_id` measures, or -1.
int ProbeRow(const BisectJob& job, const std::string& task_id) {
  for (int i = 0; i < job.status().probes_size(); ++i) {
    if (job.status().probes(i).probe_id() == task_id) return i;
  }
  return -1;
}

// Assigns tasks to named workers and returns them keyed by worker.
std::map<std::string, v1::Task> Take(BisectJob& job, const std::vector<std::string>& workers) {
  std::map<std::string, v1::Task> out;
  for (BisectJob::Assignment& a : job.TakeTasks(workers, kNow)) {
    job.OnTaskStarted(a.task.task_id(), a.worker, 1, kNow);
    out[a.worker] = a.task;
  }
  return out;
}

TEST(BisectJobTest, BadsWorkerMeasuresTheReferenceGoodAndOtherVerdictsWaitForTheirCalibration) {
  BisectJob job("job-1", MakeSpec(), MakeCommits(100), kNow);
  const auto measure = StepAt(37);
  std::map<std::string, v1::Task> first = Take(job, {"a", "b", "c"});
  ASSERT_EQ(first.size(), 3u);
  // The first worker measures BAD. Nobody else measures GOOD: b and c probe ahead, at every
  // other point of a four-way split (the second wave fills the others).
  EXPECT_EQ(first["a"].kind(), v1::PROBE_KIND_BASELINE_BAD);
  EXPECT_EQ(first["a"].commit_index(), 100);
  ASSERT_EQ(first["b"].kind(), v1::PROBE_KIND_BISECT);
  ASSERT_EQ(first["c"].kind(), v1::PROBE_KIND_BISECT);
  EXPECT_NEAR(first["b"].commit_index(), 40, 1);
  EXPECT_NEAR(first["c"].commit_index(), 80, 1);
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
  EXPECT_EQ(status.culprit().index(), 37);
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

TEST(BisectJobTest, SevenWorkersProbeWhileBadIsMeasuredAndCalibrateWithinTheRoundBound) {
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
    // w0 measures BAD; the six others probe ahead; nobody calibrates in this first wave.
    EXPECT_EQ(bad, 1);
    EXPECT_EQ(good, 0);
    EXPECT_EQ(probes, 6);
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
    // Within ceil(log8 1000) = 4 probing rounds, and 5 rounds of tasks in all: the reference
    // GOOD, measured after BAD on w0, adds one; the six other calibrations fit in the slack of
    // the round bound and add none.
    EXPECT_LE(status.rounds(), BisectSearch::EstimateRounds(1000, 7));
    EXPECT_LE(sim.rounds_of_tasks + rest.rounds_of_tasks, 1 + BisectSearch::EstimateRounds(1000, 7))
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
  EXPECT_EQ(status.drift_events(0).kind(), "baseline_outlier");
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

TEST(BisectJobTest, IdleWorkersWaitForAResultThatIsDueAndNotForALateOne) {
  ClockedJob clocked;
  clocked.RunUntilOneProbeRuns(absl::Seconds(10));  // Every measurement takes 10 s.
  // c's probe has run 10 s, the typical span: its result is due, so b waits for it...
  EXPECT_TRUE(clocked.Take({"a", "b"}).empty()) << "new points now would split the old interval";
  // ...but not forever: at 14 s (140% of the typical span) it is late, and b goes on.
  clocked.now += absl::Seconds(4);
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

TEST(BisectJobTest, AnOutlierWorkerIsQuarantinedAndTheCulpritIsStillRight) {
  // Worker "w2" is 30% slower on every commit. Its GOOD calibration gives it away.
  BisectJob job("job", MakeSpec(), MakeCommits(60), kNow);
  RunWithSlowWorker(job, {"w0", "w1", "w2", "w3"}, "w2", 1.3, StepAt(23, 1.0, 1.45));
  const v1::JobStatus& status = job.status();
  ASSERT_EQ(status.status(), v1::OUTCOME_CULPRIT_FOUND) << status.error();
  EXPECT_EQ(status.culprit().index(), 23);
  ASSERT_EQ(status.drift_events_size(), 1);
  EXPECT_EQ(status.drift_events(0).worker(), "w2");
  EXPECT_EQ(status.drift_events(0).kind(), "baseline_outlier");
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
    EXPECT_EQ(status.drift_events(0).kind(), "calibration_failed");
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
    EXPECT_EQ(status.drift_events(0).kind(), "calibration_failed");
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
    moved |= event.kind() == "control_moved";
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

// Runs tasks one at a time with a per-task measurement function (so extension tasks, which ask
// for `task.runs()` more samples, get fresh noisy values).
void RunSequential(BisectJob& job, const std::function<v1::TaskResult(const v1::Task&)>& measure,
                   int workers = 2) {
  for (int guard = 0; guard < 5000 && !job.finished(); ++guard) {
    std::vector<v1::Task> tasks = job.TakeTasks(workers, kNow);
    if (tasks.empty()) break;
    std::set<std::string> cancelled;
    for (const v1::Task& task : tasks) {
      if (cancelled.count(task.task_id()) > 0) continue;
      for (const std::string& id : job.OnTaskFinished(task.task_id(), measure(task), kNow)) {
        cancelled.insert(id);
      }
    }
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
  // The two waves together split the interval evenly.
  std::sort(points.begin(), points.end());
  ASSERT_EQ(points.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(points[i], 20 * (i + 1), 1) << i;
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
        // task.runs() pairs, last-good about 1.0 and culprit about `step`.
        const double wiggle[] = {1.0, 1.01, 0.99};
        std::vector<double> culprit_samples;
        for (int i = 0; i < task.runs(); ++i) culprit_samples.push_back(step * wiggle[i % 3]);
        v1::TaskResult result = Samples(culprit_samples);
        for (int i = 0; i < task.runs(); ++i) result.add_paired_samples(wiggle[i % 3]);
        job.OnTaskFinished(task.task_id(), result, kNow);
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

}  // namespace
}  // namespace kbisect
