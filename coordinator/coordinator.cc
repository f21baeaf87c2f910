// Copyright 2026 The kbisect Authors.
#include "coordinator/coordinator.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/rpc/enum_label.h"
#include "common/rpc/proto_time.h"
#include "common/spec/action_digest.h"
#include "common/spec/job_spec.h"
#include "coordinator/follow_ups.h"
#include "coordinator/job/marks.h"
#include "coordinator/job_report.h"
#include "coordinator/write_lock.h"

namespace kbisect {

class Coordinator::Housekeeper {
 public:
  Housekeeper(Coordinator* coordinator, absl::Duration period)
      : thread_([this, coordinator, period] {
          kbisect::MutexLock lock(&mu_);
          while (!stop_) {
            mu_.AwaitWithTimeout(kbisect::Condition(&stop_), period);
            if (stop_) break;
            mu_.Unlock();
            coordinator->ExpireLeases();
            mu_.Lock();
          }
        }) {}
  ~Housekeeper() {
    {
      kbisect::MutexLock lock(&mu_);
      stop_ = true;
    }
    thread_.join();
  }

 private:
  kbisect::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

Coordinator::Coordinator(CoordinatorOptions options, RepositoryView* repositories, Clock* clock)
    : options_(options),
      repositories_(repositories),
      clock_(clock),
      store_(options.store),
      journal_(
          options.store, &mu_, clock,
          JournalWriter::Options{options.abort_on_store_failure, options.crash_points.after_commit},
          [this] {
            mu_.AssertHeld();
            ReloadLocked();
          }),
      replies_(options.crash_points.before_reply),
      sessions_(WorkerSessions::Options{options.heartbeat_interval, options.lease_duration,
                                        options.max_wait},
                &mu_, &journal_, &ids_, &leases_, clock, options.result_cache, &replies_,
                SessionJobSide()) {}

Coordinator::~Coordinator() {
  Shutdown();
  housekeeper_.reset();
  // The Synchronize calls begun finish (their polls may wait), then every poll still waiting ends.
  sessions_.Stop();
  journal_.Stop();  // What is sealed is committed while what a failed commit rebuilds is alive.
}

void Coordinator::StartHousekeeping(absl::Duration period) {
  housekeeper_ = std::make_unique<Housekeeper>(this, period);
}

void Coordinator::Shutdown() {
  kbisect::MutexLock lock(&mu_);
  shutdown_ = true;
  changed_.SignalAll();
  // Each long poll waits on its session's mailbox: closed, it asks again and is refused.
  sessions_.Shutdown(mu_);
}

// --- Workers: WorkerSessions serves their calls ------------------------------------------------

absl::StatusOr<v1::OpenSessionResponse> Coordinator::OpenSession(
    const v1::OpenSessionRequest& request) {
  return sessions_.OpenSession(request);
}

absl::StatusOr<v1::SynchronizeResponse> Coordinator::Synchronize(
    const v1::SynchronizeRequest& request) {
  return sessions_.Synchronize(request);
}

void Coordinator::SynchronizeAsync(const v1::SynchronizeRequest& request, SynchronizeDone done) {
  sessions_.SynchronizeAsync(request, std::move(done));
}

absl::StatusOr<v1::CompleteLeaseResponse> Coordinator::CompleteLease(
    const v1::CompleteLeaseRequest& request) {
  return sessions_.CompleteLease(request);
}

absl::Status Coordinator::CloseSession(const v1::CloseSessionRequest& request) {
  return sessions_.CloseSession(request);
}

v1::ListWorkersResponse Coordinator::ListWorkers() const { return sessions_.ListWorkers(); }

WorkerSessions::JobSide Coordinator::SessionJobSide() {
  WorkerSessions::JobSide side;
  side.dispatch = [this] {
    mu_.AssertHeld();
    DispatchLocked();
  };
  side.lose_lease = [this](LeaseEntry& lease, const std::string& why) {
    mu_.AssertHeld();
    LoseLeaseLocked(lease, why);
  };
  side.worker_left = [this](WorkerEntry& worker, JournalEntry::Kind kind,
                            const std::string& orphans_why, const std::string& why) {
    mu_.AssertHeld();
    WorkerLeftLocked(worker, kind, orphans_why, why);
  };
  side.lease_completed = [this](LeaseEntry& lease, const v1::TaskResult& result) {
    mu_.AssertHeld();
    return LeaseCompletedLocked(lease, result);
  };
  side.pool_changed = [this] {
    mu_.AssertHeld();
    for (const std::string& job_id : jobs_.order()) jobs_.at(job_id).offers.Changed();
  };
  side.build_ahead = [this](const std::string& hardware_class, int limit) {
    mu_.AssertHeld();
    return BuildAheadHints(jobs_, workers(), hardware_class, limit);
  };
  return side;
}

// --- Jobs ---------------------------------------------------------------------------------------

absl::StatusOr<v1::SubmitJobResponse> Coordinator::SubmitJob(const v1::SubmitJobRequest& request) {
  ReplyPoint reply(replies_);
  {
    kbisect::MutexLock lock(&mu_);
    if (shutdown_) return absl::UnavailableError("the coordinator is shutting down");
    if (!request.request_id().empty()) {
      if (const std::string* known = jobs_.JobOfRequest(request.request_id())) {
        v1::SubmitJobResponse response;
        response.set_job_id(*known);
        response.set_existing(true);
        *response.mutable_job() = jobs_.at(*known).Status();
        if (absl::Status durable = journal_.AwaitDurable(mu_); !durable.ok()) return durable;
        return response;
      }
    }
    // Before any git I/O: a job that cannot be stored is refused at once.
    if (!journal_.writable(mu_)) return journal_.Refusal(mu_, false);
  }
  if (absl::Status valid = ValidateSpec(request.spec()); !valid.ok()) return valid;
  // Resolution does I/O (git); it runs without the lock.
  absl::StatusOr<std::vector<v1::CommitRef>> commits = repositories_->ResolveRange(request.spec());
  if (!commits.ok()) return commits.status();
  // The user's marks must name commits of the range, consistently.
  if (absl::StatusOr<std::vector<v1::CommitMark>> marks = ResolveMarks(request.spec(), *commits);
      !marks.ok()) {
    return marks.status();
  }
  std::vector<v1::CachedResult> cached =
      options_.result_cache == nullptr
          ? std::vector<v1::CachedResult>()
          : CachedResultsOfRange(*options_.result_cache, request.spec(), *commits, clock_->Now());

  WriteLock lock(mu_, journal_);
  if (const std::string* known =
          request.request_id().empty() ? nullptr : jobs_.JobOfRequest(request.request_id())) {
    // A concurrent submission with the same request id won the race.
    const std::string job_id = *known;
    v1::SubmitJobResponse response;
    response.set_job_id(job_id);
    response.set_existing(true);
    *response.mutable_job() = jobs_.at(job_id).Status();
    if (absl::Status flushed = journal_.Flush(mu_); !flushed.ok()) return flushed;
    return response;
  }
  if (!journal_.writable(mu_)) return journal_.Refusal(mu_, false);
  const std::string job_id =
      CreateJobLocked(request.spec(), request.request_id(), *std::move(commits), std::move(cached));
  DispatchLocked();
  if (absl::Status flushed = journal_.Flush(mu_); !flushed.ok()) return flushed;

  v1::SubmitJobResponse response;
  response.set_job_id(job_id);
  *response.mutable_job() = jobs_.at(job_id).Status();
  return response;
}

std::string Coordinator::CreateJobLocked(const v1::JobSpec& spec, const std::string& request_id,
                                         std::vector<v1::CommitRef> commits,
                                         std::vector<v1::CachedResult> cached) {
  std::string job_id = ids_.Next("job-");
  while (jobs_.contains(job_id)) job_id = ids_.Next("job-");  // A recovered job has it.
  const absl::Time now = clock_->Now();
  if (store_ != nullptr) {
    StoredJob stored;
    stored.job_id = job_id;
    stored.request_id = request_id;
    stored.spec = spec;
    stored.commits = commits;
    stored.cached = cached;
    stored.create_time = now;
    journal_.pending(mu_).new_jobs.push_back(std::move(stored));
  }
  JobEntry& entry = jobs_.Add(job_id, request_id);
  entry.job = std::make_unique<BisectJob>(job_id, spec, std::move(commits), now, std::move(cached));
  entry.spec_digest = SpecDigest(spec);
  AfterJobChangeLocked(job_id, entry);
  return job_id;
}

absl::StatusOr<v1::JobStatus> Coordinator::GetJob(const std::string& job_id) const {
  kbisect::MutexLock lock(&mu_);
  const JobEntry* entry = jobs_.Find(job_id);
  if (entry == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("no job '", job_id, "'; `kbisect status` lists the known jobs"));
  }
  v1::JobStatus status = entry->Status();
  if (absl::Status durable = journal_.AwaitDurable(mu_); !durable.ok()) return durable;
  return status;
}

absl::StatusOr<v1::JobState> Coordinator::GetJobState(const std::string& job_id) const {
  kbisect::MutexLock lock(&mu_);
  const JobEntry* entry = jobs_.Find(job_id);
  if (entry == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("no job '", job_id, "'; `kbisect status` lists the known jobs"));
  }
  const v1::JobState state = entry->State();
  if (absl::Status durable = journal_.AwaitDurable(mu_); !durable.ok()) return durable;
  return state;
}

