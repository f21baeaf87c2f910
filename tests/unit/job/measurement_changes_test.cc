// Copyright 2026 The kbisect Authors.
//
// A culprit that changed the benchmark's harness is reported as a method change, named; a step
// elsewhere, or workers that differ only in their GPU, are not (the job simulation with
// manifests on every result).
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/job_simulator.h"

namespace kbisect {
namespace {

using ::testing::HasSubstr;

SimulationResult RunWithHarnessChange(int harness_change, uint64_t seed) {
  SimulationOptions options;
  options.commits = 100;
  options.culprit = 50;
  options.noise_cv = 0.01;
  options.seed = seed;
  options.workers = SimulatedWorkers(3);
  options.harness_change = harness_change;
  return SimulateJob(SimulationSpec(), options);
}

TEST(MeasurementChangesTest, ACulpritThatChangedTheHarnessIsAMethodChange) {
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    const SimulationResult result = RunWithHarnessChange(/*harness_change=*/50, seed);
    ASSERT_EQ(result.status.status(), v1::OUTCOME_CULPRIT_FOUND);
    EXPECT_EQ(result.status.culprit().index(), 50);
    EXPECT_EQ(result.status.cause(), v1::CAUSE_BENCHMARK_METHOD_CHANGE);
    ASSERT_EQ(result.status.measurement_changes_size(), 1);
    EXPECT_THAT(result.status.measurement_changes(0), HasSubstr("benchmarks/harness.cfg"));
    bool warned = false;
    for (const std::string& warning : result.status.warnings()) {
      warned = warned || warning.find("changed how the benchmark measures") != std::string::npos;
    }
    EXPECT_TRUE(warned);
  }
}

TEST(MeasurementChangesTest, AHarnessChangeElsewhereOrAnotherGpuIsNot) {
  // The harness changed at 20, long before the step: last good (49) and the culprit share it.
  // Their probes ran on different workers (GPU uuids differ): not a measurement change.
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    const SimulationResult result = RunWithHarnessChange(/*harness_change=*/20, seed);
    ASSERT_EQ(result.status.status(), v1::OUTCOME_CULPRIT_FOUND);
    EXPECT_EQ(result.status.cause(), v1::CAUSE_REAL_REGRESSION);
    EXPECT_EQ(result.status.measurement_changes_size(), 0);
  }
}

}  // namespace
}  // namespace kbisect
