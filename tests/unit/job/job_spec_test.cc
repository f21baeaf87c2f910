// Copyright 2026 The kbisect Authors.
#include "common/spec/job_spec.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using ::testing::HasSubstr;

v1::JobSpec Minimal() {
  v1::JobSpec spec;
  spec.set_repository("/repo");
  spec.set_good("v1");
  spec.add_bench_command("./bench.sh");
  return spec;
}

TEST(NormalizeSpecTest, FillsTheDefaultsAndKeepsWhatIsSet) {
  v1::JobSpec spec = Minimal();
  NormalizeSpec(&spec);
  EXPECT_EQ(spec.runs_per_commit(), kDefaultRunsPerCommit);
  EXPECT_EQ(spec.max_runs(), kDefaultConfidenceMaxRuns) << "the confidence stop's room";
  EXPECT_DOUBLE_EQ(spec.threshold_fraction(), kDefaultThresholdFraction);
  EXPECT_EQ(spec.history(), v1::HISTORY_MODE_FIRST_PARENT);

  v1::JobSpec pass_fail = Minimal();
  pass_fail.mutable_metric()->set_kind(v1::METRIC_KIND_EXIT_CODE);
  NormalizeSpec(&pass_fail);
  EXPECT_EQ(pass_fail.runs_per_commit(), 1);

  v1::JobSpec many = Minimal();
  many.set_runs_per_commit(80);
  many.set_threshold_fraction(0.5);
  many.set_history(v1::HISTORY_MODE_ALL_COMMITS);
  NormalizeSpec(&many);
  EXPECT_EQ(many.runs_per_commit(), 80);
  EXPECT_EQ(many.max_runs(), 80);  // Never below the runs per commit.
  EXPECT_DOUBLE_EQ(many.threshold_fraction(), 0.5);
  EXPECT_EQ(many.history(), v1::HISTORY_MODE_ALL_COMMITS);
}

// Only a count NormalizeSpec filled in lets a benchmark that repeats exactly run once a probe
// (decision 229). A count the spec sets, the default's 3 included, is a floor; so is the count
// of a spec normalized again (a follow-up's copy of its parent's), which stays defaulted.
TEST(NormalizeSpecTest, MarksTheRunsItFillsInAsTheDefault) {
  v1::JobSpec unset = Minimal();
  NormalizeSpec(&unset);
  EXPECT_TRUE(unset.runs_defaulted());
  EXPECT_TRUE(MayRunOncePerProbe(unset));
  NormalizeSpec(&unset);
  EXPECT_TRUE(unset.runs_defaulted()) << "normalized twice";

  v1::JobSpec given = Minimal();
  given.set_runs_per_commit(kDefaultRunsPerCommit);
  NormalizeSpec(&given);
  EXPECT_FALSE(given.runs_defaulted());
  EXPECT_FALSE(MayRunOncePerProbe(given)) << "a client that sets the count, as --runs 3 does";

  v1::JobSpec suite = Minimal();
  suite.mutable_metric()->set_suite("auto");
  NormalizeSpec(&suite);
  EXPECT_FALSE(MayRunOncePerProbe(suite));
}

TEST(NormalizeSpecTest, AFlakyTestGetsMoreRunsAndAConfidence) {
  v1::JobSpec flaky = Minimal();
  flaky.mutable_metric()->set_kind(v1::METRIC_KIND_EXIT_CODE);
  flaky.set_flaky(true);
  NormalizeSpec(&flaky);
  EXPECT_EQ(flaky.runs_per_commit(), kDefaultFlakyRuns);
  EXPECT_EQ(flaky.max_runs(), kDefaultFlakyMaxRuns);
  EXPECT_DOUBLE_EQ(flaky.confidence(), kDefaultFlakyConfidence);

  v1::JobSpec set = flaky;
  set.set_runs_per_commit(8);
  set.set_max_runs(16);
  set.set_confidence(0.9);
  NormalizeSpec(&set);
  EXPECT_EQ(set.runs_per_commit(), 8);
  EXPECT_EQ(set.max_runs(), 16);
  EXPECT_DOUBLE_EQ(set.confidence(), 0.9);
}

