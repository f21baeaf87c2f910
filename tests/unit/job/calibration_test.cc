// Copyright 2026 The kbisect Authors.
#include "coordinator/job/calibration.h"

#include <string>
#include <vector>

#include "common/rpc/enum_label.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

// A probe table built by hand: GOOD calibrations per worker, the BAD baseline.
class CalibrationTest : public ::testing::Test {
 protected:
  CalibrationTest() : calibration_(&frame_, &rows_, /*pass_fail=*/false) {
    frame_.state = v1::JOB_STATE_BISECTING;
  }

  int AddProbe(v1::ProbeKind kind, const std::string& worker, std::vector<double> samples) {
    v1::Probe* probe = rows_.Add();
    probe->set_kind(kind);
    probe->set_worker(worker);
    probe->set_state(v1::PROBE_STATE_FINISHED);
    probe->set_outcome(v1::TASK_OUTCOME_SUCCEEDED);
    std::vector<double> sorted = samples;
    std::sort(sorted.begin(), sorted.end());
    probe->set_median(sorted[sorted.size() / 2]);
    for (double s : samples) probe->add_samples(s);
    return rows_.size() - 1;
  }

  void Calibrate(const std::string& worker, std::vector<double> samples) {
    const int position = AddProbe(v1::PROBE_KIND_BASELINE_GOOD, worker, std::move(samples));
    Calibration::Worker& state = calibration_.worker(worker);
    state.calibration = position;
    state.checked_out = 0;
    if (calibration_.good_probe() < 0) calibration_.SetReference(worker, position);
  }

  void MeasureBad(const std::string& worker, std::vector<double> samples) {
    calibration_.SetBadProbe(AddProbe(v1::PROBE_KIND_BASELINE_BAD, worker, std::move(samples)));
    calibration_.worker(worker).checked_out = 10;
  }

  JobFrame frame_;
  ProbeRows rows_;
  Calibration calibration_;
};

TEST_F(CalibrationTest, WorkersWithoutAnOffsetShareOnePool) {
  Calibrate("w0", {1.00, 1.01, 0.99});
  Calibrate("w1", {1.005, 0.995, 1.0});
  MeasureBad("w0", {1.25, 1.26, 1.24});
  EXPECT_FALSE(calibration_.HasOffset("w1"));
  EXPECT_THAT(calibration_.PoolMembers(), UnorderedElementsAre("w0", "w1"));
  EXPECT_EQ(calibration_.PooledSamples(v1::VERDICT_GOOD).size(), 6u);
  EXPECT_EQ(calibration_.PooledSamples(v1::VERDICT_BAD).size(), 3u);
  EXPECT_TRUE(calibration_.FindOutliers().empty());
}

TEST_F(CalibrationTest, AnOffsetWorkerIsJudgedInItsOwnFrame) {
  Calibrate("w0", {1.00, 1.01, 0.99});
  Calibrate("w1", {1.10, 1.11, 1.09});  // 10% slower: an offset, not an outlier of a 25% step.
  MeasureBad("w1", {1.375, 1.38, 1.37});
  ASSERT_TRUE(calibration_.HasOffset("w1"));
  EXPECT_THAT(calibration_.PoolMembers(), ElementsAre("w0"));
  // BAD measured on w1 is brought into w0's frame by the ratio of their GOOD medians.
  EXPECT_NEAR(calibration_.ReferenceBadMedian(), 1.375 / 1.10, 1e-9);
  std::vector<double> good;
  std::vector<double> bad;
  calibration_.BaselinesFor("w1", &good, &bad);
  EXPECT_THAT(good, ElementsAre(1.10, 1.11, 1.09));
  EXPECT_NEAR(bad[0], 1.375, 1e-9);  // Back in w1's own frame.
  EXPECT_NEAR(calibration_.InReferenceFrame("w1", 1.21), 1.10, 1e-9);
}

