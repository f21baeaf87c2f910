// Copyright 2026 The kbisect Authors.
//
// BisectJob, composing the result: the culprit (or candidates) once the search is done, the
// interleaved confirmation and its judgement, the medians before and after, warnings about
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

bool BisectJob::Settled() const {
  // Provisional verdicts count once their workers have calibrated; every worker that measured
  // in the job calibrates before it ends (an odd GPU is quarantined and named).
  for (const v1::Probe& probe : status_.probes()) {
    if (probe.provisional()) return false;
  }
  const std::set<std::string> unsettled = UnsettledWorkers();
  for (const auto& [name, state] : calibration_.workers()) {
    if (!state.quarantined && !state.gone && !calibration_.CalibrationDone(name) &&
        unsettled.count(name) > 0) {
      return false;
    }
  }
  return true;
}

bool BisectJob::ConfirmationTasksPending() const {
  for (const auto& [id, entry] : book_.tasks()) {
    if (!entry.done && entry.task.kind() == v1::PROBE_KIND_CONFIRM) return true;
  }
  return false;
}

void BisectJob::MaybeFinish(absl::Time now) {
  if (finished() || status_.state() != v1::JOB_STATE_BISECTING) return;
  // A verdict taken back (a worker lost, a calibration) reopens the search: the early
  // confirmation's pairs still count if the search closes on the same two commits again, and
  // are dropped once it cannot.
  if (early_confirmation_ && !EarlyConfirmationTargetPossible()) AbortEarlyConfirmation(now);
  if (!search_.Done()) return;
  const bool wants_confirmation =
      search_.Candidates().size() == 1 && status_.spec().confirm() && !pass_fail_;
  if (!Settled()) {
    // The calibrations still owed run beside the confirmation's pairs: both take a span.
    if (wants_confirmation && !early_confirmation_) StartConfirmation(now, /*early=*/true);
    return;
  }
  // The culprit must reach the confidence first (boundary commits run again: --confidence).
  if (CulpritNeedsRuns(now)) return;
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
  if (wants_confirmation && early_confirmation_) {
    // Started while the calibrations ran: judged once its last pairs are in.
    early_confirmation_ = false;
    status_.set_state(v1::JOB_STATE_CONFIRMING);
    // Pairs measured ahead for this culprit since (the search reopened meanwhile) count; those
    // of other commits are cancelled, and none is waited for.
    AdoptSpeculativePairs(status_.mutable_confirmation(), now);
    if (!ConfirmationTasksPending()) JudgeConfirmationNow(now);
    return;
  }
  if (wants_confirmation) {
    StartConfirmation(now, /*early=*/false);
    return;
  }
  FinishWithCandidates(now);
}

bool BisectJob::EarlyConfirmationTargetPossible() const {
  if (search_.Done()) {
    return search_.last_good() == confirm_last_good_ && search_.first_bad() == confirm_first_bad_;
  }
  return search_.last_good() <= confirm_last_good_ && confirm_first_bad_ <= search_.first_bad();
}

void BisectJob::AbortEarlyConfirmation(absl::Time now) {
  // A calibration changed a verdict: the culprit the pairs measure may no longer be it.
  early_confirmation_ = false;
  for (auto& [id, entry] : book_.tasks()) {
    if (entry.done || entry.task.kind() != v1::PROBE_KIND_CONFIRM) continue;
    book_.CancelTask(entry, id, ConfirmationRestartText(), now, &to_cancel_);
  }
  status_.clear_confirmation();
  confirmation_failure_.clear();
  Emit(v1::JOB_EVENT_KIND_WARNING, ConfirmationRestartText(), nullptr, now);
}

