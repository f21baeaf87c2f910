// Copyright 2026 The kbisect Authors.
//
// How many builds a host runs at once, from its cores and what its builds cost; and the slots
// themselves, held by threads.
#include "worker/build_slots.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/exec/process_group_sampler.h"
#include "common/exec/process_group_usage.h"
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

TEST(CoresPerBuildTest, AnOverlappedBuildUsesNoMoreCoresThanItHadProcessesAskingForOne) {
  // fmt's one `g++` call compiling two files, GOOD's and BAD's side by side on two cores: each
  // used a core, and had one process asking for one. Alone it would still use one, so two fit.
  BuildCost one_process = Cost(5.2, 5.1);
  one_process.overlapping = 1;
  one_process.runnable = 1.02;
  EXPECT_NEAR(*CoresPerBuild({one_process}), 1.02, 1e-9);
  EXPECT_EQ(ConcurrentBuildLimit(2, CoresPerBuild({one_process})), 2);
  // Two `make -j2` sharing the cores had two processes waiting for a core each: alone each uses
  // two, and the host builds one at a time.
  BuildCost two_jobs = Cost(10, 10);
  two_jobs.overlapping = 1;
  two_jobs.runnable = 2.3;
  EXPECT_DOUBLE_EQ(*CoresPerBuild({two_jobs}), 2.0);
  EXPECT_EQ(ConcurrentBuildLimit(2, CoresPerBuild({two_jobs})), 1);
  // Never below what it used, whatever the samples missed.
  BuildCost busy = Cost(10, 15);
  busy.overlapping = 1;
  busy.runnable = 1;
  EXPECT_DOUBLE_EQ(*CoresPerBuild({busy}), 1.5);
  // A build that ran alone is what it used; sampled or not.
  BuildCost alone = Cost(10, 10);
  alone.runnable = 3;
  EXPECT_DOUBLE_EQ(*CoresPerBuild({alone}), 1.0);
}

TEST(CoresPerBuildTest, IsNeverBelowTheJobsTheCommandAskedFor) {
  // lz4's old Makefile compiles every file in one command: one core busy under `make -j2`.
  BuildCost old_makefile = Cost(7.5, 7.5);
  old_makefile.requested_jobs = 2;
  EXPECT_DOUBLE_EQ(*CoresPerBuild({old_makefile}), 2.0);
  EXPECT_EQ(ConcurrentBuildLimit(2, CoresPerBuild({old_makefile})), 1);
  BuildCost busier = Cost(10, 30);
  busier.requested_jobs = 2;
  EXPECT_DOUBLE_EQ(*CoresPerBuild({busier}), 3.0) << "what it used counts when it is more";
}

