// Copyright 2026 The kbisect Authors.
//
// The words of a job's events and warnings (issue 48): the coordinator's job records what
// happened as typed facts (v1::JobEvent's `fact`, v1::JobWarning) and this file is the one place
// that says them, for every surface: the progress lines of `kbisect run`/`watch`, `kbisect log`,
// the terminal report, the job pages, the Markdown summary and the webhook's JSON. The job
// stamps each event's `message` and each warning's sentence with these words too, so that the
// JSON users' scripts read, and clients older than the facts, carry the same sentences. Pure,
// and depends on the wire types only.
#ifndef KBISECT_REPORT_EVENT_WORDS_H_
#define KBISECT_REPORT_EVENT_WORDS_H_

#include <string>

#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// Why a worker was quarantined, from the fact's kind and numbers (also DriftEvent.detail): "its
// GOOD median 1.2ms is +8.0% off the pool's 1.1ms, ...".
std::string QuarantineReasonWords(const v1::JobWarning::WorkerQuarantined& quarantined);

// The confirmation's judgement: "step x1.21, 95% CI [1.18, 1.24] from 8 interleaved pairs on w1",
// or "the confirmation run failed: ..." when it failed.
std::string ConfirmationVerdictWords(const v1::ConfirmationVerdictFact& verdict);

// A warning as JobStatus.warnings lists it; "" for a warning with no fact set.
std::string WarningWords(const v1::JobWarning& warning);

// Below this upper bound of the recovered share a revert check says other commits matter too.
inline constexpr double kFullRecovery = 0.8;

// The revert check's sentence (--verify-revert): "Reverting b9006fb at BAD (9f8e7d6) recovers
// 97% (91%-103%) of the 44% regression (...)", or why it conflicts or failed.
std::string RevertCheckWords(const v1::RevertCheck& check);

// An event's line: its fact's words (a warning's as its WARNING or DRIFT event says it, which
// may differ from WarningWords), or its `message` for an event recorded before the facts.
std::string EventWords(const v1::JobEvent& event);

}  // namespace kbisect

#endif  // KBISECT_REPORT_EVENT_WORDS_H_
