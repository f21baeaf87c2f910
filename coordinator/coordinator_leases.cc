// Copyright 2026 The kbisect Authors.
//
// Coordinator, leases: dispatching jobs' tasks to idle workers under leases, cancelling them,
// losing them when a worker dies, completing them with a result, and expiring them when
// heartbeats stop; what a worker's session does to the jobs (WorkerSessions::JobSide).
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/rpc/proto_time.h"
#include "coordinator/coordinator.h"
#include "coordinator/lease_policy.h"
#include "coordinator/write_lock.h"

namespace kbisect {

// --- Leases -------------------------------------------------------------------------------------

void Coordinator::DispatchLocked() {
  const absl::Time now = clock_->Now();
  sessions_.Dispatched(mu_, now);
  std::vector<DispatchRound::IdleWorker> idle;
  std::vector<WorkerEntry*> with_orphans;
  // Each host's build slots as the worker that built there last announced them (the most any
  // of its workers announced): an idle worker carries its host's news to the jobs.
  std::map<std::string, int> pool_slots;
  for (const auto& [id, worker] : workers().entries()) {
    if (worker.build_pool.name.empty()) continue;
    int& slots = pool_slots[worker.build_pool.name];
    slots = std::max(slots, worker.build_pool.slots);
  }
  for (auto& [id, worker] : workers().entries()) {
    if (!worker.Idle()) continue;
    idle.push_back({id, worker.identity.hardware_class()});
    if (!worker.orphans.empty()) with_orphans.push_back(&worker);
  }
  if (idle.empty()) return;
  DispatchRound round(std::move(idle), now);
  // Probes orphaned by a restart go back to their own worker first.
  for (WorkerEntry* orphaned : with_orphans) {
    WorkerEntry& worker = *orphaned;
    const std::string worker_id = worker.worker_id;
    while (!worker.orphans.empty()) {
      auto [job_id, task] = std::move(worker.orphans.front());
      worker.orphans.erase(worker.orphans.begin());
      JobEntry* job = jobs_.Find(job_id);
      if (job == nullptr || job->job->finished()) continue;
      const std::vector<std::string> active = job->job->ActiveTaskIds();
      if (std::find(active.begin(), active.end(), task.task_id()) == active.end()) continue;
      LeaseTaskLocked(job_id, *job, worker, std::move(task), now);
      round.Remove(worker_id);
      break;
    }
  }
  for (const std::string& job_id : jobs_.order()) {
    if (round.empty()) break;
    JobEntry& entry = jobs_.at(job_id);
    if (entry.job->finished()) continue;
    DispatchJob job;
    job.max_workers = entry.job->status().spec().max_workers();
    job.live_leases = entry.live_leases;
    // A job is pinned to one hardware class: the spec's, or else that of its first worker.
    job.hardware_class = workers().HardwareClassOf(entry.job->status());
    std::vector<std::string> asked = round.Candidates(job, entry.offers);
    if (asked.empty()) continue;
    JournalEntry take;
    take.kind = JournalEntry::Kind::kTakeTasks;
    take.time = now;
    take.workers = asked;
    for (const std::string& worker : asked) {
      const BuildPool& pool = workers().entries().at(worker).build_pool;
      if (!pool.name.empty()) take.pools[worker] = BuildPool{pool.name, pool_slots[pool.name]};
    }
    AddBuiltCommitsLocked(*entry.job, &take);
    std::vector<BisectJob::Assignment> tasks =
        ApplyLocked(job_id, entry, std::move(take)).assignments;
    std::vector<std::string> taken;
    for (BisectJob::Assignment& assignment : tasks) {
      taken.push_back(assignment.worker);
      LeaseTaskLocked(job_id, entry, workers().entries().at(assignment.worker),
                      std::move(assignment.task), now);
    }
    round.Answered(asked, taken, entry.offers);
  }
}

void Coordinator::LeaseTaskLocked(const std::string& job_id, JobEntry& entry, WorkerEntry& worker,
                                  v1::Task task, absl::Time now) {
  const LeaseEntry& lease = leases_.Grant(ids_.Next("lease-"), job_id, task.task_id(),
                                          worker.worker_id, now + options_.lease_duration);
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
  ++entry.live_leases;
  worker.leases.push_back(lease.lease_id);
  worker.state = v1::WORKER_STATE_BUSY;
  if (worker.mailbox != nullptr) {
    // The worker sees the lease once its TaskStarted is durable.
    const uint64_t batch = journal_.BatchOfChanges(mu_);
    worker.mailbox->Deposit(std::move(message), batch);
    journal_.NotifyWhenDurable(mu_, worker.mailbox, batch);
  }
  worker.StandingChanged();
}

void Coordinator::CancelTasksLocked(const std::string& job_id,
                                    const std::vector<std::string>& task_ids,
                                    const std::string& reason) {
  for (const std::string& task_id : task_ids) {
    LeaseEntry* live = leases_.LiveLeaseOf(task_id);
    if (live == nullptr || live->job_id != job_id) continue;
    LeaseEntry& lease = *live;
    // An assignment not yet delivered is simply withdrawn.
    if (EndLeaseLocked(lease, LeaseTable::State::kDead)) continue;
    WorkerEntry* worker = workers().Find(lease.worker_id);
    if (worker == nullptr || worker->mailbox == nullptr) continue;
    // The worker stops the task when it hears of the cancellation and asks for work again
    // when it has: until then it is not ready. (A lease handed to it now would reach it in the
    // heartbeat that carries the cancellation, while its task still winds down, and a worker
    // takes no lease while busy: the lease would be lost, and a probe's attempt with it.)
    worker->ready = false;
    worker->StandingChanged();
    v1::LeaseCancellation cancel;
    cancel.set_lease_id(lease.lease_id);
    cancel.set_reason(reason);
    const uint64_t batch = journal_.BatchOfChanges(mu_);
    worker->mailbox->DepositCancellation(std::move(cancel), batch);
    journal_.NotifyWhenDurable(mu_, worker->mailbox, batch);
  }
  changed_.SignalAll();
}

bool Coordinator::EndLeaseLocked(LeaseEntry& lease, LeaseTable::State state) {
  if (!leases_.End(lease, state)) return false;  // Ended before: taken off everything then.
  if (JobEntry* job = jobs_.Find(lease.job_id); job != nullptr) --job->live_leases;
  bool withdrawn = false;
  if (WorkerEntry* worker = workers().Find(lease.worker_id); worker != nullptr) {
    // Keeps every assignment in the mailbox one of the worker's leases (WorkerEntry::Idle relies on
    // it).
    withdrawn = worker->mailbox != nullptr && worker->mailbox->Withdraw(lease.lease_id);
    auto& leases = worker->leases;
    leases.erase(std::remove(leases.begin(), leases.end(), lease.lease_id), leases.end());
    if (leases.empty() && worker->state == v1::WORKER_STATE_BUSY) {
      worker->state = v1::WORKER_STATE_IDLE;
    }
    worker->StandingChanged();
  }
  return withdrawn;
}

void Coordinator::LoseLeaseLocked(LeaseEntry& lease, const std::string& why) {
  if (lease.state != LeaseTable::State::kActive) return;
  EndLeaseLocked(lease, LeaseTable::State::kDead);
  JobEntry* job = jobs_.Find(lease.job_id);
  if (job == nullptr) return;
  JournalEntry call;
  call.kind = JournalEntry::Kind::kTaskLost;
  call.time = clock_->Now();
  call.task_id = lease.task_id;
  call.reason = absl::StrCat("worker ", lease.worker_id, ": ", why);
  const CallResult result = ApplyLocked(lease.job_id, *job, std::move(call));
  CancelTasksLocked(lease.job_id, result.cancel, "outside the open interval");
}

void Coordinator::AddBuiltCommitsLocked(const BisectJob& job, JournalEntry* take) {
  const std::string signature = BuildSignature(job.status().spec());
  if (signature.empty() || built_commits_.size(signature) == 0) return;
  // The workers of one host read the same places: each set of places is looked up once.
  std::map<std::vector<std::string>, std::vector<int>> by_places;
  for (const std::string& worker : take->workers) {
    const WorkerEntry& entry = workers().entries().at(worker);
    const std::vector<std::string> places =
        BuildPlaces(entry.build_pool.name, entry.build_store, entry.identity.hardware_class());
    auto [it, inserted] = by_places.try_emplace(places);
    if (inserted) it->second = job.IndicesInsideInterval(built_commits_.BuiltIn(signature, places));
    if (!it->second.empty()) take->built[worker] = it->second;
  }
}

std::optional<WorkerSessions::CacheWrite> Coordinator::LeaseCompletedLocked(
    LeaseEntry& lease, const v1::TaskResult& result) {
  EndLeaseLocked(lease, LeaseTable::State::kCompleted);
  JobEntry* job = jobs_.Find(lease.job_id);
  if (job == nullptr) return std::nullopt;
  if (const v1::Task* task = job->job->TaskOf(lease.task_id); task != nullptr) {
    const WorkerEntry* worker = workers().Find(lease.worker_id);
    built_commits_.RecordResult(*task, result,
                                worker == nullptr ? "" : worker->identity.hardware_class());
  }
  JournalEntry call;
  call.kind = JournalEntry::Kind::kTaskFinished;
  call.time = clock_->Now();
  call.task_id = lease.task_id;
  call.result = result;
  const CallResult applied = ApplyLocked(lease.job_id, *job, std::move(call));
  std::optional<WorkerSessions::CacheWrite> cache_write;
  if (options_.result_cache != nullptr && !job->job->status().spec().no_cache()) {
    std::vector<v1::CachedResult> records;
    for (v1::CachedResult& record : job->job->CacheRecordsOf(lease.task_id, result)) {
      if (!record.tree_sha().empty()) records.push_back(std::move(record));
    }
    if (!records.empty()) {
      cache_write = WorkerSessions::CacheWrite{job->spec_digest, std::move(records)};
    }
  }
  CancelTasksLocked(lease.job_id, applied.cancel, "outside the open interval");
  return cache_write;
}

void Coordinator::WorkerLeftLocked(WorkerEntry& worker, JournalEntry::Kind kind,
                                   const std::string& orphans_why, const std::string& why) {
  const absl::Time now = clock_->Now();
  for (auto& [job_id, task] : std::exchange(worker.orphans, {})) {
    JobEntry* entry = jobs_.Find(job_id);
    if (entry == nullptr || entry->job->finished()) continue;
    JournalEntry lost;
    lost.kind = JournalEntry::Kind::kTaskLost;
    lost.time = now;
    lost.task_id = task.task_id();
    lost.reason = absl::StrCat("worker ", worker.worker_id, ": ", orphans_why);
    CancelTasksLocked(job_id, ApplyLocked(job_id, *entry, std::move(lost)).cancel,
                      "outside the open interval");
  }
  // A copy: a job that finishes here may start follow-ups, which join the table.
  const std::vector<std::string> jobs = jobs_.order();
  for (const std::string& job_id : jobs) {
    JobEntry* entry = jobs_.Find(job_id);
    if (entry == nullptr || entry->job->finished()) continue;
    JournalEntry call;
    call.kind = kind;
    call.time = now;
    call.worker = worker.worker_id;
    call.reason = why;
    CancelTasksLocked(job_id, ApplyLocked(job_id, *entry, std::move(call)).cancel,
                      "its worker left");
  }
}

void Coordinator::ExpireLeases() {
  WriteLock lock(mu_, journal_);
  const absl::Time now = clock_->Now();
  if (!journal_.writable(mu_)) {
    // Reads only: nothing expires (that would change jobs) until the store takes writes again.
    journal_.TryWritingAgain(mu_, now);
    return;
  }
  bool changed = false;
  for (const std::string& lease_id : leases_.ExpiredBefore(now)) {
    // An earlier loss may have cancelled it meanwhile.
    LeaseEntry& lease = *leases_.Find(lease_id);
    if (lease.state != LeaseTable::State::kActive) continue;
    leases_.CountExpiry();
    LoseLeaseLocked(lease, "its lease expired (no heartbeat)");
    changed = true;
  }
  for (auto& [id, worker] : workers().entries()) {
    if (worker.HeartbeatOverdue(now, options_.lease_duration)) {
      worker.state = v1::WORKER_STATE_LOST;
      worker.ready = false;
      worker.StandingChanged();
      WorkerLeftLocked(worker, JournalEntry::Kind::kWorkerGone, "it stopped heartbeating",
                       "it stopped heartbeating");
      changed = true;
    }
    if (worker.ReconnectOverdue(now, options_.reconnect_grace)) {
      worker.awaiting_reconnect = false;
      WorkerLeftLocked(worker, JournalEntry::Kind::kWorkerGone,
                       "the coordinator restarted and the worker did not come back",
                       "it did not come back after the coordinator restarted");
      changed = true;
    }
  }
  if (changed) DispatchLocked();
  if (now - last_prune_ >= absl::Minutes(1)) {
    // --retain: finished families older than it go, from memory and from the store.
    last_prune_ = now;
    const std::vector<std::string> deleted = jobs_.EraseExpired(now, options_.retain);
    if (store_ != nullptr) {
      for (const std::string& job_id : deleted) journal_.pending(mu_).deleted.push_back(job_id);
    }
    if (!deleted.empty()) changed_.SignalAll();
  }
}

}  // namespace kbisect
