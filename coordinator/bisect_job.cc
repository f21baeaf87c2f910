// Copyright 2026 The kbisect Authors.
#include "coordinator/bisect_job.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/rpc/proto_time.h"
#include "common/search/round_plan.h"
#include "common/stats/stats.h"
#include "coordinator/probe_classifier.h"
#include "google/protobuf/util/time_util.h"

namespace kbisect {
namespace {

using google::protobuf::util::TimeUtil;

constexpr int kDefaultRuns = 3;
constexpr int kDefaultMaxRuns = 30;
// Each worker re-measures GOOD (an A/A control) after this many of its classified probes.
constexpr int kControlEvery = 8;
// Untested commits the open interval must still hold for an A/A control to be worth it.
constexpr int kControlMinUntested = 4;
// A running probe whose elapsed time is within these fractions of the job's typical measurement
// span is "due soon" (see ResultDueSoon).
constexpr double kDueFraction = 0.7;
constexpr double kOverdueFraction = 1.3;
// A culprit explaining less than this share of the GOOD->BAD move suggests several steps.
constexpr double kSingleStepShare = 0.6;
constexpr double kDefaultThreshold = 0.3;

std::string Short(const std::string& sha) { return sha.substr(0, 7); }

double Median(const std::vector<double>& values) { return kbisect::Median(values).value_or(0); }

// ceil(log2(n)) for n >= 1.
int Log2Ceil(int n) { return BisectSearch::EstimateRounds(n, 1); }

}  // namespace

BisectJob::BisectJob(std::string job_id, v1::JobSpec spec, std::vector<v1::CommitRef> commits,
                     absl::Time now)
    : commits_(std::move(commits)),
      search_(static_cast<int>(commits_.size()) - 1),
      start_time_(now) {
  pass_fail_ = spec.metric().kind() == v1::METRIC_KIND_EXIT_CODE;
  if (spec.runs_per_commit() <= 0) spec.set_runs_per_commit(pass_fail_ ? 1 : kDefaultRuns);
  if (spec.max_runs() < spec.runs_per_commit()) {
    spec.set_max_runs(std::max(kDefaultMaxRuns, spec.runs_per_commit()));
  }
  if (spec.threshold_fraction() <= 0) spec.set_threshold_fraction(kDefaultThreshold);
  if (spec.history() == v1::HISTORY_MODE_UNSPECIFIED) {
    spec.set_history(v1::HISTORY_MODE_FIRST_PARENT);
  }
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
  const std::string bad_task = NewTask(v1::PROBE_KIND_BASELINE_BAD, n, 0);
  bad_probe_ = tasks_.at(bad_task).probe;
  queue_.push_back(bad_task);
  UpdateProgress();
  Emit(v1::JOB_EVENT_KIND_STARTED,
       absl::StrFormat("Bisect range: %s..%s\nTotal commits in range: %d\n"
                       "Estimated steps with one worker (git bisect): %d",
                       Short(status_.good_sha()), Short(status_.bad_sha()), n, Log2Ceil(n)),
       nullptr, now);
}

std::string BisectJob::NewTask(v1::ProbeKind kind, int index, int round,
                               const std::string& pinned_worker) {
  const std::string id = absl::StrCat(status_.job_id(), "/p", next_task_++);
  TaskEntry entry;
  entry.pinned_worker = pinned_worker;
  v1::Task& task = entry.task;
  const v1::JobSpec& spec = status_.spec();
  task.set_task_id(id);
  task.set_job_id(status_.job_id());
  task.set_kind(kind);
  task.set_repository(spec.repository());
  task.set_commit_sha(commits_[index].sha());
  task.set_commit_index(index);
  task.set_build_command(spec.build_command());
  *task.mutable_bench_command() = spec.bench_command();
  *task.mutable_env() = spec.env();
  *task.mutable_metric() = spec.metric();
  task.set_runs(spec.runs_per_commit());
  task.set_discard_throttled(spec.discard_throttled());
  if (spec.has_build_timeout()) *task.mutable_build_timeout() = spec.build_timeout();
  if (spec.has_bench_timeout()) *task.mutable_bench_timeout() = spec.bench_timeout();

  v1::Probe* probe = status_.add_probes();
  probe->set_probe_id(id);
  probe->set_kind(kind);
  probe->set_sha(commits_[index].sha());
  probe->set_index(index);
  probe->set_round(round);
  probe->set_state(v1::PROBE_STATE_PENDING);
  entry.probe = status_.probes_size() - 1;
  tasks_.emplace(id, std::move(entry));
  return id;
}

bool BisectJob::ResultDueSoon(absl::Time now) const {
  // The typical span of one measurement (lease to result) in this job so far. A worker's first
  // measurement is left out while others exist: it pays for the worker's first checkout (a
  // whole tree in a fresh cache, or a long jump from where the last job left the slot), which
  // later probes of nearby commits do not.
  std::vector<double> spans;
  std::vector<double> first_spans;
  std::set<std::string> seen;
  for (const v1::Probe& probe : status_.probes()) {
    if (probe.state() != v1::PROBE_STATE_FINISHED || !probe.has_start_time() ||
        !probe.has_end_time() || probe.kind() == v1::PROBE_KIND_CONFIRM) {
      continue;
    }
    const double span =
        absl::ToDoubleSeconds(FromProto(probe.end_time()) - FromProto(probe.start_time()));
    if (span <= 0) continue;
    (seen.insert(probe.worker()).second ? first_spans : spans).push_back(span);
  }
  if (spans.empty()) spans = std::move(first_spans);
  if (spans.empty()) return false;
  const double typical = Median(spans);
  for (const auto& [id, entry] : tasks_) {
    // Any measurement about to end frees a worker (a calibration or a baseline too): new points
    // placed together with it split the interval evenly; placed one by one they fill the
    // largest gap first and can leave a piece twice the size of the others.
    if (!entry.active || entry.task.kind() == v1::PROBE_KIND_CONFIRM) continue;
    const v1::Probe& probe = status_.probes(entry.probe);
    if (!probe.has_start_time()) continue;
    const double elapsed = absl::ToDoubleSeconds(now - FromProto(probe.start_time()));
    if (elapsed >= kDueFraction * typical && elapsed <= kOverdueFraction * typical) return true;
  }
  return false;
}

int BisectJob::InFlightCount() const {
  int count = 0;
  for (const auto& [id, entry] : tasks_) count += entry.active ? 1 : 0;
  return count;
}

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

std::vector<BisectJob::Assignment> BisectJob::TakeTasks(const std::vector<std::string>& workers,
                                                        absl::Time now) {
  std::vector<Assignment> out;
  if (finished()) return out;
  const int cap = status_.spec().max_workers();
  auto room = [&]() { return cap <= 0 || InFlightCount() < cap; };
  auto hand_out = [&](const std::string& worker, const std::string& id) {
    TaskEntry& entry = tasks_.at(id);
    entry.active = true;
    ProbeOf(entry).set_state(v1::PROBE_STATE_RUNNING);
    ProbeOf(entry).set_worker(worker);
    workers_[worker].checked_out = entry.task.commit_index();
    out.push_back({worker, entry.task});
  };
  auto calibrate = [&](const std::string& worker) {
    WorkerState& state = workers_[worker];
    const std::string id = NewTask(v1::PROBE_KIND_BASELINE_GOOD, 0, 0, worker);
    state.calibration = tasks_.at(id).probe;
    if (good_probe_ < 0) {
      // The first GOOD measured in the job is the reference GOOD.
      good_probe_ = state.calibration;
      reference_worker_ = worker;
    }
    hand_out(worker, id);
  };
  // Before the baselines are settled, a worker probes ahead once: its measured probe waits
  // for them, and further guesses would be spent on an interval nobody has narrowed yet.
  auto waits_for_baselines = [&](const std::string& worker) {
    return status_.state() != v1::JOB_STATE_BISECTING &&
           std::any_of(unclassified_.begin(), unclassified_.end(),
                       [&](int position) { return status_.probes(position).worker() == worker; });
  };
  std::vector<std::string> probing;
  std::vector<std::string> uncalibrated;
  for (const std::string& worker : workers) {
    if (!room()) break;
    WorkerState& state = workers_[worker];
    if (state.quarantined) continue;
    state.gone = false;
    // Queued work this worker may run: pinned to it, or free for anyone.
    auto queued = std::find_if(queue_.begin(), queue_.end(), [&](const std::string& id) {
      const TaskEntry& entry = tasks_.at(id);
      return !entry.done && !entry.active &&
             (entry.pinned_worker.empty() || entry.pinned_worker == worker);
    });
    if (queued != queue_.end()) {
      const std::string id = *queued;
      queue_.erase(queued);
      hand_out(worker, id);
      continue;
    }
    if (state.calibration < 0) {
      if (good_probe_ < 0) {
        calibrate(worker);
      } else {
        uncalibrated.push_back(worker);
      }
      continue;
    }
    if (!waits_for_baselines(worker)) probing.push_back(worker);
  }
  if (!uncalibrated.empty()) {
    // Uncalibrated workers calibrate as soon as the round plan can afford it, the BAD baseline's
    // worker and those holding provisional verdicts first; the others probe meanwhile, and their
    // verdicts are provisional until they calibrate.
    std::stable_partition(uncalibrated.begin(), uncalibrated.end(),
                          [&](const std::string& worker) { return OwesCalibration(worker); });
    int allowed = CalibrationsToStart(workers);
    for (const std::string& worker : uncalibrated) {
      if (!room()) break;
      if (search_.Done()) {
        if (OwesCalibration(worker)) calibrate(worker);
        continue;
      }
      if (allowed > 0) {
        --allowed;
        calibrate(worker);
        continue;
      }
      if (!waits_for_baselines(worker)) probing.push_back(worker);
    }
  }
  // Queue entries that are done (cancelled) are dropped.
  queue_.erase(std::remove_if(queue_.begin(), queue_.end(),
                              [&](const std::string& id) { return tasks_.at(id).done; }),
               queue_.end());
  int budget = static_cast<int>(probing.size());
  if (cap > 0) budget = std::min(budget, cap - InFlightCount());
  // A probe about to report narrows the interval any moment: new points placed now would split
  // the old interval and many would be cancelled. A calibration or baseline about to end frees
  // a worker whose point is better placed together with these. Idle workers wait for it (the
  // result dispatches again); a measurement running late does not hold them.
  if (budget > 0 && ResultDueSoon(now)) budget = 0;
  if (budget > 0) {
    const int round = max_round_recorded_ + 1;
    // Each point goes to the idle worker whose checkout is nearest (closest pair first): a
    // checkout costs about one file write per commit between the two.
    std::vector<int> indices = search_.NextProbes(budget);
    std::vector<bool> taken(probing.size(), false);
    std::vector<bool> placed(indices.size(), false);
    for (size_t assigned = 0; assigned < indices.size(); ++assigned) {
      size_t best_worker = 0;
      size_t best_index = 0;
      long best = -1;
      for (size_t w = 0; w < probing.size(); ++w) {
        if (taken[w]) continue;
        const int at = workers_[probing[w]].checked_out;
        for (size_t i = 0; i < indices.size(); ++i) {
          if (placed[i]) continue;
          const long distance = at < 0 ? status_.commit_count() + 1L : std::abs(at - indices[i]);
          if (best < 0 || distance < best) {
            best = distance;
            best_worker = w;
            best_index = i;
          }
        }
      }
      taken[best_worker] = true;
      placed[best_index] = true;
      hand_out(probing[best_worker], NewTask(v1::PROBE_KIND_BISECT, indices[best_index], round));
    }
  }
  if (!out.empty()) UpdateProgress();
  return out;
}

void BisectJob::OnTaskStarted(const std::string& task_id, const std::string& worker, int attempt,
                              absl::Time now) {
  auto it = tasks_.find(task_id);
  if (it == tasks_.end() || it->second.done) return;
  v1::Probe& probe = ProbeOf(it->second);
  probe.set_worker(worker);
  probe.set_attempt(attempt);
  *probe.mutable_start_time() = ToProto(now);
}

std::vector<std::string> BisectJob::OnTaskFinished(const std::string& task_id,
                                                   const v1::TaskResult& result, absl::Time now) {
  auto it = tasks_.find(task_id);
  if (it == tasks_.end() || !it->second.active || it->second.done || finished()) return {};
  TaskEntry& entry = it->second;
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
    probe.set_median(Median(std::vector<double>(probe.samples().begin(), probe.samples().end())));
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
  const bool baseline = entry.probe == good_probe_ || entry.probe == bad_probe_;
  const bool of_good =
      probe.kind() == v1::PROBE_KIND_BASELINE_GOOD || probe.kind() == v1::PROBE_KIND_CONTROL;
  if (!measured && of_good && (!baseline || AnotherWorkerLeft(worker))) {
    // A worker that cannot run GOOD (its calibration, an A/A control, or the reference GOOD
    // while another worker can take over) is quarantined. Only when no worker is left is GOOD
    // itself broken (below).
    Quarantine(worker, "calibration_failed",
               absl::StrCat("the benchmark fails at GOOD on this worker: ", result.message()), 0,
               now);
    MaybeFinish(now);
    UpdateProgress();
    return std::exchange(to_cancel_, {});
  }
  if (!baseline && of_good) {
    // Another worker's calibration, or an A/A control of GOOD.
    if (probe.kind() == v1::PROBE_KIND_CONTROL && status_.state() == v1::JOB_STATE_BISECTING) {
      const v1::Probe& calibration = status_.probes(workers_[worker].calibration);
      const double moved = probe.median() - calibration.median();
      const double step = status_.baseline().bad().median() - status_.baseline().good().median();
      if (step != 0 &&
          OffsetExceeds(probe.samples(), calibration.samples(),
                        Mean(calibration.samples()).value_or(0), std::fabs(step) / 3)) {
        Quarantine(worker, "control_moved",
                   absl::StrFormat("its A/A control of GOOD moved %+.2f%% from its calibration "
                                   "(more than a third of the regression): the GPU drifted",
                                   100 * moved / calibration.median()),
                   moved / calibration.median(), now);
      }
    } else if (status_.state() == v1::JOB_STATE_BISECTING) {
      CheckOutliers(now);
      SharpenCalibrations(now);
      SettleProvisional(now);
      ClassifyPending(now);
    }
    MaybeFinish(now);
    UpdateProgress();
    return std::exchange(to_cancel_, {});
  }
  if (baseline) {
    if (!measured) {
      const bool good = entry.probe == good_probe_;
      Finish(
          v1::OUTCOME_ERROR,
          absl::StrFormat("the benchmark failed at %s (%s): %s. Fix the build/bench command "
                          "or choose another %s commit.%s%s",
                          good ? "GOOD" : "BAD", Short(probe.sha()),
                          result.message().empty() ? "no sample was produced" : result.message(),
                          good ? "GOOD" : "BAD",
                          result.log_tail().empty() ? "" : "\nLast output:\n", result.log_tail()),
          now);
      return std::exchange(to_cancel_, {});
    }
    if (BaselinesReady()) {
      EvaluateBaselines(now);
      if (!finished() && status_.state() == v1::JOB_STATE_BISECTING) {
        CheckOutliers(now);
        SharpenCalibrations(now);
        SettleProvisional(now);
        ClassifyPending(now);
      }
    }
  } else if (!measured) {
    ApplyVerdict(entry.probe, v1::VERDICT_SKIP, now);
  } else if (WorkerReady(worker)) {
    Classify(entry.probe, now);
  } else {
    unclassified_.push_back(entry.probe);
  }
  MaybeFinish(now);
  UpdateProgress();
  return std::exchange(to_cancel_, {});
}

bool BisectJob::Measured(const v1::Probe& probe) const {
  if (pass_fail_) {
    return probe.outcome() == v1::TASK_OUTCOME_PASSED || probe.outcome() == v1::TASK_OUTCOME_FAILED;
  }
  return probe.outcome() == v1::TASK_OUTCOME_SUCCEEDED && probe.samples_size() > 0;
}

void BisectJob::Classify(int probe_position, absl::Time now) {
  v1::Probe& probe = *status_.mutable_probes(probe_position);
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
    Extend(probe_position, c.more_runs);
    return;
  }
  if (c.verdict == v1::VERDICT_AMBIGUOUS) probe.set_message(c.reason);
  ApplyVerdict(probe_position, c.verdict, now);
}

