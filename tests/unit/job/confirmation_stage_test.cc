// Copyright 2026 The kbisect Authors.
//
// ConfirmationStage on its own: a probe table with GOOD (100 ms) and BAD (120 ms) baselines on
// w0, a search over 8 commits, and the stage's calls driven step by step.
#include "coordinator/job/confirmation_stage.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "report/event_words.h"
#include "tests/unit/coordinator/bisect_job_testing.h"

namespace kbisect {
namespace {

using ::kbisect::bisect_job_testing::FinishWithSamples;
using ::kbisect::bisect_job_testing::kNow;
using ::kbisect::bisect_job_testing::MakeCommits;
using ::kbisect::bisect_job_testing::MakeSpec;
using ::testing::HasSubstr;
using Next = ConfirmationStep::Next;

constexpr int kCommits = 8;

class ConfirmationStageTest : public ::testing::Test {
 protected:
  // GOOD's and BAD's samples on w0: by default a benchmark with some noise.
  explicit ConfirmationStageTest(std::vector<double> good_samples = {99, 100, 101},
                                 std::vector<double> bad_samples = {119, 120, 121})
      : commits_(MakeCommits(kCommits)),
        search_(kCommits),
        book_("job", Spec(), &commits_),
        calibration_(&frame_, &book_.rows(), /*pass_fail=*/false),
        stage_(&frame_, &commits_, &search_, &calibration_, &reuse_, &book_) {
    frame_.job_id = "job";
    frame_.spec = Spec();
    frame_.commit_count = kCommits;
    frame_.state = v1::JOB_STATE_BISECTING;
    const int good = Measure(book_.NewTask(v1::PROBE_KIND_BASELINE_GOOD, 0, 0), "w0", good_samples);
    const int bad =
        Measure(book_.NewTask(v1::PROBE_KIND_BASELINE_BAD, kCommits, 0), "w0", bad_samples);
    calibration_.SetReference("w0", good);
    calibration_.worker("w0").calibration = good;
    calibration_.SetBadProbe(bad);
    frame_.recorded.baselines.mutable_good()->set_median(100);
    frame_.recorded.baselines.mutable_bad()->set_median(120);
    frame_.direction = v1::DIRECTION_LOWER_IS_BETTER;
  }

  // The job's spec: 3 runs a commit, at most 12, with a confirmation.
  static v1::JobSpec Spec() {
    v1::JobSpec spec = MakeSpec();
    spec.set_runs_per_commit(3);
    spec.set_max_runs(12);
    spec.set_confirm(true);
    return spec;
  }

  // Hands task `id` to `worker` and finishes its row with `samples`; returns the row.
  int Measure(const std::string& id, const std::string& worker, std::vector<double> samples) {
    return FinishWithSamples(&book_, id, worker, samples);
  }

  // Narrows the search to (last_good, first_bad] with both recorded.
  void SearchEndsAt(int last_good, int first_bad) {
    search_ = BisectSearch(kCommits);
    ASSERT_TRUE(search_.Record(last_good, v1::VERDICT_GOOD).ok());
    ASSERT_TRUE(search_.Record(first_bad, v1::VERDICT_BAD).ok());
  }

  ConfirmationContext Context() const {
    ConfirmationContext context;
    context.now = kNow;
    context.workers = 3;
    context.round = 5;
    return context;
  }

  // The unfinished confirmation tasks, in id order.
  std::vector<std::string> ConfirmTasks() const {
    std::vector<std::string> ids;
    for (const auto& [id, entry] : book_.tasks()) {
      if (!entry.done && entry.task.kind() == v1::PROBE_KIND_CONFIRM) ids.push_back(id);
    }
    return ids;
  }

