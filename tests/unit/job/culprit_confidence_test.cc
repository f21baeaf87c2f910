// Copyright 2026 The kbisect Authors.
//
// CulpritConfidence on its own: a probe table, a calibration and a ledger built by hand, no job.
// The end check asks a boundary commit for more runs while the culprit is short of the
// confidence, waits while one runs, warns once both boundaries ran --max-runs, and says nothing
// once the confidence is reached; an AMBIGUOUS probe is put on the posterior's side.
#include "coordinator/job/culprit_confidence.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "report/event_words.h"
#include "tests/unit/coordinator/bisect_job_testing.h"

namespace kbisect {
namespace {

using ::kbisect::bisect_job_testing::FinishWithSamples;
using ::kbisect::bisect_job_testing::MakeSpec;

constexpr int kCommits = 8;

class CulpritConfidenceTest : public ::testing::Test,
                              protected bisect_job_testing::JobPartsFixture {
 protected:
  CulpritConfidenceTest()
      : JobPartsFixture(kCommits, Spec()),
        confidence_(&frame_, &commits_, &calibration_, &ledger_, &book_, &confirmation_) {
    frame_.state = v1::JOB_STATE_BISECTING;
  }

  static v1::JobSpec Spec() {
    v1::JobSpec spec = MakeSpec();
    spec.set_confidence(0.95);
    spec.set_runs_per_commit(3);
    spec.set_max_runs(12);
    return spec;
  }

  // The baselines on worker w0: GOOD (commit 0) and BAD (the last commit).
  void Baselines(const std::vector<double>& good, const std::vector<double>& bad) {
    const int good_row =
        FinishWithSamples(&book_, book_.NewTask(v1::PROBE_KIND_BASELINE_GOOD, 0, 0), "w0", good);
    calibration_.worker("w0").calibration = good_row;
    calibration_.worker("w0").checked_out = 0;
    calibration_.SetReference("w0", good_row);
    calibration_.SetBadProbe(FinishWithSamples(
        &book_, book_.NewTask(v1::PROBE_KIND_BASELINE_BAD, kCommits, 0), "w0", bad));
  }

  // A bisect probe of commit `index` on w0 with `samples`, judged `verdict`; returns its row.
  int Judged(int index, const std::vector<double>& samples, v1::Verdict verdict) {
    const int row =
        FinishWithSamples(&book_, book_.NewTask(v1::PROBE_KIND_BISECT, index, 1), "w0", samples);
    EXPECT_TRUE(ledger_.Record(row, verdict));
    book_.mutable_probe(row).set_verdict(verdict);
    return row;
  }

  CulpritConfidence confidence_;
};

TEST_F(CulpritConfidenceTest, NothingToDoBeforeTheSearchNamedOneCulprit) {
  Baselines({100, 100.5, 99.5}, {130, 130.5, 129.5});
  Judged(3, {100, 100.2, 99.8}, v1::VERDICT_GOOD);
  const CulpritConfidence::EndCheck check = confidence_.CheckCulprit();
  EXPECT_FALSE(check.wait);
  EXPECT_EQ(check.extend_row, -1);
  EXPECT_FALSE(check.warning.has_value());
}

TEST_F(CulpritConfidenceTest, ClearStepsReachTheConfidenceWithoutMoreRuns) {
  Baselines({100, 100.5, 99.5}, {130, 130.5, 129.5});
  Judged(4, {100, 100.2, 99.8}, v1::VERDICT_GOOD);
  Judged(5, {130, 130.2, 129.8}, v1::VERDICT_BAD);
  const CulpritConfidence::EndCheck check = confidence_.CheckCulprit();
  EXPECT_FALSE(check.wait);
  EXPECT_EQ(check.extend_row, -1);
  EXPECT_FALSE(check.warning.has_value()) << WarningWords(*check.warning);
}

TEST_F(CulpritConfidenceTest, ABoundaryInDoubtRunsAgainAndTheJobWaitsForIt) {
  Baselines({100, 104, 96}, {106, 110, 102});
  const int good = Judged(4, {103, 99, 105}, v1::VERDICT_GOOD);
  const int bad = Judged(5, {103, 107, 101}, v1::VERDICT_BAD);
  const CulpritConfidence::EndCheck check = confidence_.CheckCulprit();
  EXPECT_TRUE(check.wait);
  ASSERT_TRUE(check.extend_row == good || check.extend_row == bad) << check.extend_row;
  EXPECT_GE(check.more_runs, 3);
  EXPECT_TRUE(check.event.has_confidence_remeasure());
  EXPECT_FALSE(check.warning.has_value());

  // While that commit runs again, the job waits and nothing more is asked.
  book_.mutable_probe(check.extend_row).set_state(v1::PROBE_STATE_RUNNING);
  const CulpritConfidence::EndCheck running = confidence_.CheckCulprit();
  EXPECT_TRUE(running.wait);
  EXPECT_EQ(running.extend_row, -1);
}

TEST_F(CulpritConfidenceTest, BothBoundariesAtMaxRunsLeaveAWarningAndNoWait) {
  Baselines({100, 104, 96}, {106, 110, 102});
  std::vector<double> noisy;
  for (int i = 0; i < 12; ++i) noisy.push_back(i % 2 == 0 ? 98 : 108);
  Judged(4, noisy, v1::VERDICT_GOOD);
  Judged(5, noisy, v1::VERDICT_BAD);
  const CulpritConfidence::EndCheck check = confidence_.CheckCulprit();
  EXPECT_FALSE(check.wait);
  EXPECT_EQ(check.extend_row, -1);
  ASSERT_TRUE(check.warning.has_value());
  EXPECT_TRUE(absl::StrContains(WarningWords(*check.warning), "short of the confidence"))
      << WarningWords(*check.warning);
}

TEST_F(CulpritConfidenceTest, AnAmbiguousProbeTakesThePosteriorsSide) {
  Baselines({100, 100.5, 99.5}, {130, 130.5, 129.5});
  Judged(2, {100, 100.2, 99.8}, v1::VERDICT_GOOD);
  const int row =
      FinishWithSamples(&book_, book_.NewTask(v1::PROBE_KIND_BISECT, 5, 1), "w0", {129, 130, 131});
  const CulpritConfidence::Side side = confidence_.Resolve(row, v1::VERDICT_AMBIGUOUS);
  EXPECT_EQ(side.verdict, v1::VERDICT_BAD);
  EXPECT_TRUE(absl::StrContains(side.note, "taken as BAD")) << side.note;
  // A decided verdict stands, whatever the posterior says.
  EXPECT_EQ(confidence_.Resolve(row, v1::VERDICT_GOOD).verdict, v1::VERDICT_GOOD);
  EXPECT_TRUE(confidence_.Resolve(row, v1::VERDICT_GOOD).note.empty());
}

}  // namespace
}  // namespace kbisect
