// Copyright 2026 The kbisect Authors.
#include "coordinator/job/confirmation_stage.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/job/job_text.h"
#include "coordinator/job/probe_classifier.h"

namespace kbisect {
namespace {

// The interleaved pairs of a confirmation task's result; nullopt when it measured none.
std::optional<v1::ConfirmationPairs> InterleavedPairsOf(const std::string& worker,
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

// The pairs `sets` hold together.
int PairsIn(const std::vector<ConfirmationSet>& sets) {
  int pairs = 0;
  for (const ConfirmationSet& set : sets) pairs += set.pairs();
  return pairs;
}

}  // namespace

ConfirmationStage::ConfirmationStage(const JobFrame* frame,
                                     const std::vector<v1::CommitRef>* commits,
                                     const BisectSearch* search, const Calibration* calibration,
                                     const ResultReuse* reuse, ProbeBook* book)
    : frame_(frame),
      commits_(commits),
      search_(search),
      calibration_(calibration),
      reuse_(reuse),
      book_(book) {}

bool ConfirmationStage::HasSpeculationCandidates() const {
  return !SpeculationCandidates(*search_, speculated_).empty();
}

std::vector<std::string> ConfirmationStage::CreateSpeculativeTasks(
    int spare, const ConfirmationContext& context) {
  std::vector<std::string> created;
  // Each candidate's confirmation as Start would plan it were it the culprit.
  std::vector<SpeculationCandidate> candidates;
  for (int culprit : SpeculationCandidates(*search_, speculated_)) {
    const ConfirmationPlan plan =
        PlanNow(ExpectedReusedPairs(culprit - 1, culprit), context.workers);
    candidates.push_back({culprit, plan.tasks * plan.pairs_per_task});
  }
  for (const SpeculationCandidate& candidate : ChooseSpeculation(candidates, spare)) {
    speculated_.insert(candidate.culprit);
    for (int pair = 0; pair < candidate.pairs_needed; ++pair) {
      const std::string id =
          book_->NewTask(v1::PROBE_KIND_CONFIRM, candidate.culprit, context.round);
      v1::Task& task = book_->at(id).task;
      task.set_paired_commit_sha((*commits_)[candidate.culprit - 1].sha());
      task.set_runs(1);  // One pair a task: the pairs of a confirmation spread over workers.
      created.push_back(id);
    }
  }
  return created;
}

int ConfirmationStage::ExpectedReusedPairs(int last_good, int culprit) const {
  // Who measures (or measured) each commit, and how many samples: the probe that decided it,
  // the one in flight, or the reference baseline at an end of the range.
  auto measurer = [&](int index, v1::Verdict verdict) -> std::pair<std::string, int> {
    for (const v1::Probe& probe : book_->rows()) {
      if (probe.kind() != v1::PROBE_KIND_BISECT || probe.index() != index) continue;
      if (probe.state() == v1::PROBE_STATE_FINISHED && probe.verdict() == verdict) {
        return {probe.worker(), probe.samples_size()};
      }
      if (probe.state() == v1::PROBE_STATE_RUNNING) {
        return {probe.worker(), std::max(1, frame_->spec.runs_per_commit())};
      }
    }
    const int baseline = index == 0                      ? calibration_->good_probe()
                         : index == frame_->commit_count ? calibration_->bad_probe()
                                                         : -1;
    if (baseline >= 0) {
      const v1::Probe& probe = book_->probe(baseline);
      return {probe.worker(), probe.samples_size()};
    }
    return {"", 0};
  };
  const auto [good_worker, good_samples] = measurer(last_good, v1::VERDICT_GOOD);
  const auto [bad_worker, bad_samples] = measurer(culprit, v1::VERDICT_BAD);
  const bool one_worker = !good_worker.empty() && good_worker == bad_worker;
  const bool across = !one_worker && !good_worker.empty() && !bad_worker.empty() &&
                      PairsAcross(good_worker, bad_worker);
  int pairs = one_worker || across ? std::min(good_samples, bad_samples) : 0;
  // The pairs earlier jobs measured count for the other workers.
  for (const ConfirmationSet& set : CachedSets(last_good, culprit)) {
    if (!one_worker || set.worker != good_worker) pairs += set.pairs();
  }
  return pairs;
}

std::vector<ConfirmationSet> ConfirmationStage::CachedSets(int last_good, int culprit) const {
  std::vector<ConfirmationSet> sets;
  if (reuse_ == nullptr) return sets;
  for (ResultReuse::CachedPair& pair : reuse_->PairsAt(last_good, culprit)) {
    ConfirmationSet& set = sets.emplace_back();
    set.worker = std::move(pair.worker);
    set.cached_job_id = std::move(pair.job_id);
    set.last_good = std::move(pair.last_good);
    set.culprit = std::move(pair.culprit);
  }
  return sets;
}

std::vector<ConfirmationSet> ConfirmationStage::ReusableSets() const {
  // The samples the search has of last-good and culprit, per worker: the probes that decided the
  // two commits, or the reference baselines at the ends.
  const int last_good = search_->last_good();
  const int first_bad = search_->first_bad();
  std::map<std::string, ConfirmationSet> by_worker;
  auto add = [&](const v1::Probe& probe, bool culprit_side) {
    if (probe.state() != v1::PROBE_STATE_FINISHED || probe.samples_size() == 0) return;
    ConfirmationSet& set = by_worker[probe.worker()];
    set.worker = probe.worker();
    std::vector<double>& side = culprit_side ? set.culprit : set.last_good;
    side.insert(side.end(), probe.samples().begin(), probe.samples().end());
  };
  for (const v1::Probe& probe : book_->rows()) {
    if (probe.kind() == v1::PROBE_KIND_BISECT && probe.index() == last_good &&
        probe.verdict() == v1::VERDICT_GOOD) {
      add(probe, false);
    } else if (probe.kind() == v1::PROBE_KIND_BISECT && probe.index() == first_bad &&
               probe.verdict() == v1::VERDICT_BAD) {
      add(probe, true);
    }
  }
  if (last_good == 0 && calibration_->good_probe() >= 0) {
    add(book_->probe(calibration_->good_probe()), false);
  }
  if (first_bad == frame_->commit_count && calibration_->bad_probe() >= 0) {
    add(book_->probe(calibration_->bad_probe()), true);
  }
  for (ConfirmationSet& cached : CachedSets(last_good, first_bad)) {
    auto own = by_worker.find(cached.worker);
    if (own == by_worker.end() || own->second.pairs() == 0) {
      by_worker[cached.worker] = std::move(cached);
    }
  }
  std::vector<ConfirmationSet> sets;
  for (auto& [worker, set] : by_worker) {
    if (set.pairs() > 0) sets.push_back(std::move(set));
  }
  if (sets.empty()) {
    if (std::optional<ConfirmationSet> across = SetAcrossWorkers(by_worker)) {
      sets.push_back(*std::move(across));
    }
  }
  return sets;
}

bool ConfirmationStage::PairsAcross(const std::string& good_worker,
                                    const std::string& bad_worker) const {
  // A try's answer is its own interleaved pairs.
  return !frame_->spec.has_try_change() && calibration_->MeasureGoodAlike(good_worker, bad_worker);
}

std::optional<ConfirmationSet> ConfirmationStage::SetAcrossWorkers(
    const std::map<std::string, ConfirmationSet>& by_worker) const {
  for (const auto& [good_worker, good_side] : by_worker) {
    if (good_side.last_good.empty()) continue;
    for (const auto& [bad_worker, bad_side] : by_worker) {
      if (bad_side.culprit.empty() || bad_worker == good_worker ||
          !PairsAcross(good_worker, bad_worker)) {
        continue;
      }
      ConfirmationSet set;
      set.worker = good_worker;
      set.culprit_worker = bad_worker;
      set.last_good = good_side.last_good;
      set.culprit = bad_side.culprit;
      return set;
    }
  }
  return std::nullopt;
}

ConfirmationPlan ConfirmationStage::PlanNow(int reused, int workers) const {
  const std::vector<double> good = calibration_->PooledSamples(v1::VERDICT_GOOD);
  const std::vector<double> bad = calibration_->PooledSamples(v1::VERDICT_BAD);
  const double sigma = calibration_->JobNoise();
  double step = MedianOrZero(bad) - MedianOrZero(good);
  if (frame_->spec.has_try_change()) {
    // A try measures a change of any size, none included: its pairs are sized to see at least
    // the smallest change it reports.
    step = TryDetectableStep(step, MedianOrZero(good), frame_->spec.min_effect_fraction());
  }
  // At least as many pairs as a probe takes runs: --runs, or one for a benchmark that repeats
  // exactly (decision 229), whose one pair of the search's samples then confirms the step.
  const int floor =
      frame_->spec.has_try_change() ? frame_->spec.runs_per_commit() : calibration_->RunsPerProbe();
  const int needed = ConfirmationPairsNeeded(sigma, step, floor, frame_->spec.max_runs());
  // A try's answer is its interleaved pairs: at least --runs of them, whatever the baselines
  // already hold (which still count in the judgement).
  // They go out in tasks of --runs pairs at most, so that workers not calibrated yet take
  // part too (attempt i on worker i % W).
  if (frame_->spec.has_try_change()) {
    const int runs = std::max(1, frame_->spec.runs_per_commit());
    return PlanConfirmation(needed, 0, sigma, step, std::max(workers, (needed + runs - 1) / runs));
  }
  return PlanConfirmation(needed, reused, sigma, step, workers);
}

v1::Confirmation* ConfirmationStage::MutableConfirmation() {
  if (!confirmation_.has_value()) confirmation_.emplace();
  return &*confirmation_;
}

ConfirmationStep ConfirmationStage::Start(bool early, const ConfirmationContext& context) {
  ConfirmationStep step;
  const std::vector<ConfirmationSet> sets = ReusableSets();
  RecordReusableSets(sets);
  const int reused = MutableConfirmation()->reused_pairs();
  const int cached = MutableConfirmation()->cached_pairs();
  const ConfirmationPlan plan = PlanNow(reused, context.workers);
  if (plan.tasks == 0) {
    // Nothing to measure: judged from the search's samples, once they are final.
    CancelTasks(SpeculationNotNeededText(), context.now, &step);
    if (early) {
      confirmation_.reset();
      return step;
    }
    return Judge(context, std::move(step));
  }
  // Pairs measured ahead in the last round count; the other commits' are cancelled.
  const int speculative = AdoptSpeculativePairs(context.now, &step);
  const ConfirmationPlan rest = LessSpeculativePairs(plan, speculative);
  if (early) {
    early_ = true;
    early_last_good_ = search_->last_good();
    early_first_bad_ = search_->first_bad();
  }
  if (rest.tasks > 0) QueueTasks(rest.tasks, rest.pairs_per_task, context.round);
  step.warnings.push_back(ConfirmingFact(rest, reused, cached, speculative));
  if (!early && !TasksPending()) return Judge(context, std::move(step));
  return step;
}

bool ConfirmationStage::EarlyTargetPossible() const {
  if (search_->Done()) {
    return search_->last_good() == early_last_good_ && search_->first_bad() == early_first_bad_;
  }
  return search_->last_good() <= early_last_good_ && early_first_bad_ <= search_->first_bad();
}

ConfirmationStep ConfirmationStage::AbortIfTargetLost(const ConfirmationContext& context) {
  ConfirmationStep step;
  if (!early_ || EarlyTargetPossible()) return step;
  // A calibration changed a verdict: the culprit the pairs measure may no longer be it.
  early_ = false;
  v1::JobWarning restart;
  restart.mutable_confirmation_restart();
  CancelTasks(WarningWords(restart), context.now, &step);
  confirmation_.reset();
  failure_.clear();
  step.warnings.push_back(std::move(restart));
  return step;
}

void ConfirmationStage::RecordReusableSets(const std::vector<ConfirmationSet>& sets) {
  v1::Confirmation* confirmation = MutableConfirmation();
  confirmation->Clear();
  int cached = 0;
  for (const ConfirmationSet& set : sets) {
    v1::ConfirmationPairs* out = confirmation->add_sets();
    out->set_worker(set.worker);
    out->mutable_last_good_samples()->Assign(set.last_good.begin(), set.last_good.end());
    out->mutable_culprit_samples()->Assign(set.culprit.begin(), set.culprit.end());
    out->set_cached_job_id(set.cached_job_id);
    out->set_culprit_worker(set.culprit_worker);
    if (!set.cached_job_id.empty()) cached += set.pairs();
  }
  confirmation->set_reused_pairs(PairsIn(sets));
  confirmation->set_cached_pairs(cached);
}

ConfirmationStep ConfirmationStage::CompleteEarly(const ConfirmationContext& context) {
  ConfirmationStep step;
  early_ = false;
  // A calibration that finished since the early start may let the search's own samples confirm
  // (the culprit's worker now known to measure GOOD as last-good's does, decision 232): then
  // the pairs outstanding are not waited for. Only while no fresh pair is in, so that none is
  // dropped.
  if (MutableConfirmation()->fresh_pairs() == 0) {
    const std::vector<ConfirmationSet> sets = ReusableSets();
    if (PlanNow(PairsIn(sets), context.workers).tasks == 0) {
      RecordReusableSets(sets);
      CancelTasks(SpeculationNotNeededText(), context.now, &step);
      return Judge(context, std::move(step));
    }
  }
  // Pairs measured ahead for this culprit since (the search reopened meanwhile) count; those
  // of other commits are cancelled, and none is waited for.
  AdoptSpeculativePairs(context.now, &step);
  if (!TasksPending()) return Judge(context, std::move(step));
  return step;
}

bool ConfirmationStage::TasksPending() const {
  for (const auto& [id, entry] : book_->tasks()) {
    if (!entry.done && entry.task.kind() == v1::PROBE_KIND_CONFIRM) return true;
  }
  return false;
}

bool ConfirmationStage::StartedFor(const v1::Task& task) const {
  if (early_) {
    // Its pairs count while the search may still close on the two commits they measure.
    return task.commit_index() == early_first_bad_ &&
           task.paired_commit_sha() == (*commits_)[early_last_good_].sha() && EarlyTargetPossible();
  }
  return frame_->state == v1::JOB_STATE_CONFIRMING && search_->Done() &&
         task.commit_index() == search_->first_bad() &&
         task.paired_commit_sha() == (*commits_)[search_->last_good()].sha();
}

void ConfirmationStage::QueueTasks(int tasks, int pairs_per_task, int round) {
  // Re-measure last-good and culprit interleaved (A/B/A/B), each task on whichever worker takes
  // it: the pairs of one task cancel that worker's offset.
  for (int i = 0; i < tasks; ++i) {
    const std::string id = book_->NewTask(v1::PROBE_KIND_CONFIRM, search_->first_bad(), round);
    v1::Task& task = book_->at(id).task;
    task.set_paired_commit_sha((*commits_)[search_->last_good()].sha());
    task.set_runs(pairs_per_task);
    book_->QueueFront(id);
  }
}

int ConfirmationStage::AddInterleavedPairs(const v1::ConfirmationPairs& set) {
  v1::Confirmation* confirmation = MutableConfirmation();
  *confirmation->add_sets() = set;
  for (double v : set.last_good_samples()) confirmation->add_last_good_samples(v);
  for (double v : set.culprit_samples()) confirmation->add_culprit_samples(v);
  const int fresh = std::min(set.last_good_samples_size(), set.culprit_samples_size());
  confirmation->set_fresh_pairs(confirmation->fresh_pairs() + fresh);
  if (confirmation->worker().empty()) confirmation->set_worker(set.worker());
  return fresh;
}

int ConfirmationStage::AdoptSpeculativePairs(absl::Time now, ConfirmationStep* step) {
  const std::pair<int, std::string> target{search_->first_bad(),
                                           (*commits_)[search_->last_good()].sha()};
  int pairs = 0;
  auto kept = speculative_sets_.find(target);
  if (kept != speculative_sets_.end()) {
    for (const v1::ConfirmationPairs& set : kept->second) pairs += AddInterleavedPairs(set);
    speculative_sets_.erase(kept);
  }
  for (auto& [id, entry] : book_->tasks()) {
    if (entry.task.kind() != v1::PROBE_KIND_CONFIRM) continue;
    const bool of_target = entry.task.commit_index() == target.first &&
                           entry.task.paired_commit_sha() == target.second;
    if (of_target) {
      if (!entry.done) pairs += std::max(1, entry.task.runs());  // It will report.
    } else if (!entry.done) {
      book_->CancelTask(entry, id, SpeculationNotTheCulpritText(), now, &step->cancelled);
    } else if (v1::Probe& probe = book_->ProbeOf(entry);
               probe.state() == v1::PROBE_STATE_FINISHED && probe.message().empty()) {
      probe.set_message(SpeculationNotTheCulpritText());  // Measured ahead, not counted.
    }
  }
  return pairs;
}

void ConfirmationStage::CancelTasks(const std::string& why, absl::Time now,
                                    ConfirmationStep* step) {
  for (auto& [id, entry] : book_->tasks()) {
    if (entry.done || entry.task.kind() != v1::PROBE_KIND_CONFIRM) continue;
    book_->CancelTask(entry, id, why, now, &step->cancelled);
  }
}

v1::JobWarning ConfirmationStage::ConfirmingFact(const ConfirmationPlan& plan, int reused,
                                                 int cached, int speculative) const {
  v1::JobWarning warning;
  v1::JobWarning::Confirming& fact = *warning.mutable_confirming();
  fact.set_last_good((*commits_)[search_->last_good()].sha());
  fact.set_culprit((*commits_)[search_->first_bad()].sha());
  fact.set_tasks(plan.tasks);
  fact.set_pairs_per_task(plan.pairs_per_task);
  fact.set_reused_pairs(reused);
  fact.set_cached_pairs(cached);
  fact.set_speculative_pairs(speculative);
  return warning;
}

void ConfirmationStage::QueueMorePairs(int pairs, int reused, const ConfirmationContext& context,
                                       ConfirmationStep* step) {
  const ConfirmationPlan plan = PlanConfirmation(pairs, 0, 1, 1, context.workers);
  QueueTasks(plan.tasks, plan.pairs_per_task, context.round);
  step->warnings.push_back(
      ConfirmingFact(plan, reused, MutableConfirmation()->cached_pairs(), /*speculative=*/0));
}

bool ConfirmationStage::RemeasureQuarantinedPairs(const ConfirmationContext& context,
                                                  ConfirmationStep* step) {
  v1::Confirmation* confirmation = MutableConfirmation();
  google::protobuf::RepeatedPtrField<v1::ConfirmationPairs> kept;
  int dropped = 0;
  for (v1::ConfirmationPairs& pairs : *confirmation->mutable_sets()) {
    if (pairs.interleaved() && calibration_->Quarantined(pairs.worker())) {
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
  QueueMorePairs(dropped, confirmation->reused_pairs(), context, step);
  return true;
}

ConfirmationStep ConfirmationStage::OnResult(const v1::Probe& probe, const v1::Task& task,
                                             const v1::TaskResult& result,
                                             const ConfirmationContext& context) {
  ConfirmationStep step;
  if (!StartedFor(task)) {
    // Measured ahead, in the search's last round: kept for its culprit's confirmation. A failed
    // pair is not kept: the confirmation measures the pairs it still needs itself.
    if (std::optional<v1::ConfirmationPairs> set = InterleavedPairsOf(probe.worker(), result)) {
      speculative_sets_[{task.commit_index(), task.paired_commit_sha()}].push_back(*std::move(set));
    }
    return step;
  }
  if (std::optional<v1::ConfirmationPairs> set = InterleavedPairsOf(probe.worker(), result)) {
    AddInterleavedPairs(*set);
  } else {
    failure_ = result.message();
  }
  if (TasksPending()) return step;  // More to come.
  if (frame_->state != v1::JOB_STATE_CONFIRMING) {
    step.next = ConfirmationStep::Next::kSettleSearch;  // Started early: judged once settled.
    return step;
  }
  return Judge(context, std::move(step));
}

ConfirmationStep ConfirmationStage::Judge(const ConfirmationContext& context,
                                          ConfirmationStep step) {
  v1::Confirmation* confirmation = MutableConfirmation();
  std::vector<ConfirmationSet> sets;
  bool any_fresh = false;
  for (const v1::ConfirmationPairs& pairs : confirmation->sets()) {
    // A GPU quarantined since cannot vouch for its pairs.
    if (calibration_->Quarantined(pairs.worker()) ||
        calibration_->Quarantined(pairs.culprit_worker())) {
      continue;
    }
    ConfirmationSet set;
    set.worker = pairs.worker();
    set.culprit_worker = pairs.culprit_worker();
    set.interleaved = pairs.interleaved();
    set.last_good.assign(pairs.last_good_samples().begin(), pairs.last_good_samples().end());
    set.culprit.assign(pairs.culprit_samples().begin(), pairs.culprit_samples().end());
    any_fresh = any_fresh || set.interleaved;
    sets.push_back(std::move(set));
  }
  const bool fresh_expected = !failure_.empty() || confirmation->fresh_pairs() > 0;
  if (fresh_expected && !any_fresh && failure_.empty() &&
      RemeasureQuarantinedPairs(context, &step)) {
    return step;  // Every fresh pair came from a GPU quarantined since: measured again elsewhere.
  }
  const bool worse_is_up = frame_->bad_baseline().median() > frame_->good_baseline().median();
  ConfirmationJudgement judgement;
  if (fresh_expected && !any_fresh) {
    step.verdict.emplace().set_failure(failure_);
  } else {
    judgement = JudgeConfirmationSets(
        sets, worse_is_up,
        LeastNamedStep(frame_->spec.has_try_change(), frame_->spec.min_effect_fraction()));
    if (judgement.measured) {
      std::vector<std::string> workers;
      for (const ConfirmationSet& set : sets) {
        workers.push_back(set.worker);
        if (!set.culprit_worker.empty()) workers.push_back(set.culprit_worker);
      }
      confirmation->set_ratio(judgement.ratio);
      confirmation->set_ci_low(judgement.ci_low);
      confirmation->set_ci_high(judgement.ci_high);
      confirmation->set_confirmed(judgement.confirmed);
      if (confirmation->worker().empty() && !workers.empty()) {
        confirmation->set_worker(workers.front());
      }
      step.ratio = judgement.ratio;  // The job's after follows from it.
      step.verdict = ConfirmationVerdictOf(judgement, workers, confirmation->fresh_pairs(),
                                           confirmation->reused_pairs());
      for (const ConfirmationSet& set : sets) {
        if (!set.culprit_worker.empty()) step.verdict->set_across_workers(true);
      }
    }
  }
  if (confirmation->confirmed()) {
    step.next = ConfirmationStep::Next::kConfirmed;
    return step;
  }
  // Not confirmed yet: when the estimate points the regression's way and runs are left, measure
  // as many pairs again (the interval narrows with more pairs); otherwise it did not reproduce.
  // A try whose interval already lies within the smallest change it reports has its answer.
  const double detectable = TryDetectableFraction(frame_->spec.min_effect_fraction());
  const bool settled_null = frame_->spec.has_try_change() && judgement.measured &&
                            judgement.ci_low >= 1 - detectable &&
                            judgement.ci_high <= 1 + detectable;
  const bool leaning = judgement.measured && !settled_null &&
                       (worse_is_up ? judgement.ratio > 1 : judgement.ratio < 1);
  const int pairs = confirmation->fresh_pairs() + confirmation->reused_pairs();
  if (leaning && pairs < frame_->spec.max_runs()) {
    QueueMorePairs(std::min(std::max(1, pairs), frame_->spec.max_runs() - pairs), 0, context,
                   &step);
    return step;
  }
  step.next = ConfirmationStep::Next::kUnconfirmed;
  return step;
}

}  // namespace kbisect
