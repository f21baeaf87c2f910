// Copyright 2026 The kbisect Authors.
//
// Simulated workers for coordinator_scale_bench: N lightweight clients that speak the real
// worker protocol (OpenSession, the Synchronize long poll, CompleteLease) over real gRPC to a
// coordinator, and answer every lease at once with a synthetic result. They share a few
// channels (worker i uses channel i % channels, each its own TCP connection) and use gRPC's
// callback API, so 1,000 of them need a handful of client threads and file descriptors; the
// coordinator still sees 1,000 sessions, each with its own long poll.
//
// What a task measures is the caller's `measure` function, called on gRPC's callback threads
// (so it must be quick and thread-safe); coordinator_scale_bench gives a one-step metric.
//
//   SimulatedWorkers workers({.address = "127.0.0.1:4000", .workers = 1000, .channels = 10});
//   workers.Start();            // every session open and polling
//   ... submit jobs, wait ...
//   workers.Stop();             // no call in flight any more
//   SimulatedWorkers::Stats stats = workers.stats();
#ifndef KBISECT_BENCH_SIM_WORKERS_H_
#define KBISECT_BENCH_SIM_WORKERS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "common/sync/mutex.h"
#include "grpcpp/channel.h"
#include "kbisect/v1/kbisect.grpc.pb.h"

namespace kbisect_bench {

class SimulatedWorkers {
 public:
  struct Options {
    std::string address;  // host:port of the coordinator.
    int workers = 1000;
    int channels = 10;
    std::string hardware_class = "sim-class";
    // How long an idle worker's long poll may be held (the real worker's --idle-poll).
    absl::Duration idle_wait = absl::Seconds(5);
    // How long a task runs. Zero: its result is reported at once. Otherwise the worker
    // heartbeats its lease meanwhile like kbisect-worker (a Synchronize held open up to 1 s, or
    // until the task ends) and drops the task if the lease is cancelled.
    absl::Duration task_time = absl::ZeroDuration();
    // The result of a task.
    std::function<kbisect::v1::TaskResult(const kbisect::v1::Task&)> measure;
  };

  // What the workers saw, merged over all of them.
  struct Stats {
    // Synchronize -> lease, in ms: from the later of the Synchronize being sent and the lease
    // being created (its expire_time less the session's lease_duration, on the coordinator's
    // clock, which is this machine's) to the response arriving. So it is the coordinator's
    // latency in handing out a lease that exists to a worker that asked, not the time a worker
    // waited because no job had work for it.
    std::vector<double> dispatch_ms;
    // CompleteLease round trips, in ms (the result is committed before the answer leaves).
    std::vector<double> complete_ms;
    int64_t leases = 0;         // Assignments received.
    int64_t accepted = 0;       // Results accepted.
    int64_t rejected = 0;       // Results fenced (the lease was cancelled meanwhile).
    int64_t cancellations = 0;  // Lease cancellations received.
    int64_t dropped = 0;        // Tasks dropped on a cancellation while they ran.
    int64_t heartbeats = 0;     // Synchronize calls made while a task ran.
    int64_t sessions = 0;       // Sessions opened (reopened after NOT_FOUND counts again).
    int64_t errors = 0;         // Calls that failed before Stop (retried after 20 ms).
    std::map<std::string, int64_t> error_kinds;  // "Synchronize: UNAVAILABLE: ..." -> count.
  };

  explicit SimulatedWorkers(Options options);
  ~SimulatedWorkers();
  SimulatedWorkers(const SimulatedWorkers&) = delete;
  SimulatedWorkers& operator=(const SimulatedWorkers&) = delete;

  // Opens every session and starts each worker's Synchronize loop; returns once every worker
  // has sent its first ready Synchronize, or after `timeout` (false then).
  bool Start(absl::Duration timeout);

  // Stops issuing new calls; those in flight go on (e.g. before the coordinator is killed, so
  // their failures are not counted as errors).
  void StopIssuing() { stopping_.store(true); }

  // Stops issuing calls, cancels the outstanding long polls, and returns once no call is in
  // flight (or after `timeout`).
  void Stop(absl::Duration timeout);

  // Valid after Stop.
  Stats stats() const;

 private:
  class Worker;
  friend class Worker;

  // Runs `worker`'s next call after a short pause (after an error), off the gRPC threads.
  void Retry(Worker* worker);
  void RetryLoop();

  const Options options_;
  std::vector<std::shared_ptr<grpc::Channel>> channels_;
  std::vector<std::unique_ptr<kbisect::v1::WorkerService::Stub>> stubs_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> in_flight_{0};
  std::atomic<int> polling_{0};  // Workers that sent their first ready Synchronize.

  kbisect::Mutex retry_mu_;
  std::vector<std::pair<absl::Time, Worker*>> retries_ ABSL_GUARDED_BY(retry_mu_);
  bool retry_stop_ ABSL_GUARDED_BY(retry_mu_) = false;
  std::thread retry_thread_;
};

}  // namespace kbisect_bench

#endif  // KBISECT_BENCH_SIM_WORKERS_H_
