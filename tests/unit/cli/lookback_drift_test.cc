// Copyright 2026 The kbisect Authors.
//
// Issue 46: `--find-good` took a 1.4% load offset for "better". A lookback job's baselines of
// BAD~d and BAD are measured at two moments; a machine whose speed drifts between them (a VM
// under load drifts up to 1.6x within minutes, a GPU with its temperature) fakes a step. The
// job's simulation, with the machine's speed drifting slowly or stepping in the middle of the
// baselines, shows that the look-back names BAD~d better only when interleaved pairs hold the
// step (LookbackOutcome), and that a real step still counts.
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/find_good.h"
#include "gtest/gtest.h"
#include "tests/testing/job_simulator.h"

namespace kbisect {
namespace {

struct Drift {
  std::string name;
  std::function<double(double)> factor;
};

// The job measures BAD's baseline first (runs ending at about 0.6, 1.0 and 1.4 s), then
// GOOD's (2.0, 2.4, 2.8 s): a machine that gets faster (a load going away) makes BAD look slower
// than BAD~d when nothing changed. A slow linear drift (1% a second, the 1.4% of the issue
// between the two baselines) and a 3% step between the baselines or during BAD's.
std::vector<Drift> Drifts() {
  return {{"linear -1%/s", [](double t) { return 1 - 0.01 * t; }},
          {"step -3% at 1.6 s", [](double t) { return t < 1.6 ? 1.03 : 1.0; }},
          {"step -3% at 0.8 s", [](double t) { return t < 0.8 ? 1.03 : 1.0; }}};
}

SimulationOptions LookbackJob(int distance, int culprit, int workers, uint64_t seed,
                              const Drift& drift) {
  SimulationOptions options;
  options.commits = distance;  // GOOD = BAD~distance.
  options.culprit = culprit;
  options.good_value = 1.44;
  options.bad_value = culprit <= distance ? 1.44 * 1.45 : 1.44;
  options.noise_cv = 0.002;
  options.seed = seed;
  options.workers = SimulatedWorkers(workers);
  options.machine_factor = drift.factor;
  return options;
}

TEST(LookbackDriftTest, AnOffsetFromADriftingMachineIsNeverBetter) {
  int fooled_endpoints = 0;
  int cases = 0;
  for (const Drift& drift : Drifts()) {
    for (int distance : {1, 2, 4, 8}) {
      for (int workers : {1, 2}) {
        for (uint64_t seed = 1; seed <= 4; ++seed) {
          // No step anywhere in BAD~distance..BAD.
          SimulationOptions options = LookbackJob(distance, 1 << 20, workers, seed, drift);
          bool endpoints_saw_a_step = false;
          options.observe = [&](const v1::JobStatus& status) {
            endpoints_saw_a_step |=
                status.state() == v1::JOB_STATE_BISECTING && !status.baseline().provisional();
            // What a polling --find-good reads while the job runs.
            EXPECT_NE(LookbackOutcome(status), Lookback::Outcome::kBetter);
          };
          const SimulationResult result = SimulateJob(SimulationSpec(), options);
          ++cases;
          fooled_endpoints += endpoints_saw_a_step;
          if (getenv("LOOKBACK_DEBUG") != nullptr) {
            std::printf("%s d=%d W=%d seed=%d\n%s\n", drift.name.c_str(), distance, workers,
                        static_cast<int>(seed), DescribeProbes(result).c_str());
            std::printf("confirmation: %s\n",
                        result.status.confirmation().ShortDebugString().c_str());
            for (const v1::JobEvent& event : result.events) {
              std::printf("  %s\n", event.message().c_str());
            }
          }
          const std::optional<Lookback::Outcome> outcome = LookbackOutcome(result.status);
          ASSERT_TRUE(outcome.has_value());
          EXPECT_NE(*outcome, Lookback::Outcome::kBetter)
              << drift.name << ", HEAD~" << distance << ", W=" << workers << ", seed " << seed
              << "\n"
              << DescribeProbes(result);
        }
      }
    }
  }
  std::printf("%d lookback jobs over a drifting machine; the endpoints alone saw a step in %d\n",
              cases, fooled_endpoints);
  // The drifts are large enough to fool baselines measured at two moments.
  EXPECT_GT(fooled_endpoints, cases / 4);
}

TEST(LookbackDriftTest, ARealStepIsBetterOnADriftingMachine) {
  for (const Drift& drift : Drifts()) {
    for (int distance : {1, 4, 8}) {
      for (uint64_t seed = 1; seed <= 3; ++seed) {
        // The 45% step is BAD~distance's child (index 1 of the job's list).
        const SimulationResult result =
            SimulateJob(SimulationSpec(), LookbackJob(distance, 1, 2, seed, drift));
        EXPECT_EQ(LookbackOutcome(result.status), Lookback::Outcome::kBetter)
            << drift.name << ", HEAD~" << distance << ", seed " << seed << "\n"
            << DescribeProbes(result);
        EXPECT_EQ(result.status.status(), v1::OUTCOME_CULPRIT_FOUND);
        EXPECT_EQ(result.status.culprit().index(), 1);
      }
    }
  }
}

}  // namespace
}  // namespace kbisect
