// Copyright 2026 The kbisect Authors.
#include "coordinator/follow_ups.h"

#include <string>
#include <utility>
#include <vector>

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

TEST(FollowUpsTest, KindsRoundTripThroughTheirNames) {
  for (FollowUpKind kind :
       {FollowUpKind::kMergedBranch, FollowUpKind::kStepsBefore, FollowUpKind::kStepsAfter}) {
    EXPECT_EQ(ParseFollowUpKind(FollowUpKindName(kind)), kind);
  }
  EXPECT_EQ(ParseFollowUpKind(""), std::nullopt);
  EXPECT_EQ(ParseFollowUpKind("steps"), std::nullopt);
  EXPECT_STREQ(FollowUpEventPrefix(FollowUpKind::kMergedBranch), "[merged branch] ");
}

TEST(FollowUpsTest, PlansTheMergedBranchAndBothSidesOfAPartialStep) {
  const v1::JobStatus status = Found(/*merge=*/true, /*multiple_steps=*/true);
  ASSERT_TRUE(WantsMergedBranch(status));
  const std::vector<PlannedFollowUp> plan =
      PlanFollowUps(status, std::make_pair(std::string("base"), std::string("tip")));
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].kind, FollowUpKind::kMergedBranch);
  EXPECT_EQ(plan[0].good, "base");
  EXPECT_EQ(plan[1].kind, FollowUpKind::kStepsBefore);
  EXPECT_EQ(plan[1].bad, "lastgood");
  EXPECT_EQ(plan[2].kind, FollowUpKind::kStepsAfter);
  EXPECT_EQ(plan[2].good, "culprit");
  // An unresolved merged branch plans only the steps.
  EXPECT_EQ(PlanFollowUps(status, std::nullopt).size(), 2u);
  const v1::JobSpec spec = FollowUpSpec(status.spec(), "job-1", plan[1]);
  EXPECT_EQ(spec.parent_job_id(), "job-1");
  EXPECT_EQ(spec.follow_up(), "steps_before");
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
  before.mutable_spec()->set_follow_up("steps_before");
  before.set_status(v1::OUTCOME_CULPRIT_FOUND);
  before.set_bench_runs(7);
  v1::Culprit* bigger = before.add_culprits();
  bigger->set_before(1.3);
  bigger->set_after(2.0);
  v1::JobStatus merged;
  merged.mutable_spec()->set_follow_up("merged_branch");
  merged.set_status(v1::OUTCOME_CULPRIT_FOUND);
  merged.mutable_culprit()->set_sha("inside");
  v1::JobStatus after;
  after.mutable_spec()->set_follow_up("steps_after");
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

}  // namespace
}  // namespace kbisect
