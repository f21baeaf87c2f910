// Copyright 2026 The kbisect Authors.
#include "coordinator/job/build_capacity.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "google/protobuf/util/time_util.h"

namespace kbisect {
namespace {

// The builds whose times size the capacity.
constexpr size_t kRecentBuilds = 8;

double Seconds(const google::protobuf::Duration& d) {
  return static_cast<double>(google::protobuf::util::TimeUtil::DurationToNanoseconds(d)) / 1e9;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace

int BuildCapacity(const std::vector<std::string>& workers,
                  const google::protobuf::RepeatedPtrField<v1::Probe>& probes,
                  const std::map<std::string, BuildPool>& announced) {
  std::map<std::string, std::string> pool_of_worker;
  std::map<std::string, int> slots_of_pool;  // The latest each pool reported.
  std::vector<double> builds;
  std::vector<double> benches;
  for (const v1::Probe& probe : probes) {
    const v1::TaskTimings& timings = probe.timings();
    if (timings.build_pool().empty() || timings.build_pool_slots() <= 0) continue;
    pool_of_worker[probe.worker()] = timings.build_pool();
    slots_of_pool[timings.build_pool()] = timings.build_pool_slots();
  }
  for (auto it = probes.rbegin(); it != probes.rend() && builds.size() < kRecentBuilds; ++it) {
    const v1::TaskTimings& timings = it->timings();
    if (timings.build_pool().empty() || timings.build_reused()) continue;
    const double build = Seconds(timings.build());
    if (build <= 0) continue;
    builds.push_back(build);
    benches.push_back(std::max(0.0, Seconds(timings.bench())));
  }
  // A worker none of whose probes built yet is in the pool it announced; a pool no probe sized
  // has the most slots any of its workers announced (the one that built there last knows).
  std::map<std::string, int> announced_slots;
  for (const std::string& worker : workers) {
    auto it = announced.find(worker);
    if (it == announced.end() || it->second.name.empty()) continue;
    int& slots = announced_slots[it->second.name];
    slots = std::max({slots, 1, it->second.slots});
    pool_of_worker.emplace(worker, it->second.name);
  }
  for (const auto& [pool, slots] : announced_slots) slots_of_pool.emplace(pool, slots);
  if (builds.empty() && pool_of_worker.empty()) return 0;
  // Nothing measured yet: one task builds while another benchmarks.
  const double busy_per_slot = builds.empty() ? 2 : 1 + Median(benches) / Median(builds);
  std::set<std::string> pools;
  int capacity = 0;
  for (const std::string& worker : workers) {
    auto it = pool_of_worker.find(worker);
    if (it == pool_of_worker.end()) {
      ++capacity;  // Not seen building, no pool announced: its own pool, as far as the job knows.
    } else {
      pools.insert(it->second);
    }
  }
  for (const std::string& pool : pools) {
    // Rounded to the nearest: a benchmark of 5% of a build's time keeps no second task busy.
    capacity +=
        std::max(1, static_cast<int>(std::floor(slots_of_pool[pool] * busy_per_slot + 0.5)));
  }
  return std::max(1, capacity);
}

int CapTasksInFlight(int max_workers, int build_capacity) {
  if (build_capacity <= 0) return max_workers;
  if (max_workers <= 0) return build_capacity;
  return std::min(max_workers, build_capacity);
}

int BuildOrder(v1::ProbeKind kind, int commit_index, int last_good, int first_bad) {
  if (kind != v1::PROBE_KIND_BISECT || first_bad <= last_good) return 0;
  const double middle = (last_good + first_bad) / 2.0;
  const double distance = std::abs(commit_index - middle) / (first_bad - last_good);
  return 1 + static_cast<int>(std::lround(1000 * std::min(distance, 1.0)));
}

}  // namespace kbisect
