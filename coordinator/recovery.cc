// Copyright 2026 The kbisect Authors.
//
// Coordinator, persistence: every call on a job goes through ApplyLocked (journaled unless
// replaying), FlushLocked commits the journal (group commit), and Recover rebuilds the jobs from
// it after a restart.
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/rpc/proto_time.h"
#include "common/spec/action_digest.h"
#include "coordinator/coordinator.h"
#include "coordinator/write_lock.h"

namespace kbisect {

// --- Persistence --------------------------------------------------------------------------------

Coordinator::CallResult Coordinator::ApplyLocked(const std::string& job_id, JobEntry& entry,
                                                 JournalEntry call) {
  BisectJob::Applied applied = entry.job->Apply(call);
  CallResult out{std::move(applied.cancel), std::move(applied.assignments)};
  bool journal = true;
  switch (call.kind) {
    case JournalEntry::Kind::kTakeTasks:
      // A TakeTasks that hands out nothing leaves no trace in the job (every worker it looks at
      // already has its calibration task, or it stops for lack of room), so it is not journaled:
      // idle workers polling a job that has nothing for them would otherwise grow the journal
      // with every heartbeat. This relies on BisectJob::TakeTasks keeping that property.
      journal = !out.assignments.empty();
      entry.declined = !journal;
      if (replaying_) {
        for (const BisectJob::Assignment& assignment : out.assignments) {
          replayed_tasks_[assignment.task.task_id()] = {assignment.worker, assignment.task};
        }
      }
      break;
    case JournalEntry::Kind::kTaskStarted:
      task_attempts_[call.task_id] = std::max(task_attempts_[call.task_id], call.attempt);
      if (entry.workers_used.insert(call.worker).second) {
        auto worker = workers_.find(call.worker);
        if (worker != workers_.end()) entry.used_workers.push_back(&worker->second);
      }
      if (replaying_) replayed_tasks_[call.task_id].first = call.worker;
      break;
    default:
      break;
  }
  if (journal) ++entry.changes;
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
  if (store_ == nullptr) return;
  // Everything this call may have seen or changed: the pending batch, else the one in flight.
  const uint64_t target = pending_.empty() ? batches_taken_ : batches_taken_ + 1;
  while (batches_durable_ < target) {
    if (committing_) {
      durable_changed_.Wait(&mu_);
      continue;
    }
    if (pending_.empty()) break;  // Cannot happen: what was taken is durable once none commits.
    // Lead: commit the changes of every call waiting here, in one transaction, outside the lock
    // (the calls that run meanwhile collect the next batch).
    const StoreChanges batch = std::exchange(pending_, StoreChanges());
    const uint64_t number = ++batches_taken_;
    committing_ = true;
    mu_.Unlock();
    const absl::Status committed = store_->Commit(batch);
    mu_.Lock();
    if (!committed.ok()) {
      // Memory is now ahead of the disk; answering would acknowledge changes a restart loses.
      std::cerr << "kbisect-coordinator: cannot persist the job state: " << committed.message()
                << "; stopping so that a restart recovers the last committed state\n"
                << std::flush;
      std::abort();
    }
    batches_durable_ = number;
    committing_ = false;
    durable_changed_.SignalAll();
  }
}

void Coordinator::AwaitDurableLocked() const {
  if (store_ == nullptr) return;
  // The calls whose changes are pending are in FlushLocked (they hold the lock until then), and
  // one of them leads the next commit once the one in flight is done.
  const uint64_t target = pending_.empty() ? batches_taken_ : batches_taken_ + 1;
  while (batches_durable_ < target && (committing_ || !pending_.empty())) {
    durable_changed_.Wait(&mu_);
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
    entry.spec_digest = SpecDigest(stored.spec);
    entry.job = std::make_unique<BisectJob>(stored.job_id, std::move(stored.spec),
                                            std::move(stored.commits), stored.create_time,
                                            std::move(stored.cached));
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

}  // namespace kbisect
