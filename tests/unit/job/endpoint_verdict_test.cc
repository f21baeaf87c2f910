// Copyright 2026 The kbisect Authors.
//
// EndpointVerdict on its own: a probe table with the reference GOOD and the BAD baseline, on
// one GPU or two, and the steps each call returns.
#include "coordinator/job/endpoint_verdict.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "report/event_words.h"
#include "tests/unit/coordinator/bisect_job_testing.h"

namespace kbisect {
namespace {

using ::kbisect::bisect_job_testing::FinishWithSamples;
using ::kbisect::bisect_job_testing::MakeCommits;
using ::kbisect::bisect_job_testing::MakeSpec;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

constexpr int kCommits = 8;

class EndpointVerdictTest : public ::testing::Test {
 protected:
  explicit EndpointVerdictTest(bool pass_fail = false)
      : commits_(MakeCommits(kCommits)),
        book_("job", Spec(), &commits_),
        calibration_(&frame_, &book_.rows(), pass_fail),
        verdict_(&frame_, &calibration_, &book_, pass_fail) {
    frame_.job_id = "job";
    frame_.spec = Spec();
    frame_.commit_count = kCommits;
    frame_.state = v1::JOB_STATE_BASELINES;
    frame_.direction = v1::DIRECTION_LOWER_IS_BETTER;
  }

  // The verdict's calls, with what they record applied to the frame as the job does
  // (BisectJob::FollowEndpoint).
  EndpointStep Evaluate() { return Applied(verdict_.Evaluate()); }
  EndpointStep Settle() { return Applied(verdict_.Settle()); }
  EndpointStep Applied(EndpointStep step) {
    if (step.record.has_value()) frame_.recorded = *step.record;
    if (step.direction.has_value()) frame_.direction = *step.direction;
    return step;
  }

  // The job's spec: 5 runs a commit, at most 20, a step of at least 2%.
  static v1::JobSpec Spec() {
    v1::JobSpec spec = MakeSpec();
    spec.set_runs_per_commit(5);
    spec.set_max_runs(20);
    spec.set_min_effect_fraction(0.02);
    return spec;
  }

  // Creates a task of `kind` at `index` on `worker`, finished with `samples`; returns its row.
  int Measure(v1::ProbeKind kind, int index, const std::string& worker,
              std::vector<double> samples) {
    return FinishWithSamples(&book_, book_.NewTask(kind, index, 0), worker, samples);
  }

  // The reference GOOD on `good_worker` and BAD on `bad_worker`.
  void Baselines(const std::string& good_worker, std::vector<double> good,
                 const std::string& bad_worker, std::vector<double> bad) {
    const int good_row = Measure(v1::PROBE_KIND_BASELINE_GOOD, 0, good_worker, std::move(good));
    calibration_.worker(good_worker).calibration = good_row;
    calibration_.SetReference(good_worker, good_row);
    calibration_.SetBadProbe(Measure(v1::PROBE_KIND_BASELINE_BAD, kCommits, bad_worker, bad));
  }

  // BAD's worker `worker` measures its own GOOD and takes the reference back.
  void TakesTheReferenceBack(const std::string& worker, std::vector<double> good) {
    const int own = Measure(v1::PROBE_KIND_BASELINE_GOOD, 0, worker, std::move(good));
    calibration_.worker(worker).calibration = own;
    calibration_.SetReference(worker, own);
  }

