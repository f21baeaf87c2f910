// Copyright 2026 The kbisect Authors.
//
// JudgeSuite on probe tables built by hand: each run carries every metric of a suite, and each
// metric is judged on its own from the same rows. A metric that did not move is unchanged and
// one that got better is improved; a regressed one's verdicts come from the rows the lead's
// search measured, so its culprit is known when its GOOD and BAD rows are neighbours, and its
// range is left to a follow-up otherwise. A worker's offset is taken out with its own GOOD; a
// worker without one, and rows too noisy to tell, narrow nothing. A finished job that will not
// follow up says so for every metric it leaves unsearched. Where the rows leave a range, the
// suite's own probes (PlanSuiteProbes) narrow it; a whole BisectJob does so once its lead's
// search has its answer, and leaves to a follow-up what no worker is left to probe.
#include "coordinator/job/suite_ledger.h"

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "coordinator/job/bisect_job.h"
#include "gtest/gtest.h"
#include "tests/testing/job_simulator.h"

namespace kbisect {
namespace {

constexpr int kLast = 10;  // Commits 0 (GOOD) .. 10 (BAD).

// Values of every metric in one run, by name.
using RunValues = std::map<std::string, double>;

class SuiteLedgerTest : public ::testing::Test {
 protected:
  SuiteLedgerTest() {
    for (int i = 0; i <= kLast; ++i) {
      v1::CommitRef commit;
      commit.set_sha(absl::StrCat(std::string(39, 'a' + i % 6), i % 10));
      commit.set_short_sha(commit.sha().substr(0, 7));
      commit.set_index(i);
      commit.set_subject(absl::StrCat("change ", i));
      commit.set_body("long message body");
      commits_.push_back(commit);
    }
    frame_.job_id = "job-1";
    frame_.spec.mutable_metric()->set_suite("auto");
    frame_.spec.set_threshold_fraction(0.3);
    frame_.spec.set_max_runs(30);
    frame_.spec.set_runs_per_commit(3);
    frame_.metric_name = "lead_ms";
    frame_.recorded.baselines.mutable_bad()->set_worker("w0");
    AddInfo("lead_ms", "ms", v1::DIRECTION_LOWER_IS_BETTER);
    AddInfo("flat_ms", "ms", v1::DIRECTION_LOWER_IS_BETTER);
    AddInfo("early_ms", "ms", v1::DIRECTION_LOWER_IS_BETTER);
    AddInfo("faster_ms", "ms", v1::DIRECTION_LOWER_IS_BETTER);
    AddInfo("bw_gbs", "GB/s", v1::DIRECTION_HIGHER_IS_BETTER);
  }

  void AddInfo(const std::string& name, const std::string& unit, v1::Direction direction) {
    v1::SuiteMetricInfo info;
    info.set_name(name);
    info.set_unit(unit);
    info.set_direction(direction);
    metrics_.push_back(info);
  }

  // The values every metric has at commit `index` on a worker without offset: lead_ms steps at
  // 6, early_ms at 3 (both +30%), faster_ms gets 20% faster at 5, bw_gbs drops 25% at 6,
  // flat_ms never moves. `jitter` spreads the runs a little.
  static RunValues ValuesAt(int index, double jitter) {
    return RunValues{{"lead_ms", (index >= 6 ? 13.0 : 10.0) + jitter},
                     {"flat_ms", 5.0 + jitter / 4},
                     {"early_ms", (index >= 3 ? 2.6 : 2.0) + jitter / 10},
                     {"faster_ms", (index >= 5 ? 8.0 : 10.0) + jitter},
                     {"bw_gbs", (index >= 6 ? 600.0 : 800.0) + 10 * jitter}};
  }

