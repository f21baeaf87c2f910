// Copyright 2026 The kbisect Authors.
//
// What the job fuzz targets share: a range of synthetic commits and a bounded loop that hands a
// BisectJob's tasks to a few workers and reports a result for each, as the coordinator would.
#ifndef KBISECT_TESTS_FUZZ_JOB_DRIVER_H_
#define KBISECT_TESTS_FUZZ_JOB_DRIVER_H_

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "coordinator/job/bisect_job.h"
#include "tests/unit/coordinator/bisect_job_testing.h"

namespace kbisect {
namespace fuzz {

// The BisectJob tests' synthetic commits (GOOD at index 0, BAD at index n) and successful
// results, and their start time.
using bisect_job_testing::MakeCommits;
using bisect_job_testing::Samples;
inline constexpr absl::Time kStart = bisect_job_testing::kNow;

// Runs `job` for at most `max_steps` tasks on three workers; `result_for(task)` says what each
// task reports (nullopt: the lease is lost instead). Stops when the job finishes or hands out
// nothing. Aborts if the job hands out a task twice at once or loses its terminal state.
template <typename ResultFor>
void Drive(BisectJob* job, int max_steps, ResultFor result_for) {
  const std::vector<std::string> workers = {"w0", "w1", "w2"};
  absl::Time now = kStart;
  for (int step = 0; step < max_steps && !job->finished();) {
    std::vector<BisectJob::Assignment> assignments = job->TakeTasks(workers, now);
    if (assignments.empty()) return;
    for (const BisectJob::Assignment& a : assignments) {
      job->OnTaskStarted(a.task.task_id(), a.worker, 1, now);
    }
    for (const BisectJob::Assignment& a : assignments) {
      now += absl::Seconds(1);
      ++step;
      std::optional<v1::TaskResult> result = result_for(a.task);
      if (result.has_value()) {
        job->OnTaskFinished(a.task.task_id(), *result, now);
      } else {
        job->OnTaskLost(a.task.task_id(), "fuzz: lease lost", now);
      }
    }
  }
  if (job->finished()) {
    // A finished job hands out nothing more.
    if (!job->TakeTasks(workers, now).empty()) std::abort();
  }
  (void)job->TakeEvents();
}

}  // namespace fuzz
}  // namespace kbisect

#endif  // KBISECT_TESTS_FUZZ_JOB_DRIVER_H_
