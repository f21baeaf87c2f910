// Copyright 2026 The kbisect Authors.
#include "coordinator/job/dispatch.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using Kind = DispatchAssignment::Kind;

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

DispatchWorker Calibrated(int checked_out) {
  DispatchWorker worker;
  worker.calibration_started = true;
  worker.checked_out = checked_out;
  return worker;
}

// The commit of the one probe PlanDispatch hands out for `input` at kNow, or -1 (with a failure)
// when it hands out no or several assignments.
int OnlyPoint(const DispatchInput& input) {
  const DispatchPlan plan = PlanDispatch(input, kNow);
  EXPECT_EQ(plan.assignments.size(), 1u);
  return plan.assignments.size() == 1 ? plan.assignments[0].commit_index : -1;
}

struct Fixture {
  explicit Fixture(int n) : search(n) {
    input.commit_count = n;
    input.search = &search;
    input.has_reference = true;
  }
  BisectSearch search;
  DispatchInput input;
};

TEST(PlanDispatchTest, QuarantinedWorkersGetNothingAndQueuedWorkGoesToItsPinnedWorker) {
  Fixture f(100);
  f.input.idle = {"bad", "w1", "w2"};
  f.input.workers["bad"] = Calibrated(50);
  f.input.workers["bad"].quarantined = true;
  f.input.workers["w1"] = Calibrated(10);
  f.input.workers["w2"] = Calibrated(90);
  f.input.queue.push_back({"job/p7.3", "w2", v1::PROBE_KIND_BISECT, 40, std::nullopt});
  const DispatchPlan plan = PlanDispatch(f.input, kNow);
  ASSERT_EQ(plan.assignments.size(), 2u);
  EXPECT_EQ(plan.assignments[0].kind, Kind::kQueued);
  EXPECT_EQ(plan.assignments[0].worker, "w2");
  EXPECT_EQ(plan.assignments[0].task_id, "job/p7.3");
  EXPECT_EQ(plan.assignments[1].kind, Kind::kProbe);
  EXPECT_EQ(plan.assignments[1].worker, "w1");
  EXPECT_THAT(plan.seen, ::testing::ElementsAre("w1", "w2"));
}

TEST(PlanDispatchTest, FirstUncalibratedWorkerMeasuresTheReferenceGood) {
  Fixture f(100);
  f.input.has_reference = false;
  f.input.idle = {"w0", "w1"};
  f.input.queue.push_back({"job/p0", "", v1::PROBE_KIND_BASELINE_BAD, 100, std::nullopt});
  f.input.bad_task_id = "job/p0";
  const DispatchPlan plan = PlanDispatch(f.input, kNow);
  ASSERT_EQ(plan.assignments.size(), 2u);
  EXPECT_EQ(plan.assignments[0].kind, Kind::kQueued);  // BAD to the first to ask.
  EXPECT_EQ(plan.assignments[0].worker, "w0");
  EXPECT_EQ(plan.assignments[1].kind, Kind::kCalibrate);  // The reference GOOD.
  EXPECT_EQ(plan.assignments[1].worker, "w1");
}

TEST(PlanDispatchTest, WithABuildStepGoodBuildsBesideBadInTheFirstWave) {
  // BAD's worker measures the reference GOOD after BAD (has_reference). With a build step, the
  // next worker to ask calibrates at once, so that GOOD is built while BAD is; one worker only,
  // the others probe. Without a build step all of them probe.
  for (const bool builds : {true, false}) {
    SCOPED_TRACE(builds ? "build step" : "no build step");
    Fixture f(1000);
    f.input.first_wave = true;
    f.input.builds = builds;
    f.input.bad_worker = "w0";
    f.input.workers["w0"].calibration_started = true;  // Its reference GOOD is queued.
    f.input.running.push_back({v1::PROBE_KIND_BASELINE_BAD, kNow, 0, "w"});
    f.input.idle = {"w1", "w2", "w3"};
    const DispatchPlan plan = PlanDispatch(f.input, kNow);
    ASSERT_EQ(plan.assignments.size(), 3u);
    EXPECT_EQ(plan.assignments[0].kind, builds ? Kind::kCalibrate : Kind::kProbe);
    EXPECT_EQ(plan.assignments[0].worker, builds ? "w1" : plan.assignments[0].worker);
    EXPECT_EQ(plan.assignments[1].kind, Kind::kProbe);
    EXPECT_EQ(plan.assignments[2].kind, Kind::kProbe);
  }
  // Once a second worker has a calibration, nobody else calibrates in the first wave.
  Fixture f(1000);
  f.input.first_wave = true;
  f.input.builds = true;
  f.input.bad_worker = "w0";
  f.input.workers["w0"].calibration_started = true;
  f.input.workers["w1"].calibration_started = true;
  f.input.idle = {"w2", "w3"};
  const DispatchPlan plan = PlanDispatch(f.input, kNow);
  ASSERT_EQ(plan.assignments.size(), 2u);
  EXPECT_EQ(plan.assignments[0].kind, Kind::kProbe);
  EXPECT_EQ(plan.assignments[1].kind, Kind::kProbe);
}

