// Copyright 2026 The kbisect Authors.
//
// Checks on a job's final JobStatus (`kbisect status --json`) that the fault and crash tests
// share: no accepted result lost or counted twice.
#ifndef KBISECT_TESTS_INTEGRATION_JOB_CHECKS_H_
#define KBISECT_TESTS_INTEGRATION_JOB_CHECKS_H_

#include <map>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace kbisect {
namespace testing {

inline bool JobFinished(const nlohmann::json& job) {
  const std::string state = job.value("state", "");
  return state == "done" || state == "failed" || state == "cancelled";
}

// "Nothing lost or counted twice", for a job whose probes ran `runs` runs (`--runs`):
//   * no commit index carries more than one verdict: among probes with a verdict, each index
//     appears once (a result applied twice, or a probe measured again and classified again,
//     would add a second one);
//   * every measured probe holds exactly the samples of one report (a duplicated report would
//     double them), and the job's bench_runs (runs of all accepted reports) equals the sum of
//     the probes' runs (every accepted report is in exactly one probe) plus `follow_up_runs`
//     (a job's result counts the runs of its follow-up jobs too);
//   * no probe was given up after too many attempts (outcome infra_error), so every probe that
//     lost its worker was measured by another one.
inline void ExpectNothingLostOrDuplicated(const nlohmann::json& job, size_t runs = 3,
                                          int follow_up_runs = 0) {
  std::map<int, int> verdicts;  // Commit index -> probes with a verdict there.
  int total_runs = 0;
  // A benchmark that repeats exactly (every probe's samples one value) takes one run a probe
  // once its baselines show it (decision 229): a probe then holds 1 or `runs` samples.
  bool repeats_exactly = true;
  for (const auto& probe : job["probes"]) {
    if (!probe.contains("samples")) continue;
    for (const auto& sample : probe["samples"]) {
      repeats_exactly = repeats_exactly && sample == probe["samples"][0];
    }
  }
  for (const auto& probe : job["probes"]) {
    const std::string verdict = probe.value("verdict", "");
    if (!verdict.empty() && verdict != "unspecified") ++verdicts[probe.value("index", -1)];
    EXPECT_NE(probe.value("outcome", ""), "infra_error") << probe.dump();
    const size_t samples = probe.contains("samples") ? probe["samples"].size() : 0;
    // A confirmation probe interleaves two commits' runs; its samples are not one report's.
    if (probe.value("kind", "") != "confirm" &&
        (probe.value("state", "") == "finished" || samples > 0)) {
      // A GOOD calibration is sized by the noise (1..--runs runs); the others run --runs.
      const std::string kind = probe.value("kind", "");
      const bool reference =
          kind == "baseline_bad" ||
          (kind == "baseline_good" &&
           probe.value("worker", "") == job["baseline"]["good"].value("worker", ""));
      if (kind == "baseline_good" && !reference) {
        EXPECT_GE(samples, 1u) << probe.dump();
        EXPECT_LE(samples, runs) << "a measured probe holds one report's samples: " << probe.dump();
      } else if (repeats_exactly && !reference && samples == 1) {
        // One run of a benchmark that repeats exactly.
      } else {
        EXPECT_EQ(samples, runs) << "a measured probe holds one report's samples: " << probe.dump();
      }
    }
    total_runs += probe.contains("runs") ? static_cast<int>(probe["runs"].size()) : 0;
  }
  for (const auto& [index, count] : verdicts) {
    if (count == 1) continue;
    std::string probes_there;
    for (const auto& probe : job["probes"]) {
      if (probe.value("index", -1) == index) probes_there += "\n  " + probe.dump();
    }
    ADD_FAILURE() << "commit index " << index << " has " << count << " verdicts:" << probes_there;
  }
  EXPECT_GE(verdicts.size(), 2u);
  EXPECT_EQ(job.value("bench_runs", -1), total_runs + follow_up_runs);
}

}  // namespace testing
}  // namespace kbisect

#endif  // KBISECT_TESTS_INTEGRATION_JOB_CHECKS_H_