v1::ListJobsResponse Coordinator::ListJobs(const v1::ListJobsRequest& request) const {
  kbisect::MutexLock lock(&mu_);
  // What a failed commit rolled back while this call waited is not shown: the page is listed
  // again from the memory ReloadLocked rebuilt from the store (durable: the second wait returns
  // at once).
  while (true) {
    v1::ListJobsResponse response = jobs_.List(request);
    if (journal_.AwaitDurable(mu_).ok()) return response;
  }
}

absl::StatusOr<v1::JobStatus> Coordinator::CancelJob(const std::string& job_id,
                                                     const std::string& reason) {
  ReplyPoint reply(replies_);
  WriteLock lock(mu_, journal_);
  const JobEntry* entry = jobs_.Find(job_id);
  if (entry == nullptr) return absl::NotFoundError(absl::StrCat("no job '", job_id, "'"));
  if (!journal_.writable(mu_) && !entry->job->finished()) return journal_.Refusal(mu_, false);
  CancelJobLocked(job_id, reason.empty() ? "requested by a client" : reason);
  DispatchLocked();
  if (absl::Status flushed = journal_.Flush(mu_); !flushed.ok()) return flushed;
  return jobs_.at(job_id).Status();
}

void Coordinator::CancelJobLocked(const std::string& job_id, const std::string& reason) {
  JobEntry& entry = jobs_.at(job_id);
  if (!entry.job->finished()) {
    JournalEntry call;
    call.kind = JournalEntry::Kind::kCancel;
    call.time = clock_->Now();
    call.reason = reason;
    CancelTasksLocked(job_id, ApplyLocked(job_id, entry, std::move(call)).cancel, "job cancelled");
  }
  // Its follow-ups go with it (each completes as cancelled, then the job completes).
  const std::vector<std::string> follow_ups = entry.follow_ups;
  for (const std::string& child : follow_ups) {
    if (jobs_.contains(child)) CancelJobLocked(child, reason);
  }
}

