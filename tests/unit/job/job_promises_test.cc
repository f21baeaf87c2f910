// Copyright 2026 The kbisect Authors.
//
// The job's promises, checked end to end through the asynchronous job simulation over many
// culprit positions, seeds and worker counts (not one lucky case):
//   1. A GPU that measures everything slower cannot fake a result: the culprit is right, the GPU
//      is quarantined and named, and a clean run raises no flag.
//   2. A deterministic step is found within ceil(log_{W+1} n) probing rounds (`rounds`).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/rpc/enum_label.h"
#include "common/rpc/proto_time.h"
#include "common/search/bisect_search.h"
#include "coordinator/job/job_text.h"
#include "gtest/gtest.h"
#include "tests/testing/job_simulator.h"

namespace kbisect {
namespace {

// Culprit positions spread over 1..n (both ends included).
std::vector<int> Positions(int n, int count) {
  std::vector<int> positions;
  for (int i = 0; i < count; ++i) {
    const int position = 1 + static_cast<int>(static_cast<long>(n - 1) * i / (count - 1));
    if (positions.empty() || positions.back() != position) positions.push_back(position);
  }
  return positions;
}

// --- 1. A drifted GPU ---------------------------------------------------------------------------

struct DriftCase {
  int workers = 4;
  int slow_slot = -1;  // -1: every GPU is normal.
  int culprit = 75;
  uint64_t seed = 1;
  double build_seconds = 0;  // A build step (shared build cache), 0: none.
  int commits = 150;
  bool slow_in_time = false;  // The slow GPU's runs also take 1.35 times as long.
};

SimulationResult RunDrift(const DriftCase& c) {
  SimulationOptions options;
  options.commits = c.commits;
  options.culprit = c.culprit;
  options.good_value = 100;
  options.bad_value = 125;  // A 25% step.
  options.noise_cv = 0.01;
  options.seed = c.seed;
  options.workers = SimulatedWorkers(c.workers);
  if (c.slow_slot >= 0) options.workers[c.slow_slot].metric_factor = 1.35;
  if (c.slow_slot >= 0 && c.slow_in_time) options.workers[c.slow_slot].time_factor = 1.35;
  options.build_seconds = c.build_seconds;
  v1::JobSpec spec = SimulationSpec();
  if (c.build_seconds > 0) spec.set_build_command("make");
  return SimulateJob(spec, options);
}

void ExpectSlowSlotQuarantined(const DriftCase& c, const SimulationResult& result) {
  const v1::JobStatus& status = result.status;
  const std::string where = absl::StrCat("workers=", c.workers, " slow=w", c.slow_slot,
                                         " culprit=", c.culprit, " seed=", c.seed, "\n");
  ASSERT_EQ(status.status(), v1::OUTCOME_CULPRIT_FOUND) << where << DescribeProbes(result);
  EXPECT_EQ(status.culprit().index(), c.culprit) << where << DescribeProbes(result);
  EXPECT_NEAR(status.regression_pct(), 25, 3) << where;
  const std::string slow = absl::StrCat("w", c.slow_slot);
  bool quarantined = false;
  for (const v1::JobWorker& worker : status.workers()) {
    if (worker.worker() == slow) {
      quarantined = worker.quarantined();
      EXPECT_TRUE(worker.drift()) << where;
      EXPECT_FALSE(worker.reason().empty()) << where;
    } else {
      EXPECT_FALSE(worker.quarantined()) << where << worker.worker();
    }
  }
  EXPECT_TRUE(quarantined) << where << DescribeProbes(result);
  ASSERT_GE(status.drift_events_size(), 1) << where;
  for (const v1::DriftEvent& event : status.drift_events()) {
    EXPECT_EQ(event.worker(), slow) << where;
  }
  EXPECT_NE(status.baseline().good().worker(), slow) << where;
  EXPECT_NE(status.baseline().bad().worker(), slow) << where;
}

TEST(JobPromisesTest, ASlowGpuInAnySlotIsQuarantinedAndTheCulpritIsRight) {
  for (int slot = 0; slot < 4; ++slot) {
    for (uint64_t seed = 1; seed <= 10; ++seed) {
      for (int culprit : {1, 37, 75, 113, 150}) {
        DriftCase c{getenv("DW") ? atoi(getenv("DW")) : 4, slot, culprit, static_cast<uint64_t>(seed)};
        if (getenv("DT")) c.slow_in_time = true;
        if (getenv("DB")) c.build_seconds = atof(getenv("DB"));
        ExpectSlowSlotQuarantined(c, RunDrift(c));
      }
    }
  }
}

TEST(JobPromisesTest, ASlowGpuInAnySlotOfThreeOverAShortRangeIsQuarantined) {
  // Short ranges end with a last round that leaves workers idle, which measure confirmation
  // pairs ahead (decision 46); a slow GPU among them is quarantined by its calibration, and its
  // pairs are measured again on the others instead of failing the confirmation.
  for (int slot = 0; slot < 3; ++slot) {
    for (uint64_t seed = 1; seed <= 10; ++seed) {
      for (int culprit : {1, 20, 41, 60}) {
        DriftCase c{3, slot, culprit, seed};
        c.commits = 60;
        c.slow_in_time = true;  // Its calibration ends last, after the pairs it measured.
        ExpectSlowSlotQuarantined(c, RunDrift(c));
      }
    }
  }
}

TEST(JobPromisesTest, WithABuildStepGoodIsBuiltBesideBadAndADriftedGpuIsStillQuarantined) {
  // With a build step a second worker calibrates in the first wave, so GOOD builds while BAD
  // does and BAD's worker measures the reference GOOD without building it. That worker's GOOD
  // is measured before the endpoint verdict: a slow GPU in any slot, the early one included,
  // is still quarantined and the culprit is right.
  int reference_builds = 0;
  int jobs = 0;
  for (int slot = 0; slot < 4; ++slot) {
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      for (int culprit : {1, 75, 150}) {
        DriftCase c{4, slot, culprit, seed, /*build_seconds=*/2};
        const SimulationResult result = RunDrift(c);
        ExpectSlowSlotQuarantined(c, result);
        ++jobs;
        const v1::Probe& bad = result.status.probes(0);
        ASSERT_EQ(bad.kind(), v1::PROBE_KIND_BASELINE_BAD);
        for (const v1::Probe& probe : result.status.probes()) {
          if (probe.kind() != v1::PROBE_KIND_BASELINE_GOOD || probe.worker() != bad.worker()) {
            continue;
          }
          reference_builds += result.build_wait.at(probe.probe_id()) >= 2 ? 1 : 0;
          break;
        }
      }
    }
  }
  EXPECT_EQ(reference_builds, 0) << "of " << jobs << " jobs, the reference GOOD built GOOD again";
}

TEST(JobPromisesTest, AStandInGoodBesideBadCannotLetASlowGpuFakeTheResult) {
  // With room in the round bound (1,000 commits, 7 workers) the second worker measures GOOD
  // beside BAD and stands in as the reference, so the search starts one span earlier; BAD's
  // worker's own GOOD then takes the role back (decision 43). A slow GPU as BAD's worker, as
  // the stand-in or as a prober is still quarantined and the culprit is right.
  int stand_ins = 0;
  int jobs = 0;
  for (int slot : {0, 1, 4}) {
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      for (int culprit : {1, 333, 777, 1000}) {
        DriftCase c{7, slot, culprit, seed, /*build_seconds=*/0, /*commits=*/1000};
        const SimulationResult result = RunDrift(c);
        ExpectSlowSlotQuarantined(c, result);
        ++jobs;
        // The first wave's rows: BAD, BAD's worker's GOOD (queued behind it), then the
        // stand-in GOOD of another worker.
        const v1::Probe& bad = result.status.probes(0);
        const v1::Probe& third = result.status.probes(2);
        const bool stand_in = bad.kind() == v1::PROBE_KIND_BASELINE_BAD &&
                              third.kind() == v1::PROBE_KIND_BASELINE_GOOD &&
                              third.worker() != bad.worker();
        stand_ins += stand_in;
        EXPECT_TRUE(stand_in) << "slot " << slot << " seed " << seed << " culprit " << culprit
                              << "\n"
                              << DescribeProbes(result);
      }
    }
  }
  EXPECT_EQ(stand_ins, jobs) << "every job measures GOOD beside BAD";
}

