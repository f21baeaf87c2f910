// Copyright 2026 The kbisect Authors.
#include "coordinator/job/bisect_job.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/rpc/proto_time.h"
#include "common/spec/job_spec.h"
#include "common/stats/stats.h"
#include "coordinator/job/job_text.h"

namespace kbisect {
namespace {

// Each worker re-measures GOOD (an A/A control) after this many of its classified probes.
constexpr int kControlEvery = 8;
// Untested commits the open interval must still hold for an A/A control to be worth it.
constexpr int kControlMinUntested = 4;
// A culprit explaining less than this share of the GOOD->BAD move suggests several steps.
constexpr double kSingleStepShare = 0.6;

double MedianOf(const std::vector<double>& values) { return Median(values).value_or(0); }

template <typename Samples>
double MedianOfSamples(const Samples& samples) {
  return MedianOf(std::vector<double>(samples.begin(), samples.end()));
}

// ceil(log2(n)) for n >= 1.
int Log2Ceil(int n) { return BisectSearch::EstimateRounds(n, 1); }

Verdict SearchVerdict(v1::Verdict verdict) {
  if (verdict == v1::VERDICT_GOOD) return Verdict::kGood;
  if (verdict == v1::VERDICT_BAD) return Verdict::kBad;
  return Verdict::kSkip;
}

}  // namespace

BisectJob::BisectJob(std::string job_id, v1::JobSpec spec, std::vector<v1::CommitRef> commits,
                     absl::Time now)
    : commits_(std::move(commits)),
      search_(static_cast<int>(commits_.size()) - 1),
      book_(&status_, &commits_),
      calibration_(&status_, spec.metric().kind() == v1::METRIC_KIND_EXIT_CODE),
      start_time_(now) {
  pass_fail_ = spec.metric().kind() == v1::METRIC_KIND_EXIT_CODE;
  NormalizeSpec(&spec);
  const int n = static_cast<int>(commits_.size()) - 1;
  status_.set_job_id(std::move(job_id));
  *status_.mutable_spec() = std::move(spec);
  status_.set_state(v1::JOB_STATE_BASELINES);
  status_.set_status(v1::OUTCOME_RUNNING);
  status_.set_good_sha(commits_.front().sha());
  status_.set_bad_sha(commits_.back().sha());
  status_.set_commit_count(n);
  status_.set_last_good_index(0);
  status_.set_first_bad_index(n);
  status_.set_direction(status_.spec().direction());
  *status_.mutable_create_time() = ToProto(now);

  // BAD is measured by the first worker to ask; GOOD by every worker (its calibration), the
  // first of which is the reference GOOD.
  const std::string bad_task = book_.NewTask(v1::PROBE_KIND_BASELINE_BAD, n, 0);
  calibration_.SetBadProbe(book_.at(bad_task).probe);
  book_.QueueBack(bad_task);
  UpdateProgress();
  Emit(v1::JOB_EVENT_KIND_STARTED,
       StartedText(status_.good_sha(), status_.bad_sha(), n, Log2Ceil(n)), nullptr, now);
}

// --- Dispatch -----------------------------------------------------------------------------------

std::vector<v1::Task> BisectJob::TakeTasks(int max_tasks, absl::Time now) {
  std::vector<std::string> workers;
  for (int i = 0; i < max_tasks; ++i) workers.push_back(absl::StrCat("w", i));
  std::vector<v1::Task> tasks;
  for (Assignment& assignment : TakeTasks(workers, now)) {
    OnTaskStarted(assignment.task.task_id(), assignment.worker, 1, now);
    tasks.push_back(std::move(assignment.task));
  }
  return tasks;
}

DispatchInput BisectJob::MakeDispatchInput(const std::vector<std::string>& idle) const {
  DispatchInput input;
  input.idle = idle;
  for (const auto& [name, state] : calibration_.workers()) {
    DispatchWorker& worker = input.workers[name];
    worker.quarantined = state.quarantined;
    worker.gone = state.gone;
    worker.calibration_started = state.calibration >= 0;
    worker.owes_calibration = HoldsUnsettledProbes(name);
    worker.waits_for_baselines = WaitsForBaselines(name);
    worker.checked_out = state.checked_out;
  }
  for (const std::string& id : book_.queue()) {
    const TaskEntry& entry = book_.at(id);
    if (entry.done || entry.active) continue;
    const v1::Probe& probe = book_.probe(entry.probe);
    QueuedTask queued;
    queued.task_id = id;
    queued.pinned_worker = entry.pinned_worker;
    queued.kind = entry.task.kind();
    queued.commit_index = entry.task.commit_index();
    if (probe.has_start_time()) queued.started = FromProto(probe.start_time());
    input.queue.push_back(std::move(queued));
  }
  for (const auto& [id, entry] : book_.tasks()) {
    if (!entry.active) continue;
    const v1::Probe& probe = book_.probe(entry.probe);
    RunningTask running;
    running.kind = entry.task.kind();
    if (probe.has_start_time()) running.started = FromProto(probe.start_time());
    input.running.push_back(running);
  }
  for (const v1::Probe& probe : status_.probes()) {
    if (probe.state() != v1::PROBE_STATE_FINISHED || !probe.has_start_time() ||
        !probe.has_end_time() || probe.kind() == v1::PROBE_KIND_CONFIRM) {
      continue;
    }
    input.spans.push_back(
        {probe.worker(),
         absl::ToDoubleSeconds(FromProto(probe.end_time()) - FromProto(probe.start_time()))});
  }
  input.has_reference = calibration_.good_probe() >= 0;
  if (calibration_.bad_probe() >= 0) {
    input.bad_task_id = book_.probe(calibration_.bad_probe()).probe_id();
    input.bad_worker = calibration_.BadWorker();
  }
  input.pass_fail = pass_fail_;
  input.max_workers = status_.spec().max_workers();
  input.commit_count = status_.commit_count();
  input.search = &search_;
  return input;
}

std::vector<BisectJob::Assignment> BisectJob::TakeTasks(const std::vector<std::string>& workers,
                                                        absl::Time now) {
  std::vector<Assignment> out;
  if (finished()) return out;
  const DispatchPlan plan = PlanDispatch(MakeDispatchInput(workers), now);
  for (const std::string& worker : plan.seen) calibration_.worker(worker).gone = false;
  const int round = max_round_recorded_ + 1;
  for (const DispatchAssignment& assignment : plan.assignments) {
    switch (assignment.kind) {
      case DispatchAssignment::Kind::kQueued:
        HandOut(assignment.worker, assignment.task_id, &out);
        break;
      case DispatchAssignment::Kind::kCalibrate:
        Calibrate(assignment.worker, &out);
        break;
      case DispatchAssignment::Kind::kProbe:
        search_.MarkInFlight(assignment.commit_index);
        HandOut(assignment.worker,
                book_.NewTask(v1::PROBE_KIND_BISECT, assignment.commit_index, round), &out);
        break;
    }
  }
  // Queue entries that are done (cancelled) are dropped.
  book_.DropDoneFromQueue();
  if (!out.empty()) UpdateProgress();
  return out;
}

void BisectJob::HandOut(const std::string& worker, const std::string& task_id,
                        std::vector<Assignment>* out) {
  const v1::Task& task = book_.HandOut(task_id, worker);
  calibration_.worker(worker).checked_out = task.commit_index();
  out->push_back({worker, task});
}

void BisectJob::Calibrate(const std::string& worker, std::vector<Assignment>* out) {
  const std::string id = book_.NewTask(v1::PROBE_KIND_BASELINE_GOOD, 0, 0, worker);
  const int position = book_.at(id).probe;
  calibration_.worker(worker).calibration = position;
  // The first GOOD measured in the job is the reference GOOD.
  if (calibration_.good_probe() < 0) calibration_.SetReference(worker, position);
  HandOut(worker, id, out);
}

bool BisectJob::WaitsForBaselines(const std::string& worker) const {
  // Before the baselines are settled, a worker probes ahead once: its measured probe waits
  // for them, and further guesses would be spent on an interval nobody has narrowed yet.
  return status_.state() != v1::JOB_STATE_BISECTING &&
         std::any_of(unclassified_.begin(), unclassified_.end(),
                     [&](int position) { return book_.probe(position).worker() == worker; });
}

bool BisectJob::HoldsUnsettledProbes(const std::string& worker) const {
  if (pass_fail_) return false;
  for (const v1::Probe& probe : status_.probes()) {
    if (probe.worker() != worker || probe.kind() != v1::PROBE_KIND_BISECT) continue;
    if (probe.provisional() || probe.state() == v1::PROBE_STATE_PENDING ||
        probe.state() == v1::PROBE_STATE_RUNNING) {
      return true;
    }
  }
  for (int position : unclassified_) {
    if (book_.probe(position).worker() == worker) return true;
  }
  return false;
}

// --- Results ------------------------------------------------------------------------------------

void BisectJob::OnTaskStarted(const std::string& task_id, const std::string& worker, int attempt,
                              absl::Time now) {
  TaskEntry* entry = book_.Find(task_id);
  if (entry == nullptr || entry->done) return;
  v1::Probe& probe = ProbeOf(*entry);
  probe.set_worker(worker);
  probe.set_attempt(attempt);
  *probe.mutable_start_time() = ToProto(now);
}

std::vector<std::string> BisectJob::OnTaskFinished(const std::string& task_id,
                                                   const v1::TaskResult& result, absl::Time now) {
  TaskEntry* found = book_.Find(task_id);
  if (found == nullptr || !found->active || found->done || finished()) return {};
  TaskEntry& entry = *found;
  if (result.outcome() == v1::TASK_OUTCOME_INFRA_ERROR ||
      result.outcome() == v1::TASK_OUTCOME_CANCELLED) {
    return OnTaskLost(task_id, result.message(), now);
  }
  entry.active = false;
  entry.done = true;
  v1::Probe& probe = ProbeOf(entry);
  const bool first_result = probe.runs_size() == 0;
  probe.set_state(v1::PROBE_STATE_FINISHED);
  probe.set_outcome(result.outcome());
  for (double sample : result.samples()) probe.add_samples(sample);
  for (const v1::RunRecord& run : result.runs()) *probe.add_runs() = run;
  AddTimings(result.timings(), probe.mutable_timings(), first_result);
  probe.set_message(result.message());
  probe.set_log_tail(result.log_tail());
  probe.set_worker_hardware_class(result.hardware_class());
  *probe.mutable_end_time() = ToProto(now);
  status_.set_bench_runs(status_.bench_runs() + result.runs_size());
  const bool measured = Measured(probe);
  if (measured && !pass_fail_) {
    probe.set_median(MedianOfSamples(probe.samples()));
    if (status_.metric_name().empty()) {
      status_.set_metric_name(result.metric_name());
      status_.set_metric_unit(result.metric_unit());
    }
    if (status_.direction() == v1::DIRECTION_UNSPECIFIED &&
        result.metric_direction() != v1::DIRECTION_UNSPECIFIED) {
      status_.set_direction(result.metric_direction());
    }
  }

  if (probe.kind() == v1::PROBE_KIND_CONFIRM) {
    ConcludeConfirmation(probe, result, now);
    return std::exchange(to_cancel_, {});
  }
  const std::string worker = probe.worker();
  const bool baseline =
      entry.probe == calibration_.good_probe() || entry.probe == calibration_.bad_probe();
  const bool of_good =
      probe.kind() == v1::PROBE_KIND_BASELINE_GOOD || probe.kind() == v1::PROBE_KIND_CONTROL;
  if (!measured && of_good && (!baseline || calibration_.AnotherWorkerLeft(worker))) {
    // A worker that cannot run GOOD (its calibration, an A/A control, or the reference GOOD
    // while another worker can take over) is quarantined. Only when no worker is left is GOOD
    // itself broken (below).
    QuarantineDecision decision;
    decision.worker = worker;
    decision.kind = DriftKind::kCalibrationFailed;
    decision.failure = result.message();
    Quarantine(decision, now);
    MaybeFinish(now);
    UpdateProgress();
    return std::exchange(to_cancel_, {});
  }
  if (!baseline && of_good) {
    // Another worker's calibration, or an A/A control of GOOD.
    if (probe.kind() == v1::PROBE_KIND_CONTROL && status_.state() == v1::JOB_STATE_BISECTING) {
      if (std::optional<QuarantineDecision> drift = calibration_.CheckControl(worker, probe)) {
        Quarantine(*drift, now);
      }
    } else if (status_.state() == v1::JOB_STATE_BISECTING) {
      RecheckCalibrations(now);
    }
    MaybeFinish(now);
    UpdateProgress();
    return std::exchange(to_cancel_, {});
  }
  if (baseline) {
    if (!measured) {
      const bool good = entry.probe == calibration_.good_probe();
      Finish(v1::OUTCOME_ERROR, BaselineFailedText(good, probe, result), now);
      return std::exchange(to_cancel_, {});
    }
    if (BaselinesReady()) {
      EvaluateBaselines(now);
      if (!finished() && status_.state() == v1::JOB_STATE_BISECTING) RecheckCalibrations(now);
    }
  } else if (!measured) {
    ApplyVerdict(entry.probe, v1::VERDICT_SKIP, now);
  } else if (calibration_.WorkerReady(worker)) {
    Classify(entry.probe, now);
  } else {
    unclassified_.push_back(entry.probe);
  }
  MaybeFinish(now);
  UpdateProgress();
  return std::exchange(to_cancel_, {});
}

void BisectJob::RecheckCalibrations(absl::Time now) {
  CheckOutliers(now);
  SharpenCalibrations(now);
  SettleProvisional(now);
  ClassifyPending(now);
}

std::vector<std::string> BisectJob::OnTaskLost(const std::string& task_id, const std::string& why,
                                               absl::Time now) {
  TaskEntry* found = book_.Find(task_id);
  if (found == nullptr || !found->active || found->done || finished()) return {};
  TaskEntry& entry = *found;
  entry.active = false;
  v1::Probe& probe = ProbeOf(entry);
  if (!entry.pinned_worker.empty()) {
    // Work that only its worker could do (a calibration, a control, a re-measurement against
    // its calibration): the worker is gone, so is what depended on it. Its commits are probed
    // again by others; it calibrates again if it comes back.
    const std::string worker = entry.pinned_worker;
    entry.done = true;
    probe.set_state(v1::PROBE_STATE_CANCELLED);
    probe.set_message(LostWithWorkerText(why));
    if (entry.task.kind() == v1::PROBE_KIND_BISECT) search_.Abandon(entry.task.commit_index());
    Calibration::Worker& state = calibration_.worker(worker);
    if (state.calibration == entry.probe) state.calibration = -1;
    state.gone = true;
    DropProbesOf(worker, absl::StrCat("worker lost: ", why), now, /*keep_measured=*/true);
    OnRoleHolderLost(worker, "was lost", now);
    UpdateProgress();
    return std::exchange(to_cancel_, {});
  }
  if (probe.attempt() < kMaxAttempts) {
    probe.set_state(v1::PROBE_STATE_PENDING);
    probe.set_message(AttemptLostText(probe.attempt(), why));
    book_.QueueFront(task_id);
    UpdateProgress();
    return {};
  }
  entry.done = true;
  probe.set_state(v1::PROBE_STATE_FINISHED);
  probe.set_outcome(v1::TASK_OUTCOME_INFRA_ERROR);
  probe.set_message(GaveUpText(probe.attempt(), why));
  if (entry.probe == calibration_.good_probe() || entry.probe == calibration_.bad_probe()) {
    Finish(v1::OUTCOME_ERROR,
           BaselineGaveUpText(entry.probe == calibration_.good_probe(), probe.message()), now);
    return std::exchange(to_cancel_, {});
  }
  ApplyVerdict(entry.probe, v1::VERDICT_SKIP, now);
  MaybeFinish(now);
  UpdateProgress();
  return std::exchange(to_cancel_, {});
}

std::vector<std::string> BisectJob::Cancel(const std::string& reason, absl::Time now) {
  if (finished()) return {};
  Finish(v1::OUTCOME_CANCELLED, CancelledText(reason), now);
  return std::exchange(to_cancel_, {});
}

bool BisectJob::finished() const {
  // FOLLOWING_UP is set by the coordinator once this job's own search is over.
  return status_.state() == v1::JOB_STATE_DONE || status_.state() == v1::JOB_STATE_FAILED ||
         status_.state() == v1::JOB_STATE_CANCELLED ||
         status_.state() == v1::JOB_STATE_FOLLOWING_UP;
}

std::vector<v1::JobEvent> BisectJob::TakeEvents() { return std::exchange(events_, {}); }

std::vector<std::string> BisectJob::ActiveTaskIds() const { return book_.ActiveTaskIds(); }

// --- Baselines and verdicts ---------------------------------------------------------------------

bool BisectJob::BaselinesReady() const {
  for (int position : {calibration_.good_probe(), calibration_.bad_probe()}) {
    if (position < 0) return false;
    const v1::Probe& probe = book_.probe(position);
    if (probe.state() != v1::PROBE_STATE_FINISHED || !Measured(probe)) return false;
  }
  return true;
}

void BisectJob::EvaluateBaselines(absl::Time now) {
  const v1::Probe& good = book_.probe(calibration_.good_probe());
  const v1::Probe& bad = book_.probe(calibration_.bad_probe());
  if (pass_fail_) {
    if (good.outcome() != v1::TASK_OUTCOME_PASSED) {
      Finish(v1::OUTCOME_ERROR, CheckFailsAtGoodText(good), now);
      return;
    }
    if (bad.outcome() != v1::TASK_OUTCOME_FAILED) {
      Finish(v1::OUTCOME_NO_REGRESSION, CheckPassesAtBadText(bad), now);
      return;
    }
    Emit(v1::JOB_EVENT_KIND_BASELINE, PassFailBaselineText(good.sha(), bad.sha()), nullptr, now);
    status_.set_state(v1::JOB_STATE_BISECTING);
    return;
  }
  if (status_.direction() == v1::DIRECTION_UNSPECIFIED) {
    status_.set_direction(v1::DIRECTION_LOWER_IS_BETTER);
  }
  // Calibrations that agree with the reference's GOOD sharpen it (see PooledSamples).
  const BaselineAssessment assessment = AssessBaselines(
      calibration_.PooledSamples(v1::VERDICT_GOOD), calibration_.ReferenceBadSamples(),
      status_.direction(), status_.spec().min_effect_fraction(), status_.spec().max_runs());
  if (assessment.more_runs > 0) {
    Emit(v1::JOB_EVENT_KIND_WARNING, absl::StrCat("Baselines unclear: ", assessment.reason),
         nullptr, now);
    book_.Extend(calibration_.good_probe(), assessment.more_runs);
    book_.Extend(calibration_.bad_probe(), assessment.more_runs);
    return;
  }
  v1::Baseline* good_base = status_.mutable_baseline()->mutable_good();
  good_base->set_sha(good.sha());
  *good_base->mutable_samples() = good.samples();
  good_base->set_median(good.median());
  good_base->set_worker(good.worker());
  v1::Baseline* bad_base = status_.mutable_baseline()->mutable_bad();
  bad_base->set_sha(bad.sha());
  const std::vector<double> bad_samples = calibration_.ReferenceBadSamples();
  bad_base->mutable_samples()->Assign(bad_samples.begin(), bad_samples.end());
  bad_base->set_median(MedianOf(bad_samples));
  bad_base->set_worker(bad.worker());
  status_.set_regression_pct(assessment.regression_pct);
  for (const std::string& warning : assessment.warnings) status_.add_warnings(warning);
  Emit(v1::JOB_EVENT_KIND_BASELINE,
       BaselineText(status_, good.median(), bad.median(), assessment.regression_pct), nullptr,
       now);
  for (const std::string& warning : assessment.warnings) {
    Emit(v1::JOB_EVENT_KIND_WARNING, absl::StrCat("Warning: ", warning), nullptr, now);
  }
  if (assessment.improvement && !status_.spec().allow_improvement()) {
    Finish(v1::OUTCOME_ERROR, SwappedText(assessment.reason), now);
    return;
  }
  if (!assessment.regression && !assessment.improvement) {
    status_.set_cause(v1::CAUSE_NOISE);
    Finish(v1::OUTCOME_NO_REGRESSION, assessment.reason, now);
    return;
  }
  status_.set_state(v1::JOB_STATE_BISECTING);
}

void BisectJob::ClassifyPending(absl::Time now) {
  std::vector<int> pending = std::exchange(unclassified_, {});
  for (int position : pending) {
    if (finished()) return;
    const v1::Probe& probe = book_.probe(position);
    if (probe.state() != v1::PROBE_STATE_FINISHED) continue;
    if (probe.index() <= search_.last_good() || probe.index() >= search_.first_bad()) continue;
    if (!calibration_.WorkerReady(probe.worker())) {
      unclassified_.push_back(position);
      continue;
    }
    Classify(position, now);
  }
}

void BisectJob::Classify(int probe_position, absl::Time now) {
  v1::Probe& probe = book_.mutable_probe(probe_position);
  if (pass_fail_) {
    ApplyVerdict(probe_position,
                 probe.outcome() == v1::TASK_OUTCOME_PASSED ? v1::VERDICT_GOOD : v1::VERDICT_BAD,
                 now);
    return;
  }
  const ProbeClassification c = Judge(probe);
  probe.set_median(c.median);
  probe.set_p_value_vs_good(c.p_value_vs_good);
  probe.set_p_value_vs_bad(c.p_value_vs_bad);
  if (c.more_runs > 0) {
    probe.set_message(c.reason);
    book_.Extend(probe_position, c.more_runs);
    return;
  }
  if (c.verdict == v1::VERDICT_AMBIGUOUS) probe.set_message(c.reason);
  ApplyVerdict(probe_position, c.verdict, now);
}

ProbeClassification BisectJob::Judge(const v1::Probe& probe) const {
  std::vector<double> good;
  std::vector<double> bad;
  calibration_.BaselinesFor(probe.worker(), &good, &bad);
  ClassifierOptions options;
  options.threshold_fraction = status_.spec().threshold_fraction();
  options.max_runs = status_.spec().max_runs();
  return ClassifyProbe(probe.samples(), good, bad, options);
}

void BisectJob::ApplyVerdict(int probe_position, v1::Verdict verdict, absl::Time now) {
  v1::Probe& probe = book_.mutable_probe(probe_position);
  const int index = probe.index();
  absl::Status recorded = search_.Record(index, SearchVerdict(verdict));
  if (!recorded.ok()) {
    // Only possible with non-monotone measurements; the commit is treated as untestable.
    status_.add_warnings(ContradictionText(probe.sha(), verdict));
    verdict = v1::VERDICT_SKIP;
    search_.Abandon(index);
    (void)search_.Record(index, Verdict::kSkip);
  }
  probe.set_verdict(verdict);
  probe.set_provisional(IsProvisional(probe));
  if (verdict == v1::VERDICT_SKIP || verdict == v1::VERDICT_AMBIGUOUS) {
    status_.mutable_progress()->set_skips(status_.progress().skips() + 1);
  }
  ++steps_;
  if (auto* worker = calibration_.workers().count(probe.worker()) > 0
                         ? &calibration_.worker(probe.worker())
                         : nullptr;
      worker != nullptr && !pass_fail_ && calibration_.CalibrationDone(probe.worker()) &&
      ++worker->classified % kControlEvery == 0 &&
      search_.first_bad() - search_.last_good() - 1 >= kControlMinUntested) {
    // An A/A control: GOOD again on this worker, to catch a GPU that drifts during the job.
    // Not when only a probe or two are left: the control would cost as much as what it guards,
    // and the confirmation re-measures the culprit and its parent anyway.
    book_.QueueFront(book_.NewTask(v1::PROBE_KIND_CONTROL, 0, 0, probe.worker()));
  }
  max_round_recorded_ = std::max(max_round_recorded_, probe.round());
  status_.set_rounds(std::max(status_.rounds(), probe.round()));
  status_.set_last_good_index(search_.last_good());
  status_.set_first_bad_index(search_.first_bad());
  CancelUseless(now);
  ProbeLine line;
  line.commits_left = std::max(0, search_.RemainingCandidates() - 1);
  line.in_flight = book_.InFlightCount();
  line.step = steps_;
  line.steps_estimated = steps_ + line.in_flight + Log2Ceil(std::max(1, line.commits_left + 1));
  // The probe may have moved in the table (NewTask above): read it again.
  const v1::Probe& finished_probe = book_.probe(probe_position);
  Emit(v1::JOB_EVENT_KIND_PROBE_FINISHED,
       ProbeFinishedText(finished_probe, status_, pass_fail_, line), &finished_probe, now);
}

bool BisectJob::IsProvisional(const v1::Probe& probe) const {
  if (pass_fail_ || probe.kind() != v1::PROBE_KIND_BISECT || !JudgedAgainstBaselines(probe)) {
    return false;
  }
  return !calibration_.CalibrationDone(probe.worker()) ||
         !calibration_.CalibrationDone(calibration_.BadWorker());
}

void BisectJob::CancelUseless(absl::Time now) {
  for (int index : search_.UselessInFlight()) {
    search_.Abandon(index);
    for (auto& [id, entry] : book_.tasks()) {
      if (entry.done || entry.task.kind() != v1::PROBE_KIND_BISECT ||
          entry.task.commit_index() != index) {
        continue;
      }
      book_.CancelTask(entry, id, OutsideIntervalText(), now, &to_cancel_);
      status_.mutable_progress()->set_probes_cancelled(status_.progress().probes_cancelled() + 1);
      const v1::Probe& probe = ProbeOf(entry);
      Emit(v1::JOB_EVENT_KIND_PROBE_CANCELLED, ProbeCancelledText(probe.sha()), &probe, now);
    }
  }
  // Measured but unclassified probes outside the interval are no longer needed.
  unclassified_.erase(std::remove_if(unclassified_.begin(), unclassified_.end(),
                                     [&](int position) {
                                       const int index = book_.probe(position).index();
                                       return index <= search_.last_good() ||
                                              index >= search_.first_bad();
                                     }),
                      unclassified_.end());
}

// --- Calibration: applying its decisions --------------------------------------------------------

void BisectJob::JudgeEveryVerdictAgain(absl::Time now) {
  RetractVerdicts(book_.ProbePositions([](const v1::Probe&) { return true; }),
                  /*probe_again=*/false, "", now);
}

void BisectJob::SettleProvisional(absl::Time now) {
  if (pass_fail_ || finished() || status_.state() != v1::JOB_STATE_BISECTING) return;
  const std::string bad_worker = calibration_.BadWorker();
  if (!calibration_.bad_offset_checked() && calibration_.CalibrationDone(bad_worker)) {
    calibration_.set_bad_offset_checked(true);
    if (calibration_.HasOffset(bad_worker)) {
      // BAD was measured on a GPU with an offset: in the reference's frame it is another
      // value, and every verdict judged against it is judged again.
      const std::vector<double> bad = calibration_.ReferenceBadSamples();
      v1::Baseline* base = status_.mutable_baseline()->mutable_bad();
      base->mutable_samples()->Assign(bad.begin(), bad.end());
      base->set_median(MedianOf(bad));
      status_.set_regression_pct(RegressionPercent(status_.baseline().good().median(),
                                                   base->median(), status_.direction()));
      const double own = book_.probe(calibration_.worker(bad_worker).calibration).median();
      const double reference = book_.probe(calibration_.good_probe()).median();
      Emit(v1::JOB_EVENT_KIND_WARNING,
           BadWorkerOffsetText(bad_worker, own / reference - 1, base->median(),
                               status_.metric_unit()),
           nullptr, now);
      JudgeEveryVerdictAgain(now);
    }
  }
  std::vector<int> judge_again;
  for (int i = 0; i < book_.probe_count(); ++i) {
    v1::Probe& probe = book_.mutable_probe(i);
    if (!probe.provisional() || IsProvisional(probe)) continue;
    // The verdict counts if it holds now that its worker has calibrated: judged against its own
    // GOOD when that is off the reference's, else against the pool, which has grown sharper
    // since. Otherwise it is judged again, with more runs if the classifier asks for them.
    const ProbeClassification c =
        calibration_.HasOffset(probe.worker()) && !calibration_.WorkerReady(probe.worker())
            ? ProbeClassification{}
            : Judge(probe);
    if (c.more_runs == 0 && c.verdict == probe.verdict()) {
      probe.set_provisional(false);
    } else {
      judge_again.push_back(i);
    }
  }
  if (!judge_again.empty()) RetractVerdicts(judge_again, /*probe_again=*/false, "", now);
}

void BisectJob::RetractVerdicts(const std::vector<int>& positions, bool probe_again,
                                const std::string& why, absl::Time now) {
  bool changed = false;
  for (int position : positions) {
    v1::Probe& probe = book_.mutable_probe(position);
    if (probe.kind() != v1::PROBE_KIND_BISECT || probe.state() != v1::PROBE_STATE_FINISHED ||
        !JudgedAgainstBaselines(probe)) {
      continue;
    }
    if (probe.verdict() == v1::VERDICT_AMBIGUOUS) {
      status_.mutable_progress()->set_skips(status_.progress().skips() - 1);
    }
    probe.set_verdict(v1::VERDICT_UNSPECIFIED);
    probe.set_provisional(false);
    changed = true;
    // A quarantined worker's samples cannot be judged again.
    const Calibration::Worker* worker = calibration_.Find(probe.worker());
    if (probe_again || (worker != nullptr && worker->quarantined)) {
      probe.set_state(v1::PROBE_STATE_CANCELLED);
      probe.set_message(DiscardedText(why.empty() ? "its worker was quarantined" : why));
      *probe.mutable_end_time() = ToProto(now);
    } else if (std::find(unclassified_.begin(), unclassified_.end(), position) ==
               unclassified_.end()) {
      unclassified_.push_back(position);
    }
  }
  if (changed) RebuildSearch();
}

void BisectJob::RebuildSearch() {
  BisectSearch search(status_.commit_count());
  for (const v1::Probe& probe : status_.probes()) {
    if (probe.kind() != v1::PROBE_KIND_BISECT || probe.state() != v1::PROBE_STATE_FINISHED ||
        probe.verdict() == v1::VERDICT_UNSPECIFIED) {
      continue;
    }
    if (!search.Record(probe.index(), SearchVerdict(probe.verdict())).ok()) {
      (void)search.Record(probe.index(), Verdict::kSkip);
    }
  }
  for (const auto& [id, entry] : book_.tasks()) {
    if (!entry.done && entry.task.kind() == v1::PROBE_KIND_BISECT) {
      search.MarkInFlight(entry.task.commit_index());
    }
  }
  for (int position : unclassified_) search.MarkInFlight(book_.probe(position).index());
  search_ = std::move(search);
  status_.set_last_good_index(search_.last_good());
  status_.set_first_bad_index(search_.first_bad());
}

void BisectJob::RemeasureBad(const std::string& why, absl::Time now) {
  const int bad_probe = calibration_.bad_probe();
  if (bad_probe < 0 || book_.probe(bad_probe).state() != v1::PROBE_STATE_FINISHED) {
    return;  // Not measured yet: the queued or retried task is still to come.
  }
  const std::string id = book_.NewTask(v1::PROBE_KIND_BASELINE_BAD, status_.commit_count(), 0);
  calibration_.SetBadProbe(book_.at(id).probe);
  calibration_.set_bad_offset_checked(false);
  book_.QueueFront(id);
  if (status_.state() == v1::JOB_STATE_BISECTING) status_.set_state(v1::JOB_STATE_BASELINES);
  JudgeEveryVerdictAgain(now);
  Emit(v1::JOB_EVENT_KIND_WARNING, BadRemeasuredText(why), nullptr, now);
}

void BisectJob::OnRoleHolderLost(const std::string& worker, const std::string& why,
                                 absl::Time now) {
  const bool quarantined = calibration_.worker(worker).quarantined;
  // A BAD whose worker can no longer calibrate (or was quarantined) cannot be placed in the
  // reference's frame.
  if (!pass_fail_ && worker == calibration_.BadWorker() &&
      (quarantined || !calibration_.CalibrationDone(worker))) {
    RemeasureBad(absl::StrCat("its worker ", worker, " ", why), now);
  }
  if (worker != calibration_.reference_worker() || (!quarantined && BaselinesReady())) return;
  // A reference that left after the baselines settled keeps its measurements; one that was
  // quarantined hands the reference GOOD to another worker, and every verdict judged against
  // it is judged again.
  const bool settled = BaselinesReady() && status_.state() == v1::JOB_STATE_BISECTING;
  calibration_.ResetReference();
  if (!settled) return;
  calibration_.set_bad_offset_checked(false);
  JudgeEveryVerdictAgain(now);
  status_.set_state(v1::JOB_STATE_BASELINES);
  Emit(v1::JOB_EVENT_KIND_WARNING, ReferenceMovesText(worker, calibration_.reference_worker()),
       nullptr, now);
  if (!BaselinesReady()) return;
  EvaluateBaselines(now);
  if (!finished() && status_.state() == v1::JOB_STATE_BISECTING) {
    SharpenCalibrations(now);
    SettleProvisional(now);
    ClassifyPending(now);
  }
}

void BisectJob::SharpenCalibrations(absl::Time now) {
  for (auto& [worker, state] : calibration_.workers()) {
    if (state.quarantined || state.calibration < 0) continue;
    const v1::Probe& calibration = book_.probe(state.calibration);
    if (calibration.state() != v1::PROBE_STATE_FINISHED || !Measured(calibration)) continue;
    const int missing = calibration_.CalibrationRuns() - calibration.samples_size();
    if (missing <= 0 || !calibration_.HasOffset(worker)) continue;
    if (state.gone) {
      // It cannot re-measure: what it measured cannot be judged; others probe it again.
      DropProbesOf(worker, "its worker left before its calibration was complete", now);
    } else {
      book_.Extend(state.calibration, missing);
    }
  }
}

void BisectJob::CheckOutliers(absl::Time now) {
  // Quarantining may change the reference and add probes: decided first, applied after.
  for (const QuarantineDecision& outlier : calibration_.FindOutliers()) Quarantine(outlier, now);
}

void BisectJob::Quarantine(const QuarantineDecision& decision, absl::Time now) {
  const std::string& worker = decision.worker;
  Calibration::Worker& state = calibration_.worker(worker);
  if (state.quarantined) return;
  state.quarantined = true;
  const std::string reason = QuarantineReasonText(decision, status_.metric_unit());
  v1::DriftEvent* event = status_.add_drift_events();
  event->set_worker(worker);
  *event->mutable_time() = ToProto(now);
  event->set_kind(DriftKindName(decision.kind));
  event->set_detail(reason);
  event->set_offset_fraction(decision.offset_fraction);
  status_.add_warnings(QuarantinedWarningText(worker, reason));
  Emit(v1::JOB_EVENT_KIND_DRIFT, QuarantinedEventText(worker, reason), nullptr, now);
  // Its verdicts, provisional or not, are not trusted: their commits are probed again.
  RetractVerdicts(
      book_.ProbePositions([&](const v1::Probe& probe) { return probe.worker() == worker; }),
      /*probe_again=*/true, "its worker was quarantined", now);
  DropProbesOf(worker, "its worker was quarantined", now);
  // A quarantined worker holding the reference GOOD or the BAD baseline hands it on.
  OnRoleHolderLost(worker, "was quarantined", now);
  if (!calibration_.AnyoneLeft()) Finish(v1::OUTCOME_ERROR, EveryWorkerQuarantinedText(), now);
}

void BisectJob::DropProbesOf(const std::string& worker, const std::string& why, absl::Time now,
                             bool keep_measured) {
  for (auto& [id, entry] : book_.tasks()) {
    v1::Probe& probe = ProbeOf(entry);
    if (entry.done || probe.worker() != worker || entry.probe == calibration_.bad_probe()) {
      continue;
    }
    if (entry.task.kind() == v1::PROBE_KIND_BISECT) search_.Abandon(entry.task.commit_index());
    book_.CancelTask(entry, id, DiscardedText(why), now, &to_cancel_);
  }
  // Finished measurements stay when the worker's calibration can still judge them.
  if (keep_measured && calibration_.CalibrationUsable(worker)) return;
  // Its provisional verdicts will never be confirmed: their commits are probed again.
  RetractVerdicts(book_.ProbePositions([&](const v1::Probe& probe) {
                    return probe.provisional() && probe.worker() == worker;
                  }),
                  /*probe_again=*/true, why, now);
  unclassified_.erase(std::remove_if(unclassified_.begin(), unclassified_.end(),
                                     [&](int position) {
                                       v1::Probe& probe = book_.mutable_probe(position);
                                       if (probe.worker() != worker) return false;
                                       search_.Abandon(probe.index());
                                       probe.set_state(v1::PROBE_STATE_CANCELLED);
                                       probe.set_message(DiscardedText(why));
                                       return true;
                                     }),
                      unclassified_.end());
}

std::vector<std::string> BisectJob::OnWorkerGone(const std::string& worker, const std::string& why,
                                                 absl::Time now) {
  if (calibration_.Find(worker) == nullptr || finished()) return {};
  calibration_.worker(worker).gone = true;
  DropProbesOf(worker, absl::StrCat("its worker left: ", why), now, /*keep_measured=*/true);
  OnRoleHolderLost(worker, "left", now);
  UpdateProgress();
  return std::exchange(to_cancel_, {});
}

void BisectJob::ForgetWorker(const std::string& worker, const std::string& why, absl::Time now) {
  if (calibration_.Find(worker) == nullptr || finished()) return;
  DropProbesOf(worker, why, now);
  if (worker == calibration_.reference_worker()) return;  // The reference baselines stay.
  Calibration::Worker& state = calibration_.worker(worker);
  state.calibration = -1;
  state.classified = 0;
  Emit(v1::JOB_EVENT_KIND_DRIFT, MustCalibrateAgainText(worker, why), nullptr, now);
  v1::DriftEvent* event = status_.add_drift_events();
  event->set_worker(worker);
  *event->mutable_time() = ToProto(now);
  event->set_kind(DriftKindName(DriftKind::kIdentityChanged));
  event->set_detail(why);
}

// --- The result ---------------------------------------------------------------------------------

void BisectJob::MaybeFinish(absl::Time now) {
  if (finished() || status_.state() != v1::JOB_STATE_BISECTING || !search_.Done()) return;
  // Provisional verdicts count once their workers have calibrated.
  for (const v1::Probe& probe : status_.probes()) {
    if (probe.provisional()) return;
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
    const ConfirmationJudgement judgement = JudgeConfirmation(
        result.paired_samples(), result.samples(),
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

void BisectJob::UpdateProgress() {
  v1::Progress* progress = status_.mutable_progress();
  int finished_probes = 0;
  for (const v1::Probe& probe : status_.probes()) {
    if (probe.state() == v1::PROBE_STATE_FINISHED) ++finished_probes;
  }
  progress->set_probes_finished(finished_probes);
  progress->set_probes_in_flight(book_.InFlightCount());
  progress->set_remaining_commits(search_.RemainingCandidates());
  progress->set_estimated_rounds(Log2Ceil(std::max(1, search_.RemainingCandidates())));
}

void BisectJob::Emit(v1::JobEventKind kind, const std::string& message, const v1::Probe* probe,
                     absl::Time now) {
  v1::JobEvent event;
  event.set_kind(kind);
  event.set_message(message);
  *event.mutable_time() = ToProto(now);
  if (probe != nullptr) *event.mutable_probe() = *probe;
  *event.mutable_progress() = status_.progress();
  if (kind == v1::JOB_EVENT_KIND_FINISHED) *event.mutable_job() = status_;
  events_.push_back(std::move(event));
}

}  // namespace kbisect
