// Copyright 2026 The kbisect Authors.
//
// How many processes of a running process group ask for a core, usually, while it runs: the
// parallelism a build would use alone, which its CPU time over its wall time does not show when
// it shared the cores (common/build/build_cost.h, BuildCost::runnable).
//
//   std::unique_ptr<ProcessGroupSampler> sampler;
//   request.on_started = [&](int group) { sampler = std::make_unique<ProcessGroupSampler>(group);
//   };
//   ... run the command ...
//   const std::optional<int> runnable = sampler->Runnable().Median();
#ifndef KBISECT_COMMON_EXEC_PROCESS_GROUP_SAMPLER_H_
#define KBISECT_COMMON_EXEC_PROCESS_GROUP_SAMPLER_H_

#include <map>
#include <optional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "common/sync/mutex.h"
#include "common/sync/notification.h"

namespace kbisect {

// The time between two samples of a ProcessGroupSampler, and the samples a median needs: a
// build shorter than about 0.6 s is not sampled enough to say.
inline constexpr absl::Duration kProcessGroupSampleInterval = absl::Milliseconds(200);
inline constexpr int kFewestProcessGroupSamples = 3;

// Samples of one process group, each the number of its processes that were running or waiting
// for a core (ProcessGroupUsage::running). A value type.
class RunnableTally {
 public:
  void Add(int runnable);
  int samples() const { return samples_; }
  // The upper median of the samples: the group's usual parallelism, which a sample that caught
  // a short-lived second process (a compiler's assembler, a shell between two commands) does not
  // move. nullopt with fewer than `fewest` samples.
  std::optional<int> Median(int fewest = kFewestProcessGroupSamples) const;

 private:
  std::map<int, int> count_by_runnable_;
  int samples_ = 0;
};

// Samples one process group every `interval`, on a thread of its own, from its construction to
// its destruction. A sample that finds none of the group's processes alive (it has ended) is not
// counted. One sample reads /proc/<pid>/stat of every process once. A process's other threads are
// not seen: a multithreaded compiler counts as one process. Thread-safe.
class ProcessGroupSampler {
 public:
  explicit ProcessGroupSampler(int process_group,
                               absl::Duration interval = kProcessGroupSampleInterval);
  // Stops sampling and waits for the sampling thread.
  ~ProcessGroupSampler();
  ProcessGroupSampler(const ProcessGroupSampler&) = delete;
  ProcessGroupSampler& operator=(const ProcessGroupSampler&) = delete;

  // The samples so far.
  RunnableTally Runnable() const;

 private:
  void SampleUntilStopped();

  const int process_group_;
  const absl::Duration interval_;
  Notification stop_;
  mutable kbisect::Mutex mu_;
  RunnableTally tally_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;  // Last: started once every other member is.
};

}  // namespace kbisect

#endif  // KBISECT_COMMON_EXEC_PROCESS_GROUP_SAMPLER_H_
