// Copyright 2026 The kbisect Authors.
//
// Coordinator, persistence: every call on a job goes through ApplyLocked (journaled unless
// replaying), FlushLocked commits the journal (group commit), and Recover rebuilds the jobs from
// it after a restart.
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
      if (replaying_) {
        for (const BisectJob::Assignment& assignment : out.assignments) {
          replayed_tasks_[assignment.task.task_id()] = {assignment.worker, assignment.task};
        }
      }
      break;
    case JournalEntry::Kind::kTaskStarted:
      task_attempts_[call.task_id] = std::max(task_attempts_[call.task_id], call.attempt);
      entry.offers.WorkerUsed(call.worker);
      if (replaying_) replayed_tasks_[call.task_id].first = call.worker;
      break;
    default:
      break;
  }
  if (journal) entry.offers.Changed();
  if (replaying_) {
    entry.journal_sequence = call.sequence;
  } else if (journal && store_ != nullptr) {
    call.sequence = ++entry.journal_sequence;
    pending_.entries.emplace_back(job_id, std::move(call));
  }
  AfterJobChangeLocked(job_id, entry);
  return out;
}

absl::Status Coordinator::FlushLocked() {
  if (store_ == nullptr) return absl::OkStatus();
  // Reads only: memory is what the store has (ReloadLocked), and what is pending (rebuilding may
  // journal) waits for TryWritingAgainLocked. No commit is in flight then.
  if (!store_failure_.ok()) return pending_.empty() ? absl::OkStatus() : RefusalLocked(false);
  const uint64_t failures = failed_commits_;
  // Everything this call may have seen or changed: the pending batch, else the one in flight.
  const uint64_t target = BatchOfChangesLocked();
  while (batches_durable_ < target) {
    // The batch this call waited on (or one before it) failed: its changes were rolled back.
    if (failed_commits_ != failures) return RefusalLocked(false);
    if (committing_) {
      durable_changed_.Wait(&mu_);
      continue;
    }
    if (pending_.empty()) break;  // Cannot happen: what was taken is durable once none commits.
    if (!CommitBatchLocked()) return RefusalLocked(false);
  }
  CommitUnwaitedLocked();
  return absl::OkStatus();
}

void Coordinator::KickFlushLocked() {
  if (store_ == nullptr || !store_failure_.ok() || pending_.empty()) return;
  if (committing_) {
    // The leader of the batch in flight commits this one too once it is done.
    unwaited_changes_ = true;
    return;
  }
  if (CommitBatchLocked()) CommitUnwaitedLocked();
}

void Coordinator::CommitUnwaitedLocked() {
  // Until none is left: every pending change is then one that a call in FlushLocked waits for
  // (and one of those leads its commit), which AwaitDurableLocked relies on. It ends once the
  // Synchronize calls leave no change during a commit.
  while (unwaited_changes_ && !pending_.empty() && !committing_ && store_failure_.ok()) {
    if (!CommitBatchLocked()) return;
  }
}

