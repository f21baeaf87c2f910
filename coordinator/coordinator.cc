// Copyright 2026 The kbisect Authors.
#include "coordinator/coordinator.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <random>
#include <thread>
#include <utility>

#include "common/rpc/enum_label.h"
#include "common/spec/job_spec.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "common/rpc/proto_time.h"
#include "coordinator/root_cause/root_cause.h"

namespace kbisect {
namespace {

// Follow-ups of follow-ups are started up to this depth (a merge inside a merged branch...).
constexpr int kMaxFollowUpDepth = 3;


std::string RandomSalt() {
  std::random_device device;
  return absl::StrFormat("%06x", device() & 0xffffff);
}

std::string IdentityGpuUuids(const v1::RunnerIdentity& identity) {
  std::string uuids;
  for (const v1::GpuInfo& gpu : identity.gpus()) absl::StrAppend(&uuids, gpu.uuid(), ",");
  return uuids;
}

}  // namespace

class Coordinator::Housekeeper {
 public:
  Housekeeper(Coordinator* coordinator, absl::Duration period)
      : thread_([this, coordinator, period] {
          absl::MutexLock lock(&mu_);
          while (!stop_) {
            mu_.AwaitWithTimeout(absl::Condition(&stop_), period);
            if (stop_) break;
            mu_.Unlock();
            coordinator->ExpireLeases();
            mu_.Lock();
          }
        }) {}
  ~Housekeeper() {
    {
      absl::MutexLock lock(&mu_);
      stop_ = true;
    }
    thread_.join();
  }

 private:
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

class ABSL_SCOPED_LOCKABLE Coordinator::WriteLock {
 public:
  explicit WriteLock(Coordinator* coordinator) ABSL_EXCLUSIVE_LOCK_FUNCTION(coordinator->mu_)
      : coordinator_(coordinator) {
    coordinator_->mu_.Lock();
  }
  ~WriteLock() ABSL_UNLOCK_FUNCTION() {
    coordinator_->FlushLocked();
    coordinator_->mu_.Unlock();
  }
  WriteLock(const WriteLock&) = delete;
  WriteLock& operator=(const WriteLock&) = delete;

