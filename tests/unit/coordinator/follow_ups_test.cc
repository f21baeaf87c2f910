// Copyright 2026 The kbisect Authors.
#include "coordinator/follow_ups.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using ::testing::HasSubstr;

v1::JobStatus Found(bool merge, bool multiple_steps) {
  v1::JobStatus status;
  status.set_status(v1::OUTCOME_CULPRIT_FOUND);
  status.set_good_sha("good000");
  status.set_bad_sha("bad0000");
  status.mutable_last_good()->set_sha("lastgood");
  status.mutable_culprit()->set_sha("culprit");
  status.mutable_culprit()->set_is_merge(merge);
  status.set_multiple_steps(multiple_steps);
  status.mutable_spec()->set_descend_merges(true);
  status.mutable_spec()->set_all_culprits(true);
  status.mutable_baseline()->mutable_good()->set_median(1.0);
  status.mutable_baseline()->mutable_bad()->set_median(2.0);
  return status;
}

TEST(FollowUpsTest, KindsAreNamedInRequestIdsAsBeforeAndPrefixTheirLines) {
  // The request ids of follow-ups started before decision 184 named the kind the same way: a
  // restarted coordinator finds them.
  EXPECT_EQ(FollowUpRequestId("job-1", v1::FOLLOW_UP_KIND_MERGED_BRANCH), "job-1/merged_branch");
  EXPECT_EQ(FollowUpRequestId("job-1", v1::FOLLOW_UP_KIND_STEPS_BEFORE), "job-1/steps_before");
  EXPECT_EQ(FollowUpRequestId("job-1", v1::FOLLOW_UP_KIND_STEPS_AFTER), "job-1/steps_after");
  EXPECT_EQ(FollowUpRequestId("job-1", v1::FOLLOW_UP_KIND_DEPENDENCY), "job-1/dependency");
  EXPECT_STREQ(FollowUpEventPrefix(v1::FOLLOW_UP_KIND_MERGED_BRANCH), "[merged branch] ");
  EXPECT_STREQ(FollowUpEventPrefix(v1::FOLLOW_UP_KIND_UNSPECIFIED), "");
}

TEST(FollowUpsTest, PlansTheMergedBranchAndBothSidesOfAPartialStep) {
  const v1::JobStatus status = Found(/*merge=*/true, /*multiple_steps=*/true);
  ASSERT_TRUE(WantsMergedBranch(status));
  const std::vector<PlannedFollowUp> plan =
      PlanFollowUps(status, std::make_pair(std::string("base"), std::string("tip")));
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].kind, v1::FOLLOW_UP_KIND_MERGED_BRANCH);
  EXPECT_EQ(plan[0].good, "base");
  EXPECT_EQ(plan[1].kind, v1::FOLLOW_UP_KIND_STEPS_BEFORE);
  EXPECT_EQ(plan[1].bad, "lastgood");
  EXPECT_EQ(plan[2].kind, v1::FOLLOW_UP_KIND_STEPS_AFTER);
  EXPECT_EQ(plan[2].good, "culprit");
  // An unresolved merged branch plans only the steps.
  EXPECT_EQ(PlanFollowUps(status, std::nullopt).size(), 2u);
  const v1::JobSpec spec = FollowUpSpec(status.spec(), "job-1", plan[1]);
  EXPECT_EQ(spec.parent_job_id(), "job-1");
  EXPECT_EQ(spec.follow_up(), v1::FOLLOW_UP_KIND_STEPS_BEFORE);
  EXPECT_EQ(spec.follow_up_depth(), 1);
  EXPECT_EQ(FollowUpRequestId("job-1", plan[1].kind), "job-1/steps_before");
}

TEST(FollowUpsTest, NothingWithoutACulpritOrPastTheDepthLimit) {
  v1::JobStatus none = Found(true, true);
  none.set_status(v1::OUTCOME_NO_REGRESSION);
  EXPECT_TRUE(PlanFollowUps(none, std::make_pair(std::string("b"), std::string("t"))).empty());
  v1::JobStatus deep = Found(true, true);
  deep.mutable_spec()->set_follow_up_depth(kMaxFollowUpDepth);
  EXPECT_FALSE(WantsMergedBranch(deep));
  EXPECT_TRUE(PlanFollowUps(deep, std::make_pair(std::string("b"), std::string("t"))).empty());
}

