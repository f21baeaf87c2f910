// Copyright 2026 The kbisect Authors.
//
// How many builds a host runs at once. The GPUs are a job's parallel resource; the host's cores
// are not: seven slots of a 2-core host that each start `make -j2` share two cores, and every
// build takes seven times as long. So builds take one of the host's build slots first, and the
// number of slots follows from the cores and what a build costs, learned from the builds the
// host has made (their CPU time over their wall time: the cores one build keeps busy).
// Benchmarks take no build slot: they still run on every GPU at once.
//
// The slots are flock(2) files under one directory, shared by every slot thread and worker
// process using the same cache directory:
//
//   HostBuildSlots slots(cache_dir + "/build-slots", HostCores());
//   const int limit = ConcurrentBuildLimit(slots.cores(), recent_cores_per_build);
//   std::unique_ptr<FileLock> slot = slots.Acquire(limit, &cancel);
//   if (slot == nullptr) return Cancelled();
//   RunTheBuild();  // The slot is free again when `slot` is destroyed.
#ifndef KBISECT_WORKER_BUILD_SLOTS_H_
#define KBISECT_WORKER_BUILD_SLOTS_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "common/build/build_cost.h"
#include "common/clock/clock.h"
#include "common/exec/exec.h"
#include "common/exec/process_group_sampler.h"
#include "common/exec/process_group_usage.h"
#include "common/git/file_lock.h"
#include "common/sync/mutex.h"

namespace kbisect {

// The cores this process may run on (its CPU affinity), at least 1.
int HostCores();

// The host's build slots: `limit` flock(2) files slot-0 ... slot-(limit-1) in a directory.
// Thread-safe, and shared with other processes using the same directory.
class HostBuildSlots {
 public:
  // Slots live under `dir` (created when first needed); `cores` is what ConcurrentBuildLimit is
  // given (HostCores() by default, a smaller number to leave cores to other work). `clock`
  // paces the waiting and must outlive this object.
  HostBuildSlots(std::string dir, int cores, Clock* clock = Clock::Real());

  int cores() const { return cores_; }

  // Waits until one of the first `limit` slots is free and returns it held, or returns null when
  // `cancel` (may be null) is set first or the slot files cannot be created. The waiting time is
  // added to `*waited` when it is not null.
  std::unique_ptr<FileLock> Acquire(int limit, const Cancellation* cancel,
                                    absl::Duration* waited = nullptr);

  // The same with the limit asked again at every look: a build that finishes while this one
  // waits may change it (its cost is recorded). Waiting builds take the free slots in `order`
  // (Task.build_order: lower first; equal orders in the order they started waiting): a build
  // takes a free slot only while fewer builds that come before it wait than slots are free.
  // The waiters are files under `<dir>/waiting`, each flock(2)ed by its waiter, so a waiter of
  // a process that died holds nobody back (its file is removed by the next look).
  std::unique_ptr<FileLock> Acquire(const std::function<int()>& limit, const Cancellation* cancel,
                                    absl::Duration* waited = nullptr, int order = 0);

  // The number of the first `limit` slots that other builds hold now (the caller's own slot,
  // held through another file description, counts too: subtract it). A build that shared the
  // cores with others may have used fewer of them than it would alone: its measured cores are
  // scaled by the builds it overlapped (BuildCost::overlapping), up to its processes that asked
  // for a core (BuildCost::runnable).
  int Held(int limit) const;

  // A build registered as running (Register) until this is destroyed.
  class RunningBuild {
   public:
    explicit RunningBuild(std::string path) : path_(std::move(path)) {}
    ~RunningBuild();
    RunningBuild(const RunningBuild&) = delete;
    RunningBuild& operator=(const RunningBuild&) = delete;

   private:
    const std::string path_;
  };

  // Registers the build whose process group is `process_group`, started now and asking for
  // `requested_jobs` (RequestedBuildJobs), as a file `<dir>/running/<group>` (written under a
  // temporary name and renamed: readers see all of it or nothing) that also holds the leader's
  // start time, so that the builds waiting for a slot in any process can measure it while it
  // runs. Null when the file cannot be written (the build is then only measured when it ends).
  std::unique_ptr<RunningBuild> Register(int process_group, int requested_jobs);

  // The registered builds, each as its cost so far (CoresPerBuildWhileRunning's input), from one
  // pass over /proc (reused for kRunningSampleReuse: every waiter looks every 50 ms), with the
  // median of its runnable processes over the passes made while it ran (BuildCost::runnable). A
  // registration whose group leader is gone, or is another process than the one registered (a
  // reused group id), is skipped and its file removed: its build ended without unregistering.
  std::vector<BuildCost> RunningCosts() const;

 private:
  const std::string dir_;
  const int cores_;
  Clock* const clock_;
  // The latest pass over /proc, by group id, and when it was made.
  mutable kbisect::Mutex sample_mu_;
  mutable std::map<int, ProcessGroupUsage> sampled_ ABSL_GUARDED_BY(sample_mu_);
  mutable absl::Time sampled_at_ ABSL_GUARDED_BY(sample_mu_) = absl::InfinitePast();
  // Every pass's runnable processes of each registered build, by group id and its leader's start
  // time (BuildCost::runnable of RunningCosts).
  mutable std::map<std::pair<int, uint64_t>, RunnableTally> runnable_ ABSL_GUARDED_BY(sample_mu_);
};

}  // namespace kbisect

#endif  // KBISECT_WORKER_BUILD_SLOTS_H_
