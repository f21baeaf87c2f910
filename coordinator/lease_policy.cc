// Copyright 2026 The kbisect Authors.
#include "coordinator/lease_policy.h"

#include <algorithm>
#include <utility>

namespace kbisect {

void JobOffers::WorkerUsed(const std::string& worker) {
  if (used_set_.insert(worker).second) used_.push_back(worker);
}

DispatchRound::DispatchRound(std::vector<IdleWorker> idle, absl::Time now) : now_(now) {
  remaining_.reserve(idle.size());
  for (IdleWorker& worker : idle) {
    Slot slot;
    slot.position = remaining_.size();
    slot.hardware_class = std::move(worker.hardware_class);
    if (!slots_.emplace(worker.worker_id, std::move(slot)).second) continue;
    remaining_.push_back(std::move(worker.worker_id));
  }
}

std::vector<std::string> DispatchRound::Candidates(const DispatchJob& job, JobOffers& offers) {
  const int cap = job.max_workers;
  if (cap > 0 && job.live_leases >= cap) return {};
  const uint64_t stamp = ++stamp_;
  // Picks `worker` when it is still in the round, of the job's class and not picked yet.
  auto pick = [&](const std::string& worker) -> const Slot* {
    auto it = slots_.find(worker);
    if (it == slots_.end() || it->second.stamp == stamp) return nullptr;
    if (!job.hardware_class.empty() && it->second.hardware_class != job.hardware_class) {
      return nullptr;
    }
    it->second.stamp = stamp;
    return &it->second;
  };
  std::vector<std::pair<size_t, std::string>> picked;
  if (cap > 0) {
    int room = cap - job.live_leases;
    for (const std::string& worker : offers.used_) {
      if (const Slot* slot = pick(worker)) picked.emplace_back(slot->position, worker);
    }
    for (const std::string& worker : offers.offered_) {
      if (room <= 0) break;
      if (const Slot* slot = pick(worker)) {
        picked.emplace_back(slot->position, worker);
        --room;
      }
    }
    for (const std::string& worker : remaining_) {
      if (room <= 0) break;
      if (const Slot* slot = pick(worker)) {
        offers.offered_.push_back(worker);
        picked.emplace_back(slot->position, worker);
        --room;
      }
    }
    std::sort(picked.begin(), picked.end());
  } else {
    for (const std::string& worker : remaining_) {
      if (const Slot* slot = pick(worker)) picked.emplace_back(slot->position, worker);
    }
  }
  std::vector<std::string> out;
  out.reserve(picked.size());
  for (auto& [position, worker] : picked) out.push_back(std::move(worker));
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
  if (slots_.erase(worker_id) == 0) return;
  remaining_.erase(std::find(remaining_.begin(), remaining_.end(), worker_id));
}

}  // namespace kbisect