  // A probe row of commit `index` on `worker` with `runs`.
  void AddRow(v1::ProbeKind kind, int index, const std::string& worker,
              const std::vector<RunValues>& runs) {
    v1::Probe* probe = rows_.Add();
    probe->set_kind(kind);
    probe->set_index(index);
    probe->set_sha(commits_[index].sha());
    probe->set_worker(worker);
    probe->set_state(v1::PROBE_STATE_FINISHED);
    for (const RunValues& values : runs) {
      v1::RunRecord* run = probe->add_runs();
      run->set_has_value(true);
      for (const auto& [name, value] : values) {
        v1::SuiteValue* entry = run->add_suite_values();
        entry->set_name(name);
        entry->set_value(value);
      }
    }
  }

  // Three runs of commit `index` on `worker`, every value shifted by `offset` (a slower GPU).
  void Measure(v1::ProbeKind kind, int index, const std::string& worker, double offset = 0) {
    std::vector<RunValues> runs;
    for (double jitter : {-0.02, 0.0, 0.02}) {
      RunValues values = ValuesAt(index, jitter);
      for (auto& [name, value] : values) value *= 1 + offset;
      runs.push_back(values);
    }
    AddRow(kind, index, worker, runs);
  }

  void Baselines() {
    Measure(v1::PROBE_KIND_BASELINE_BAD, kLast, "w0");
    Measure(v1::PROBE_KIND_BASELINE_GOOD, 0, "w0");
  }

  std::map<std::string, v1::SuiteMetricResult> Judge() const {
    std::map<std::string, v1::SuiteMetricResult> rows;
    for (const v1::SuiteMetricResult& row : JudgeSuite(frame_, rows_, commits_, metrics_)) {
      rows[row.name()] = row;
    }
    return rows;
  }

  JobFrame frame_;
  ProbeRows rows_;
  std::vector<v1::CommitRef> commits_;
  std::vector<v1::SuiteMetricInfo> metrics_;
};

TEST_F(SuiteLedgerTest, NothingIsJudgedBeforeTheReferenceMeasuredBothEnds) {
  frame_.recorded.baselines.clear_bad();
  Measure(v1::PROBE_KIND_BASELINE_GOOD, 0, "w0");
  const std::vector<v1::SuiteMetricResult> rows = JudgeSuite(frame_, rows_, commits_, metrics_);
  ASSERT_EQ(rows.size(), metrics_.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].name(), metrics_[i].name()) << "in the order the output prints them";
    EXPECT_EQ(rows[i].state(), v1::SUITE_METRIC_STATE_UNSPECIFIED) << rows[i].name();
  }
  EXPECT_TRUE(rows[0].lead());
  EXPECT_FALSE(rows[1].lead());
}

TEST_F(SuiteLedgerTest, TheBaselinesTellUnchangedImprovedAndRegressedMetricsApart) {
  Baselines();
  std::map<std::string, v1::SuiteMetricResult> rows = Judge();
  EXPECT_EQ(rows["flat_ms"].state(), v1::SUITE_METRIC_STATE_UNCHANGED);
  EXPECT_EQ(rows["faster_ms"].state(), v1::SUITE_METRIC_STATE_IMPROVED);
  EXPECT_NEAR(rows["faster_ms"].regression_pct(), -20, 0.5);
  // Higher is better: a drop in bandwidth is a regression.
  EXPECT_EQ(rows["bw_gbs"].state(), v1::SUITE_METRIC_STATE_SEARCHING);
  EXPECT_NEAR(rows["bw_gbs"].regression_pct(), 25, 0.5);
  // No probe yet: the whole range is open.
  EXPECT_EQ(rows["early_ms"].last_good().index(), 0);
  EXPECT_EQ(rows["early_ms"].first_bad().index(), kLast);
  EXPECT_TRUE(rows["early_ms"].first_bad().body().empty()) << "rows carry no message bodies";
}

