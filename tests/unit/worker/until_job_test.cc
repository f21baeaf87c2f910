// Copyright 2026 The kbisect Authors.
//
// DecideUntilJob: what a worker serving until one job has ended does after each answer about it.
#include "worker/until_job.h"

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using Action = UntilJobStep::Action;
using ::testing::HasSubstr;

TEST(DecideUntilJobTest, AJobThatStillRunsOrFollowsUpKeepsTheWorkerServing) {
  for (v1::JobState state :
       {v1::JOB_STATE_QUEUED, v1::JOB_STATE_BASELINES, v1::JOB_STATE_BISECTING,
        v1::JOB_STATE_CONFIRMING, v1::JOB_STATE_FOLLOWING_UP, v1::JOB_STATE_UNSPECIFIED}) {
    EXPECT_EQ(DecideUntilJob("job-1", state).action, Action::kKeepServing) << state;
  }
}

TEST(DecideUntilJobTest, AnEndedJobDrainsTheWorker) {
  for (v1::JobState state : {v1::JOB_STATE_DONE, v1::JOB_STATE_CANCELLED, v1::JOB_STATE_FAILED}) {
    const UntilJobStep step = DecideUntilJob("job-1", state);
    EXPECT_EQ(step.action, Action::kDrain) << state;
    EXPECT_THAT(step.message, HasSubstr("job job-1 has ended"));
  }
  EXPECT_THAT(DecideUntilJob("job-1", v1::JOB_STATE_CANCELLED).message, HasSubstr("(cancelled)"));
}

TEST(DecideUntilJobTest, AnUnknownJobFailsWithTheUsageCode) {
  const UntilJobStep step = DecideUntilJob("job-typo", absl::NotFoundError("no job 'job-typo'"));
  EXPECT_EQ(step.action, Action::kFail);
  EXPECT_EQ(step.exit_code, kExitUnknownUntilJob);
  EXPECT_EQ(step.exit_code, 2);
  EXPECT_THAT(step.message, HasSubstr("--until-job job-typo"));
  EXPECT_THAT(step.message, HasSubstr("knows no such job"));
}

TEST(DecideUntilJobTest, ACoordinatorAwayOrBusyKeepsTheWorkerServing) {
  for (const absl::Status& status :
       {absl::UnavailableError("restarting"), absl::DeadlineExceededError("slow"),
        absl::CancelledError("woken"), absl::ResourceExhaustedError("full"),
        absl::AbortedError("rolled back")}) {
    EXPECT_EQ(DecideUntilJob("job-1", status).action, Action::kKeepServing) << status;
  }
}

TEST(DecideUntilJobTest, ARefusalFailsWithOneAndSaysWhy) {
  const UntilJobStep old = DecideUntilJob("job-1", absl::UnimplementedError("GetJobState"));
  EXPECT_EQ(old.action, Action::kFail);
  EXPECT_EQ(old.exit_code, 1);
  EXPECT_THAT(old.message, HasSubstr("UNIMPLEMENTED"));
  EXPECT_THAT(old.message, HasSubstr("older than this worker"));
  EXPECT_EQ(DecideUntilJob("job-1", absl::PermissionDeniedError("not a worker")).exit_code, 1);
}

}  // namespace
}  // namespace kbisect
