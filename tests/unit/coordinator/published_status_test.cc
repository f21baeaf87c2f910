// Copyright 2026 The kbisect Authors.
#include "coordinator/published_status.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using ::testing::ElementsAre;

v1::JobStatus FinishedJob() {
  v1::JobStatus own;
  own.set_job_id("job-1");
  own.set_state(v1::JOB_STATE_DONE);
  own.set_status(v1::OUTCOME_CULPRIT_FOUND);
  own.add_warnings("the job's own warning");
  own.add_workers()->set_worker("w1");
  own.add_workers()->set_worker("w2");
  own.set_revision(99);  // Not the job's to say: the published revision wins.
  return own;
}

TEST(PublishedStatusTest, WithNothingAddedItIsTheJobsOwnStatusAtItsRevision) {
  PublishedStatus published;
  published.set_revision(7);
  const v1::JobStatus status = published.Build(FinishedJob());
  EXPECT_EQ(status.job_id(), "job-1");
  EXPECT_EQ(status.state(), v1::JOB_STATE_DONE);
  EXPECT_EQ(status.revision(), 7);
  EXPECT_THAT(status.warnings(), ElementsAre("the job's own warning"));
  EXPECT_EQ(published.frozen(), nullptr);
}

TEST(PublishedStatusTest, TheReportAddsIdentitiesDetailsAndWarningsAfterTheJobsOwn) {
  PublishedStatus published;
  ReportDetails report;
  report.identities["w2"].set_hardware_class("H100");
  report.files_changed.emplace_back().set_path("src/kernel.cu");
  report.submodule_bumps.emplace_back().set_path("third_party/cutlass");
  report.root_cause_hints.emplace_back();
  report.warnings.push_back("could not list the culprit's submodule bumps: boom");
  published.AttachReport(std::move(report));
  published.AddWarning("cannot start the merged-branch follow-up: gone");

  const v1::JobStatus status = published.Build(FinishedJob());
  EXPECT_FALSE(status.workers(0).has_identity());
  EXPECT_EQ(status.workers(1).identity().hardware_class(), "H100");
  ASSERT_EQ(status.files_changed_size(), 1);
  EXPECT_EQ(status.files_changed(0).path(), "src/kernel.cu");
  ASSERT_EQ(status.submodule_bumps_size(), 1);
  EXPECT_EQ(status.root_cause_hints_size(), 1);
  EXPECT_THAT(status.warnings(), ElementsAre("the job's own warning",
                                             "could not list the culprit's submodule bumps: boom",
                                             "cannot start the merged-branch follow-up: gone"));
}

TEST(PublishedStatusTest, FollowUpsAreListedAndHoldTheStateUntilFrozen) {
  PublishedStatus published;
  published.AddFollowUp("job-2");
  published.AddFollowUp("job-3");
  published.HoldForFollowUps();
  const v1::JobStatus own = FinishedJob();
  EXPECT_EQ(published.State(own), v1::JOB_STATE_FOLLOWING_UP);
  v1::JobStatus status = published.Build(own);
  EXPECT_EQ(status.state(), v1::JOB_STATE_FOLLOWING_UP);
  EXPECT_THAT(status.follow_up_job_ids(), ElementsAre("job-2", "job-3"));
  // The job's own status is untouched: its search is over, whatever its follow-ups do.
  EXPECT_EQ(own.state(), v1::JOB_STATE_DONE);
  EXPECT_EQ(own.follow_up_job_ids_size(), 0);

  // Completed: the folded status is published as it is, at the current revision.
  status.set_state(v1::JOB_STATE_DONE);
  status.add_warnings("folded");
  published.Freeze(status);
  published.set_revision(12);
  const v1::JobStatus final_status = published.Build(own);
  EXPECT_EQ(final_status.state(), v1::JOB_STATE_DONE);
  EXPECT_EQ(published.State(own), v1::JOB_STATE_DONE);
  EXPECT_EQ(final_status.revision(), 12);
  EXPECT_THAT(final_status.follow_up_job_ids(), ElementsAre("job-2", "job-3"));
  EXPECT_EQ(final_status.warnings_size(), status.warnings_size());  // Nothing added twice.
  ASSERT_NE(published.frozen(), nullptr);
  EXPECT_EQ(&published.Base(own), published.frozen());
}

TEST(PublishedStatusTest, AFrozenStatusIgnoresTheJobsOwn) {
  PublishedStatus published;
  v1::JobStatus stored = FinishedJob();
  stored.set_job_id("job-restored");
  published.Freeze(stored);
  v1::JobStatus own;
  own.set_job_id("job-restored");
  own.set_state(v1::JOB_STATE_BASELINES);
  EXPECT_EQ(published.Build(own).state(), v1::JOB_STATE_DONE);
  EXPECT_EQ(published.Build(own).workers_size(), 2);
  EXPECT_EQ(&published.Base(own), published.frozen());
}

}  // namespace
}  // namespace kbisect