ProbeClassification BisectJob::Judge(const v1::Probe& probe) const {
  // Workers whose GOOD agrees with the reference's share one pooled GOOD (the reference's and
  // their calibrations) and the reference BAD. A worker with a significant offset is judged
  // against its own GOOD, with the reference BAD scaled by the ratio of its GOOD to the
  // reference GOOD (the multiplicative offset of an "identical" GPU).
  std::vector<double> good;
  std::vector<double> bad;
  if (HasOffset(probe.worker())) {
    bad = ReferenceBadSamples();
    const v1::Probe& calibration = status_.probes(workers_.at(probe.worker()).calibration);
    good.assign(calibration.samples().begin(), calibration.samples().end());
    const double reference_good = status_.probes(good_probe_).median();
    if (reference_good != 0) {
      for (double& sample : bad) sample *= calibration.median() / reference_good;
    }
  } else {
    good = PooledSamples(v1::VERDICT_GOOD);
    bad = PooledSamples(v1::VERDICT_BAD);
  }
  ClassifierOptions options;
  options.threshold_fraction = status_.spec().threshold_fraction();
  options.max_runs = status_.spec().max_runs();
  return ClassifyProbe(probe.samples(), good, bad, options);
}

void BisectJob::Extend(int probe_position, int runs) {
  v1::Probe& probe = *status_.mutable_probes(probe_position);
  const std::string id = absl::StrCat(probe.probe_id(), ".", probe.runs_size());
  TaskEntry entry;
  entry.task = tasks_.at(probe.probe_id()).task;
  entry.task.set_task_id(id);
  entry.task.set_runs(runs);
  entry.probe = probe_position;
  entry.pinned_worker = probe.worker();
  tasks_.emplace(id, std::move(entry));
  probe.set_state(v1::PROBE_STATE_PENDING);
  queue_.push_front(id);
}