  // Task `id` ran on `worker` and measured `pairs` (last-good, culprit) pairs; returns the
  // stage's step.
  ConfirmationStep Report(const std::string& id, const std::string& worker, double last_good,
                          double culprit, int pairs = 1) {
    book_.HandOut(id, worker);
    ProbeBook::TaskEntry& entry = book_.at(id);
    entry.done = true;
    book_.Deactivate(id);
    v1::TaskResult result;
    result.set_outcome(v1::TASK_OUTCOME_SUCCEEDED);
    for (int i = 0; i < pairs; ++i) {
      result.add_paired_samples(last_good + 0.1 * i);
      result.add_samples(culprit + 0.1 * i);
    }
    v1::Probe& probe = book_.ProbeOf(entry);
    probe.set_state(v1::PROBE_STATE_FINISHED);
    return stage_.OnResult(probe, entry.task, result, Context());
  }

  // Every unfinished confirmation task reports, the k-th with culprit[k % size]; returns the
  // last step.
  ConfirmationStep ReportAll(double last_good, std::vector<double> culprit) {
    ConfirmationStep step;
    int worker = 1;
    for (const std::string& id : ConfirmTasks()) {
      step = Report(id, "w" + std::to_string(worker), last_good,
                    culprit[(worker - 1) % culprit.size()], std::max(1, book_.at(id).task.runs()));
      ++worker;
    }
    return step;
  }