TEST(JobPromisesTest, AFastStandInCannotFakeARegression) {
  // No step at all, but the stand-in's GPU measures 20% faster: across the two GPUs BAD looks
  // 25% worse than GOOD and the search starts provisionally; BAD's worker's own GOOD then shows
  // no step, and the job ends with no regression instead of naming a culprit.
  // At CV 1% BAD's worker's GOOD leaves the baselines unclear first (they are measured again);
  // at CV 0.1% it shows at once that there is no step.
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    SimulationOptions options;
    options.commits = 1000;
    options.culprit = 500;
    options.good_value = 100;
    options.bad_value = 100;
    options.noise_cv = seed <= 2 ? 0.01 : 0.001;
    options.seed = seed;
    options.workers = SimulatedWorkers(7);
    options.workers[1].metric_factor = 0.8;
    const SimulationResult result = SimulateJob(SimulationSpec(), options);
    const std::string where = absl::StrCat("seed=", seed);
    EXPECT_EQ(result.status.status(), v1::OUTCOME_NO_REGRESSION) << where << DescribeProbes(result);
    if (getenv("STANDIN_DEBUG") != nullptr) std::printf("%s\n", DescribeProbes(result).c_str());
    bool provisional = false;
    for (const v1::JobEvent& event : result.events) {
      provisional |= event.message().find("GOOD on w1, BAD on w0") != std::string::npos;
    }
    EXPECT_TRUE(provisional) << where << " the search did not start across the two GPUs";
  }
}