TEST_F(SuiteLedgerTest, TheLeadsProbesPlaceEveryOtherMetric) {
  Baselines();
  // The lead's search: 5 GOOD, 8 BAD, 6 BAD, then the culprit 6 (5 GOOD).
  for (int index : {5, 8, 6}) Measure(v1::PROBE_KIND_BISECT, index, "w0");
  std::map<std::string, v1::SuiteMetricResult> rows = Judge();
  const v1::SuiteMetricResult& lead = rows["lead_ms"];
  EXPECT_EQ(lead.state(), v1::SUITE_METRIC_STATE_CULPRIT);
  EXPECT_EQ(lead.culprit().index(), 6);
  EXPECT_EQ(lead.last_good().index(), 5);
  EXPECT_NEAR(lead.before(), 10.0, 0.05);
  EXPECT_NEAR(lead.after(), 13.0, 0.05);
  EXPECT_NEAR(lead.culprit_regression_pct(), 30, 0.5);
  EXPECT_EQ(lead.job_id(), "job-1");
  // The bandwidth moved at the same commit: found on the same rows, for free.
  EXPECT_EQ(rows["bw_gbs"].state(), v1::SUITE_METRIC_STATE_CULPRIT);
  EXPECT_EQ(rows["bw_gbs"].culprit().index(), 6);
  // early_ms moved before 5: its step lies in (0, 5], for a follow-up.
  EXPECT_EQ(rows["early_ms"].state(), v1::SUITE_METRIC_STATE_SEARCHING);
  EXPECT_EQ(rows["early_ms"].last_good().index(), 0);
  EXPECT_EQ(rows["early_ms"].first_bad().index(), 5);
  EXPECT_FALSE(rows["early_ms"].has_culprit());
}

TEST_F(SuiteLedgerTest, AWorkersOffsetIsTakenOutWithItsOwnGood) {
  Baselines();
  // w1 measures everything 20% higher: its GOOD says so, and its rows are judged in w0's frame.
  Measure(v1::PROBE_KIND_BASELINE_GOOD, 0, "w1", 0.2);
  Measure(v1::PROBE_KIND_BISECT, 2, "w1", 0.2);
  Measure(v1::PROBE_KIND_BISECT, 3, "w1", 0.2);
  // w2 has no GOOD of its own: its row (which would look BAD for everything) is not used.
  Measure(v1::PROBE_KIND_BISECT, 1, "w2", 0.4);
  std::map<std::string, v1::SuiteMetricResult> rows = Judge();
  EXPECT_EQ(rows["early_ms"].state(), v1::SUITE_METRIC_STATE_CULPRIT);
  EXPECT_EQ(rows["early_ms"].culprit().index(), 3);
  EXPECT_NEAR(rows["early_ms"].before(), 2.0, 0.01);
  EXPECT_NEAR(rows["early_ms"].after(), 2.6, 0.01);
  EXPECT_EQ(rows["lead_ms"].state(), v1::SUITE_METRIC_STATE_SEARCHING);
  EXPECT_EQ(rows["lead_ms"].last_good().index(), 3);
  EXPECT_EQ(rows["lead_ms"].first_bad().index(), kLast);
}

TEST_F(SuiteLedgerTest, RowsThatCannotTellNarrowNothing) {
  Baselines();
  // Halfway between GOOD and BAD with a wide spread: neither side.
  AddRow(
      v1::PROBE_KIND_BISECT, 4, "w0",
      {RunValues{{"early_ms", 2.1}}, RunValues{{"early_ms", 2.5}}, RunValues{{"early_ms", 2.3}}});
  // A confirmation's runs mix two commits: never used.
  AddRow(
      v1::PROBE_KIND_CONFIRM, 1, "w0",
      {RunValues{{"early_ms", 2.6}}, RunValues{{"early_ms", 2.6}}, RunValues{{"early_ms", 2.6}}});
  std::map<std::string, v1::SuiteMetricResult> rows = Judge();
  EXPECT_EQ(rows["early_ms"].state(), v1::SUITE_METRIC_STATE_SEARCHING);
  EXPECT_EQ(rows["early_ms"].last_good().index(), 0);
  EXPECT_EQ(rows["early_ms"].first_bad().index(), kLast);
}

