// Copyright 2026 The kbisect Authors.
//
// What the job still words itself, and the wire facts made from its decisions. The events and
// warnings are facts (v1::JobEvent's `fact`, v1::JobWarning; issue 48) worded by report/
// event_words for every surface; the sentences here are those that are not facts yet: the
// job's error (JobStatus.error, the FINISHED event's error) and the messages on probe rows.
// BisectJob decides; this file and report/event_words say it.
#ifndef KBISECT_COORDINATOR_JOB_JOB_TEXT_H_
#define KBISECT_COORDINATOR_JOB_JOB_TEXT_H_

#include <string>
#include <vector>

#include "coordinator/job/calibration.h"
#include "coordinator/job/probe_classifier.h"
#include "kbisect/v1/kbisect.pb.h"
#include "report/event_words.h"
#include "report/words.h"

namespace kbisect {

// The warning of a quarantine, from the decision's facts and the job's metric unit.
v1::JobWarning QuarantinedFact(const QuarantineDecision& decision, const std::string& unit);

// The confirmation's judgement as the wire says it: from `fresh_pairs` interleaved pairs and
// `reused_pairs` of the search, measured on `workers`.
v1::ConfirmationVerdictFact ConfirmationVerdictOf(const ConfirmationJudgement& judgement,
                                                  const std::vector<std::string>& workers,
                                                  int fresh_pairs, int reused_pairs);

// A flaky test that never failed at BAD in `runs` runs, or failed at GOOD in most runs.
std::string FlakyPassesAtBadText(const v1::Probe& bad, int runs);
std::string FlakyFailsAtGoodText(const v1::Probe& good, int failures, int runs);

// A failure at a baseline ends the job: `good` says which one.
std::string BaselineFailedText(bool good, const v1::Probe& probe, const v1::TaskResult& result);
std::string BaselineGaveUpText(bool good, const std::string& why);
std::string CheckFailsAtGoodText(const v1::Probe& good);
std::string CheckPassesAtBadText(const v1::Probe& bad);
// The endpoints look swapped and --allow-improvement was not given.
std::string SwappedText(const std::string& reason);
// --find-fix: BAD is slower than GOOD (the job looks for the commit that made it faster), and
// no step at all.
std::string FixSwappedText(const std::string& reason);
std::string NoFixText(const std::string& reason);
// A try job whose interleaved pairs show no significant difference (`judgement`: the
// confirmation's verdict in words, possibly empty).
std::string TryNotSignificantText(const std::string& judgement);
std::string EveryWorkerQuarantinedText();

// Why a confirmation task measured ahead is cancelled: its commit is not the culprit, or the
// confirmation needs no fresh pair.
std::string SpeculationNotTheCulpritText();
std::string SpeculationNotNeededText();
// The job's error when the step did not reproduce (`verdict`: ConfirmationVerdictWords).
std::string UnconfirmedText(const std::string& culprit, const std::string& last_good,
                            const std::string& verdict);

// Too many untestable commits border the culprit.
std::string InconclusiveText(int untested, const std::string& last_good,
                             const std::string& first_bad);

// Messages on probe rows.
std::string LostWithWorkerText(const std::string& why);
std::string AttemptLostText(int attempt, const std::string& why);
std::string GaveUpText(int attempts, const std::string& why);
std::string DiscardedText(const std::string& why);
std::string OutsideIntervalText();
std::string CancelledText(const std::string& reason);

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_JOB_TEXT_H_