TEST(JobPromisesTest, ASettledEndpointVerdictIsNeverTakenBack) {
  // `kbisect run --find-good` reads a lookback job's step from its status while it runs: a job
  // searching on a settled endpoint verdict has found one. Whatever a client polling the job can
  // see that way must be the job's last word. A step found across two GPUs (a stand-in GOOD) is
  // marked provisional until BAD's worker has measured GOOD; only then may it be read.
  int provisional_seen = 0;
  int cases = 0;
  for (int workers : {3, 7}) {
    for (int commits : {16, 1000}) {
      for (bool fast_stand_in : {false, true}) {
        for (uint64_t seed = 1; seed <= 12; ++seed) {
          SimulationOptions options;
          options.commits = commits;
          options.culprit = commits / 2;
          options.good_value = 100;
          options.bad_value = 100;  // No step: only noise or a GPU's offset can fake one.
          options.noise_cv = 0.01;
          options.seed = seed;
          options.workers = SimulatedWorkers(workers);
          if (fast_stand_in) options.workers[1].metric_factor = 0.8;
          bool settled_step = false;
          bool provisional = false;
          options.observe = [&](const v1::JobStatus& status) {
            const bool searching = status.state() == v1::JOB_STATE_BISECTING ||
                                   status.state() == v1::JOB_STATE_CONFIRMING ||
                                   status.state() == v1::JOB_STATE_FOLLOWING_UP;
            if (!searching) return;
            if (status.baseline().provisional()) {
              provisional = true;
            } else {
              settled_step = true;
            }
          };
          const SimulationResult result = SimulateJob(SimulationSpec(), options);
          ++cases;
          provisional_seen += provisional;
          const std::string where =
              absl::StrCat(workers, " workers, ", commits, " commits, ",
                           fast_stand_in ? "fast stand-in, " : "", "seed ", seed);
          if (settled_step) {
            EXPECT_NE(result.status.status(), v1::OUTCOME_NO_REGRESSION)
                << where << ": a settled step was taken back\n"
                << DescribeProbes(result);
          }
          EXPECT_FALSE(result.status.baseline().provisional()) << where;
          if (fast_stand_in && commits == 1000 && workers == 7) {
            EXPECT_TRUE(provisional) << where << ": the search did not start across two GPUs";
            EXPECT_EQ(result.status.status(), v1::OUTCOME_NO_REGRESSION) << where;
          }
        }
      }
    }
  }
  EXPECT_GT(provisional_seen, 0) << "of " << cases << " jobs";
}

