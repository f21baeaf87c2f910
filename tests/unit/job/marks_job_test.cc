// Copyright 2026 The kbisect Authors.
//
// Marks through the whole job (the asynchronous job simulation): a mark stands in for a
// measurement, is never probed, and a wrong one is caught by the confirmation.
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "tests/testing/job_simulator.h"

namespace kbisect {
namespace {

// The simulator's sha of commit `index`.
std::string Sha(int index) { return absl::StrFormat("%040d", index); }

SimulationResult RunMarked(const std::vector<std::pair<int, v1::Verdict>>& marks, uint64_t seed) {
  v1::JobSpec spec = SimulationSpec();
  for (const auto& [index, verdict] : marks) {
    v1::CommitMark* mark = spec.add_marks();
    mark->set_commit(Sha(index));
    mark->set_verdict(verdict);
  }
  SimulationOptions options;
  options.commits = 100;
  options.culprit = 50;
  options.noise_cv = 0.01;
  options.seed = seed;
  options.workers = SimulatedWorkers(4);
  return SimulateJob(spec, options);
}

TEST(MarksJobTest, MarksNarrowTheSearchAndAreNeverProbed) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    const SimulationResult plain = RunMarked({}, seed);
    const SimulationResult marked =
        RunMarked({{30, v1::VERDICT_GOOD}, {60, v1::VERDICT_BAD}, {45, v1::VERDICT_SKIP}}, seed);
    ASSERT_EQ(marked.status.status(), v1::OUTCOME_CULPRIT_FOUND);
    EXPECT_EQ(marked.status.culprit().index(), 50);
    ASSERT_EQ(marked.status.marks_size(), 3);
    EXPECT_EQ(marked.status.marks(0).index(), 30);
    EXPECT_EQ(marked.status.marks(1).index(), 45);
    EXPECT_EQ(marked.status.marks(2).sha(), Sha(60));
    for (const v1::Probe& probe : marked.status.probes()) {
      if (probe.kind() != v1::PROBE_KIND_BISECT) continue;
      EXPECT_GT(probe.index(), 30) << "seed " << seed;
      EXPECT_LT(probe.index(), 60) << "seed " << seed;
      EXPECT_NE(probe.index(), 45) << "a skip mark is never probed";
    }
    EXPECT_LE(marked.status.rounds(), plain.status.rounds()) << "seed " << seed;
    EXPECT_TRUE(marked.status.confirmation().confirmed());
  }
}

TEST(MarksJobTest, ASkipMarkAtTheCulpritLeavesCandidates) {
  const SimulationResult result = RunMarked({{50, v1::VERDICT_SKIP}}, 1);
  ASSERT_EQ(result.status.status(), v1::OUTCOME_CANDIDATES_FOUND);
  const std::vector<std::string> candidates(result.status.candidates().begin(),
                                            result.status.candidates().end());
  EXPECT_EQ(candidates, (std::vector<std::string>{Sha(50), Sha(51)}));
}

TEST(MarksJobTest, AWrongMarkIsTrustedButTheConfirmationRefusesItsCulprit) {
  // The user marks commit 40 bad, but the step is at 50: the search believes the mark and ends
  // at 40, and the interleaved re-measurement of 39 against 40 finds no step, so 40 is reported
  // as unconfirmed, not as the culprit.
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    const SimulationResult result = RunMarked({{40, v1::VERDICT_BAD}}, seed);
    EXPECT_EQ(result.status.first_bad_index(), 40);
    EXPECT_FALSE(result.status.confirmation().confirmed());
    EXPECT_EQ(result.status.status(), v1::OUTCOME_INCONCLUSIVE);
    EXPECT_NE(result.status.error().find("did not reproduce"), std::string::npos);
  }
}

}  // namespace
}  // namespace kbisect