void BisectJob::AddTimings(const v1::TaskTimings& add, v1::TaskTimings* total, bool first) {
  if (first) {
    *total = add;
    return;
  }
  auto sum = [](const google::protobuf::Duration& a, const google::protobuf::Duration& b) {
    return TimeUtil::NanosecondsToDuration(TimeUtil::DurationToNanoseconds(a) +
                                           TimeUtil::DurationToNanoseconds(b));
  };
  *total->mutable_checkout() = sum(total->checkout(), add.checkout());
  *total->mutable_build() = sum(total->build(), add.build());
  *total->mutable_bench() = sum(total->bench(), add.bench());
  *total->mutable_total() = sum(total->total(), add.total());
}

std::vector<std::string> BisectJob::OnTaskLost(const std::string& task_id, const std::string& why,
                                               absl::Time now) {
  auto it = tasks_.find(task_id);
  if (it == tasks_.end() || !it->second.active || it->second.done || finished()) return {};
  TaskEntry& entry = it->second;
  entry.active = false;
  v1::Probe& probe = ProbeOf(entry);
  if (!entry.pinned_worker.empty()) {
    // Work that only its worker could do (a calibration, a control, a re-measurement against
    // its calibration): the worker is gone, so is what depended on it. Its commits are probed
    // again by others; it calibrates again if it comes back.
    const std::string worker = entry.pinned_worker;
    entry.done = true;
    probe.set_state(v1::PROBE_STATE_CANCELLED);
    probe.set_message(absl::StrCat("lost with its worker: ", why));
    if (entry.task.kind() == v1::PROBE_KIND_BISECT) search_.Abandon(entry.task.commit_index());
    WorkerState& state = workers_[worker];
    if (state.calibration == entry.probe) state.calibration = -1;
    state.gone = true;
    DropProbesOf(worker, absl::StrCat("worker lost: ", why), now, /*keep_measured=*/true);
    OnRoleHolderLost(worker, "was lost", now);
    UpdateProgress();
    return std::exchange(to_cancel_, {});
  }
  if (probe.attempt() < kMaxAttempts) {
    probe.set_state(v1::PROBE_STATE_PENDING);
    probe.set_message(absl::StrCat("attempt ", probe.attempt(), " lost: ", why));
    queue_.push_front(task_id);
    UpdateProgress();
    return {};
  }
  entry.done = true;
  probe.set_state(v1::PROBE_STATE_FINISHED);
  probe.set_outcome(v1::TASK_OUTCOME_INFRA_ERROR);
  probe.set_message(absl::StrCat("gave up after ", probe.attempt(), " attempts: ", why));
  if (entry.probe == good_probe_ || entry.probe == bad_probe_) {
    Finish(v1::OUTCOME_ERROR,
           absl::StrCat("could not measure the ", entry.probe == good_probe_ ? "GOOD" : "BAD",
                        " baseline: ", probe.message()),
           now);
    return std::exchange(to_cancel_, {});
  }
  ApplyVerdict(entry.probe, v1::VERDICT_SKIP, now);
  MaybeFinish(now);
  UpdateProgress();
  return std::exchange(to_cancel_, {});
}

std::vector<std::string> BisectJob::Cancel(const std::string& reason, absl::Time now) {
  if (finished()) return {};
  Finish(v1::OUTCOME_CANCELLED, absl::StrCat("cancelled: ", reason), now);
  return std::exchange(to_cancel_, {});
}

bool BisectJob::finished() const {
  // FOLLOWING_UP is set by the coordinator once this job's own search is over.
  return status_.state() == v1::JOB_STATE_DONE || status_.state() == v1::JOB_STATE_FAILED ||
         status_.state() == v1::JOB_STATE_CANCELLED ||
         status_.state() == v1::JOB_STATE_FOLLOWING_UP;
}

std::vector<v1::JobEvent> BisectJob::TakeEvents() { return std::exchange(events_, {}); }

std::vector<std::string> BisectJob::ActiveTaskIds() const {
  std::vector<std::string> ids;
  for (const auto& [id, entry] : tasks_) {
    if (entry.active) ids.push_back(id);
  }
  return ids;
}

bool BisectJob::BaselinesReady() const {
  for (int position : {good_probe_, bad_probe_}) {
    if (position < 0) return false;
    const v1::Probe& probe = status_.probes(position);
    if (probe.state() != v1::PROBE_STATE_FINISHED || !Measured(probe)) return false;
  }
  return true;
}