bool Coordinator::CommitBatchLocked() {
  // Lead: commit the changes of every call waiting here, in one transaction, outside the lock
  // (the calls that run meanwhile collect the next batch).
  const StoreChanges batch = std::exchange(pending_, StoreChanges());
  unwaited_changes_ = false;
  const bool journal = batch.changes_jobs();
  const uint64_t number = ++batches_taken_;
  // The mailboxes waiting for this batch are notified as soon as it is durable, before the lock
  // is taken again: a woken poll answers without the lock, whose queue is long under load. Those
  // that deposit into this batch while it commits are notified below.
  std::vector<std::shared_ptr<WorkerMailbox>> waiting = std::exchange(notify_pending_, {});
  committing_ = true;
  mu_.Unlock();
  const absl::Status committed = store_->Commit(batch);
  if (committed.ok()) {
    durable_batches_.store(number);  // Batches commit one at a time, in order.
    for (const std::shared_ptr<WorkerMailbox>& mailbox : waiting) mailbox->Notify();
  }
  mu_.Lock();
  committing_ = false;
  if (!committed.ok() && options_.abort_on_store_failure) {
    std::cerr << "kbisect: cannot persist the job state: " << committed.message()
              << "; stopping so that running the same command again resumes from the last "
                 "committed state\n"
              << std::flush;
    std::abort();
  }
  if (!committed.ok()) {
    // Memory is now ahead of the disk, by this batch and the next one collected meanwhile: back
    // to what the disk has, as a restart would do, once (the calls waiting on either batch see
    // failed_commits_ change and refuse; the polls find their mailboxes closed), and reads only
    // until a write succeeds.
    store_failure_ = committed;
    last_write_check_ = clock_->Now();
    ++failed_commits_;
    std::cerr << "kbisect-coordinator: cannot persist the job state: " << committed.message()
              << "; serving reads only (no new jobs) until a write succeeds again\n"
              << std::flush;
    ReloadLocked();
    // Nothing taken is in flight any more: a later batch starts from a clean count.
    SetDurableLocked(batches_taken_);
    durable_changed_.SignalAll();
    return false;
  }
  SetDurableLocked(number);
  for (const std::shared_ptr<WorkerMailbox>& mailbox : std::exchange(notify_in_flight_, {})) {
    mailbox->Notify();
  }
  durable_changed_.SignalAll();
  ++coordinator_internal::commits_on_this_thread;
  // A batch is one journal commit, whichever call led it.
  if (journal && options_.crash_points.after_commit > 0 &&
      ++journal_commits_ == options_.crash_points.after_commit) {
    CrashAtPoint("after journal commit", journal_commits_);
  }
  return true;
}

uint64_t Coordinator::BatchOfChangesLocked() const {
  return pending_.empty() ? batches_taken_ : batches_taken_ + 1;
}

void Coordinator::NotifyWhenDurableLocked(const std::shared_ptr<WorkerMailbox>& mailbox,
                                          uint64_t batch) {
  if (batch <= batches_durable_) return;  // The deposit woke the poll itself.
  (batch > batches_taken_ ? notify_pending_ : notify_in_flight_).push_back(mailbox);
}

void Coordinator::SetDurableLocked(uint64_t batch) {
  batches_durable_ = batch;
  durable_batches_.store(batch);
}

absl::Status Coordinator::AwaitDurableLocked() const {
  if (store_ == nullptr) return absl::OkStatus();
  const uint64_t failures = failed_commits_;
  // The calls whose changes are pending are in FlushLocked (they hold the lock until then), and
  // one of them leads the next commit once the one in flight is done.
  const uint64_t target = pending_.empty() ? batches_taken_ : batches_taken_ + 1;
  while (true) {
    // What this call saw was rolled back by a failed commit: it must not be shown.
    if (failed_commits_ != failures) return RefusalLocked(false);
    // Reads only: memory is what the store has (ReloadLocked), and nothing commits.
    if (!store_failure_.ok()) return absl::OkStatus();
    if (batches_durable_ >= target || (!committing_ && pending_.empty())) {
      return absl::OkStatus();
    }
    durable_changed_.Wait(&mu_);
  }
}

absl::Status Coordinator::RefusalLocked(bool worker_call) const {
  if (store_failure_.ok()) {
    // A commit this call waited on failed and its change was rolled back, and a later write
    // succeeded before the call woke (TryWritingAgainLocked): the state takes writes again.
    const std::string message =
        "the coordinator could not store this change (a write of its job state failed while "
        "the call waited, and the change was rolled back); it takes writes again: retry";
    return worker_call ? absl::UnavailableError(message) : absl::AbortedError(message);
  }
  const std::string what =
      absl::StrCat("the coordinator cannot write its job state (", store_failure_.message(), ")");
  if (worker_call) {
    return absl::UnavailableError(
        absl::StrCat(what, "; it serves reads only until a write succeeds again: retry later"));
  }
  const bool full = absl::IsResourceExhausted(store_failure_);
  const std::string message = absl::StrCat(
      what,
      ", so it accepts no new jobs or cancellations and serves `kbisect status` and `watch` "
      "only; nothing it acknowledged is lost. ",
      full ? "Free space on the volume of --state-dir (finished jobs older than --retain are "
             "deleted; lower it, or grow the volume)"
           : "Make --state-dir writable again (remount it read-write, check its permissions and "
             "the disk)",
      ": the coordinator tries again every ", absl::ToInt64Seconds(kWriteCheckPeriod),
      " s and then accepts jobs by itself.");
  return full ? absl::ResourceExhaustedError(message) : absl::FailedPreconditionError(message);
}

