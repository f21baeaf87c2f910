// Copyright 2026 The kbisect Authors.
//
// What a running process group costs the host so far, read from /proc: a build is measured
// while it runs, not only when it is reaped (worker/build_slots.h).
//
//   const ProcessGroupUsage usage = SampleProcessGroup(pgid);
//   if (usage.members == 0) { /* the group is gone */ }
#ifndef KBISECT_COMMON_EXEC_PROCESS_GROUP_USAGE_H_
#define KBISECT_COMMON_EXEC_PROCESS_GROUP_USAGE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace kbisect {

struct ProcessGroupUsage {
  // The processes whose process group is the one sampled (zombies included).
  int members = 0;
  // Of them, those that are not zombies (state Z or X): a killed grandchild that nobody reaps
  // lingers as a zombie where PID 1 does not reap orphans (some containers).
  int live = 0;
  // Of them, those running or runnable at the sample (state R), or in an uninterruptible wait
  // (state D: heavy local I/O, which loads the host too).
  int running = 0;
  // The CPU time (user + system) the members used, with that of the children they reaped: what
  // the group has cost so far, except for children whose parent left the group or died.
  absl::Duration cpu = absl::ZeroDuration();
  // The group leader's start time (/proc/<pid>/stat's starttime, in clock ticks since boot); 0
  // when the leader is gone. With the group id it names one process for good: a group id that
  // a later process reuses has another start time.
  uint64_t leader_start_ticks = 0;
};

// Adds one /proc/<pid>/stat line to `usage` when its process group is `process_group`. Lines
// that cannot be parsed are skipped. Pure (exposed for tests).
void AddStatLine(absl::string_view stat, int process_group, long ticks_per_second,
                 ProcessGroupUsage* usage);

// Reads /proc/<pid>/stat of every process once and sums the members of each of `groups`, by
// group id (a group with no member left maps to a zero ProcessGroupUsage).
std::map<int, ProcessGroupUsage> SampleProcessGroups(const std::vector<int>& groups);

// The start time of process `pid` (/proc/<pid>/stat's starttime, in clock ticks since boot);
// 0 when there is no such process.
uint64_t ProcessStartTicks(int pid);

// Reads /proc/<pid>/stat of every process and sums the members of `process_group`. A group with
// no member left has `members` 0. Costs one directory scan of /proc: call it at most a few times
// a second.
ProcessGroupUsage SampleProcessGroup(int process_group);

}  // namespace kbisect

#endif  // KBISECT_COMMON_EXEC_PROCESS_GROUP_USAGE_H_
