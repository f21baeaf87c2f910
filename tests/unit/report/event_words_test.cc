// Copyright 2026 The kbisect Authors.
//
// report/event_words: each fact of a job's events and warnings in its words (the sentences users
// have read since before the facts), an event recorded before the facts keeps its message, and a
// fact survives the JSON that `kbisect status --json` and `watch --json` print.
#include "report/event_words.h"

#include <string>

#include "cli/report/status_json.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace kbisect {
namespace {

const char kGood[] = "1111111aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const char kBad[] = "2222222bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

TEST(EventWordsTest, TheStartedEventSaysTheRangeAndTheMarks) {
  v1::JobEvent event;
  v1::JobStartedFact& fact = *event.mutable_started();
  fact.set_good_sha(kGood);
  fact.set_bad_sha(kBad);
  fact.set_commits(40);
  fact.set_serial_steps(6);
  EXPECT_EQ(EventWords(event),
            "Bisect range: 1111111..2222222\nTotal commits in range: 40\n"
            "Estimated steps with one worker (git bisect): 6");
  v1::CommitMark& mark = *fact.add_marks();
  mark.set_sha(kGood);
  mark.set_verdict(v1::VERDICT_SKIP);
  fact.set_remaining_candidates(12);
  EXPECT_EQ(EventWords(event),
            "Bisect range: 1111111..2222222\nTotal commits in range: 40\n"
            "Estimated steps with one worker (git bisect): 6\n"
            "Marked by you (not measured): 1111111 skip; 12 commits left to search");
}

TEST(EventWordsTest, AMeasuredBaselineAcrossTwoGpusSaysItIsProvisional) {
  v1::JobEvent event;
  v1::MeasuredBaselineFact& fact = *event.mutable_measured_baseline();
  fact.set_good_sha(kGood);
  fact.set_bad_sha(kBad);
  fact.set_metric_name("latency");
  fact.set_unit("ms");
  fact.set_good_median(1.5);
  fact.set_bad_median(1.8);
  fact.set_regression_pct(20);
  fact.set_direction(v1::DIRECTION_LOWER_IS_BETTER);
  EXPECT_EQ(EventWords(event),
            "Baseline results:\n  GOOD (1111111): latency = 1.5ms\n"
            "  BAD  (2222222): latency = 1.8ms\n  Regression: 20.0% higher (worse)");
  fact.set_provisional_good_worker("w1");
  fact.set_provisional_bad_worker("w0");
  EXPECT_NE(EventWords(event).find("\n  (GOOD on w1, BAD on w0: the search starts now; its "
                                   "verdicts count once w0 has measured GOOD too"),
            std::string::npos)
      << EventWords(event);
}

TEST(EventWordsTest, AFinishedProbeSaysItsStepMetricAndVerdict) {
  v1::JobEvent event;
  v1::Probe& probe = *event.mutable_probe();
  probe.set_sha(kBad);
  probe.add_samples(1.52);
  probe.set_median(1.52);
  probe.set_verdict(v1::VERDICT_GOOD);
  v1::ProbeFinishedFact& fact = *event.mutable_probe_finished();
  fact.set_step(3);
  fact.set_steps_estimated(5);
  fact.set_commits_left(4);
  fact.set_in_flight(2);
  fact.set_unit("ms");
  fact.set_runs_per_commit(1);
  EXPECT_EQ(EventWords(event),
            "Step 3/5: 2222222 metric=1.52ms -> GOOD (4 commits left, 2 probes in flight)");
}

TEST(EventWordsTest, AWarningIsWordedForTheStatusAndForItsEvent) {
  v1::JobWarning warning;
  v1::JobWarning::WorkerQuarantined& fact = *warning.mutable_worker_quarantined();
  fact.set_worker("w2");
  fact.set_kind(v1::DRIFT_KIND_CONTROL_MOVED);
  fact.set_offset_fraction(0.08);
  const std::string reason =
      "its A/A control of GOOD moved +8.0% from its calibration (more than a third of the "
      "regression): the GPU drifted";
  EXPECT_EQ(QuarantineReasonWords(fact), reason);
  EXPECT_EQ(WarningWords(warning), "worker w2 quarantined: " + reason);
  v1::JobEvent event;
  *event.mutable_warning() = warning;
  EXPECT_EQ(EventWords(event), "Quarantined worker w2: " + reason);

  v1::JobWarning small;
  small.mutable_small_regression()->set_regression_pct(3.2);
  EXPECT_EQ(WarningWords(small),
            "the regression is only 3.2% (under 5%): it may be noise; consider more --runs");
  *event.mutable_warning() = small;
  EXPECT_EQ(EventWords(event), "Warning: " + WarningWords(small));
}

TEST(EventWordsTest, TheGpuWarningsSayHowManyRunsAndWhy) {
  v1::JobWarning warning;
  v1::JobWarning::Throttled& fact = *warning.mutable_throttled();
  fact.set_runs(3);
  fact.add_reasons("hw_slowdown");
  EXPECT_EQ(WarningWords(warning),
            "3 benchmark runs ran with the GPU throttled (hw_slowdown); pass --discard-throttled "
            "to re-run them");
  fact.set_discarded(2);
  EXPECT_EQ(WarningWords(warning),
            "3 benchmark runs ran with the GPU throttled (hw_slowdown): 2 discarded and re-run");
}

TEST(EventWordsTest, TheConfirmationSaysItsStepOrWhyItFailed) {
  v1::ConfirmationVerdictFact verdict;
  verdict.set_ratio(1.21);
  verdict.set_ci_low(1.18);
  verdict.set_ci_high(1.24);
  verdict.set_fresh_pairs(8);
  verdict.set_reused_pairs(2);
  verdict.add_workers("w0");
  verdict.add_workers("w1");
  v1::JobWarning confirmed;
  *confirmed.mutable_confirmed()->mutable_verdict() = verdict;
  EXPECT_EQ(WarningWords(confirmed),
            "Confirmed: step x1.21, 95% CI [1.18, 1.24] from 8 interleaved pairs and 2 from the "
            "search on w0, w1");
  verdict.set_failure("the GPU fell off the bus");
  EXPECT_EQ(ConfirmationVerdictWords(verdict),
            "the confirmation run failed: the GPU fell off the bus");
}

TEST(EventWordsTest, AnEventRecordedBeforeTheFactsKeepsItsMessage) {
  v1::JobEvent event;
  event.set_kind(v1::JOB_EVENT_KIND_WARNING);
  event.set_message("Baselines unclear: more runs");
  EXPECT_EQ(EventWords(event), "Baselines unclear: more runs");
  EXPECT_EQ(WarningWords(v1::JobWarning()), "");
}

TEST(EventWordsTest, AFactRoundTripsThroughTheStatusJsonBesideItsSentence) {
  v1::JobStatus job;
  job.set_job_id("j-1");
  v1::JobWarning warning;
  warning.mutable_contradiction()->set_sha(kBad);
  warning.mutable_contradiction()->set_verdict(v1::VERDICT_BAD);
  job.add_warnings(WarningWords(warning));
  *job.add_warning_facts() = warning;

  const std::string json = StatusToJson(job);
  const nlohmann::json parsed = nlohmann::json::parse(json);
  // Users' scripts read the sentence where they always did.
  EXPECT_EQ(parsed["warnings"][0],
            "commit 2222222 measured BAD, contradicting earlier verdicts; treated as skipped");
  const absl::StatusOr<v1::JobStatus> back = StatusFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->warning_facts_size(), 1);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(back->warning_facts(0), warning));
  EXPECT_EQ(WarningWords(back->warning_facts(0)), back->warnings(0));
}

TEST(EventWordsTest, AnEventsFactRoundTripsThroughItsJson) {
  v1::JobEvent event;
  event.set_kind(v1::JOB_EVENT_KIND_PROBE_CANCELLED);
  event.mutable_probe_cancelled()->set_sha(kGood);
  event.set_message(EventWords(event));
  v1::JobEvent back;
  ASSERT_TRUE(MessageFromJson(MessageToJson(event), &back).ok());
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(back, event));
  EXPECT_EQ(EventWords(back), "Cancelled probe of 1111111: the interval no longer contains it");
}

}  // namespace
}  // namespace kbisect