absl::Status Coordinator::StoreHealth() const {
  kbisect::MutexLock lock(&mu_);
  return store_failure_.ok() ? absl::OkStatus() : RefusalLocked(false);
}

void Coordinator::ReloadLocked() {
  pending_ = StoreChanges();
  absl::StatusOr<StoredState> state = store_->Load();
  if (!state.ok()) {
    // Neither written nor readable: nothing consistent is left to serve.
    std::cerr << "kbisect-coordinator: cannot read the job state back either: "
              << state.status().message()
              << "; stopping so that a restart recovers the last committed state\n"
              << std::flush;
    std::abort();
  }
  // Each long poll waits on its session's mailbox: closed, it finds its session gone.
  for (auto& [worker_id, worker] : workers_) CloseMailboxLocked(worker);
  notify_pending_.clear();
  notify_in_flight_.clear();
  unwaited_changes_ = false;
  jobs_.clear();
  job_order_.clear();
  request_ids_.clear();
  workers_.clear();
  sessions_.clear();
  leases_.clear();
  task_leases_.clear();
  task_attempts_.clear();
  replayed_tasks_.clear();
  unloaded_follow_ups_.clear();
  // What rebuilding journals (probes of unknown workers lost) stays pending: the first commit
  // that succeeds again takes it along.
  (void)RebuildLocked(*std::move(state));
  changed_.SignalAll();
}

void Coordinator::TryWritingAgainLocked(absl::Time now) {
  if (now - last_write_check_ < kWriteCheckPeriod) return;
  last_write_check_ = now;
  absl::Status written = store_->CheckWritable();
  if (written.ok() && !pending_.empty()) written = store_->Commit(pending_);
  if (!written.ok()) {
    store_failure_ = written;
    return;
  }
  pending_ = StoreChanges();
  store_failure_ = absl::OkStatus();
  std::cerr << "kbisect-coordinator: the job state can be written again; accepting jobs\n"
            << std::flush;
}

absl::StatusOr<RecoveryReport> Coordinator::Recover() {
  if (store_ == nullptr) return RecoveryReport();
  absl::StatusOr<StoredState> state = store_->Load();
  if (!state.ok()) return state.status();
  WriteLock lock(this);
  if (!jobs_.empty() || !workers_.empty()) {
    return absl::FailedPreconditionError("Recover must be called before any other call");
  }
  return RebuildLocked(*std::move(state));
}

RecoveryReport Coordinator::RebuildLocked(StoredState stored_state) {
  RecoveryReport report;
  StoredState* state = &stored_state;
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
      LoadCompactedJobLocked(std::move(stored));
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
    LoadStoredJobLocked(std::move(stored));
  }
  for (const auto& [job_id, sequence] : state->order) {
    auto it = jobs_.find(job_id);
    if (it == jobs_.end()) {
      // A follow-up whose parent's replay did not start it: it begins where its journal does.
      for (auto unloaded = unloaded_follow_ups_.begin(); unloaded != unloaded_follow_ups_.end();
           ++unloaded) {
        if (unloaded->second.job_id != job_id) continue;
        StoredJob job = std::move(unloaded->second);
        unloaded_follow_ups_.erase(unloaded);
        LoadStoredJobLocked(std::move(job));
        break;
      }
      it = jobs_.find(job_id);
      if (it == jobs_.end()) continue;
    }
    std::vector<JournalEntry>& journal = journals[job_id];
    if (sequence < 1 || sequence > static_cast<int64_t>(journal.size())) continue;
    ApplyLocked(job_id, it->second, std::move(journal[sequence - 1]));
  }
  for (auto& [request_id, stored] : std::exchange(unloaded_follow_ups_, {})) {
    LoadStoredJobLocked(std::move(stored));
  }
  replaying_ = false;
  // Creation order, as stored (follow-ups were loaded later than their position); jobs created
  // during the replay (follow-ups that had not started) come last.
  std::vector<std::string> order;
  std::set<std::string> ordered;
  for (const std::string& job_id : stored_order) {
    if (jobs_.count(job_id) > 0 && ordered.insert(job_id).second) order.push_back(job_id);
  }
  for (const std::string& job_id : job_order_) {
    if (ordered.insert(job_id).second) order.push_back(job_id);
  }
  job_order_ = std::move(order);
  last_position_ = 0;
  for (const std::string& job_id : job_order_) jobs_.at(job_id).position = ++last_position_;
  for (auto& [job_id, entry] : jobs_) {
    entry.has_stored_final = false;
    entry.stored_final.Clear();
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
  PruneFinishedJobsLocked(now);
  return report;
}