TEST(JobPromisesTest, ASlowGpuThatIsTheOnlyOtherWorkerIsQuarantined) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    for (int culprit : {1, 50, 101, 150}) {
      DriftCase c{2, 1, culprit, seed};
      ExpectSlowSlotQuarantined(c, RunDrift(c));
    }
  }
}

TEST(JobPromisesTest, TwoGpusThatDisagreeAreFlaggedAndCannotFakeTheCulprit) {
  // The slow GPU measures both baselines and the other is normal: two GPUs cannot tell which
  // one is odd (decision 27). The step is measured on one GPU, so it is right; the other GPU is
  // flagged with the offset between them, and the culprit is still right.
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    for (int culprit : {1, 50, 101, 150}) {
      DriftCase c{2, 0, culprit, seed};
      const SimulationResult result = RunDrift(c);
      const std::string where = absl::StrCat("culprit=", culprit, " seed=", seed);
      ASSERT_EQ(result.status.status(), v1::OUTCOME_CULPRIT_FOUND) << where << DescribeProbes(result);
      EXPECT_EQ(result.status.culprit().index(), culprit) << where;
      EXPECT_NEAR(result.status.regression_pct(), 25, 3) << where;
      ASSERT_EQ(result.status.drift_events_size(), 1) << where;
      EXPECT_NEAR(std::fabs(result.status.drift_events(0).offset_fraction()), 0.26, 0.03) << where;
    }
  }
}

TEST(JobPromisesTest, ACleanRunRaisesNoFlag) {
  for (int workers : {1, 2, 4}) {
    for (uint64_t seed = 1; seed <= 8; ++seed) {
      for (int culprit : {1, 75, 150}) {
        DriftCase c{workers, -1, culprit, seed};
        const SimulationResult result = RunDrift(c);
        const std::string where =
            absl::StrCat("workers=", workers, " culprit=", culprit, " seed=", seed);
        ASSERT_EQ(result.status.status(), v1::OUTCOME_CULPRIT_FOUND) << where << DescribeProbes(result);
        EXPECT_EQ(result.status.culprit().index(), culprit) << where;
        EXPECT_EQ(result.status.drift_events_size(), 0) << where << DescribeProbes(result);
        for (const v1::JobWorker& worker : result.status.workers()) {
          EXPECT_FALSE(worker.quarantined()) << where << worker.worker();
        }
      }
    }
  }
}

// --- 2. The round bound --------------------------------------------------------------------------

TEST(JobPromisesTest, ADeterministicStepTakesAtMostTheRoundBound) {
  struct Size {
    int commits;
    int workers;
  };
  for (const Size& size :
       std::vector<Size>{{300, 4}, {1000, 7}, {150, 4}, {100, 3}, {60, 2}, {200, 1}, {500, 7}}) {
    const int bound = BisectSearch::EstimateRounds(size.commits, size.workers);
    for (int culprit : Positions(size.commits, 24)) {
      for (uint64_t seed : {1, 2}) {
        SimulationOptions options;
        options.commits = size.commits;
        options.culprit = culprit;
        options.seed = seed;
        options.workers = SimulatedWorkers(size.workers);
        const SimulationResult result = SimulateJob(SimulationSpec(), options);
        const std::string where = absl::StrCat("n=", size.commits, " W=", size.workers,
                                               " culprit=", culprit, " seed=", seed);
        ASSERT_EQ(result.status.status(), v1::OUTCOME_CULPRIT_FOUND) << where << DescribeProbes(result);
        EXPECT_EQ(result.status.culprit().index(), culprit) << where;
        EXPECT_LE(result.status.rounds(), bound) << where << DescribeProbes(result);
      }
    }
  }
}

// --- 3. A broken GPU, honest run floors -----------------------------------------------------

