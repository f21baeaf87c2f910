// Copyright 2026 The kbisect Authors.
#include "cli/job_log.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using ::testing::HasSubstr;

std::string Sha(char c) { return std::string(40, c); }

v1::JobStatus FinishedJob() {
  v1::JobStatus job;
  job.set_job_id("job-1");
  job.set_commit_count(10);
  job.set_good_sha(Sha('0'));
  job.set_bad_sha(Sha('f'));
  auto add = [&](v1::ProbeKind kind, int index, char c, v1::Verdict verdict) {
    v1::Probe* probe = job.add_probes();
    probe->set_kind(kind);
    probe->set_index(index);
    probe->set_sha(Sha(c));
    probe->set_state(v1::PROBE_STATE_FINISHED);
    probe->set_verdict(verdict);
    probe->add_samples(1.5);
    probe->set_worker("host/slot0");
    probe->set_round(1);
  };
  add(v1::PROBE_KIND_BASELINE_BAD, 10, 'f', v1::VERDICT_UNSPECIFIED);
  add(v1::PROBE_KIND_BASELINE_GOOD, 0, '0', v1::VERDICT_UNSPECIFIED);
  add(v1::PROBE_KIND_BISECT, 7, '7', v1::VERDICT_BAD);
  add(v1::PROBE_KIND_BISECT, 3, '3', v1::VERDICT_GOOD);
  add(v1::PROBE_KIND_BISECT, 5, '5', v1::VERDICT_SKIP);
  add(v1::PROBE_KIND_BISECT, 6, '6', v1::VERDICT_AMBIGUOUS);
  v1::CommitMark* mark = job.add_marks();
  mark->set_sha(Sha('4'));
  mark->set_index(4);
  mark->set_verdict(v1::VERDICT_GOOD);
  return job;
}

TEST(JobLogTest, TheLogReplaysAsTheJobsVerdictsInRangeOrder) {
  const std::string log = FormatJobLog(FinishedJob());
  EXPECT_THAT(log, HasSubstr("# kbisect log of job-1"));
  EXPECT_THAT(log, HasSubstr("# good " + Sha('0') + " 1.5  # GOOD baseline"));
  absl::StatusOr<std::vector<v1::CommitMark>> marks = ParseJobLog(log);
  ASSERT_TRUE(marks.ok()) << marks.status();
  // Baselines are comments and the ambiguous probe is left out: 3 good, 4 good (mark), 5 skip,
  // 7 bad.
  ASSERT_EQ(marks->size(), 4u) << log;
  EXPECT_EQ((*marks)[0].commit(), Sha('3'));
  EXPECT_EQ((*marks)[0].verdict(), v1::VERDICT_GOOD);
  EXPECT_EQ((*marks)[1].commit(), Sha('4'));
  EXPECT_EQ((*marks)[2].verdict(), v1::VERDICT_SKIP);
  EXPECT_EQ((*marks)[3].commit(), Sha('7'));
  EXPECT_EQ((*marks)[3].verdict(), v1::VERDICT_BAD);
}

TEST(JobLogTest, EditedLinesAreReadAndMistakesNameTheLine) {
  absl::StatusOr<std::vector<v1::CommitMark>> marks =
      ParseJobLog("# comment\n\n  BAD abc1234 1.2,1.3  # edited by hand\nskip def5678\n");
  ASSERT_TRUE(marks.ok()) << marks.status();
  ASSERT_EQ(marks->size(), 2u);
  EXPECT_EQ((*marks)[0].verdict(), v1::VERDICT_BAD);
  EXPECT_EQ((*marks)[0].commit(), "abc1234");
  EXPECT_THAT(ParseJobLog("good abc1234\nmaybe def5678\n").status().message(),
              HasSubstr("line 2: 'maybe' is not a verdict"));
  EXPECT_THAT(ParseJobLog("good\n").status().message(), HasSubstr("line 1: a verdict needs"));
}

}  // namespace
}  // namespace kbisect