std::vector<ConfirmationSet> BisectJob::ReusableConfirmationSets() const {
  // The samples the search has of last-good and culprit, per worker: the probes that decided the
  // two commits, or the reference baselines at the ends.
  const int last_good = search_.last_good();
  const int first_bad = search_.first_bad();
  std::map<std::string, ConfirmationSet> by_worker;
  auto add = [&](const v1::Probe& probe, bool culprit_side) {
    if (probe.state() != v1::PROBE_STATE_FINISHED || probe.samples_size() == 0) return;
    ConfirmationSet& set = by_worker[probe.worker()];
    set.worker = probe.worker();
    std::vector<double>& side = culprit_side ? set.culprit : set.last_good;
    side.insert(side.end(), probe.samples().begin(), probe.samples().end());
  };
  for (const v1::Probe& probe : status_.probes()) {
    if (probe.kind() == v1::PROBE_KIND_BISECT && probe.index() == last_good &&
        probe.verdict() == v1::VERDICT_GOOD) {
      add(probe, false);
    } else if (probe.kind() == v1::PROBE_KIND_BISECT && probe.index() == first_bad &&
               probe.verdict() == v1::VERDICT_BAD) {
      add(probe, true);
    }
  }
  if (last_good == 0 && calibration_.good_probe() >= 0) {
    add(book_.probe(calibration_.good_probe()), false);
  }
  if (first_bad == status_.commit_count() && calibration_.bad_probe() >= 0) {
    add(book_.probe(calibration_.bad_probe()), true);
  }
  std::vector<ConfirmationSet> sets;
  for (auto& [worker, set] : by_worker) {
    if (set.pairs() > 0) sets.push_back(std::move(set));
  }
  return sets;
}

void BisectJob::StartConfirmation(absl::Time now, bool early) {
  if (!early) status_.set_state(v1::JOB_STATE_CONFIRMING);
  v1::Confirmation* confirmation = status_.mutable_confirmation();
  confirmation->Clear();
  int reused = 0;
  for (const ConfirmationSet& set : ReusableConfirmationSets()) {
    v1::ConfirmationPairs* out = confirmation->add_sets();
    out->set_worker(set.worker);
    out->mutable_last_good_samples()->Assign(set.last_good.begin(), set.last_good.end());
    out->mutable_culprit_samples()->Assign(set.culprit.begin(), set.culprit.end());
    reused += set.pairs();
  }
  confirmation->set_reused_pairs(reused);
  const ConfirmationPlan plan = PlanConfirmationNow(reused);
  if (plan.tasks == 0) {
    // Nothing to measure: judged from the search's samples, once they are final.
    CancelSpeculation(now);
    if (early) {
      status_.clear_confirmation();
    } else {
      JudgeConfirmationNow(now);
    }
    return;
  }
  // Pairs measured ahead in the last round count; the other commits' are cancelled.
  const int speculative = AdoptSpeculativePairs(confirmation, now);
  const ConfirmationPlan rest = LessSpeculativePairs(plan, speculative);
  if (early) {
    early_confirmation_ = true;
    confirm_last_good_ = search_.last_good();
    confirm_first_bad_ = search_.first_bad();
  }
  if (rest.tasks > 0) QueueConfirmationTasks(rest.tasks, rest.pairs_per_task);
  Emit(v1::JOB_EVENT_KIND_WARNING,
       ConfirmingText(commits_[search_.last_good()].sha(), commits_[search_.first_bad()].sha(),
                      rest.tasks, rest.pairs_per_task, reused, speculative),
       nullptr, now);
  if (!early && !ConfirmationTasksPending()) JudgeConfirmationNow(now);
}

ConfirmationPlan BisectJob::PlanConfirmationNow(int reused) const {
  const std::vector<double> good = calibration_.PooledSamples(v1::VERDICT_GOOD);
  const std::vector<double> bad = calibration_.PooledSamples(v1::VERDICT_BAD);
  const double sigma = calibration_.JobNoise();
  const double step = MedianOrZero(bad) - MedianOrZero(good);
  const int needed = ConfirmationPairsNeeded(sigma, step, status_.spec().runs_per_commit(),
                                             status_.spec().max_runs());
  return PlanConfirmation(needed, reused, sigma, step, ActiveWorkers());
}

std::optional<v1::ConfirmationPairs> BisectJob::InterleavedPairsOf(const std::string& worker,
                                                                   const v1::TaskResult& result) {
  if (result.outcome() != v1::TASK_OUTCOME_SUCCEEDED || result.samples_size() == 0 ||
      result.paired_samples_size() == 0) {
    return std::nullopt;
  }
  v1::ConfirmationPairs set;
  set.set_worker(worker);
  set.set_interleaved(true);
  *set.mutable_last_good_samples() = result.paired_samples();
  *set.mutable_culprit_samples() = result.samples();
  return set;
}