TEST_F(CalibrationTest, TwoDisagreeingGpusWaitForAThirdBeforeBlamingEither) {
  Calibrate("w0", {1.00, 1.01, 0.99});
  MeasureBad("w0", {1.25, 1.26, 1.24});
  calibration_.worker("w2").checked_out = 0;  // Still to calibrate.
  Calibrate("w1", {1.35, 1.36, 1.34});
  EXPECT_TRUE(calibration_.FindOutliers().empty());
  Calibrate("w2", {1.0, 1.005, 0.995});
  const std::vector<QuarantineDecision> outliers = calibration_.FindOutliers();
  ASSERT_EQ(outliers.size(), 1u);
  EXPECT_EQ(outliers[0].worker, "w1");
  EXPECT_EQ(outliers[0].kind, v1::DRIFT_KIND_BASELINE_OUTLIER);
  EXPECT_NEAR(outliers[0].offset_fraction, 0.35, 0.01);
  EXPECT_NEAR(outliers[0].regression_fraction, 0.25, 0.01);
  EXPECT_EQ(EnumLabel(outliers[0].kind), "baseline_outlier");
}

TEST_F(CalibrationTest, TheReferenceItselfCanBeTheOutlier) {
  Calibrate("w0", {1.35, 1.36, 1.34});  // The reference is the slow GPU.
  Calibrate("w1", {1.0, 1.01, 0.99});
  Calibrate("w2", {1.0, 1.005, 0.995});
  MeasureBad("w1", {1.25, 1.26, 1.24});
  const std::vector<QuarantineDecision> outliers = calibration_.FindOutliers();
  ASSERT_EQ(outliers.size(), 1u);
  EXPECT_EQ(outliers[0].worker, "w0");
}

TEST_F(CalibrationTest, AControlThatMovedIsDrift) {
  Calibrate("w0", {1.00, 1.01, 0.99});
  MeasureBad("w0", {1.25, 1.26, 1.24});
  frame_.recorded.baselines.mutable_good()->set_median(1.0);
  frame_.recorded.baselines.mutable_bad()->set_median(1.25);
  const int steady = AddProbe(v1::PROBE_KIND_CONTROL, "w0", {1.0, 1.004, 0.998});
  EXPECT_FALSE(calibration_.CheckControl("w0", rows_.Get(steady)).has_value());
  const int moved = AddProbe(v1::PROBE_KIND_CONTROL, "w0", {1.2, 1.21, 1.19});
  const std::optional<QuarantineDecision> drift = calibration_.CheckControl("w0", rows_.Get(moved));
  ASSERT_TRUE(drift.has_value());
  EXPECT_EQ(drift->kind, v1::DRIFT_KIND_CONTROL_MOVED);
  EXPECT_NEAR(drift->offset_fraction, 0.2, 0.01);
}

TEST_F(CalibrationTest, ResetReferenceHandsTheRoleToACalibratedWorker) {
  Calibrate("w0", {1.00, 1.01, 0.99});
  Calibrate("w1", {1.0, 1.01, 0.99});
  calibration_.ResetReference();
  EXPECT_EQ(calibration_.reference_worker(), "w1");
  calibration_.worker("w1").quarantined = true;
  calibration_.ResetReference();
  // The old reference (w1) is passed over; w0 is calibrated and not quarantined.
  EXPECT_EQ(calibration_.reference_worker(), "w0");
}

TEST_F(CalibrationTest, WorkerReportShowsCalibrationInTheReferenceFrame) {
  Calibrate("w0", {1.00, 1.01, 0.99});
  Calibrate("w1", {1.10, 1.11, 1.09});
  MeasureBad("w0", {1.25, 1.26, 1.24});
  std::vector<v1::DriftEvent> drift(1);
  drift[0].set_worker("w1");
  drift[0].set_detail("slow");
  const std::vector<v1::JobWorker> report = calibration_.WorkerReport(drift);
  ASSERT_EQ(report.size(), 2u);
  EXPECT_EQ(report[1].worker(), "w1");
  EXPECT_NEAR(report[1].calibration_bad(), 1.25 * 1.10, 1e-9);
  EXPECT_TRUE(report[1].drift());
  EXPECT_EQ(report[1].reason(), "slow");
}