void BisectJob::EvaluateBaselines(absl::Time now) {
  const v1::Probe& good = status_.probes(good_probe_);
  const v1::Probe& bad = status_.probes(bad_probe_);
  if (pass_fail_) {
    if (good.outcome() != v1::TASK_OUTCOME_PASSED) {
      Finish(v1::OUTCOME_ERROR,
             absl::StrCat("the check already fails at GOOD (", Short(good.sha()),
                          "): ", good.message(), ". Choose a GOOD commit where it passes."),
             now);
      return;
    }
    if (bad.outcome() != v1::TASK_OUTCOME_FAILED) {
      Finish(v1::OUTCOME_NO_REGRESSION,
             absl::StrCat("the check passes at BAD (", Short(bad.sha()), "): nothing to bisect"),
             now);
      return;
    }
    Emit(v1::JOB_EVENT_KIND_BASELINE,
         absl::StrFormat("Baseline results:\n  GOOD (%s): passes\n  BAD  (%s): fails",
                         Short(good.sha()), Short(bad.sha())),
         nullptr, now);
    status_.set_state(v1::JOB_STATE_BISECTING);
    return;
  }
  if (status_.direction() == v1::DIRECTION_UNSPECIFIED) {
    status_.set_direction(v1::DIRECTION_LOWER_IS_BETTER);
  }
  // Calibrations that agree with the reference's GOOD sharpen it (see PooledSamples).
  const BaselineAssessment assessment =
      AssessBaselines(PooledSamples(v1::VERDICT_GOOD), ReferenceBadSamples(), status_.direction(),
                      status_.spec().min_effect_fraction(), status_.spec().max_runs());
  if (assessment.more_runs > 0) {
    Emit(v1::JOB_EVENT_KIND_WARNING, absl::StrCat("Baselines unclear: ", assessment.reason),
         nullptr, now);
    Extend(good_probe_, assessment.more_runs);
    Extend(bad_probe_, assessment.more_runs);
    return;
  }
  v1::Baseline* good_base = status_.mutable_baseline()->mutable_good();
  good_base->set_sha(good.sha());
  *good_base->mutable_samples() = good.samples();
  good_base->set_median(good.median());
  good_base->set_worker(good.worker());
  v1::Baseline* bad_base = status_.mutable_baseline()->mutable_bad();
  bad_base->set_sha(bad.sha());
  const std::vector<double> bad_samples = ReferenceBadSamples();
  bad_base->mutable_samples()->Assign(bad_samples.begin(), bad_samples.end());
  bad_base->set_median(Median(bad_samples));
  bad_base->set_worker(bad.worker());
  status_.set_regression_pct(assessment.regression_pct);
  for (const std::string& warning : assessment.warnings) status_.add_warnings(warning);
  Emit(v1::JOB_EVENT_KIND_BASELINE,
       absl::StrFormat("Baseline results:\n  GOOD (%s): %s = %s\n  BAD  (%s): %s = %s\n"
                       "  Regression: %.1f%% %s",
                       Short(good.sha()), status_.metric_name(), FormatValue(good.median()),
                       Short(bad.sha()), status_.metric_name(), FormatValue(bad.median()),
                       assessment.regression_pct,
                       status_.direction() == v1::DIRECTION_HIGHER_IS_BETTER ? "lower (worse)"
                                                                             : "higher (worse)"),
       nullptr, now);
  for (const std::string& warning : assessment.warnings) {
    Emit(v1::JOB_EVENT_KIND_WARNING, absl::StrCat("Warning: ", warning), nullptr, now);
  }
  if (assessment.improvement && !status_.spec().allow_improvement()) {
    Finish(v1::OUTCOME_ERROR,
           absl::StrCat(assessment.reason,
                        ". Swap GOOD and BAD, or pass --allow-improvement to bisect the "
                        "improvement."),
           now);
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
    const v1::Probe& probe = status_.probes(position);
    if (probe.state() != v1::PROBE_STATE_FINISHED) continue;
    if (probe.index() <= search_.last_good() || probe.index() >= search_.first_bad()) continue;
    if (!WorkerReady(probe.worker())) {
      unclassified_.push_back(position);
      continue;
    }
    Classify(position, now);
  }
}

bool BisectJob::WorkerReady(const std::string& worker) const {
  if (status_.state() != v1::JOB_STATE_BISECTING) return false;
  auto it = workers_.find(worker);
  if (it == workers_.end() || it->second.quarantined) return false;
  // Without a finished calibration its probes are judged against the pool, provisionally.
  if (!CalibrationDone(worker)) return true;
  const v1::Probe& calibration = status_.probes(it->second.calibration);
  return calibration.samples_size() >= CalibrationRuns() || !HasOffset(worker);
}

bool BisectJob::AnotherWorkerLeft(const std::string& worker) const {
  return std::any_of(workers_.begin(), workers_.end(), [&](const auto& entry) {
    const WorkerState& state = entry.second;
    return entry.first != worker && !state.quarantined && !state.gone && state.checked_out >= 0;
  });
}

bool BisectJob::CalibrationDone(const std::string& worker) const {
  auto it = workers_.find(worker);
  if (it == workers_.end() || it->second.calibration < 0) return false;
  const v1::Probe& calibration = status_.probes(it->second.calibration);
  return calibration.state() == v1::PROBE_STATE_FINISHED && Measured(calibration);
}

bool BisectJob::JudgedAgainstBaselines(const v1::Probe& probe) {
  return probe.verdict() == v1::VERDICT_GOOD || probe.verdict() == v1::VERDICT_BAD ||
         probe.verdict() == v1::VERDICT_AMBIGUOUS;
}

void BisectJob::JudgeEveryVerdictAgain(absl::Time now) {
  RetractVerdicts(ProbePositions([](const v1::Probe&) { return true; }), /*probe_again=*/false, "",
                  now);
}

std::vector<int> BisectJob::ProbePositions(
    const std::function<bool(const v1::Probe&)>& which) const {
  std::vector<int> positions;
  for (int i = 0; i < status_.probes_size(); ++i) {
    if (which(status_.probes(i))) positions.push_back(i);
  }
  return positions;
}

std::string BisectJob::BadWorker() const {
  return bad_probe_ < 0 ? "" : status_.probes(bad_probe_).worker();
}

bool BisectJob::IsProvisional(const v1::Probe& probe) const {
  if (pass_fail_ || probe.kind() != v1::PROBE_KIND_BISECT || !JudgedAgainstBaselines(probe)) {
    return false;
  }
  return !CalibrationDone(probe.worker()) || !CalibrationDone(BadWorker());
}

bool BisectJob::OwesCalibration(const std::string& worker) const {
  if (pass_fail_) return false;
  if (worker == BadWorker()) return true;
  for (const v1::Probe& probe : status_.probes()) {
    if (probe.worker() != worker || probe.kind() != v1::PROBE_KIND_BISECT) continue;
    if (probe.provisional() || probe.state() == v1::PROBE_STATE_PENDING ||
        probe.state() == v1::PROBE_STATE_RUNNING) {
      return true;
    }
  }
  for (int position : unclassified_) {
    if (status_.probes(position).worker() == worker) return true;
  }
  return false;
}

int BisectJob::CalibrationsToStart(const std::vector<std::string>& idle) const {
  // The round's slots: the workers that have worked in this job and are still here, and the
  // idle ones asking now.
  std::set<std::string> members;
  for (const auto& [worker, state] : workers_) {
    if (!state.quarantined && !state.gone && state.checked_out >= 0) members.insert(worker);
  }
  for (const std::string& worker : idle) {
    auto it = workers_.find(worker);
    if (it != workers_.end() && !it->second.quarantined) members.insert(worker);
  }
  int slots = static_cast<int>(members.size());
  if (status_.spec().max_workers() > 0) slots = std::min(slots, status_.spec().max_workers());
  int owed = 0;
  for (const std::string& worker : members) owed += workers_.at(worker).calibration < 0 ? 1 : 0;
  int calibrating = 0;
  int busy = 0;
  for (const auto& [id, entry] : tasks_) {
    if (!entry.active) continue;
    if (entry.task.kind() == v1::PROBE_KIND_BASELINE_GOOD) {
      ++calibrating;
    } else if (entry.task.kind() != v1::PROBE_KIND_BISECT) {
      ++busy;
    }
  }
  const RoundPlan plan = PlanRound(search_.RemainingCandidates(), slots, owed + calibrating, busy);
  return std::max(0, plan.calibrations - calibrating);
}