TEST(JobPromisesTest, AGpuThatFailsEveryTaskIsQuarantinedNotTrustedAsUntestableCommits) {
  // Before, a worker whose benchmark failed at every commit had each failure recorded as an
  // untestable commit and was never quarantined: 15 of 20 culprit positions ended with
  // candidates instead of the culprit.
  for (int culprit = 1; culprit <= 20; ++culprit) {
    SimulationOptions options;
    options.commits = 20;
    options.culprit = culprit;
    options.workers = SimulatedWorkers(2);
    options.workers[1].broken = true;
    const SimulationResult result = SimulateJob(SimulationSpec(), options);
    const std::string where = absl::StrCat("culprit=", culprit);
    ASSERT_EQ(result.status.status(), v1::OUTCOME_CULPRIT_FOUND) << where << DescribeProbes(result);
    EXPECT_EQ(result.status.culprit().index(), culprit) << where;
    ASSERT_GE(result.status.drift_events_size(), 1) << where;
    EXPECT_EQ(result.status.drift_events(0).worker(), "w1") << where;
    EXPECT_EQ(EnumLabel(result.status.drift_events(0).kind()), "calibration_failed") << where;
  }
}

// The steps plain `git bisect` takes to find `culprit` among n commits (one probe at a time).
int GitBisectSteps(int n, int culprit) {
  BisectSearch search(n);
  int steps = 0;
  while (!search.Done()) {
    const std::vector<int> next = search.NextProbes(1);
    if (next.empty()) break;
    (void)search.Record(next[0], next[0] >= culprit ? v1::VERDICT_BAD : v1::VERDICT_GOOD);
    ++steps;
  }
  return steps;
}

TEST(JobPromisesTest, RunsOneOnADeterministicBenchmarkTakesAsManyRunsAsGitBisect) {
  // `--runs 1` is the user's floor: a benchmark whose samples show no spread is decided on one
  // run per commit, the confirmation reuses the search's samples, and W=1 measures exactly what
  // git bisect with one run per step (and one per baseline) measures.
  for (int culprit : Positions(1000, 12)) {
    SimulationOptions options;
    options.commits = 1000;
    options.culprit = culprit;
    options.workers = SimulatedWorkers(1);
    v1::JobSpec spec = SimulationSpec();
    spec.set_runs_per_commit(1);
    const SimulationResult result = SimulateJob(spec, options);
    const std::string where = absl::StrCat("culprit=", culprit);
    ASSERT_EQ(result.status.status(), v1::OUTCOME_CULPRIT_FOUND) << where << DescribeProbes(result);
    EXPECT_EQ(result.status.culprit().index(), culprit) << where;
    EXPECT_TRUE(result.status.confirmation().confirmed()) << where;
    EXPECT_EQ(result.status.bench_runs(), 2 + GitBisectSteps(1000, culprit))
        << where << DescribeProbes(result);
  }
}

TEST(JobPromisesTest, RunsOneTakesMoreRunsWhereTheNoiseIsSeen) {
  // The same floor with 5% noise against a 10% step: single runs cannot decide, and the
  // statistics ask for more where the observed noise says so; the culprit is still right.
  int exact = 0;
  int extended = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    SimulationOptions options;
    options.commits = 100;
    options.culprit = 37;
    options.good_value = 100;
    options.bad_value = 110;
    options.noise_cv = 0.05;
    options.seed = seed;
    options.workers = SimulatedWorkers(4);
    v1::JobSpec spec = SimulationSpec();
    spec.set_runs_per_commit(1);
    const SimulationResult result = SimulateJob(spec, options);
    const bool right = result.status.status() == v1::OUTCOME_CULPRIT_FOUND &&
                       result.status.culprit().index() == 37;
    exact += right;
    for (const v1::Probe& probe : result.status.probes()) {
      extended += probe.kind() == v1::PROBE_KIND_BISECT && probe.samples_size() > 1;
    }
  }
  EXPECT_GE(exact, 38) << "of 40";
  EXPECT_GT(extended, 10);
}

}  // namespace
}  // namespace kbisect

