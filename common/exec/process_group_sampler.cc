// Copyright 2026 The kbisect Authors.
#include "common/exec/process_group_sampler.h"

#include <algorithm>

#include "common/exec/process_group_usage.h"

namespace kbisect {

void RunnableTally::Add(int runnable) {
  ++count_by_runnable_[std::max(0, runnable)];
  ++samples_;
}

std::optional<int> RunnableTally::Median(int fewest) const {
  if (samples_ < std::max(1, fewest)) return std::nullopt;
  // The sample at position samples_ / 2 (0-based) in sorted order: the upper of the two middle
  // ones for an even count.
  int below = 0;
  for (const auto& [runnable, count] : count_by_runnable_) {
    below += count;
    if (below > samples_ / 2) return runnable;
  }
  return count_by_runnable_.rbegin()->first;
}

ProcessGroupSampler::ProcessGroupSampler(int process_group, absl::Duration interval)
    : process_group_(process_group),
      interval_(interval),
      thread_([this] { SampleUntilStopped(); }) {}

ProcessGroupSampler::~ProcessGroupSampler() {
  stop_.Notify();
  thread_.join();
}

RunnableTally ProcessGroupSampler::Runnable() const {
  kbisect::MutexLock lock(&mu_);
  return tally_;
}

void ProcessGroupSampler::SampleUntilStopped() {
  while (!stop_.WaitForNotificationWithTimeout(interval_)) {
    const ProcessGroupUsage usage = SampleProcessGroup(process_group_);
    if (usage.live == 0) continue;  // Ended: nothing but zombies, or nothing at all.
    kbisect::MutexLock lock(&mu_);
    tally_.Add(usage.running);
  }
}

}  // namespace kbisect