TEST(FollowUpsTest, FoldRanksTheStepsAndNamesTheMergedCulprit) {
  v1::JobStatus parent = Found(true, true);
  parent.set_bench_runs(10);
  v1::Culprit* own = parent.add_culprits();
  own->set_before(1.0);
  own->set_after(1.3);
  v1::JobStatus before;
  before.mutable_spec()->set_follow_up(v1::FOLLOW_UP_KIND_STEPS_BEFORE);
  before.set_status(v1::OUTCOME_CULPRIT_FOUND);
  before.set_bench_runs(7);
  v1::Culprit* bigger = before.add_culprits();
  bigger->set_before(1.3);
  bigger->set_after(2.0);
  v1::JobStatus merged;
  merged.mutable_spec()->set_follow_up(v1::FOLLOW_UP_KIND_MERGED_BRANCH);
  merged.set_status(v1::OUTCOME_CULPRIT_FOUND);
  merged.mutable_culprit()->set_sha("inside");
  v1::JobStatus after;
  after.mutable_spec()->set_follow_up(v1::FOLLOW_UP_KIND_STEPS_AFTER);
  after.set_status(v1::OUTCOME_NO_REGRESSION);
  after.set_error("GOOD and BAD differ by 0.1%");
  FoldFollowUpResults({{"c1", &before}, {"c2", &merged}, {"c3", &after}}, &parent);
  EXPECT_EQ(parent.bench_runs(), 17);
  EXPECT_EQ(parent.merged_culprit().sha(), "inside");
  ASSERT_EQ(parent.culprits_size(), 2);
  EXPECT_DOUBLE_EQ(parent.culprits(0).after(), 2.0);  // The larger step first.
  EXPECT_NEAR(parent.culprits(0).share_of_total(), 0.7, 1e-9);
  ASSERT_EQ(parent.warnings_size(), 1);
  EXPECT_THAT(parent.warnings(0), HasSubstr("no further step"));
  EXPECT_THAT(parent.warnings(0), HasSubstr("job c3"));
}

constexpr char kOldDep[] = "1111111111111111111111111111111111111111";
constexpr char kNewDep[] = "2222222222222222222222222222222222222222";

// A found culprit that bumps third_party/dep (kOldDep -> kNewDep, 4 commits) and, with the
// other arguments, more submodules: one added, one moved back, one its repository cannot read.
v1::JobStatus Bumped() {
  v1::JobStatus status = Found(/*merge=*/false, /*multiple_steps=*/false);
  status.mutable_spec()->set_repository("/src/super");
  status.mutable_spec()->set_descend_submodules(true);
  v1::SubmoduleBump* bump = status.add_submodule_bumps();
  bump->set_path("third_party/dep");
  bump->set_url("file:///srv/dep.git");
  bump->set_old_sha(kOldDep);
  bump->set_new_sha(kNewDep);
  bump->set_commit_count(4);
  v1::SubmoduleBump* added = status.add_submodule_bumps();
  added->set_path("third_party/added");
  added->set_url("file:///srv/added.git");
  added->set_new_sha(kNewDep);
  v1::SubmoduleBump* back = status.add_submodule_bumps();
  back->set_path("third_party/back");
  back->set_url("file:///srv/back.git");
  back->set_old_sha(kNewDep);
  back->set_new_sha(kOldDep);
  back->set_backwards(true);
  back->set_commit_count(2);
  v1::SubmoduleBump* unread = status.add_submodule_bumps();
  unread->set_path("third_party/unread");
  unread->set_old_sha(kOldDep);
  unread->set_new_sha(kNewDep);
  unread->set_error("cannot fetch");
  return status;
}

