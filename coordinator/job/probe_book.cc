// Copyright 2026 The kbisect Authors.
#include "coordinator/job/probe_book.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/rpc/proto_time.h"
#include "common/spec/action_digest.h"
#include "google/protobuf/util/time_util.h"

namespace kbisect {

bool IsMeasured(const v1::Probe& probe, bool pass_fail) {
  if (pass_fail) {
    return probe.outcome() == v1::TASK_OUTCOME_PASSED || probe.outcome() == v1::TASK_OUTCOME_FAILED;
  }
  return probe.outcome() == v1::TASK_OUTCOME_SUCCEEDED && probe.samples_size() > 0;
}

bool JudgedAgainstBaselines(const v1::Probe& probe) {
  return probe.verdict() == v1::VERDICT_GOOD || probe.verdict() == v1::VERDICT_BAD ||
         probe.verdict() == v1::VERDICT_AMBIGUOUS;
}

void AddTimings(const v1::TaskTimings& add, v1::TaskTimings* total, bool first) {
  if (first) {
    *total = add;
    return;
  }
  using google::protobuf::util::TimeUtil;
  auto sum = [](const google::protobuf::Duration& a, const google::protobuf::Duration& b) {
    return TimeUtil::NanosecondsToDuration(TimeUtil::DurationToNanoseconds(a) +
                                           TimeUtil::DurationToNanoseconds(b));
  };
  *total->mutable_checkout() = sum(total->checkout(), add.checkout());
  *total->mutable_build() = sum(total->build(), add.build());
  *total->mutable_build_cpu() = sum(total->build_cpu(), add.build_cpu());
  *total->mutable_bench() = sum(total->bench(), add.bench());
  *total->mutable_total() = sum(total->total(), add.total());
  // A task built here when its build was neither found in the host's cache nor fetched: the
  // probe's builds were fetched when some were and none was built here.
  auto built_here = [](const v1::TaskTimings& t) {
    return !t.build_reused() && !t.build_fetched();
  };
  const bool fetched =
      (total->build_fetched() || add.build_fetched()) && !built_here(*total) && !built_here(add);
  total->set_build_reused(total->build_reused() && add.build_reused());
  total->set_build_fetched(fetched);
  if (!add.build_store().empty()) total->set_build_store(add.build_store());
  if (!add.build_pool().empty()) {
    total->set_build_pool(add.build_pool());
    total->set_build_pool_slots(add.build_pool_slots());
  }
}

ProbeBook::ProbeBook(std::string job_id, v1::JobSpec spec,
                     const std::vector<v1::CommitRef>* commits)
    : job_id_(std::move(job_id)), spec_(std::move(spec)), commits_(commits) {}

std::string ProbeBook::NewTask(v1::ProbeKind kind, int index, int round,
                               const std::string& pinned_worker) {
  const std::string id = absl::StrCat(job_id_, "/p", next_task_++);
  TaskEntry entry;
  entry.pinned_worker = pinned_worker;
  v1::Task& task = entry.task;
  const v1::JobSpec& spec = spec_;
  const v1::CommitRef& commit = (*commits_)[index];
  task.set_task_id(id);
  task.set_job_id(job_id_);
  task.set_kind(kind);
  task.set_repository(spec.repository());
  task.set_commit_sha(commit.sha());
  task.set_commit_index(index);
  task.set_build_command(spec.build_command());
  task.set_build_isolation(spec.build_isolation());
  if (spec.has_dependency()) *task.mutable_dependency() = spec.dependency();
  *task.mutable_bench_command() = spec.bench_command();
  *task.mutable_env() = spec.env();
  *task.mutable_metric() = spec.metric();
  // A suite's lead, once the job knows it (the first result's), travels in every later task:
  // every run's sample is then the same metric's, whatever else a run prints.
  if (!spec.metric().suite().empty() && spec.metric().lead().empty()) {
    task.mutable_metric()->set_lead(lead_metric_);
  }
  task.set_runs(spec.runs_per_commit());
  task.set_discard_throttled(spec.discard_throttled());
  // The key under which this measurement is interchangeable (the result cache's): the spec's
  // hardware class, or none while the job takes the class of its first worker.
  if (!commit.tree_sha().empty()) {
    if (spec_digest_.empty()) spec_digest_ = SpecDigest(spec);
    task.set_action_digest(ActionDigest(commit.tree_sha(), spec_digest_, spec.hardware_class()));
  }
  if (spec.has_build_timeout()) *task.mutable_build_timeout() = spec.build_timeout();
  if (spec.has_bench_timeout()) *task.mutable_bench_timeout() = spec.bench_timeout();

  v1::Probe* probe = rows_.Add();
  probe->set_probe_id(id);
  probe->set_kind(kind);
  probe->set_sha(commit.sha());
  probe->set_index(index);
  probe->set_round(round);
  probe->set_state(v1::PROBE_STATE_PENDING);
  entry.probe = rows_.size() - 1;
  tasks_.emplace(id, std::move(entry));
  return id;
}

int ProbeBook::AddCachedProbe(int index, int round, const v1::CachedResult& cached) {
  const std::string id = NewTask(v1::PROBE_KIND_BISECT, index, round, cached.worker());
  TaskEntry& entry = tasks_.at(id);
  entry.done = true;
  v1::Probe& row = mutable_probe(entry.probe);
  row.set_state(v1::PROBE_STATE_FINISHED);
  row.set_outcome(v1::TASK_OUTCOME_SUCCEEDED);
  row.set_worker(cached.worker());
  row.set_worker_hardware_class(cached.hardware_class());
  *row.mutable_samples() = cached.samples();
  for (double sample : cached.samples()) {
    v1::RunRecord* run = row.add_runs();
    run->set_value(sample);
    run->set_has_value(true);
  }
  *row.mutable_start_time() = cached.measure_time();
  *row.mutable_end_time() = cached.measure_time();
  row.set_cached(true);
  row.set_cached_job_id(cached.job_id());
  return entry.probe;
}

void ProbeBook::Extend(int position, int runs) {
  v1::Probe& row = mutable_probe(position);
  const std::string id = absl::StrCat(row.probe_id(), ".", row.runs_size());
  TaskEntry entry;
  entry.task = tasks_.at(row.probe_id()).task;
  entry.task.set_task_id(id);
  entry.task.set_runs(runs);
  entry.probe = position;
  entry.pinned_worker = row.worker();
  tasks_.emplace(id, std::move(entry));
  row.set_state(v1::PROBE_STATE_PENDING);
  queue_.push_front(id);
}

const v1::Task& ProbeBook::HandOut(const std::string& task_id, const std::string& worker) {
  auto queued = std::find(queue_.begin(), queue_.end(), task_id);
  if (queued != queue_.end()) queue_.erase(queued);
  TaskEntry& entry = tasks_.at(task_id);
  entry.active = true;
  active_.insert(task_id);
  v1::Probe& row = ProbeOf(entry);
  row.set_state(v1::PROBE_STATE_RUNNING);
  row.set_worker(worker);
  return entry.task;
}

void ProbeBook::DropDoneFromQueue() {
  queue_.erase(std::remove_if(queue_.begin(), queue_.end(),
                              [&](const std::string& id) { return tasks_.at(id).done; }),
               queue_.end());
}

void ProbeBook::CancelTask(TaskEntry& entry, const std::string& task_id, const std::string& message,
                           absl::Time now, std::vector<std::string>* to_cancel) {
  entry.done = true;
  if (entry.active) {
    Deactivate(task_id);
    to_cancel->push_back(task_id);
  }
  v1::Probe& row = ProbeOf(entry);
  row.set_state(v1::PROBE_STATE_CANCELLED);
  row.set_message(message);
  *row.mutable_end_time() = ToProto(now);
}

ProbeBook::TaskEntry* ProbeBook::Find(const std::string& task_id) {
  auto it = tasks_.find(task_id);
  return it == tasks_.end() ? nullptr : &it->second;
}

const ProbeBook::TaskEntry* ProbeBook::Find(const std::string& task_id) const {
  auto it = tasks_.find(task_id);
  return it == tasks_.end() ? nullptr : &it->second;
}

std::vector<int> ProbeBook::ProbePositions(
    const std::function<bool(const v1::Probe&)>& which) const {
  std::vector<int> positions;
  for (int i = 0; i < rows_.size(); ++i) {
    if (which(rows_.Get(i))) positions.push_back(i);
  }
  return positions;
}

std::vector<std::string> ProbeBook::ActiveTaskIds() const {
  return std::vector<std::string>(active_.begin(), active_.end());
}

void ProbeBook::Deactivate(const std::string& task_id) {
  auto it = tasks_.find(task_id);
  if (it != tasks_.end()) it->second.active = false;
  active_.erase(task_id);
}

}  // namespace kbisect