TEST_F(CalibrationTest, CalibrationsTakeTheRunsTheStepAndNoiseNeedOnceTheSearchRuns) {
  frame_.spec.set_runs_per_commit(9);
  frame_.state = v1::JOB_STATE_BASELINES;
  Calibrate("w0", {1.00, 1.01, 0.99});
  MeasureBad("w0", {1.25, 1.26, 1.24});
  // Before the step is known: --runs.
  EXPECT_EQ(calibration_.RunsNeeded(), 9);
  EXPECT_EQ(calibration_.RunsForRole(/*reference=*/false, /*reuses_cached=*/false), 9);
  // A job that reuses cached results: one run for a worker that does not hold the reference.
  EXPECT_EQ(calibration_.RunsForRole(/*reference=*/false, /*reuses_cached=*/true), 1);
  EXPECT_EQ(calibration_.RunsForRole(/*reference=*/true, /*reuses_cached=*/true), 9);
  // The search runs: a 25% step against 1% noise is told from an offset of a third of it by
  // three standard errors in fewer runs than --runs.
  frame_.state = v1::JOB_STATE_BISECTING;
  frame_.recorded.baselines.mutable_good()->set_median(1.00);
  frame_.recorded.baselines.mutable_bad()->set_median(1.25);
  const int needed = calibration_.RunsNeeded();
  EXPECT_GE(needed, 1);
  EXPECT_LT(needed, 9);
  EXPECT_EQ(calibration_.RunsForRole(/*reference=*/false, /*reuses_cached=*/true), needed);
  // A step lost in the noise: --runs at most.
  frame_.recorded.baselines.mutable_bad()->set_median(1.001);
  EXPECT_EQ(calibration_.RunsNeeded(), 9);
}

TEST_F(CalibrationTest, BadsWorkerTakesTheReferenceBackWithItsOwnGood) {
  frame_.state = v1::JOB_STATE_BASELINES;
  MeasureBad("w0", {1.25, 1.26, 1.24});
  Calibrate("w1", {1.00, 1.01, 0.99});  // Stood in as the reference.
  ASSERT_EQ(calibration_.reference_worker(), "w1");
  EXPECT_FALSE(calibration_.ReferenceNotStarted());
  // w1's own calibration is no BAD worker's GOOD.
  EXPECT_FALSE(calibration_.AdoptBadWorkersReference(calibration_.good_probe()));
  const int own = AddProbe(v1::PROBE_KIND_BASELINE_GOOD, "w0", {1.0, 1.0, 1.0});
  EXPECT_FALSE(calibration_.AdoptBadWorkersReference(own)) << "not w0's calibration yet";
  calibration_.worker("w0").calibration = own;
  EXPECT_TRUE(calibration_.AdoptBadWorkersReference(own));
  EXPECT_EQ(calibration_.reference_worker(), "w0");
  EXPECT_EQ(calibration_.good_probe(), own);
  EXPECT_TRUE(calibration_.bad_offset_checked());
  EXPECT_TRUE(calibration_.EndpointsOnOneGpu());
}

TEST_F(CalibrationTest, AnUnstartedReferenceGoodMayBeStoodInFor) {
  frame_.state = v1::JOB_STATE_BASELINES;
  frame_.spec.set_runs_per_commit(5);
  MeasureBad("w0", {1.25, 1.26, 1.24});
  // BAD's worker's GOOD is queued, not handed out.
  v1::Probe* queued = rows_.Add();
  queued->set_kind(v1::PROBE_KIND_BASELINE_GOOD);
  queued->set_state(v1::PROBE_STATE_PENDING);
  calibration_.SetReference("w0", rows_.size() - 1);
  EXPECT_TRUE(calibration_.ReferenceNotStarted());
  // Another worker calibrating now stands in as the reference: --runs, even in a job that
  // reuses cached results; BAD's worker itself is not a stand-in.
  EXPECT_EQ(calibration_.RunsAtHandOut("w1", /*reuses_cached=*/true), 5);
  EXPECT_EQ(calibration_.RunsAtHandOut("w0", /*reuses_cached=*/true), 1);
  queued->set_worker("w0");
  EXPECT_FALSE(calibration_.ReferenceNotStarted());
  EXPECT_EQ(calibration_.RunsAtHandOut("w1", /*reuses_cached=*/true), 1);
}

