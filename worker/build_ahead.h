// Copyright 2026 The kbisect Authors.
//
// BuildAhead prepares, on a host's spare cores, the builds the coordinator expects its next
// probes to need (SynchronizeResponse.build_ahead), so that a probe handed out later finds its
// commit built in the host's build cache and runs only its benchmark. One per host: shared by
// the slots of `kbisect run` (cli/local_cluster.h), one per `kbisect-worker` process.
//
// Each slot's agent passes on the hint list of every Synchronize response (Update); the wanted
// builds are the union of every slot's latest list, taken round-robin by rank. Up to
// `max_builds` of them run at once, each on a background thread whose processes run at a lower
// priority (`nice`), through BuildCache::Acquire: the results are only the cache's entries, and a
// real probe that asks for a commit being built ahead waits for that build (BuildCache makes a
// second Acquire of one key wait) instead of starting another. A running build whose commit no
// slot hints any longer, and that no slot's running task uses, is cancelled: its process group
// is killed, like a cancelled probe's. A build that failed is not tried again while it stays
// hinted.
//
//   BuildAhead ahead(&cache, DefaultBuildAhead());
//   ahead.Update("host/slot0", hints_of_the_response, {sha_of_the_running_task});
#ifndef KBISECT_WORKER_BUILD_AHEAD_H_
#define KBISECT_WORKER_BUILD_AHEAD_H_

#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "common/exec/exec.h"
#include "common/sync/mutex.h"
#include "kbisect/v1/kbisect.pb.h"
#include "worker/build_cache.h"

namespace kbisect {

// The nice increment of build-ahead processes: they yield the CPU to benchmarks and to the
// builds of probes that are actually running.
inline constexpr int kBuildAheadNice = 10;

// The default `--build-ahead` for a host with `cores` CPU cores: max(0, cores / 2 - 1). Half the
// cores stay for the benchmarks and the probes' own builds, one more for the worker itself; a
// 2-core machine builds nothing ahead, an 8-core one 3, a 64-core GPU server 31. (Each build
// may itself run in parallel: lower it with `--build-ahead` for `make -j` builds.)
int DefaultBuildAhead(int cores);

// DefaultBuildAhead for this machine (std::thread::hardware_concurrency()).
int DefaultBuildAhead();

class BuildAhead {
 public:
  // What the builds ahead did so far, for operators and tests.
  struct Counts {
    int started = 0;       // Builds begun (Acquire called).
    int built = 0;         // Ended with the commit built (or found built) in the cache.
    int failed = 0;        // Ended with a failed build (not tried again while hinted).
    int cancelled = 0;     // Stopped because no slot hinted them any longer (or on destruction).
    int running = 0;       // Running now.
    int peak_running = 0;  // The most that ran at once.
  };

  // Builds through `cache` (which must outlive this object), at most `max_builds` at once; 0 or
  // less builds nothing (Update only records). `nice` is added to the build threads' priority.
  BuildAhead(BuildCache* cache, int max_builds, int nice = kBuildAheadNice);

  // Cancels the running builds (killing their processes) and joins the threads.
  ~BuildAhead();

  BuildAhead(const BuildAhead&) = delete;
  BuildAhead& operator=(const BuildAhead&) = delete;

  // The most builds run at once: what the agents announce (SynchronizeRequest.build_ahead_slots).
  int max_builds() const { return max_builds_; }

  // Replaces what `source` (one slot) wants: `hints` (tasks of kind PROBE_KIND_BUILD, most useful
  // first; others are ignored) and `in_use`, the commits its running task uses (a build of one
  // of them is never cancelled on this slot's account, nor started for it). Starts the builds
  // newly wanted (as threads free up) and cancels running ones nobody wants any longer.
  // Thread-safe.
  void Update(const std::string& source, const std::vector<v1::Task>& hints,
              const std::vector<std::string>& in_use);

  // Forgets `source` (its slot stopped), like Update with nothing.
  void Forget(const std::string& source) { Update(source, {}, {}); }

  Counts counts() const;

  // Waits until no build runs and none is waiting for a thread, for up to `timeout`; returns
  // whether that happened. For tests.
  bool WaitIdle(absl::Duration timeout) const;

 private:
  struct Running {
    std::string sha;
    Cancellation cancel;
  };

  // The wanted builds in order (round-robin over the sources by rank, first key wins), by key.
  std::vector<std::pair<std::string, const v1::Task*>> WantedLocked() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The first wanted build not running and not attempted, or null.
  const v1::Task* NextLocked(std::string* key) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Conditions: nothing runs or waits for a thread; stopping or a build waits for a thread.
  bool IdleLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool HasWorkLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Cancels running builds that are neither wanted nor in use; forgets attempts no longer wanted.
  void PruneLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A build thread: takes the next wanted build, runs it, repeats until stopped.
  void Loop();
  // Runs one build of `task` (a copy) through the cache.
  BuildStep Build(const v1::Task& task, const Cancellation* cancel);

  BuildCache* const cache_;
  const int max_builds_;
  const int nice_;

  mutable kbisect::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, std::vector<v1::Task>> hints_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::set<std::string>> in_use_ ABSL_GUARDED_BY(mu_);
  // Builds running now, by key.
  std::map<std::string, std::unique_ptr<Running>> running_ ABSL_GUARDED_BY(mu_);
  // Keys built or failed while wanted: not started again until they stop being wanted.
  std::set<std::string> attempted_ ABSL_GUARDED_BY(mu_);
  Counts counts_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_;
};

}  // namespace kbisect

#endif  // KBISECT_WORKER_BUILD_AHEAD_H_
