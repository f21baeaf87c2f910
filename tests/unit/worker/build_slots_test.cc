// Copyright 2026 The kbisect Authors.
//
// How many builds a host runs at once, from its cores and what its builds cost; and the slots
// themselves, held by threads.
#include "worker/build_slots.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace {

BuildCost Cost(double wall, double cpu) { return {absl::Seconds(wall), absl::Seconds(cpu)}; }

TEST(CoresPerBuildTest, IsTheHeaviestRecentBuildAndIgnoresInstantOnes) {
  EXPECT_FALSE(CoresPerBuild({}).has_value());
  EXPECT_FALSE(CoresPerBuild({Cost(0.01, 0.5)}).has_value()) << "too short to say";
  EXPECT_DOUBLE_EQ(*CoresPerBuild({Cost(10, 19), Cost(2, 2), Cost(0.01, 1)}), 1.9);
  EXPECT_DOUBLE_EQ(*CoresPerBuild({Cost(4, 1)}), 0.25);
  // Two `make -j2` on two cores each measured one core: alone each would use two.
  BuildCost shared = Cost(10, 10);
  shared.overlapping = 1;
  EXPECT_DOUBLE_EQ(*CoresPerBuild({Cost(5, 5), shared}), 2.0);
}

TEST(ConcurrentBuildLimitTest, FitsTheBuildsIntoTheCores) {
  EXPECT_EQ(ConcurrentBuildLimit(16, std::nullopt), 1) << "the first build runs alone";
  EXPECT_EQ(ConcurrentBuildLimit(2, 1.9), 1) << "make -j2 on a 2-core host";
  EXPECT_EQ(ConcurrentBuildLimit(2, 1.0), 2);
  EXPECT_EQ(ConcurrentBuildLimit(16, 1.9), 8);
  EXPECT_EQ(ConcurrentBuildLimit(16, 3.9), 4);
  EXPECT_EQ(ConcurrentBuildLimit(8, 0.5), 16);
  EXPECT_EQ(ConcurrentBuildLimit(2, 0.001), 16) << "at most 8 builds per core";
  EXPECT_EQ(ConcurrentBuildLimit(4, 64), 1) << "at least one";
  EXPECT_EQ(ConcurrentBuildLimit(0, 1.0), 1);
}

TEST(HostBuildSlotsTest, NeverHandsOutMoreThanTheLimit) {
  testing::TempDir tmp("kbisect-build-slots");
  HostBuildSlots slots(tmp.Join("slots"), 4);
  EXPECT_EQ(slots.cores(), 4);
  std::atomic<int> holding{0};
  std::atomic<int> most{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&] {
      for (int round = 0; round < 5; ++round) {
        std::unique_ptr<FileLock> slot = slots.Acquire(2, nullptr);
        ASSERT_NE(slot, nullptr);
        const int now = ++holding;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        --holding;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_LE(most.load(), 2);
  EXPECT_GE(most.load(), 1);
}

TEST(HostBuildSlotsTest, CountsTheSlotsHeld) {
  testing::TempDir tmp("kbisect-build-slots");
  HostBuildSlots slots(tmp.Join("slots"), 4);
  EXPECT_EQ(slots.Held(4), 0);
  std::unique_ptr<FileLock> one = slots.Acquire(4, nullptr);
  std::unique_ptr<FileLock> two = slots.Acquire(4, nullptr);
  EXPECT_EQ(slots.Held(4), 2);
  two.reset();
  EXPECT_EQ(slots.Held(4), 1);
}

TEST(HostBuildSlotsTest, ACancelledWaitReturnsNothing) {
  testing::TempDir tmp("kbisect-build-slots");
  HostBuildSlots slots(tmp.Join("slots"), 1);
  std::unique_ptr<FileLock> held = slots.Acquire(1, nullptr);
  ASSERT_NE(held, nullptr);
  Cancellation cancel;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cancel.Cancel();
  });
  absl::Duration waited;
  EXPECT_EQ(slots.Acquire(1, &cancel, &waited), nullptr);
  canceller.join();
  EXPECT_GE(waited, absl::Milliseconds(50));
  held.reset();
  EXPECT_NE(slots.Acquire(1, nullptr), nullptr);
}

}  // namespace
}  // namespace kbisect