TEST(PlanDispatchTest, InAJobThatReusesResultsAWorkerWithoutAnyCalibratesInTheFirstWave) {
  // w0 measures BAD, w1 stands in as the reference GOOD. w2 has a cached commit inside the
  // interval: it measures it (an anchor). w3's cached commit lies outside and w4 has none:
  // they calibrate instead of probing points the cache may make moot.
  Fixture f(1000);
  f.input.first_wave = true;
  f.input.bad_worker = "w0";
  f.input.workers["w0"].calibration_started = true;
  f.input.workers["w1"].calibration_started = true;
  f.input.workers["w2"].anchors = {480};
  f.input.workers["w3"].anchors = {1000};
  f.input.running.push_back({v1::PROBE_KIND_BASELINE_BAD, kNow, 0, "w"});
  f.input.idle = {"w2", "w3", "w4"};
  DispatchPlan plan = PlanDispatch(f.input, kNow);
  std::map<std::string, DispatchAssignment> by_worker;
  for (const DispatchAssignment& a : plan.assignments) by_worker[a.worker] = a;
  ASSERT_EQ(by_worker.size(), 3u);
  EXPECT_EQ(by_worker["w2"].kind, Kind::kProbe);
  EXPECT_EQ(by_worker["w2"].commit_index, 480);
  EXPECT_EQ(by_worker["w3"].kind, Kind::kCalibrate);
  EXPECT_EQ(by_worker["w4"].kind, Kind::kCalibrate);
  // With no cached result inside the interval the job reuses nothing here: all of them probe.
  f.input.workers["w2"].anchors = {1000};
  plan = PlanDispatch(f.input, kNow);
  ASSERT_EQ(plan.assignments.size(), 3u);
  for (const DispatchAssignment& a : plan.assignments) EXPECT_EQ(a.kind, Kind::kProbe) << a.worker;
}

TEST(PlanDispatchTest, APointCloseToABuiltCommitMovesOntoItForTheWorkerThatReadsIt) {
  // Two calibrated workers split (0, 1000) in thirds: 333 and 666. w1 reads a build of 700
  // (too far: a quarter of a piece is 83) and of 640 (close), w0 reads none.
  Fixture f(1000);
  f.input.idle = {"w0", "w1"};
  f.input.workers["w0"] = Calibrated(0);
  f.input.workers["w1"] = Calibrated(0);
  f.input.workers["w1"].built = {640, 1000};
  const std::vector<int> even = f.search.PlanProbes(2);
  ASSERT_EQ(even.size(), 2u);
  DispatchPlan plan = PlanDispatch(f.input, kNow);
  std::map<std::string, int> point_of;
  for (const DispatchAssignment& a : plan.assignments) point_of[a.worker] = a.commit_index;
  ASSERT_EQ(point_of.size(), 2u);
  EXPECT_EQ(point_of["w1"], 640);
  EXPECT_EQ(point_of["w0"], even[0]);
  // A built commit further than BuiltSnapDistance stays unused.
  f.input.workers["w1"].built = {750};
  plan = PlanDispatch(f.input, kNow);
  std::set<int> points;
  for (const DispatchAssignment& a : plan.assignments) points.insert(a.commit_index);
  EXPECT_THAT(points, ::testing::ElementsAre(even[0], even[1]));
}