namespace kbisect {
namespace {

// --- 4. Results reused across jobs ---------------------------------------------------------------

SimulationOptions Nightly(int first, int last, int culprit, uint64_t seed) {
  SimulationOptions options;
  options.first_commit = first;
  options.commits = last - first;
  options.culprit = culprit;
  options.noise_cv = 0.01;
  options.seed = seed;
  options.workers = SimulatedWorkers(7);
  return options;
}

TEST(JobPromisesTest, ASecondNightlyReusesTheFirstsResults) {
  // Nightly 1 bisects 0..1000; nightly 2 has GOOD 30% into that range and BAD past it.
  int reused_runs = 0;
  int fresh_runs = 0;
  double reused_wall = 0;
  double fresh_wall = 0;
  for (uint64_t seed : {1, 2, 3}) {
    const SimulationResult first = SimulateJob(SimulationSpec(), Nightly(0, 1000, 666, seed));
    ASSERT_EQ(first.status.culprit().index(), 666);
    SimulationOptions options = Nightly(300, 1300, 666, seed + 10);
    options.cached = CachedResultsOf(first);
    const SimulationResult second = SimulateJob(SimulationSpec(), options);
    const std::string where = absl::StrCat("seed=", seed);
    ASSERT_EQ(second.status.status(), v1::OUTCOME_CULPRIT_FOUND) << where << DescribeProbes(second);
    EXPECT_EQ(second.status.culprit().sha(), first.status.culprit().sha()) << where;
    EXPECT_GT(second.status.cached_probes(), 0) << where;
    // Against the same range measured without the cache (decision 43 made the first job
    // cheaper, 51-58 runs, so a ratio to it now mostly measures that): the calibrations and
    // the new range's baselines are what is left (issue 19 asks for 35% of job 1: see
    // docs/benchmarks.md).
    SimulationOptions fresh_options = Nightly(300, 1300, 666, seed + 10);
    const SimulationResult fresh = SimulateJob(SimulationSpec(), fresh_options);
    ASSERT_EQ(fresh.status.culprit().sha(), first.status.culprit().sha()) << where;
    EXPECT_LT(second.status.bench_runs(), fresh.status.bench_runs()) << where << DescribeProbes(second);
    if (getenv("NIGHTLY_DEBUG") != nullptr) std::printf("%s", DescribeProbes(second).c_str());
    reused_runs += second.status.bench_runs();
    reused_wall += second.wall_seconds;
    fresh_runs += fresh.status.bench_runs();
    fresh_wall += fresh.wall_seconds;
    std::printf("seed %d: job 2 %d runs %.2f s, fresh %d runs %.2f s, job 1 %d runs %.2f s\n",
                static_cast<int>(seed), second.status.bench_runs(), second.wall_seconds,
                fresh.status.bench_runs(), fresh.wall_seconds, first.status.bench_runs(),
                first.wall_seconds);
    int cached = 0;
    for (const v1::Probe& probe : second.status.probes()) {
      if (!probe.cached()) continue;
      ++cached;
      EXPECT_EQ(probe.cached_job_id(), first.status.job_id());
    }
    EXPECT_EQ(cached, second.status.cached_probes());
  }
  // Measured: 113 runs against 179 (63%), 0.70 of the wall time.
  EXPECT_LE(reused_runs, 0.75 * fresh_runs);
  EXPECT_LE(reused_wall, 0.8 * fresh_wall);
}

TEST(JobPromisesTest, ADriftedGpusCachedResultsAreNotReused) {
  const SimulationResult first = SimulateJob(SimulationSpec(), Nightly(0, 1000, 666, 1));
  SimulationOptions options = Nightly(300, 1300, 666, 11);
  options.cached = CachedResultsOf(first);
  // Since the first nightly, w3's GPU became 20% slower.
  options.workers[3].metric_factor = 1.2;
  const SimulationResult second = SimulateJob(SimulationSpec(), options);
  ASSERT_EQ(second.status.status(), v1::OUTCOME_CULPRIT_FOUND) << DescribeProbes(second);
  EXPECT_EQ(second.status.culprit().sha(), first.status.culprit().sha());
  for (const v1::Probe& probe : second.status.probes()) {
    EXPECT_FALSE(probe.cached() && probe.worker() == "w3") << "a drifted GPU's sample reused";
  }
  bool refused = false;
  for (const std::string& worker : second.status.cache_refused_workers()) {
    refused |= worker == "w3";
  }
  // In the first wave every worker measures one of its cached commits: w3's disagrees.
  EXPECT_TRUE(refused) << DescribeProbes(second);
  EXPECT_GT(second.status.cached_probes(), 0) << "the other GPUs' results are still reused";
}

TEST(JobPromisesTest, NoCacheMeasuresEverythingAgain) {
  const SimulationResult first = SimulateJob(SimulationSpec(), Nightly(0, 1000, 666, 1));
  SimulationOptions options = Nightly(300, 1300, 666, 11);
  options.cached = CachedResultsOf(first);
  v1::JobSpec spec = SimulationSpec();
  spec.set_no_cache(true);
  const SimulationResult second = SimulateJob(spec, options);
  ASSERT_EQ(second.status.status(), v1::OUTCOME_CULPRIT_FOUND);
  EXPECT_EQ(second.status.cached_probes(), 0);
  EXPECT_GT(second.status.bench_runs(), 0.6 * first.status.bench_runs());
}

}  // namespace
}  // namespace kbisect