  JobFrame frame_;
  std::vector<v1::CommitRef> commits_;
  ProbeBook book_;
  Calibration calibration_;
  EndpointVerdict verdict_;
};

const std::vector<double> kGood = {99, 100, 101, 100.5, 99.5};
const std::vector<double> kBad = {119, 120, 121, 120.5, 119.5};

TEST_F(EndpointVerdictTest, IsReadyOnceBothBaselinesAreMeasured) {
  EXPECT_FALSE(verdict_.Ready());
  const int good = Measure(v1::PROBE_KIND_BASELINE_GOOD, 0, "w0", kGood);
  calibration_.worker("w0").calibration = good;
  calibration_.SetReference("w0", good);
  EXPECT_FALSE(verdict_.Ready());
  const std::string bad = book_.NewTask(v1::PROBE_KIND_BASELINE_BAD, kCommits, 0);
  calibration_.SetBadProbe(book_.at(bad).probe);
  EXPECT_FALSE(verdict_.Ready()) << "BAD is still pending";
  book_.mutable_probe(book_.at(bad).probe).set_state(v1::PROBE_STATE_FINISHED);
  EXPECT_FALSE(verdict_.Ready()) << "BAD finished without a sample";
  book_.mutable_probe(book_.at(bad).probe).set_outcome(v1::TASK_OUTCOME_SUCCEEDED);
  book_.mutable_probe(book_.at(bad).probe).add_samples(120);
  EXPECT_TRUE(verdict_.Ready());
}

TEST_F(EndpointVerdictTest, AClearStepOnOneGpuIsRecordedAndTheSearchStarts) {
  Baselines("w0", kGood, "w0", kBad);
  ASSERT_TRUE(verdict_.Ready());
  const EndpointStep step = Evaluate();
  EXPECT_EQ(step.state, v1::JOB_STATE_BISECTING);
  EXPECT_FALSE(step.finish.has_value());
  EXPECT_EQ(step.more_runs, 0);
  EXPECT_FALSE(step.judge_every_verdict_again);
  ASSERT_EQ(step.events.size(), 1u);
  EXPECT_EQ(step.events[0].first, v1::JOB_EVENT_KIND_BASELINE);
  EXPECT_DOUBLE_EQ(frame_.recorded.baselines.good().median(), 100);
  EXPECT_DOUBLE_EQ(frame_.recorded.baselines.bad().median(), 120);
  EXPECT_EQ(frame_.recorded.baselines.bad().worker(), "w0");
  EXPECT_FALSE(frame_.recorded.baselines.provisional());
  EXPECT_NEAR(frame_.recorded.regression_pct, 20, 0.01);
}

TEST_F(EndpointVerdictTest, NoStepEndsTheJobAsNoise) {
  Baselines("w0", kGood, "w0", {99.5, 100.5, 100, 99, 101});
  const EndpointStep step = Evaluate();
  ASSERT_TRUE(step.finish.has_value());
  EXPECT_EQ(step.finish->outcome, v1::OUTCOME_NO_REGRESSION);
  EXPECT_FALSE(step.state.has_value());
  EXPECT_EQ(step.finish->cause, v1::CAUSE_NOISE);
}

TEST_F(EndpointVerdictTest, SwappedEndpointsAreAnErrorUnlessImprovementsAreAllowed) {
  Baselines("w0", kBad, "w0", kGood);
  const EndpointStep step = Evaluate();
  ASSERT_TRUE(step.finish.has_value());
  EXPECT_EQ(step.finish->outcome, v1::OUTCOME_ERROR);
  EXPECT_THAT(step.finish->error, Not(IsEmpty()));

  frame_.spec.set_allow_improvement(true);
  const EndpointStep allowed = Evaluate();
  EXPECT_FALSE(allowed.finish.has_value());
  EXPECT_EQ(allowed.state, v1::JOB_STATE_BISECTING);
}

TEST_F(EndpointVerdictTest, UnclearBaselinesAskForMoreRunsOfBoth) {
  // One run each, 1% apart: nothing can be told yet.
  Baselines("w0", {100}, "w0", {101.5});
  const EndpointStep step = Evaluate();
  EXPECT_GT(step.more_runs, 0);
  EXPECT_FALSE(step.finish.has_value());
  EXPECT_FALSE(step.state.has_value());
  ASSERT_EQ(step.events.size(), 1u);
  EXPECT_EQ(step.events[0].first, v1::JOB_EVENT_KIND_WARNING);
  EXPECT_THAT(EventWords(step.events[0].second), StartsWith("Baselines unclear: "));
}

TEST_F(EndpointVerdictTest, NoStepAcrossTwoGpusWaitsForBadsWorkerToMeasureGood) {
  // GOOD on w1 stood in for BAD's worker w0, and they look the same.
  Baselines("w1", kGood, "w0", {99.5, 100.5, 100, 99, 101});
  ASSERT_TRUE(verdict_.Ready());
  const EndpointStep step = Evaluate();
  EXPECT_TRUE(step.events.empty());
  EXPECT_FALSE(step.finish.has_value());
  EXPECT_FALSE(step.state.has_value());
  EXPECT_FALSE(verdict_.Ready()) << "deferred until w0 has measured GOOD";

  // On w0 itself GOOD is 17% faster than BAD: measured on one GPU there is a step after all.
  TakesTheReferenceBack("w0", {83, 83.5, 84, 82.5, 83.2});
  ASSERT_TRUE(verdict_.Ready());
  const EndpointStep settled = Evaluate();
  EXPECT_EQ(settled.state, v1::JOB_STATE_BISECTING);
  EXPECT_FALSE(frame_.recorded.baselines.provisional());
  EXPECT_EQ(frame_.recorded.baselines.good().worker(), "w0");
}

TEST_F(EndpointVerdictTest, AProvisionalStepIsSettledOnOneGpuAndVerdictsJudgedAgainAfterAnOffset) {
  // GOOD on w1, BAD on w0: a step, provisional.
  Baselines("w1", kGood, "w0", kBad);
  const EndpointStep first = Evaluate();
  EXPECT_EQ(first.state, v1::JOB_STATE_BISECTING);
  EXPECT_TRUE(frame_.recorded.baselines.provisional());
  EXPECT_THAT(EventWords(first.events[0].second), HasSubstr("w1"));
  frame_.state = v1::JOB_STATE_BISECTING;

  // w0's own GOOD is 5% slower than w1's: the stand-in had an offset.
  TakesTheReferenceBack("w0", {104, 105, 106, 105.5, 104.5});
  const EndpointStep settled = Settle();
  EXPECT_FALSE(settled.finish.has_value());
  EXPECT_TRUE(settled.judge_every_verdict_again);
  ASSERT_EQ(settled.events.size(), 1u);
  EXPECT_EQ(settled.events[0].first, v1::JOB_EVENT_KIND_BASELINE);
  EXPECT_FALSE(frame_.recorded.baselines.provisional());
  EXPECT_DOUBLE_EQ(frame_.recorded.baselines.good().median(), 105);
  EXPECT_NEAR(frame_.recorded.regression_pct, 100.0 * (120.0 / 105 - 1), 0.01);
}

TEST_F(EndpointVerdictTest, AProvisionalStepGoneOnOneGpuEndsTheJob) {
  Baselines("w1", kGood, "w0", kBad);
  Evaluate();
  frame_.state = v1::JOB_STATE_BISECTING;
  // On w0 GOOD measures as BAD does: the step was w1's offset.
  TakesTheReferenceBack("w0", {119.5, 120.5, 120, 119, 121});
  const EndpointStep settled = Settle();
  ASSERT_TRUE(settled.finish.has_value());
  EXPECT_EQ(settled.finish->outcome, v1::OUTCOME_NO_REGRESSION);
}

TEST_F(EndpointVerdictTest, MoreNoiseInTheProbesSendsTheSearchBackToTheBaselines) {
  // Single runs: they show no spread, and a 3% step looks clear.
  Baselines("w0", {100}, "w0", {103});
  frame_.spec.set_runs_per_commit(1);
  ASSERT_EQ(Evaluate().state, v1::JOB_STATE_BISECTING);
  frame_.state = v1::JOB_STATE_BISECTING;
  EXPECT_EQ(verdict_.ReassessIfNoisy().more_runs, 0) << "no probe yet";

  // Probes of w0 spread by 4% around GOOD and BAD.
  for (int i = 0; i < 3; ++i) {
    const int good = Measure(v1::PROBE_KIND_BISECT, 1 + i, "w0", {96, 104, 100});
    book_.mutable_probe(good).set_verdict(v1::VERDICT_GOOD);
    const int bad = Measure(v1::PROBE_KIND_BISECT, 5 + i, "w0", {99, 107, 103});
    book_.mutable_probe(bad).set_verdict(v1::VERDICT_BAD);
  }
  const EndpointStep step = verdict_.ReassessIfNoisy();
  EXPECT_GT(step.more_runs, 0);
  EXPECT_EQ(step.state, v1::JOB_STATE_BASELINES);
  EXPECT_TRUE(step.judge_every_verdict_again);
  ASSERT_EQ(step.events.size(), 1u);
  EXPECT_EQ(step.events[0].first, v1::JOB_EVENT_KIND_WARNING);
  // Judged with that noise now: the same probes ask for nothing more.
  EXPECT_EQ(verdict_.ReassessIfNoisy().more_runs, 0);
}

class PassFailEndpointVerdictTest : public EndpointVerdictTest {
 protected:
  PassFailEndpointVerdictTest() : EndpointVerdictTest(/*pass_fail=*/true) {}