TEST(FollowUpsTest, ASubmoduleBumpIsDescendedIntoWithTheSuperprojectAtTheCulprit) {
  const v1::JobStatus status = Bumped();
  std::vector<std::string> warnings;
  const std::vector<PlannedFollowUp> plan = PlanFollowUps(status, std::nullopt, {}, &warnings);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].kind, v1::FOLLOW_UP_KIND_DEPENDENCY);
  EXPECT_EQ(plan[0].good, kOldDep);
  EXPECT_EQ(plan[0].bad, kNewDep);
  EXPECT_EQ(plan[0].repository, "file:///srv/dep.git");
  EXPECT_EQ(plan[0].dependency.kind(), v1::DEPENDENCY_KIND_SUBMODULE);
  EXPECT_EQ(plan[0].dependency.superproject(), "/src/super");
  EXPECT_EQ(plan[0].dependency.superproject_sha(), "culprit");
  EXPECT_EQ(plan[0].dependency.path(), "third_party/dep");
  // The other three say why they are not descended into.
  ASSERT_EQ(warnings.size(), 3u);
  EXPECT_THAT(warnings[0], HasSubstr("'third_party/added': the culprit added it"));
  EXPECT_THAT(warnings[1], HasSubstr("'third_party/back': the culprit moved it back"));
  EXPECT_THAT(warnings[2], HasSubstr("'third_party/unread': cannot fetch"));

  v1::JobStatus parent = status;
  parent.mutable_spec()->add_marks()->set_commit("abcd");
  const v1::JobSpec spec = FollowUpSpec(parent.spec(), "job-1", plan[0]);
  EXPECT_EQ(spec.repository(), "file:///srv/dep.git");
  EXPECT_EQ(spec.good(), kOldDep);
  EXPECT_EQ(spec.follow_up(), v1::FOLLOW_UP_KIND_DEPENDENCY);
  EXPECT_EQ(spec.dependency().path(), "third_party/dep");
  // It descends into its own submodules in turn; the superproject's marks are not its own.
  EXPECT_TRUE(spec.descend_submodules());
  EXPECT_FALSE(spec.dependency().has_outer());
  EXPECT_EQ(spec.marks_size(), 0);
  EXPECT_EQ(FollowUpRequestId("job-1", plan[0]), "job-1/dependency:third_party/dep");

  // Without the option nothing is planned.
  v1::JobStatus off = status;
  off.mutable_spec()->set_descend_submodules(false);
  EXPECT_TRUE(PlanFollowUps(off, std::nullopt).empty());

  // From the dependency follow-up, a bump of its own submodule nests: the dependency is the
  // new descent's superproject, checked out as its own descent says (outer).
  v1::JobStatus child = status;
  *child.mutable_spec() = spec;
  child.mutable_culprit()->set_sha("dep-culprit");
  child.mutable_submodule_bumps(0)->set_path("nested");
  child.mutable_submodule_bumps(0)->set_url("file:///srv/leaf.git");
  const std::vector<PlannedFollowUp> nested = PlanFollowUps(child, std::nullopt);
  ASSERT_EQ(nested.size(), 1u);
  EXPECT_EQ(nested[0].repository, "file:///srv/leaf.git");
  EXPECT_EQ(nested[0].dependency.superproject(), "file:///srv/dep.git");
  EXPECT_EQ(nested[0].dependency.superproject_sha(), "dep-culprit");
  EXPECT_EQ(nested[0].dependency.path(), "nested");
  ASSERT_TRUE(nested[0].dependency.has_outer());
  EXPECT_EQ(nested[0].dependency.outer().superproject(), "/src/super");
  EXPECT_EQ(nested[0].dependency.outer().path(), "third_party/dep");
  // Pins are the top superproject's: a dependency follow-up reads none.
  v1::DependencyPin pin;
  pin.set_file("pins/x.txt");
  pin.set_repository("/srv/x.git");
  EXPECT_EQ(PlanFollowUps(child, std::nullopt, {PinMove{pin, kOldDep, kNewDep}}).size(), 1u);
}

TEST(FollowUpsTest, APinFileReadsItsFirstFullCommitId) {
  EXPECT_EQ(PinnedCommit(absl::StrCat("# llvm\n  ", kNewDep, " \n")), kNewDep);
  EXPECT_EQ(PinnedCommit("ABCDEF0123ABCDEF0123ABCDEF0123ABCDEF0123\r\n"),
            "abcdef0123abcdef0123abcdef0123abcdef0123");
  EXPECT_EQ(PinnedCommit("v2.1.0\nabc123\n"), std::nullopt);  // No full commit id.
  EXPECT_EQ(PinnedCommit(""), std::nullopt);
}