absl::Status Coordinator::WatchJob(const std::string& job_id, int64_t after_sequence,
                                   const std::function<bool(const v1::JobEvent&)>& sink,
                                   const std::function<bool()>& is_cancelled) {
  int64_t next = after_sequence;
  while (true) {
    std::vector<v1::JobEvent> batch;
    {
      kbisect::MutexLock lock(&mu_);
      // Looked up after every wait: a job may be deleted meanwhile (--retain).
      const JobEntry* entry = jobs_.Find(job_id);
      auto ready = [&]() {
        mu_.AssertHeld();
        entry = jobs_.Find(job_id);
        return shutdown_ || entry == nullptr || static_cast<int64_t>(entry->events.size()) > next;
      };
      if (entry == nullptr) return absl::NotFoundError(absl::StrCat("no job '", job_id, "'"));
      while (!ready()) {
        if (is_cancelled && is_cancelled()) return absl::CancelledError("the watcher went away");
        changed_.WaitWithTimeout(&mu_, absl::Seconds(1));
      }
      if (entry == nullptr) return absl::NotFoundError(absl::StrCat("no job '", job_id, "'"));
      if (static_cast<int64_t>(entry->events.size()) <= next) {
        return absl::UnavailableError("the coordinator is shutting down");
      }
      batch.assign(entry->events.begin() + next, entry->events.end());
      if (absl::Status durable = journal_.AwaitDurable(mu_); !durable.ok()) return durable;
    }
    for (const v1::JobEvent& event : batch) {
      next = event.sequence();
      if (!sink(event)) return absl::CancelledError("the watcher went away");
      if (event.kind() == v1::JOB_EVENT_KIND_FINISHED) return absl::OkStatus();
    }
  }
}