TEST_F(CalibrationTest, ActiveWorkersCountThoseWithACheckoutUpToTheCap) {
  EXPECT_EQ(calibration_.ActiveWorkers(0), 1) << "at least one";
  Calibrate("w0", {1.00, 1.01, 0.99});
  Calibrate("w1", {1.00, 1.01, 0.99});
  Calibrate("w2", {1.00, 1.01, 0.99});
  calibration_.worker("w3");  // Never checked a commit out.
  EXPECT_EQ(calibration_.ActiveWorkers(0), 3);
  EXPECT_EQ(calibration_.ActiveWorkers(2), 2);
  calibration_.worker("w1").quarantined = true;
  calibration_.worker("w2").gone = true;
  EXPECT_EQ(calibration_.ActiveWorkers(0), 1);
}

TEST_F(CalibrationTest, AVerdictIsProvisionalUntilItsWorkerAndBadsWorkerCalibrated) {
  Calibrate("w0", {1.00, 1.01, 0.99});
  MeasureBad("w2", {1.25, 1.26, 1.24});
  const int row = AddProbe(v1::PROBE_KIND_BISECT, "w1", {1.25});
  rows_.Mutable(row)->set_verdict(v1::VERDICT_BAD);
  EXPECT_TRUE(calibration_.IsProvisional(rows_.Get(row))) << "w1 has not calibrated";
  Calibrate("w1", {1.0, 1.0, 1.0});
  EXPECT_TRUE(calibration_.IsProvisional(rows_.Get(row))) << "BAD's worker w2 has not";
  Calibrate("w2", {1.0, 1.0, 1.0});
  EXPECT_FALSE(calibration_.IsProvisional(rows_.Get(row)));
  rows_.Mutable(row)->set_verdict(v1::VERDICT_SKIP);
  EXPECT_FALSE(calibration_.IsProvisional(rows_.Get(row))) << "a skip is no verdict";
}

TEST_F(CalibrationTest, MediansAtCommitsAreInTheReferencesFrame) {
  frame_.commit_count = 10;
  Calibrate("w0", {1.00, 1.01, 0.99});
  Calibrate("w1", {1.10, 1.11, 1.09});  // 10% slower.
  MeasureBad("w0", {1.25, 1.26, 1.24});
  const int row = AddProbe(v1::PROBE_KIND_BISECT, "w1", {1.32, 1.32, 1.32});
  rows_.Mutable(row)->set_index(6);
  rows_.Mutable(row)->set_verdict(v1::VERDICT_BAD);
  EXPECT_DOUBLE_EQ(calibration_.MedianAt(0), 1.00);
  EXPECT_DOUBLE_EQ(calibration_.MedianAt(10), 1.25);
  EXPECT_NEAR(calibration_.MedianAt(6), 1.32 / 1.10, 1e-9);
  EXPECT_EQ(calibration_.MedianAt(5), 0) << "no verdict there";
}

TEST_F(CalibrationTest, AProbeIsJudgedAgainstItsWorkersBaselines) {
  frame_.spec.set_runs_per_commit(3);
  frame_.spec.set_max_runs(12);
  frame_.spec.set_threshold_fraction(0.5);
  Calibrate("w0", {1.00, 1.01, 0.99});
  Calibrate("w1", {1.10, 1.11, 1.09});  // 10% slower: judged in its own frame.
  MeasureBad("w0", {1.25, 1.26, 1.24});
  v1::Probe probe;
  probe.set_kind(v1::PROBE_KIND_BISECT);
  probe.set_worker("w1");
  for (double v : {1.10, 1.105, 1.095}) probe.add_samples(v);
  EXPECT_EQ(calibration_.Judge(probe).verdict, v1::VERDICT_GOOD) << "w1's GOOD, not w0's BAD";
  probe.clear_samples();
  for (double v : {1.375, 1.38, 1.37}) probe.add_samples(v);
  EXPECT_EQ(calibration_.Judge(probe).verdict, v1::VERDICT_BAD);
  probe.set_worker("w0");
  probe.clear_samples();
  for (double v : {1.00, 1.01, 0.99}) probe.add_samples(v);
  EXPECT_EQ(calibration_.Judge(probe).verdict, v1::VERDICT_GOOD);
}