TEST(FollowUpsTest, AChangedPinIsDescendedIntoFromItsRepository) {
  v1::JobStatus status = Found(/*merge=*/false, /*multiple_steps=*/false);
  status.mutable_spec()->set_repository("/src/triton");
  v1::DependencyPin* pin = status.mutable_spec()->add_descend_pins();
  pin->set_file("cmake/llvm-hash.txt");
  pin->set_repository("https://example.com/llvm.git");
  ASSERT_TRUE(WantsPinFiles(status));
  PinMove moved{*pin, kOldDep, kNewDep};
  PinMove same{*pin, kOldDep, kOldDep};
  PinMove unreadable{*pin, "", kNewDep};
  std::vector<std::string> warnings;
  const std::vector<PlannedFollowUp> plan =
      PlanFollowUps(status, std::nullopt, {moved, same, unreadable}, &warnings);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].kind, v1::FOLLOW_UP_KIND_DEPENDENCY);
  EXPECT_EQ(plan[0].repository, "https://example.com/llvm.git");
  EXPECT_EQ(plan[0].good, kOldDep);
  EXPECT_EQ(plan[0].bad, kNewDep);
  EXPECT_EQ(plan[0].dependency.kind(), v1::DEPENDENCY_KIND_PIN_FILE);
  EXPECT_EQ(plan[0].dependency.path(), "cmake/llvm-hash.txt");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("no full commit id (40 hex digits) before the culprit"));
  // A dependency follow-up reads no pins of its own.
  status.mutable_spec()->mutable_dependency()->set_path("cmake/llvm-hash.txt");
  EXPECT_FALSE(WantsPinFiles(status));
}

TEST(FollowUpsTest, FoldNamesTheDependencysCulprit) {
  v1::JobStatus parent = Found(/*merge=*/false, /*multiple_steps=*/false);
  v1::JobStatus found;
  found.mutable_spec()->set_follow_up(v1::FOLLOW_UP_KIND_DEPENDENCY);
  found.mutable_spec()->set_repository("file:///srv/dep.git");
  found.mutable_spec()->mutable_dependency()->set_kind(v1::DEPENDENCY_KIND_SUBMODULE);
  found.mutable_spec()->mutable_dependency()->set_path("third_party/dep");
  found.set_status(v1::OUTCOME_CULPRIT_FOUND);
  found.set_good_sha(kOldDep);
  found.set_bad_sha(kNewDep);
  found.mutable_culprit()->set_sha("inside-dep");
  found.add_culprits()->set_after(5.0);  // The dependency's steps are not the parent's.
  v1::JobStatus none = found;
  none.mutable_spec()->mutable_dependency()->set_path("third_party/other");
  none.set_status(v1::OUTCOME_NO_REGRESSION);
  none.set_error("GOOD and BAD differ by 0.1%");
  FoldFollowUpResults({{"d1", &found}, {"d2", &none}}, &parent);
  ASSERT_EQ(parent.dependency_culprits_size(), 1);
  const v1::DependencyCulprit& culprit = parent.dependency_culprits(0);
  EXPECT_EQ(culprit.path(), "third_party/dep");
  EXPECT_EQ(culprit.kind(), v1::DEPENDENCY_KIND_SUBMODULE);
  EXPECT_EQ(culprit.repository(), "file:///srv/dep.git");
  EXPECT_EQ(culprit.old_sha(), kOldDep);
  EXPECT_EQ(culprit.new_sha(), kNewDep);
  EXPECT_EQ(culprit.commit().sha(), "inside-dep");
  EXPECT_EQ(culprit.job_id(), "d1");
  EXPECT_EQ(parent.culprits_size(), 0);
  ASSERT_EQ(parent.warnings_size(), 1);
  EXPECT_THAT(parent.warnings(0), HasSubstr("the dependency third_party/other"));

  // A dependency's own (nested) culprits come along under their full path.
  v1::JobStatus top = Found(/*merge=*/false, /*multiple_steps=*/false);
  v1::DependencyCulprit* nested = found.add_dependency_culprits();
  nested->set_path("nested");
  nested->mutable_commit()->set_sha("inside-nested");
  FoldFollowUpResults({{"d1", &found}}, &top);
  ASSERT_EQ(top.dependency_culprits_size(), 2);
  EXPECT_EQ(top.dependency_culprits(0).commit().sha(), "inside-dep");
  EXPECT_EQ(top.dependency_culprits(1).path(), "third_party/dep/nested");
  EXPECT_EQ(top.dependency_culprits(1).commit().sha(), "inside-nested");
}

