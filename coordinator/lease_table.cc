// Copyright 2026 The kbisect Authors.
//
// Coordinator, leases: dispatching jobs' tasks to idle workers under leases, cancelling them,
// losing them when a worker dies, and expiring them when heartbeats stop.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/rpc/proto_time.h"
#include "coordinator/coordinator.h"
#include "coordinator/write_lock.h"

namespace kbisect {

// --- Leases -------------------------------------------------------------------------------------

std::string Coordinator::JobHardwareClassLocked(const JobEntry& entry) const {
  // A job is pinned to one hardware class: the spec's, or else that of its first worker.
  std::string hardware_class = entry.job->status().spec().hardware_class();
  for (const v1::Probe& probe : entry.job->status().probes()) {
    if (!hardware_class.empty()) break;
    if (probe.worker().empty()) continue;
    auto first = workers_.find(probe.worker());
    if (first != workers_.end()) hardware_class = first->second.identity.hardware_class();
    break;
  }
  return hardware_class;
}

std::vector<v1::Task> Coordinator::BuildAheadLocked(const WorkerEntry& worker, int limit) const {
  std::vector<v1::Task> hints;
  for (const std::string& job_id : job_order_) {
    const int left = limit - static_cast<int>(hints.size());
    if (left <= 0) break;
    const JobEntry& entry = jobs_.at(job_id);
    if (entry.job->finished()) continue;
    const std::string hardware_class = JobHardwareClassLocked(entry);
    if (!hardware_class.empty() && worker.identity.hardware_class() != hardware_class) continue;
    for (v1::Task& task : entry.job->BuildAheadTasks(left)) hints.push_back(std::move(task));
  }
  return hints;
}

bool Coordinator::IdleLocked(const WorkerEntry& worker) {
  // Every assignment waiting in its mailbox is of one of its leases.
  return !worker.session_id.empty() && worker.ready && !worker.draining && worker.leases.empty() &&
         worker.state != v1::WORKER_STATE_LOST;
}

void Coordinator::StandingChangedLocked(const WorkerEntry& worker) {
  if (worker.mailbox == nullptr) return;
  worker.mailbox->SetStanding(!worker.session_id.empty() && worker.ready && !worker.draining &&
                                  worker.state != v1::WORKER_STATE_LOST,
                              static_cast<int>(worker.leases.size()));
}

absl::Time Coordinator::LastSeenLocked(const WorkerEntry& worker) {
  if (worker.mailbox == nullptr) return worker.last_seen;
  return std::max(worker.last_seen, worker.mailbox->heartbeat());
}

void Coordinator::DispatchLocked() {
  const absl::Time now = clock_->Now();
  last_dispatch_ = now;
  last_dispatch_ns_.store(absl::ToUnixNanos(now));
  std::vector<WorkerEntry*> idle;
  const uint64_t round = ++dispatch_round_;
  for (auto& [id, worker] : workers_) {
    if (!IdleLocked(worker)) continue;
    worker.idle_round = round;
    worker.idle_position = idle.size();
    idle.push_back(&worker);
  }
  if (idle.empty()) return;
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
      worker->idle_round = 0;
      leased = true;
    }
    it = leased ? idle.erase(it) : it + 1;
  }
  if (idle.empty()) return;
  for (const std::string& job_id : job_order_) {
    if (idle.empty()) break;
    JobEntry& entry = jobs_.at(job_id);
    if (entry.job->finished()) continue;
    // A job that has as many tasks running as its spec's max_workers hands out nothing
    // (BisectJob::TakeTasks respects the cap), and a TakeTasks that hands out nothing leaves no
    // trace (see ApplyLocked): it is not asked. Its running tasks are at least its live leases.
    const int cap = entry.job->status().spec().max_workers();
    if (cap > 0 && entry.live_leases >= cap) continue;
    const std::string hardware_class = JobHardwareClassLocked(entry);
    std::vector<WorkerEntry*> eligible;
    if (cap > 0) {
      eligible = CandidatesLocked(entry, idle, hardware_class, cap - entry.live_leases);
    } else {
      for (WorkerEntry* worker : idle) {
        if (hardware_class.empty() || worker->identity.hardware_class() == hardware_class) {
          eligible.push_back(worker);
        }
      }
    }
    if (eligible.empty()) continue;
    std::vector<std::string> names;
    for (WorkerEntry* worker : eligible) names.push_back(worker->worker_id);
    // A job that just handed these workers (or some of them) nothing, and has not changed since,
    // would say the same: only time alone could change its answer, so it is asked again after
    // kRedispatchPeriod. This keeps each result from asking every waiting job again.
    std::vector<std::string> sorted = names;
    std::sort(sorted.begin(), sorted.end());
    if (entry.declined && entry.changes == entry.declined_changes &&
        now - entry.declined_time < kRedispatchPeriod &&
        std::includes(entry.declined_workers.begin(), entry.declined_workers.end(), sorted.begin(),
                      sorted.end())) {
      continue;
    }
    JournalEntry take;
    take.kind = JournalEntry::Kind::kTakeTasks;
    take.time = now;
    take.workers = std::move(names);
    std::vector<BisectJob::Assignment> tasks =
        ApplyLocked(job_id, entry, std::move(take)).assignments;
    if (entry.declined) {
      entry.declined_changes = entry.changes;
      entry.declined_time = now;
      entry.declined_workers = std::move(sorted);
    }
    for (BisectJob::Assignment& assignment : tasks) {
      WorkerEntry* worker = &workers_.at(assignment.worker);
      LeaseTaskLocked(job_id, entry, *worker, std::move(assignment.task), now);
      worker->idle_round = 0;
      idle.erase(std::find(idle.begin(), idle.end(), worker));
    }
  }
}

