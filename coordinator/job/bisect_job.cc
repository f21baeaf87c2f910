// Copyright 2026 The kbisect Authors.
#include "coordinator/job/bisect_job.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "common/rpc/proto_time.h"
#include "common/spec/job_spec.h"
#include "common/stats/stats.h"
#include "coordinator/job/build_ahead.h"
#include "coordinator/job/build_capacity.h"
#include "coordinator/job/confidence_stop.h"
#include "coordinator/job/flaky_verdicts.h"
#include "coordinator/job/job_text.h"

namespace kbisect {
namespace {

// Each worker re-measures GOOD (an A/A control) after this many of its classified probes.
constexpr int kControlEvery = 8;
// Untested commits the open interval must still hold for an A/A control to be worth it.
constexpr int kControlMinUntested = 4;

// ceil(log2(n)) for n >= 1.
int Log2Ceil(int n) { return BisectSearch::EstimateRounds(n, 1); }

// `spec` with its defaults filled in (NormalizeSpec).
v1::JobSpec Normalized(v1::JobSpec spec) {
  NormalizeSpec(&spec);
  return spec;
}

}  // namespace

BisectJob::BisectJob(std::string job_id, v1::JobSpec spec, std::vector<v1::CommitRef> commits,
                     absl::Time now, std::vector<v1::CachedResult> cached)
    : commits_(std::move(commits)),
      ledger_(spec, commits_, &frame_, &book_, &calibration_),
      book_(job_id, Normalized(spec), &commits_),
      calibration_(&frame_, &book_.rows(), spec.metric().kind() == v1::METRIC_KIND_EXIT_CODE),
      reuse_(spec.no_cache() || spec.metric().kind() == v1::METRIC_KIND_EXIT_CODE
                 ? ResultReuse()
                 : ResultReuse(cached, commits_)),
      endpoints_(&frame_, &calibration_, &book_, spec.metric().kind() == v1::METRIC_KIND_EXIT_CODE),
      confirmation_(&frame_, &commits_, &ledger_.search(), &calibration_, &reuse_, &book_),
      confidence_(&frame_, &commits_, &calibration_, &ledger_, &book_, &confirmation_),
      result_(&frame_, &book_.rows(), &commits_, &calibration_, &ledger_, &confirmation_),
      standing_(&frame_, &book_, &ledger_, &calibration_, &confirmation_,
                spec.metric().kind() == v1::METRIC_KIND_EXIT_CODE),
      start_time_(now) {
  pass_fail_ = spec.metric().kind() == v1::METRIC_KIND_EXIT_CODE;
  NormalizeSpec(&spec);
  const int n = static_cast<int>(commits_.size()) - 1;
  frame_.job_id = std::move(job_id);
  frame_.spec = std::move(spec);
  frame_.create_time = now;
  frame_.good_sha = commits_.front().sha();
  frame_.bad_sha = commits_.back().sha();
  frame_.commit_count = n;
  frame_.direction = frame_.spec.direction();

  // The user's marks stand in for measurements. They were checked when the job was submitted
  // (Coordinator::SubmitJob); marks that no longer resolve are left out rather than guessed.
  absl::StatusOr<std::vector<v1::CommitMark>> marks = ResolveMarks(frame_.spec, commits_);
  if (marks.ok()) {
    for (v1::CommitMark& mark : *marks) *frame_.marks.Add() = std::move(mark);
  }
  RecordMarks(frame_.marks, &ledger_.search());
  ledger_.ShowInterval();

  // BAD is measured by the first worker to ask; GOOD by every worker (its calibration), the
  // first of which is the reference GOOD.
  const std::string bad_task = book_.NewTask(v1::PROBE_KIND_BASELINE_BAD, n, 0);
  calibration_.SetBadProbe(book_.at(bad_task).probe);
  book_.QueueBack(bad_task);
  ledger_.UpdateProgress();
  v1::JobEvent started;
  v1::JobStartedFact& fact = *started.mutable_started();
  fact.set_good_sha(frame_.good_sha);
  fact.set_bad_sha(frame_.bad_sha);
  fact.set_commits(n);
  fact.set_serial_steps(Log2Ceil(n));
  *fact.mutable_marks() = frame_.marks;
  fact.set_remaining_candidates(ledger_.search().RemainingCandidates());
  Emit(v1::JOB_EVENT_KIND_STARTED, std::move(started), nullptr, now);
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
  const std::set<std::string> unsettled = calibration_.OwingCalibration(ledger_.awaiting());
  // Taking part: not quarantined, not gone (BuildCapacity counts each one never seen building).
  std::vector<std::string> taking_part;
  for (const auto& [name, state] : calibration_.workers()) {
    if (!state.quarantined && !state.gone) taking_part.push_back(name);
    // A worker the job was only offered (never handed a task, nothing owed) plans as one it
    // does not know: PlanDispatch reads no field of it, so it is left out (with a thousand
    // workers offered over a job's life, copying each on every call was most of a dispatch).
    const bool blank = !state.quarantined && !state.gone && state.calibration < 0 &&
                       !state.must_calibrate && state.checked_out < 0 && unsettled.count(name) == 0;
    if (blank) continue;
    DispatchWorker& worker = input.workers[name];
    worker.quarantined = state.quarantined;
    worker.gone = state.gone;
    worker.calibration_started = state.calibration >= 0;
    worker.owes_calibration = unsettled.count(name) > 0;
    // Before the baselines are settled, a worker probes ahead while BAD's worker measures BAD
    // and then GOOD: kProbesAheadOfBaselines measured probes wait for them, placed together so
    // that they split the interval evenly (they are all of the first round).
    worker.waits_for_baselines = frame_.state != v1::JOB_STATE_BISECTING &&
                                 ledger_.FreshAwaitingOf(name) >= kProbesAheadOfBaselines;
    worker.must_calibrate = state.must_calibrate;
    worker.checked_out = state.checked_out;
  }
  // Anchors of every worker asking, the ones the job has not seen yet included (these take
  // part too).
  for (const std::string& name : idle) {
    input.workers[name].anchors = reuse_.Anchors(name);
    auto built = built_by_worker_.find(name);
    if (built != built_by_worker_.end()) input.workers[name].built = built->second;
    if (calibration_.workers().count(name) == 0) taking_part.push_back(name);
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
  for (const std::string& id : book_.active()) {
    const TaskEntry& entry = book_.at(id);
    const v1::Probe& probe = book_.probe(entry.probe);
    RunningTask running;
    running.kind = entry.task.kind();
    if (probe.has_start_time()) running.started = FromProto(probe.start_time());
    if (running.kind == v1::PROBE_KIND_BISECT) running.round = probe.round();
    running.worker = probe.worker();
    input.running.push_back(running);
  }
  std::map<std::string, absl::Time> last_end;  // Of each worker's tasks, for input.freed.
  for (const v1::Probe& probe : book_.rows()) {
    if (probe.has_end_time() && !probe.worker().empty()) {
      absl::Time& end = last_end.try_emplace(probe.worker(), absl::InfinitePast()).first->second;
      end = std::max(end, FromProto(probe.end_time()));
    }
    if (probe.state() != v1::PROBE_STATE_FINISHED || !probe.has_start_time() ||
        !probe.has_end_time() || probe.kind() == v1::PROBE_KIND_CONFIRM) {
      continue;
    }
    input.spans.push_back({probe.worker(), absl::ToDoubleSeconds(FromProto(probe.end_time()) -
                                                                 FromProto(probe.start_time()))});
  }
  // Workers that take part, hold no task and are not asking: when their last task ended.
  std::set<std::string> busy(idle.begin(), idle.end());
  for (const RunningTask& running : input.running) busy.insert(running.worker);
  for (const std::string& name : taking_part) {
    auto end = last_end.find(name);
    if (busy.count(name) == 0 && end != last_end.end()) input.freed.push_back({name, end->second});
  }
  // With a metric the reference GOOD comes with the BAD baseline (MakeReference).
  input.has_reference = calibration_.good_probe() >= 0 || !pass_fail_;
  if (calibration_.bad_probe() >= 0) {
    input.bad_task_id = book_.probe(calibration_.bad_probe()).probe_id();
    input.bad_worker = calibration_.BadWorker();
  }
  input.pass_fail = pass_fail_;
  input.first_wave = !pass_fail_ && frame_.state == v1::JOB_STATE_BASELINES &&
                     ledger_.steps() == 0 && ledger_.awaiting().empty() && !endpoints_.Ready();
  input.baselines_settled = frame_.state != v1::JOB_STATE_BASELINES;
  input.calibration_runs = calibration_.RunsForRole(/*reference=*/false, !reuse_.empty());
  input.builds = !frame_.spec.build_command().empty();
  input.round =
      RoundOfNewProbes(ledger_.search(), book_.rows(), ledger_.max_round(), FlakySearch());
  // On a host whose cores carry fewer builds than the job has workers, fewer tasks at once
  // (build_capacity.h): the round plan then places fewer points per round. The pools the
  // workers announced count only for a job that builds.
  input.max_workers = CapTasksInFlight(
      frame_.spec.max_workers(),
      BuildCapacity(taking_part, book_.rows(),
                    input.builds ? announced_pools_ : std::map<std::string, BuildPool>()));
  input.commit_count = frame_.commit_count;
  input.search = &ledger_.search();
  if (FlakySearch())
    input.chosen_points = FlakyPoints(frame_.commit_count, frame_.spec.max_runs(), calibration_,
                                      book_, ledger_.search(), static_cast<int>(idle.size()));
  return input;
}

std::vector<BisectJob::Assignment> BisectJob::TakeTasks(
    const std::vector<std::string>& workers, absl::Time now,
    const std::map<std::string, BuildPool>& pools,
    const std::map<std::string, std::vector<int>>& built) {
  Changed();
  std::vector<Assignment> out;
  if (finished()) return out;
  for (const auto& [worker, pool] : pools) announced_pools_[worker] = pool;
  for (const std::string& worker : workers) {
    auto commits = built.find(worker);
    if (commits == built.end()) {
      built_by_worker_.erase(worker);
    } else {
      built_by_worker_[worker] = commits->second;
    }
  }
  if (suite_hold_.has_value()) {
    // The lead's answer is in: the idle workers probe the suite's other ranges.
    for (const std::string& worker : workers) {
      auto known = calibration_.workers().find(worker);
      if (known != calibration_.workers().end()) known->second.gone = false;
    }
    DispatchSuiteProbes(workers, &out);
    book_.DropDoneFromQueue();
    return out;
  }
  ApplyCachedResults(now);
  if (finished()) return out;
  const DispatchPlan plan = PlanDispatch(MakeDispatchInput(workers), now);
  // A worker that asks again is no longer gone. One the job only saw asking gets no record: it
  // has no part in the job until it is handed a task (decision 171).
  for (const std::string& worker : plan.seen) {
    auto known = calibration_.workers().find(worker);
    if (known != calibration_.workers().end()) known->second.gone = false;
  }
  const int round =
      RoundOfNewProbes(ledger_.search(), book_.rows(), ledger_.max_round(), FlakySearch());
  for (const DispatchAssignment& assignment : plan.assignments) {
    switch (assignment.kind) {
      case DispatchAssignment::Kind::kQueued:
        HandOut(assignment.worker, assignment.task_id, &out);
        break;
      case DispatchAssignment::Kind::kCalibrate:
        Calibrate(assignment.worker, &out);
        break;
      case DispatchAssignment::Kind::kProbe: {
        // A flaky search may run an end of the interval again (its runs pin the fail rates): it
        // is no point of the search.
        if (assignment.commit_index > ledger_.search().last_good() &&
            assignment.commit_index < ledger_.search().first_bad()) {
          ledger_.search().MarkInFlight(assignment.commit_index);
        }
        const std::string id = book_.NewTask(v1::PROBE_KIND_BISECT, assignment.commit_index, round);
        // An anchor: one fresh run checks the GPU against its cached samples, which then count
        // for the verdict too (more runs follow if the samples cannot decide). A benchmark that
        // repeats exactly takes one run too (decision 229).
        book_.at(id).task.set_runs(reuse_.IsAnchor(assignment.worker, assignment.commit_index)
                                       ? 1
                                       : calibration_.RunsPerProbe());
        HandOut(assignment.worker, id, &out);
        break;
      }
    }
  }
  SpeculateConfirmations(plan, now, &out);
  const std::vector<int> in_flight = out.empty() ? std::vector<int>() : ledger_.search().InFlight();
  for (Assignment& a : out) {
    AddBuildsToKeep(commits_, ledger_.search().last_good(), ledger_.search().first_bad(), in_flight,
                    &a.task);
    if (!a.task.build_command().empty()) {
      a.task.set_build_order(BuildOrder(a.task.kind(), a.task.commit_index(),
                                        ledger_.search().last_good(),
                                        ledger_.search().first_bad()));
    }
  }
  // Queue entries that are done (cancelled) are dropped.
  book_.DropDoneFromQueue();
  if (!out.empty()) ledger_.UpdateProgress();
  return out;
}

void BisectJob::SpeculateConfirmations(const DispatchPlan& plan, absl::Time now,
                                       std::vector<Assignment>* out) {
  if (pass_fail_ || !frame_.spec.confirm() || frame_.state != v1::JOB_STATE_BISECTING ||
      ledger_.search().Done()) {
    return;
  }
  // Before the last round (most calls) there is nothing to speculate on: decided first.
  if (!confirmation_.HasSpeculationCandidates()) return;
  std::set<std::string> busy;
  for (const DispatchAssignment& assignment : plan.assignments) busy.insert(assignment.worker);
  std::vector<std::string> spare;
  const std::set<std::string> unsettled = calibration_.OwingCalibration(ledger_.awaiting());
  for (const std::string& worker : plan.seen) {
    if (busy.count(worker) > 0) continue;
    if (calibration_.Quarantined(worker)) continue;
    // A pair needs no calibration (the worker's offset cancels within it), but a worker whose
    // calibration is not done and that owes one (it measured in the job, or BAD) is left alone:
    // it calibrates first, and a GPU its calibration quarantines voids its pairs.
    if (!calibration_.CalibrationDone(worker) &&
        (unsettled.count(worker) > 0 || worker == calibration_.BadWorker())) {
      continue;
    }
    spare.push_back(worker);
  }
  if (frame_.spec.max_workers() > 0) {
    const int running = book_.InFlightCount();
    const int room = std::max(0, frame_.spec.max_workers() - running);
    if (static_cast<int>(spare.size()) > room) spare.resize(room);
  }
  if (spare.empty()) return;
  size_t next = 0;
  for (const std::string& id :
       confirmation_.CreateSpeculativeTasks(static_cast<int>(spare.size()), ConfirmationNow(now))) {
    HandOut(spare[next++], id, out);
  }
}

void BisectJob::HandOut(const std::string& worker, const std::string& task_id,
                        std::vector<Assignment>* out) {
  const bool bad_baseline = book_.at(task_id).probe == calibration_.bad_probe();
  const v1::Task& task = book_.HandOut(task_id, worker);
  calibration_.worker(worker).checked_out = task.commit_index();
  out->push_back({worker, task});
  if (bad_baseline && !pass_fail_) MakeReference(worker);
}

void BisectJob::Calibrate(const std::string& worker, std::vector<Assignment>* out) {
  const std::string id = book_.NewTask(v1::PROBE_KIND_BASELINE_GOOD, 0, 0, worker);
  book_.at(id).task.set_runs(calibration_.RunsAtHandOut(worker, !reuse_.empty()));
  const int position = book_.at(id).probe;
  calibration_.worker(worker).calibration = position;
  // With --exit-code the first GOOD measured is the reference GOOD (nothing to cancel). With a
  // metric the reference is BAD's worker's GOOD (MakeReference); a GOOD another worker measures
  // before BAD's worker gets to it stands in for it, so that the endpoint verdict comes one
  // measurement span earlier, provisionally (two GPUs), until BAD's worker's own GOOD takes the
  // role back (Calibration::AdoptBadWorkersReference, decision 43).
  if (calibration_.good_probe() < 0 && pass_fail_) calibration_.SetReference(worker, position);
  if (!pass_fail_ && calibration_.ReferenceNotStarted() && worker != calibration_.BadWorker()) {
    calibration_.SetReference(worker, position);
  }
  HandOut(worker, id, out);
}

// --- Journal ------------------------------------------------------------------------------------

BisectJob::Applied BisectJob::Apply(const JournalEntry& entry) {
  Changed();
  Applied out;
  switch (entry.kind) {
    case JournalEntry::Kind::kTakeTasks:
      out.assignments = TakeTasks(entry.workers, entry.time, entry.pools, entry.built);
      break;
    case JournalEntry::Kind::kTaskStarted:
      OnTaskStarted(entry.task_id, entry.worker, entry.attempt, entry.time);
      break;
    case JournalEntry::Kind::kTaskFinished:
      out.cancel = OnTaskFinished(entry.task_id, entry.result, entry.time);
      break;
    case JournalEntry::Kind::kTaskLost:
      out.cancel = OnTaskLost(entry.task_id, entry.reason, entry.time);
      break;
    case JournalEntry::Kind::kWorkerGone:
      out.cancel = OnWorkerGone(entry.worker, entry.reason, entry.time);
      break;
    case JournalEntry::Kind::kForgetWorker:
      ForgetWorker(entry.worker, entry.reason, entry.time);
      break;
    case JournalEntry::Kind::kCancel:
      out.cancel = Cancel(entry.reason, entry.time);
      break;
  }
  return out;
}

// --- Results ------------------------------------------------------------------------------------

void BisectJob::OnTaskStarted(const std::string& task_id, const std::string& worker, int attempt,
                              absl::Time now) {
  Changed();
  TaskEntry* entry = book_.Find(task_id);
  if (entry == nullptr || entry->done) return;
  v1::Probe& probe = ProbeOf(*entry);
  probe.set_worker(worker);
  probe.set_attempt(attempt);
  *probe.mutable_start_time() = ToProto(now);
}

std::vector<std::string> BisectJob::OnTaskFinished(const std::string& task_id,
                                                   const v1::TaskResult& reported, absl::Time now) {
  Changed();
  TaskEntry* found = book_.Find(task_id);
  if (found == nullptr || !found->active || found->done || finished()) return {};
  TaskEntry& entry = *found;
  v1::TaskResult projected;
  const v1::TaskResult& result = ResultOfLead(entry, reported, &projected);
  if (result.outcome() == v1::TASK_OUTCOME_INFRA_ERROR ||
      result.outcome() == v1::TASK_OUTCOME_CANCELLED) {
    return OnTaskLost(task_id, result.message(), now);
  }
  book_.Deactivate(task_id);
  entry.done = true;
  // Every metric of a suite is judged on the rows as this result leaves them.
  suite_.Learn(result);
  absl::Cleanup judge_suite = [this] { ExtendSuiteBaselines(); };
  const bool measured = RecordResult(result, now, &ProbeOf(entry));
  const v1::Probe& probe = ProbeOf(entry);
  if (probe.kind() == v1::PROBE_KIND_SUITE) {
    // For the suite's rows only (a failure leaves that commit to the others), which
    // OnSuiteProbeFinished judges itself.
    std::move(judge_suite).Cancel();
    OnSuiteProbeFinished(entry.probe, now);
    return std::exchange(to_cancel_, {});
  }
  if (probe.kind() == v1::PROBE_KIND_CONFIRM) {
    FollowConfirmation(confirmation_.OnResult(probe, entry.task, result, ConfirmationNow(now)),
                       now);
    return std::exchange(to_cancel_, {});
  }
  if (measured && !pass_fail_) CheckCachedResults(entry.probe, now);
  const bool baseline =
      entry.probe == calibration_.good_probe() || entry.probe == calibration_.bad_probe();
  const bool of_good =
      probe.kind() == v1::PROBE_KIND_BASELINE_GOOD || probe.kind() == v1::PROBE_KIND_CONTROL;
  if (of_good && (!baseline || (!measured && calibration_.AnotherWorkerLeft(probe.worker())))) {
    OnGoodOffReference(entry.probe, measured, result.message(), now);
    MaybeFinish(now);
    ledger_.UpdateProgress();
    return std::exchange(to_cancel_, {});
  }
  if (baseline && !measured) {
    const bool good = entry.probe == calibration_.good_probe();
    Finish(v1::OUTCOME_ERROR, BaselineFailedText(good, probe, result), now);
    return std::exchange(to_cancel_, {});
  }
  if (baseline) {
    if (endpoints_.Ready()) {
      FollowEndpoint(endpoints_.Evaluate(), now);
      if (!finished() && frame_.bisecting()) RecheckCalibrations(now);
    }
  } else {
    OnProbeFinished(entry.probe, measured, now);
  }
  FollowEndpoint(endpoints_.ReassessIfNoisy(), now);
  ApplyCachedResults(now);
  MaybeFinish(now);
  ledger_.UpdateProgress();
  return std::exchange(to_cancel_, {});
}

const v1::TaskResult& BisectJob::ResultOfLead(const TaskEntry& entry,
                                              const v1::TaskResult& reported,
                                              v1::TaskResult* projected) const {
  // A suite's task handed out before the job knew its lead measured the same runs; its samples
  // are the lead's from them.
  const bool project = suite_.active() && !frame_.metric_name.empty() &&
                       entry.task.kind() != v1::PROBE_KIND_CONFIRM &&
                       reported.metric_name() != frame_.metric_name;
  if (!project) return reported;
  *projected = reported;
  ProjectOnLead(frame_.metric_name, projected);
  return *projected;
}

bool BisectJob::RecordResult(const v1::TaskResult& result, absl::Time now, v1::Probe* probe) {
  const bool first_result = probe->runs_size() == 0;
  probe->set_state(v1::PROBE_STATE_FINISHED);
  probe->set_outcome(result.outcome());
  for (double sample : result.samples()) probe->add_samples(sample);
  for (const v1::RunRecord& run : result.runs()) *probe->add_runs() = run;
  AddTimings(result.timings(), probe->mutable_timings(), first_result);
  probe->set_message(result.message());
  probe->set_log_tail(result.log_tail());
  probe->set_worker_hardware_class(result.hardware_class());
  if (result.has_manifest()) *probe->mutable_manifest() = result.manifest();
  *probe->mutable_end_time() = ToProto(now);
  tally_.bench_runs += result.runs_size();
  const bool measured = Measured(*probe);
  if (!measured || pass_fail_) return measured;
  probe->set_median(MedianOrZero(probe->samples()));
  if (frame_.metric_name.empty()) {
    frame_.metric_name = result.metric_name();
    book_.SetLeadMetric(result.metric_name());
    frame_.metric_unit = result.metric_unit();
  }
  if (frame_.direction == v1::DIRECTION_UNSPECIFIED &&
      result.metric_direction() != v1::DIRECTION_UNSPECIFIED) {
    frame_.direction = result.metric_direction();
  }
  return measured;
}

void BisectJob::OnGoodOffReference(int position, bool measured, const std::string& failure,
                                   absl::Time now) {
  const v1::Probe& probe = book_.probe(position);
  const std::string worker = probe.worker();
  if (!measured) {
    // A worker that cannot run GOOD (its calibration, an A/A control, or the reference GOOD
    // while another worker can take over) is quarantined. Only when no worker is left is GOOD
    // itself broken (OnTaskFinished).
    QuarantineDecision decision;
    decision.worker = worker;
    decision.kind = v1::DRIFT_KIND_CALIBRATION_FAILED;
    decision.failure = failure;
    Quarantine(decision, now);
    return;
  }
  if (probe.kind() == v1::PROBE_KIND_CONTROL && frame_.bisecting()) {
    if (std::optional<QuarantineDecision> drift = calibration_.CheckControl(worker, probe)) {
      Quarantine(*drift, now);
    }
  } else if (calibration_.AdoptBadWorkersReference(position)) {
    // BAD's worker measured GOOD after another worker's GOOD stood in for it: the endpoint
    // verdict is made again (or for the first time) on one GPU.
    if (frame_.bisecting()) {
      FollowEndpoint(endpoints_.Settle(), now);
    } else if (endpoints_.Ready()) {
      FollowEndpoint(endpoints_.Evaluate(), now);
    }
    if (!finished() && frame_.bisecting()) RecheckCalibrations(now);
  } else if (frame_.bisecting()) {
    RecheckCalibrations(now);
  }
}

void BisectJob::OnProbeFinished(int position, bool measured, absl::Time now) {
  const std::string worker = book_.probe(position).worker();
  if (!measured && (pass_fail_ || calibration_.CalibrationDone(worker))) {
    ApplyVerdict(position, v1::VERDICT_SKIP, now);
  } else if (!measured) {
    // A failure on a GPU not calibrated yet: the commit may be broken, or the GPU. It counts as
    // a skip once the worker has run GOOD (a worker that cannot is quarantined instead).
    calibration_.worker(worker).must_calibrate = true;
    ledger_.Await(position);
  } else if (calibration_.WorkerReady(worker)) {
    Classify(position, now);
  } else {
    ledger_.Await(position);
  }
}

void BisectJob::RecheckCalibrations(absl::Time now) {
  for (const Calibration::TopUp& top_up : calibration_.TopUps()) {
    book_.Extend(top_up.row, top_up.runs);
  }
  // Quarantining may change the reference and add probes: decided first, applied after.
  for (const QuarantineDecision& outlier : calibration_.FindOutliers()) Quarantine(outlier, now);
  FollowStanding(standing_.SharpenCalibrations(now), now);
  SettleProvisional(now);
  ClassifyPending(now);
}

void BisectJob::SettleProvisional(absl::Time now) {
  if (std::optional<RestatedBad> bad = standing_.RestateBad()) {
    v1::Baseline* base = frame_.recorded.baselines.mutable_bad();
    base->mutable_samples()->Assign(bad->samples.begin(), bad->samples.end());
    base->set_median(MedianOrZero(bad->samples));
    frame_.recorded.regression_pct =
        RegressionPercent(frame_.good_baseline().median(), base->median(), frame_.direction);
    Emit(v1::JOB_EVENT_KIND_WARNING, std::move(bad->warning), nullptr, now);
    ledger_.RetractAll(now);
  }
  standing_.SettleProvisional(now);
}

void BisectJob::FollowStanding(StandingStep step, absl::Time now) {
  to_cancel_.insert(to_cancel_.end(), step.to_cancel.begin(), step.to_cancel.end());
  if (step.back_to_baselines && frame_.bisecting()) frame_.state = v1::JOB_STATE_BASELINES;
  for (v1::JobWarning& warning : step.warnings) {
    Emit(v1::JOB_EVENT_KIND_WARNING, std::move(warning), nullptr, now);
  }
}

std::vector<std::string> BisectJob::OnTaskLost(const std::string& task_id, const std::string& why,
                                               absl::Time now) {
  Changed();
  TaskEntry* found = book_.Find(task_id);
  if (found == nullptr || !found->active || found->done || finished()) return {};
  TaskEntry& entry = *found;
  book_.Deactivate(task_id);
  v1::Probe& probe = ProbeOf(entry);
  if (!entry.pinned_worker.empty()) {
    // Work only its worker could do: the worker is gone (see WorkerStanding::LosePinnedTask).
    const std::string worker = entry.pinned_worker;
    FollowStanding(standing_.LosePinnedTask(entry, why, now), now);
    OnRoleHolderLost(worker, "was lost", now);
    MaybeFinish(now);  // Its calibration is no longer owed (see OnWorkerGone).
    ledger_.UpdateProgress();
    return std::exchange(to_cancel_, {});
  }
  if (probe.attempt() < kMaxAttempts) {
    probe.set_state(v1::PROBE_STATE_PENDING);
    probe.set_message(AttemptLostText(probe.attempt(), why));
    book_.QueueFront(task_id);
    ledger_.UpdateProgress();
    return {};
  }
  entry.done = true;
  probe.set_state(v1::PROBE_STATE_FINISHED);
  probe.set_outcome(v1::TASK_OUTCOME_INFRA_ERROR);
  probe.set_message(GaveUpText(probe.attempt(), why));
  if (probe.kind() == v1::PROBE_KIND_SUITE) {
    ContinueSuiteSearch(now);
    return std::exchange(to_cancel_, {});
  }
  if (entry.probe == calibration_.good_probe() || entry.probe == calibration_.bad_probe()) {
    Finish(v1::OUTCOME_ERROR,
           BaselineGaveUpText(entry.probe == calibration_.good_probe(), probe.message()), now);
    return std::exchange(to_cancel_, {});
  }
  if (probe.kind() == v1::PROBE_KIND_CONFIRM) {
    v1::TaskResult failed;
    failed.set_outcome(v1::TASK_OUTCOME_INFRA_ERROR);
    failed.set_message(probe.message());
    FollowConfirmation(confirmation_.OnResult(probe, entry.task, failed, ConfirmationNow(now)),
                       now);
    ledger_.UpdateProgress();
    return std::exchange(to_cancel_, {});
  }
  ApplyVerdict(entry.probe, v1::VERDICT_SKIP, now);
  MaybeFinish(now);
  ledger_.UpdateProgress();
  return std::exchange(to_cancel_, {});
}

std::vector<std::string> BisectJob::Cancel(const std::string& reason, absl::Time now) {
  Changed();
  if (finished()) return {};
  Finish(v1::OUTCOME_CANCELLED, CancelledText(reason), now);
  return std::exchange(to_cancel_, {});
}

bool BisectJob::finished() const { return frame_.finished(); }

std::vector<v1::JobEvent> BisectJob::TakeEvents() { return events_.Take(); }

std::vector<std::string> BisectJob::ActiveTaskIds() const { return book_.ActiveTaskIds(); }

const v1::Task* BisectJob::TaskOf(const std::string& task_id) const {
  const TaskEntry* entry = book_.Find(task_id);
  return entry == nullptr ? nullptr : &entry->task;
}

std::vector<int> BisectJob::IndicesInsideInterval(const std::set<std::string>& shas) const {
  std::vector<int> indices;
  if (finished() || shas.empty()) return indices;
  const BisectSearch& search = ledger_.search();
  for (int index = search.last_good() + 1; index < search.first_bad(); ++index) {
    if (shas.count(commits_[index].sha()) > 0) indices.push_back(index);
  }
  return indices;
}

std::vector<v1::Task> BisectJob::BuildAheadTasks(int limit) const {
  std::vector<v1::Task> tasks;
  // A dependency follow-up builds in the slots' own checkouts, never in the host's build cache
  // (whose key is one repository's commit): nothing to build ahead.
  if (finished() || suite_hold_.has_value() || frame_.spec.build_command().empty() ||
      frame_.spec.has_dependency() || limit <= 0) {
    return tasks;
  }
  // BAD's worker measures the reference GOOD next, until it has been measured.
  bool bad_running = false;
  for (const auto& [id, entry] : book_.tasks()) {
    bad_running = bad_running || (entry.active && entry.task.kind() == v1::PROBE_KIND_BASELINE_BAD);
  }
  const int good = calibration_.good_probe();
  const bool good_measured = good >= 0 && book_.probe(good).state() == v1::PROBE_STATE_FINISHED;
  for (int index :
       PlanBuildAhead(ledger_.search(), calibration_.ActiveWorkers(frame_.spec.max_workers()),
                      limit, bad_running && !good_measured)) {
    tasks.push_back(BuildAheadTask(frame_.job_id, frame_.spec, commits_[index], index));
  }
  return tasks;
}

// --- Verdicts -----------------------------------------------------------------------------------

void BisectJob::ClassifyPending(absl::Time now) {
  std::vector<int> pending = ledger_.TakeAwaiting();
  for (int position : pending) {
    if (finished()) return;
    const v1::Probe& probe = book_.probe(position);
    if (probe.state() != v1::PROBE_STATE_FINISHED) continue;
    if (probe.index() <= ledger_.search().last_good() ||
        probe.index() >= ledger_.search().first_bad())
      continue;
    if (!calibration_.WorkerReady(probe.worker())) {
      ledger_.Await(position);
      continue;
    }
    if (!Measured(probe)) {
      ApplyVerdict(position, v1::VERDICT_SKIP, now);
      continue;
    }
    Classify(position, now);
  }
}

void BisectJob::Classify(int probe_position, absl::Time now) {
  v1::Probe& probe = book_.mutable_probe(probe_position);
  if (pass_fail_ && frame_.spec.flaky()) {
    ClassifyFlaky(probe_position, now);
    return;
  }
  if (pass_fail_) {
    ApplyVerdict(probe_position,
                 probe.outcome() == v1::TASK_OUTCOME_PASSED ? v1::VERDICT_GOOD : v1::VERDICT_BAD,
                 now);
    return;
  }
  if (frame_.spec.confidence() > 0 &&
      (probe.verdict() == v1::VERDICT_GOOD || probe.verdict() == v1::VERDICT_BAD)) {
    // Measured again for --confidence: the verdict stands, or the other side is recorded.
    if (std::optional<CulpritConfidence::Reversal> reversal = confidence_.Reverse(probe_position)) {
      const std::string why = WarningWords(reversal->warning);
      Emit(v1::JOB_EVENT_KIND_WARNING, reversal->warning, &probe, now);
      ledger_.Retract({probe_position}, /*probe_again=*/false, why, now);
      // Its samples are the posterior's, not the classifier's (it has run past what the
      // classifier would ask): the side they say is its verdict, and the search goes on from it.
      book_.mutable_probe(probe_position).set_message(why);
      ApplyVerdict(probe_position, reversal->side, now);
      ClassifyPending(now);
    }
    return;
  }
  const ProbeClassification c = calibration_.Judge(probe);
  probe.set_median(c.median);
  probe.set_p_value_vs_good(c.p_value_vs_good);
  probe.set_p_value_vs_bad(c.p_value_vs_bad);
  if (c.more_runs > 0 && !calibration_.CalibrationDone(probe.worker())) {
    // The pool cannot decide a probe of a GPU that has not run GOOD: its offset may be why. It
    // calibrates first, and the probe is judged again then (more runs only if still needed).
    calibration_.worker(probe.worker()).must_calibrate = true;
    probe.set_message(c.reason);
    ledger_.Await(probe_position);
    return;
  }
  if (c.more_runs > 0) {
    probe.set_message(c.reason);
    book_.Extend(probe_position, c.more_runs);
    return;
  }
  if (c.verdict == v1::VERDICT_AMBIGUOUS) probe.set_message(c.reason);
  const CulpritConfidence::Side side = confidence_.Resolve(probe_position, c.verdict);
  if (!side.note.empty()) probe.set_message(absl::StrCat(probe.message(), side.note));
  ApplyVerdict(probe_position, side.verdict, now);
}

void BisectJob::ApplyVerdict(int probe_position, v1::Verdict verdict, absl::Time now) {
  v1::Probe& probe = book_.mutable_probe(probe_position);
  if (!ledger_.Record(probe_position, verdict)) {
    // It contradicts the verdicts recorded: a skip until a verdict is taken back.
    v1::JobWarning contradiction;
    contradiction.mutable_contradiction()->set_sha(probe.sha());
    contradiction.mutable_contradiction()->set_verdict(verdict);
    Warn(std::move(contradiction));
    verdict = v1::VERDICT_SKIP;
  }
  probe.set_verdict(verdict);
  probe.set_provisional(calibration_.IsProvisional(probe));
  if (verdict == v1::VERDICT_SKIP || verdict == v1::VERDICT_AMBIGUOUS) {
    ledger_.CountSkip();
  }
  ledger_.CountStep(probe.round());
  if (!pass_fail_ && calibration_.CalibrationDone(probe.worker()) &&
      ++calibration_.worker(probe.worker()).classified % kControlEvery == 0 &&
      ledger_.search().first_bad() - ledger_.search().last_good() - 1 >= kControlMinUntested) {
    // An A/A control: GOOD again on this worker, to catch a GPU that drifts during the job.
    // Not when only a probe or two are left: the control would cost as much as what it guards,
    // and the confirmation re-measures the culprit and its parent anyway.
    // Sized like a calibration: enough runs to tell a move of a third of the step from the noise.
    const std::string control = book_.NewTask(v1::PROBE_KIND_CONTROL, 0, 0, probe.worker());
    book_.at(control).task.set_runs(calibration_.RunsNeeded());
    book_.QueueFront(control);
  }
  ledger_.ShowInterval();
  CancelUseless(now);
  v1::JobEvent finished;
  v1::ProbeFinishedFact& line = *finished.mutable_probe_finished();
  line.set_commits_left(std::max(0, ledger_.search().RemainingCandidates() - 1));
  line.set_in_flight(book_.InFlightCount());
  line.set_step(ledger_.steps());
  line.set_pass_fail(pass_fail_);
  line.set_unit(frame_.metric_unit);
  line.set_runs_per_commit(calibration_.RunsPerProbe());
  // Probes still to come after those in flight, with this job's workers: each in-flight point
  // splits the interval once it reports.
  const int pending = static_cast<int>(ledger_.search().InFlight().size());
  const int after_in_flight = (ledger_.search().RemainingCandidates() + pending) / (pending + 1);
  line.set_steps_estimated(
      ledger_.steps() + line.in_flight() +
      BisectSearch::EstimateProbes(after_in_flight,
                                   calibration_.ActiveWorkers(frame_.spec.max_workers())));
  // The probe may have moved in the table (NewTask above): read it again.
  Emit(v1::JOB_EVENT_KIND_PROBE_FINISHED, std::move(finished), &book_.probe(probe_position), now);
}

void BisectJob::CancelUseless(absl::Time now) {
  for (int index : ledger_.search().UselessInFlight()) {
    ledger_.search().Abandon(index);
    for (auto& [id, entry] : book_.tasks()) {
      if (entry.done || entry.task.kind() != v1::PROBE_KIND_BISECT ||
          entry.task.commit_index() != index) {
        continue;
      }
      book_.CancelTask(entry, id, OutsideIntervalText(), now, &to_cancel_);
      ledger_.CountCancelled();
      const v1::Probe& probe = ProbeOf(entry);
      v1::JobEvent cancelled;
      cancelled.mutable_probe_cancelled()->set_sha(probe.sha());
      Emit(v1::JOB_EVENT_KIND_PROBE_CANCELLED, std::move(cancelled), &probe, now);
    }
  }
  // Measured but unclassified probes outside the interval are no longer needed.
  ledger_.DropAwaitingOutsideInterval();
}

// --- Progress and events -----------------------------------------------------------------------

}  // namespace kbisect
