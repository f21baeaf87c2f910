// Copyright 2026 The kbisect Authors.
//
// Reading a process group's cost from /proc/<pid>/stat lines.
#include "common/exec/process_group_usage.h"

#include <unistd.h>

#include "gtest/gtest.h"

namespace kbisect {
namespace {

TEST(ProcessGroupUsageTest, SumsTheMembersCpuWithTheChildrenTheyReaped) {
  ProcessGroupUsage usage;
  // utime 30, stime 10, cutime 50, cstime 10 ticks at 100 a second: 1 s. A comm with spaces and
  // a parenthesis does not shift the fields.
  AddStatLine("4242 (make) (x) S 1 4242 4242 0 -1 4194560 100 0 0 0 30 10 50 10 20 0 1 0", 4242,
              100, &usage);
  AddStatLine("4243 (cc1) R 4242 4242 4242 0 -1 4194560 100 0 0 0 20 0 0 0 20 0 1 0", 4242, 100,
              &usage);
  // Another group, and a line cut short, are not counted.
  AddStatLine("4300 (sleep) S 1 4300 4300 0 -1 4194560 100 0 0 0 500 0 0 0 20 0 1 0", 4242, 100,
              &usage);
  AddStatLine("4244 (cut) R 4242 4242", 4242, 100, &usage);
  EXPECT_EQ(usage.members, 2);
  EXPECT_EQ(usage.running, 1);
  EXPECT_EQ(usage.cpu, absl::Seconds(1.2));
}

TEST(ProcessGroupUsageTest, SamplesThisProcesssOwnGroup) {
  const ProcessGroupUsage usage = SampleProcessGroup(getpgrp());
  EXPECT_GE(usage.members, 1);
  EXPECT_GE(usage.running, 1);  // This process, reading /proc.
  EXPECT_EQ(SampleProcessGroup(0).members, 0);
}

}  // namespace
}  // namespace kbisect