 private:
  Coordinator* const coordinator_;
};

Coordinator::Coordinator(CoordinatorOptions options, RepositoryView* repositories, Clock* clock)
    : options_(options),
      repositories_(repositories),
      clock_(clock),
      store_(options.store),
      id_salt_(RandomSalt()) {}

Coordinator::~Coordinator() {
  Shutdown();
  housekeeper_.reset();
}

void Coordinator::StartHousekeeping(absl::Duration period) {
  housekeeper_ = std::make_unique<Housekeeper>(this, period);
}

void Coordinator::Shutdown() {
  absl::MutexLock lock(&mu_);
  shutdown_ = true;
  changed_.SignalAll();
}

std::string Coordinator::NewId(const char* prefix) {
  return absl::StrCat(prefix, id_salt_, "-", ++next_id_);
}

// --- Persistence --------------------------------------------------------------------------------

Coordinator::CallResult Coordinator::ApplyLocked(const std::string& job_id, JobEntry& entry,
                                                 JournalEntry call) {
  CallResult out;
  BisectJob& job = *entry.job;
  bool journal = true;
  switch (call.kind) {
    case JournalEntry::Kind::kTakeTasks:
      out.assignments = job.TakeTasks(call.workers, call.time);
      // A TakeTasks that hands out nothing leaves no trace in the job (every worker it looks at
      // already has its calibration task, or it stops for lack of room), so it is not journaled:
      // idle workers polling a job that has nothing for them would otherwise grow the journal
      // with every heartbeat. This relies on BisectJob::TakeTasks keeping that property.
      journal = !out.assignments.empty();
      if (replaying_) {
        for (const BisectJob::Assignment& assignment : out.assignments) {
          replayed_tasks_[assignment.task.task_id()] = {assignment.worker, assignment.task};
        }
      }
      break;
    case JournalEntry::Kind::kTaskStarted:
      job.OnTaskStarted(call.task_id, call.worker, call.attempt, call.time);
      task_attempts_[call.task_id] = std::max(task_attempts_[call.task_id], call.attempt);
      if (replaying_) replayed_tasks_[call.task_id].first = call.worker;
      break;
    case JournalEntry::Kind::kTaskFinished:
      out.cancel = job.OnTaskFinished(call.task_id, call.result, call.time);
      break;
    case JournalEntry::Kind::kTaskLost:
      out.cancel = job.OnTaskLost(call.task_id, call.reason, call.time);
      break;
    case JournalEntry::Kind::kWorkerGone:
      out.cancel = job.OnWorkerGone(call.worker, call.reason, call.time);
      break;
    case JournalEntry::Kind::kForgetWorker:
      job.ForgetWorker(call.worker, call.reason, call.time);
      break;
    case JournalEntry::Kind::kCancel:
      out.cancel = job.Cancel(call.reason, call.time);
      break;
  }
  if (replaying_) {
    entry.journal_sequence = call.sequence;
  } else if (journal && store_ != nullptr) {
    call.sequence = ++entry.journal_sequence;
    pending_.entries.emplace_back(job_id, std::move(call));
  }
  AfterJobChangeLocked(job_id, entry);
  return out;
}

void Coordinator::FlushLocked() {
  if (store_ == nullptr || pending_.empty()) return;
  const absl::Status committed = store_->Commit(pending_);
  pending_ = StoreChanges();
  if (!committed.ok()) {
    // Memory is now ahead of the disk; answering would acknowledge changes a restart loses.
    std::cerr << "kbisect-coordinator: cannot persist the job state: " << committed.message()
              << "; stopping so that a restart recovers the last committed state\n"
              << std::flush;
    std::abort();
  }
}

absl::StatusOr<RecoveryReport> Coordinator::Recover() {
  RecoveryReport report;
  if (store_ == nullptr) return report;
  absl::StatusOr<StoredState> state = store_->Load();
  if (!state.ok()) return state.status();
  WriteLock lock(this);
  if (!jobs_.empty() || !workers_.empty()) {
    return absl::FailedPreconditionError("Recover must be called before any other call");
  }
  const absl::Time now = clock_->Now();
  for (StoredWorker& stored : state->workers) {
    WorkerEntry& worker = workers_[stored.worker_id];
    worker.worker_id = stored.worker_id;
    worker.name = stored.name;
    worker.identity = std::move(stored.identity);
    worker.state = v1::WORKER_STATE_LOST;
    worker.awaiting_reconnect = true;
    worker.last_seen = now;
    ++report.workers;
  }
  replaying_ = true;
  for (StoredJob& stored : state->jobs) {
    JobEntry& entry = jobs_[stored.job_id];
    entry.job = std::make_unique<BisectJob>(stored.job_id, std::move(stored.spec),
                                            std::move(stored.commits), stored.create_time);
    entry.request_id = stored.request_id;
    entry.has_stored_final = stored.has_final_status;
    entry.stored_final = std::move(stored.final_status);
    job_order_.push_back(stored.job_id);
    if (!stored.request_id.empty()) request_ids_[stored.request_id] = stored.job_id;
    AfterJobChangeLocked(stored.job_id, entry);
    for (JournalEntry& call : stored.journal) {
      ApplyLocked(stored.job_id, entry, std::move(call));
    }
    entry.has_stored_final = false;
    entry.stored_final.Clear();
    ++report.jobs;
  }
  replaying_ = false;
  // Jobs that finished without a stored final status: find (or start) their follow-ups.
  for (const std::string& job_id : std::exchange(replayed_finished_, {})) {
    JobEntry& entry = jobs_.at(job_id);
    StartFollowUpsLocked(job_id, entry);
    if (!entry.follow_ups.empty()) {
      entry.job->mutable_status()->set_state(v1::JOB_STATE_FOLLOWING_UP);
    }
    MaybeCompleteLocked(job_id);
  }
  // Probes that were running lost their leases with the old process: each waits for its worker
  // to come back (see the header for why), or is lost if that worker is unknown.
  for (const std::string& job_id : job_order_) {
    JobEntry& entry = jobs_.at(job_id);
    if (entry.job->finished()) continue;
    ++report.unfinished;
    for (const std::string& task_id : entry.job->ActiveTaskIds()) {
      ++report.orphaned_probes;
      auto task = replayed_tasks_.find(task_id);
      if (task != replayed_tasks_.end()) {
        auto worker = workers_.find(task->second.first);
        if (worker != workers_.end()) {
          worker->second.orphans.emplace_back(job_id, std::move(task->second.second));
          continue;
        }
      }
      JournalEntry lost;
      lost.kind = JournalEntry::Kind::kTaskLost;
      lost.time = now;
      lost.task_id = task_id;
      lost.reason = "the coordinator restarted";
      CancelTasksLocked(job_id, ApplyLocked(job_id, entry, std::move(lost)).cancel,
                        "outside the open interval");
    }
  }
  replayed_tasks_.clear();
  return report;
}

void Coordinator::LoseOrphansLocked(WorkerEntry& worker, const std::string& why) {
  const absl::Time now = clock_->Now();
  for (auto& [job_id, task] : std::exchange(worker.orphans, {})) {
    auto it = jobs_.find(job_id);
    if (it == jobs_.end() || it->second.job->finished()) continue;
    JournalEntry lost;
    lost.kind = JournalEntry::Kind::kTaskLost;
    lost.time = now;
    lost.task_id = task.task_id();
    lost.reason = absl::StrCat("worker ", worker.worker_id, ": ", why);
    CancelTasksLocked(job_id, ApplyLocked(job_id, it->second, std::move(lost)).cancel,
                      "outside the open interval");
  }
}

// --- Jobs ---------------------------------------------------------------------------------------

absl::StatusOr<v1::SubmitJobResponse> Coordinator::SubmitJob(
    const v1::SubmitJobRequest& request) {
  {
    absl::MutexLock lock(&mu_);
    if (shutdown_) return absl::UnavailableError("the coordinator is shutting down");
    if (!request.request_id().empty()) {
      auto it = request_ids_.find(request.request_id());
      if (it != request_ids_.end()) {
        v1::SubmitJobResponse response;
        response.set_job_id(it->second);
        response.set_existing(true);
        *response.mutable_job() = jobs_.at(it->second).job->status();
        return response;
      }
    }
  }
  if (absl::Status valid = ValidateSpec(request.spec()); !valid.ok()) return valid;
  // Resolution does I/O (git); it runs without the lock.
  absl::StatusOr<std::vector<v1::CommitRef>> commits = repositories_->ResolveRange(request.spec());
  if (!commits.ok()) return commits.status();

  WriteLock lock(this);
  if (!request.request_id().empty() && request_ids_.count(request.request_id()) > 0) {
    // A concurrent submission with the same request id won the race.
    const std::string& job_id = request_ids_.at(request.request_id());
    v1::SubmitJobResponse response;
    response.set_job_id(job_id);
    response.set_existing(true);
    *response.mutable_job() = jobs_.at(job_id).job->status();
    return response;
  }
  const std::string job_id = CreateJobLocked(request.spec(), request.request_id(), *std::move(commits));
  DispatchLocked();

  v1::SubmitJobResponse response;
  response.set_job_id(job_id);
  *response.mutable_job() = jobs_.at(job_id).job->status();
  return response;
}

std::string Coordinator::CreateJobLocked(const v1::JobSpec& spec, const std::string& request_id,
                                         std::vector<v1::CommitRef> commits) {
  std::string job_id = NewId("job-");
  while (jobs_.count(job_id) > 0) job_id = NewId("job-");  // A recovered job has it.
  const absl::Time now = clock_->Now();
  if (store_ != nullptr) {
    StoredJob stored;
    stored.job_id = job_id;
    stored.request_id = request_id;
    stored.spec = spec;
    stored.commits = commits;
    stored.create_time = now;
    pending_.new_jobs.push_back(std::move(stored));
  }
  JobEntry& entry = jobs_[job_id];
  entry.job = std::make_unique<BisectJob>(job_id, spec, std::move(commits), now);
  entry.request_id = request_id;
  job_order_.push_back(job_id);
  if (!request_id.empty()) request_ids_[request_id] = job_id;
  AfterJobChangeLocked(job_id, entry);
  return job_id;
}

absl::StatusOr<v1::JobStatus> Coordinator::GetJob(const std::string& job_id) const {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) {
    return absl::NotFoundError(
        absl::StrCat("no job '", job_id, "'; `kbisect status` lists the known jobs"));
  }
  return it->second.job->status();
}

v1::ListJobsResponse Coordinator::ListJobs(const v1::ListJobsRequest& request) const {
  absl::MutexLock lock(&mu_);
  v1::ListJobsResponse response;
  const int page_size = request.page_size() > 0 ? request.page_size() : 50;
  int skip = 0;
  if (!request.page_token().empty()) {
    if (!absl::SimpleAtoi(request.page_token(), &skip)) skip = 0;
  }
  int seen = 0;
  for (auto it = job_order_.rbegin(); it != job_order_.rend(); ++it) {
    const v1::JobStatus& job = jobs_.at(*it).job->status();
    if (request.states_size() > 0 &&
        std::find(request.states().begin(), request.states().end(), job.state()) ==
            request.states().end()) {
      continue;
    }
    if (seen++ < skip) continue;
    if (response.jobs_size() == page_size) {
      response.set_next_page_token(absl::StrCat(skip + page_size));
      break;
    }
    v1::JobSummary* summary = response.add_jobs();
    summary->set_job_id(job.job_id());
    summary->set_state(job.state());
    summary->set_status(job.status());
    summary->set_repository(job.spec().repository());
    summary->set_good(job.spec().good());
    summary->set_bad(job.spec().bad());
    summary->set_culprit_sha(job.culprit().sha());
    *summary->mutable_progress() = job.progress();
    *summary->mutable_create_time() = job.create_time();
    *summary->mutable_origin() = job.spec().origin();
  }
  return response;
}

absl::StatusOr<v1::JobStatus> Coordinator::CancelJob(const std::string& job_id,
                                                     const std::string& reason) {
  WriteLock lock(this);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return absl::NotFoundError(absl::StrCat("no job '", job_id, "'"));
  CancelJobLocked(job_id, reason.empty() ? "requested by a client" : reason);
  DispatchLocked();
  return it->second.job->status();
}

void Coordinator::CancelJobLocked(const std::string& job_id, const std::string& reason) {
  JobEntry& entry = jobs_.at(job_id);
  if (!entry.job->finished()) {
    JournalEntry call;
    call.kind = JournalEntry::Kind::kCancel;
    call.time = clock_->Now();
    call.reason = reason;
    CancelTasksLocked(job_id, ApplyLocked(job_id, entry, std::move(call)).cancel,
                      "job cancelled");
  }
  // Its follow-ups go with it (each completes as cancelled, then the job completes).
  const std::vector<std::string> follow_ups = entry.follow_ups;
  for (const std::string& child : follow_ups) {
    if (jobs_.count(child) > 0) CancelJobLocked(child, reason);
  }
}

absl::Status Coordinator::WatchJob(const std::string& job_id, int64_t after_sequence,
                                   const std::function<bool(const v1::JobEvent&)>& sink,
                                   const std::function<bool()>& is_cancelled) {
  int64_t next = after_sequence;
  while (true) {
    std::vector<v1::JobEvent> batch;
    {
      absl::MutexLock lock(&mu_);
      auto it = jobs_.find(job_id);
      if (it == jobs_.end()) return absl::NotFoundError(absl::StrCat("no job '", job_id, "'"));
      const JobEntry* entry = &it->second;
      auto ready = [&]() {
        mu_.AssertHeld();
        return shutdown_ || static_cast<int64_t>(entry->events.size()) > next;
      };
      while (!ready()) {
        if (is_cancelled && is_cancelled()) return absl::CancelledError("the watcher went away");
        changed_.WaitWithTimeout(&mu_, absl::Seconds(1));
      }
      if (static_cast<int64_t>(entry->events.size()) <= next) {
        return absl::UnavailableError("the coordinator is shutting down");
      }
      batch.assign(entry->events.begin() + next, entry->events.end());
    }
    for (const v1::JobEvent& event : batch) {
      next = event.sequence();
      if (!sink(event)) return absl::CancelledError("the watcher went away");
      if (event.kind() == v1::JOB_EVENT_KIND_FINISHED) return absl::OkStatus();
    }
  }
}

void Coordinator::AfterJobChangeLocked(const std::string& job_id, JobEntry& entry) {
  bool restored_final = false;
  if (entry.job->finished() && !entry.reported) {
    if (replaying_ && entry.has_stored_final) {
      // As it was when the job (and its follow-ups) completed: no need to redo any I/O.
      *entry.job->mutable_status() = entry.stored_final;
      entry.reported = true;
      entry.follow_ups_decided = true;
      restored_final = true;
      for (const std::string& id : entry.stored_final.follow_up_job_ids()) {
        entry.follow_ups.push_back(id);
      }
    } else {
      AttachReportLocked(entry);
    }
  }
  if (entry.job->finished() && !entry.follow_ups_decided) {
    entry.follow_ups_decided = true;
    if (replaying_) {
      // Its follow-ups (if it had started any) are replayed after it: link them afterwards.
      replayed_finished_.push_back(job_id);
    } else {
      StartFollowUpsLocked(job_id, entry);
    }
  }
  for (v1::JobEvent& event : entry.job->TakeEvents()) {
    if (event.kind() == v1::JOB_EVENT_KIND_FINISHED && !restored_final &&
        (!entry.follow_ups.empty() ||
         std::find(replayed_finished_.begin(), replayed_finished_.end(), job_id) !=
             replayed_finished_.end())) {
      // Released by MaybeCompleteLocked once the follow-ups are done.
      *event.mutable_job() = entry.job->status();  // Remembers the final state.
      entry.held_finish = std::make_unique<v1::JobEvent>(std::move(event));
      if (!entry.follow_ups.empty()) {
        entry.job->mutable_status()->set_state(v1::JOB_STATE_FOLLOWING_UP);
      }
      continue;
    }
    if (event.kind() == v1::JOB_EVENT_KIND_FINISHED) {
      *event.mutable_job() = entry.job->status();
      entry.complete = true;
      if (store_ != nullptr && !replaying_) {
        pending_.final_statuses.emplace_back(job_id, entry.job->status());
      }
    }
    AppendEventLocked(entry, std::move(event));
  }
  v1::JobStatus* status = entry.job->mutable_status();
  status->set_revision(static_cast<int64_t>(entry.events.size()));
  changed_.SignalAll();
  if (entry.complete && !entry.job->status().spec().parent_job_id().empty()) {
    MaybeCompleteLocked(entry.job->status().spec().parent_job_id());
  }
}

void Coordinator::AppendEventLocked(JobEntry& entry, v1::JobEvent event) {
  const std::string parent = entry.job->status().spec().parent_job_id();
  if (!parent.empty() && event.kind() != v1::JOB_EVENT_KIND_FINISHED) {
    auto it = jobs_.find(parent);
    if (it != jobs_.end() && !it->second.complete) {
      v1::JobEvent copy = event;
      copy.clear_job();
      const std::string& kind = entry.job->status().spec().follow_up();
      const char* label = kind == "merged_branch"  ? "[merged branch] "
                          : kind == "steps_before" ? "[before the culprit] "
                                                   : "[after the culprit] ";
      copy.set_message(absl::StrCat(label, event.message()));
      // A follow-up's STARTED line is a progress line in its parent's stream.
      if (copy.kind() == v1::JOB_EVENT_KIND_STARTED) copy.set_kind(v1::JOB_EVENT_KIND_WARNING);
      AppendEventLocked(it->second, std::move(copy));
      it->second.job->mutable_status()->set_revision(
          static_cast<int64_t>(it->second.events.size()));
    }
  }
  event.set_sequence(static_cast<int64_t>(entry.events.size()) + 1);
  entry.events.push_back(std::move(event));
}

void Coordinator::StartFollowUpsLocked(const std::string& job_id, JobEntry& entry) {
  const v1::JobStatus& status = entry.job->status();
  if (status.status() != v1::OUTCOME_CULPRIT_FOUND ||
      status.spec().follow_up_depth() >= kMaxFollowUpDepth) {
    return;
  }
  struct Planned {
    std::string kind;
    std::string good;
    std::string bad;
    bool all_commits = false;
  };
  std::vector<Planned> planned;
  std::vector<std::string> problems;
  const std::string& repository = status.spec().repository();
  if (status.spec().descend_merges() && status.culprit().is_merge()) {
    absl::StatusOr<RepositoryView::MergedBranchRange> branch =
        repositories_->MergedBranch(repository, status.culprit().sha());
    if (branch.ok()) {
      planned.push_back({"merged_branch", branch->base, branch->tip});
    } else {
      problems.push_back(absl::StrCat("cannot bisect the merged branch of ",
                                      status.culprit().sha().substr(0, 12), ": ",
                                      branch.status().message()));
    }
  }
  if (status.spec().all_culprits() && status.multiple_steps()) {
    if (status.last_good().sha() != status.good_sha()) {
      planned.push_back({"steps_before", status.good_sha(), status.last_good().sha()});
    }
    if (status.culprit().sha() != status.bad_sha()) {
      planned.push_back({"steps_after", status.culprit().sha(), status.bad_sha()});
    }
  }
  for (const Planned& plan : planned) {
    v1::JobSpec spec = status.spec();
    spec.set_good(plan.good);
    spec.set_bad(plan.bad);
    spec.set_parent_job_id(job_id);
    spec.set_follow_up(plan.kind);
    spec.set_follow_up_depth(status.spec().follow_up_depth() + 1);
    spec.set_description(absl::StrCat(plan.kind, " of ", job_id));
    const std::string request_id = absl::StrCat(job_id, "/", plan.kind);
    std::string child_id;
    if (auto known = request_ids_.find(request_id); known != request_ids_.end()) {
      child_id = known->second;  // Started before a coordinator restart.
    } else {
      // Resolving is a little git I/O on a finished job, like the report's diff.
      absl::StatusOr<std::vector<v1::CommitRef>> commits = repositories_->ResolveRange(spec);
      if (!commits.ok() && absl::IsFailedPrecondition(commits.status()) &&
          spec.history() != v1::HISTORY_MODE_ALL_COMMITS) {
        // The branch's base is not on its first-parent chain (it merged mainline meanwhile).
        spec.set_history(v1::HISTORY_MODE_ALL_COMMITS);
        commits = repositories_->ResolveRange(spec);
      }
      if (!commits.ok()) {
        problems.push_back(absl::StrCat("cannot start the ", plan.kind, " follow-up: ",
                                        commits.status().message()));
        continue;
      }
      child_id = CreateJobLocked(spec, request_id, *std::move(commits));
    }
    entry.follow_ups.push_back(child_id);
    entry.job->mutable_status()->add_follow_up_job_ids(child_id);
  }
  for (const std::string& problem : problems) entry.job->mutable_status()->add_warnings(problem);
  if (!entry.follow_ups.empty()) DispatchLocked();
}

void Coordinator::MaybeCompleteLocked(const std::string& job_id) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return;
  JobEntry& entry = it->second;
  if (entry.complete || entry.held_finish == nullptr) return;
  for (const std::string& child : entry.follow_ups) {
    auto found = jobs_.find(child);
    if (found != jobs_.end() && !found->second.complete) return;
  }
  v1::JobStatus* status = entry.job->mutable_status();
  const double total = status->baseline().bad().median() - status->baseline().good().median();
  for (const std::string& child : entry.follow_ups) {
    auto found = jobs_.find(child);
    if (found == jobs_.end()) continue;
    const v1::JobStatus& result = found->second.job->status();
    const bool merged = result.spec().follow_up() == "merged_branch";
    status->set_bench_runs(status->bench_runs() + result.bench_runs());
    const std::string range = absl::StrCat(
        merged ? "the merged branch " : "", result.good_sha().substr(0, 7), "..",
        result.bad_sha().substr(0, 7), " (job ", child, ")");
    if (result.status() == v1::OUTCOME_NO_REGRESSION) {
      status->add_warnings(absl::StrCat("no further step in ", range, ": ", result.error()));
      continue;
    }
    if (result.status() != v1::OUTCOME_CULPRIT_FOUND) {
      status->add_warnings(absl::StrCat(
          range, " gave no culprit: ",
          result.error().empty() ? EnumLabel(result.status())
                                 : result.error()));
      continue;
    }
    if (merged) {
      *status->mutable_merged_culprit() = result.culprit();
      continue;
    }
    for (const v1::Culprit& step : result.culprits()) {
      v1::Culprit* added = status->add_culprits();
      *added = step;
      added->set_share_of_total(total == 0 ? 0 : (step.after() - step.before()) / total);
    }
  }
  if (status->culprits_size() > 1) {
    std::stable_sort(status->mutable_culprits()->begin(), status->mutable_culprits()->end(),
                     [](const v1::Culprit& a, const v1::Culprit& b) {
                       return std::fabs(a.after() - a.before()) > std::fabs(b.after() - b.before());
                     });
  }
  std::unique_ptr<v1::JobEvent> finish = std::move(entry.held_finish);
  status->set_state(finish->job().state());
  if (!entry.follow_ups.empty()) {
    // The result took its follow-ups too: their runs and time count.
    const absl::Time now = clock_->Now();
    *status->mutable_finish_time() = ToProto(now);
    status->set_wall_seconds(absl::ToDoubleSeconds(now - FromProto(status->create_time())));
  }
  *finish->mutable_job() = *status;
  entry.complete = true;
  if (store_ != nullptr && !replaying_) pending_.final_statuses.emplace_back(job_id, *status);
  AppendEventLocked(entry, std::move(*finish));
  status->set_revision(static_cast<int64_t>(entry.events.size()));
  changed_.SignalAll();
  if (!status->spec().parent_job_id().empty()) MaybeCompleteLocked(status->spec().parent_job_id());
}

