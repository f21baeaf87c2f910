// Copyright 2026 The kbisect Authors.
#include "coordinator/lease_table.h"

#include <algorithm>
#include <utility>

namespace kbisect {

const LeaseTable::Lease& LeaseTable::Grant(std::string lease_id, std::string job_id,
                                           std::string task_id, std::string worker_id,
                                           absl::Time expire) {
  Lease lease;
  lease.lease_id = std::move(lease_id);
  lease.job_id = std::move(job_id);
  lease.task_id = std::move(task_id);
  lease.worker_id = std::move(worker_id);
  lease.attempt = ++task_attempts_[lease.task_id];
  lease.expire = expire;
  task_leases_[lease.task_id] = lease.lease_id;
  active_.insert(lease.lease_id);
  const std::string id = lease.lease_id;
  return leases_.insert_or_assign(id, std::move(lease)).first->second;
}

void LeaseTable::RecordAttempt(const std::string& task_id, int attempt) {
  int& latest = task_attempts_[task_id];
  latest = std::max(latest, attempt);
}

LeaseTable::Lease* LeaseTable::Find(const std::string& lease_id) {
  auto it = leases_.find(lease_id);
  return it == leases_.end() ? nullptr : &it->second;
}

const LeaseTable::Lease* LeaseTable::Find(const std::string& lease_id) const {
  auto it = leases_.find(lease_id);
  return it == leases_.end() ? nullptr : &it->second;
}

LeaseTable::Lease* LeaseTable::LiveLeaseOf(const std::string& task_id) {
  auto it = task_leases_.find(task_id);
  if (it == task_leases_.end()) return nullptr;
  Lease* lease = Find(it->second);
  return lease != nullptr && lease->state == State::kActive ? lease : nullptr;
}

bool LeaseTable::End(Lease& lease, State state) {
  if (lease.state != State::kActive) return false;
  lease.state = state;
  active_.erase(lease.lease_id);
  auto task = task_leases_.find(lease.task_id);
  if (task != task_leases_.end() && task->second == lease.lease_id) task_leases_.erase(task);
  return true;
}

bool LeaseTable::Renew(const std::string& lease_id, const std::string& worker_id,
                       absl::Time expire) {
  Lease* lease = Find(lease_id);
  if (lease == nullptr || lease->state != State::kActive || lease->worker_id != worker_id) {
    return false;
  }
  lease->expire = expire;
  return true;
}

LeaseTable::Fence LeaseTable::CheckResult(const std::string& lease_id, const std::string& worker_id,
                                          int attempt) const {
  const Lease* lease = Find(lease_id);
  if (lease == nullptr) return Fence::kUnknownLease;
  if (lease->worker_id != worker_id) return Fence::kNotHolder;
  if (lease->attempt != attempt) return Fence::kWrongAttempt;
  switch (lease->state) {
    case State::kCompleted:
      return Fence::kDuplicate;
    case State::kDead:
      return Fence::kEnded;
    case State::kActive:
      break;
  }
  return Fence::kAccept;
}

std::vector<std::string> LeaseTable::ExpiredBefore(absl::Time now) const {
  std::vector<std::string> expired;
  for (const std::string& id : active_) {
    if (leases_.at(id).expire < now) expired.push_back(id);
  }
  return expired;
}

void LeaseTable::Clear() {
  leases_.clear();
  active_.clear();
  task_leases_.clear();
  task_attempts_.clear();
}

}  // namespace kbisect
