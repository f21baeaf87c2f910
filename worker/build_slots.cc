// Copyright 2026 The kbisect Authors.
#include "worker/build_slots.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kbisect {
namespace {

// How often a build waiting for a slot looks again.
constexpr absl::Duration kSlotPoll = absl::Milliseconds(50);
constexpr char kSlotHolder[] = "another kbisect build on this host";
// The directory of the waiters' files, under the slots' directory.
constexpr char kWaiting[] = "waiting";

// How many live waiters under `waiting` come before the one named `own` (their names sort
// before it). A waiter's file whose lock can be taken belongs to a waiter that is gone (its
// process died between creating and removing it): it is removed.
int WaitersAhead(const std::filesystem::path& waiting, const std::string& own) {
  std::error_code ec;
  int ahead = 0;
  for (const auto& entry : std::filesystem::directory_iterator(waiting, ec)) {
    const std::string name = entry.path().filename().string();
    if (name >= own) continue;
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
  const std::string name =
      absl::StrFormat("%010d-%020d-%d-%d", std::max(0, order), absl::ToUnixNanos(start),
                      static_cast<int>(getpid()), next_waiter.fetch_add(1));
  const std::string own_path = (waiting / name).string();
  std::unique_ptr<FileLock> own;
  if (absl::StatusOr<std::unique_ptr<FileLock>> lock = FileLock::TryAcquire(own_path, kSlotHolder);
      lock.ok()) {
    own = *std::move(lock);
  } else {
    return nullptr;
  }
  std::unique_ptr<FileLock> slot;
  while (slot == nullptr) {
    if (cancel != nullptr && cancel->IsCancelled()) break;
    const int slots = std::max(1, limit());
    // The free slots, held while this look decides; all but the one taken are let go.
    std::vector<std::unique_ptr<FileLock>> free;
    for (int i = 0; i < slots; ++i) {
      absl::StatusOr<std::unique_ptr<FileLock>> lock =
          FileLock::TryAcquire(absl::StrCat(dir_, "/slot-", i), kSlotHolder);
      if (lock.ok()) {
        free.push_back(*std::move(lock));
      } else if (!absl::IsFailedPrecondition(lock.status())) {
        return nullptr;
      }
    }
    if (!free.empty() && WaitersAhead(waiting, name) < static_cast<int>(free.size())) {
      slot = std::move(free.front());
    }
    if (slot == nullptr) clock_->SleepFor(kSlotPoll);
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
        FileLock::TryAcquire(absl::StrCat(dir_, "/slot-", i), kSlotHolder);
    if (!lock.ok() && absl::IsFailedPrecondition(lock.status())) ++held;
  }
  return held;
}

}  // namespace kbisect