void Coordinator::AttachReportLocked(JobEntry& entry) {
  entry.reported = true;
  v1::JobStatus* status = entry.job->mutable_status();
  // Identities of the workers that took part (the job filled in their calibration).
  for (v1::JobWorker& worker : *status->mutable_workers()) {
    auto it = workers_.find(worker.worker());
    if (it != workers_.end()) *worker.mutable_identity() = it->second.identity;
  }
  if (status->status() != v1::OUTCOME_CULPRIT_FOUND) return;
  // The diff of the culprit: small I/O on a finished job, done once.
  const std::string& repository = status->spec().repository();
  const std::string& from = status->last_good().sha();
  const std::string& to = status->culprit().sha();
  absl::StatusOr<std::vector<v1::FileChange>> files = repositories_->DiffStat(repository, from, to);
  if (files.ok()) {
    for (v1::FileChange& file : *files) *status->add_files_changed() = std::move(file);
  } else {
    status->add_warnings(absl::StrCat("could not list the culprit's files: ",
                                      files.status().message()));
  }
  absl::StatusOr<std::string> patch = repositories_->DiffPatch(repository, from, to);
  if (patch.ok()) {
    for (v1::RootCauseHint& hint : FindRootCauseHints(*patch)) {
      *status->add_root_cause_hints() = std::move(hint);
    }
  }
}