// A confirmed culprit of a job that asks for the revert check, GOOD at 10 and BAD at 15.
v1::JobStatus RevertCheckParent() {
  v1::JobStatus status = Found(/*merge=*/false, /*multiple_steps=*/false);
  status.mutable_spec()->set_verify_revert(true);
  status.mutable_confirmation()->set_confirmed(true);
  status.set_regression_pct(50);
  v1::Baseline& good = *status.mutable_baseline()->mutable_good();
  v1::Baseline& bad = *status.mutable_baseline()->mutable_bad();
  for (double v : {10.0, 10.1, 9.9, 10.05, 9.95}) good.add_samples(v);
  for (double v : {15.0, 15.1, 14.9, 15.05, 14.95}) bad.add_samples(v);
  good.set_median(10);
  bad.set_median(15);
  return status;
}

// The revert check's child: BAD (on a GPU 10% faster than the parent's) against the revert at
// `reverted` of BAD, in one interleaved set.
v1::JobStatus RevertChild(double reverted, bool significant) {
  v1::JobStatus child;
  child.set_status(significant ? v1::OUTCOME_CULPRIT_FOUND : v1::OUTCOME_NO_REGRESSION);
  child.set_good_sha("bad0000");
  child.set_bad_sha("revert0");
  v1::Confirmation& c = *child.mutable_confirmation();
  c.set_confirmed(significant);
  c.set_ratio(reverted);
  c.set_ci_low(reverted - 0.01);
  c.set_ci_high(reverted + 0.01);
  v1::ConfirmationPairs& set = *c.add_sets();
  set.set_interleaved(true);
  for (double v : {13.5, 13.6, 13.4, 13.55, 13.45, 13.5}) {
    set.add_last_good_samples(v);
    set.add_culprit_samples(v * reverted);
  }
  return child;
}

TEST(FollowUpsTest, ARevertCheckIsPlannedOnlyForAConfirmedRegressionsCulprit) {
  v1::JobStatus status = RevertCheckParent();
  EXPECT_TRUE(WantsRevertCheck(status));
  v1::TryChange change;
  change.set_kind(v1::TryChange::KIND_REVERT);
  change.set_description("revert of culprit on bad0000");
  const PlannedFollowUp plan = PlanRevertCheck(status, "revert0", change);
  EXPECT_EQ(plan.kind, v1::FOLLOW_UP_KIND_REVERT_CHECK);
  EXPECT_EQ(plan.good, "bad0000");
  EXPECT_EQ(plan.bad, "revert0");
  const v1::JobSpec spec = FollowUpSpec(status.spec(), "job-1", plan);
  EXPECT_EQ(spec.try_change().description(), "revert of culprit on bad0000");
  EXPECT_FALSE(spec.verify_revert());
  EXPECT_FALSE(spec.all_culprits());
  EXPECT_TRUE(spec.confirm());
  EXPECT_EQ(FollowUpRequestId("job-1", plan), "job-1/revert_check");

  v1::JobStatus unconfirmed = status;
  unconfirmed.mutable_confirmation()->set_confirmed(false);
  EXPECT_FALSE(WantsRevertCheck(unconfirmed));
  v1::JobStatus fix = status;
  fix.mutable_spec()->set_find_fix(true);
  EXPECT_FALSE(WantsRevertCheck(fix));
  v1::JobStatus not_asked = status;
  not_asked.mutable_spec()->set_verify_revert(false);
  EXPECT_FALSE(WantsRevertCheck(not_asked));
}

TEST(FollowUpsTest, TheRevertChecksShareIsOfTheWholeRegressionWhateverTheGpu) {
  const v1::JobStatus parent = RevertCheckParent();
  // BAD is 1.5x GOOD; a revert to 1/1.5 of BAD recovers all of it, to 1/1.25 about half.
  const v1::RevertCheck all = RevertCheckResult(parent, "job-2", RevertChild(1 / 1.5, true));
  EXPECT_EQ(all.state(), v1::RevertCheck::STATE_DONE);
  EXPECT_EQ(all.job_id(), "job-2");
  EXPECT_EQ(all.revert_sha(), "revert0");
  EXPECT_TRUE(all.significant());
  EXPECT_NEAR(all.recovered_share(), 1.0, 0.05);
  EXPECT_LE(all.share_low(), all.recovered_share());
  EXPECT_GE(all.share_high(), all.recovered_share());
  const v1::RevertCheck half = RevertCheckResult(parent, "job-2", RevertChild(1 / 1.2, true));
  EXPECT_NEAR(half.recovered_share(), 0.5, 0.1);
  EXPECT_LT(half.share_high(), 0.8);
  const v1::RevertCheck none = RevertCheckResult(parent, "job-2", RevertChild(1.0, false));
  EXPECT_NEAR(none.recovered_share(), 0.0, 0.05);
  EXPECT_FALSE(none.significant());

  v1::JobStatus failed;
  failed.set_status(v1::OUTCOME_ERROR);
  failed.set_error("BAD does not build");
  const v1::RevertCheck error = RevertCheckResult(parent, "job-2", failed);
  EXPECT_EQ(error.state(), v1::RevertCheck::STATE_FAILED);
  EXPECT_EQ(error.error(), "BAD does not build");
}