std::string Coordinator::LoadStoredJobLocked(StoredJob stored) {
  const std::string job_id = stored.job_id;
  JobEntry& entry = jobs_[job_id];
  entry.spec_digest = SpecDigest(stored.spec);
  entry.job =
      std::make_unique<BisectJob>(stored.job_id, std::move(stored.spec), std::move(stored.commits),
                                  stored.create_time, std::move(stored.cached));
  entry.request_id = stored.request_id;
  entry.has_stored_final = stored.has_final_status;
  entry.stored_final = std::move(stored.final_status);
  job_order_.push_back(job_id);
  if (!stored.request_id.empty()) request_ids_[stored.request_id] = job_id;
  AfterJobChangeLocked(job_id, entry);
  return job_id;
}

void Coordinator::LoadCompactedJobLocked(StoredJob stored) {
  const std::string job_id = stored.job_id;
  JobEntry& entry = jobs_[job_id];
  entry.spec_digest = SpecDigest(stored.spec);
  // Its commit list is gone: the job is only its final status and its events now.
  entry.job =
      BisectJob::Finished(job_id, std::move(stored.spec), stored.final_status, stored.create_time);
  entry.published.Freeze(std::move(stored.final_status));
  entry.events = std::move(stored.events);
  entry.published.set_revision(static_cast<int64_t>(entry.events.size()));
  entry.request_id = stored.request_id;
  entry.reported = true;
  entry.follow_ups_decided = true;
  entry.complete = true;
  for (const std::string& id : entry.published.frozen()->follow_up_job_ids()) {
    entry.follow_ups.push_back(id);
  }
  job_order_.push_back(job_id);
  if (!stored.request_id.empty()) request_ids_[stored.request_id] = job_id;
}

void Coordinator::CompactFamilyLocked(const std::string& job_id) {
  if (store_ == nullptr || replaying_) return;
  const JobEntry& root = jobs_.at(job_id);
  if (!root.complete || !root.job->status().spec().parent_job_id().empty()) return;
  // The job and its follow-ups, which all completed before it.
  std::vector<std::string> family = {job_id};
  for (size_t i = 0; i < family.size(); ++i) {
    auto it = jobs_.find(family[i]);
    if (it == jobs_.end()) continue;
    pending_.compacted.emplace_back(family[i], it->second.events);
    for (const std::string& child : it->second.follow_ups) family.push_back(child);
  }
}

void Coordinator::PruneFinishedJobsLocked(absl::Time now) {
  if (options_.retain == absl::InfiniteDuration()) return;
  last_prune_ = now;
  std::vector<std::string> doomed;
  for (const std::string& job_id : job_order_) {
    const JobEntry& entry = jobs_.at(job_id);
    const v1::JobStatus& status = entry.Base();
    if (!entry.complete || !status.spec().parent_job_id().empty()) continue;
    const absl::Time finished = status.has_finish_time() ? FromProto(status.finish_time())
                                                         : FromProto(status.create_time());
    if (now - finished <= options_.retain) continue;
    // The job and, breadth first, its follow-ups.
    const size_t root = doomed.size();
    doomed.push_back(job_id);
    for (size_t i = root; i < doomed.size(); ++i) {
      auto it = jobs_.find(doomed[i]);
      if (it == jobs_.end()) continue;
      for (const std::string& child : it->second.follow_ups) doomed.push_back(child);
    }
  }
  if (doomed.empty()) return;
  for (const std::string& job_id : doomed) {
    auto it = jobs_.find(job_id);
    if (it == jobs_.end()) continue;
    if (!it->second.request_id.empty()) request_ids_.erase(it->second.request_id);
    jobs_.erase(it);
    job_order_.erase(std::remove(job_order_.begin(), job_order_.end(), job_id), job_order_.end());
    if (store_ != nullptr) pending_.deleted.push_back(job_id);
  }
  changed_.SignalAll();
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