// --- Workers ------------------------------------------------------------------------------------

absl::StatusOr<v1::OpenSessionResponse> Coordinator::OpenSession(
    const v1::OpenSessionRequest& request) {
  WriteLock lock(this);
  if (shutdown_) return absl::UnavailableError("the coordinator is shutting down");
  const absl::Time now = clock_->Now();
  const std::string name =
      request.worker_name().empty() ? NewId("anonymous-") : request.worker_name();
  WorkerEntry* worker = nullptr;
  for (auto& [id, entry] : workers_) {
    if (entry.name == name) worker = &entry;
  }
  if (worker == nullptr) {
    const std::string worker_id = name;
    worker = &workers_[worker_id];
    worker->worker_id = worker_id;
    worker->name = name;
  } else {
    sessions_.erase(worker->session_id);
    // Leases of the previous session survive only if the worker still holds them.
    std::vector<std::string> keep;
    for (const std::string& lease_id : worker->leases) {
      const bool held = std::any_of(
          request.held_leases().begin(), request.held_leases().end(),
          [&](const v1::LeaseStatus& held) { return held.lease_id() == lease_id; });
      auto it = leases_.find(lease_id);
      if (it == leases_.end() || it->second.state != LeaseState::kActive) continue;
      if (held) {
        keep.push_back(lease_id);
        it->second.expire = now + options_.lease_duration;
      } else {
        LoseLeaseLocked(it->second, "the worker reconnected without it");
      }
    }
    worker->leases = keep;
    worker->pending_assignments.clear();
    worker->pending_cancellations.clear();
  }
  if (!worker->identity.hardware_class().empty() &&
      (worker->identity.hardware_class() != request.identity().hardware_class() ||
       IdentityGpuUuids(worker->identity) != IdentityGpuUuids(request.identity()))) {
    LoseOrphansLocked(*worker, "it reconnected with different hardware after a restart");
    for (const std::string& job_id : job_order_) {
      JobEntry& entry = jobs_.at(job_id);
      if (entry.job->finished()) continue;  // ForgetWorker ignores finished jobs.
      JournalEntry call;
      call.kind = JournalEntry::Kind::kForgetWorker;
      call.time = now;
      call.worker = worker->worker_id;
      call.reason = "it reconnected with a different GPU, driver or toolkit";
      ApplyLocked(job_id, entry, std::move(call));
    }
  }
  worker->identity = request.identity();
  worker->awaiting_reconnect = false;
  if (store_ != nullptr) {
    pending_.workers.push_back(StoredWorker{worker->worker_id, worker->name, worker->identity});
  }
  worker->session_id = NewId("session-");
  worker->state = v1::WORKER_STATE_IDLE;
  worker->ready = false;
  worker->draining = false;
  worker->last_seen = now;
  worker->connect_time = now;
  sessions_[worker->session_id] = worker->worker_id;

  v1::OpenSessionResponse response;
  response.set_session_id(worker->session_id);
  response.set_worker_id(worker->worker_id);
  *response.mutable_heartbeat_interval() = ToProto(options_.heartbeat_interval);
  *response.mutable_lease_duration() = ToProto(options_.lease_duration);
  DispatchLocked();
  return response;
}