  JobFrame frame_;
  std::vector<v1::CommitRef> commits_;
  BisectSearch search_;
  ProbeBook book_;
  Calibration calibration_;
  ResultReuse reuse_;
  ConfirmationStage stage_;
};

// A result of `worker` at commit `index` that job-1 measured.
v1::CachedResult CachedAt(const std::vector<v1::CommitRef>& commits, int index,
                          const std::string& worker, const std::vector<double>& samples) {
  v1::CachedResult result;
  result.set_commit_sha(commits[index].sha());
  result.set_worker(worker);
  result.set_job_id("job-1");
  result.set_kind(v1::PROBE_KIND_CONFIRM);
  for (double v : samples) result.add_samples(v);
  return result;
}

TEST_F(ConfirmationStageTest, FreshPairsAreQueuedFirstAndAReproducedStepIsConfirmed) {
  SearchEndsAt(4, 5);
  const std::string probe = book_.NewTask(v1::PROBE_KIND_BISECT, 6, 2);
  book_.QueueBack(probe);
  frame_.state = v1::JOB_STATE_CONFIRMING;
  const ConfirmationStep start = stage_.Start(/*early=*/false, Context());
  EXPECT_EQ(start.next, Next::kWait);
  ASSERT_EQ(start.warnings.size(), 1u);
  EXPECT_THAT(WarningWords(start.warnings[0]), HasSubstr(commits_[5].sha().substr(0, 7)));
  const std::vector<std::string> tasks = ConfirmTasks();
  ASSERT_FALSE(tasks.empty());
  int pairs = 0;
  for (const std::string& id : tasks) {
    ASSERT_NE(id, probe);
    const v1::Task& task = book_.at(id).task;
    EXPECT_EQ(task.commit_index(), 5);
    EXPECT_EQ(task.paired_commit_sha(), commits_[4].sha());
    EXPECT_EQ(book_.probe(book_.at(id).probe).round(), 5);
    pairs += task.runs();
  }
  EXPECT_GE(pairs, 3);  // At least --runs pairs.
  // Queued at the front: ahead of the bisect probe queued before the confirmation started.
  EXPECT_EQ(book_.queue().front(), tasks.back());
  EXPECT_TRUE(stage_.StartedFor(book_.at(tasks[0]).task));

  const ConfirmationStep last = ReportAll(100, {120});
  EXPECT_EQ(last.next, Next::kConfirmed);
  ASSERT_TRUE(last.verdict.has_value());
  EXPECT_THAT(ConfirmationVerdictWords(*last.verdict), HasSubstr("w1"));
  EXPECT_TRUE(stage_.confirmation().confirmed());
  EXPECT_EQ(stage_.confirmation().fresh_pairs(), pairs);
  EXPECT_NEAR(stage_.confirmation().ratio(), 1.2, 0.01);
  ASSERT_TRUE(last.ratio.has_value()) << "the job's after follows from the ratio";
  EXPECT_NEAR(*last.ratio, 1.2, 0.01);
}

TEST_F(ConfirmationStageTest, PairsAnEarlierJobMeasuredCountAsReusedAndLeaveOneFreshPair) {
  SearchEndsAt(4, 5);
  frame_.state = v1::JOB_STATE_CONFIRMING;
  // Without them it measures at least --runs (3) fresh pairs (the test above). Job-1 measured
  // both commits on w1 (its confirmation, three pairs), and w1's GPU agreed with itself in this
  // job: they count as w1's set, and one fresh interleaved pair remains.
  v1::CachedResult anchor = CachedAt(commits_, 2, "w1", {110, 110, 110});
  anchor.set_kind(v1::PROBE_KIND_BISECT);
  reuse_ = ResultReuse({anchor, CachedAt(commits_, 4, "w1", {100, 100.2, 99.8}),
                        CachedAt(commits_, 5, "w1", {120, 120.3, 119.7})},
                       commits_);
  ASSERT_TRUE(reuse_.OnMeasured("w1", 2, {110.1})->agreed);
  const ConfirmationStep start = stage_.Start(/*early=*/false, Context());
  ASSERT_EQ(start.warnings.size(), 1u);
  EXPECT_THAT(WarningWords(start.warnings[0]),
              HasSubstr("3 pairs the search already has, all measured by earlier jobs"));
  EXPECT_EQ(stage_.confirmation().reused_pairs(), 3);
  EXPECT_EQ(stage_.confirmation().cached_pairs(), 3);
  ASSERT_EQ(stage_.confirmation().sets_size(), 1);
  EXPECT_EQ(stage_.confirmation().sets(0).cached_job_id(), "job-1");
  EXPECT_FALSE(stage_.confirmation().sets(0).interleaved());
  const std::vector<std::string> tasks = ConfirmTasks();
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(book_.at(tasks[0]).task.runs(), 1);
  // The fresh pair must show the step too: the cached pairs alone confirm nothing.
  const ConfirmationStep last = Report(tasks[0], "w2", 100, 120);
  EXPECT_EQ(last.next, Next::kConfirmed);
  EXPECT_EQ(stage_.confirmation().fresh_pairs(), 1);
}

TEST_F(ConfirmationStageTest, AWorkersOwnSamplesOfBothCommitsTakePrecedenceOverItsCachedOnes) {
  SearchEndsAt(4, 5);
  frame_.state = v1::JOB_STATE_CONFIRMING;
  const int good = Measure(book_.NewTask(v1::PROBE_KIND_BISECT, 4, 2), "w1", {100, 100.1, 99.9});
  const int bad = Measure(book_.NewTask(v1::PROBE_KIND_BISECT, 5, 2), "w1", {120, 120.1, 119.9});
  book_.mutable_probe(good).set_verdict(v1::VERDICT_GOOD);
  book_.mutable_probe(bad).set_verdict(v1::VERDICT_BAD);
  v1::CachedResult anchor = CachedAt(commits_, 2, "w1", {110, 110, 110});
  anchor.set_kind(v1::PROBE_KIND_BISECT);
  reuse_ = ResultReuse({anchor, CachedAt(commits_, 4, "w1", {100, 100.2, 99.8, 100.1}),
                        CachedAt(commits_, 5, "w1", {120, 120.3, 119.7, 120.2})},
                       commits_);
  ASSERT_TRUE(reuse_.OnMeasured("w1", 2, {110.1})->agreed);
  stage_.Start(/*early=*/false, Context());
  ASSERT_EQ(stage_.confirmation().sets_size(), 1);
  EXPECT_EQ(stage_.confirmation().sets(0).cached_job_id(), "");
  EXPECT_EQ(stage_.confirmation().reused_pairs(), 3);
  EXPECT_EQ(stage_.confirmation().cached_pairs(), 0);
}

// A benchmark that gives one value every run (a work counter, a compressed size): GOOD 100 and
// BAD 145 on w0, three runs each.
class ExactMetricConfirmationStageTest : public ConfirmationStageTest {
 protected:
  ExactMetricConfirmationStageTest() : ConfirmationStageTest({100, 100, 100}, {145, 145, 145}) {}

