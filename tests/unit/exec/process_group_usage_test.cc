// Copyright 2026 The kbisect Authors.
//
// Reading a process group's cost from /proc/<pid>/stat lines.
#include "common/exec/process_group_usage.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "common/exec/exec.h"
#include "common/exec/process_group_sampler.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

TEST(ProcessGroupUsageTest, SumsTheMembersCpuWithTheChildrenTheyReaped) {
  ProcessGroupUsage usage;
  // utime 30, stime 10, cutime 50, cstime 10 ticks at 100 a second: 1 s. A comm with spaces and
  // a parenthesis does not shift the fields.
  AddStatLine("4242 (make) (x) S 1 4242 4242 0 -1 4194560 100 0 0 0 30 10 50 10 20 0 1 0 777 0",
              4242, 100, &usage);
  AddStatLine("4243 (cc1) R 4242 4242 4242 0 -1 4194560 100 0 0 0 20 0 0 0 20 0 1 0 800 0", 4242,
              100, &usage);
  // A member in an uninterruptible wait (heavy I/O) loads the host too.
  AddStatLine("4245 (tar) D 4242 4242 4242 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 900 0", 4242,
              100, &usage);
  // Another group, and a line cut short, are not counted.
  AddStatLine("4300 (sleep) S 1 4300 4300 0 -1 4194560 100 0 0 0 500 0 0 0 20 0 1 0 1 0", 4242, 100,
              &usage);
  AddStatLine("4244 (cut) R 4242 4242", 4242, 100, &usage);
  EXPECT_EQ(usage.members, 3);
  EXPECT_EQ(usage.running, 2);
  EXPECT_EQ(usage.cpu, absl::Seconds(1.2));
  // The leader's start time names the group's leader for good.
  EXPECT_EQ(usage.leader_start_ticks, 777u);
}

TEST(ProcessGroupUsageTest, SamplesThisProcesssOwnGroup) {
  const ProcessGroupUsage usage = SampleProcessGroup(getpgrp());
  EXPECT_GE(usage.members, 1);
  EXPECT_GE(usage.running, 1);  // This process, reading /proc.
  EXPECT_EQ(SampleProcessGroup(0).members, 0);
  EXPECT_EQ(usage.leader_start_ticks, ProcessStartTicks(getpgrp()));
  EXPECT_GT(ProcessStartTicks(getpid()), 0u);
}

TEST(ProcessGroupUsageTest, SamplingWhileProcessesComeAndGoNeitherThrowsNorLosesTheGroup) {
  // A group whose members start and end all the time: a /proc/<pid>/stat that vanishes between
  // the scan and the read is skipped. (Read through a stream, such a file threw and killed
  // `kbisect run` once in run_test; this loop makes that race likelier, not certain.)
  std::unique_ptr<CommandRunner> runner = NewSubprocessRunner();
  ExecRequest churn;
  churn.shell_command = "while :; do /bin/true & /bin/true & /bin/true & wait; done";
  std::atomic<int> group{0};
  churn.on_started = [&](int process_group) { group = process_group; };
  Cancellation cancel;
  std::thread running([&] { (void)runner->Run(churn, &cancel); });
  for (int i = 0; i < 10000 && group == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (group == 0) {
    cancel.Cancel();
    running.join();
    FAIL() << "the command did not start within 10 s";
  }
  int seen = 0;
  for (int i = 0; i < 300; ++i) seen += SampleProcessGroup(group).members > 0 ? 1 : 0;
  cancel.Cancel();
  running.join();
  EXPECT_EQ(seen, 300);
}

// Runs `command` under a ProcessGroupSampler sampling every 20 ms until it has `samples` samples
// (or 60 s passed), and returns their median of runnable processes.
std::optional<int> MedianRunnableOf(const std::string& command, int samples) {
  std::unique_ptr<CommandRunner> runner = NewSubprocessRunner();
  ExecRequest request;
  request.shell_command = command;
  std::unique_ptr<ProcessGroupSampler> sampler;
  std::atomic<bool> started{false};
  request.on_started = [&](int process_group) {
    sampler = std::make_unique<ProcessGroupSampler>(process_group, absl::Milliseconds(20));
    started = true;
  };
  Cancellation cancel;
  std::thread running([&] { (void)runner->Run(request, &cancel); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (started && sampler->Runnable().samples() >= samples) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  cancel.Cancel();
  running.join();
  return started ? sampler->Runnable().Median() : std::nullopt;
}

TEST(ProcessGroupSamplerTest, CountsTheProcessesAskingForACoreWhetherOrNotTheyGetOne) {
  // Two busy loops ask for two cores however many the machine has free: both are runnable.
  const std::optional<double> two =
      MedianRunnableOf("sh -c 'while :; do :; done' & sh -c 'while :; do :; done' & wait", 10);
  ASSERT_TRUE(two.has_value());
  EXPECT_EQ(*two, 2) << "the waiting shell asks for none";
  // A group that sleeps asks for none.
  const std::optional<int> none = MedianRunnableOf("sleep 30", 10);
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(*none, 0);
}

TEST(ProcessGroupSamplerTest, SaysNothingBeforeItHasSampledEnough) {
  ProcessGroupSampler sampler(getpgrp(), absl::Hours(1));
  EXPECT_FALSE(sampler.Runnable().Median().has_value());
}

TEST(RunnableTallyTest, IsTheUpperMedianSoThatAnOddSampleDoesNotMoveIt) {
  RunnableTally one_compile;
  for (int runnable : {1, 1, 2, 1, 0, 1, 1}) one_compile.Add(runnable);
  EXPECT_EQ(one_compile.Median(), 1) << "an assembler or a shell caught once";
  RunnableTally half_parallel;
  for (int runnable : {2, 1, 2, 1}) half_parallel.Add(runnable);
  EXPECT_EQ(half_parallel.Median(), 2) << "the upper of the two middle samples";
  RunnableTally short_build;
  short_build.Add(1);
  short_build.Add(1);
  EXPECT_FALSE(short_build.Median().has_value());
  EXPECT_EQ(short_build.Median(2), 1);
}

}  // namespace
}  // namespace kbisect