Coordinator::WorkerEntry* Coordinator::WorkerForSessionLocked(const std::string& session_id) {
  auto it = sessions_.find(session_id);
  if (it == sessions_.end()) return nullptr;
  return &workers_.at(it->second);
}

absl::StatusOr<v1::SynchronizeResponse> Coordinator::Synchronize(
    const v1::SynchronizeRequest& request) {
  WriteLock lock(this);
  if (shutdown_) return absl::UnavailableError("the coordinator is shutting down");
  WorkerEntry* worker = WorkerForSessionLocked(request.session_id());
  if (worker == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        "unknown session '", request.session_id(), "' (the coordinator may have restarted); "
        "open a new session"));
  }
  const absl::Time now = clock_->Now();
  worker->last_seen = now;
  worker->draining = request.draining();
  const uint64_t sequence = ++worker->poll_sequence;
  v1::SynchronizeResponse response;

  // Renew the leases the worker reports; tell it to drop the ones that are dead.
  for (const v1::LeaseStatus& status : request.leases()) {
    auto it = leases_.find(status.lease_id());
    if (it == leases_.end() || it->second.state != LeaseState::kActive ||
        it->second.worker_id != worker->worker_id) {
      v1::LeaseCancellation* cancel = response.add_cancellations();
      cancel->set_lease_id(status.lease_id());
      cancel->set_reason("the lease is no longer valid");
      continue;
    }
    it->second.expire = now + options_.lease_duration;
  }
  // Active leases the worker no longer reports, although it had them delivered, are lost.
  std::vector<std::string> lost;
  for (const std::string& lease_id : worker->leases) {
    const bool pending = std::any_of(
        worker->pending_assignments.begin(), worker->pending_assignments.end(),
        [&](const v1::Lease& lease) { return lease.lease_id() == lease_id; });
    const bool reported = std::any_of(
        request.leases().begin(), request.leases().end(),
        [&](const v1::LeaseStatus& status) { return status.lease_id() == lease_id; });
    if (!pending && !reported) lost.push_back(lease_id);
  }
  for (const std::string& lease_id : lost) {
    LoseLeaseLocked(leases_.at(lease_id), "the worker no longer holds it");
  }
  worker->ready = request.ready_for_work() && !request.draining();
  worker->state = request.draining()         ? v1::WORKER_STATE_DRAINING
                  : worker->leases.empty() ? v1::WORKER_STATE_IDLE
                                           : v1::WORKER_STATE_BUSY;
  DispatchLocked();

  const absl::Duration wait =
      request.has_wait() ? std::min(FromProto(request.wait()), options_.max_wait)
                         : absl::ZeroDuration();
  const std::string session_id = request.session_id();
  auto has_news = [&]() {
    mu_.AssertHeld();
    if (shutdown_) return true;
    WorkerEntry* w = WorkerForSessionLocked(session_id);
    return w == nullptr || w->poll_sequence != sequence || !w->pending_assignments.empty() ||
           !w->pending_cancellations.empty();
  };
  // Waiting releases the lock: what changed so far is committed first.
  FlushLocked();
  if (response.cancellations_size() == 0 && wait > absl::ZeroDuration()) {
    const absl::Time deadline = absl::Now() + wait;
    while (!has_news()) {
      if (changed_.WaitWithDeadline(&mu_, deadline)) break;
    }
  }
  worker = WorkerForSessionLocked(session_id);
  if (worker == nullptr) {
    return absl::NotFoundError("the session was replaced by a newer one of the same worker");
  }
  if (worker->poll_sequence != sequence) return response;  // Superseded by a newer call.
  for (v1::Lease& lease : worker->pending_assignments) {
    *response.add_assignments() = std::move(lease);
  }
  worker->pending_assignments.clear();
  for (v1::LeaseCancellation& cancel : worker->pending_cancellations) {
    const bool already = std::any_of(
        response.cancellations().begin(), response.cancellations().end(),
        [&](const v1::LeaseCancellation& c) { return c.lease_id() == cancel.lease_id(); });
    if (!already) *response.add_cancellations() = std::move(cancel);
  }
  worker->pending_cancellations.clear();
  *response.mutable_lease_expire_time() = ToProto(clock_->Now() + options_.lease_duration);
  return response;
}