int BisectJob::AddInterleavedPairs(const v1::ConfirmationPairs& set) {
  v1::Confirmation* confirmation = status_.mutable_confirmation();
  *confirmation->add_sets() = set;
  for (double v : set.last_good_samples()) confirmation->add_last_good_samples(v);
  for (double v : set.culprit_samples()) confirmation->add_culprit_samples(v);
  const int fresh = std::min(set.last_good_samples_size(), set.culprit_samples_size());
  confirmation->set_fresh_pairs(confirmation->fresh_pairs() + fresh);
  if (confirmation->worker().empty()) confirmation->set_worker(set.worker());
  return fresh;
}

void BisectJob::QueueMoreConfirmationPairs(int pairs, int reused, absl::Time now) {
  const ConfirmationPlan plan = PlanConfirmation(pairs, 0, 1, 1, ActiveWorkers());
  QueueConfirmationTasks(plan.tasks, plan.pairs_per_task);
  Emit(v1::JOB_EVENT_KIND_WARNING,
       ConfirmingText(commits_[search_.last_good()].sha(), commits_[search_.first_bad()].sha(),
                      plan.tasks, plan.pairs_per_task, reused, 0),
       nullptr, now);
}

bool BisectJob::RemeasureQuarantinedPairs(absl::Time now) {
  v1::Confirmation* confirmation = status_.mutable_confirmation();
  google::protobuf::RepeatedPtrField<v1::ConfirmationPairs> kept;
  int dropped = 0;
  for (v1::ConfirmationPairs& pairs : *confirmation->mutable_sets()) {
    const Calibration::Worker* worker = calibration_.Find(pairs.worker());
    if (pairs.interleaved() && worker != nullptr && worker->quarantined) {
      dropped += std::min(pairs.last_good_samples_size(), pairs.culprit_samples_size());
      continue;
    }
    *kept.Add() = std::move(pairs);
  }
  if (dropped == 0) return false;
  // Bounded: each time, the pairs came from a GPU now quarantined, which gets no more work.
  *confirmation->mutable_sets() = std::move(kept);
  confirmation->set_fresh_pairs(std::max(0, confirmation->fresh_pairs() - dropped));
  confirmation->clear_worker();
  QueueMoreConfirmationPairs(dropped, confirmation->reused_pairs(), now);
  return true;
}

void BisectJob::QueueConfirmationTasks(int tasks, int pairs_per_task) {
  // Re-measure last-good and culprit interleaved (A/B/A/B), each task on whichever worker takes
  // it: the pairs of one task cancel that worker's offset.
  for (int i = 0; i < tasks; ++i) {
    const std::string id =
        book_.NewTask(v1::PROBE_KIND_CONFIRM, search_.first_bad(), max_round_recorded_ + 1);
    v1::Task& task = book_.at(id).task;
    task.set_paired_commit_sha(commits_[search_.last_good()].sha());
    task.set_runs(pairs_per_task);
    book_.QueueFront(id);
  }
}

void BisectJob::FinishWithCandidates(absl::Time now) {
  const std::vector<int> candidates = search_.Candidates();
  const int last_good = search_.last_good();
  const int first_bad = search_.first_bad();
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
    SetCulpritProbability(calibration_, pass_fail_, search_, commits_, &status_);
    Finish(v1::OUTCOME_CULPRIT_FOUND, "", now);
  } else if (static_cast<int>(candidates.size()) <= kMaxReportedCandidates) {
    status_.set_cause(v1::CAUSE_REAL_REGRESSION);
    SetCulpritProbability(calibration_, pass_fail_, search_, commits_, &status_);
    Finish(v1::OUTCOME_CANDIDATES_FOUND, "", now);
  } else {
    Finish(v1::OUTCOME_INCONCLUSIVE,
           InconclusiveText(static_cast<int>(candidates.size()) - 1, commits_[last_good].sha(),
                            commits_[first_bad].sha()),
           now);
  }
}