TEST_F(SuiteLedgerTest, OnlyTheSpecsMembersAreJudged) {
  frame_.spec.mutable_metric()->add_members("early_ms");
  frame_.spec.mutable_metric()->add_members("flat_ms");
  Baselines();
  const std::vector<v1::SuiteMetricResult> rows = JudgeSuite(frame_, rows_, commits_, metrics_);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].name(), "flat_ms");
  EXPECT_EQ(rows[1].name(), "early_ms");
}

TEST_F(SuiteLedgerTest, AFinishedJobThatWillNotFollowUpSaysWhereEachStepLies) {
  Baselines();
  Measure(v1::PROBE_KIND_BISECT, 5, "w0");
  frame_.outcome = v1::OUTCOME_CULPRIT_FOUND;
  EXPECT_TRUE(SuiteFollowsUp(frame_.outcome, frame_.spec));
  EXPECT_EQ(Judge()["early_ms"].state(), v1::SUITE_METRIC_STATE_SEARCHING) << "left to a follow-up";

  frame_.outcome = v1::OUTCOME_ERROR;
  EXPECT_FALSE(SuiteFollowsUp(frame_.outcome, frame_.spec));
  v1::SuiteMetricResult early = Judge()["early_ms"];
  EXPECT_EQ(early.state(), v1::SUITE_METRIC_STATE_UNRESOLVED);
  EXPECT_TRUE(absl::StrContains(early.reason(), commits_[5].short_sha())) << early.reason();
  EXPECT_TRUE(absl::StrContains(early.reason(), "ended before")) << early.reason();

  frame_.outcome = v1::OUTCOME_NO_REGRESSION;
  frame_.spec.set_follow_up_depth(kMaxSuiteFollowUpDepth);
  early = Judge()["early_ms"];
  EXPECT_EQ(early.state(), v1::SUITE_METRIC_STATE_UNRESOLVED);
  EXPECT_TRUE(absl::StrContains(early.reason(), "--lead early_ms")) << early.reason();
}

TEST_F(SuiteLedgerTest, AtMaxRunsAMetricOtherThanTheLeadMustStandOutAmongTheSuites) {
  // 30 runs of each baseline (max_runs) where flat_ms and lead_ms differ by about 1.5% with
  // some overlap: significant for one metric (p < 0.05), not among five (p < 0.01).
  std::vector<RunValues> good;
  std::vector<RunValues> bad;
  for (int i = 0; i < 30; ++i) {
    const double jitter = ((i * 7) % 30 - 14.5) / 14.5 * 0.04;  // +-4%, spread evenly.
    const double shifted = ((i * 11) % 30 - 14.5) / 14.5 * 0.04;
    good.push_back(RunValues{{"lead_ms", 10.0 * (1 + jitter)}, {"flat_ms", 5.0 * (1 + jitter)}});
    bad.push_back(
        RunValues{{"lead_ms", 10.0 * (1.015 + shifted)}, {"flat_ms", 5.0 * (1.015 + shifted)}});
  }
  AddRow(v1::PROBE_KIND_BASELINE_BAD, kLast, "w0", bad);
  AddRow(v1::PROBE_KIND_BASELINE_GOOD, 0, "w0", good);
  std::map<std::string, v1::SuiteMetricResult> rows = Judge();
  EXPECT_EQ(rows["flat_ms"].state(), v1::SUITE_METRIC_STATE_UNCHANGED);
  EXPECT_TRUE(absl::StrContains(rows["flat_ms"].reason(), "does not stand out among the suite's 5"))
      << rows["flat_ms"].reason();
  // The lead is judged as a single metric is (the user pointed at it).
  EXPECT_NE(rows["lead_ms"].state(), v1::SUITE_METRIC_STATE_UNCHANGED) << rows["lead_ms"].reason();
}

