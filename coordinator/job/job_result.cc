// Copyright 2026 The kbisect Authors.
//
// BisectJob, composing the result: the culprit (or candidates) once the search is done, the
// interleaved confirmation and its judgement, the medians before and after, warnings about
// several steps and merges, and the terminal state with the worker report.
#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/rpc/proto_time.h"
#include "coordinator/job/bisect_job.h"
#include "coordinator/job/job_text.h"

namespace kbisect {
namespace {

// A culprit explaining less than this share of the GOOD->BAD move suggests several steps.
constexpr double kSingleStepShare = 0.6;

}  // namespace

void BisectJob::MaybeFinish(absl::Time now) {
  if (finished() || status_.state() != v1::JOB_STATE_BISECTING || !search_.Done()) return;
  // Provisional verdicts count once their workers have calibrated; every worker that measured
  // in the job calibrates before it ends (an odd GPU is quarantined and named).
  for (const v1::Probe& probe : status_.probes()) {
    if (probe.provisional()) return;
  }
  for (const auto& [name, state] : calibration_.workers()) {
    if (!state.quarantined && !state.gone && !calibration_.CalibrationDone(name) &&
        HoldsUnsettledProbes(name)) {
      return;
    }
  }
  const std::vector<int> candidates = search_.Candidates();
  const int last_good = search_.last_good();
  const int first_bad = search_.first_bad();
  *status_.mutable_last_good() = commits_[last_good];
  for (int index : candidates) status_.add_candidates(commits_[index].sha());
  status_.set_before(MedianAt(last_good));
  status_.set_after(MedianAt(first_bad));
  status_.set_culprit_regression_pct(
      RegressionPercent(status_.before(), status_.after(), status_.direction()));
  if (candidates.size() == 1 && !pass_fail_) {
    const double total = status_.baseline().bad().median() - status_.baseline().good().median();
    const double share = total == 0 ? 1 : (status_.after() - status_.before()) / total;
    v1::Culprit* step = status_.add_culprits();
    *step->mutable_commit() = commits_[first_bad];
    step->set_before(status_.before());
    step->set_after(status_.after());
    step->set_regression_pct(status_.culprit_regression_pct());
    step->set_share_of_total(share);
    if (share < kSingleStepShare) {
      status_.set_multiple_steps(true);
      status_.add_warnings(MultipleStepsText(share, status_.spec().all_culprits(),
                                             commits_[first_bad].sha(), status_.bad_sha(),
                                             status_.good_sha(), commits_[last_good].sha()));
    }
  }
  if (candidates.size() == 1 && commits_[first_bad].is_merge()) {
    status_.add_warnings(
        MergeCulpritText(commits_[first_bad].sha(), status_.spec().descend_merges()));
  }
  if (candidates.size() == 1 && status_.spec().confirm() && !pass_fail_) {
    // Re-measure last-good and culprit interleaved (A/B/A/B) on one worker before blaming.
    status_.set_state(v1::JOB_STATE_CONFIRMING);
    const std::string id =
        book_.NewTask(v1::PROBE_KIND_CONFIRM, first_bad, max_round_recorded_ + 1);
    v1::Task& task = book_.at(id).task;
    task.set_paired_commit_sha(commits_[last_good].sha());
    task.set_runs(std::max(5, status_.spec().runs_per_commit() * 2));
    book_.QueueFront(id);
    Emit(v1::JOB_EVENT_KIND_WARNING,
         ConfirmingText(commits_[last_good].sha(), commits_[first_bad].sha()), nullptr, now);
    return;
  }
  FinishWithCandidates(now);
}

void BisectJob::FinishWithCandidates(absl::Time now) {
  const std::vector<int> candidates = search_.Candidates();
  const int last_good = search_.last_good();
  const int first_bad = search_.first_bad();
  if (candidates.size() == 1) {
    *status_.mutable_culprit() = commits_[first_bad];
    status_.set_cause(v1::CAUSE_REAL_REGRESSION);
    Finish(v1::OUTCOME_CULPRIT_FOUND, "", now);
  } else if (static_cast<int>(candidates.size()) <= kMaxReportedCandidates) {
    status_.set_cause(v1::CAUSE_REAL_REGRESSION);
    Finish(v1::OUTCOME_CANDIDATES_FOUND, "", now);
  } else {
    Finish(v1::OUTCOME_INCONCLUSIVE,
           InconclusiveText(static_cast<int>(candidates.size()) - 1, commits_[last_good].sha(),
                            commits_[first_bad].sha()),
           now);
  }
}

void BisectJob::ConcludeConfirmation(const v1::Probe& probe, const v1::TaskResult& result,
                                     absl::Time now) {
  v1::Confirmation* confirmation = status_.mutable_confirmation();
  confirmation->set_worker(probe.worker());
  *confirmation->mutable_culprit_samples() = result.samples();
  *confirmation->mutable_last_good_samples() = result.paired_samples();
  std::string verdict;
  if (result.outcome() == v1::TASK_OUTCOME_SUCCEEDED && result.samples_size() > 0 &&
      result.paired_samples_size() > 0) {
    const ConfirmationJudgement judgement =
        JudgeConfirmation(result.paired_samples(), result.samples(),
                          status_.baseline().bad().median() > status_.baseline().good().median());
    if (judgement.measured) {
      confirmation->set_ratio(judgement.ratio);
      confirmation->set_ci_low(judgement.ci_low);
      confirmation->set_ci_high(judgement.ci_high);
      confirmation->set_confirmed(judgement.confirmed);
      status_.set_before(judgement.last_good_median);
      status_.set_after(judgement.culprit_median);
      status_.set_culprit_regression_pct(
          RegressionPercent(status_.before(), status_.after(), status_.direction()));
      verdict = ConfirmationVerdictText(judgement, probe.worker());
    }
  } else {
    verdict = ConfirmationFailedText(result.message());
  }
  if (confirmation->confirmed()) {
    Emit(v1::JOB_EVENT_KIND_WARNING, ConfirmedText(verdict), nullptr, now);
    FinishWithCandidates(now);
    return;
  }
  Finish(v1::OUTCOME_INCONCLUSIVE,
         UnconfirmedText(commits_[search_.first_bad()].sha(), commits_[search_.last_good()].sha(),
                         verdict),
         now);
}

double BisectJob::MedianAt(int index) const {
  // The reference baselines at the ends; inside, the probe that decided the commit, scaled to the
  // reference worker by the ratio of the GOOD calibrations (workers' offsets cancel out).
  if (index == 0 && calibration_.good_probe() >= 0) {
    return book_.probe(calibration_.good_probe()).median();
  }
  if (index == status_.commit_count() && calibration_.bad_probe() >= 0) {
    return calibration_.ReferenceBadMedian();
  }
  for (const v1::Probe& probe : status_.probes()) {
    if (probe.index() != index || probe.kind() != v1::PROBE_KIND_BISECT ||
        (probe.verdict() != v1::VERDICT_GOOD && probe.verdict() != v1::VERDICT_BAD)) {
      continue;
    }
    return calibration_.InReferenceFrame(probe.worker(), probe.median());
  }
  return 0;
}

void BisectJob::Finish(v1::Outcome outcome, const std::string& error, absl::Time now) {
  for (auto& [id, entry] : book_.tasks()) {
    if (entry.done) continue;
    if (entry.active) to_cancel_.push_back(id);
    entry.done = true;
    entry.active = false;
    v1::Probe& probe = ProbeOf(entry);
    if (probe.state() != v1::PROBE_STATE_FINISHED) {
      probe.set_state(v1::PROBE_STATE_CANCELLED);
      status_.mutable_progress()->set_probes_cancelled(status_.progress().probes_cancelled() + 1);
    }
  }
  book_.ClearQueue();
  status_.set_status(outcome);
  status_.set_error(error);
  switch (outcome) {
    case v1::OUTCOME_CANCELLED:
      status_.set_state(v1::JOB_STATE_CANCELLED);
      break;
    case v1::OUTCOME_ERROR:
      status_.set_state(v1::JOB_STATE_FAILED);
      break;
    default:
      status_.set_state(v1::JOB_STATE_DONE);
  }
  status_.set_wall_seconds(absl::ToDoubleSeconds(now - start_time_));
  calibration_.FillWorkerReport(&status_);
  int throttled = 0;
  int discarded = 0;
  for (const v1::Probe& probe : status_.probes()) {
    for (const v1::RunRecord& run : probe.runs()) {
      if (!run.gpu_state().throttled()) continue;
      ++throttled;
      discarded += run.has_value() ? 0 : 1;
    }
  }
  if (throttled > 0) status_.add_warnings(ThrottledText(throttled, discarded));
  *status_.mutable_finish_time() = ToProto(now);
  UpdateProgress();
  Emit(v1::JOB_EVENT_KIND_FINISHED, FinishedText(status_, error), nullptr, now);
}

}  // namespace kbisect