absl::StatusOr<v1::CompleteLeaseResponse> Coordinator::CompleteLease(
    const v1::CompleteLeaseRequest& request) {
  // The answer leaves only after the lock's release, i.e. after the result was committed.
  WriteLock lock(this);
  if (shutdown_) return absl::UnavailableError("the coordinator is shutting down");
  v1::CompleteLeaseResponse response;
  WorkerEntry* worker = WorkerForSessionLocked(request.session_id());
  if (worker == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("unknown session '", request.session_id(), "'; open a new session"));
  }
  worker->last_seen = clock_->Now();
  auto it = leases_.find(request.lease_id());
  if (it == leases_.end()) {
    response.set_reason("unknown lease");
    return response;
  }
  LeaseEntry& lease = it->second;
  if (lease.worker_id != worker->worker_id) {
    return absl::PermissionDeniedError(
        absl::StrCat("lease ", request.lease_id(), " is not held by this worker"));
  }
  if (lease.attempt != request.attempt()) {
    response.set_reason("attempt does not match the lease");
    return response;
  }
  if (lease.state == LeaseState::kCompleted) {
    response.set_accepted(true);
    response.set_duplicate(true);
    return response;
  }
  if (lease.state == LeaseState::kDead) {
    response.set_reason("the lease expired or was cancelled; the result is discarded");
    return response;
  }
  lease.state = LeaseState::kCompleted;
  DetachLeaseLocked(lease);
  ++worker->tasks_completed;
  response.set_accepted(true);

  auto job_it = jobs_.find(lease.job_id);
  if (job_it != jobs_.end()) {
    JournalEntry call;
    call.kind = JournalEntry::Kind::kTaskFinished;
    call.time = clock_->Now();
    call.task_id = lease.task_id;
    call.result = request.result();
    const CallResult result = ApplyLocked(lease.job_id, job_it->second, std::move(call));
    CancelTasksLocked(lease.job_id, result.cancel, "outside the open interval");
  }
  DispatchLocked();
  return response;
}

