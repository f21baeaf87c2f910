// Copyright 2026 The kbisect Authors.
#include "triage/triage.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/triage/fixtures.h"
#include "triage/parse.h"

namespace kbisect {
namespace triage {
namespace {

using ::testing::HasSubstr;

Dataset Load(const std::string& name) {
  absl::StatusOr<Dataset> d = ParseDataset(testing::Fixture(name), InputFormat::kAuto, name);
  EXPECT_TRUE(d.ok()) << d.status();
  return d.ok() ? *d : Dataset();
}

TriageResult RunTriage(const Dataset& data, const std::string& platform, const std::string& kernel,
                       const std::string& date = "", const std::string& metric = "") {
  TriageRequest request;
  request.platform = platform;
  request.kernel = kernel;
  request.date = date;
  request.roles.primary = metric;
  absl::StatusOr<TriageResult> r = Triage(data, request);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : TriageResult();
}

TEST(TriageTest, SharedFixtureIsARealHelionOnlyRegression) {
  const Dataset data = Load("helion-dashboard-sample.json");
  for (const std::string date : {"", "2026-09-22", "2026-09-23"}) {
    TriageResult r = RunTriage(data, "b200_cute", "layer_norm", date);
    ASSERT_EQ(r.kernels.size(), 1u);
    const KernelTriage& k = r.kernels[0];
    EXPECT_EQ(k.diagnosis.cause, v1::CAUSE_REAL_REGRESSION) << date;
    EXPECT_GE(k.diagnosis.confidence, 0.8);
    EXPECT_EQ(k.evidence.shape, Shape::kStep);
    ASSERT_TRUE(k.last_good.has_value() && k.first_bad.has_value());
    EXPECT_EQ(k.last_good->date, "2026-09-21");
    EXPECT_EQ(k.last_good->sha, "416dfa1e");
    EXPECT_EQ(k.first_bad->date, "2026-09-22");
    EXPECT_EQ(k.first_bad->sha, "f76c409d");
    EXPECT_EQ(k.first_bad->index, 21);  // The 22nd nightly.
    EXPECT_NEAR(k.evidence.primary.after / k.evidence.primary.before, 0.82, 0.02);
    EXPECT_TRUE(k.IsRegression());
    EXPECT_EQ(k.direction, Direction::kHigherIsBetter);
    EXPECT_LE(k.evidence.p_value, 0.01);
    EXPECT_EQ(k.evidence.baselines_moved, Tri::kNo);
    EXPECT_EQ(k.evidence.baselines.size(), 2u);
    EXPECT_EQ(k.evidence.timer_agrees, Tri::kYes);
    ASSERT_TRUE(k.evidence.timer.has_value());
    EXPECT_GT(k.evidence.timer->relative_change, 0.15);  // Latency up.
    EXPECT_EQ(k.evidence.runner_changed, Tri::kUnknown);
    EXPECT_EQ(k.evidence.method_changed, Tri::kNo);  // compile_time_aggregate is constant.
    ASSERT_EQ(k.evidence.other_kernels.size(), 2u);
    for (const BreadthCheck& b : k.evidence.other_kernels) EXPECT_FALSE(b.moved) << b.label;
    ASSERT_EQ(k.evidence.other_platforms.size(), 1u);
    EXPECT_FALSE(k.evidence.other_platforms[0].moved);
    EXPECT_EQ(k.true_value.honest, "after");
  }
}

TEST(TriageTest, WholePlatformPutsTheMoveFirst) {
  TriageResult r = RunTriage(Load("helion-dashboard-sample.json"), "b200_cute", "");
  ASSERT_EQ(r.kernels.size(), 3u);
  EXPECT_EQ(r.kernels[0].kernel, "layer_norm");
  EXPECT_EQ(r.kernels[0].diagnosis.cause, v1::CAUSE_REAL_REGRESSION);
  for (size_t i = 1; i < r.kernels.size(); ++i) {
    EXPECT_EQ(r.kernels[i].diagnosis.cause, v1::CAUSE_NOISE) << r.kernels[i].kernel;
  }
}

TEST(TriageTest, FlatSeriesIsNoise) {
  TriageResult r =
      RunTriage(Load("helion-dashboard-sample.json"), "b200", "layer_norm", "2026-09-22");
  const KernelTriage& k = r.kernels[0];
  EXPECT_EQ(k.diagnosis.cause, v1::CAUSE_NOISE);
  EXPECT_EQ(k.evidence.shape, Shape::kNone);
  EXPECT_FALSE(k.first_bad.has_value());
  EXPECT_FALSE(k.IsRegression());
}

TEST(TriageTest, SharedWithBaselinesIsHardware) {
  TriageResult r = RunTriage(Load("hardware_shared.json"), "h100", "softmax");
  const KernelTriage& k = r.kernels[0];
  EXPECT_EQ(k.diagnosis.cause, v1::CAUSE_HARDWARE_ISSUE);
  EXPECT_EQ(k.evidence.baselines_moved, Tri::kYes);
  EXPECT_EQ(k.first_bad->date, "2026-09-18");
  EXPECT_EQ(k.true_value.honest, "before");
  EXPECT_THAT(k.true_value.note, HasSubstr("Relative to triton_speedup_geomean"));
  EXPECT_THAT(k.diagnosis.reasons[1], HasSubstr("shared with the baselines"));
}

TEST(TriageTest, OneTimerMovingAloneIsAMethodChange) {
  TriageResult r = RunTriage(Load("method_change.json"), "b200", "matmul");
  const KernelTriage& k = r.kernels[0];
  EXPECT_EQ(k.diagnosis.cause, v1::CAUSE_BENCHMARK_METHOD_CHANGE);
  EXPECT_EQ(k.evidence.timer_agrees, Tri::kNo);
  EXPECT_EQ(k.evidence.baselines_moved, Tri::kNo);
  EXPECT_EQ(k.first_bad->date, "2026-09-16");
  EXPECT_EQ(k.true_value.honest, "before");
  EXPECT_NEAR(k.true_value.before, 1.25, 0.02);
}

TEST(TriageTest, ASpikeThatRevertsIsNoise) {
  const Dataset data = Load("noise_spike.json");
  for (const std::string date : {"2026-09-20", ""}) {
    TriageResult r = RunTriage(data, "b200", "softmax", date);
    const KernelTriage& k = r.kernels[0];
    EXPECT_EQ(k.diagnosis.cause, v1::CAUSE_NOISE) << date;
    EXPECT_EQ(k.evidence.shape, Shape::kSpike);
    EXPECT_TRUE(k.analysis.change_points.empty());
    ASSERT_TRUE(k.first_bad.has_value());
    EXPECT_EQ(k.first_bad->date, "2026-09-20");
    ASSERT_TRUE(k.evidence.reverted_at.has_value());
    EXPECT_EQ(k.evidence.reverted_at->date, "2026-09-21");
    EXPECT_NEAR(k.evidence.primary.relative_change, -0.15, 0.02);
  }
}

TEST(TriageTest, GradualDriftBlamesNoSingleCommit) {
  TriageResult r = RunTriage(Load("drift.json"), "b200", "rms_norm");
  const KernelTriage& k = r.kernels[0];
  EXPECT_EQ(k.evidence.shape, Shape::kDrift);
  EXPECT_LE(k.diagnosis.confidence, 0.45);
  EXPECT_THAT(absl::StrJoin(k.diagnosis.reasons, " "), HasSubstr("gradual"));
}

TEST(TriageTest, SchemaDriftStillTriages) {
  TriageResult r = RunTriage(Load("schema_drift.json"), "b200", "layer_norm");
  const KernelTriage& k = r.kernels[0];
  EXPECT_EQ(k.diagnosis.cause, v1::CAUSE_REAL_REGRESSION);
  EXPECT_EQ(k.first_bad->date, "2026-09-21");
  // Only triton is a baseline before entry 12; both are after.
  EXPECT_EQ(k.evidence.baselines_moved, Tri::kNo);
  EXPECT_FALSE(r.notes.empty());
}

TEST(TriageTest, PretunedCudagraphFlipIsAMethodChange) {
  TriageResult r = RunTriage(Load("pretuned.json"), "b200", "");
  const KernelTriage& k = r.kernels[0];
  EXPECT_EQ(k.primary_metric, "geomean");
  EXPECT_EQ(k.diagnosis.cause, v1::CAUSE_BENCHMARK_METHOD_CHANGE);
  EXPECT_EQ(k.evidence.method_changed, Tri::kYes);
  EXPECT_EQ(k.first_bad->date, "2026-09-17");
  ASSERT_EQ(r.roles.baselines.size(), 1u);
  EXPECT_EQ(r.roles.baselines[0], "baselines.triton.geomean");
}

TEST(TriageTest, GenericCsvRunnerSwapIsHardware) {
  TriageResult r = RunTriage(Load("generic_runner.csv"), "a100", "gemm", "", "tflops");
  const KernelTriage& k = r.kernels[0];
  EXPECT_EQ(k.diagnosis.cause, v1::CAUSE_HARDWARE_ISSUE);
  EXPECT_EQ(k.evidence.runner_changed, Tri::kYes);
  ASSERT_EQ(k.evidence.identity.size(), 1u);
  EXPECT_EQ(k.evidence.identity[0].before, "gpu-node-1");
  EXPECT_EQ(k.evidence.identity[0].after, "gpu-node-2");
  EXPECT_EQ(k.first_bad->date, "2026-09-16");
}

TEST(TriageTest, GenericJsonLinesLowerIsBetter) {
  TriageResult r = RunTriage(Load("generic_real.jsonl"), "", "", "", "latency_ms");
  const KernelTriage& k = r.kernels[0];
  EXPECT_EQ(k.direction, Direction::kLowerIsBetter);
  EXPECT_EQ(k.diagnosis.cause, v1::CAUSE_REAL_REGRESSION);
  EXPECT_TRUE(k.IsRegression());
  EXPECT_EQ(k.evidence.baselines_moved, Tri::kUnknown);
  EXPECT_LT(k.diagnosis.confidence, 0.8);  // Nothing to cross-check with.
  EXPECT_EQ(k.first_bad->date, "2026-09-11");
  EXPECT_EQ(k.first_bad->full_sha.size(), 40u);
}

TEST(TriageTest, ExcursionThatRevertsIsNoise) {
  std::string csv = "date,sha,speedup\n";
  for (int i = 0; i < 30; ++i) {
    const double v = (i >= 12 && i < 17 ? 0.85 : 1.0) * (1 + 0.003 * ((i * 7) % 5 - 2));
    csv += absl::StrCat("2026-09-", i < 9 ? "0" : "", i + 1, ",c", i, ",", v, "\n");
  }
  absl::StatusOr<Dataset> d = ParseCsv(csv, "x.csv");
  ASSERT_TRUE(d.ok()) << d.status();
  TriageResult r = RunTriage(*d, "", "", "2026-09-13");
  const KernelTriage& k = r.kernels[0];
  EXPECT_EQ(k.evidence.shape, Shape::kExcursion);
  EXPECT_EQ(k.diagnosis.cause, v1::CAUSE_NOISE);
  ASSERT_TRUE(k.evidence.reverted_at.has_value());
  EXPECT_EQ(k.evidence.reverted_at->date, "2026-09-18");
  // Without a date the latest change point is the recovery: the excursion is explained.
  r = RunTriage(*d, "", "");
  EXPECT_EQ(r.kernels[0].evidence.shape, Shape::kExcursion);
}

TEST(TriageTest, ErrorsNameWhatIsMissing) {
  const Dataset data = Load("helion-dashboard-sample.json");
  TriageRequest request;
  absl::StatusOr<TriageResult> r = Triage(data, request);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("--platform is required"));
  request.platform = "mi350";
  r = Triage(data, request);
  EXPECT_THAT(r.status().message(), HasSubstr("platforms: b200, b200_cute"));
  request.platform = "b200";
  request.kernel = "matmul";
  r = Triage(data, request);
  EXPECT_THAT(r.status().message(), HasSubstr("kernels: layer_norm, rms_norm, softmax"));
  request.kernel = "softmax";
  request.roles.primary = "tflops";
  r = Triage(data, request);
  EXPECT_THAT(r.status().message(), HasSubstr("helion_latency_avg_ms"));
  request.roles.primary = "";
  request.date = "22/09/2026";
  r = Triage(data, request);
  EXPECT_THAT(r.status().message(), HasSubstr("--date"));
}

TEST(ClassifyTest, Rules) {
  Evidence e;
  EXPECT_EQ(Classify(e).cause, v1::CAUSE_NOISE);
  e.shape = Shape::kStep;
  e.primary.relative_change = -0.2;
  e.p_value = 0.001;
  e.persistence = 1;
  e.nightlies_after = 10;
  e.baselines_moved = Tri::kNo;
  e.timer_agrees = Tri::kYes;
  e.timer = MetricMove();
  Diagnosis v = Classify(e);
  EXPECT_EQ(v.cause, v1::CAUSE_REAL_REGRESSION);
  EXPECT_NEAR(v.confidence, 0.9, 1e-9);
  e.timer_agrees = Tri::kNo;
  EXPECT_EQ(Classify(e).cause, v1::CAUSE_BENCHMARK_METHOD_CHANGE);
  e.baselines_moved = Tri::kYes;
  EXPECT_EQ(Classify(e).cause, v1::CAUSE_HARDWARE_ISSUE);
  e.harness_only_commit = Tri::kYes;
  EXPECT_EQ(Classify(e).cause, v1::CAUSE_BENCHMARK_METHOD_CHANGE);
  e.method_changed = Tri::kYes;
  e.method.push_back({"cudagraph", "true", "false", true});
  EXPECT_EQ(Classify(e).cause, v1::CAUSE_BENCHMARK_METHOD_CHANGE);
  e.runner_changed = Tri::kYes;
  e.identity.push_back({"runner", "a", "b", true});
  v = Classify(e);
  EXPECT_EQ(v.cause, v1::CAUSE_HARDWARE_ISSUE);
  EXPECT_GE(v.confidence, 0.9);
  e.shape = Shape::kExcursion;
  e.runner_changed = Tri::kNo;
  EXPECT_EQ(Classify(e).cause, v1::CAUSE_NOISE);
  e.shape = Shape::kSpike;
  EXPECT_EQ(Classify(e).cause, v1::CAUSE_NOISE);
  EXPECT_LT(Classify(e).confidence, 0.5);  // No revert seen yet.
}

}  // namespace
}  // namespace triage
}  // namespace kbisect