TEST(NormalizeSpecTest, AConfidenceWithAMetricGetsRoomToReachIt) {
  v1::JobSpec spec = Minimal();
  spec.set_confidence(0.99);
  NormalizeSpec(&spec);
  EXPECT_EQ(spec.max_runs(), kDefaultConfidenceMaxRuns);
  EXPECT_DOUBLE_EQ(spec.confidence(), 0.99);

  v1::JobSpec unset = Minimal();
  NormalizeSpec(&unset);
  EXPECT_DOUBLE_EQ(unset.confidence(), kDefaultMetricConfidence) << "on by default with a metric";
  EXPECT_EQ(unset.max_runs(), kDefaultConfidenceMaxRuns);

  v1::JobSpec off = Minimal();
  off.set_confidence_off(true);
  NormalizeSpec(&off);
  EXPECT_EQ(off.confidence(), 0) << "--confidence off";
  EXPECT_EQ(off.max_runs(), kDefaultMaxRuns);

  v1::JobSpec pass_fail = Minimal();
  pass_fail.mutable_metric()->set_kind(v1::METRIC_KIND_EXIT_CODE);
  NormalizeSpec(&pass_fail);
  EXPECT_EQ(pass_fail.confidence(), 0) << "a plain pass/fail result is certain";

  v1::JobSpec set = Minimal();
  set.set_confidence(0.95);
  set.set_max_runs(20);
  NormalizeSpec(&set);
  EXPECT_EQ(set.max_runs(), 20);
}

TEST(ValidateSpecTest, AConfidenceNeedsAMetricOrAFlakyTest) {
  v1::JobSpec spec = Minimal();
  spec.set_confidence(0.99);
  EXPECT_TRUE(ValidateSpec(spec).ok());
  spec.mutable_metric()->set_kind(v1::METRIC_KIND_EXIT_CODE);
  EXPECT_THAT(ValidateSpec(spec).message(), HasSubstr("--flaky"));
  spec.set_flaky(true);
  EXPECT_TRUE(ValidateSpec(spec).ok());
}

TEST(ValidateSpecTest, ConfidenceOffIsNeitherAProbabilityNorForAFlakyTest) {
  v1::JobSpec spec = Minimal();
  spec.set_confidence_off(true);
  EXPECT_TRUE(ValidateSpec(spec).ok());
  spec.set_confidence(0.9);
  EXPECT_THAT(ValidateSpec(spec).message(), HasSubstr("not both"));
  spec.set_confidence(0);
  spec.mutable_metric()->set_kind(v1::METRIC_KIND_EXIT_CODE);
  spec.set_flaky(true);
  EXPECT_THAT(ValidateSpec(spec).message(), HasSubstr("not for --flaky"));
}

TEST(ValidateSpecTest, FlakyNeedsExitCodeAndAConfidenceBelowOne) {
  v1::JobSpec spec = Minimal();
  spec.set_flaky(true);
  EXPECT_THAT(ValidateSpec(spec).message(), HasSubstr("--exit-code"));
  spec.mutable_metric()->set_kind(v1::METRIC_KIND_EXIT_CODE);
  EXPECT_TRUE(ValidateSpec(spec).ok());
  spec.set_confidence(1.0);
  EXPECT_THAT(ValidateSpec(spec).message(), HasSubstr("confidence"));
}

TEST(ValidateSpecTest, SaysWhatIsMissing) {
  EXPECT_TRUE(ValidateSpec(Minimal()).ok());
  v1::JobSpec no_repo = Minimal();
  no_repo.clear_repository();
  EXPECT_THAT(ValidateSpec(no_repo).message(), HasSubstr("--repo"));
  v1::JobSpec no_bench = Minimal();
  no_bench.clear_bench_command();
  EXPECT_THAT(ValidateSpec(no_bench).message(), HasSubstr("benchmark command"));
  v1::JobSpec threshold = Minimal();
  threshold.set_threshold_fraction(1.5);
  EXPECT_EQ(ValidateSpec(threshold).code(), absl::StatusCode::kInvalidArgument);
  // A pin submitted through the API without its repository.
  v1::JobSpec pin = Minimal();
  pin.add_descend_pins()->set_file("cmake/llvm-hash.txt");
  EXPECT_THAT(ValidateSpec(pin).message(), HasSubstr("--descend-pin needs FILE=REPOSITORY"));
  pin.mutable_descend_pins(0)->set_repository("https://example.com/llvm.git");
  EXPECT_TRUE(ValidateSpec(pin).ok());
}