  void Ends(v1::TaskOutcome good, v1::TaskOutcome bad) {
    const int good_row = Measure(v1::PROBE_KIND_BASELINE_GOOD, 0, "w0", {});
    book_.mutable_probe(good_row).set_outcome(good);
    calibration_.SetReference("w0", good_row);
    const int bad_row = Measure(v1::PROBE_KIND_BASELINE_BAD, kCommits, "w0", {});
    book_.mutable_probe(bad_row).set_outcome(bad);
    calibration_.SetBadProbe(bad_row);
  }
};

TEST_F(PassFailEndpointVerdictTest, GoodMustPassAndBadFail) {
  Ends(v1::TASK_OUTCOME_PASSED, v1::TASK_OUTCOME_FAILED);
  ASSERT_TRUE(verdict_.Ready());
  const EndpointStep step = Evaluate();
  EXPECT_EQ(step.state, v1::JOB_STATE_BISECTING);
  ASSERT_EQ(step.events.size(), 1u);
  EXPECT_EQ(step.events[0].first, v1::JOB_EVENT_KIND_BASELINE);
}

TEST_F(PassFailEndpointVerdictTest, AFailingGoodIsAnError) {
  Ends(v1::TASK_OUTCOME_FAILED, v1::TASK_OUTCOME_FAILED);
  const EndpointStep step = Evaluate();
  ASSERT_TRUE(step.finish.has_value());
  EXPECT_EQ(step.finish->outcome, v1::OUTCOME_ERROR);
}

TEST_F(PassFailEndpointVerdictTest, APassingBadIsNoRegression) {
  Ends(v1::TASK_OUTCOME_PASSED, v1::TASK_OUTCOME_PASSED);
  const EndpointStep step = Evaluate();
  ASSERT_TRUE(step.finish.has_value());
  EXPECT_EQ(step.finish->outcome, v1::OUTCOME_NO_REGRESSION);
}

// A flaky test (--exit-code --flaky, --runs 4, --max-runs 20): the ends by their exit codes.
class FlakyEndpointVerdictTest : public EndpointVerdictTest {
 protected:
  FlakyEndpointVerdictTest() : EndpointVerdictTest(/*pass_fail=*/true) {
    frame_.spec.set_flaky(true);
    frame_.spec.set_runs_per_commit(4);
  }

