// Copyright 2026 The kbisect Authors.
//
// BisectJob, composing the result: the culprit (or candidates) once the search is done, acting
// on the confirmation's steps (ConfirmationStage), the medians before and after, warnings about
// several steps and merges, and the terminal state with the worker report.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/rpc/proto_time.h"
#include "common/search/culprit_posterior.h"
#include "coordinator/job/bisect_job.h"
#include "coordinator/job/confidence_stop.h"
#include "coordinator/job/flaky_verdicts.h"
#include "coordinator/job/job_text.h"
#include "coordinator/job/measurement_changes.h"

namespace kbisect {
namespace {

// A culprit explaining less than this share of the GOOD->BAD move suggests several steps.
constexpr double kSingleStepShare = 0.6;

// The culprit posterior reports at most this many positions, each at least this probable.
constexpr int kPosteriorPositions = 5;
constexpr double kPosteriorMinProbability = 0.001;

// Sets the status's culprit_probability (the posterior mass of the search's candidates) and
// culprit_posterior from every measurement of the job.
void SetCulpritProbability(const Calibration& calibration, bool pass_fail,
                           const BisectSearch& search, const std::vector<v1::CommitRef>& commits,
                           v1::JobStatus* status) {
  // The posterior's model is a first-parent path, where bad is monotone; over a commit graph it
  // would misplace the mass, so a graph search reports no probability (docs/decisions.md 151).
  if (search.graph() != nullptr) return;
  // A flaky test: every run counts, and the two fail rates are estimated (flaky_verdicts.h).
  const bool flaky = pass_fail && status->spec().flaky();
  const absl::StatusOr<CulpritPosterior> posterior =
      flaky ? ComputeCulpritPosterior(status->commit_count(), FlakyEvidence(*status, calibration),
                                      FlakyPosteriorOptions())
            : ComputeCulpritPosterior(status->commit_count(),
                                      PosteriorEvidence(*status, calibration, pass_fail,
                                                        search.last_good(), search.first_bad()));
  if (!posterior.ok()) return;  // Nothing to say (no commits); the answer stands.
  if (flaky) {
    status->set_good_fail_rate(posterior->good_fail_rate);
    status->set_bad_fail_rate(posterior->bad_fail_rate);
  }
  status->set_culprit_probability(posterior->MassOf(search.Candidates()));
  status->clear_culprit_posterior();
  for (int k : posterior->Top(kPosteriorPositions, kPosteriorMinProbability)) {
    v1::PositionProbability* position = status->add_culprit_posterior();
    position->set_sha(commits[k].sha());
    position->set_index(k);
    position->set_probability(posterior->probability[k]);
  }
}

}  // namespace

void BisectJob::MaybeFinish(absl::Time now) {
  if (finished() || status_.state() != v1::JOB_STATE_BISECTING) return;
  // A verdict taken back (a worker lost, a calibration) reopens the search: the early
  // confirmation's pairs still count if the search closes on the same two commits again, and
  // are dropped once it cannot.
  if (confirmation_.early()) {
    FollowConfirmation(confirmation_.AbortIfTargetLost(ConfirmationNow(now)), now);
  }
  if (!ledger_.search().Done()) return;
  const bool wants_confirmation =
      ledger_.search().Candidates().size() == 1 && status_.spec().confirm() && !pass_fail_;
  if (!calibration_.Settled(ledger_.awaiting())) {
    // The calibrations still owed run beside the confirmation's pairs: both take a span.
    if (wants_confirmation && !confirmation_.early()) {
      FollowConfirmation(confirmation_.Start(/*early=*/true, ConfirmationNow(now)), now);
    }
    return;
  }
  // The culprit must reach the confidence first (boundary commits run again: --confidence).
  const CulpritConfidence::EndCheck check = confidence_.CheckCulprit();
  if (!check.warning.empty()) status_.add_warnings(check.warning);
  if (check.extend_row >= 0) {
    events_.Emit(v1::JOB_EVENT_KIND_WARNING, check.event, nullptr, now);
    book_.Extend(check.extend_row, check.more_runs);
  }
  if (check.wait) return;
  const std::vector<int> candidates = ledger_.search().Candidates();
  const int last_good = ledger_.search().last_good();
  const int first_bad = ledger_.search().first_bad();
  *status_.mutable_last_good() = commits_[last_good];
  for (int index : candidates) status_.add_candidates(commits_[index].sha());
  status_.set_before(calibration_.MedianAt(last_good));
  status_.set_after(calibration_.MedianAt(first_bad));
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
  if (wants_confirmation) {
    status_.set_state(v1::JOB_STATE_CONFIRMING);
    // Started while the calibrations ran, it is judged once its last pairs are in.
    FollowConfirmation(confirmation_.early()
                           ? confirmation_.CompleteEarly(ConfirmationNow(now))
                           : confirmation_.Start(/*early=*/false, ConfirmationNow(now)),
                       now);
    return;
  }
  FinishWithCandidates(now);
}

void BisectJob::FinishWithCandidates(absl::Time now) {
  const std::vector<int> candidates = ledger_.search().Candidates();
  const int last_good = ledger_.search().last_good();
  const int first_bad = ledger_.search().first_bad();
  if (candidates.size() == 1) {
    *status_.mutable_culprit() = commits_[first_bad];
    status_.set_cause(v1::CAUSE_REAL_REGRESSION);
    // A culprit that changed how the benchmark measures is a method change, named.
    const std::vector<ManifestChange> changes = MethodChangesAt(status_, last_good, first_bad);
    if (!changes.empty()) {
      status_.set_cause(v1::CAUSE_BENCHMARK_METHOD_CHANGE);
      for (const ManifestChange& change : changes) {
        status_.add_measurement_changes(change.Describe());
      }
      status_.add_warnings(MethodChangeText(status_.measurement_changes()));
    }
    SetCulpritProbability(calibration_, pass_fail_, ledger_.search(), commits_, &status_);
    Finish(v1::OUTCOME_CULPRIT_FOUND, "", now);
  } else if (static_cast<int>(candidates.size()) <= kMaxReportedCandidates) {
    status_.set_cause(v1::CAUSE_REAL_REGRESSION);
    SetCulpritProbability(calibration_, pass_fail_, ledger_.search(), commits_, &status_);
    Finish(v1::OUTCOME_CANDIDATES_FOUND, "", now);
  } else {
    Finish(v1::OUTCOME_INCONCLUSIVE,
           InconclusiveText(static_cast<int>(candidates.size()) - 1, commits_[last_good].sha(),
                            commits_[first_bad].sha()),
           now);
  }
}

ConfirmationContext BisectJob::ConfirmationNow(absl::Time now) const {
  ConfirmationContext context;
  context.now = now;
  context.workers = calibration_.ActiveWorkers(status_.spec().max_workers());
  context.round = ledger_.max_round() + 1;
  return context;
}

void BisectJob::FollowConfirmation(ConfirmationStep step, absl::Time now) {
  to_cancel_.insert(to_cancel_.end(), step.cancelled.begin(), step.cancelled.end());
  for (const std::string& warning : step.warnings) {
    events_.Emit(v1::JOB_EVENT_KIND_WARNING, warning, nullptr, now);
  }
  switch (step.next) {
    case ConfirmationStep::Next::kWait:
      break;
    case ConfirmationStep::Next::kSettleSearch:
      MaybeFinish(now);
      break;
    case ConfirmationStep::Next::kConfirmed:
      events_.Emit(v1::JOB_EVENT_KIND_WARNING, ConfirmedText(step.verdict), nullptr, now);
      FinishWithCandidates(now);
      break;
    case ConfirmationStep::Next::kUnconfirmed:
      Finish(v1::OUTCOME_INCONCLUSIVE,
             UnconfirmedText(commits_[ledger_.search().first_bad()].sha(),
                             commits_[ledger_.search().last_good()].sha(), step.verdict),
             now);
      break;
  }
}

void BisectJob::Finish(v1::Outcome outcome, const std::string& error, absl::Time now) {
  for (auto& [id, entry] : book_.tasks()) {
    if (entry.done) continue;
    if (entry.active) to_cancel_.push_back(id);
    entry.done = true;
    book_.Deactivate(id);
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
  ledger_.UpdateProgress();
  events_.Emit(v1::JOB_EVENT_KIND_FINISHED, FinishedText(status_, error), nullptr, now);
}

}  // namespace kbisect
