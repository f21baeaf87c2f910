// Copyright 2026 The kbisect Authors.
//
// A second nightly over an overlapping range with the first's results (issue 19, case d),
// through the asynchronous job simulation over many seeds: what is left once the cache decides
// most of the search (BAD's worker's GOOD, the calibrations owed, the confirmation) runs side by
// side, and no worker the job waits for sits idle.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/rpc/proto_time.h"
#include "gtest/gtest.h"
#include "tests/testing/job_simulator.h"

namespace kbisect {
namespace {

SimulationOptions Nightly(int first, int last, uint64_t seed) {
  SimulationOptions options;
  options.first_commit = first;
  options.commits = last - first;
  options.culprit = 666;
  options.noise_cv = 0.01;
  options.seed = seed;
  options.workers = SimulatedWorkers(7);
  return options;
}

struct Nightlies {
  SimulationResult first;
  SimulationResult second;
};

// With `culprit_cached`, the cache also holds the first nightly's worker w2 measuring the
// culprit and its parent (as when job 1 probed both): job 2's search is then decided the moment
// BAD's result comes in.
Nightlies RunNightlies(uint64_t seed, bool culprit_cached = false) {
  Nightlies out;
  out.first = SimulateJob(SimulationSpec(), Nightly(0, 1000, seed));
  SimulationOptions options = Nightly(300, 1300, seed + 1000);
  options.cached = CachedResultsOf(out.first);
  if (culprit_cached) {
    for (const v1::CachedResult& result : std::vector<v1::CachedResult>(options.cached)) {
      if (result.worker() != "w2" || result.kind() != v1::PROBE_KIND_BISECT) continue;
      for (int global : {665, 666}) {
        v1::CachedResult copy = result;
        copy.set_commit_sha(absl::StrFormat("%040d", global));
        copy.set_tree_sha(absl::StrFormat("%040x", global));
        copy.clear_samples();
        for (double sample : {100.2, 99.6, 100.4})
          copy.add_samples(global >= 666 ? 1.25 * sample : sample);
        options.cached.push_back(copy);
      }
      break;
    }
  }
  out.second = SimulateJob(SimulationSpec(), options);
  return out;
}

double Seconds(const SimulationResult& result, const google::protobuf::Timestamp& time) {
  return absl::ToDoubleSeconds(FromProto(time) - FromProto(result.status.create_time()));
}

std::string Table(const SimulationResult& result) {
  std::string out;
  for (const v1::Probe& probe : result.status.probes()) {
    if (!probe.has_start_time()) continue;
    absl::StrAppend(&out, "  ", v1::ProbeKind_Name(probe.kind()), " ", probe.worker(),
                    " i=", probe.index(), " ", Seconds(result, probe.start_time()), "-",
                    probe.has_end_time() ? Seconds(result, probe.end_time()) : -1,
                    " n=", probe.samples_size(), probe.cached() ? " cached" : "", "\n");
  }
  return out;
}

// The first time a confirmation pair started (the search was done then), or -1.
double ConfirmationStart(const SimulationResult& result) {
  double start = -1;
  for (const v1::Probe& probe : result.status.probes()) {
    if (probe.kind() != v1::PROBE_KIND_CONFIRM || !probe.has_start_time()) continue;
    const double at = Seconds(result, probe.start_time());
    if (start < 0 || at < start) start = at;
  }
  return start;
}

TEST(NightlyReuseTest, BadsWorkerMeasuresItsGoodBeforeTakingAConfirmationPair) {
  // BAD's worker's GOOD is queued with the BAD baseline and settles the endpoint verdict on
  // one GPU (decision 43): the job waits for it. When the cache decides the search as soon as
  // BAD is in, the confirmation's pairs are queued in front of it.
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    const SimulationResult result = RunNightlies(seed, /*culprit_cached=*/seed % 2 == 0).second;
    ASSERT_EQ(result.status.status(), v1::OUTCOME_CULPRIT_FOUND) << Table(result);
    std::string bad_worker;
    for (const v1::Probe& probe : result.status.probes()) {
      if (probe.kind() == v1::PROBE_KIND_BASELINE_BAD) bad_worker = probe.worker();
    }
    double good = -1;
    double confirm = -1;
    for (const v1::Probe& probe : result.status.probes()) {
      if (probe.worker() != bad_worker || !probe.has_start_time()) continue;
      const double at = Seconds(result, probe.start_time());
      if (probe.kind() == v1::PROBE_KIND_BASELINE_GOOD && good < 0) good = at;
      if (probe.kind() == v1::PROBE_KIND_CONFIRM && confirm < 0) confirm = at;
    }
    ASSERT_GE(good, 0) << "seed " << seed << "\n" << Table(result);
    if (confirm >= 0) {
      EXPECT_LT(good, confirm) << "seed " << seed << "\n" << Table(result);
    }
  }
}

TEST(NightlyReuseTest, NoWorkerThatOwesACalibrationIsIdleWhileTheJobWaitsForIt) {
  // Once the search is done the job waits for the calibrations still owed (every worker that
  // measured a probe) and the confirmation: each such worker is busy from then until its
  // calibration has started, and a calibration started then takes the runs the evidence needs
  // (one or two at 1% noise against a 25% step), not --runs (3).
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    const SimulationResult result = RunNightlies(seed, /*culprit_cached=*/seed % 2 == 0).second;
    ASSERT_EQ(result.status.status(), v1::OUTCOME_CULPRIT_FOUND) << Table(result);
    const double done = ConfirmationStart(result);
    if (done < 0) continue;
    std::map<std::string, std::vector<std::pair<double, double>>> busy;
    std::map<std::string, double> calibration;  // Start of each worker's first GOOD task.
    std::map<std::string, bool> owes;
    std::string bad_worker;
    for (const SimulatedTask& task : result.task_log) {
      if (task.kind == v1::PROBE_KIND_BISECT) owes[task.worker] = true;
      if (task.kind == v1::PROBE_KIND_BASELINE_BAD) bad_worker = task.worker;
      busy[task.worker].push_back({task.start, task.end < 0 ? task.start : task.end});
      if (task.kind == v1::PROBE_KIND_BASELINE_GOOD && calibration.count(task.worker) == 0) {
        calibration[task.worker] = task.start;
        if (task.start >= done && task.worker != bad_worker) {
          EXPECT_LT(task.runs, 3) << "seed " << seed << ": " << task.worker << "\n"
                                  << Table(result);
        }
      }
    }
    for (const auto& [worker, owing] : owes) {
      if (!owing || calibration.count(worker) == 0 || calibration[worker] <= done) continue;
      // Busy without a gap from `done` until its calibration started.
      std::vector<std::pair<double, double>>& spans = busy[worker];
      std::sort(spans.begin(), spans.end());
      double covered = done;
      for (const auto& [from, to] : spans) {
        if (to <= covered) continue;
        if (from > covered + 0.01 || covered >= calibration[worker]) break;
        covered = to;
      }
      EXPECT_GE(covered + 0.01, calibration[worker])
          << "seed " << seed << ": " << worker << " idle from " << covered << " to "
          << calibration[worker] << "\n"
          << Table(result);
    }
  }
}

TEST(NightlyReuseTest, ASecondNightlyTakesAFractionOfAFreshJobsWallTime) {
  // Job 2 against the same range measured without the cache, over many seeds: the cached
  // probes decide the search once the baselines settle, and what is left runs side by side.
  double reused = 0;
  double fresh = 0;
  int reused_runs = 0;
  int fresh_runs = 0;
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    const SimulationResult second = RunNightlies(seed).second;
    const SimulationResult alone = SimulateJob(SimulationSpec(), Nightly(300, 1300, seed + 1000));
    ASSERT_EQ(second.status.culprit().sha(), alone.status.culprit().sha()) << "seed " << seed;
    reused += second.wall_seconds;
    fresh += alone.wall_seconds;
    reused_runs += second.bench_runs;
    fresh_runs += alone.bench_runs;
  }
  std::printf("job 2 %.2f s %d runs, fresh %.2f s %d runs (16 seeds)\n", reused, reused_runs, fresh,
              fresh_runs);
  EXPECT_LE(reused, 0.60 * fresh);
  EXPECT_LE(reused_runs, 0.60 * fresh_runs);
}

}  // namespace
}  // namespace kbisect
