// Copyright 2026 The kbisect Authors.
//
// BisectJob, when a worker's standing changes: it is quarantined, it leaves or is lost, or it
// must calibrate again. What that does to the measurements and the work is WorkerStanding's
// (worker_standing.h); the job follows up: roles (reference GOOD, BAD) move to other workers,
// the endpoint verdict is evaluated again, and the job may end.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/rpc/proto_time.h"
#include "common/stats/stats.h"
#include "coordinator/job/bisect_job.h"
#include "coordinator/job/job_text.h"

namespace kbisect {
void BisectJob::OnRoleHolderLost(const std::string& worker, const std::string& why,
                                 absl::Time now) {
  const bool quarantined = calibration_.worker(worker).quarantined;
  // A BAD whose worker can no longer calibrate (or was quarantined) cannot be placed in the
  // reference's frame.
  if (!pass_fail_ && worker == calibration_.BadWorker() &&
      (quarantined || !calibration_.CalibrationDone(worker))) {
    FollowStanding(standing_.RemeasureBad(absl::StrCat("its worker ", worker, " ", why), now), now);
  }
  if (worker != calibration_.reference_worker() || (!quarantined && endpoints_.Ready())) return;
  // A reference that left after the baselines settled keeps its measurements; one that was
  // quarantined hands the reference GOOD to another worker, and every verdict judged against
  // it is judged again.
  const bool settled = endpoints_.Ready() && frame_.bisecting();
  calibration_.ResetReference();
  if (!settled) return;
  calibration_.set_bad_offset_checked(false);
  ledger_.RetractAll(now);
  frame_.state = v1::JOB_STATE_BASELINES;
  v1::JobWarning moves;
  moves.mutable_reference_moves()->set_from(worker);
  moves.mutable_reference_moves()->set_to(calibration_.reference_worker());
  Emit(v1::JOB_EVENT_KIND_WARNING, std::move(moves), nullptr, now);
  if (!endpoints_.Ready()) return;
  FollowEndpoint(endpoints_.Evaluate(), now);
  if (!finished() && frame_.bisecting()) {
    for (const Calibration::TopUp& top_up : calibration_.TopUps()) {
      book_.Extend(top_up.row, top_up.runs);
    }
    FollowStanding(standing_.SharpenCalibrations(now), now);
    SettleProvisional(now);
    ClassifyPending(now);
  }
}

void BisectJob::Quarantine(const QuarantineDecision& decision, absl::Time now) {
  const std::string& worker = decision.worker;
  Calibration::Worker& state = calibration_.worker(worker);
  if (state.quarantined) return;
  state.quarantined = true;
  const v1::JobWarning quarantined = QuarantinedFact(decision, frame_.metric_unit);
  const std::string reason = QuarantineReasonWords(quarantined.worker_quarantined());
  v1::DriftEvent* event = &tally_.drift_events.emplace_back();
  event->set_worker(worker);
  *event->mutable_time() = ToProto(now);
  event->set_kind(decision.kind);
  event->set_detail(reason);
  event->set_offset_fraction(decision.offset_fraction);
  Warn(quarantined);
  Emit(v1::JOB_EVENT_KIND_DRIFT, quarantined, nullptr, now);
  // Its verdicts, provisional or not, are not trusted: their commits are probed again.
  ledger_.Retract(
      book_.ProbePositions([&](const v1::Probe& probe) { return probe.worker() == worker; }),
      /*probe_again=*/true, "its worker was quarantined", now);
  FollowStanding(standing_.DropWorkOf(worker, "its worker was quarantined", now), now);
  // A quarantined worker holding the reference GOOD or the BAD baseline hands it on.
  OnRoleHolderLost(worker, "was quarantined", now);
  if (!calibration_.AnyoneLeft()) Finish(v1::OUTCOME_ERROR, EveryWorkerQuarantinedText(), now);
}

std::vector<std::string> BisectJob::OnWorkerGone(const std::string& worker, const std::string& why,
                                                 absl::Time now) {
  Changed();
  if (calibration_.Find(worker) == nullptr || finished()) return {};
  calibration_.worker(worker).gone = true;
  if (suite_hold_.has_value()) {
    RequeueSuiteProbesOf(worker);
    ContinueSuiteSearch(now);
    return std::exchange(to_cancel_, {});
  }
  FollowStanding(standing_.DropWorkOf(worker, absl::StrCat("its worker left: ", why), now,
                                      /*keep_measured=*/true),
                 now);
  OnRoleHolderLost(worker, "left", now);
  // What waited for this worker (its calibration) is no longer owed: the search may be over.
  MaybeFinish(now);
  ledger_.UpdateProgress();
  return std::exchange(to_cancel_, {});
}

void BisectJob::ForgetWorker(const std::string& worker, const std::string& why, absl::Time now) {
  Changed();
  if (calibration_.Find(worker) == nullptr || finished()) return;
  if (suite_hold_.has_value()) {
    // Its GOOD no longer frames what it measures next: it probes no more of the suite.
    RequeueSuiteProbesOf(worker);
    calibration_.worker(worker).calibration = -1;
    ContinueSuiteSearch(now);
    return;
  }
  FollowStanding(standing_.DropWorkOf(worker, why, now), now);
  if (worker == calibration_.reference_worker()) return;  // The reference baselines stay.
  Calibration::Worker& state = calibration_.worker(worker);
  state.calibration = -1;
  state.classified = 0;
  state.must_calibrate = false;
  v1::JobWarning again;
  again.mutable_must_calibrate_again()->set_worker(worker);
  again.mutable_must_calibrate_again()->set_why(why);
  Emit(v1::JOB_EVENT_KIND_DRIFT, std::move(again), nullptr, now);
  v1::DriftEvent* event = &tally_.drift_events.emplace_back();
  event->set_worker(worker);
  *event->mutable_time() = ToProto(now);
  event->set_kind(v1::DRIFT_KIND_IDENTITY_CHANGED);
  event->set_detail(why);
}

}  // namespace kbisect