void BisectJob::ConcludeConfirmation(const v1::Probe& probe, const v1::Task& task,
                                     const v1::TaskResult& result, absl::Time now) {
  if (!ConfirmationStartedFor(task)) {
    // Measured ahead, in the search's last round: kept for its culprit's confirmation.
    KeepSpeculativePairs(probe, task, result);
    return;
  }
  if (std::optional<v1::ConfirmationPairs> set = InterleavedPairsOf(probe.worker(), result)) {
    AddInterleavedPairs(*set);
  } else {
    confirmation_failure_ = result.message();
  }
  if (ConfirmationTasksPending()) return;  // More to come.
  if (status_.state() != v1::JOB_STATE_CONFIRMING) {
    MaybeFinish(now);  // Started early: judged once the calibrations have settled.
    return;
  }
  JudgeConfirmationNow(now);
}

void BisectJob::JudgeConfirmationNow(absl::Time now) {
  v1::Confirmation* confirmation = status_.mutable_confirmation();
  std::vector<ConfirmationSet> sets;
  bool any_fresh = false;
  for (const v1::ConfirmationPairs& pairs : confirmation->sets()) {
    // A GPU quarantined since cannot vouch for its pairs.
    const Calibration::Worker* worker = calibration_.Find(pairs.worker());
    if (worker != nullptr && worker->quarantined) continue;
    ConfirmationSet set;
    set.worker = pairs.worker();
    set.interleaved = pairs.interleaved();
    set.last_good.assign(pairs.last_good_samples().begin(), pairs.last_good_samples().end());
    set.culprit.assign(pairs.culprit_samples().begin(), pairs.culprit_samples().end());
    any_fresh = any_fresh || set.interleaved;
    sets.push_back(std::move(set));
  }
  const bool fresh_expected = !confirmation_failure_.empty() || confirmation->fresh_pairs() > 0;
  if (fresh_expected && !any_fresh && confirmation_failure_.empty() &&
      RemeasureQuarantinedPairs(now)) {
    return;  // Every fresh pair came from a GPU quarantined since: measured again elsewhere.
  }
  std::string verdict;
  ConfirmationJudgement judgement;
  if (fresh_expected && !any_fresh) {
    verdict = ConfirmationFailedText(confirmation_failure_);
  } else {
    judgement = JudgeConfirmationSets(
        sets, status_.baseline().bad().median() > status_.baseline().good().median());
    if (judgement.measured) {
      std::vector<std::string> workers;
      for (const ConfirmationSet& set : sets) workers.push_back(set.worker);
      confirmation->set_ratio(judgement.ratio);
      confirmation->set_ci_low(judgement.ci_low);
      confirmation->set_ci_high(judgement.ci_high);
      confirmation->set_confirmed(judgement.confirmed);
      if (confirmation->worker().empty() && !workers.empty()) {
        confirmation->set_worker(workers.front());
      }
      // Before stays the search's median at last-good (the reference's frame); after follows
      // from the confirmed ratio.
      status_.set_after(status_.before() * judgement.ratio);
      status_.set_culprit_regression_pct(
          RegressionPercent(status_.before(), status_.after(), status_.direction()));
      verdict = ConfirmationVerdictText(judgement, workers, confirmation->fresh_pairs(),
                                        confirmation->reused_pairs());
    }
  }
  if (confirmation->confirmed()) {
    Emit(v1::JOB_EVENT_KIND_WARNING, ConfirmedText(verdict), nullptr, now);
    FinishWithCandidates(now);
    return;
  }
  // Not confirmed yet: when the estimate points the regression's way and runs are left, measure
  // as many pairs again (the interval narrows with more pairs); otherwise it did not reproduce.
  const bool worse_is_up = status_.baseline().bad().median() > status_.baseline().good().median();
  const bool leaning =
      judgement.measured && (worse_is_up ? judgement.ratio > 1 : judgement.ratio < 1);
  const int pairs = confirmation->fresh_pairs() + confirmation->reused_pairs();
  if (leaning && pairs < status_.spec().max_runs()) {
    QueueMoreConfirmationPairs(std::min(std::max(1, pairs), status_.spec().max_runs() - pairs), 0,
                               now);
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
  UpdateProgress();
  Emit(v1::JOB_EVENT_KIND_FINISHED, FinishedText(status_, error), nullptr, now);
}

}  // namespace kbisect