  // GOOD and BAD with these exit codes, one run each.
  void Ends(std::vector<int> good, std::vector<int> bad) {
    const int good_row = Measure(v1::PROBE_KIND_BASELINE_GOOD, 0, "w0", {});
    for (int code : good) book_.mutable_probe(good_row).add_runs()->set_exit_code(code);
    calibration_.SetReference("w0", good_row);
    const int bad_row = Measure(v1::PROBE_KIND_BASELINE_BAD, kCommits, "w0", {});
    for (int code : bad) book_.mutable_probe(bad_row).add_runs()->set_exit_code(code);
    calibration_.SetBadProbe(bad_row);
  }
};

TEST_F(FlakyEndpointVerdictTest, BadRunsAgainUntilItFailsOnce) {
  Ends({0, 0, 0, 0}, {0, 0, 0, 0});
  const EndpointStep step = Evaluate();
  EXPECT_EQ(step.more_bad_runs, 4);  // As many again as it had.
  EXPECT_EQ(step.more_good_runs, 0);
  EXPECT_FALSE(step.finish.has_value());
  EXPECT_FALSE(step.state.has_value());
}

TEST_F(FlakyEndpointVerdictTest, ABadThatNeverFailsInMaxRunsIsNoRegression) {
  Ends({0, 0, 0, 0}, std::vector<int>(20, 0));
  const EndpointStep step = Evaluate();
  ASSERT_TRUE(step.finish.has_value());
  EXPECT_EQ(step.finish->outcome, v1::OUTCOME_NO_REGRESSION);
}

TEST_F(FlakyEndpointVerdictTest, AGoodThatStoppedAtAFailureRunsTheRestOfItsRuns) {
  Ends({0, 1}, {0, 1, 1, 0});
  EXPECT_EQ(Evaluate().more_good_runs, 2);
}

TEST_F(FlakyEndpointVerdictTest, AGoodFailingMostRunsGetsOneMoreLookThenIsAnError) {
  Ends({1, 1, 1, 0}, {1, 1, 1, 1});
  EXPECT_EQ(Evaluate().more_good_runs, 4);
  for (int code : {1, 1, 1, 1})
    book_.mutable_probe(calibration_.good_probe()).add_runs()->set_exit_code(code);
  const EndpointStep step = Evaluate();
  ASSERT_TRUE(step.finish.has_value());
  EXPECT_EQ(step.finish->outcome, v1::OUTCOME_ERROR);
}

TEST_F(FlakyEndpointVerdictTest, AGoodThatRarelyFailsAndABadThatFailsStartTheSearchOnce) {
  Ends({0, 0, 1, 0}, {0, 1, 0, 0});
  const EndpointStep step = Evaluate();
  EXPECT_EQ(step.state, v1::JOB_STATE_BISECTING);
  ASSERT_EQ(step.events.size(), 1u);
  EXPECT_EQ(step.events[0].first, v1::JOB_EVENT_KIND_BASELINE);
  frame_.state = v1::JOB_STATE_BISECTING;
  const EndpointStep again = Evaluate();
  EXPECT_TRUE(again.events.empty());
  EXPECT_FALSE(again.state.has_value());
}

}  // namespace
}  // namespace kbisect
