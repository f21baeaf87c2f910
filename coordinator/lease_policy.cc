// Copyright 2026 The kbisect Authors.
#include "coordinator/lease_policy.h"

#include <algorithm>
#include <utility>

namespace kbisect {

void JobOffers::WorkerUsed(const std::string& worker) {
  if (used_set_.insert(worker).second) used_.push_back(worker);
}

DispatchRound::DispatchRound(std::vector<IdleWorker> idle, absl::Time now) : now_(now) {
  slots_.reserve(idle.size());
  remaining_.reserve(idle.size());
  for (const IdleWorker& worker : idle) {
    if (!index_.emplace(worker.worker_id, slots_.size()).second) continue;
    remaining_.push_back(slots_.size());
    slots_.push_back({worker.worker_id, worker.hardware_class, 0});
  }
}

std::vector<std::string> DispatchRound::remaining() const {
  std::vector<std::string> ids;
  ids.reserve(remaining_.size());
  for (size_t index : remaining_) ids.emplace_back(slots_[index].worker_id);
  return ids;
}

bool DispatchRound::Pick(size_t index, const std::string& hardware_class, uint64_t stamp) {
  Slot& slot = slots_[index];
  if (slot.stamp == stamp) return false;
  if (!hardware_class.empty() && slot.hardware_class != hardware_class) return false;
  slot.stamp = stamp;
  return true;
}

std::vector<std::string> DispatchRound::Candidates(const DispatchJob& job, JobOffers& offers) {
  const int cap = job.max_workers;
  if (cap > 0 && job.live_leases >= cap) return {};
  const uint64_t stamp = ++stamp_;
  std::vector<size_t> picked;
  if (cap > 0) {
    int room = cap - job.live_leases;
    auto pick_by_id = [&](const std::string& worker) {
      auto it = index_.find(worker);
      if (it == index_.end() || !Pick(it->second, job.hardware_class, stamp)) return false;
      picked.push_back(it->second);
      return true;
    };
    for (const std::string& worker : offers.used_) pick_by_id(worker);
    for (const std::string& worker : offers.offered_) {
      if (room <= 0) break;
      if (pick_by_id(worker)) --room;
    }
    for (size_t index : remaining_) {
      if (room <= 0) break;
      if (!Pick(index, job.hardware_class, stamp)) continue;
      offers.offered_.emplace_back(slots_[index].worker_id);
      picked.push_back(index);
      --room;
    }
    std::sort(picked.begin(), picked.end());
  } else {
    for (size_t index : remaining_) {
      if (Pick(index, job.hardware_class, stamp)) picked.push_back(index);
    }
  }
  std::vector<std::string> out;
  out.reserve(picked.size());
  for (size_t index : picked) out.emplace_back(slots_[index].worker_id);
  if (out.empty() || !offers.declined_ || offers.changes_ != offers.declined_changes_ ||
      now_ - offers.declined_time_ >= kRedispatchPeriod) {
    return out;
  }
  std::vector<std::string> sorted = out;
  std::sort(sorted.begin(), sorted.end());
  if (std::includes(offers.declined_workers_.begin(), offers.declined_workers_.end(),
                    sorted.begin(), sorted.end())) {
    return {};
  }
  return out;
}

void DispatchRound::Answered(const std::vector<std::string>& asked,
                             const std::vector<std::string>& taken, JobOffers& offers) {
  offers.declined_ = taken.empty();
  if (offers.declined_) {
    offers.declined_changes_ = offers.changes_;
    offers.declined_time_ = now_;
    offers.declined_workers_ = asked;
    std::sort(offers.declined_workers_.begin(), offers.declined_workers_.end());
  }
  for (const std::string& worker : taken) Remove(worker);
}

void DispatchRound::Remove(const std::string& worker_id) {
  auto it = index_.find(worker_id);
  if (it == index_.end()) return;
  const size_t index = it->second;
  index_.erase(it);
  remaining_.erase(std::lower_bound(remaining_.begin(), remaining_.end(), index));
}

}  // namespace kbisect
