// Copyright 2026 The kbisect Authors.
//
// BisectJob, ending: whether the search is done and settled (calibrations, --confidence), the
// result written (SearchResult), acting on the confirmation's steps (ConfirmationStage), and the
// terminal state with the worker report.
#include <set>
#include <string>
#include <vector>

#include "common/identity/clock_events.h"
#include "common/rpc/proto_time.h"
#include "coordinator/job/bisect_job.h"
#include "coordinator/job/job_text.h"

namespace kbisect {
namespace {

// The warnings on the runs of `probes` a GPU slowed down (throttled: re-run or kept) or whose
// clocks its driver capped (flagged), with the reasons the runs recorded.
std::vector<v1::JobWarning> GpuWarnings(const ProbeRows& probes) {
  int throttled = 0;
  int discarded = 0;
  int capped = 0;
  int shared = 0;
  std::set<std::string> foreign;
  std::set<std::string> throttled_reasons;
  std::set<std::string> capped_reasons;
  for (const v1::Probe& probe : probes) {
    for (const v1::RunRecord& run : probe.runs()) {
      const v1::GpuState& gpu = run.gpu_state();
      if (gpu.foreign_processes_size() > 0) {
        ++shared;
        foreign.insert(gpu.foreign_processes().begin(), gpu.foreign_processes().end());
      }
      std::set<std::string> limits;
      for (const std::string& reason : gpu.throttle_reasons()) {
        if (SeverityOfReason(reason) != ClockEventSeverity::kBenign) limits.insert(reason);
      }
      if (gpu.throttled()) {
        ++throttled;
        discarded += run.has_value() ? 0 : 1;
        throttled_reasons.insert(limits.begin(), limits.end());
      } else if (!limits.empty()) {
        ++capped;
        capped_reasons.insert(limits.begin(), limits.end());
      }
    }
  }
  std::vector<v1::JobWarning> warnings;
  if (throttled > 0) {
    v1::JobWarning::Throttled& fact = *warnings.emplace_back().mutable_throttled();
    fact.set_runs(throttled);
    fact.set_discarded(discarded);
    fact.mutable_reasons()->Add(throttled_reasons.begin(), throttled_reasons.end());
  }
  if (shared > 0) {
    v1::JobWarning::ForeignProcesses& fact = *warnings.emplace_back().mutable_foreign_processes();
    fact.set_runs(shared);
    fact.mutable_processes()->Add(foreign.begin(), foreign.end());
  }
  if (capped > 0) {
    v1::JobWarning::Capped& fact = *warnings.emplace_back().mutable_capped();
    fact.set_runs(capped);
    fact.mutable_reasons()->Add(capped_reasons.begin(), capped_reasons.end());
  }
  return warnings;
}

}  // namespace

void BisectJob::MaybeFinish(absl::Time now) {
  if (finished() || !frame_.bisecting()) return;
  // A verdict taken back (a worker lost, a calibration) reopens the search: the early
  // confirmation's pairs still count if the search closes on the same two commits again, and
  // are dropped once it cannot.
  if (confirmation_.early()) {
    FollowConfirmation(confirmation_.AbortIfTargetLost(ConfirmationNow(now)), now);
  }
  if (!ledger_.search().Done()) return;
  const bool wants_confirmation =
      ledger_.search().Candidates().size() == 1 && frame_.spec.confirm() && !pass_fail_;
  if (!calibration_.Settled(ledger_.awaiting())) {
    // The calibrations still owed run beside the confirmation's pairs: both take a span.
    if (wants_confirmation && !confirmation_.early()) {
      FollowConfirmation(confirmation_.Start(/*early=*/true, ConfirmationNow(now)), now);
    }
    return;
  }
  // The culprit must reach the confidence first (boundary commits run again: --confidence).
  const CulpritConfidence::EndCheck check = confidence_.CheckCulprit();
  if (check.warning.has_value()) Warn(*check.warning);
  if (check.extend_row >= 0) {
    Emit(v1::JOB_EVENT_KIND_WARNING, check.event, nullptr, now);
    book_.Extend(check.extend_row, check.more_runs);
  }
  if (check.wait) return;
  for (v1::JobWarning& warning : result_.RecordInterval()) Warn(std::move(warning));
  if (wants_confirmation) {
    frame_.state = v1::JOB_STATE_CONFIRMING;
    // Started while the calibrations ran, it is judged once its last pairs are in.
    FollowConfirmation(confirmation_.early()
                           ? confirmation_.CompleteEarly(ConfirmationNow(now))
                           : confirmation_.Start(/*early=*/false, ConfirmationNow(now)),
                       now);
    return;
  }
  FinishWith(result_.Conclude(), now);
}

ConfirmationContext BisectJob::ConfirmationNow(absl::Time now) const {
  ConfirmationContext context;
  context.now = now;
  context.workers = calibration_.ActiveWorkers(frame_.spec.max_workers());
  context.round = ledger_.max_round() + 1;
  return context;
}

void BisectJob::FollowConfirmation(ConfirmationStep step, absl::Time now) {
  to_cancel_.insert(to_cancel_.end(), step.cancelled.begin(), step.cancelled.end());
  if (step.ratio.has_value()) {
    // Before stays the search's median at last-good (the reference's frame); after follows from
    // the confirmed ratio.
    result_.AdoptConfirmedRatio(*step.ratio);
  }
  for (const v1::JobWarning& warning : step.warnings) {
    Emit(v1::JOB_EVENT_KIND_WARNING, warning, nullptr, now);
  }
  switch (step.next) {
    case ConfirmationStep::Next::kWait:
      break;
    case ConfirmationStep::Next::kSettleSearch:
      MaybeFinish(now);
      break;
    case ConfirmationStep::Next::kConfirmed: {
      v1::JobWarning confirmed;
      if (step.verdict.has_value())
        *confirmed.mutable_confirmed()->mutable_verdict() = *step.verdict;
      Emit(v1::JOB_EVENT_KIND_WARNING, std::move(confirmed), nullptr, now);
      FinishWith(result_.Conclude(), now);
      break;
    }
    case ConfirmationStep::Next::kUnconfirmed:
      if (frame_.spec.has_try_change() && step.ratio.has_value()) {
        // Measured, and no significant difference: the try's answer, not a failed bisect.
        Finish(v1::OUTCOME_NO_REGRESSION,
               TryNotSignificantText(step.verdict ? ConfirmationVerdictWords(*step.verdict) : ""),
               now);
        break;
      }
      Finish(v1::OUTCOME_INCONCLUSIVE,
             UnconfirmedText(commits_[ledger_.search().first_bad()].sha(),
                             commits_[ledger_.search().last_good()].sha(),
                             step.verdict ? ConfirmationVerdictWords(*step.verdict) : ""),
             now);
      break;
  }
}

void BisectJob::FinishWith(SearchResult::Conclusion conclusion, absl::Time now) {
  for (v1::JobWarning& warning : conclusion.warnings) Warn(std::move(warning));
  Finish(conclusion.outcome, conclusion.error, now);
}

void BisectJob::CloseOpenTasks() {
  for (auto& [id, entry] : book_.tasks()) {
    if (entry.done) continue;
    if (entry.active) to_cancel_.push_back(id);
    entry.done = true;
    book_.Deactivate(id);
    v1::Probe& probe = ProbeOf(entry);
    if (probe.state() != v1::PROBE_STATE_FINISHED) {
      probe.set_state(v1::PROBE_STATE_CANCELLED);
      ledger_.CountCancelled();
    }
  }
  book_.ClearQueue();
}

void BisectJob::Finish(v1::Outcome outcome, const std::string& error, absl::Time now) {
  if (HoldForSuite(outcome, error, now)) return;
  CloseOpenTasks();
  frame_.outcome = outcome;
  frame_.error = error;
  switch (outcome) {
    case v1::OUTCOME_CANCELLED:
      frame_.state = v1::JOB_STATE_CANCELLED;
      break;
    case v1::OUTCOME_ERROR:
      frame_.state = v1::JOB_STATE_FAILED;
      break;
    default:
      frame_.state = v1::JOB_STATE_DONE;
  }
  tally_.wall_seconds = absl::ToDoubleSeconds(now - start_time_);
  tally_.worker_report = calibration_.WorkerReport(tally_.drift_events);
  suite_.Judge();
  for (v1::JobWarning& warning : GpuWarnings(book_.rows())) Warn(std::move(warning));
  tally_.finish_time = now;
  ledger_.UpdateProgress();
  Project();  // The FINISHED event carries the whole status.
  const v1::JobStatus& projected = projection_;
  v1::JobEvent finished;
  v1::JobFinishedFact& fact = *finished.mutable_finished();
  fact.set_outcome(outcome);
  fact.set_culprit_sha(projected.culprit().sha());
  fact.set_culprit_subject(projected.culprit().subject());
  fact.set_candidates(projected.candidates_size());
  fact.set_error(error);
  *finished.mutable_job() = projected;
  Emit(v1::JOB_EVENT_KIND_FINISHED, std::move(finished), nullptr, now);
}

}  // namespace kbisect
