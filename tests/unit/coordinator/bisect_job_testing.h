// Copyright 2026 The kbisect Authors.
//
// Helpers shared by the BisectJob tests: synthetic commits, specs and results, synchronous
// rounds of named workers (one of them slower), and a printout of the probe table for failure
// messages.
#ifndef KBISECT_TESTS_UNIT_COORDINATOR_BISECT_JOB_TESTING_H_
#define KBISECT_TESTS_UNIT_COORDINATOR_BISECT_JOB_TESTING_H_

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "coordinator/job/bisect_job.h"

namespace kbisect {
namespace bisect_job_testing {

inline constexpr absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

inline std::vector<v1::CommitRef> MakeCommits(int n) {
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

inline v1::JobSpec MakeSpec() {
  v1::JobSpec spec;
  spec.set_repository("/repo");
  spec.set_good("v1");
  spec.add_bench_command("./bench.sh");
  spec.set_direction(v1::DIRECTION_LOWER_IS_BETTER);
  return spec;
}

inline v1::TaskResult Samples(std::vector<double> values) {
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

inline v1::TaskResult Failure(v1::TaskOutcome outcome, const std::string& message) {
  v1::TaskResult result;
  result.set_outcome(outcome);
  result.set_message(message);
  result.set_log_tail("error: something broke");
  result.add_runs()->set_exit_code(1);
  return result;
}

// For the job's pieces tested without a job: hands task `id` of `book` to `worker` and finishes
// it (done, not active) with a successful row holding `samples` and their median. Returns the
// row.
inline int FinishWithSamples(ProbeBook* book, const std::string& id, const std::string& worker,
                             const std::vector<double>& samples) {
  book->HandOut(id, worker);
  ProbeBook::TaskEntry& entry = book->at(id);
  v1::Probe& probe = book->ProbeOf(entry);
  probe.set_state(v1::PROBE_STATE_FINISHED);
  probe.set_outcome(v1::TASK_OUTCOME_SUCCEEDED);
  for (double v : samples) probe.add_samples(v);
  probe.set_median(MedianOrZero(samples));
  entry.done = true;
  book->Deactivate(id);
  return entry.probe;
}

// A job's parts without the job, wired as BisectJob wires them: the frame, the commits 0..n,
// the ledger with its search, the probe table and a calibration with a metric. The tests of a
// part that reads them derive from it (with ::testing::Test).
class JobPartsFixture {
 protected:
  explicit JobPartsFixture(int n, const v1::JobSpec& spec = MakeSpec())
      : commits_(MakeCommits(n)),
        ledger_(spec, commits_, &frame_, &book_, &calibration_),
        book_(frame_.job_id, spec, &commits_),
        calibration_(&frame_, &book_.rows(), /*pass_fail=*/false),
        confirmation_(&frame_, &commits_, &ledger_.search(), &calibration_, /*reuse=*/nullptr,
                      &book_) {
    frame_.spec = spec;
    frame_.commit_count = n;
  }

  JobFrame frame_;
  std::vector<v1::CommitRef> commits_;
  VerdictLedger ledger_;
  ProbeBook book_;
  Calibration calibration_;
  ConfirmationStage confirmation_;  // None started: its record is empty.
};

// The probe table, one line a probe, for failure messages.
inline std::string Describe(const v1::JobStatus& status) {
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

inline Simulation RunToEnd(BisectJob& job, int workers,
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

inline std::function<v1::TaskResult(const v1::Task&)> StepAt(int culprit, double good = 1.0,
                                                             double bad = 1.5) {
  return [=](const v1::Task& task) {
    const double v = task.commit_index() >= culprit ? bad : good;
    return Samples({v, v * 1.001, v * 0.999});
  };
}

// Runs synchronous rounds with the named workers: each round every idle worker asks, then the
// tasks finish in turn, `measure` giving each worker's result. Stops when the job is finished,
// nothing is handed out, or `stop` (when set) is true after a round.
inline void RunRounds(
    BisectJob& job, const std::vector<std::string>& workers,
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
inline std::function<v1::TaskResult(const std::string&, const v1::Task&)> WithSlowWorker(
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
inline void RunWithSlowWorker(BisectJob& job, const std::vector<std::string>& workers,
                              const std::string& slow_worker, double factor,
                              const std::function<v1::TaskResult(const v1::Task&)>& measure) {
  RunRounds(job, workers, WithSlowWorker(slow_worker, factor, measure));
}

// The row of the probe table that task `task_id` measures, or -1.
inline int ProbeRow(const BisectJob& job, const std::string& task_id) {
  for (int i = 0; i < job.status().probes_size(); ++i) {
    if (job.status().probes(i).probe_id() == task_id) return i;
  }
  return -1;
}

// A confirmation task's answer: task.runs() pairs, last-good about 1.0 and culprit about `step`.
inline v1::TaskResult ConfirmationPairs(const v1::Task& task, double step) {
  const double wiggle[] = {1.0, 1.01, 0.99};
  std::vector<double> culprit_samples;
  for (int i = 0; i < task.runs(); ++i) culprit_samples.push_back(step * wiggle[i % 3]);
  v1::TaskResult result = Samples(culprit_samples);
  for (int i = 0; i < task.runs(); ++i) result.add_paired_samples(wiggle[i % 3]);
  return result;
}

// Assigns tasks to named workers and returns them keyed by worker.
inline std::map<std::string, v1::Task> Take(BisectJob& job,
                                            const std::vector<std::string>& workers) {
  std::map<std::string, v1::Task> out;
  for (BisectJob::Assignment& a : job.TakeTasks(workers, kNow)) {
    job.OnTaskStarted(a.task.task_id(), a.worker, 1, kNow);
    out[a.worker] = a.task;
  }
  return out;
}

// Runs tasks one at a time with a per-task measurement function (so extension tasks, which ask
// for `task.runs()` more samples, get fresh noisy values).
inline void RunSequential(BisectJob& job,
                          const std::function<v1::TaskResult(const v1::Task&)>& measure,
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

}  // namespace bisect_job_testing
}  // namespace kbisect

#endif  // KBISECT_TESTS_UNIT_COORDINATOR_BISECT_JOB_TESTING_H_
