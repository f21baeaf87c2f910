// Copyright 2026 The kbisect Authors.
#include "coordinator/bisect_job.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "coordinator/probe_classifier.h"
#include "google/protobuf/util/time_util.h"

namespace kbisect {
namespace {

using google::protobuf::util::TimeUtil;

constexpr int kDefaultRuns = 3;
constexpr double kDefaultThreshold = 0.3;

google::protobuf::Timestamp ToProto(absl::Time t) {
  return TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(t));
}

std::string Short(const std::string& sha) { return sha.substr(0, 7); }

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  if (n == 0) return 0;
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
}

std::string VerdictWord(v1::Verdict verdict) {
  switch (verdict) {
    case v1::VERDICT_GOOD:
      return "GOOD";
    case v1::VERDICT_BAD:
      return "BAD";
    case v1::VERDICT_SKIP:
      return "SKIP";
    case v1::VERDICT_AMBIGUOUS:
      return "AMBIGUOUS";
    default:
      return "?";
  }
}

// ceil(log2(n)) for n >= 1.
int Log2Ceil(int n) { return BisectSearch::EstimateRounds(n, 1); }

}  // namespace

BisectJob::BisectJob(std::string job_id, v1::JobSpec spec, std::vector<v1::CommitRef> commits,
                     absl::Time now)
    : commits_(std::move(commits)),
      search_(static_cast<int>(commits_.size()) - 1),
      start_time_(now) {
  if (spec.runs_per_commit() <= 0) spec.set_runs_per_commit(kDefaultRuns);
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

  good_task_ = NewTask(v1::PROBE_KIND_BASELINE_GOOD, 0, 0);
  bad_task_ = NewTask(v1::PROBE_KIND_BASELINE_BAD, n, 0);
  queue_.push_back(good_task_);
  queue_.push_back(bad_task_);
  UpdateProgress();
  Emit(v1::JOB_EVENT_KIND_STARTED,
       absl::StrFormat("Bisect range: %s..%s\nTotal commits in range: %d\n"
                       "Estimated steps with one worker (git bisect): %d",
                       Short(status_.good_sha()), Short(status_.bad_sha()), n, Log2Ceil(n)),
       nullptr, now);
}