std::vector<double> BisectJob::ReferenceBadSamples() const {
  const v1::Probe& bad = status_.probes(bad_probe_);
  std::vector<double> samples(bad.samples().begin(), bad.samples().end());
  // A BAD measured on a worker with an offset is brought to the reference's frame by the ratio
  // of the two GOOD measurements.
  const std::string worker = bad.worker();
  if (HasOffset(worker)) {
    const double own = status_.probes(workers_.at(worker).calibration).median();
    const double reference = status_.probes(good_probe_).median();
    if (own != 0) {
      for (double& sample : samples) sample *= reference / own;
    }
  }
  return samples;
}

double BisectJob::ReferenceBadMedian() const { return Median(ReferenceBadSamples()); }

void BisectJob::SettleProvisional(absl::Time now) {
  if (pass_fail_ || finished() || status_.state() != v1::JOB_STATE_BISECTING) return;
  const std::string bad_worker = BadWorker();
  if (!bad_offset_checked_ && CalibrationDone(bad_worker)) {
    bad_offset_checked_ = true;
    if (HasOffset(bad_worker)) {
      // BAD was measured on a GPU with an offset: in the reference's frame it is another
      // value, and every verdict judged against it is judged again.
      const std::vector<double> bad = ReferenceBadSamples();
      v1::Baseline* base = status_.mutable_baseline()->mutable_bad();
      base->mutable_samples()->Assign(bad.begin(), bad.end());
      base->set_median(Median(bad));
      status_.set_regression_pct(RegressionPercent(status_.baseline().good().median(),
                                                   base->median(), status_.direction()));
      Emit(v1::JOB_EVENT_KIND_WARNING,
           absl::StrFormat("Worker %s, which measured BAD, measures GOOD %+.2f%% off the "
                           "reference: BAD is taken as %s in the reference's frame and every "
                           "verdict is judged again",
                           bad_worker,
                           100 * (status_.probes(workers_.at(bad_worker).calibration).median() /
                                      status_.probes(good_probe_).median() -
                                  1),
                           FormatValue(base->median())),
           nullptr, now);
      JudgeEveryVerdictAgain(now);
    }
  }
  std::vector<int> judge_again;
  for (int i = 0; i < status_.probes_size(); ++i) {
    v1::Probe& probe = *status_.mutable_probes(i);
    if (!probe.provisional() || IsProvisional(probe)) continue;
    // The verdict counts if it holds now that its worker has calibrated: judged against its own
    // GOOD when that is off the reference's, else against the pool, which has grown sharper
    // since. Otherwise it is judged again, with more runs if the classifier asks for them.
    const ProbeClassification c = HasOffset(probe.worker()) && !WorkerReady(probe.worker())
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
    v1::Probe& probe = *status_.mutable_probes(position);
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
    auto worker = workers_.find(probe.worker());
    if (probe_again || (worker != workers_.end() && worker->second.quarantined)) {
      probe.set_state(v1::PROBE_STATE_CANCELLED);
      probe.set_message(
          absl::StrCat("discarded: ", why.empty() ? "its worker was quarantined" : why));
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
    Verdict verdict = Verdict::kSkip;
    if (probe.verdict() == v1::VERDICT_GOOD) verdict = Verdict::kGood;
    if (probe.verdict() == v1::VERDICT_BAD) verdict = Verdict::kBad;
    if (!search.Record(probe.index(), verdict).ok()) {
      (void)search.Record(probe.index(), Verdict::kSkip);
    }
  }
  for (const auto& [id, entry] : tasks_) {
    if (!entry.done && entry.task.kind() == v1::PROBE_KIND_BISECT) {
      search.MarkInFlight(entry.task.commit_index());
    }
  }
  for (int position : unclassified_) search.MarkInFlight(status_.probes(position).index());
  search_ = std::move(search);
  status_.set_last_good_index(search_.last_good());
  status_.set_first_bad_index(search_.first_bad());
}

void BisectJob::RemeasureBad(const std::string& why, absl::Time now) {
  if (bad_probe_ < 0 || status_.probes(bad_probe_).state() != v1::PROBE_STATE_FINISHED) {
    return;  // Not measured yet: the queued or retried task is still to come.
  }
  const std::string id = NewTask(v1::PROBE_KIND_BASELINE_BAD, status_.commit_count(), 0);
  bad_probe_ = tasks_.at(id).probe;
  bad_offset_checked_ = false;
  queue_.push_front(id);
  if (status_.state() == v1::JOB_STATE_BISECTING) status_.set_state(v1::JOB_STATE_BASELINES);
  JudgeEveryVerdictAgain(now);
  Emit(v1::JOB_EVENT_KIND_WARNING,
       absl::StrCat("BAD is measured again: ", why, "; the verdicts so far wait for it"), nullptr,
       now);
}

void BisectJob::OnRoleHolderLost(const std::string& worker, const std::string& why,
                                 absl::Time now) {
  const bool quarantined = workers_[worker].quarantined;
  // A BAD whose worker can no longer calibrate (or was quarantined) cannot be placed in the
  // reference's frame.
  if (!pass_fail_ && worker == BadWorker() && (quarantined || !CalibrationDone(worker))) {
    RemeasureBad(absl::StrCat("its worker ", worker, " ", why), now);
  }
  if (worker != reference_worker_ || (!quarantined && BaselinesReady())) return;
  // A reference that left after the baselines settled keeps its measurements; one that was
  // quarantined hands the reference GOOD to another worker, and every verdict judged against
  // it is judged again.
  const bool settled = BaselinesReady() && status_.state() == v1::JOB_STATE_BISECTING;
  ResetReference();
  if (!settled) return;
  bad_offset_checked_ = false;
  JudgeEveryVerdictAgain(now);
  status_.set_state(v1::JOB_STATE_BASELINES);
  Emit(v1::JOB_EVENT_KIND_WARNING,
       absl::StrCat("The reference GOOD moves from ", worker, " to ",
                    reference_worker_.empty() ? "the next worker to calibrate" : reference_worker_,
                    ": every verdict is judged again"),
       nullptr, now);
  if (!BaselinesReady()) return;
  EvaluateBaselines(now);
  if (!finished() && status_.state() == v1::JOB_STATE_BISECTING) {
    SharpenCalibrations(now);
    SettleProvisional(now);
    ClassifyPending(now);
  }
}

int BisectJob::CalibrationRuns() const {
  // A worker's GOOD must be as sharp as the reference's: the baselines were re-measured until
  // GOOD and BAD were clearly apart, and every verdict of the worker is measured against it.
  return pass_fail_ || good_probe_ < 0 ? 0 : status_.probes(good_probe_).samples_size();
}

void BisectJob::SharpenCalibrations(absl::Time now) {
  for (auto& [worker, state] : workers_) {
    if (state.quarantined || state.calibration < 0) continue;
    const v1::Probe& calibration = status_.probes(state.calibration);
    if (calibration.state() != v1::PROBE_STATE_FINISHED || !Measured(calibration)) continue;
    const int missing = CalibrationRuns() - calibration.samples_size();
    if (missing <= 0 || !HasOffset(worker)) continue;
    if (state.gone) {
      // It cannot re-measure: what it measured cannot be judged; others probe it again.
      DropProbesOf(worker, "its worker left before its calibration was complete", now);
    } else {
      Extend(state.calibration, missing);
    }
  }
}

bool BisectJob::CalibrationUsable(const std::string& worker) const {
  auto it = workers_.find(worker);
  if (it == workers_.end() || it->second.quarantined || it->second.calibration < 0) return false;
  const v1::Probe& calibration = status_.probes(it->second.calibration);
  if (calibration.state() != v1::PROBE_STATE_FINISHED || !Measured(calibration)) return false;
  return status_.state() != v1::JOB_STATE_BISECTING ||
         calibration.samples_size() >= CalibrationRuns() || !HasOffset(worker);
}

bool BisectJob::HasOffset(const std::string& worker) const {
  if (pass_fail_ || worker == reference_worker_ || good_probe_ < 0) return false;
  auto it = workers_.find(worker);
  if (it == workers_.end() || it->second.calibration < 0) return false;
  const v1::Probe& calibration = status_.probes(it->second.calibration);
  const v1::Probe& reference = status_.probes(good_probe_);
  if (!Measured(calibration) || !Measured(reference)) return false;
  return OffsetIsSignificant(calibration.samples(), reference.samples());
}

std::set<std::string> BisectJob::PoolMembers() const {
  std::set<std::string> members = {reference_worker_};
  for (const auto& [worker, state] : workers_) {
    if (worker == reference_worker_ || state.quarantined || state.calibration < 0) continue;
    const v1::Probe& calibration = status_.probes(state.calibration);
    if (calibration.state() == v1::PROBE_STATE_FINISHED && Measured(calibration) &&
        !HasOffset(worker)) {
      members.insert(worker);
    }
  }
  return members;
}

std::vector<double> BisectJob::PooledSamples(v1::Verdict side) const {
  const bool good = side == v1::VERDICT_GOOD;
  std::vector<double> pooled;
  if (good) {
    const v1::Probe& reference = status_.probes(good_probe_);
    pooled.assign(reference.samples().begin(), reference.samples().end());
  } else {
    pooled = ReferenceBadSamples();
  }
  const std::set<std::string> members = PoolMembers();
  if (good) {
    for (const std::string& worker : members) {
      if (worker == reference_worker_) continue;
      const v1::Probe& calibration = status_.probes(workers_.at(worker).calibration);
      pooled.insert(pooled.end(), calibration.samples().begin(), calibration.samples().end());
    }
  }
  if (status_.state() != v1::JOB_STATE_BISECTING) return pooled;
  for (const v1::Probe& probe : status_.probes()) {
    if (probe.kind() != v1::PROBE_KIND_BISECT || probe.verdict() != side ||
        probe.state() != v1::PROBE_STATE_FINISHED || probe.provisional() ||
        members.count(probe.worker()) == 0) {
      continue;
    }
    const double p = good ? probe.p_value_vs_good() : probe.p_value_vs_bad();
    if (p < kPoolAlpha) continue;
    pooled.insert(pooled.end(), probe.samples().begin(), probe.samples().end());
  }
  return pooled;
}

void BisectJob::CheckOutliers(absl::Time now) {
  if (pass_fail_ || good_probe_ < 0) return;
  const double reference = status_.probes(good_probe_).median();
  const double step = ReferenceBadMedian() - reference;
  std::vector<std::pair<std::string, double>> calibrated;
  std::vector<double> medians;
  for (const auto& [worker, state] : workers_) {
    if (state.calibration < 0) continue;
    const v1::Probe& calibration = status_.probes(state.calibration);
    if (calibration.state() != v1::PROBE_STATE_FINISHED || !Measured(calibration)) continue;
    calibrated.emplace_back(worker, calibration.median());
    medians.push_back(calibration.median());
  }
  // With three or more calibrations the pool's median is the centre (robust to one odd GPU,
  // the reference's included). With fewer, the reference's GOOD, but only once no other worker
  // of the job is still to calibrate: two GPUs that disagree cannot tell which one is odd.
  if (medians.size() < 3 && MoreCalibrationsComing()) return;
  const double center = medians.size() >= 3 ? Median(medians) : reference;
  struct Outlier {
    std::string worker;
    std::string reason;
    double offset_fraction;
  };
  std::vector<Outlier> outliers;
  const v1::Probe& reference_good = status_.probes(good_probe_);
  for (const auto& [worker, median] : calibrated) {
    const WorkerState& state = workers_.at(worker);
    if (state.quarantined || center == 0) continue;
    const double offset = median - center;
    const v1::Probe& calibration = status_.probes(state.calibration);
    if (std::fabs(offset) > std::fabs(step) / 3 &&
        OffsetExceeds(calibration.samples(), reference_good.samples(), center,
                      std::fabs(step) / 3)) {
      outliers.push_back(
          {worker,
           absl::StrFormat("its GOOD median %s is %+.1f%% off the pool's %s, more than a "
                           "third of the regression (%.1f%%): its probes are re-run "
                           "elsewhere",
                           FormatValue(median), 100 * offset / center, FormatValue(center),
                           100 * step / reference),
           offset / center});
    }
  }
  // Quarantining may change the reference and add probes: decided first, applied after.
  for (const Outlier& outlier : outliers) {
    Quarantine(outlier.worker, "baseline_outlier", outlier.reason, outlier.offset_fraction, now);
  }
}

bool BisectJob::MoreCalibrationsComing() const {
  return std::any_of(workers_.begin(), workers_.end(), [&](const auto& entry) {
    const WorkerState& state = entry.second;
    return !state.quarantined && !state.gone && state.checked_out >= 0 &&
           !CalibrationDone(entry.first);
  });
}

void BisectJob::Quarantine(const std::string& worker, const std::string& kind,
                           const std::string& reason, double offset_fraction, absl::Time now) {
  WorkerState& state = workers_[worker];
  if (state.quarantined) return;
  state.quarantined = true;
  v1::DriftEvent* event = status_.add_drift_events();
  event->set_worker(worker);
  *event->mutable_time() = ToProto(now);
  event->set_kind(kind);
  event->set_detail(reason);
  event->set_offset_fraction(offset_fraction);
  status_.add_warnings(absl::StrCat("worker ", worker, " quarantined: ", reason));
  Emit(v1::JOB_EVENT_KIND_DRIFT, absl::StrCat("Quarantined worker ", worker, ": ", reason), nullptr,
       now);
  // Its verdicts, provisional or not, are not trusted: their commits are probed again.
  RetractVerdicts(ProbePositions([&](const v1::Probe& probe) { return probe.worker() == worker; }),
                  /*probe_again=*/true, "its worker was quarantined", now);
  DropProbesOf(worker, "its worker was quarantined", now);
  // A quarantined worker holding the reference GOOD or the BAD baseline hands it on.
  OnRoleHolderLost(worker, "was quarantined", now);
  bool anyone_left = false;
  for (const auto& [name, other] : workers_) anyone_left |= !other.quarantined;
  if (!anyone_left) {
    Finish(v1::OUTCOME_ERROR,
           "every worker was quarantined (see the drift events): the hardware is not "
           "consistent enough to bisect on; check the GPUs and rerun",
           now);
  }
}

void BisectJob::DropProbesOf(const std::string& worker, const std::string& why, absl::Time now,
                             bool keep_measured) {
  for (auto& [id, entry] : tasks_) {
    v1::Probe& probe = ProbeOf(entry);
    if (entry.done || probe.worker() != worker || entry.probe == bad_probe_) continue;
    if (entry.task.kind() == v1::PROBE_KIND_BISECT) search_.Abandon(entry.task.commit_index());
    entry.done = true;
    if (entry.active) {
      entry.active = false;
      to_cancel_.push_back(id);
    }
    probe.set_state(v1::PROBE_STATE_CANCELLED);
    probe.set_message(absl::StrCat("discarded: ", why));
    *probe.mutable_end_time() = ToProto(now);
  }
  // Finished measurements stay when the worker's calibration can still judge them.
  if (keep_measured && CalibrationUsable(worker)) return;
  // Its provisional verdicts will never be confirmed: their commits are probed again.
  RetractVerdicts(ProbePositions([&](const v1::Probe& probe) {
                    return probe.provisional() && probe.worker() == worker;
                  }),
                  /*probe_again=*/true, why, now);
  unclassified_.erase(std::remove_if(unclassified_.begin(), unclassified_.end(),
                                     [&](int position) {
                                       v1::Probe& probe = *status_.mutable_probes(position);
                                       if (probe.worker() != worker) return false;
                                       search_.Abandon(probe.index());
                                       probe.set_state(v1::PROBE_STATE_CANCELLED);
                                       probe.set_message(absl::StrCat("discarded: ", why));
                                       return true;
                                     }),
                      unclassified_.end());
}

std::vector<std::string> BisectJob::OnWorkerGone(const std::string& worker, const std::string& why,
                                                 absl::Time now) {
  auto it = workers_.find(worker);
  if (it == workers_.end() || finished()) return {};
  it->second.gone = true;
  DropProbesOf(worker, absl::StrCat("its worker left: ", why), now, /*keep_measured=*/true);
  OnRoleHolderLost(worker, "left", now);
  UpdateProgress();
  return std::exchange(to_cancel_, {});
}

void BisectJob::ResetReference() {
  const std::string old = reference_worker_;
  good_probe_ = -1;
  reference_worker_.clear();
  // Another worker with a finished calibration becomes the reference at once; without one, the
  // next worker to calibrate does.
  for (const auto& [worker, state] : workers_) {
    if (worker == old || state.quarantined || state.gone || !CalibrationDone(worker)) continue;
    good_probe_ = state.calibration;
    reference_worker_ = worker;
    return;
  }
}

void BisectJob::ForgetWorker(const std::string& worker, const std::string& why, absl::Time now) {
  auto it = workers_.find(worker);
  if (it == workers_.end() || finished()) return;
  DropProbesOf(worker, why, now);
  if (worker == reference_worker_) return;  // The reference baselines stay as measured.
  it->second.calibration = -1;
  it->second.classified = 0;
  Emit(v1::JOB_EVENT_KIND_DRIFT, absl::StrCat("Worker ", worker, " must calibrate again: ", why),
       nullptr, now);
  v1::DriftEvent* event = status_.add_drift_events();
  event->set_worker(worker);
  *event->mutable_time() = ToProto(now);
  event->set_kind("identity_changed");
  event->set_detail(why);
}

void BisectJob::FillWorkerReport() {
  status_.clear_workers();
  for (const auto& [worker, state] : workers_) {
    v1::JobWorker* out = status_.add_workers();
    out->set_worker(worker);
    if (state.calibration >= 0) {
      const double good = status_.probes(state.calibration).median();
      out->set_calibration_good(good);
      if (good_probe_ >= 0 && bad_probe_ >= 0 && status_.probes(good_probe_).median() != 0) {
        out->set_calibration_bad(ReferenceBadMedian() * good /
                                 status_.probes(good_probe_).median());
      }
    }
    out->set_quarantined(state.quarantined);
    for (const v1::DriftEvent& event : status_.drift_events()) {
      if (event.worker() != worker) continue;
      out->set_drift(true);
      out->set_reason(event.detail());
    }
    int probes = 0;
    for (const v1::Probe& probe : status_.probes()) {
      probes += probe.worker() == worker && probe.kind() == v1::PROBE_KIND_BISECT ? 1 : 0;
    }
    out->set_probes(probes);
  }
}

void BisectJob::ApplyVerdict(int probe_position, v1::Verdict verdict, absl::Time now) {
  v1::Probe& probe = *status_.mutable_probes(probe_position);
  const int index = probe.index();
  Verdict search_verdict = Verdict::kSkip;
  if (verdict == v1::VERDICT_GOOD) search_verdict = Verdict::kGood;
  if (verdict == v1::VERDICT_BAD) search_verdict = Verdict::kBad;
  absl::Status recorded = search_.Record(index, search_verdict);
  if (!recorded.ok()) {
    // Only possible with non-monotone measurements; the commit is treated as untestable.
    status_.add_warnings(absl::StrCat("commit ", Short(probe.sha()), " measured ",
                                      VerdictWord(verdict),
                                      ", contradicting earlier verdicts; treated as skipped"));
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
  if (auto worker = workers_.find(probe.worker());
      worker != workers_.end() && !pass_fail_ && CalibrationDone(probe.worker()) &&
      ++worker->second.classified % kControlEvery == 0 &&
      search_.first_bad() - search_.last_good() - 1 >= kControlMinUntested) {
    // An A/A control: GOOD again on this worker, to catch a GPU that drifts during the job.
    // Not when only a probe or two are left: the control would cost as much as what it guards,
    // and the confirmation re-measures the culprit and its parent anyway.
    queue_.push_front(NewTask(v1::PROBE_KIND_CONTROL, 0, 0, probe.worker()));
  }
  max_round_recorded_ = std::max(max_round_recorded_, probe.round());
  status_.set_rounds(std::max(status_.rounds(), probe.round()));
  status_.set_last_good_index(search_.last_good());
  status_.set_first_bad_index(search_.first_bad());
  CancelUseless(now);
  const int left = std::max(0, search_.RemainingCandidates() - 1);
  const int in_flight = InFlightCount();
  std::string metric;
  if (pass_fail_ && Measured(probe)) {
    metric = probe.outcome() == v1::TASK_OUTCOME_PASSED ? "passes" : "fails";
  } else if (probe.samples_size() > 0) {
    metric = absl::StrCat("metric=", FormatValue(probe.median()));
    if (probe.samples_size() > status_.spec().runs_per_commit()) {
      absl::StrAppend(&metric, " (", probe.samples_size(), " runs)");
    }
  } else {
    metric = absl::StrCat("failed (", probe.message(), ")");
  }
  Emit(v1::JOB_EVENT_KIND_PROBE_FINISHED,
       absl::StrFormat("Step %d/%d: %s %s -> %s%s (%d commits left, %d probes in flight)", steps_,
                       steps_ + in_flight + Log2Ceil(std::max(1, left + 1)), Short(probe.sha()),
                       metric, VerdictWord(verdict),
                       probe.provisional() ? " (provisional: calibration pending)" : "", left,
                       in_flight),
       &probe, now);
}

void BisectJob::CancelUseless(absl::Time now) {
  for (int index : search_.UselessInFlight()) {
    search_.Abandon(index);
    for (auto& [id, entry] : tasks_) {
      if (entry.done || entry.task.kind() != v1::PROBE_KIND_BISECT ||
          entry.task.commit_index() != index) {
        continue;
      }
      entry.done = true;
      v1::Probe& probe = ProbeOf(entry);
      if (entry.active) {
        entry.active = false;
        to_cancel_.push_back(id);
      }
      probe.set_state(v1::PROBE_STATE_CANCELLED);
      probe.set_message("cancelled: outside the open interval");
      *probe.mutable_end_time() = ToProto(now);
      status_.mutable_progress()->set_probes_cancelled(status_.progress().probes_cancelled() + 1);
      Emit(v1::JOB_EVENT_KIND_PROBE_CANCELLED,
           absl::StrCat("Cancelled probe of ", Short(probe.sha()),
                        ": the interval no longer contains it"),
           &probe, now);
    }
  }
  // Measured but unclassified probes outside the interval are no longer needed.
  unclassified_.erase(std::remove_if(unclassified_.begin(), unclassified_.end(),
                                     [&](int position) {
                                       const int index = status_.probes(position).index();
                                       return index <= search_.last_good() ||
                                              index >= search_.first_bad();
                                     }),
                      unclassified_.end());
}

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
      status_.add_warnings(absl::StrFormat(
          "the culprit explains only %.0f%% of the GOOD->BAD difference: the regression likely "
          "has several steps; %s %s..%s and %s..%s%s",
          share * 100, status_.spec().all_culprits() ? "bisecting" : "bisect",
          Short(commits_[first_bad].sha()), Short(status_.bad_sha()), Short(status_.good_sha()),
          Short(commits_[last_good].sha()),
          status_.spec().all_culprits() ? " too (--all-culprits)"
                                        : " separately (or rerun with --all-culprits) to find "
                                          "the others"));
    }
  }
  if (candidates.size() == 1 && commits_[first_bad].is_merge()) {
    status_.add_warnings(absl::StrCat(
        "the culprit ", Short(commits_[first_bad].sha()),
        " is a merge commit: the regression came in with the merged branch. To find the commit "
        "inside it, run `kbisect run $(git merge-base ",
        Short(commits_[first_bad].sha()), "^1 ", Short(commits_[first_bad].sha()), "^2) ",
        Short(commits_[first_bad].sha()), "^2 -- ...`",
        status_.spec().descend_merges() ? " (--descend-merges does that now)"
                                        : " or rerun with --descend-merges"));
  }
  if (candidates.size() == 1 && status_.spec().confirm() && !pass_fail_) {
    // Re-measure last-good and culprit interleaved (A/B/A/B) on one worker before blaming.
    status_.set_state(v1::JOB_STATE_CONFIRMING);
    const std::string id = NewTask(v1::PROBE_KIND_CONFIRM, first_bad, max_round_recorded_ + 1);
    v1::Task& task = tasks_.at(id).task;
    task.set_paired_commit_sha(commits_[last_good].sha());
    task.set_runs(std::max(5, status_.spec().runs_per_commit() * 2));
    queue_.push_front(id);
    Emit(v1::JOB_EVENT_KIND_WARNING,
         absl::StrFormat("Confirming: re-measuring %s and %s interleaved on one worker",
                         Short(commits_[last_good].sha()), Short(commits_[first_bad].sha())),
         nullptr, now);
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
           absl::StrFormat("%d commits between %s and %s could not be tested (build or "
                           "benchmark failures); the regression is somewhere in them",
                           static_cast<int>(candidates.size()) - 1,
                           Short(commits_[last_good].sha()), Short(commits_[first_bad].sha())),
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
    BootstrapOptions options;
    options.seed = 1;
    options.resamples = 4000;
    absl::StatusOr<RatioInterval> ratio =
        BootstrapMedianRatio(result.paired_samples(), result.samples(), options);
    if (ratio.ok()) {
      confirmation->set_ratio(ratio->estimate);
      confirmation->set_ci_low(ratio->lower);
      confirmation->set_ci_high(ratio->upper);
      // The step must reproduce in the direction of the regression, excluding "no change".
      const bool worse_is_up =
          (status_.baseline().bad().median() > status_.baseline().good().median());
      confirmation->set_confirmed(worse_is_up ? ratio->lower > 1 : ratio->upper < 1);
      status_.set_before(Median(
          std::vector<double>(result.paired_samples().begin(), result.paired_samples().end())));
      status_.set_after(
          Median(std::vector<double>(result.samples().begin(), result.samples().end())));
      status_.set_culprit_regression_pct(
          RegressionPercent(status_.before(), status_.after(), status_.direction()));
      verdict = absl::StrFormat("step x%.4g, 95%% CI [%.4g, %.4g] on %s", ratio->estimate,
                                ratio->lower, ratio->upper, probe.worker());
    }
  } else {
    verdict = absl::StrCat("the confirmation run failed: ", result.message());
  }
  if (confirmation->confirmed()) {
    Emit(v1::JOB_EVENT_KIND_WARNING, absl::StrCat("Confirmed: ", verdict), nullptr, now);
    FinishWithCandidates(now);
    return;
  }
  const int first_bad = search_.first_bad();
  Finish(v1::OUTCOME_INCONCLUSIVE,
         absl::StrCat("the step at ", Short(commits_[first_bad].sha()),
                      " did not reproduce when re-measured interleaved with ",
                      Short(commits_[search_.last_good()].sha()), " (", verdict,
                      "): it is reported as unconfirmed, not as a culprit; the regression may be "
                      "noise or spread over several commits"),
         now);
}

