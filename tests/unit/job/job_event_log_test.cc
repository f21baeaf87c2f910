// Copyright 2026 The kbisect Authors.
//
// JobEventLog on its own: each event is stamped with its time, the job's progress at that moment
// and a copy of its probe; a FINISHED event keeps the status the job put in it; Take hands the
// events over once, oldest first; each event's message is its fact's words.
#include "coordinator/job/job_event_log.h"

#include "common/rpc/proto_time.h"
#include "gtest/gtest.h"
#include "report/event_words.h"

namespace kbisect {
namespace {

constexpr absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

TEST(JobEventLogTest, StampsEachEventWithTheProgressOfItsMomentAndCopiesItsProbe) {
  v1::Progress progress;
  progress.set_remaining_commits(40);
  JobEventLog log;
  v1::Probe probe;
  probe.set_index(7);
  probe.set_sha("7777777aaaa");
  v1::JobEvent cancelled;
  cancelled.mutable_probe_cancelled()->set_sha(probe.sha());
  log.Emit(v1::JOB_EVENT_KIND_PROBE_CANCELLED, cancelled, &probe, progress, kNow);
  probe.set_index(8);  // A copy was taken.
  progress.set_remaining_commits(20);
  v1::JobWarning moves;
  moves.mutable_reference_moves()->set_from("w0");
  log.Emit(v1::JOB_EVENT_KIND_WARNING, moves, nullptr, progress, kNow + absl::Seconds(1));

  const std::vector<v1::JobEvent> events = log.Take();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind(), v1::JOB_EVENT_KIND_PROBE_CANCELLED);
  EXPECT_EQ(events[0].probe_cancelled().sha(), "7777777aaaa");
  EXPECT_EQ(events[0].message(), "Cancelled probe of 7777777: the interval no longer contains it");
  EXPECT_EQ(events[0].probe().index(), 7);
  EXPECT_EQ(events[0].progress().remaining_commits(), 40);
  EXPECT_EQ(FromProto(events[0].time()), kNow);
  EXPECT_FALSE(events[0].has_job());
  EXPECT_FALSE(events[1].has_probe());
  EXPECT_EQ(events[1].progress().remaining_commits(), 20);
  EXPECT_EQ(events[1].warning().reference_moves().from(), "w0");
  EXPECT_EQ(events[1].message(), EventWords(events[1]));
  EXPECT_EQ(events[0].sequence(), 0);  // The coordinator numbers them.
  EXPECT_TRUE(log.Take().empty());
}

TEST(JobEventLogTest, AFinishedEventKeepsTheStatusTheJobPutInIt) {
  JobEventLog log;
  v1::JobEvent finished;
  finished.mutable_finished()->set_outcome(v1::OUTCOME_ERROR);
  finished.mutable_finished()->set_error("done");
  finished.mutable_job()->set_job_id("job-1");
  finished.mutable_job()->set_state(v1::JOB_STATE_DONE);
  log.Emit(v1::JOB_EVENT_KIND_FINISHED, finished, nullptr, v1::Progress(), kNow);
  const std::vector<v1::JobEvent> events = log.Take();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].job().job_id(), "job-1");
  EXPECT_EQ(events[0].job().state(), v1::JOB_STATE_DONE);
  EXPECT_EQ(events[0].message(), "done");
}

}  // namespace
}  // namespace kbisect