TEST(PlanDispatchTest, ABuiltCommitInFlightIsNotMeasuredAgain) {
  // Nine commits of (0, 1000) are in flight (being measured, or measured and awaiting their
  // verdicts): the one new point splits (0, 100) at 50, and the snap distance, a quarter of what
  // one point splits off the whole interval, is 125. w1 has built 100, which is in flight: a probe
  // moved there would give that commit two verdicts (fault_test saw it once a killed worker's
  // result at a commit awaited its verdict).
  Fixture f(1000);
  for (int index = 100; index < 1000; index += 100) f.search.MarkInFlight(index);
  f.input.idle = {"w1"};
  f.input.workers["w1"] = Calibrated(0);
  f.input.workers["w1"].built = {100};
  ASSERT_THAT(f.search.PlanProbes(1), ::testing::ElementsAre(50));
  EXPECT_EQ(OnlyPoint(f.input), 50);
  // A built commit that is not in flight is taken, as before.
  f.input.workers["w1"].built = {60};
  EXPECT_EQ(OnlyPoint(f.input), 60);
}

TEST(PlanDispatchTest, ABuiltCommitThatWouldCostARoundIsNotTaken) {
  // Eight commits, one worker: the round bound is 3 rounds (ceil(log2 8)), and round 1's point
  // is 4. A build of 3 leaves a piece of 5 (2^2 < 5): one more round, so the point stays.
  Fixture f(8);
  f.input.idle = {"w0"};
  f.input.workers["w0"] = Calibrated(0);
  f.input.workers["w0"].built = {3};
  EXPECT_EQ(BuiltSnapDistance(8, 1), 1);
  DispatchPlan plan = PlanDispatch(f.input, kNow);
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].commit_index, 4);
  // Over 1000 commits (bound 10 rounds, 2^10 = 1024) a move that leaves pieces of 490 and 510
  // costs none: it is taken. One to 480 would leave 520 (> 2^9): the point stays.
  Fixture g(1000);
  g.input.idle = {"w0"};
  g.input.workers["w0"] = Calibrated(0);
  g.input.workers["w0"].built = {490};
  plan = PlanDispatch(g.input, kNow);
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].commit_index, 490);
  g.input.workers["w0"].built = {480};
  plan = PlanDispatch(g.input, kNow);
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].commit_index, 500);
}

TEST(PlanDispatchTest, APointLeavesRoomForTheWorkerThatJustReported) {
  // w1 reported a moment ago and asks again any moment; w0, which waited, is dispatched first.
  // Planned alone, w0's point would be the middle (49 of 99) and w1's a quarter: it takes the
  // upper third instead, and w1's point, planned next with 66 in flight, is the lower third.
  Fixture f(99);
  f.input.baselines_settled = true;
  f.input.idle = {"w0"};
  f.input.workers["w0"] = Calibrated(0);
  f.input.workers["w1"] = Calibrated(0);
  f.input.freed = {{"w1", kNow - absl::Milliseconds(200)}};
  EXPECT_EQ(OnlyPoint(f.input), 66);
  // A worker freed long ago (it works for another job, or left without saying) is not waited
  // for, nor is one still owing its calibration, nor any before the baselines are settled.
  DispatchInput alone = f.input;
  alone.freed = {{"w1", kNow - absl::Seconds(5)}};
  EXPECT_EQ(OnlyPoint(alone), 49);
  alone.freed = {{"w1", kNow}};
  alone.workers["w1"].owes_calibration = true;
  EXPECT_EQ(OnlyPoint(alone), 49);
  alone.workers["w1"].owes_calibration = false;
  alone.baselines_settled = false;
  EXPECT_EQ(OnlyPoint(alone), 49);
  // w1 asks next, with 66 in flight: the lower third.
  f.search.MarkInFlight(66);
  f.input.idle = {"w1"};
  f.input.freed.clear();
  EXPECT_EQ(OnlyPoint(f.input), 33);
}