absl::Status Coordinator::CloseSession(const v1::CloseSessionRequest& request) {
  WriteLock lock(this);
  WorkerEntry* worker = WorkerForSessionLocked(request.session_id());
  if (worker == nullptr) return absl::OkStatus();
  for (const std::string& lease_id : std::vector<std::string>(worker->leases)) {
    LoseLeaseLocked(leases_.at(lease_id), "the worker closed its session");
  }
  LoseOrphansLocked(*worker, "it closed its session");
  sessions_.erase(request.session_id());
  worker->session_id.clear();
  worker->ready = false;
  worker->state = v1::WORKER_STATE_LOST;
  WorkerGoneLocked(worker->worker_id, "it closed its session");
  DispatchLocked();
  changed_.SignalAll();
  return absl::OkStatus();
}

v1::ListWorkersResponse Coordinator::ListWorkers() const {
  absl::MutexLock lock(&mu_);
  v1::ListWorkersResponse response;
  for (const auto& [id, entry] : workers_) {
    v1::Worker* worker = response.add_workers();
    worker->set_worker_id(id);
    *worker->mutable_identity() = entry.identity;
    worker->set_state(entry.state);
    if (!entry.leases.empty()) {
      worker->set_current_lease_id(entry.leases.front());
      worker->set_current_job_id(leases_.at(entry.leases.front()).job_id);
    }
    *worker->mutable_last_seen() = ToProto(entry.last_seen);
    *worker->mutable_connect_time() = ToProto(entry.connect_time);
    worker->set_tasks_completed(entry.tasks_completed);
  }
  return response;
}

// --- Monitoring ---------------------------------------------------------------------------------

MetricsSnapshot Coordinator::Metrics() const {
  MetricsSnapshot snapshot;
  for (int state = v1::JOB_STATE_QUEUED; state <= v1::JobState_MAX; ++state) {
    if (!v1::JobState_IsValid(state)) continue;
    snapshot.jobs_by_state[EnumLabel(static_cast<v1::JobState>(state))] = 0;
  }
  for (int verdict = v1::VERDICT_GOOD; verdict <= v1::VERDICT_AMBIGUOUS; ++verdict) {
    if (!v1::Verdict_IsValid(verdict)) continue;
    snapshot.probes_by_verdict[EnumLabel(static_cast<v1::Verdict>(verdict))] = 0;
  }
  absl::MutexLock lock(&mu_);
  for (const auto& [id, entry] : jobs_) {
    const v1::JobStatus& status = entry.job->status();
    ++snapshot.jobs_by_state[EnumLabel(status.state())];
    for (const v1::Probe& probe : status.probes()) {
      if (probe.verdict() == v1::VERDICT_UNSPECIFIED) continue;
      ++snapshot.probes_by_verdict[EnumLabel(probe.verdict())];
    }
    snapshot.bench_runs += status.bench_runs();
    snapshot.drift_events += status.drift_events_size();
    // Every drift event but a lost calibration ("identity_changed") records a quarantine, which
    // BisectJob makes at most once per worker and job.
    for (const v1::DriftEvent& event : status.drift_events()) {
      if (event.kind() != "identity_changed") ++snapshot.quarantines;
    }
  }
  for (const auto& [id, worker] : workers_) {
    ++snapshot.workers[{worker.identity.hardware_class(),
                        EnumLabel(worker.state)}];
  }
  snapshot.lease_expiries = lease_expiries_;
  return snapshot;
}

// --- Leases -------------------------------------------------------------------------------------

void Coordinator::DispatchLocked() {
  std::vector<WorkerEntry*> idle;
  for (auto& [id, worker] : workers_) {
    if (!worker.session_id.empty() && worker.ready && !worker.draining && worker.leases.empty() &&
        worker.pending_assignments.empty() && worker.state != v1::WORKER_STATE_LOST) {
      idle.push_back(&worker);
    }
  }
  if (idle.empty()) return;
  const absl::Time now = clock_->Now();
  // Probes orphaned by a restart go back to their own worker first.
  for (auto it = idle.begin(); it != idle.end();) {
    WorkerEntry* worker = *it;
    bool leased = false;
    while (!leased && !worker->orphans.empty()) {
      auto [job_id, task] = std::move(worker->orphans.front());
      worker->orphans.erase(worker->orphans.begin());
      auto job = jobs_.find(job_id);
      if (job == jobs_.end() || job->second.job->finished()) continue;
      const std::vector<std::string> active = job->second.job->ActiveTaskIds();
      if (std::find(active.begin(), active.end(), task.task_id()) == active.end()) continue;
      LeaseTaskLocked(job_id, job->second, *worker, std::move(task), now);
      leased = true;
    }
    it = leased ? idle.erase(it) : it + 1;
  }
  if (idle.empty()) return;
  for (const std::string& job_id : job_order_) {
    if (idle.empty()) break;
    JobEntry& entry = jobs_.at(job_id);
    if (entry.job->finished()) continue;
    // A job is pinned to one hardware class: the spec's, or else that of its first worker.
    std::string hardware_class = entry.job->status().spec().hardware_class();
    for (const v1::Probe& probe : entry.job->status().probes()) {
      if (!hardware_class.empty()) break;
      if (probe.worker().empty()) continue;
      auto first = workers_.find(probe.worker());
      if (first != workers_.end()) hardware_class = first->second.identity.hardware_class();
      break;
    }
    std::vector<WorkerEntry*> eligible;
    for (WorkerEntry* worker : idle) {
      if (hardware_class.empty() || worker->identity.hardware_class() == hardware_class) {
        eligible.push_back(worker);
      }
    }
    if (eligible.empty()) continue;
    std::vector<std::string> names;
    for (WorkerEntry* worker : eligible) names.push_back(worker->worker_id);
    JournalEntry take;
    take.kind = JournalEntry::Kind::kTakeTasks;
    take.time = now;
    take.workers = std::move(names);
    std::vector<BisectJob::Assignment> tasks =
        ApplyLocked(job_id, entry, std::move(take)).assignments;
    for (BisectJob::Assignment& assignment : tasks) {
      WorkerEntry* worker = &workers_.at(assignment.worker);
      LeaseTaskLocked(job_id, entry, *worker, std::move(assignment.task), now);
      idle.erase(std::find(idle.begin(), idle.end(), worker));
    }
  }
}