// The lead's search of the fixture: 5 GOOD, 8 BAD, 6 BAD; early_ms is left (0, 5].
TEST_F(SuiteLedgerTest, TheSuitesOwnProbesNarrowARangeUntilItsCulpritIsKnown) {
  Baselines();
  for (int index : {5, 8, 6}) Measure(v1::PROBE_KIND_BISECT, index, "w0");
  std::vector<int> probed;
  for (int step = 0; step < 10; ++step) {
    const std::vector<v1::SuiteMetricResult> rows = JudgeSuite(frame_, rows_, commits_, metrics_);
    const std::vector<int> points = PlanSuiteProbes(rows, rows_, 1, frame_.spec.max_runs());
    if (points.empty()) break;
    ASSERT_EQ(points.size(), 1u);
    probed.push_back(points[0]);
    Measure(v1::PROBE_KIND_SUITE, points[0], "w0");
  }
  std::map<std::string, v1::SuiteMetricResult> rows = Judge();
  ASSERT_EQ(rows["early_ms"].state(), v1::SUITE_METRIC_STATE_CULPRIT);
  EXPECT_EQ(rows["early_ms"].culprit().index(), 3);
  EXPECT_EQ(rows["early_ms"].job_id(), "job-1") << "found by this job";
  // (0, 5] halved at 3 (BAD), then 2 (GOOD): two probes, as a bisect of that range takes.
  EXPECT_EQ(probed, (std::vector<int>{3, 2}));
  // The lead's rows and the others' are as they were.
  EXPECT_EQ(rows["lead_ms"].culprit().index(), 6);
  EXPECT_EQ(rows["bw_gbs"].culprit().index(), 6);
}

TEST_F(SuiteLedgerTest, SeveralWorkersSplitARangeEvenlyAndARangeInFlightWaits) {
  Baselines();
  for (int index : {5, 8, 6}) Measure(v1::PROBE_KIND_BISECT, index, "w0");
  const std::vector<v1::SuiteMetricResult> rows = JudgeSuite(frame_, rows_, commits_, metrics_);
  // (0, 5] in thirds; a fifth worker finds nothing more to split (four untested commits).
  EXPECT_EQ(PlanSuiteProbes(rows, rows_, 2, 30), (std::vector<int>{2, 3}));
  EXPECT_EQ(PlanSuiteProbes(rows, rows_, 9, 30), (std::vector<int>{1, 2, 3, 4}));
  EXPECT_TRUE(PlanSuiteProbes(rows, rows_, 0, 30).empty());
  // A suite probe pending inside the range: its result comes first.
  v1::Probe* pending = rows_.Add();
  pending->set_kind(v1::PROBE_KIND_SUITE);
  pending->set_index(2);
  pending->set_state(v1::PROBE_STATE_RUNNING);
  EXPECT_TRUE(PlanSuiteProbes(rows, rows_, 2, 30).empty());
}

TEST_F(SuiteLedgerTest, ACommitMeasuredWithoutTheMetricIsNotProbedAgain) {
  Baselines();
  for (int index : {5, 8, 6}) Measure(v1::PROBE_KIND_BISECT, index, "w0");
  const std::vector<v1::SuiteMetricResult> rows = JudgeSuite(frame_, rows_, commits_, metrics_);
  AddRow(v1::PROBE_KIND_SUITE, 3, "w0", {});  // Its build failed: no run.
  EXPECT_EQ(PlanSuiteProbes(rows, rows_, 1, 30), (std::vector<int>{2}));
  // Nor one that holds max_runs samples of the metric already: 2 then, and 4 is next nearest.
  Measure(v1::PROBE_KIND_SUITE, 2, "w0");
  EXPECT_EQ(PlanSuiteProbes(rows, rows_, 1, 3), (std::vector<int>{4}));
}