std::string BisectJob::NewTask(v1::ProbeKind kind, int index, int round) {
  const std::string id = absl::StrCat(status_.job_id(), "/p", next_task_++);
  TaskEntry entry;
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

int BisectJob::InFlightCount() const {
  int count = 0;
  for (const auto& [id, entry] : tasks_) count += entry.active ? 1 : 0;
  return count;
}

std::vector<v1::Task> BisectJob::TakeTasks(int max_tasks, absl::Time now) {
  std::vector<v1::Task> out;
  if (finished()) return out;
  const int cap = status_.spec().max_workers();
  auto room = [&]() {
    int limit = max_tasks - static_cast<int>(out.size());
    if (cap > 0) limit = std::min(limit, cap - InFlightCount());
    return limit;
  };
  auto hand_out = [&](const std::string& id) {
    TaskEntry& entry = tasks_.at(id);
    entry.active = true;
    ProbeOf(entry).set_state(v1::PROBE_STATE_RUNNING);
    out.push_back(entry.task);
  };
  while (!queue_.empty() && room() > 0) {
    const std::string id = queue_.front();
    queue_.pop_front();
    if (tasks_.at(id).done) continue;
    hand_out(id);
  }
  if (room() > 0) {
    const int round = max_round_recorded_ + 1;
    for (int index : search_.NextProbes(room())) {
      hand_out(NewTask(v1::PROBE_KIND_BISECT, index, round));
    }
  }
  if (!out.empty()) UpdateProgress();
  (void)now;
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
  probe.set_state(v1::PROBE_STATE_FINISHED);
  probe.set_outcome(result.outcome());
  *probe.mutable_samples() = result.samples();
  *probe.mutable_runs() = result.runs();
  *probe.mutable_timings() = result.timings();
  probe.set_message(result.message());
  probe.set_log_tail(result.log_tail());
  probe.set_worker_hardware_class(result.hardware_class());
  *probe.mutable_end_time() = ToProto(now);
  status_.set_bench_runs(status_.bench_runs() + result.runs_size());
  const bool has_samples = result.outcome() == v1::TASK_OUTCOME_SUCCEEDED &&
                           result.samples_size() > 0;
  if (has_samples) {
    std::vector<double> samples(result.samples().begin(), result.samples().end());
    probe.set_median(Median(samples));
    samples_at_[entry.task.commit_index()] = std::move(samples);
    if (status_.metric_name().empty()) {
      status_.set_metric_name(result.metric_name());
      status_.set_metric_unit(result.metric_unit());
    }
    if (status_.direction() == v1::DIRECTION_UNSPECIFIED &&
        result.metric_direction() != v1::DIRECTION_UNSPECIFIED) {
      status_.set_direction(result.metric_direction());
    }
  }

  if (task_id == good_task_ || task_id == bad_task_) {
    if (!has_samples) {
      const bool good = task_id == good_task_;
      Finish(v1::OUTCOME_ERROR,
             absl::StrFormat("the benchmark failed at %s (%s): %s. Fix the build/bench command "
                             "or choose another %s commit.%s%s",
                             good ? "GOOD" : "BAD", Short(probe.sha()),
                             result.message().empty() ? "no sample was produced"
                                                      : result.message(),
                             good ? "GOOD" : "BAD",
                             result.log_tail().empty() ? "" : "\nLast output:\n",
                             result.log_tail()),
             now);
      return std::exchange(to_cancel_, {});
    }
    if (BaselinesReady()) {
      EvaluateBaselines(now);
      if (!finished()) ClassifyPending(now);
    }
  } else if (!has_samples) {
    ApplyVerdict(entry, v1::VERDICT_SKIP, now);
  } else if (BaselinesReady()) {
    const v1::Probe& good = ProbeOf(tasks_.at(good_task_));
    const v1::Probe& bad = ProbeOf(tasks_.at(bad_task_));
    ApplyVerdict(entry,
                 ClassifyByThreshold(result.samples(), good.median(), bad.median(),
                                     status_.spec().threshold_fraction()),
                 now);
  } else {
    unclassified_.push_back(task_id);
  }
  MaybeFinish(now);
  UpdateProgress();
  return std::exchange(to_cancel_, {});
}

std::vector<std::string> BisectJob::OnTaskLost(const std::string& task_id, const std::string& why,
                                               absl::Time now) {
  auto it = tasks_.find(task_id);
  if (it == tasks_.end() || !it->second.active || it->second.done || finished()) return {};
  TaskEntry& entry = it->second;
  entry.active = false;
  v1::Probe& probe = ProbeOf(entry);
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
  if (task_id == good_task_ || task_id == bad_task_) {
    Finish(v1::OUTCOME_ERROR,
           absl::StrCat("could not measure the ", task_id == good_task_ ? "GOOD" : "BAD",
                        " baseline: ", probe.message()),
           now);
    return std::exchange(to_cancel_, {});
  }
  ApplyVerdict(entry, v1::VERDICT_SKIP, now);
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
  return status_.state() == v1::JOB_STATE_DONE || status_.state() == v1::JOB_STATE_FAILED ||
         status_.state() == v1::JOB_STATE_CANCELLED;
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
  return samples_at_.count(0) > 0 && samples_at_.count(status_.commit_count()) > 0 &&
         tasks_.at(good_task_).done && tasks_.at(bad_task_).done;
}

void BisectJob::EvaluateBaselines(absl::Time now) {
  const v1::Probe& good = ProbeOf(tasks_.at(good_task_));
  const v1::Probe& bad = ProbeOf(tasks_.at(bad_task_));
  if (status_.direction() == v1::DIRECTION_UNSPECIFIED) {
    status_.set_direction(v1::DIRECTION_LOWER_IS_BETTER);
  }
  v1::Baseline* good_base = status_.mutable_baseline()->mutable_good();
  good_base->set_sha(good.sha());
  *good_base->mutable_samples() = good.samples();
  good_base->set_median(good.median());
  good_base->set_worker(good.worker());
  v1::Baseline* bad_base = status_.mutable_baseline()->mutable_bad();
  bad_base->set_sha(bad.sha());
  *bad_base->mutable_samples() = bad.samples();
  bad_base->set_median(bad.median());
  bad_base->set_worker(bad.worker());

  const BaselineAssessment assessment =
      AssessBaselines(good.samples(), bad.samples(), status_.direction(),
                      status_.spec().min_effect_fraction());
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
    Finish(v1::OUTCOME_NO_REGRESSION, assessment.reason, now);
    status_.set_cause(v1::CAUSE_NOISE);
    return;
  }
  status_.set_state(v1::JOB_STATE_BISECTING);
}

