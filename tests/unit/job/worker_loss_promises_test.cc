// Copyright 2026 The kbisect Authors.
//
// A job keeps its promises when the coordinator loses its workers, checked end to end through
// the asynchronous job simulation over many culprit positions, seeds, worker counts and points
// of loss: a worker whose heartbeats stop (its running task's lease expires, then it is gone) at
// any moment of the job (its calibration, a probe, the confirmation), and one that comes back
// under its name later, as after the lost-heartbeat cascade seen at 1,000 workers (decision 98).
// Whatever is lost, the job ends (it never waits for work nobody will do) and names the culprit.
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/testing/job_simulator.h"

namespace kbisect {
namespace {

// The simulation's cap: a job still running then waits for work nobody will do.
constexpr double kStuck = 100'000;

SimulationOptions Case(int commits, int workers, int culprit, uint64_t seed) {
  SimulationOptions options;
  options.commits = commits;
  options.culprit = culprit;
  options.seed = seed;
  // Some noisier (the baselines then need more runs), some with a build step (builds ahead
  // in some of those).
  options.noise_cv = seed % 3 == 0 ? 0.03 : 0.01;
  if (seed % 4 == 1) {
    options.build_seconds = 2;
    options.build_ahead = seed % 8 == 1 ? 4 : 0;
  }
  options.workers = SimulatedWorkers(workers);
  return options;
}

std::string Where(const SimulationOptions& options) {
  std::string out = absl::StrCat("n=", options.commits, " W=", options.workers.size(),
                                 " culprit=", options.culprit, " seed=", options.seed, " losses:");
  for (const SimulatedLoss& loss : options.losses) {
    absl::StrAppend(&out, " ", loss.worker, "@", loss.at, "s");
    if (loss.back_after >= 0) absl::StrAppend(&out, " back+", loss.back_after, "s");
  }
  return absl::StrCat(out, "\n");
}

// Runs `options` and checks that the job ended with its culprit; returns the tasks lost.
int ExpectCulpritDespiteLosses(const SimulationOptions& options) {
  const SimulationResult result = SimulateJob(SimulationSpec(), options);
  EXPECT_LT(result.wall_seconds, kStuck)
      << "the job never ended: " << Where(options) << DescribeProbes(result);
  EXPECT_EQ(result.status.status(), v1::OUTCOME_CULPRIT_FOUND)
      << Where(options) << DescribeProbes(result);
  EXPECT_EQ(result.status.culprit().index(), options.culprit)
      << Where(options) << DescribeProbes(result);
  return result.tasks_lost;
}

TEST(WorkerLossPromisesTest, WorkersLostAtRandomPointsForGoodOrForAWhileLeaveTheCulpritRight) {
  struct Size {
    int commits;
    int workers;
  };
  int lost = 0;
  int cases = 0;
  for (const Size& size :
       std::vector<Size>{{100, 3}, {1000, 7}, {60, 2}, {400, 4}, {30, 1}, {200, 8}}) {
    for (uint64_t seed = 1; seed <= 50; ++seed) {
      std::mt19937_64 rng(seed * 7919 + size.workers);
      const int culprit = std::uniform_int_distribution<int>(1, size.commits)(rng);
      SimulationOptions options = Case(size.commits, size.workers, culprit, seed);
      // Losses fall anywhere in the job as it runs without them.
      const double wall = SimulateJob(SimulationSpec(), options).wall_seconds;
      // One to W-1 workers are lost (one always stays), each at its own moment; half of them
      // come back after a while.
      std::vector<int> slots(size.workers);
      for (int i = 0; i < size.workers; ++i) slots[i] = i;
      std::shuffle(slots.begin(), slots.end(), rng);
      const int count =
          size.workers == 1 ? 1 : std::uniform_int_distribution<int>(1, size.workers - 1)(rng);
      for (int i = 0; i < count; ++i) {
        SimulatedLoss loss;
        loss.worker = options.workers[slots[i]].name;
        loss.at = std::uniform_real_distribution<double>(0, wall)(rng);
        if (size.workers == 1 || std::bernoulli_distribution(0.5)(rng)) {
          loss.back_after = std::uniform_real_distribution<double>(0.5, 10)(rng);
        }
        options.losses.push_back(loss);
      }
      lost += ExpectCulpritDespiteLosses(options);
      ++cases;
    }
  }
  // The sweep did lose work in flight (not only idle workers).
  EXPECT_GT(lost, cases / 2);
}

TEST(WorkerLossPromisesTest, EveryWorkerLostAtOnceAndBackLaterLeavesTheCulpritRight) {
  // The cascade: every worker's heartbeats are late at once, all are declared lost, and all
  // reconnect a few seconds later.
  int lost = 0;
  for (int workers : {1, 2, 3, 7}) {
    for (uint64_t seed = 1; seed <= 50; ++seed) {
      std::mt19937_64 rng(seed * 104'729 + workers);
      const int commits = workers == 7 ? 1000 : 150;
      const int culprit = std::uniform_int_distribution<int>(1, commits)(rng);
      SimulationOptions options = Case(commits, workers, culprit, seed);
      const double wall = SimulateJob(SimulationSpec(), options).wall_seconds;
      const double at = std::uniform_real_distribution<double>(0, wall)(rng);
      const double back_after = std::uniform_real_distribution<double>(1, 12)(rng);
      for (const SimulatedWorker& worker : options.workers) {
        options.losses.push_back({worker.name, at, back_after});
      }
      lost += ExpectCulpritDespiteLosses(options);
    }
  }
  EXPECT_GT(lost, 0);
}

TEST(WorkerLossPromisesTest, AWorkerLostDuringItsCalibrationLeavesTheCulpritRight) {
  // The loss the 1,000-worker cascade left a job stuck after: workers lost in the middle of
  // their calibrations, for good or for a while.
  int calibrations_hit = 0;
  for (int workers : {3, 5, 7}) {
    for (uint64_t seed = 1; seed <= 12; ++seed) {
      const int commits = 300;
      const int culprit = 1 + static_cast<int>((seed * 37 + workers * 11) % commits);
      SimulationOptions options = Case(commits, workers, culprit, seed);
      const SimulationResult plain = SimulateJob(SimulationSpec(), options);
      // The same run is the same until the first loss: each of two workers is lost halfway
      // through its first calibration (a GOOD measured by a worker that holds no role).
      // The first GOOD measured is the reference's; every later one is a calibration.
      std::string reference;
      std::vector<std::string> hit;
      for (const SimulatedTask& task : plain.task_log) {
        if (task.kind != v1::PROBE_KIND_BASELINE_GOOD) continue;
        if (reference.empty()) {
          reference = task.worker;
          continue;
        }
        if (task.worker == reference || task.end < 0 || hit.size() == 2 ||
            std::find(hit.begin(), hit.end(), task.worker) != hit.end()) {
          continue;
        }
        hit.push_back(task.worker);
        SimulatedLoss loss{task.worker, (task.start + task.end) / 2, -1};
        if ((seed + hit.size()) % 2 == 0) loss.back_after = 2;
        options.losses.push_back(loss);
      }
      calibrations_hit += static_cast<int>(hit.size());
      ExpectCulpritDespiteLosses(options);
    }
  }
  EXPECT_GT(calibrations_hit, 20);
}

}  // namespace
}  // namespace kbisect