std::vector<Coordinator::WorkerEntry*> Coordinator::CandidatesLocked(
    JobEntry& entry, const std::vector<WorkerEntry*>& idle, const std::string& hardware_class,
    int room) {
  // A capped job cannot use more than `room` new workers, and asking it about every idle worker
  // of a large cluster costs each dispatch O(jobs x workers), makes the job keep a record of each
  // (which its next dispatches iterate), and journals them all. So it is asked about the idle
  // workers that worked in it (tasks pinned to a worker, its calibrations, the nearest checkouts
  // are theirs) and at most `room` others, preferring those it was asked about before. Workers
  // are stamped as they are looked at, so that each is considered once and no lookup by name or
  // scan of a set is needed.
  const uint64_t round = dispatch_round_;
  const uint64_t stamp = ++candidate_stamp_;
  auto eligible = [&](const WorkerEntry* worker) {
    return worker->candidate_stamp != stamp && worker->idle_round == round &&
           (hardware_class.empty() || worker->identity.hardware_class() == hardware_class);
  };
  std::vector<WorkerEntry*> out;
  for (WorkerEntry* worker : entry.used_workers) {
    if (!eligible(worker)) continue;
    worker->candidate_stamp = stamp;
    out.push_back(worker);
  }
  for (WorkerEntry* worker : entry.offered) {
    if (room <= 0) break;  // And no new one below.
    if (!eligible(worker)) continue;
    worker->candidate_stamp = stamp;
    out.push_back(worker);
    --room;
  }
  for (WorkerEntry* worker : idle) {
    if (room <= 0) break;
    if (!eligible(worker)) continue;
    worker->candidate_stamp = stamp;
    entry.offered.push_back(worker);
    out.push_back(worker);
    --room;
  }
  std::sort(out.begin(), out.end(), [](const WorkerEntry* a, const WorkerEntry* b) {
    return a->idle_position < b->idle_position;
  });
  return out;
}

void Coordinator::LeaseTaskLocked(const std::string& job_id, JobEntry& entry, WorkerEntry& worker,
                                  v1::Task task, absl::Time now) {
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
  ++entry.live_leases;
  worker.leases.push_back(lease.lease_id);
  worker.state = v1::WORKER_STATE_BUSY;
  if (worker.mailbox != nullptr) {
    // The worker sees the lease once its TaskStarted is durable.
    const uint64_t batch = BatchOfChangesLocked();
    worker.mailbox->Deposit(std::move(message), batch);
    NotifyWhenDurableLocked(worker.mailbox, batch);
  }
  StandingChangedLocked(worker);
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
    // An assignment not yet delivered is simply withdrawn.
    if (DetachLeaseLocked(lease)) continue;
    auto worker = workers_.find(lease.worker_id);
    if (worker == workers_.end() || worker->second.mailbox == nullptr) continue;
    // The worker stops the task when it hears of the cancellation and asks for work again
    // when it has: until then it is not ready. (A lease handed to it now would reach it in the
    // heartbeat that carries the cancellation, while its task still winds down, and a worker
    // takes no lease while busy: the lease would be lost, and a probe's attempt with it.)
    worker->second.ready = false;
    StandingChangedLocked(worker->second);
    v1::LeaseCancellation cancel;
    cancel.set_lease_id(lease.lease_id);
    cancel.set_reason(reason);
    const uint64_t batch = BatchOfChangesLocked();
    worker->second.mailbox->DepositCancellation(std::move(cancel), batch);
    NotifyWhenDurableLocked(worker->second.mailbox, batch);
  }
  changed_.SignalAll();
}

bool Coordinator::DetachLeaseLocked(const LeaseEntry& lease) {
  // Called once per lease, as it leaves kActive.
  if (auto job = jobs_.find(lease.job_id); job != jobs_.end()) --job->second.live_leases;
  bool withdrawn = false;
  auto worker = workers_.find(lease.worker_id);
  if (worker != workers_.end()) {
    // Keeps every assignment in the mailbox one of the worker's leases (IdleLocked relies on it).
    const std::shared_ptr<WorkerMailbox>& mailbox = worker->second.mailbox;
    withdrawn = mailbox != nullptr && mailbox->Withdraw(lease.lease_id);
    auto& leases = worker->second.leases;
    leases.erase(std::remove(leases.begin(), leases.end(), lease.lease_id), leases.end());
    if (leases.empty() && worker->second.state == v1::WORKER_STATE_BUSY) {
      worker->second.state = v1::WORKER_STATE_IDLE;
    }
    StandingChangedLocked(worker->second);
  }
  auto task = task_leases_.find(lease.task_id);
  if (task != task_leases_.end() && task->second == lease.lease_id) task_leases_.erase(task);
  return withdrawn;
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
  if (!store_failure_.ok()) {
    // Reads only: nothing expires (that would change jobs) until the store takes writes again.
    TryWritingAgainLocked(now);
    return;
  }
  bool changed = false;
  for (auto& [id, lease] : leases_) {
    if (lease.state == LeaseState::kActive && lease.expire < now) {
      ++lease_expiries_;
      LoseLeaseLocked(lease, "its lease expired (no heartbeat)");
      changed = true;
    }
  }
  for (auto& [id, worker] : workers_) {
    if (!worker.session_id.empty() && LastSeenLocked(worker) + options_.lease_duration < now &&
        worker.state != v1::WORKER_STATE_LOST) {
      worker.state = v1::WORKER_STATE_LOST;
      worker.ready = false;
      StandingChangedLocked(worker);
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
  if (now - last_prune_ >= absl::Minutes(1)) PruneFinishedJobsLocked(now);
}

}  // namespace kbisect