TEST_F(SuiteLedgerTest, ARangeItsProbesDoNotNarrowIsLeftToAFollowUp) {
  Baselines();
  v1::SuiteMetricResult row;
  row.set_name("early_ms");
  row.set_state(v1::SUITE_METRIC_STATE_SEARCHING);
  row.mutable_last_good()->set_index(0);
  row.mutable_first_bad()->set_index(kLast);
  // ceil(log2 10) = 4 probes inside narrow (0, 10] to one commit when there is a step; five that
  // left the range as wide as it was say the rows cannot place it.
  for (int index : {5, 3, 7, 4}) Measure(v1::PROBE_KIND_SUITE, index, "w0");
  EXPECT_FALSE(PlanSuiteProbes({row}, rows_, 1, 30).empty());
  Measure(v1::PROBE_KIND_SUITE, 6, "w0");
  EXPECT_TRUE(PlanSuiteProbes({row}, rows_, 1, 30).empty());
}

TEST_F(SuiteLedgerTest, NeighboursShortOfTheConfidenceMeasureTheEndWithFewerSamples) {
  Baselines();
  Measure(v1::PROBE_KIND_SUITE, 2, "w0");
  Measure(v1::PROBE_KIND_SUITE, 3, "w0");
  Measure(v1::PROBE_KIND_SUITE, 3, "w0");
  v1::SuiteMetricResult row;
  row.set_name("early_ms");
  row.set_state(v1::SUITE_METRIC_STATE_SEARCHING);
  row.mutable_last_good()->set_index(2);
  row.mutable_first_bad()->set_index(3);
  EXPECT_EQ(PlanSuiteProbes({row}, rows_, 2, 30), (std::vector<int>{2}))
      << "3 samples at 2, 6 at 3; a range of neighbours takes one worker";
  EXPECT_EQ(PlanSuiteProbes({row}, rows_, 1, 6), (std::vector<int>{2}));
  EXPECT_TRUE(PlanSuiteProbes({row}, rows_, 1, 3).empty()) << "both ends hold max_runs";
}

// A suite job over commits 0..n run to its end with `workers` workers, every run printing
// `lead` (a step of 25% at `lead_step`, none when -1), `other` (the same at `other_step`) and
// `flat`, with a 0.1% spread. `before_each_call` is called before each TakeTasks.
struct SuiteJobRun {
  int n = 40;
  int lead_step = 10;
  int other_step = 30;
  int workers = 2;
  std::function<void(BisectJob&)> before_each_call = [](BisectJob&) {};
};

std::unique_ptr<BisectJob> RunSuiteJob(const SuiteJobRun& spec_of_run) {
  const absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  auto job = std::make_unique<BisectJob>("sim", SuiteSimulationSpec(),
                                         SimulatedCommits(spec_of_run.n), now);
  const std::vector<std::pair<std::string, int>> metrics = {
      {"lead", spec_of_run.lead_step}, {"other", spec_of_run.other_step}, {"flat", -1}};
  for (int call = 0; call < 1000 && !job->finished(); ++call) {
    spec_of_run.before_each_call(*job);
    if (job->finished()) break;
    std::vector<v1::Task> tasks = job->TakeTasks(spec_of_run.workers, now);
    if (tasks.empty()) break;
    std::set<std::string> cancelled;
    for (const v1::Task& task : tasks) {
      if (cancelled.count(task.task_id()) > 0) continue;
      v1::TaskResult result;
      result.set_outcome(v1::TASK_OUTCOME_SUCCEEDED);
      result.set_metric_name("lead");
      result.set_metric_unit("ms");
      for (const auto& [name, step] : metrics) {
        v1::SuiteMetricInfo* info = result.add_suite_metrics();
        info->set_name(name);
        info->set_unit("ms");
        info->set_direction(v1::DIRECTION_LOWER_IS_BETTER);
      }
      for (int r = 0; r < task.runs(); ++r) {
        v1::RunRecord* run = result.add_runs();
        run->set_has_value(true);
        for (const auto& [name, step] : metrics) {
          const double truth = step >= 0 && task.commit_index() >= step ? 1.25 : 1.0;
          const double sample = truth * (1 + 0.001 * (r % 3 - 1));
          v1::SuiteValue* value = run->add_suite_values();
          value->set_name(name);
          value->set_value(sample);
          if (name == "lead") {
            run->set_value(sample);
            result.add_samples(sample);
          }
        }
      }
      for (const std::string& id : job->OnTaskFinished(task.task_id(), result, now)) {
        cancelled.insert(id);
      }
    }
  }
  return job;
}

