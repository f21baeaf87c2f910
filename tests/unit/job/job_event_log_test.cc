// Copyright 2026 The kbisect Authors.
//
// JobEventLog on its own: each event is stamped with its time, the job's progress at that moment
// and a copy of its probe; a FINISHED event carries the whole status; Take hands the events over
// once, oldest first; each event's message is its fact's words, and a warning is kept as a fact
// and as its sentence.
#include "coordinator/job/job_event_log.h"

#include "common/rpc/proto_time.h"
#include "gtest/gtest.h"
#include "report/event_words.h"

namespace kbisect {
namespace {

constexpr absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

TEST(JobEventLogTest, StampsEachEventWithTheProgressOfItsMomentAndCopiesItsProbe) {
  v1::JobStatus status;
  status.mutable_progress()->set_remaining_commits(40);
  JobEventLog log(&status);
  v1::Probe probe;
  probe.set_index(7);
  probe.set_sha("7777777aaaa");
  v1::JobEvent cancelled;
  cancelled.mutable_probe_cancelled()->set_sha(probe.sha());
  log.Emit(v1::JOB_EVENT_KIND_PROBE_CANCELLED, cancelled, &probe, kNow);
  probe.set_index(8);  // A copy was taken.
  status.mutable_progress()->set_remaining_commits(20);
  v1::JobWarning moves;
  moves.mutable_reference_moves()->set_from("w0");
  log.Emit(v1::JOB_EVENT_KIND_WARNING, moves, nullptr, kNow + absl::Seconds(1));

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

TEST(JobEventLogTest, AFinishedEventCarriesTheWholeStatus) {
  v1::JobStatus status;
  status.set_job_id("job-1");
  status.set_state(v1::JOB_STATE_DONE);
  JobEventLog log(&status);
  v1::JobEvent finished;
  finished.mutable_finished()->set_outcome(v1::OUTCOME_ERROR);
  finished.mutable_finished()->set_error("done");
  log.Emit(v1::JOB_EVENT_KIND_FINISHED, finished, nullptr, kNow);
  const std::vector<v1::JobEvent> events = log.Take();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].job().job_id(), "job-1");
  EXPECT_EQ(events[0].job().state(), v1::JOB_STATE_DONE);
  EXPECT_EQ(events[0].message(), "done");
}

TEST(JobEventLogTest, AWarningIsKeptAsAFactAndAsItsSentence) {
  v1::JobStatus status;
  v1::JobWarning warning;
  warning.mutable_bad_remeasured()->set_why("its worker left");
  AddWarning(warning, &status);
  ASSERT_EQ(status.warning_facts_size(), 1);
  EXPECT_EQ(status.warning_facts(0).bad_remeasured().why(), "its worker left");
  ASSERT_EQ(status.warnings_size(), 1);
  EXPECT_EQ(status.warnings(0),
            "BAD is measured again: its worker left; the verdicts so far wait for it");
}

}  // namespace
}  // namespace kbisect
