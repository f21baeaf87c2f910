// Copyright 2026 The kbisect Authors.
//
// JobEventLog on its own: each event is stamped with its time, the job's progress at that moment
// and a copy of its probe; a FINISHED event carries the whole status; Take hands the events over
// once, oldest first.
#include "coordinator/job/job_event_log.h"

#include "common/rpc/proto_time.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

constexpr absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

TEST(JobEventLogTest, StampsEachEventWithTheProgressOfItsMomentAndCopiesItsProbe) {
  v1::JobStatus status;
  status.mutable_progress()->set_remaining_commits(40);
  JobEventLog log(&status);
  v1::Probe probe;
  probe.set_index(7);
  log.Emit(v1::JOB_EVENT_KIND_PROBE_FINISHED, "commit 7 is good", &probe, kNow);
  probe.set_index(8);  // A copy was taken.
  status.mutable_progress()->set_remaining_commits(20);
  log.Emit(v1::JOB_EVENT_KIND_WARNING, "noisy", nullptr, kNow + absl::Seconds(1));

  const std::vector<v1::JobEvent> events = log.Take();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind(), v1::JOB_EVENT_KIND_PROBE_FINISHED);
  EXPECT_EQ(events[0].message(), "commit 7 is good");
  EXPECT_EQ(events[0].probe().index(), 7);
  EXPECT_EQ(events[0].progress().remaining_commits(), 40);
  EXPECT_EQ(FromProto(events[0].time()), kNow);
  EXPECT_FALSE(events[0].has_job());
  EXPECT_FALSE(events[1].has_probe());
  EXPECT_EQ(events[1].progress().remaining_commits(), 20);
  EXPECT_EQ(events[0].sequence(), 0);  // The coordinator numbers them.
  EXPECT_TRUE(log.Take().empty());
}

TEST(JobEventLogTest, AFinishedEventCarriesTheWholeStatus) {
  v1::JobStatus status;
  status.set_job_id("job-1");
  status.set_state(v1::JOB_STATE_DONE);
  JobEventLog log(&status);
  log.Emit(v1::JOB_EVENT_KIND_FINISHED, "done", nullptr, kNow);
  const std::vector<v1::JobEvent> events = log.Take();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].job().job_id(), "job-1");
  EXPECT_EQ(events[0].job().state(), v1::JOB_STATE_DONE);
}

}  // namespace
}  // namespace kbisect