Coordinator::CallResult Coordinator::ApplyLocked(const std::string& job_id, JobEntry& entry,
                                                 JournalEntry call) {
  JobTable::Applied applied = jobs_.Apply(entry, std::move(call), replaying_);
  if (applied.journal.has_value() && store_ != nullptr) {
    journal_.pending(mu_).entries.emplace_back(job_id, *std::move(applied.journal));
  }
  AfterJobChangeLocked(job_id, entry);
  return CallResult{std::move(applied.job.cancel), std::move(applied.job.assignments)};
}

void Coordinator::AfterJobChangeLocked(const std::string& job_id, JobEntry& entry) {
  bool restored_final = false;
  if (entry.job->finished() && !entry.reported) {
    if (replaying_ && entry.has_stored_final) {
      // As it was when the job (and its follow-ups) completed: no need to redo any I/O.
      entry.published.Freeze(entry.stored_final);
      entry.reported = true;
      entry.follow_ups_decided = true;
      restored_final = true;
      for (const std::string& id : entry.stored_final.follow_up_job_ids()) {
        entry.follow_ups.push_back(id);
      }
    } else {
      entry.reported = true;
      entry.published.AttachReport(
          GatherReportDetails(entry.job->status(), workers(), repositories_));
    }
  }
  if (entry.job->finished() && !entry.follow_ups_decided) {
    entry.follow_ups_decided = true;
    // When replaying, this finds the follow-ups it started live (by request id) and loads them
    // here, where they were created, so their events land where they did in this job's stream.
    StartFollowUpsLocked(job_id, entry);
  }
  bool completed = false;
  for (v1::JobEvent& event : entry.job->TakeEvents()) {
    if (event.kind() == v1::JOB_EVENT_KIND_FINISHED && !restored_final &&
        !entry.follow_ups.empty()) {
      // Released by MaybeCompleteLocked once the follow-ups are done.
      *event.mutable_job() = entry.Status();  // Remembers the final state.
      entry.held_finish = std::make_unique<v1::JobEvent>(std::move(event));
      entry.published.HoldForFollowUps();
      continue;
    }
    if (event.kind() == v1::JOB_EVENT_KIND_FINISHED) {
      *event.mutable_job() = entry.Status();
      entry.complete = true;
      completed = true;
      if (store_ != nullptr && !replaying_) {
        journal_.pending(mu_).final_statuses.emplace_back(job_id, event.job());
      }
    }
    jobs_.AppendEvent(entry, std::move(event));
  }
  if (completed) CompactFamilyLocked(job_id);
  entry.published.set_revision(static_cast<int64_t>(entry.events.size()));
  changed_.SignalAll();
  if (entry.complete && !entry.job->status().spec().parent_job_id().empty()) {
    MaybeCompleteLocked(entry.job->status().spec().parent_job_id());
  }
}

}  // namespace kbisect