TEST(FollowUpsTest, FoldPutsTheRevertCheckOnTheParentAsAFact) {
  v1::JobStatus parent = RevertCheckParent();
  v1::JobStatus child = RevertChild(1 / 1.5, true);
  child.mutable_spec()->set_follow_up(v1::FOLLOW_UP_KIND_REVERT_CHECK);
  FoldFollowUpResults({{"job-2", &child}}, &parent);
  EXPECT_EQ(parent.revert_check().state(), v1::RevertCheck::STATE_DONE);
  ASSERT_GE(parent.warning_facts_size(), 1);
  EXPECT_TRUE(parent.warning_facts(parent.warning_facts_size() - 1).has_revert_checked());
  EXPECT_THAT(parent.warnings(parent.warnings_size() - 1),
              HasSubstr("Reverting culprit at BAD (bad0000) recovers"));
}

// A suite job's rows: `name` in `state`, moved by `pct`, its step in (good, bad] when searching.
v1::SuiteMetricResult SuiteRow(const std::string& name, v1::SuiteMetricState state, double pct,
                               int good = 0, int bad = 0) {
  v1::SuiteMetricResult row;
  row.set_name(name);
  row.set_state(state);
  row.set_regression_pct(pct);
  if (state == v1::SUITE_METRIC_STATE_SEARCHING) {
    row.mutable_last_good()->set_sha(absl::StrCat("sha", good));
    row.mutable_last_good()->set_short_sha(absl::StrCat("sha", good));
    row.mutable_last_good()->set_index(good);
    row.mutable_first_bad()->set_sha(absl::StrCat("sha", bad));
    row.mutable_first_bad()->set_short_sha(absl::StrCat("sha", bad));
    row.mutable_first_bad()->set_index(bad);
  }
  return row;
}

v1::JobStatus Suite() {
  v1::JobStatus status = Found(/*merge=*/false, /*multiple_steps=*/false);
  status.mutable_spec()->set_all_culprits(false);
  status.mutable_spec()->set_descend_merges(false);
  status.mutable_spec()->mutable_metric()->set_suite("auto");
  status.mutable_spec()->set_direction(v1::DIRECTION_LOWER_IS_BETTER);
  status.mutable_spec()->add_marks()->set_commit("sha3");
  *status.add_suite() = SuiteRow("lead", v1::SUITE_METRIC_STATE_CULPRIT, 30);
  *status.add_suite() = SuiteRow("small", v1::SUITE_METRIC_STATE_SEARCHING, 12, 2, 9);
  *status.add_suite() = SuiteRow("flat", v1::SUITE_METRIC_STATE_UNCHANGED, 0.1);
  *status.add_suite() = SuiteRow("large", v1::SUITE_METRIC_STATE_SEARCHING, 40, 2, 9);
  *status.add_suite() = SuiteRow("late", v1::SUITE_METRIC_STATE_SEARCHING, 20, 12, 14);
  return status;
}