namespace kbisect {
namespace {

// The end of a job after its search: the last bisect probe's end (nullopt without one).
absl::Time LastBisectEnd(const v1::JobStatus& status) {
  absl::Time last = absl::InfinitePast();
  for (const v1::Probe& probe : status.probes()) {
    if (probe.kind() == v1::PROBE_KIND_BISECT && probe.state() == v1::PROBE_STATE_FINISHED &&
        !probe.cached()) {
      last = std::max(last, FromProto(probe.end_time()));
    }
  }
  return last;
}

TEST(JobPromisesTest, TheConfirmationRunsOnSeveralWorkersAtOnce) {
  // 1,000 commits, W=7, 1% noise: the confirmation's fresh pairs go to several workers in
  // parallel, each pair on one GPU, instead of a dozen runs on one worker after the search; the
  // ones measured ahead in the last round (decision 46) included, it ends at most one pair's
  // span after the search's last probe.
  for (uint64_t seed : {1, 2, 3}) {
    SimulationOptions options;
    options.commits = 1000;
    options.culprit = 666;
    options.noise_cv = 0.01;
    options.seed = seed;
    options.workers = SimulatedWorkers(7);
    const SimulationResult result = SimulateJob(SimulationSpec(), options);
    ASSERT_EQ(result.status.status(), v1::OUTCOME_CULPRIT_FOUND) << DescribeProbes(result);
    const v1::Confirmation& confirmation = result.status.confirmation();
    EXPECT_TRUE(confirmation.confirmed());
    std::set<std::string> workers;
    double longest_pair = 0;
    absl::Time last_end = absl::InfinitePast();
    for (const v1::Probe& probe : result.status.probes()) {
      if (probe.kind() != v1::PROBE_KIND_CONFIRM || probe.state() != v1::PROBE_STATE_FINISHED) {
        continue;
      }
      workers.insert(probe.worker());
      longest_pair = std::max(longest_pair, absl::ToDoubleSeconds(FromProto(probe.end_time()) -
                                                                  FromProto(probe.start_time())));
      last_end = std::max(last_end, FromProto(probe.end_time()));
    }
    EXPECT_GE(workers.size(), 2u) << "seed " << seed << DescribeProbes(result);
    EXPECT_LE(absl::ToDoubleSeconds(last_end - LastBisectEnd(result.status)), 1.05 * longest_pair)
        << "seed " << seed << ": the pairs ran one after another" << DescribeProbes(result);
    EXPECT_LE(confirmation.fresh_pairs(), 2 * static_cast<int>(workers.size()));
  }
}

TEST(JobPromisesTest, PairsMeasuredAheadCountOnlyForTheCulpritTheyMeasure) {
  // Over culprit positions and seeds at W=7 and W=4: a confirmation probe of a commit that is
  // not the culprit never finishes into the result (it is cancelled once the search ends), every
  // pair the confirmation judged is of the culprit and its last-good, the culprit is right, and
  // in some jobs the culprit's pairs were measured before the search's last probe ended.
  int ahead = 0;
  int jobs = 0;
  for (int workers : {4, 7}) {
    for (int culprit : Positions(1000, 8)) {
      for (uint64_t seed : {1, 2}) {
        SimulationOptions options;
        options.commits = 1000;
        options.culprit = culprit;
        options.noise_cv = 0.02;
        options.seed = seed;
        options.workers = SimulatedWorkers(workers);
        const SimulationResult result = SimulateJob(SimulationSpec(), options);
        const std::string where =
            absl::StrCat("W=", workers, " culprit=", culprit, " seed=", seed, DescribeProbes(result));
        ASSERT_EQ(result.status.status(), v1::OUTCOME_CULPRIT_FOUND) << where;
        ASSERT_EQ(result.status.culprit().index(), culprit) << where;
        ++jobs;
        const v1::Confirmation& confirmation = result.status.confirmation();
        EXPECT_TRUE(confirmation.confirmed()) << where;
        int fresh = 0;
        bool measured_ahead = false;
        const absl::Time search_end = LastBisectEnd(result.status);
        for (const v1::Probe& probe : result.status.probes()) {
          if (probe.kind() != v1::PROBE_KIND_CONFIRM) continue;
          if (probe.index() != culprit) {
            // Cancelled when the search ended, or measured ahead before it and marked unused.
            if (probe.state() != v1::PROBE_STATE_CANCELLED) {
              EXPECT_EQ(probe.state(), v1::PROBE_STATE_FINISHED) << where;
              EXPECT_LE(FromProto(probe.end_time()), search_end) << where;
              EXPECT_EQ(probe.message(), SpeculationNotTheCulpritText()) << where;
            }
            continue;
          }
          if (probe.state() != v1::PROBE_STATE_FINISHED) continue;
          fresh += probe.samples_size();
          measured_ahead = measured_ahead || FromProto(probe.start_time()) < search_end;
        }
        // Each finished pair of the culprit was judged, and nothing else fresh was.
        EXPECT_EQ(confirmation.fresh_pairs(), fresh) << where;
        ahead += measured_ahead ? 1 : 0;
      }
    }
  }
  std::printf("culprit pairs measured ahead in %d of %d jobs\n", ahead, jobs);
  EXPECT_GT(ahead, jobs / 4);
}

}  // namespace
}  // namespace kbisect

