// Copyright 2026 The kbisect Authors.
#include "worker/build_slots.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/exec/process_group_usage.h"

namespace kbisect {
namespace {

// How often a build waiting for a slot looks again.
constexpr absl::Duration kSlotPoll = absl::Milliseconds(50);
constexpr char kSlotHolder[] = "another kbisect build on this host";
// The directory of the waiters' files, under the slots' directory.
constexpr char kWaiting[] = "waiting";
// The directory of the running builds' files (HostBuildSlots::Register).
constexpr char kRunning[] = "running";
// How long one pass over /proc serves the builds waiting for a slot.
constexpr absl::Duration kRunningSampleReuse = absl::Milliseconds(200);

// How many live waiters under `waiting` come before the one named `own` (their names sort
// before it). A waiter's file whose lock can be taken belongs to a waiter that is gone (its
// process died between creating and removing it): it is removed.
int WaitersAhead(const std::filesystem::path& waiting, const std::string& own) {
  std::error_code ec;
  int ahead = 0;
  for (const auto& entry : std::filesystem::directory_iterator(waiting, ec)) {
    const std::string name = entry.path().filename().string();
    if (name >= own || name.front() == '.') continue;  // Behind it, or not locked yet.
    absl::StatusOr<std::unique_ptr<FileLock>> lock =
        FileLock::TryAcquire(entry.path().string(), kSlotHolder);
    if (lock.ok()) {
      std::error_code ignored;
      std::filesystem::remove(entry.path(), ignored);
    } else if (absl::IsFailedPrecondition(lock.status())) {
      ++ahead;
    }
  }
  return ahead;
}

// The lock file of slot `i` under `dir`.
std::string SlotPath(const std::string& dir, int i) { return absl::StrCat(dir, "/slot-", i); }

}  // namespace

int HostCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

HostBuildSlots::HostBuildSlots(std::string dir, int cores, Clock* clock)
    : dir_(std::move(dir)), cores_(std::max(1, cores)), clock_(clock) {}

std::unique_ptr<FileLock> HostBuildSlots::Acquire(int limit, const Cancellation* cancel,
                                                  absl::Duration* waited) {
  return Acquire([limit] { return limit; }, cancel, waited);
}

std::unique_ptr<FileLock> HostBuildSlots::Acquire(const std::function<int()>& limit,
                                                  const Cancellation* cancel,
                                                  absl::Duration* waited, int order) {
  const absl::Time start = clock_->Now();
  std::error_code ec;
  const std::filesystem::path waiting = std::filesystem::path(dir_) / kWaiting;
  std::filesystem::create_directories(waiting, ec);
  if (ec) return nullptr;
  // This waiter's place in the queue: names sort by order, then by the time waiting started.
  static std::atomic<int64_t> next_waiter{0};
  const int64_t waiter_id = next_waiter.fetch_add(1);
  const std::string name =
      absl::StrFormat("%010d-%020d-%d-%d", std::max(0, order), absl::ToUnixNanos(start),
                      static_cast<int>(getpid()), waiter_id);
  const std::string own_path = (waiting / name).string();
  // Locked under a name the others skip, then renamed: a waiter that looks for dead waiters
  // (whose files it can lock) must never lock this one between its creation and its lock.
  const std::string new_path = (waiting / ("." + name)).string();
  std::unique_ptr<FileLock> own;
  if (absl::StatusOr<std::unique_ptr<FileLock>> lock = FileLock::TryAcquire(new_path, kSlotHolder);
      lock.ok()) {
    own = *std::move(lock);
  } else {
    return nullptr;
  }
  std::filesystem::rename(new_path, own_path, ec);
  if (ec) {
    std::filesystem::remove(new_path, ec);
    return nullptr;
  }
  std::unique_ptr<FileLock> slot;
  int64_t looks = 0;
  while (slot == nullptr) {
    if (cancel != nullptr && cancel->IsCancelled()) break;
    const int slots = std::max(1, limit());
    // A waiter with as many live waiters ahead of it as there are slots cannot take one yet,
    // and does not touch the slots (its looks would hide free slots from those ahead).
    const int ahead = WaitersAhead(waiting, name);
    if (ahead < slots) {
      // The free slots are counted with locks let go at once, so that two waiters looking at
      // the same moment cannot each hide a slot from the other for as long as they decide.
      std::vector<int> free;
      for (int i = 0; i < slots; ++i) {
        absl::StatusOr<std::unique_ptr<FileLock>> lock =
            FileLock::TryAcquire(SlotPath(dir_, i), kSlotHolder);
        if (lock.ok()) {
          free.push_back(i);
        } else if (!absl::IsFailedPrecondition(lock.status())) {
          return nullptr;
        }
      }
      if (static_cast<int>(free.size()) > ahead) {
        for (int i : free) {
          absl::StatusOr<std::unique_ptr<FileLock>> lock =
              FileLock::TryAcquire(SlotPath(dir_, i), kSlotHolder);
          if (lock.ok()) {
            slot = *std::move(lock);
            break;
          }
        }
      }
    }
    // Waiters that look at the same moment would keep doing so; a few milliseconds that differ
    // from waiter to waiter and from look to look take them out of step.
    if (slot == nullptr) {
      clock_->SleepFor(kSlotPoll + absl::Milliseconds((waiter_id * 7 + looks * 13) % 23));
    }
    ++looks;
  }
  std::filesystem::remove(own_path, ec);
  own.reset();
  if (waited != nullptr) *waited += clock_->Now() - start;
  return slot;
}

int HostBuildSlots::Held(int limit) const {
  int held = 0;
  for (int i = 0; i < std::max(1, limit); ++i) {
    absl::StatusOr<std::unique_ptr<FileLock>> lock =
        FileLock::TryAcquire(SlotPath(dir_, i), kSlotHolder);
    if (!lock.ok() && absl::IsFailedPrecondition(lock.status())) ++held;
  }
  return held;
}

HostBuildSlots::RunningBuild::~RunningBuild() {
  std::error_code ignored;
  std::filesystem::remove(path_, ignored);
}

std::unique_ptr<HostBuildSlots::RunningBuild> HostBuildSlots::Register(int process_group,
                                                                       int requested_jobs) {
  const std::filesystem::path running = std::filesystem::path(dir_) / kRunning;
  std::error_code ec;
  std::filesystem::create_directories(running, ec);
  const std::string path = (running / absl::StrCat(process_group)).string();
  const std::string temporary = (running / absl::StrCat(".", process_group)).string();
  const uint64_t leader_start = ProcessStartTicks(process_group);
  {
    std::ofstream file(temporary, std::ios::trunc);
    file << absl::ToUnixNanos(clock_->Now()) << " " << requested_jobs << " " << leader_start
         << "\n";
    file.close();
    if (!file) return nullptr;
  }
  std::filesystem::rename(temporary, path, ec);
  if (ec) return nullptr;
  return std::make_unique<RunningBuild>(path);
}

std::vector<BuildCost> HostBuildSlots::RunningCosts() const {
  struct Registration {
    std::filesystem::path path;
    int group = 0;
    int64_t start_ns = 0;
    uint64_t leader_start = 0;
    int requested_jobs = 0;
  };
  std::vector<Registration> registered;
  std::error_code ec;
  std::filesystem::directory_iterator it(std::filesystem::path(dir_) / kRunning, ec);
  for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    Registration r;
    r.path = it->path();
    if (!absl::SimpleAtoi(r.path.filename().string(), &r.group)) continue;  // A temporary.
    std::ifstream file(r.path);
    if (!(file >> r.start_ns >> r.requested_jobs >> r.leader_start)) continue;
    registered.push_back(r);
  }
  if (registered.empty()) return {};
  std::map<int, ProcessGroupUsage> usages;
  std::map<std::pair<int, uint64_t>, int> runnable;  // Medians, where sampled enough.
  {
    kbisect::MutexLock lock(&sample_mu_);
    bool fresh = clock_->Now() - sampled_at_ < kRunningSampleReuse;
    for (const Registration& r : registered) fresh = fresh && sampled_.count(r.group) > 0;
    if (!fresh) {
      std::vector<int> groups;
      for (const Registration& r : registered) groups.push_back(r.group);
      sampled_ = SampleProcessGroups(groups);
      sampled_at_ = clock_->Now();
      std::map<std::pair<int, uint64_t>, RunnableTally> kept;
      for (const Registration& r : registered) {
        const ProcessGroupUsage& usage = sampled_[r.group];
        if (usage.live == 0 || usage.leader_start_ticks != r.leader_start) continue;
        RunnableTally& tally = kept[{r.group, r.leader_start}];
        if (auto it = runnable_.find({r.group, r.leader_start}); it != runnable_.end()) {
          tally = it->second;
        }
        tally.Add(usage.running);
      }
      runnable_ = std::move(kept);  // The builds that ended are forgotten.
    }
    usages = sampled_;
    for (const auto& [build, tally] : runnable_) {
      if (std::optional<int> median = tally.Median()) runnable[build] = *median;
    }
  }
  std::vector<BuildCost> costs;
  for (const Registration& r : registered) {
    const ProcessGroupUsage& usage = usages[r.group];
    if (usage.leader_start_ticks == 0 || usage.leader_start_ticks != r.leader_start) {
      std::error_code ignored;
      std::filesystem::remove(r.path, ignored);
      continue;
    }
    BuildCost cost;
    cost.requested_jobs = r.requested_jobs;
    cost.wall = clock_->Now() - absl::FromUnixNanos(r.start_ns);
    // A process running at the sample is a core that the average may not show yet.
    cost.cpu = std::max(usage.cpu, cost.wall * usage.running);
    cost.runnable = runnable[{r.group, r.leader_start}];
    costs.push_back(cost);
  }
  return costs;
}

}  // namespace kbisect