TEST(BuiltSnapDistanceTest, AQuarterOfThePieceEachPointSplitsOff) {
  EXPECT_EQ(BuiltSnapDistance(1000, 1), 125);
  EXPECT_EQ(BuiltSnapDistance(1000, 7), 31);
  EXPECT_EQ(BuiltSnapDistance(4, 1), 0);
  EXPECT_EQ(BuiltSnapDistance(0, 3), 0);
}

TEST(PlanDispatchTest, MaxWorkersCapsTasksInFlight) {
  Fixture f(1000);
  f.input.max_workers = 3;
  f.input.running.push_back({v1::PROBE_KIND_BISECT, kNow, 1, "w"});
  for (int w = 0; w < 6; ++w) {
    const std::string name = "w" + std::to_string(w);
    f.input.idle.push_back(name);
    f.input.workers[name] = Calibrated(0);
  }
  const DispatchPlan plan = PlanDispatch(f.input, kNow);
  EXPECT_EQ(plan.assignments.size(), 2u);
}

TEST(PlanDispatchTest, ProbesSplitTheIntervalAndGoToTheNearestCheckout) {
  Fixture f(100);
  f.input.idle = {"far", "near"};
  f.input.workers["far"] = Calibrated(95);
  f.input.workers["near"] = Calibrated(30);
  const DispatchPlan plan = PlanDispatch(f.input, kNow);
  ASSERT_EQ(plan.assignments.size(), 2u);
  // Two points split 0..100 into thirds; the worker at 30 takes 33, the one at 95 takes 66.
  std::map<std::string, int> points;
  for (const DispatchAssignment& a : plan.assignments) {
    EXPECT_EQ(a.kind, Kind::kProbe);
    points[a.worker] = a.commit_index;
  }
  EXPECT_EQ(points["near"], 33);
  EXPECT_EQ(points["far"], 66);
}

TEST(PlanDispatchTest, IdleWorkersWaitForAResultThatIsDue) {
  Fixture f(100);
  f.input.idle = {"w1"};
  f.input.workers["w1"] = Calibrated(10);
  f.input.workers["w0"] = Calibrated(50);
  // Typical span 10 s (w0's first span is left out: it paid for its first checkout).
  f.input.spans = {{"w0", 60}, {"w0", 10}, {"w1", 30}, {"w1", 10}};
  // w0's probe of round 1 at 50 runs; w1's point would be of round 1 too (waiting costs none).
  f.search.MarkInFlight(50);
  f.input.running.push_back({v1::PROBE_KIND_BISECT, kNow - absl::Seconds(9), 1, "w0"});
  EXPECT_TRUE(PlanDispatch(f.input, kNow).assignments.empty());
  // Running late (past 130% of the typical span): it does not hold the idle worker.
  f.input.running[0].started = kNow - absl::Seconds(14);
  EXPECT_EQ(PlanDispatch(f.input, kNow).assignments.size(), 1u);
  // A confirmation never holds anyone.
  f.input.running[0] = {v1::PROBE_KIND_CONFIRM, kNow - absl::Seconds(9), 0, "w"};
  EXPECT_EQ(PlanDispatch(f.input, kNow).assignments.size(), 1u);
}

TEST(PlanDispatchTest, WorkerThatProbedAheadWaitsForTheBaselines) {
  Fixture f(100);
  f.input.idle = {"w1"};
  f.input.workers["w1"] = Calibrated(50);
  f.input.workers["w1"].waits_for_baselines = true;
  EXPECT_TRUE(PlanDispatch(f.input, kNow).assignments.empty());
}