  // `worker`'s GOOD calibration, finished with `samples`.
  void Calibrate(const std::string& worker, std::vector<double> samples) {
    calibration_.worker(worker).calibration =
        Measure(book_.NewTask(v1::PROBE_KIND_BASELINE_GOOD, 0, 1), worker, samples);
  }

  // A bisect probe of `worker` at `index`, finished with three runs of `value` and `verdict`.
  void Decided(int index, const std::string& worker, double value, v1::Verdict verdict) {
    const int row =
        Measure(book_.NewTask(v1::PROBE_KIND_BISECT, index, 2), worker, {value, value, value});
    book_.mutable_probe(row).set_verdict(verdict);
  }
};

TEST_F(ExactMetricConfirmationStageTest, LastGoodOnOneWorkerAndCulpritOnAnotherAlikeConfirm) {
  // Decision 232: w1 measured last-good, w2 the culprit, and both measure GOOD exactly as w0
  // does. No offset is left to cancel, so the two probes pair as if one worker measured both,
  // and no fresh pair is measured.
  Calibrate("w1", {100});
  Calibrate("w2", {100});
  Decided(4, "w1", 100, v1::VERDICT_GOOD);
  Decided(5, "w2", 145, v1::VERDICT_BAD);
  SearchEndsAt(4, 5);
  frame_.state = v1::JOB_STATE_CONFIRMING;
  const ConfirmationStep step = stage_.Start(/*early=*/false, Context());
  EXPECT_TRUE(ConfirmTasks().empty());
  EXPECT_EQ(step.next, Next::kConfirmed);
  ASSERT_EQ(stage_.confirmation().sets_size(), 1);
  EXPECT_EQ(stage_.confirmation().sets(0).worker(), "w1");
  EXPECT_EQ(stage_.confirmation().sets(0).culprit_worker(), "w2");
  EXPECT_EQ(stage_.confirmation().reused_pairs(), 3);
  EXPECT_EQ(stage_.confirmation().fresh_pairs(), 0);
  EXPECT_NEAR(stage_.confirmation().ratio(), 1.45, 1e-9);
  ASSERT_TRUE(step.verdict.has_value());
  EXPECT_TRUE(step.verdict->across_workers());
  EXPECT_THAT(ConfirmationVerdictWords(*step.verdict), HasSubstr("w1, w2"));
  EXPECT_THAT(ConfirmationVerdictWords(*step.verdict), HasSubstr("measure GOOD exactly alike"));
}

TEST_F(ExactMetricConfirmationStageTest, AWorkerWhoseGoodDiffersAtAllPairsOnlyWithItself) {
  // w2's GOOD is 100.01: a 0.01% offset may be noise or a GPU's, and nothing cancels it across
  // two workers. Likewise for a worker with no calibration yet (w3), and for a quarantined one.
  for (const std::string culprit_worker : {"w2", "w3", "w4"}) {
    SCOPED_TRACE(culprit_worker);
    Calibrate("w1", {100});
    Calibrate("w2", {100.01});
    Calibrate("w4", {100});
    calibration_.worker("w4").quarantined = true;
    Decided(4, "w1", 100, v1::VERDICT_GOOD);
    Decided(5, culprit_worker, 145, v1::VERDICT_BAD);
    SearchEndsAt(4, 5);
    frame_.state = v1::JOB_STATE_CONFIRMING;
    stage_.Start(/*early=*/false, Context());
    EXPECT_EQ(stage_.confirmation().sets_size(), 0);
    EXPECT_FALSE(ConfirmTasks().empty()) << "a fresh pair on one worker";
    std::vector<std::string> cancelled;
    for (const std::string& id : ConfirmTasks()) {
      book_.CancelTask(book_.at(id), id, "next case", kNow, &cancelled);
    }
  }
}

TEST_F(ExactMetricConfirmationStageTest, ACalibrationDuringAnEarlyConfirmationEndsItsWait) {
  // Started early, before w2 (the culprit's worker) calibrated: a fresh pair is queued and
  // handed out. w2's calibration then shows it measures GOOD as w1 does, and the job completes
  // the confirmation from the search's two probes without waiting for the pair.
  Calibrate("w1", {100});
  Decided(4, "w1", 100, v1::VERDICT_GOOD);
  Decided(5, "w2", 145, v1::VERDICT_BAD);
  SearchEndsAt(4, 5);
  stage_.Start(/*early=*/true, Context());
  const std::vector<std::string> pending = ConfirmTasks();
  ASSERT_FALSE(pending.empty());
  book_.HandOut(pending.front(), "w3");
  Calibrate("w2", {100});
  frame_.state = v1::JOB_STATE_CONFIRMING;
  const ConfirmationStep step = stage_.CompleteEarly(Context());
  EXPECT_EQ(step.next, Next::kConfirmed);
  EXPECT_EQ(step.cancelled, std::vector<std::string>{pending.front()}) << "the running pair";
  EXPECT_TRUE(ConfirmTasks().empty());
  ASSERT_EQ(stage_.confirmation().sets_size(), 1);
  EXPECT_EQ(stage_.confirmation().sets(0).culprit_worker(), "w2");
  EXPECT_EQ(stage_.confirmation().fresh_pairs(), 0);
}

TEST_F(ExactMetricConfirmationStageTest, SpeculationSkipsACulpritWhosePairIsOnWorkersAlike) {
  // The last round: 5 and 6 in flight between last-good 4 (w1) and first-bad 7 (w2), all three
  // calibrated alike. Culprit 7 (if 6 comes back GOOD on w3) pairs 6 on w3 with 7 on w2, so it
  // needs no pair measured ahead; 5 and 6 would pair with 4 on w1 or with each other likewise.
  Calibrate("w1", {100});
  Calibrate("w2", {100});
  Calibrate("w3", {100});
  Calibrate("w5", {100});
  Decided(4, "w1", 100, v1::VERDICT_GOOD);
  Decided(7, "w2", 145, v1::VERDICT_BAD);
  search_ = BisectSearch(kCommits);
  ASSERT_TRUE(search_.Record(4, v1::VERDICT_GOOD).ok());
  ASSERT_TRUE(search_.Record(7, v1::VERDICT_BAD).ok());
  for (const auto& [index, worker] : {std::pair<int, std::string>{5, "w5"}, {6, "w3"}}) {
    const std::string id = book_.NewTask(v1::PROBE_KIND_BISECT, index, 3);
    book_.HandOut(id, worker);
    book_.ProbeOf(book_.at(id)).set_state(v1::PROBE_STATE_RUNNING);
    search_.MarkInFlight(index);
  }
  ASSERT_TRUE(stage_.HasSpeculationCandidates());
  EXPECT_TRUE(stage_.CreateSpeculativeTasks(/*spare=*/4, Context()).empty());
}

TEST_F(ConfirmationStageTest, AStepTheFreshPairsDoNotReproduceIsUnconfirmed) {
  SearchEndsAt(4, 5);
  frame_.state = v1::JOB_STATE_CONFIRMING;
  stage_.Start(/*early=*/false, Context());
  // The culprit measures faster than last-good: not the regression's way, nothing to add.
  const ConfirmationStep last = ReportAll(100, {99});
  EXPECT_EQ(last.next, Next::kUnconfirmed);
  EXPECT_TRUE(last.verdict.has_value());
  EXPECT_FALSE(stage_.confirmation().confirmed());
  EXPECT_TRUE(ConfirmTasks().empty());
}

TEST_F(ConfirmationStageTest, AnUnclearLeaningStepGetsMorePairsUntilTheRunsAreSpent) {
  SearchEndsAt(4, 5);
  frame_.state = v1::JOB_STATE_CONFIRMING;
  stage_.Start(/*early=*/false, Context());
  // Pairs 3.4% slower and 2% faster, two to one: the estimate leans the regression's way but
  // its interval holds "no step". More pairs, then unconfirmed once --max-runs (12) are in.
  ConfirmationStep step = ReportAll(100, {103.4, 98, 103.4});
  int rounds = 0;
  while (step.next == Next::kWait && rounds < 10) {
    ASSERT_EQ(step.warnings.size(), 1u);  // "confirming ... N more pairs".
    ASSERT_FALSE(ConfirmTasks().empty());
    step = ReportAll(100, {103.4, 98, 103.4});
    ++rounds;
  }
  EXPECT_GE(rounds, 1);
  EXPECT_EQ(step.next, Next::kUnconfirmed);
  EXPECT_GE(stage_.confirmation().fresh_pairs(), 12);
}

TEST_F(ConfirmationStageTest, PairsThatFailedLeaveItUnconfirmedWithTheReason) {
  SearchEndsAt(4, 5);
  frame_.state = v1::JOB_STATE_CONFIRMING;
  stage_.Start(/*early=*/false, Context());
  ConfirmationStep step;
  for (const std::string& id : ConfirmTasks()) {
    ProbeBook::TaskEntry& entry = book_.at(id);
    entry.done = true;
    v1::TaskResult failed;
    failed.set_outcome(v1::TASK_OUTCOME_INFRA_ERROR);
    failed.set_message("the GPU fell off the bus");
    step = stage_.OnResult(book_.ProbeOf(entry), entry.task, failed, Context());
  }
  EXPECT_EQ(step.next, Next::kUnconfirmed);
  ASSERT_TRUE(step.verdict.has_value());
  EXPECT_THAT(ConfirmationVerdictWords(*step.verdict), HasSubstr("the GPU fell off the bus"));
}

TEST_F(ConfirmationStageTest, PairsOfAGpuQuarantinedSinceAreMeasuredAgainElsewhere) {
  SearchEndsAt(4, 5);
  frame_.state = v1::JOB_STATE_CONFIRMING;
  stage_.Start(/*early=*/false, Context());
  std::vector<std::string> first = ConfirmTasks();
  ConfirmationStep step;
  for (size_t i = 0; i + 1 < first.size(); ++i) step = Report(first[i], "odd", 100, 120);
  calibration_.worker("odd").quarantined = true;
  step = Report(first.back(), "odd", 100, 120, std::max(1, book_.at(first.back()).task.runs()));
  EXPECT_EQ(step.next, Next::kWait);
  ASSERT_EQ(step.warnings.size(), 1u);
  EXPECT_FALSE(ConfirmTasks().empty());
  EXPECT_EQ(stage_.confirmation().fresh_pairs(), 0);
  EXPECT_EQ(ReportAll(100, {120}).next, Next::kConfirmed);
}

TEST_F(ConfirmationStageTest, AnEarlyConfirmationIsSettledByTheJobOrCancelledWhenTheSearchMoves) {
  SearchEndsAt(4, 5);
  // Started beside the calibrations still owed: the job stays BISECTING.
  stage_.Start(/*early=*/true, Context());
  EXPECT_TRUE(stage_.early());
  ASSERT_FALSE(ConfirmTasks().empty());
  // Nothing changes while the search still ends at (4, 5).
  EXPECT_TRUE(stage_.AbortIfTargetLost(Context()).warnings.empty());
  EXPECT_TRUE(stage_.early());

  // A calibration moved a verdict: the search now ends at (2, 3); running pairs are killed.
  const std::string running = ConfirmTasks().front();
  book_.HandOut(running, "w1");
  SearchEndsAt(2, 3);
  EXPECT_FALSE(stage_.StartedFor(book_.at(running).task));
  const ConfirmationStep abort = stage_.AbortIfTargetLost(Context());
  EXPECT_FALSE(stage_.early());
  EXPECT_EQ(abort.cancelled, std::vector<std::string>{running});
  ASSERT_EQ(abort.warnings.size(), 1u);
  EXPECT_TRUE(ConfirmTasks().empty());
  EXPECT_FALSE(stage_.has_confirmation());

  // Started early again, its last pair hands the decision back to the job, which completes it.
  stage_.Start(/*early=*/true, Context());
  EXPECT_EQ(ReportAll(100, {120}).next, Next::kSettleSearch);
  frame_.state = v1::JOB_STATE_CONFIRMING;
  EXPECT_EQ(stage_.CompleteEarly(Context()).next, Next::kConfirmed);
  EXPECT_FALSE(stage_.early());
}

TEST_F(ConfirmationStageTest, PairsMeasuredAheadCountForTheirCulpritOnly) {
  // The last round: (3, 6] with 4 and 5 in flight, nothing left to place.
  SearchEndsAt(3, 6);
  search_.MarkInFlight(4);
  search_.MarkInFlight(5);
  EXPECT_TRUE(stage_.HasSpeculationCandidates());
  // First-bad (6) first: the culprit if both probes in flight come back GOOD.
  const std::vector<std::string> ahead = stage_.CreateSpeculativeTasks(3, Context());
  ASSERT_FALSE(ahead.empty());
  for (const std::string& id : ahead) {
    EXPECT_EQ(book_.at(id).task.commit_index(), 6);
    EXPECT_EQ(book_.at(id).task.paired_commit_sha(), commits_[5].sha());
  }
  // 5 and 4 need as many pairs each; two spare tasks cannot cover one, so none is measured.
  EXPECT_TRUE(stage_.CreateSpeculativeTasks(2, Context()).empty());
  // Measured before the search ends: kept, nothing judged.
  for (const std::string& id : ahead) EXPECT_EQ(Report(id, "w2", 100, 120).next, Next::kWait);

  // Both probes came back GOOD: 6 is the culprit, and its pairs ahead are all it needs.
  ASSERT_TRUE(search_.Record(4, v1::VERDICT_GOOD).ok());
  ASSERT_TRUE(search_.Record(5, v1::VERDICT_GOOD).ok());
  ASSERT_TRUE(search_.Done());
  frame_.state = v1::JOB_STATE_CONFIRMING;
  const ConfirmationStep start = stage_.Start(/*early=*/false, Context());
  EXPECT_EQ(start.next, Next::kConfirmed);
  EXPECT_EQ(stage_.confirmation().fresh_pairs(), static_cast<int>(ahead.size()));
  EXPECT_TRUE(ConfirmTasks().empty());
}

TEST_F(ConfirmationStageTest, PairsAheadOfAnotherCommitAreCancelledWhenTheCulpritIsKnown) {
  SearchEndsAt(3, 6);
  search_.MarkInFlight(4);
  search_.MarkInFlight(5);
  const std::vector<std::string> ahead = stage_.CreateSpeculativeTasks(3, Context());
  ASSERT_FALSE(ahead.empty());
  for (const std::string& id : ahead) book_.HandOut(id, "w2");
  // 5 came back BAD and 4 GOOD: the culprit is 5, not 6.
  ASSERT_TRUE(search_.Record(4, v1::VERDICT_GOOD).ok());
  ASSERT_TRUE(search_.Record(5, v1::VERDICT_BAD).ok());
  frame_.state = v1::JOB_STATE_CONFIRMING;
  const ConfirmationStep start = stage_.Start(/*early=*/false, Context());
  EXPECT_EQ(start.next, Next::kWait);
  EXPECT_EQ(start.cancelled, ahead);
  for (const std::string& id : ahead) {
    EXPECT_EQ(book_.probe(book_.at(id).probe).state(), v1::PROBE_STATE_CANCELLED);
  }
  for (const std::string& id : ConfirmTasks()) EXPECT_EQ(book_.at(id).task.commit_index(), 5);
}

}  // namespace
}  // namespace kbisect