TEST(FollowUpsTest, ASuiteSearchesEachRangeOnceLedByTheMetricThatMovedMost) {
  const v1::JobStatus status = Suite();
  const std::vector<PlannedFollowUp> plans = PlanFollowUps(status, std::nullopt);
  ASSERT_EQ(plans.size(), 2u);
  EXPECT_EQ(plans[0].kind, v1::FOLLOW_UP_KIND_SUITE);
  EXPECT_EQ(plans[0].good, "sha2");
  EXPECT_EQ(plans[0].bad, "sha9");
  EXPECT_EQ(plans[0].lead, "large");
  EXPECT_EQ(plans[0].members, (std::vector<std::string>{"small", "large"}));
  EXPECT_EQ(plans[1].good, "sha12");
  EXPECT_EQ(plans[1].lead, "late");
  EXPECT_EQ(FollowUpRequestId("job-1", plans[0]), "job-1/suite:large");

  const v1::JobSpec spec = FollowUpSpec(status.spec(), "job-1", plans[0]);
  EXPECT_EQ(spec.metric().suite(), "auto");
  EXPECT_EQ(spec.metric().lead(), "large");
  EXPECT_EQ(spec.metric().members_size(), 2);
  EXPECT_EQ(spec.direction(), v1::DIRECTION_UNSPECIFIED) << "the parent's was its lead's";
  EXPECT_EQ(spec.marks_size(), 0);
  EXPECT_EQ(spec.follow_up_depth(), 1);
  EXPECT_EQ(spec.follow_up(), v1::FOLLOW_UP_KIND_SUITE);

  // A lead that did not move hands the others on; a failed job hands nothing on.
  v1::JobStatus unmoved = Suite();
  unmoved.set_status(v1::OUTCOME_NO_REGRESSION);
  EXPECT_EQ(PlanFollowUps(unmoved, std::nullopt).size(), 2u);
  v1::JobStatus failed = Suite();
  failed.set_status(v1::OUTCOME_ERROR);
  EXPECT_TRUE(PlanFollowUps(failed, std::nullopt).empty());
}

TEST(FollowUpsTest, FoldPutsASuiteFollowUpsCulpritsInTheParentsRange) {
  v1::JobStatus parent = Suite();
  v1::JobStatus child;
  child.set_job_id("job-2");
  child.mutable_spec()->set_follow_up(v1::FOLLOW_UP_KIND_SUITE);
  child.set_status(v1::OUTCOME_CULPRIT_FOUND);
  child.set_good_sha("sha2");
  child.set_bad_sha("sha9");
  child.set_bench_runs(21);
  v1::SuiteMetricResult large = SuiteRow("large", v1::SUITE_METRIC_STATE_CULPRIT, 40);
  large.mutable_culprit()->set_sha("sha5");
  large.mutable_culprit()->set_index(3);  // In the child's range 2..9.
  large.mutable_last_good()->set_index(2);
  large.set_before(1.0);
  large.set_after(1.4);
  large.set_culprit_regression_pct(40);
  large.set_job_id("job-2");
  *child.add_suite() = large;
  v1::SuiteMetricResult small = SuiteRow("small", v1::SUITE_METRIC_STATE_UNCHANGED, 0.2);
  small.set_reason("GOOD and BAD differ by 0.2%");
  *child.add_suite() = small;
  const int runs = parent.bench_runs();

  FoldFollowUpResults({{"job-2", &child}}, &parent);
  EXPECT_EQ(parent.bench_runs(), runs + 21);
  const v1::SuiteMetricResult& found = parent.suite(3);
  ASSERT_EQ(found.name(), "large");
  EXPECT_EQ(found.state(), v1::SUITE_METRIC_STATE_CULPRIT);
  EXPECT_EQ(found.culprit().sha(), "sha5");
  EXPECT_EQ(found.culprit().index(), 5) << "2 + 3";
  EXPECT_EQ(found.last_good().index(), 4);
  EXPECT_FALSE(found.has_first_bad());
  EXPECT_DOUBLE_EQ(found.culprit_regression_pct(), 40);
  EXPECT_EQ(found.job_id(), "job-2");
  const v1::SuiteMetricResult& unresolved = parent.suite(1);
  EXPECT_EQ(unresolved.state(), v1::SUITE_METRIC_STATE_UNRESOLVED);
  EXPECT_THAT(unresolved.reason(), HasSubstr("job-2"));
  EXPECT_THAT(unresolved.reason(), HasSubstr("endpoints measured the same"));
  // The range no follow-up answered for (it did not start) is unresolved too, saying where.
  EXPECT_EQ(parent.suite(4).state(), v1::SUITE_METRIC_STATE_UNRESOLVED);
  EXPECT_THAT(parent.suite(4).reason(), HasSubstr("sha12"));
  EXPECT_EQ(parent.suite(0).state(), v1::SUITE_METRIC_STATE_CULPRIT) << "untouched";
}

}  // namespace
}  // namespace kbisect