TEST(RequestedBuildJobsTest, ReadsTheJobFlagsOfMakeNinjaCmakeAndTheirEnvironment) {
  const std::map<std::string, std::string> none;
  EXPECT_EQ(RequestedBuildJobs("make -C lib -j2 -s && echo build >> log", none), 2);
  EXPECT_EQ(RequestedBuildJobs("make -j 8", none), 8);
  EXPECT_EQ(RequestedBuildJobs("make -sj4", none), 4);
  EXPECT_EQ(RequestedBuildJobs("make -j", none), kAllCoresJobs) << "make's unlimited jobs";
  EXPECT_EQ(RequestedBuildJobs("make -j$(nproc)", none), kAllCoresJobs);
  EXPECT_EQ(RequestedBuildJobs("ninja -C build -j16", none), 16);
  EXPECT_EQ(RequestedBuildJobs("cmake --build build --parallel 3", none), 3);
  EXPECT_EQ(RequestedBuildJobs("cmake --build build --parallel", none), kAllCoresJobs);
  EXPECT_EQ(RequestedBuildJobs("python setup.py build_ext --jobs=6", none), 6);
  EXPECT_EQ(RequestedBuildJobs("(cd lib; make -j3) && make -j2 test", none), 3) << "the highest";
  EXPECT_EQ(RequestedBuildJobs("MAKEFLAGS=-j5 ./build.sh", none), 5);
  EXPECT_EQ(RequestedBuildJobs("make", {{"MAKEFLAGS", "sj4"}}), 4);
  EXPECT_EQ(RequestedBuildJobs("cmake --build b", {{"CMAKE_BUILD_PARALLEL_LEVEL", "12"}}), 12);
  EXPECT_EQ(RequestedBuildJobs("make", none), 0);
  EXPECT_EQ(RequestedBuildJobs("pip install -e .", none), 0);
  EXPECT_EQ(RequestedBuildJobs("gcc -fjump-tables -c a.c", none), 0) << "not make's flags";
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

TEST(CoresPerBuildWhileRunningTest, LiftsTheFirstBuildAloneRuleForBuildsThatLoadNoCoreOrOne) {
  // Nothing running, or one that has not run long enough to say: the first build runs alone.
  EXPECT_EQ(CoresPerBuildWhileRunning({}), std::nullopt);
  EXPECT_EQ(CoresPerBuildWhileRunning({Cost(0.1, 0)}), std::nullopt);
  // A sleep, a download, a remote compile: its cost so far, and ConcurrentBuildLimit fits many.
  ASSERT_NE(CoresPerBuildWhileRunning({Cost(0.5, 0.01)}), std::nullopt);
  EXPECT_DOUBLE_EQ(*CoresPerBuildWhileRunning({Cost(0.5, 0.01), Cost(1, 0.2)}), 0.2);
  EXPECT_EQ(ConcurrentBuildLimit(2, CoresPerBuildWhileRunning({Cost(0.5, 0.01)})), 16);
  // A compile (one core so far), or any running build that does, keeps the rule.
  EXPECT_EQ(CoresPerBuildWhileRunning({Cost(0.5, 0.01), Cost(0.5, 0.5)}), std::nullopt);
  // So does a command that asks for parallel jobs, however light its start (a configure step).
  BuildCost asks = Cost(2, 0);
  asks.requested_jobs = 2;
  EXPECT_EQ(CoresPerBuildWhileRunning({asks}), std::nullopt);
  // A compiler called once: one process asking for a core, one core busy. A second such build
  // fits beside it on two cores.
  BuildCost one_compile = Cost(1.5, 1.5);
  one_compile.runnable = 1;
  ASSERT_NE(CoresPerBuildWhileRunning({one_compile}), std::nullopt);
  EXPECT_DOUBLE_EQ(*CoresPerBuildWhileRunning({one_compile, Cost(0.5, 0.01)}), 1.0);
  EXPECT_EQ(ConcurrentBuildLimit(2, CoresPerBuildWhileRunning({one_compile})), 2);
  EXPECT_EQ(ConcurrentBuildLimit(1, CoresPerBuildWhileRunning({one_compile})), 1);
  // Two processes asking for a core, or one process keeping more than one busy (threads): the
  // first build runs alone.
  BuildCost two_jobs = Cost(1.5, 1.5);
  two_jobs.runnable = 2;
  EXPECT_EQ(CoresPerBuildWhileRunning({two_jobs}), std::nullopt);
  BuildCost threads = Cost(1.5, 2.7);
  threads.runnable = 1;
  EXPECT_EQ(CoresPerBuildWhileRunning({threads}), std::nullopt);
  EXPECT_EQ(CoresPerBuildWhileRunning({one_compile, two_jobs}), std::nullopt);
}

TEST(HostBuildSlotsTest, CountsTheRunnableProcessesOfARegisteredBuildOverItsSamples) {
  testing::TempDir tmp("kbisect-build-slots");
  HostBuildSlots slots(tmp.Join("slots"), 2);
  std::unique_ptr<CommandRunner> runner = NewSubprocessRunner();
  ExecRequest build;
  build.shell_command = "while :; do :; done";  // One process, always asking for a core.
  std::unique_ptr<HostBuildSlots::RunningBuild> registered;
  std::atomic<int> group{0};
  build.on_started = [&](int process_group) {
    registered = slots.Register(process_group, 0);
    group = process_group;
  };
  Cancellation cancel;
  std::thread running([&] { (void)runner->Run(build, &cancel); });
  for (int i = 0; i < 6000 && group == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::vector<BuildCost> costs;
  // A look more than 200 ms after the last pass (build_slots.cc's kRunningSampleReuse) makes a
  // new one: three passes make a median.
  for (int pass = 0; pass < kFewestProcessGroupSamples; ++pass) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    costs = slots.RunningCosts();
  }
  cancel.Cancel();
  running.join();
  ASSERT_EQ(costs.size(), 1u);
  EXPECT_EQ(costs[0].runnable, 1);
}

TEST(HostBuildSlotsTest, MeasuresARegisteredBuildWhileItRuns) {
  testing::TempDir tmp("kbisect-build-slots");
  HostBuildSlots slots(tmp.Join("slots"), 2);
  std::unique_ptr<CommandRunner> runner = NewSubprocessRunner();
  // A build that does a fixed amount of work, then sleeps: its group's CPU so far is that work,
  // counted through the shell that reaped it, and nothing of it runs at the sample.
  const std::string worked = tmp.Join("worked");
  ExecRequest build;
  build.shell_command =
      absl::StrCat("i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; sh -c 'true'; touch ",
                   worked, "; exec sleep 30");
  std::unique_ptr<HostBuildSlots::RunningBuild> registered;
  std::atomic<int> group{0};
  build.on_started = [&](int process_group) {
    group = process_group;
    registered = slots.Register(process_group, 0);
  };
  Cancellation cancel;
  std::thread running([&] { (void)runner->Run(build, &cancel); });
  for (int i = 0; i < 6000 && !std::filesystem::exists(worked); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(std::filesystem::exists(worked)) << "the build did not do its work within 60 s";
  // Until `sleep` is exec'ed and nothing of the group runs.
  for (int i = 0; i < 500 && SampleProcessGroup(group).running > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const std::vector<BuildCost> costs = slots.RunningCosts();
  ASSERT_EQ(costs.size(), 1u);
  EXPECT_GT(costs[0].cpu, absl::ZeroDuration());
  EXPECT_GE(costs[0].wall, costs[0].cpu);
  EXPECT_EQ(costs[0].requested_jobs, 0);
  const ProcessGroupUsage usage = SampleProcessGroup(group);
  EXPECT_GE(usage.members, 1);
  EXPECT_EQ(usage.running, 0);
  cancel.Cancel();
  running.join();
  registered.reset();
  EXPECT_TRUE(slots.RunningCosts().empty());
}

TEST(HostBuildSlotsTest, ARegistrationWhoseProcessesAreGoneIsDropped) {
  testing::TempDir tmp("kbisect-build-slots");
  HostBuildSlots slots(tmp.Join("slots"), 2);
  std::unique_ptr<CommandRunner> runner = NewSubprocessRunner();
  std::unique_ptr<HostBuildSlots::RunningBuild> left;
  ExecRequest build;
  build.shell_command = "true";
  build.on_started = [&](int process_group) { left = slots.Register(process_group, 0); };
  ASSERT_TRUE(runner->Run(build, nullptr).ok());
  ASSERT_NE(left, nullptr);
  // The process died without unregistering (the handle outlives it here): nothing is sampled.
  EXPECT_TRUE(slots.RunningCosts().empty());
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

// The number of files under `dir` (the waiters of a slots directory).
int FilesIn(const std::string& dir) {
  std::error_code ec;
  int n = 0;
  for (auto it = std::filesystem::directory_iterator(dir, ec);
       !ec && it != std::filesystem::directory_iterator(); ++it) {
    ++n;
  }
  return n;
}

TEST(HostBuildSlotsTest, WaitingBuildsTakeTheSlotInTheirOrder) {
  testing::TempDir tmp("kbisect-build-slots");
  HostBuildSlots slots(tmp.Join("slots"), 1);
  std::unique_ptr<FileLock> held = slots.Acquire(1, nullptr);
  ASSERT_NE(held, nullptr);
  std::mutex mu;
  std::vector<int> served;
  std::vector<std::thread> threads;
  // Started in an order that is not theirs; a baseline's 0 goes first, the point farthest from
  // the middle last.
  for (int order : {700, 0, 1, 350}) {
    threads.emplace_back([&, order] {
      std::unique_ptr<FileLock> slot = slots.Acquire([] { return 1; }, nullptr, nullptr, order);
      ASSERT_NE(slot, nullptr);
      std::lock_guard<std::mutex> lock(mu);
      served.push_back(order);
    });
    // Each is waiting before the next starts, whatever the machine's speed.
    while (FilesIn(tmp.Join("slots/waiting")) < static_cast<int>(threads.size())) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  held.reset();
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(served, (std::vector<int>{0, 1, 350, 700}));
  EXPECT_EQ(FilesIn(tmp.Join("slots/waiting")), 0) << "each waiter removes its file";
}

TEST(HostBuildSlotsTest, EqualOrdersAreServedInTheOrderTheyStartedWaiting) {
  testing::TempDir tmp("kbisect-build-slots");
  HostBuildSlots slots(tmp.Join("slots"), 1);
  std::unique_ptr<FileLock> held = slots.Acquire(1, nullptr);
  std::mutex mu;
  std::vector<int> served;
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      std::unique_ptr<FileLock> slot = slots.Acquire([] { return 1; }, nullptr, nullptr, 5);
      std::lock_guard<std::mutex> lock(mu);
      served.push_back(i);
    });
    while (FilesIn(tmp.Join("slots/waiting")) < i + 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  held.reset();
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(served, (std::vector<int>{0, 1, 2}));
}

TEST(HostBuildSlotsTest, AWaiterThatIsGoneHoldsNobodyBack) {
  testing::TempDir tmp("kbisect-build-slots");
  HostBuildSlots slots(tmp.Join("slots"), 1);
  // A waiter of a process that died: its file is there, nobody holds its lock.
  std::filesystem::create_directories(tmp.Join("slots/waiting"));
  const std::string stale = tmp.Join("slots/waiting/0000000000-00000000000000000001-1-0");
  std::ofstream(stale).put('\n');
  std::unique_ptr<FileLock> slot = slots.Acquire([] { return 1; }, nullptr, nullptr, 900);
  EXPECT_NE(slot, nullptr);
  EXPECT_FALSE(std::filesystem::exists(stale));
}

TEST(HostBuildSlotsTest, WaitersAheadLeaveFreeSlotsToThoseBehind) {
  testing::TempDir tmp("kbisect-build-slots");
  HostBuildSlots slots(tmp.Join("slots"), 2);
  // One waiter ahead of this one, waiting for a limit of 1 that a held slot fills; with two
  // slots free this one may take the second.
  std::unique_ptr<FileLock> first = slots.Acquire(2, nullptr);
  std::atomic<int> limit{1};
  std::thread ahead([&] {
    std::unique_ptr<FileLock> slot =
        slots.Acquire([&] { return limit.load(); }, nullptr, nullptr, 0);
  });
  while (FilesIn(tmp.Join("slots/waiting")) < 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  limit = 3;  // Two slots free now, one waiter ahead: both get one.
  std::unique_ptr<FileLock> behind =
      slots.Acquire([&] { return limit.load(); }, nullptr, nullptr, 10);
  EXPECT_NE(behind, nullptr);
  ahead.join();
}

}  // namespace
}  // namespace kbisect