void BisectJob::ClassifyPending(absl::Time now) {
  const v1::Probe& good = ProbeOf(tasks_.at(good_task_));
  const v1::Probe& bad = ProbeOf(tasks_.at(bad_task_));
  std::vector<std::string> pending = std::exchange(unclassified_, {});
  for (const std::string& id : pending) {
    TaskEntry& entry = tasks_.at(id);
    const v1::Probe& probe = ProbeOf(entry);
    if (probe.state() == v1::PROBE_STATE_CANCELLED) continue;
    ApplyVerdict(entry,
                 ClassifyByThreshold(probe.samples(), good.median(), bad.median(),
                                     status_.spec().threshold_fraction()),
                 now);
  }
}

void BisectJob::ApplyVerdict(TaskEntry& entry, v1::Verdict verdict,
                             absl::Time now) {
  v1::Probe& probe = ProbeOf(entry);
  const int index = entry.task.commit_index();
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
  if (verdict == v1::VERDICT_SKIP) {
    status_.mutable_progress()->set_skips(status_.progress().skips() + 1);
  }
  ++steps_;
  max_round_recorded_ = std::max(max_round_recorded_, probe.round());
  status_.set_rounds(std::max(status_.rounds(), probe.round()));
  status_.set_last_good_index(search_.last_good());
  status_.set_first_bad_index(search_.first_bad());
  CancelUseless(now);
  const int left = std::max(0, search_.RemainingCandidates() - 1);
  const int in_flight = InFlightCount();
  const std::string metric =
      probe.samples_size() > 0 ? absl::StrCat("metric=", FormatValue(probe.median()))
                               : absl::StrCat("failed (", probe.message(), ")");
  Emit(v1::JOB_EVENT_KIND_PROBE_FINISHED,
       absl::StrFormat("Step %d/%d: %s %s -> %s (%d commits left, %d probes in flight)", steps_,
                       steps_ + in_flight + Log2Ceil(std::max(1, left + 1)), Short(probe.sha()),
                       metric, VerdictWord(verdict), left, in_flight),
       &probe, now);
}

void BisectJob::CancelUseless(absl::Time now) {
  const std::vector<int> useless = search_.UselessInFlight();
  if (useless.empty()) return;
  for (auto& [id, entry] : tasks_) {
    if (!entry.active || entry.task.kind() != v1::PROBE_KIND_BISECT) continue;
    const int index = entry.task.commit_index();
    if (std::find(useless.begin(), useless.end(), index) == useless.end()) continue;
    entry.active = false;
    entry.done = true;
    search_.Abandon(index);
    v1::Probe& probe = ProbeOf(entry);
    probe.set_state(v1::PROBE_STATE_CANCELLED);
    probe.set_message("cancelled: outside the open interval");
    *probe.mutable_end_time() = ToProto(now);
    status_.mutable_progress()->set_probes_cancelled(status_.progress().probes_cancelled() + 1);
    to_cancel_.push_back(id);
    Emit(v1::JOB_EVENT_KIND_PROBE_CANCELLED,
         absl::StrCat("Cancelled probe of ", Short(probe.sha()),
                      ": the interval no longer contains it"),
         &probe, now);
  }
  // Unclassified probes outside the interval are no longer useful either.
  unclassified_.erase(std::remove_if(unclassified_.begin(), unclassified_.end(),
                                     [&](const std::string& id) {
                                       const int index = tasks_.at(id).task.commit_index();
                                       return index <= search_.last_good() ||
                                              index >= search_.first_bad();
                                     }),
                      unclassified_.end());
}

void BisectJob::MaybeFinish(absl::Time now) {
  if (finished() || status_.state() != v1::JOB_STATE_BISECTING || !search_.Done()) return;
  const std::vector<int> candidates = search_.Candidates();
  const int last_good = search_.last_good();
  const int first_bad = search_.first_bad();
  *status_.mutable_last_good() = commits_[last_good];
  for (int index : candidates) status_.add_candidates(commits_[index].sha());
  status_.set_before(MedianAt(last_good));
  status_.set_after(MedianAt(first_bad));
  status_.set_culprit_regression_pct(
      RegressionPercent(status_.before(), status_.after(), status_.direction()));
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
                           static_cast<int>(candidates.size()) - 1, Short(commits_[last_good].sha()),
                           Short(commits_[first_bad].sha())),
           now);
  }
}

double BisectJob::MedianAt(int index) const {
  auto it = samples_at_.find(index);
  if (it == samples_at_.end()) return 0;
  return Median(it->second);
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