TEST(PlanDispatchTest, BeforeTheEndpointVerdictWorkersDoNotStartACalibrationWhileAResultIsDue) {
  // The first wave has measured its points (still in flight for the search: the endpoint
  // verdict has not come); the round plan could afford both workers' calibrations.
  Fixture f(1000);
  for (int point : {166, 333, 500, 666, 833}) f.search.MarkInFlight(point);
  f.input.idle = {"w2", "w3"};
  for (const char* name : {"w2", "w3"}) {
    f.input.workers[name].checked_out = 333;
    f.input.workers[name].owes_calibration = true;
  }
  f.input.spans = {{"w2", 10}, {"w3", 10}};
  f.input.calibration_runs = 3;  // Before the verdict a calibration takes --runs.
  auto calibrations = [&] {
    int count = 0;
    for (const DispatchAssignment& a : PlanDispatch(f.input, kNow).assignments) {
      count += a.kind == Kind::kCalibrate ? 1 : 0;
    }
    return count;
  };
  // Nothing due: both calibrate.
  EXPECT_EQ(calibrations(), 2);
  // BAD, 9 s into a typical 10 s span, is about to end: they wait for the verdict.
  f.input.running.push_back({v1::PROBE_KIND_BASELINE_BAD, kNow - absl::Seconds(9), 0, "w"});
  EXPECT_TRUE(PlanDispatch(f.input, kNow).assignments.empty());
  // A calibration that takes one run either way does not wait.
  f.input.calibration_runs = 1;
  EXPECT_EQ(calibrations(), 2);
  // Nor does one once the baselines are settled (it is sized by the step then).
  f.input.calibration_runs = 3;
  f.input.baselines_settled = true;
  EXPECT_EQ(calibrations(), 2);
}

TEST(PlanDispatchTest, CalibrationsAreDeferredWhileTheRoundPlanCannotAffordThem) {
  // 300 candidates on 4 workers: 4 rounds need 3 probes in every round (4^4 = 256 < 300 with 3
  // probes and a calibration), so a worker owing nothing probes first.
  Fixture f(300);
  f.input.idle = {"w1", "w2", "w3"};
  f.input.workers["w0"] = Calibrated(0);
  f.input.running.push_back({v1::PROBE_KIND_BISECT, kNow, 1, "w"});
  const DispatchPlan plan = PlanDispatch(f.input, kNow);
  int calibrations = 0;
  int probes = 0;
  for (const DispatchAssignment& a : plan.assignments) {
    calibrations += a.kind == Kind::kCalibrate ? 1 : 0;
    probes += a.kind == Kind::kProbe ? 1 : 0;
  }
  EXPECT_EQ(calibrations + probes, 3);
  EXPECT_LT(calibrations, 3);
  EXPECT_GT(probes, 0);
}

TEST(PlanDispatchTest, OnceTheSearchIsDoneOnlyWorkersThatOweACalibrationCalibrate) {
  Fixture f(1);  // One candidate: the search is done.
  ASSERT_TRUE(f.search.Done());
  f.input.idle = {"idle", "owes", "bad"};
  f.input.workers["owes"].owes_calibration = true;
  f.input.workers["idle"];
  f.input.workers["bad"];
  f.input.bad_task_id = "job/p0";
  f.input.bad_worker = "bad";
  DispatchPlan plan = PlanDispatch(f.input, kNow);
  ASSERT_EQ(plan.assignments.size(), 2u);
  EXPECT_EQ(plan.assignments[0].worker, "owes");
  EXPECT_EQ(plan.assignments[1].worker, "bad");
  // In pass/fail mode nothing is calibrated for BAD.
  f.input.pass_fail = true;
  plan = PlanDispatch(f.input, kNow);
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].worker, "owes");
}

TEST(PlanDispatchTest, AWorkerDoesItsOwnQueuedWorkBeforeAConfirmationPair) {
  // BAD's worker's GOOD (queued with BAD) settles the endpoint: the job waits for it, so the
  // pairs queued in front of it go to other workers.
  Fixture f(1);
  f.input.bad_worker = "bad";
  f.input.bad_task_id = "job/p0";
  f.input.workers["bad"] = Calibrated(1);
  f.input.workers["w1"] = Calibrated(1);
  f.input.queue.push_back({"job/p9", "", v1::PROBE_KIND_CONFIRM, 1, std::nullopt});
  f.input.queue.push_back({"job/p1", "bad", v1::PROBE_KIND_BASELINE_GOOD, 0, std::nullopt});
  f.input.idle = {"bad", "w1"};
  const DispatchPlan plan = PlanDispatch(f.input, kNow);
  ASSERT_EQ(plan.assignments.size(), 2u);
  EXPECT_EQ(plan.assignments[0].worker, "bad");
  EXPECT_EQ(plan.assignments[0].task_id, "job/p1");
  EXPECT_EQ(plan.assignments[1].worker, "w1");
  EXPECT_EQ(plan.assignments[1].task_id, "job/p9");
}

