// Copyright 2026 The kbisect Authors.
#include "worker/build_slots.h"

#include <sched.h>

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"

namespace kbisect {
namespace {

// How often a build waiting for a slot looks again.
constexpr absl::Duration kSlotPoll = absl::Milliseconds(50);
constexpr char kSlotHolder[] = "another kbisect build on this host";

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
                                                  absl::Duration* waited) {
  const absl::Time start = clock_->Now();
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return nullptr;
  std::unique_ptr<FileLock> slot;
  while (slot == nullptr) {
    if (cancel != nullptr && cancel->IsCancelled()) break;
    const int slots = std::max(1, limit());
    for (int i = 0; i < slots && slot == nullptr; ++i) {
      absl::StatusOr<std::unique_ptr<FileLock>> lock =
          FileLock::TryAcquire(absl::StrCat(dir_, "/slot-", i), kSlotHolder);
      if (lock.ok()) {
        slot = *std::move(lock);
      } else if (!absl::IsFailedPrecondition(lock.status())) {
        return nullptr;
      }
    }
    if (slot == nullptr) clock_->SleepFor(kSlotPoll);
  }
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