void Coordinator::LeaseTaskLocked(const std::string& job_id, JobEntry& entry,
                                  WorkerEntry& worker, v1::Task task, absl::Time now) {
  LeaseEntry lease;
  lease.lease_id = NewId("lease-");
  lease.job_id = job_id;
  lease.task_id = task.task_id();
  lease.worker_id = worker.worker_id;
  lease.attempt = ++task_attempts_[lease.task_id];
  lease.expire = now + options_.lease_duration;
  v1::Lease message;
  message.set_lease_id(lease.lease_id);
  message.set_attempt(lease.attempt);
  *message.mutable_task() = std::move(task);
  *message.mutable_expire_time() = ToProto(lease.expire);
  JournalEntry started;
  started.kind = JournalEntry::Kind::kTaskStarted;
  started.time = now;
  started.task_id = lease.task_id;
  started.worker = worker.worker_id;
  started.attempt = lease.attempt;
  ApplyLocked(job_id, entry, std::move(started));
  worker.leases.push_back(lease.lease_id);
  worker.pending_assignments.push_back(std::move(message));
  worker.state = v1::WORKER_STATE_BUSY;
  task_leases_[lease.task_id] = lease.lease_id;
  leases_.emplace(lease.lease_id, std::move(lease));
}

void Coordinator::CancelTasksLocked(const std::string& job_id,
                                    const std::vector<std::string>& task_ids,
                                    const std::string& reason) {
  for (const std::string& task_id : task_ids) {
    auto it = task_leases_.find(task_id);
    if (it == task_leases_.end()) continue;
    LeaseEntry& lease = leases_.at(it->second);
    if (lease.state != LeaseState::kActive || lease.job_id != job_id) continue;
    lease.state = LeaseState::kDead;
    DetachLeaseLocked(lease);
    auto worker = workers_.find(lease.worker_id);
    if (worker == workers_.end()) continue;
    // An assignment not yet delivered is simply withdrawn.
    auto& pending = worker->second.pending_assignments;
    auto undelivered = std::find_if(pending.begin(), pending.end(), [&](const v1::Lease& l) {
      return l.lease_id() == lease.lease_id;
    });
    if (undelivered != pending.end()) {
      pending.erase(undelivered);
      continue;
    }
    v1::LeaseCancellation cancel;
    cancel.set_lease_id(lease.lease_id);
    cancel.set_reason(reason);
    worker->second.pending_cancellations.push_back(std::move(cancel));
  }
  changed_.SignalAll();
}

void Coordinator::DetachLeaseLocked(const LeaseEntry& lease) {
  auto worker = workers_.find(lease.worker_id);
  if (worker != workers_.end()) {
    auto& leases = worker->second.leases;
    leases.erase(std::remove(leases.begin(), leases.end(), lease.lease_id), leases.end());
    if (leases.empty() && worker->second.state == v1::WORKER_STATE_BUSY) {
      worker->second.state = v1::WORKER_STATE_IDLE;
    }
  }
  auto task = task_leases_.find(lease.task_id);
  if (task != task_leases_.end() && task->second == lease.lease_id) task_leases_.erase(task);
}

void Coordinator::LoseLeaseLocked(LeaseEntry& lease, const std::string& why) {
  if (lease.state != LeaseState::kActive) return;
  lease.state = LeaseState::kDead;
  DetachLeaseLocked(lease);
  auto job_it = jobs_.find(lease.job_id);
  if (job_it == jobs_.end()) return;
  JournalEntry call;
  call.kind = JournalEntry::Kind::kTaskLost;
  call.time = clock_->Now();
  call.task_id = lease.task_id;
  call.reason = absl::StrCat("worker ", lease.worker_id, ": ", why);
  const CallResult result = ApplyLocked(lease.job_id, job_it->second, std::move(call));
  CancelTasksLocked(lease.job_id, result.cancel, "outside the open interval");
}

void Coordinator::WorkerGoneLocked(const std::string& worker_id, const std::string& why) {
  for (const std::string& job_id : job_order_) {
    JobEntry& entry = jobs_.at(job_id);
    if (entry.job->finished()) continue;
    JournalEntry call;
    call.kind = JournalEntry::Kind::kWorkerGone;
    call.time = clock_->Now();
    call.worker = worker_id;
    call.reason = why;
    CancelTasksLocked(job_id, ApplyLocked(job_id, entry, std::move(call)).cancel,
                      "its worker left");
  }
}

void Coordinator::ExpireLeases() {
  WriteLock lock(this);
  const absl::Time now = clock_->Now();
  bool changed = false;
  for (auto& [id, lease] : leases_) {
    if (lease.state == LeaseState::kActive && lease.expire < now) {
      ++lease_expiries_;
      LoseLeaseLocked(lease, "its lease expired (no heartbeat)");
      changed = true;
    }
  }
  for (auto& [id, worker] : workers_) {
    if (!worker.session_id.empty() && worker.last_seen + options_.lease_duration < now &&
        worker.state != v1::WORKER_STATE_LOST) {
      worker.state = v1::WORKER_STATE_LOST;
      worker.ready = false;
      LoseOrphansLocked(worker, "it stopped heartbeating");
      WorkerGoneLocked(id, "it stopped heartbeating");
      changed = true;
    }
    if (worker.awaiting_reconnect && worker.last_seen + options_.reconnect_grace < now) {
      worker.awaiting_reconnect = false;
      LoseOrphansLocked(worker, "the coordinator restarted and the worker did not come back");
      WorkerGoneLocked(id, "it did not come back after the coordinator restarted");
      changed = true;
    }
  }
  if (changed) DispatchLocked();
}

}  // namespace kbisect
