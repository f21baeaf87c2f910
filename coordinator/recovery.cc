// Copyright 2026 The kbisect Authors.
//
// Coordinator, persistence: Recover rebuilds the jobs from the store after a restart by reading
// their journals and replaying each entry through ApplyLocked (coordinator.cc), ReloadLocked
// rolls memory back to the store after a failed commit, and CompactFamilyLocked has the store
// keep a completed family as final statuses.
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <set>
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

absl::Status Coordinator::StoreHealth() const {
  kbisect::MutexLock lock(&mu_);
  return journal_.writable(mu_) ? absl::OkStatus() : journal_.Refusal(mu_, false);
}

void Coordinator::ReloadLocked() {
  absl::StatusOr<StoredState> state = store_->Load();
  if (!state.ok()) {
    // Neither written nor readable: nothing consistent is left to serve.
    std::cerr << "kbisect-coordinator: cannot read the job state back either: "
              << state.status().message()
              << "; stopping so that a restart recovers the last committed state\n"
              << std::flush;
    std::abort();
  }
  jobs_.Clear();
  // Each long poll waits on its session's mailbox: closed, it finds its session gone.
  workers().Clear();
  leases_.Clear();
  unloaded_follow_ups_.clear();
  // What rebuilding journals (probes of unknown workers lost) stays pending: the first commit
  // that succeeds again takes it along.
  (void)RebuildLocked(*std::move(state));
  changed_.SignalAll();
}

absl::StatusOr<RecoveryReport> Coordinator::Recover() {
  if (store_ == nullptr) return RecoveryReport();
  absl::StatusOr<StoredState> state = store_->Load();
  if (!state.ok()) return state.status();
  WriteLock lock(mu_, journal_);
  if (!jobs_.empty() || !workers().empty()) {
    return absl::FailedPreconditionError("Recover must be called before any other call");
  }
  return RebuildLocked(*std::move(state));
}

void Coordinator::ReplayLocked(const std::string& job_id, JobEntry& entry, JournalEntry call,
                               ReplayedTasks* replayed_tasks) {
  const JournalEntry::Kind kind = call.kind;
  const std::string task_id = call.task_id;
  const std::string worker = call.worker;
  const int attempt = call.attempt;
  const CallResult result = ApplyLocked(job_id, entry, std::move(call));
  if (kind == JournalEntry::Kind::kTakeTasks) {
    for (const BisectJob::Assignment& assignment : result.assignments) {
      (*replayed_tasks)[assignment.task.task_id()] = {assignment.worker, assignment.task};
    }
  } else if (kind == JournalEntry::Kind::kTaskStarted) {
    // A lease granted after the restart takes a later attempt than any the journal ran.
    leases_.RecordAttempt(task_id, attempt);
    (*replayed_tasks)[task_id].first = worker;
  }
}

RecoveryReport Coordinator::RebuildLocked(StoredState stored_state) {
  RecoveryReport report;
  StoredState* state = &stored_state;
  const absl::Time now = clock_->Now();
  for (StoredWorker& stored : state->workers) {
    WorkerEntry& worker = workers().FindOrAdd(stored.worker_id);
    worker.name = stored.name;
    worker.identity = std::move(stored.identity);
    worker.state = v1::WORKER_STATE_LOST;
    worker.awaiting_reconnect = true;
    worker.last_seen = now;
    ++report.workers;
  }
  replaying_ = true;
  ReplayedTasks replayed_tasks;
  // Compacted jobs come back as they were stored. The others are rebuilt by replaying their
  // journals in the order the entries were committed, across jobs, as they ran live. A follow-up
  // job is loaded when its parent's replay starts it (StartFollowUpsLocked), as it was created,
  // so that its events land in the parent's stream under the numbers they had.
  std::vector<std::string> stored_order;
  std::map<std::string, std::vector<JournalEntry>> journals;  // Of the jobs replayed.
  for (StoredJob& stored : state->jobs) {
    ++report.jobs;
    stored_order.push_back(stored.job_id);
    if (stored.compacted) {
      jobs_.AddCompacted(std::move(stored));
      continue;
    }
    const std::string& parent = stored.spec.parent_job_id();
    const bool parent_replayed = journals.count(parent) > 0;
    journals[stored.job_id] = std::move(stored.journal);
    if (parent_replayed && !stored.request_id.empty()) {
      const std::string request_id = stored.request_id;
      unloaded_follow_ups_.emplace(request_id, std::move(stored));
      continue;
    }
    const std::string job_id = stored.job_id;
    AfterJobChangeLocked(job_id, jobs_.AddStored(std::move(stored)));
  }
  for (const auto& [job_id, sequence] : state->order) {
    JobEntry* entry = jobs_.Find(job_id);
    if (entry == nullptr) {
      // A follow-up whose parent's replay did not start it: it begins where its journal does.
      for (auto unloaded = unloaded_follow_ups_.begin(); unloaded != unloaded_follow_ups_.end();
           ++unloaded) {
        if (unloaded->second.job_id != job_id) continue;
        StoredJob job = std::move(unloaded->second);
        unloaded_follow_ups_.erase(unloaded);
        AfterJobChangeLocked(job_id, jobs_.AddStored(std::move(job)));
        break;
      }
      entry = jobs_.Find(job_id);
      if (entry == nullptr) continue;
    }
    std::vector<JournalEntry>& journal = journals[job_id];
    if (sequence < 1 || sequence > static_cast<int64_t>(journal.size())) continue;
    ReplayLocked(job_id, *entry, std::move(journal[sequence - 1]), &replayed_tasks);
  }
  for (auto& [request_id, stored] : std::exchange(unloaded_follow_ups_, {})) {
    const std::string job_id = stored.job_id;
    AfterJobChangeLocked(job_id, jobs_.AddStored(std::move(stored)));
  }
  replaying_ = false;
  // Creation order, as stored (follow-ups were loaded later than their position); jobs created
  // during the replay (follow-ups that had not started) come last.
  jobs_.Renumber(stored_order);
  for (auto& [job_id, entry] : jobs_.entries()) {
    entry.has_stored_final = false;
    entry.stored_final.Clear();
  }
  // Probes that were running lost their leases with the old process: each waits for its worker
  // to come back (see the header for why), or is lost if that worker is unknown.
  for (const std::string& job_id : jobs_.order()) {
    JobEntry& entry = jobs_.at(job_id);
    if (entry.job->finished()) continue;
    ++report.unfinished;
    for (const std::string& task_id : entry.job->ActiveTaskIds()) {
      ++report.orphaned_probes;
      auto task = replayed_tasks.find(task_id);
      if (task != replayed_tasks.end()) {
        if (WorkerEntry* worker = workers().Find(task->second.first); worker != nullptr) {
          worker->orphans.emplace_back(job_id, std::move(task->second.second));
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
  for (std::string& job_id : jobs_.EraseExpired(now, options_.retain)) {
    journal_.pending(mu_).deleted.push_back(std::move(job_id));
  }
  return report;
}

void Coordinator::CompactFamilyLocked(const std::string& job_id) {
  if (store_ == nullptr || replaying_) return;
  const JobEntry& root = jobs_.at(job_id);
  if (!root.complete || !root.job->status().spec().parent_job_id().empty()) return;
  // The job and its follow-ups, which all completed before it.
  for (const std::string& member : jobs_.Family(job_id)) {
    journal_.pending(mu_).compacted.emplace_back(member, jobs_.at(member).events);
  }
}

}  // namespace kbisect