double BisectJob::MedianAt(int index) const {
  // The reference baselines at the ends; inside, the probe that decided the commit, scaled to the
  // reference worker by the ratio of the GOOD calibrations (workers' offsets cancel out).
  if (index == 0 && good_probe_ >= 0) return status_.probes(good_probe_).median();
  if (index == status_.commit_count() && bad_probe_ >= 0) return ReferenceBadMedian();
  for (const v1::Probe& probe : status_.probes()) {
    if (probe.index() != index || probe.kind() != v1::PROBE_KIND_BISECT ||
        (probe.verdict() != v1::VERDICT_GOOD && probe.verdict() != v1::VERDICT_BAD)) {
      continue;
    }
    auto worker = workers_.find(probe.worker());
    if (worker == workers_.end() || worker->second.calibration < 0 || good_probe_ < 0) {
      return probe.median();
    }
    const double own = status_.probes(worker->second.calibration).median();
    return own == 0 ? probe.median() : probe.median() * status_.probes(good_probe_).median() / own;
  }
  return 0;
}

void BisectJob::Finish(v1::Outcome outcome, const std::string& error, absl::Time now) {
  for (auto& [id, entry] : tasks_) {
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
  queue_.clear();
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
  FillWorkerReport();
  int throttled = 0;
  int discarded = 0;
  for (const v1::Probe& probe : status_.probes()) {
    for (const v1::RunRecord& run : probe.runs()) {
      if (!run.gpu_state().throttled()) continue;
      ++throttled;
      discarded += run.has_value() ? 0 : 1;
    }
  }
  if (throttled > 0) {
    status_.add_warnings(absl::StrFormat(
        "%d benchmark runs ended with the GPU thermally or power throttled%s", throttled,
        discarded > 0 ? absl::StrFormat(" (%d discarded and re-run)", discarded)
                      : "; pass --discard-throttled to re-run them"));
  }
  *status_.mutable_finish_time() = ToProto(now);
  UpdateProgress();
  std::string line;
  switch (outcome) {
    case v1::OUTCOME_CULPRIT_FOUND:
      line = absl::StrCat("Culprit: ", status_.culprit().sha(), " ", status_.culprit().subject());
      break;
    case v1::OUTCOME_CANDIDATES_FOUND:
      line = absl::StrCat("Culprit is one of ", status_.candidates_size(),
                          " commits (skipped commits border it)");
      break;
    default:
      line = error;
  }
  Emit(v1::JOB_EVENT_KIND_FINISHED, line, nullptr, now);
}

void BisectJob::UpdateProgress() {
  v1::Progress* progress = status_.mutable_progress();
  int finished_probes = 0;
  for (const v1::Probe& probe : status_.probes()) {
    if (probe.state() == v1::PROBE_STATE_FINISHED) ++finished_probes;
  }
  progress->set_probes_finished(finished_probes);
  progress->set_probes_in_flight(InFlightCount());
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

std::string BisectJob::FormatValue(double value) const {
  return absl::StrCat(absl::StrFormat("%.4g", value), status_.metric_unit());
}

}  // namespace kbisect