const v1::SuiteMetricResult* RowOf(const v1::JobStatus& status, const std::string& name) {
  for (const v1::SuiteMetricResult& row : status.suite()) {
    if (row.name() == name) return &row;
  }
  return nullptr;
}

TEST(SuiteSearchTest, TheJobSearchesItsOtherMetricsRangeItselfAndLeavesNoFollowUp) {
  const std::unique_ptr<BisectJob> job = RunSuiteJob({});
  const v1::JobStatus& status = job->status();
  ASSERT_TRUE(job->finished());
  EXPECT_EQ(status.state(), v1::JOB_STATE_DONE);
  EXPECT_EQ(status.status(), v1::OUTCOME_CULPRIT_FOUND) << "the lead's outcome";
  EXPECT_EQ(status.culprit().index(), 10);
  const v1::SuiteMetricResult* other = RowOf(status, "other");
  ASSERT_NE(other, nullptr);
  ASSERT_EQ(other->state(), v1::SUITE_METRIC_STATE_CULPRIT) << other->ShortDebugString();
  EXPECT_EQ(other->culprit().index(), 30);
  EXPECT_EQ(other->job_id(), "sim");
  EXPECT_EQ(RowOf(status, "flat")->state(), v1::SUITE_METRIC_STATE_UNCHANGED);
  for (const v1::SuiteMetricResult& row : status.suite()) {
    EXPECT_NE(row.state(), v1::SUITE_METRIC_STATE_SEARCHING) << row.name() << ": no follow-up";
  }
  int suite_probes = 0;
  int runs = 0;
  for (const v1::Probe& probe : status.probes()) {
    runs += probe.runs_size();
    if (probe.kind() != v1::PROBE_KIND_SUITE) continue;
    ++suite_probes;
    EXPECT_EQ(probe.verdict(), v1::VERDICT_UNSPECIFIED) << "no verdict of the lead's search";
    EXPECT_GT(probe.index(), 10) << "only in the other metric's range";
  }
  EXPECT_GE(suite_probes, 1);
  EXPECT_LE(suite_probes, 8) << "about a bisect of the range the lead's probes left";
  EXPECT_EQ(status.bench_runs(), runs) << "the suite's runs count";
}

TEST(SuiteSearchTest, ALeadThatDidNotMoveStillHasItsSuiteSearchedInTheJob) {
  SuiteJobRun run;
  run.lead_step = -1;
  const std::unique_ptr<BisectJob> job = RunSuiteJob(run);
  const v1::JobStatus& status = job->status();
  ASSERT_TRUE(job->finished());
  EXPECT_EQ(status.status(), v1::OUTCOME_NO_REGRESSION) << "the lead's outcome";
  const v1::SuiteMetricResult* other = RowOf(status, "other");
  ASSERT_NE(other, nullptr);
  ASSERT_EQ(other->state(), v1::SUITE_METRIC_STATE_CULPRIT) << other->ShortDebugString();
  EXPECT_EQ(other->culprit().index(), 30);
}