namespace kbisect {
namespace {

TEST(JobPromisesTest,
     AConfirmationStartedBesideTheLastCalibrationsIsCancelledIfTheyMoveTheCulprit) {
  // A slow GPU's provisional verdicts mislead the search; its calibration at the end exposes
  // it while the confirmation of the wrong culprit already runs: that confirmation is
  // cancelled, the search goes on, and the right culprit is confirmed. Over slots and seeds,
  // some runs take this path; every run ends right.
  int restarted = 0;
  int started_early = 0;
  for (int slot = 1; slot < 4; ++slot) {
    for (uint64_t seed = 1; seed <= 10; ++seed) {
      for (int culprit : {20, 75, 130}) {
        // Five workers: with four, the first wave (two of an even split in three, decision 139)
        // leaves the slow GPU too few provisional verdicts to mislead the search to the end.
        DriftCase c{5, slot, culprit, seed};
        const SimulationResult result = RunDrift(c);
        ASSERT_EQ(result.status.status(), v1::OUTCOME_CULPRIT_FOUND) << DescribeProbes(result);
        EXPECT_EQ(result.status.culprit().index(), culprit);
        EXPECT_TRUE(result.status.confirmation().confirmed());
        for (const v1::JobEvent& event : result.events) {
          restarted += event.message().find("the confirmation started beside it is cancelled") !=
                       std::string::npos;
        }
        for (const v1::Probe& probe : result.status.probes()) {
          if (probe.kind() != v1::PROBE_KIND_CONFIRM) continue;
          for (const v1::Probe& other : result.status.probes()) {
            started_early += other.kind() == v1::PROBE_KIND_BASELINE_GOOD && other.has_end_time() &&
                             probe.has_start_time() &&
                             FromProto(other.end_time()) > FromProto(probe.start_time());
          }
          break;
        }
      }
    }
  }
  // Measured: 100 confirmations ran beside a calibration and 29 were cancelled and restarted.
  EXPECT_GT(started_early, 0) << "some confirmations run beside a calibration";
  EXPECT_GT(restarted, 0) << "some were cancelled when a calibration moved the culprit";
}

}  // namespace
}  // namespace kbisect