TEST_F(CalibrationTest, WorkersOweACalibrationForWhatTheyMeasuredAndTheJobSettlesWhenAllHaveOne) {
  Calibrate("w0", {1.00, 1.01, 0.99});
  MeasureBad("w0", {1.25, 1.26, 1.24});
  // w1 measured a bisect probe, w2 runs one, w3's row waits for a verdict, w4 only failed.
  AddProbe(v1::PROBE_KIND_BISECT, "w1", {1.1, 1.1, 1.1});
  const int running = AddProbe(v1::PROBE_KIND_BISECT, "w2", {1.0});
  rows_.Mutable(running)->set_state(v1::PROBE_STATE_RUNNING);
  const int waiting = AddProbe(v1::PROBE_KIND_BISECT, "w3", {1.2});
  const int failed = AddProbe(v1::PROBE_KIND_BISECT, "w4", {1.0});
  rows_.Mutable(failed)->set_outcome(v1::TASK_OUTCOME_FAILED);
  for (const char* worker : {"w1", "w2", "w3", "w4"}) calibration_.worker(worker);
  EXPECT_THAT(calibration_.OwingCalibration({}), UnorderedElementsAre("w1", "w2", "w3"));
  EXPECT_THAT(calibration_.OwingCalibration({waiting}), UnorderedElementsAre("w1", "w2", "w3"));
  EXPECT_FALSE(calibration_.Settled({}));

  // Each either calibrates, is quarantined or is gone.
  Calibrate("w1", {1.00, 1.01, 0.99});
  calibration_.worker("w2").quarantined = true;
  EXPECT_FALSE(calibration_.Settled({}));
  calibration_.worker("w3").gone = true;
  EXPECT_TRUE(calibration_.Settled({waiting}));
  // A provisional verdict holds it back whoever owes what.
  rows_.Mutable(waiting)->set_provisional(true);
  EXPECT_FALSE(calibration_.Settled({}));
}

TEST_F(CalibrationTest, ShortCalibrationsAreToppedUpToTheRunsNeededButNotTheReference) {
  frame_.spec.set_runs_per_commit(9);
  frame_.state = v1::JOB_STATE_BASELINES;
  Calibrate("w0", {1.00, 1.01, 0.99});  // The reference GOOD: --runs, never topped up.
  MeasureBad("w0", {1.25, 1.26, 1.24});
  Calibrate("w1", {1.00});  // One run, handed out before the step was known.
  Calibrate("w2", {1.00, 1.01, 0.99, 1.00, 1.01, 0.99, 1.00, 1.01, 0.99});
  Calibrate("w3", {1.00});
  calibration_.worker("w3").gone = true;
  const int w1_row = calibration_.worker("w1").calibration;
  // Before the step is known every calibration needs --runs (9).
  ASSERT_EQ(calibration_.RunsNeeded(), 9);
  const std::vector<Calibration::TopUp> top_ups = calibration_.TopUps();
  ASSERT_EQ(top_ups.size(), 1u) << "w0 is the reference, w2 has enough, w3 is gone";
  EXPECT_EQ(top_ups[0].row, w1_row);
  EXPECT_EQ(top_ups[0].runs, 8);
  // A calibration still running is not topped up.
  rows_.Mutable(w1_row)->set_state(v1::PROBE_STATE_RUNNING);
  EXPECT_TRUE(calibration_.TopUps().empty());
}

TEST(CalibrationPassFailTest, NobodyOwesACalibrationWithExitCodes) {
  JobFrame frame;
  ProbeRows rows;
  Calibration calibration(&frame, &rows, /*pass_fail=*/true);
  v1::Probe* probe = rows.Add();
  probe->set_kind(v1::PROBE_KIND_BISECT);
  probe->set_worker("w0");
  probe->set_state(v1::PROBE_STATE_RUNNING);
  EXPECT_TRUE(calibration.OwingCalibration({0}).empty());
}

}  // namespace
}  // namespace kbisect
