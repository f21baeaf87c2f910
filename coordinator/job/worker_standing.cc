// Copyright 2026 The kbisect Authors.
#include "coordinator/job/worker_standing.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/job/job_text.h"
#include "coordinator/job/probe_classifier.h"

namespace kbisect {
namespace {

using TaskEntry = ProbeBook::TaskEntry;

}  // namespace

bool WorkerStanding::Bisecting() const { return !pass_fail_ && frame_->bisecting(); }

std::optional<RestatedBad> WorkerStanding::RestateBad() {
  if (!Bisecting()) return std::nullopt;
  const std::string bad_worker = calibration_->BadWorker();
  if (calibration_->bad_offset_checked() || !calibration_->CalibrationDone(bad_worker)) {
    return std::nullopt;
  }
  calibration_->set_bad_offset_checked(true);
  if (!calibration_->HasOffset(bad_worker)) return std::nullopt;
  // BAD was measured on a GPU with an offset: in the reference's frame it is another value, and
  // every verdict judged against it is judged again.
  RestatedBad restated;
  restated.samples = calibration_->ReferenceBadSamples();
  const double own = book_->probe(calibration_->worker(bad_worker).calibration).median();
  const double reference = book_->probe(calibration_->good_probe()).median();
  v1::JobWarning::BadWorkerOffset& fact = *restated.warning.mutable_bad_worker_offset();
  fact.set_worker(bad_worker);
  fact.set_offset_fraction(own / reference - 1);
  fact.set_bad_median(MedianOrZero(restated.samples));
  fact.set_unit(frame_->metric_unit);
  return restated;
}

void WorkerStanding::SettleProvisional(absl::Time now) {
  if (!Bisecting()) return;
  std::vector<int> judge_again;
  for (int i = 0; i < book_->probe_count(); ++i) {
    v1::Probe& probe = book_->mutable_probe(i);
    if (!probe.provisional() || calibration_->IsProvisional(probe)) continue;
    // The verdict counts if it holds now that its worker has calibrated: judged against its own
    // GOOD when that is off the reference's, else against the pool, which has grown sharper
    // since. Otherwise it is judged again, with more runs if the classifier asks for them.
    const ProbeClassification c =
        calibration_->HasOffset(probe.worker()) && !calibration_->WorkerReady(probe.worker())
            ? ProbeClassification{}
            : calibration_->Judge(probe);
    if (c.more_runs == 0 && c.verdict == probe.verdict()) {
      probe.set_provisional(false);
    } else {
      judge_again.push_back(i);
    }
  }
  if (!judge_again.empty()) ledger_->Retract(judge_again, /*probe_again=*/false, "", now);
}

StandingStep WorkerStanding::RemeasureBad(const std::string& why, absl::Time now) {
  StandingStep step;
  RemeasureBadInto(why, now, &step);
  return step;
}

void WorkerStanding::RemeasureBadInto(const std::string& why, absl::Time now, StandingStep* step) {
  const int bad_probe = calibration_->bad_probe();
  if (bad_probe < 0) return;
  // BAD not measured yet: its queued or retried task is still to come, for any worker. More runs
  // of it (an extension, pinned to the worker that lost its standing) are cancelled instead,
  // and BAD is measured again from the start.
  if (std::any_of(book_->tasks().begin(), book_->tasks().end(), [&](const auto& task) {
        const TaskEntry& entry = task.second;
        return !entry.done && entry.probe == bad_probe && entry.pinned_worker.empty();
      })) {
    return;
  }
  for (auto& [id, entry] : book_->tasks()) {
    if (!entry.done && entry.probe == bad_probe) {
      book_->CancelTask(entry, id, DiscardedText(why), now, &step->to_cancel);
    }
  }
  const std::string id = book_->NewTask(v1::PROBE_KIND_BASELINE_BAD, frame_->commit_count, 0);
  calibration_->SetBadProbe(book_->at(id).probe);
  calibration_->set_bad_offset_checked(false);
  book_->QueueFront(id);
  step->back_to_baselines = true;
  ledger_->RetractAll(now);
  step->warnings.emplace_back().mutable_bad_remeasured()->set_why(why);
}

StandingStep WorkerStanding::SharpenCalibrations(absl::Time now) {
  StandingStep step;
  for (auto& [worker, state] : calibration_->workers()) {
    if (state.quarantined || state.calibration < 0) continue;
    const v1::Probe& calibration = book_->probe(state.calibration);
    if (calibration.state() != v1::PROBE_STATE_FINISHED || !IsMeasured(calibration, pass_fail_))
      continue;
    const int missing = calibration_->CalibrationRuns() - calibration.samples_size();
    if (missing <= 0 || !calibration_->HasOffset(worker)) continue;
    if (state.gone) {
      // It cannot re-measure: what it measured cannot be judged; others probe it again.
      DropWorkInto(worker, "its worker left before its calibration was complete", now,
                   /*keep_measured=*/false, &step);
    } else {
      book_->Extend(state.calibration, missing);
    }
  }
  return step;
}

StandingStep WorkerStanding::DropWorkOf(const std::string& worker, const std::string& why,
                                        absl::Time now, bool keep_measured) {
  StandingStep step;
  DropWorkInto(worker, why, now, keep_measured, &step);
  return step;
}

void WorkerStanding::DropWorkInto(const std::string& worker, const std::string& why, absl::Time now,
                                  bool keep_measured, StandingStep* step) {
  // Confirmation pairs belong to no worker: one waiting in the queue (a retry whose row still
  // names the worker that lost it) stays for any other, and one the worker was measuring is
  // queued again, so the confirmation still gets its pairs and is judged when they are in.
  std::vector<int> pairs_again;
  for (auto& [id, entry] : book_->tasks()) {
    v1::Probe& probe = book_->ProbeOf(entry);
    if (entry.done || probe.worker() != worker || entry.probe == calibration_->bad_probe()) {
      continue;
    }
    if (entry.task.kind() == v1::PROBE_KIND_CONFIRM) {
      if (!entry.active) continue;
      if (confirmation_->StartedFor(entry.task))
        pairs_again.push_back(std::max(1, entry.task.runs()));
    }
    if (entry.task.kind() == v1::PROBE_KIND_BISECT)
      ledger_->search().Abandon(entry.task.commit_index());
    book_->CancelTask(entry, id, DiscardedText(why), now, &step->to_cancel);
  }
  for (int pairs : pairs_again) confirmation_->QueueTasks(1, pairs, ledger_->max_round() + 1);
  // A calibration cancelled with its worker (an extension it did not measure) is measured again,
  // from the start, if the worker comes back; until then the worker has none.
  if (const Calibration::Worker* found = calibration_->Find(worker);
      found != nullptr && !found->quarantined && found->calibration >= 0 &&
      book_->probe(found->calibration).state() == v1::PROBE_STATE_CANCELLED) {
    calibration_->worker(worker).calibration = -1;
  }
  // Finished measurements stay when the worker's calibration can still judge them.
  if (keep_measured && calibration_->CalibrationUsable(worker)) return;
  // Its provisional verdicts will never be confirmed: their commits are probed again.
  ledger_->Retract(book_->ProbePositions([&](const v1::Probe& probe) {
    return probe.provisional() && probe.worker() == worker;
  }),
                   /*probe_again=*/true, why, now);
  ledger_->DropAwaiting([&](int position) {
    v1::Probe& probe = book_->mutable_probe(position);
    if (probe.worker() != worker) return false;
    ledger_->search().Abandon(probe.index());
    probe.set_state(v1::PROBE_STATE_CANCELLED);
    probe.set_message(DiscardedText(why));
    return true;
  });
}

StandingStep WorkerStanding::ExtendBaselines(int runs, absl::Time now) {
  StandingStep step;
  // A baseline whose worker left cannot get more runs there (a task pinned to it would wait for
  // ever): the reference moves to another calibrated worker, whose GOOD gets them, and BAD is
  // measured again by any worker.
  const Calibration::Worker* reference = calibration_->Find(calibration_->reference_worker());
  if (reference != nullptr && reference->gone) calibration_->ResetReference();
  if (calibration_->good_probe() >= 0) book_->Extend(calibration_->good_probe(), runs);
  const std::string bad_worker = calibration_->BadWorker();
  const Calibration::Worker* bad = calibration_->Find(bad_worker);
  if (bad != nullptr && bad->gone) {
    RemeasureBadInto(absl::StrCat("its worker ", bad_worker, " left before it could measure more"),
                     now, &step);
  } else {
    book_->Extend(calibration_->bad_probe(), runs);
  }
  return step;
}

StandingStep WorkerStanding::LosePinnedTask(TaskEntry& entry, const std::string& why,
                                            absl::Time now) {
  StandingStep step;
  v1::Probe& probe = book_->ProbeOf(entry);
  // Work that only its worker could do (a calibration, a control, a re-measurement against
  // its calibration): the worker is gone, so is what depended on it. Its commits are probed
  // again by others; it calibrates again if it comes back.
  const std::string worker = entry.pinned_worker;
  // An extension of BAD went with its worker, and BAD's samples with it: BAD is measured
  // again, by any worker (nothing else would ever queue it).
  const bool bad_lost = entry.probe == calibration_->bad_probe();
  entry.done = true;
  probe.set_state(v1::PROBE_STATE_CANCELLED);
  probe.set_message(LostWithWorkerText(why));
  if (entry.task.kind() == v1::PROBE_KIND_BISECT) {
    ledger_->search().Abandon(entry.task.commit_index());
  }
  Calibration::Worker& state = calibration_->worker(worker);
  if (state.calibration == entry.probe) state.calibration = -1;
  state.gone = true;
  DropWorkInto(worker, absl::StrCat("worker lost: ", why), now, /*keep_measured=*/true, &step);
  if (bad_lost) {
    RemeasureBadInto(absl::StrCat("its worker ", worker, " was lost measuring it"), now, &step);
  }
  return step;
}

}  // namespace kbisect