TEST(ValidateSpecTest, ABadMetricFailsAtSubmit) {
  v1::JobSpec two_groups = Minimal();
  two_groups.mutable_metric()->set_kind(v1::METRIC_KIND_REGEX);
  two_groups.mutable_metric()->set_pattern("(a)(b)");
  const absl::Status status = ValidateSpec(two_groups);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("metric"));

  v1::JobSpec unbalanced = Minimal();
  unbalanced.mutable_metric()->set_kind(v1::METRIC_KIND_REGEX);
  unbalanced.mutable_metric()->set_pattern("latency: ([0-9.]+");
  EXPECT_EQ(ValidateSpec(unbalanced).code(), absl::StatusCode::kInvalidArgument);

  v1::JobSpec path = Minimal();
  path.mutable_metric()->set_kind(v1::METRIC_KIND_JSON_PATH);
  path.mutable_metric()->set_pattern("results..latency");
  EXPECT_EQ(ValidateSpec(path).code(), absl::StatusCode::kInvalidArgument);

  v1::JobSpec good = Minimal();
  good.mutable_metric()->set_kind(v1::METRIC_KIND_REGEX);
  good.mutable_metric()->set_pattern("latency: ([0-9.]+)");
  EXPECT_TRUE(ValidateSpec(good).ok());
}

// Every message names a flag that exists (`--metric`, not the `--metric-regex` it once named) and
// quotes the user's pattern as given (not with the "(?m)" the extractor puts before it).
TEST(ValidateSpecTest, MessagesNameRealFlags) {
  v1::JobSpec open = Minimal();
  open.mutable_metric()->set_kind(v1::METRIC_KIND_REGEX);
  open.mutable_metric()->set_pattern("(");
  const std::string message(ValidateSpec(open).message());
  EXPECT_THAT(message, HasSubstr("invalid metric regex '(': missing ): ("));
  EXPECT_THAT(message, HasSubstr("--metric an RE2 regex"));
  EXPECT_THAT(message, HasSubstr("--metric-json a dotted path"));
  EXPECT_THAT(message, ::testing::Not(HasSubstr("(?m)")));
  EXPECT_THAT(message, ::testing::Not(HasSubstr("--metric-regex")));

  v1::JobSpec threshold = Minimal();
  threshold.set_threshold_fraction(1.5);
  EXPECT_THAT(ValidateSpec(threshold).message(), HasSubstr("--threshold"));
  v1::JobSpec runs = Minimal();
  runs.set_runs_per_commit(5000);
  EXPECT_THAT(ValidateSpec(runs).message(), HasSubstr("--runs"));
  v1::JobSpec confidence = Minimal();
  confidence.set_confidence(1.5);
  EXPECT_THAT(ValidateSpec(confidence).message(), HasSubstr("--confidence"));
  v1::JobSpec empty = Minimal();
  empty.mutable_metric()->set_kind(v1::METRIC_KIND_JSON_PATH);
  EXPECT_THAT(ValidateSpec(empty).message(), HasSubstr("--metric-json is empty"));
}

TEST(ValidateSpecTest, ASuiteStandsAloneAndParses) {
  v1::JobSpec spec;
  spec.mutable_metric()->set_kind(v1::METRIC_KIND_AUTO);
  spec.mutable_metric()->set_suite("json:results.*.latency_ms");
  spec.mutable_metric()->set_lead("softmax");
  EXPECT_TRUE(ValidateJobSettings(spec).ok());
  spec.mutable_metric()->set_suite("regex:([0-9.]+) ms");
  EXPECT_THAT(std::string(ValidateJobSettings(spec).message()), HasSubstr("--suite"));
  spec.mutable_metric()->set_suite("auto");
  spec.mutable_metric()->set_kind(v1::METRIC_KIND_REGEX);
  spec.mutable_metric()->set_pattern("([0-9.]+) ms");
  EXPECT_THAT(std::string(ValidateJobSettings(spec).message()), HasSubstr("give it alone"));
  spec.mutable_metric()->clear_suite();
  EXPECT_THAT(std::string(ValidateJobSettings(spec).message()), HasSubstr("add --suite"));
}

}  // namespace
}  // namespace kbisect
