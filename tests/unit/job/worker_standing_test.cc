// Copyright 2026 The kbisect Authors.
//
// WorkerStanding on its own: a probe table, a calibration, a ledger and a confirmation built by
// hand, no job. A departed worker's running probe is cancelled and its commit given back to the
// search while another worker's stays; its measured probes waiting for a verdict go too unless
// its calibration can still judge them; BAD is measured again from the start once its worker
// cannot vouch for it, but not while its first measurement is still to come.
#include "coordinator/job/worker_standing.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "tests/unit/coordinator/bisect_job_testing.h"

namespace kbisect {
namespace {

using ::kbisect::bisect_job_testing::FinishWithSamples;
using ::kbisect::bisect_job_testing::kNow;

constexpr int kCommits = 8;

class WorkerStandingTest : public ::testing::Test, protected bisect_job_testing::JobPartsFixture {
 protected:
  WorkerStandingTest()
      : JobPartsFixture(kCommits),
        confirmation_(&frame_, &commits_, &ledger_.search(), &calibration_, /*reuse=*/nullptr,
                      &book_),
        standing_(&frame_, &book_, &ledger_, &calibration_, &confirmation_, /*pass_fail=*/false) {
    frame_.state = v1::JOB_STATE_BISECTING;
  }

  // GOOD and BAD measured on `worker`, which is the reference.
  void Baselines(const std::string& worker) {
    const int good = FinishWithSamples(&book_, book_.NewTask(v1::PROBE_KIND_BASELINE_GOOD, 0, 0),
                                       worker, {100, 100.5, 99.5});
    calibration_.worker(worker).calibration = good;
    calibration_.SetReference(worker, good);
    calibration_.SetBadProbe(
        FinishWithSamples(&book_, book_.NewTask(v1::PROBE_KIND_BASELINE_BAD, kCommits, 0), worker,
                          {130, 130.5, 129.5}));
  }

  // A bisect probe of commit `index` handed to `worker` and running; returns its task id.
  std::string Running(int index, const std::string& worker) {
    const std::string id = book_.NewTask(v1::PROBE_KIND_BISECT, index, 1);
    ledger_.search().MarkInFlight(index);
    book_.HandOut(id, worker);
    return id;
  }

  ConfirmationStage confirmation_;
  WorkerStanding standing_;
};

TEST_F(WorkerStandingTest, ADepartedWorkersRunningProbeIsCancelledAndItsCommitGivenBack) {
  Baselines("w0");
  const std::string gone = Running(3, "w1");
  const std::string stays = Running(5, "w0");
  const StandingStep step = standing_.DropWorkOf("w1", "its worker left: no heartbeat", kNow);
  EXPECT_EQ(step.to_cancel, std::vector<std::string>{gone});
  EXPECT_FALSE(step.back_to_baselines);
  EXPECT_TRUE(step.warnings.empty());
  const v1::Probe& dropped = book_.ProbeOf(book_.at(gone));
  EXPECT_EQ(dropped.state(), v1::PROBE_STATE_CANCELLED);
  EXPECT_TRUE(absl::StrContains(dropped.message(), "no heartbeat")) << dropped.message();
  EXPECT_TRUE(book_.at(gone).done);
  EXPECT_EQ(ledger_.search().InFlight(), std::vector<int>{5});
  EXPECT_FALSE(book_.at(stays).done);
  EXPECT_NE(book_.ProbeOf(book_.at(stays)).state(), v1::PROBE_STATE_CANCELLED);
}

TEST_F(WorkerStandingTest, MeasuredProbesWaitingForAVerdictGoUnlessTheyCanStillBeJudged) {
  Baselines("w0");
  // w1 measured commit 4 but has no calibration: nothing can judge its measurement.
  const int row = FinishWithSamples(&book_, book_.NewTask(v1::PROBE_KIND_BISECT, 4, 1), "w1",
                                    {101, 100.8, 101.2});
  ledger_.search().MarkInFlight(4);
  ledger_.Await(row);
  const StandingStep step = standing_.DropWorkOf("w1", "its worker left", kNow,
                                                 /*keep_measured=*/true);
  EXPECT_TRUE(ledger_.awaiting().empty());
  EXPECT_EQ(book_.probe(row).state(), v1::PROBE_STATE_CANCELLED);
  EXPECT_TRUE(ledger_.search().InFlight().empty());
  EXPECT_TRUE(step.to_cancel.empty());  // Nothing was running.

  // w0's calibration can judge what it measured: kept when asked to keep measurements.
  const int kept =
      FinishWithSamples(&book_, book_.NewTask(v1::PROBE_KIND_BISECT, 6, 1), "w0", {129, 130, 131});
  ledger_.search().MarkInFlight(6);
  ledger_.Await(kept);
  standing_.DropWorkOf("w0", "its worker left", kNow, /*keep_measured=*/true);
  EXPECT_EQ(ledger_.awaiting(), std::vector<int>{kept});
  EXPECT_EQ(book_.probe(kept).state(), v1::PROBE_STATE_FINISHED);
}

TEST_F(WorkerStandingTest, BadIsMeasuredAgainFromTheStartWhenItsWorkerCannotVouchForIt) {
  Baselines("w0");
  const int old_bad = calibration_.bad_probe();
  const StandingStep step = standing_.RemeasureBad("its worker w0 was quarantined", kNow);
  const int new_bad = calibration_.bad_probe();
  ASSERT_NE(new_bad, old_bad);
  EXPECT_EQ(book_.probe(new_bad).kind(), v1::PROBE_KIND_BASELINE_BAD);
  EXPECT_EQ(book_.probe(new_bad).index(), kCommits);
  EXPECT_EQ(book_.probe(new_bad).state(), v1::PROBE_STATE_PENDING);
  EXPECT_TRUE(step.back_to_baselines);
  EXPECT_EQ(frame_.state, v1::JOB_STATE_BISECTING) << "the job applies the step, not the part";
  ASSERT_EQ(step.warnings.size(), 1u);
  EXPECT_TRUE(absl::StrContains(step.warnings[0].bad_remeasured().why(), "quarantined"))
      << step.warnings[0].bad_remeasured().why();

  // Its first measurement still to come (queued for any worker): nothing more to do.
  const StandingStep again = standing_.RemeasureBad("its worker w1 left", kNow);
  EXPECT_EQ(calibration_.bad_probe(), new_bad);
  EXPECT_FALSE(again.back_to_baselines);
  EXPECT_TRUE(again.warnings.empty());
}

}  // namespace
}  // namespace kbisect