TEST(PlanDispatchTest, NoCalibrationInPlaceOfAPointThatWouldFinishTheSearch) {
  // Three commits left in round 2 of 4: three idle workers probe all of them (the calibrations
  // run beside the confirmation); a fourth, spare, calibrates.
  for (const int idle : {3, 4}) {
    SCOPED_TRACE(idle);
    Fixture f(1000);
    ASSERT_TRUE(f.search.Record(362, v1::VERDICT_GOOD).ok());
    ASSERT_TRUE(f.search.Record(366, v1::VERDICT_BAD).ok());
    f.input.round = 2;
    f.input.workers["w0"] = Calibrated(362);
    f.input.idle = {"w0"};
    for (int i = 1; i < idle; ++i) {
      const std::string name = absl::StrCat("w", i);
      f.input.workers[name].owes_calibration = true;
      f.input.workers[name].checked_out = 366;
      f.input.idle.push_back(name);
    }
    const DispatchPlan plan = PlanDispatch(f.input, kNow);
    int calibrations = 0;
    int probes = 0;
    for (const DispatchAssignment& a : plan.assignments) {
      calibrations += a.kind == Kind::kCalibrate ? 1 : 0;
      probes += a.kind == Kind::kProbe ? 1 : 0;
    }
    EXPECT_EQ(probes, 3);
    EXPECT_EQ(calibrations, idle - 3);
  }
}

TEST(TypicalSpanTest, LeavesOutEachWorkersFirstMeasurementWhileOthersExist) {
  EXPECT_EQ(TypicalSpan({}), std::nullopt);
  EXPECT_DOUBLE_EQ(*TypicalSpan({{"w0", 40}}), 40);
  EXPECT_DOUBLE_EQ(*TypicalSpan({{"w0", 40}, {"w1", 50}, {"w0", 4}, {"w1", 6}}), 5);
  EXPECT_DOUBLE_EQ(*TypicalSpan({{"w0", 0}, {"w0", 3}}), 3);  // Zero spans are ignored.
}

TEST(PairNearestTest, ClosestPairFirstAndUncheckedOutWorkersLast) {
  const auto pairs = PairNearest({-1, 80, 20}, {25, 75}, 100);
  ASSERT_EQ(pairs.size(), 2u);
  // 80 -> 75 and 20 -> 25 are both 5 apart: the earlier worker goes first.
  EXPECT_EQ(pairs[0], std::make_pair(size_t{1}, size_t{1}));
  EXPECT_EQ(pairs[1], std::make_pair(size_t{2}, size_t{0}));
}

TEST(RoundOfNewProbesTest, OneMoreThanTheVerdictsThatBoundTheInterval) {
  v1::JobStatus status;
  status.set_commit_count(100);
  BisectSearch search(100);
  EXPECT_EQ(RoundOfNewProbes(search, status.probes(), 0, false), 1) << "the endpoints are round 0";
  auto decide = [&](int index, v1::Verdict verdict, int round) {
    v1::Probe* probe = status.add_probes();
    probe->set_kind(v1::PROBE_KIND_BISECT);
    probe->set_index(index);
    probe->set_verdict(verdict);
    probe->set_round(round);
    probe->set_state(v1::PROBE_STATE_FINISHED);
    const v1::Verdict side = verdict == v1::VERDICT_GOOD ? v1::VERDICT_GOOD : v1::VERDICT_BAD;
    ASSERT_TRUE(search.Record(index, side).ok());
  };
  decide(50, v1::VERDICT_BAD, 1);
  decide(25, v1::VERDICT_GOOD, 2);
  EXPECT_EQ(RoundOfNewProbes(search, status.probes(), 2, false), 3);
  // A verdict of round 4 outside the interval does not delay the next probe.
  decide(75, v1::VERDICT_BAD, 4);
  EXPECT_EQ(RoundOfNewProbes(search, status.probes(), 4, false), 3);
  // A flaky test (no verdict until the end): one past every round recorded.
  EXPECT_EQ(RoundOfNewProbes(search, status.probes(), 4, true), 5);
}

}  // namespace
}  // namespace kbisect