TEST(SuiteSearchTest, WithNoWorkerLeftTheRangeGoesToAFollowUpAndTheLeadsAnswerStands) {
  SuiteJobRun run;
  run.workers = 1;
  bool left = false;
  run.before_each_call = [&](BisectJob& job) {
    if (job.status().state() != v1::JOB_STATE_SUITE_SEARCH || left) return;
    left = true;
    job.OnWorkerGone("w0", "its session closed", absl::FromUnixSeconds(1'800'000'000));
  };
  const std::unique_ptr<BisectJob> job = RunSuiteJob(run);
  ASSERT_TRUE(left) << "the job searched its suite";
  const v1::JobStatus& status = job->status();
  ASSERT_TRUE(job->finished());
  EXPECT_EQ(status.status(), v1::OUTCOME_CULPRIT_FOUND);
  EXPECT_EQ(status.culprit().index(), 10);
  const v1::SuiteMetricResult* other = RowOf(status, "other");
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->state(), v1::SUITE_METRIC_STATE_SEARCHING) << "for a follow-up";
  EXPECT_GT(other->last_good().index(), 10 - 1);
  EXPECT_GE(other->first_bad().index(), 30);
}

TEST(SuiteLedger, LearnsEachMetricOnceAndJudgesOnlyWithASuite) {
  JobFrame frame;
  ProbeRows rows;
  std::vector<v1::CommitRef> commits(3);
  SuiteLedger ledger(&frame, &rows, &commits);
  v1::TaskResult result;
  result.add_suite_metrics()->set_name("a");
  result.add_suite_metrics()->set_name("b");
  ledger.Learn(result);
  ledger.Judge();
  EXPECT_TRUE(ledger.rows().empty()) << "no suite, no rows";

  frame.spec.mutable_metric()->set_suite("auto");
  ledger.Learn(result);
  result.clear_suite_metrics();
  result.add_suite_metrics()->set_name("c");
  result.add_suite_metrics()->set_name("a");
  ledger.Learn(result);
  ledger.Judge();
  ASSERT_EQ(ledger.rows().size(), 3u);
  EXPECT_EQ(ledger.rows()[0].name(), "a");
  EXPECT_EQ(ledger.rows()[1].name(), "b");
  EXPECT_EQ(ledger.rows()[2].name(), "c");
}

TEST(ProjectOnLeadTest, ARunsSampleBecomesTheLeadsValue) {
  v1::TaskResult result;
  result.set_outcome(v1::TASK_OUTCOME_SUCCEEDED);
  result.set_metric_name("a");
  for (const v1::SuiteMetricInfo& info : {[] {
                                            v1::SuiteMetricInfo a;
                                            a.set_name("a");
                                            a.set_unit("ms");
                                            return a;
                                          }(),
                                          [] {
                                            v1::SuiteMetricInfo b;
                                            b.set_name("b");
                                            b.set_unit("GB/s");
                                            b.set_direction(v1::DIRECTION_HIGHER_IS_BETTER);
                                            return b;
                                          }()}) {
    *result.add_suite_metrics() = info;
  }
  for (double b : {10.0, -1.0, 12.0}) {  // The second run printed no `b`.
    v1::RunRecord* run = result.add_runs();
    run->set_has_value(true);
    run->set_value(1.0);
    result.add_samples(1.0);
    v1::SuiteValue* a = run->add_suite_values();
    a->set_name("a");
    a->set_value(1.0);
    if (b < 0) continue;
    v1::SuiteValue* value = run->add_suite_values();
    value->set_name("b");
    value->set_value(b);
  }
  v1::TaskResult same = result;
  ProjectOnLead("a", &same);
  EXPECT_EQ(same.SerializeAsString(), result.SerializeAsString()) << "already the lead's";

  ProjectOnLead("b", &result);
  EXPECT_EQ(result.outcome(), v1::TASK_OUTCOME_SUCCEEDED);
  EXPECT_EQ(result.metric_name(), "b");
  EXPECT_EQ(result.metric_unit(), "GB/s");
  EXPECT_EQ(result.metric_direction(), v1::DIRECTION_HIGHER_IS_BETTER);
  ASSERT_EQ(result.samples_size(), 2);
  EXPECT_DOUBLE_EQ(result.samples(0), 10.0);
  EXPECT_DOUBLE_EQ(result.samples(1), 12.0);
  EXPECT_FALSE(result.runs(1).has_value());
  EXPECT_DOUBLE_EQ(result.runs(2).value(), 12.0);

  ProjectOnLead("c", &result);
  EXPECT_EQ(result.outcome(), v1::TASK_OUTCOME_METRIC_MISSING);
  EXPECT_TRUE(absl::StrContains(result.message(), "no metric 'c' (the lead)")) << result.message();
}

}  // namespace
}  // namespace kbisect
