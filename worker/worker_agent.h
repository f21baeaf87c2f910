// Copyright 2026 The kbisect Authors.
//
// WorkerAgent is the loop of one worker slot: it opens a session with the coordinator carrying
// its runner identity, then Synchronizes (heartbeat + work pickup, long poll), runs each leased
// task with a TaskExecutor (a TaskRunner, or a Slurm job per task) on a task thread, reports the
// result on the lease, and obeys cancellations at once by killing the task's processes. It
// reconnects with backoff when the coordinator goes away and reopens its session when the
// coordinator forgot it.
//
// It talks to the coordinator through a CoordinatorClient (worker/coordinator_client.h) and reads
// time and waits through a Clock (common/clock/clock.h), so that its tests can script the
// coordinator and drive the backoff on a FakeClock.
#ifndef KBISECT_WORKER_WORKER_AGENT_H_
#define KBISECT_WORKER_WORKER_AGENT_H_

#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/clock/clock.h"
#include "common/exec/exec.h"
#include "common/sync/mutex.h"
#include "grpcpp/channel.h"
#include "kbisect/v1/kbisect.pb.h"
#include "worker/build_ahead.h"
#include "worker/coordinator_client.h"
#include "worker/task_executor.h"

namespace kbisect {

struct WorkerAgentOptions {
  // Stable worker name (e.g. "host/gpu0"); the coordinator keys the worker by it.
  std::string name;
  v1::RunnerIdentity identity;
  // How long an idle worker's Synchronize long poll lasts.
  absl::Duration idle_poll = absl::Seconds(5);
  // Reconnect backoff bounds: the first retry waits min_backoff, each further one twice as long
  // as the one before, up to max_backoff.
  absl::Duration min_backoff = absl::Milliseconds(100);
  absl::Duration max_backoff = absl::Seconds(5);
  // Measures the backoff waits. Must outlive the agent.
  Clock* clock = Clock::Real();
  // The host's builds ahead (shared by its slots), or null for none. The agent announces its
  // max_builds() in every Synchronize and hands it each response's build_ahead hints together
  // with the commits of its running task. Must outlive the agent.
  BuildAhead* build_ahead = nullptr;
};

class WorkerAgent {
 public:
  // Talks to the coordinator through `client`. `client` and `executor` must outlive the
  // agent.
  WorkerAgent(WorkerAgentOptions options, CoordinatorClient* client, TaskExecutor* executor);

  // Talks to the coordinator over `channel` (with a GrpcCoordinatorClient the agent owns);
  // `executor` must outlive the agent.
  WorkerAgent(WorkerAgentOptions options, std::shared_ptr<grpc::Channel> channel,
              TaskExecutor* executor);
  ~WorkerAgent();

  WorkerAgent(const WorkerAgent&) = delete;
  WorkerAgent& operator=(const WorkerAgent&) = delete;

  // Runs the loop until Stop() (or Drain() and the current task is done). Blocking.
  void Run();

  // Stops now: the running task's processes are killed, the lease is handed back (the
  // coordinator re-dispatches it), the session is closed. Safe from any thread; idempotent.
  void Stop();

  // Stops taking work; the current task finishes and is reported, then Run returns.
  void Drain();

  // Number of tasks whose result the coordinator accepted.
  int tasks_reported() const;

  // Why Run returned by itself: FailedPrecondition when the coordinator said another process
  // took over this worker's name (the process should exit with it); OK otherwise.
  absl::Status stop_reason() const;

 private:
  struct RunningTask {
    v1::Lease lease;
    Cancellation cancel;
    std::thread thread;
    bool finished = false;  // Guarded by mu_.
    bool cancelled_by_coordinator = false;
    v1::TaskResult result;
    v1::TaskPhase phase = v1::TASK_PHASE_QUEUED;
    int runs_done = 0;
  };

  WorkerAgent(WorkerAgentOptions options, std::unique_ptr<CoordinatorClient> owned_client,
              CoordinatorClient* client, TaskExecutor* executor);

  // A Synchronize call ready to make: the request (the running task's progress, whether the
  // worker wants work, its build slots, the long poll's wait) and the RPC's deadline.
  struct SynchronizeCall {
    v1::SynchronizeRequest request;
    absl::Duration timeout;
  };

  // Run's steps, one loop turn: leave, or open a session, then report a finished task or make
  // one Synchronize call and follow its answer.
  // Whether Run should leave: Stop() was called, or Drain() and no task runs.
  bool ShouldLeave() const;
  // Whether the worker holds a session.
  bool HasSession() const;
  // The next Synchronize call, marking the poll in flight; nullopt when the running task has
  // finished and must be reported (FinishTask) first.
  std::optional<SynchronizeCall> NextSynchronizeCall();
  // Acts on a failed Synchronize: nothing when it was woken locally, the session dropped when
  // the coordinator does not know it, a backoff on `delay` for any other error. Returns false,
  // having stopped the worker with the status as its stop reason, when another process took over
  // the worker's name.
  bool ContinueAfterSynchronizeError(const absl::Status& status, absl::Duration* delay);
  // Follows Synchronize's answer: cancels the task the coordinator cancelled, starts an assigned
  // one when idle, and hands the builds ahead to the build-ahead pool with the commits the
  // running task uses.
  void FollowSynchronizeResponse(const v1::SynchronizeResponse& response);
  // Leaves: forgets the builds ahead, kills and hands back any task, and closes the session.
  void Leave();

  bool OpenSession();
  void StartTask(const v1::Lease& lease) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FinishTask();  // Joins the task thread and reports its result.
  void Backoff(absl::Duration* delay);
  bool stopping() const;
  // Wakes the Synchronize long poll, if one is in flight or about to start.
  void WakePollLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const WorkerAgentOptions options_;
  const std::unique_ptr<CoordinatorClient> owned_client_;  // Null when the caller owns it.
  CoordinatorClient* const client_;
  Clock* const clock_;
  TaskExecutor* const executor_;

  mutable kbisect::Mutex mu_;
  kbisect::CondVar wake_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool drain_ ABSL_GUARDED_BY(mu_) = false;
  std::string session_id_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<RunningTask> task_ ABSL_GUARDED_BY(mu_);
  // Between preparing a Synchronize request and its return: TryCancel() wakes it.
  bool polling_ ABSL_GUARDED_BY(mu_) = false;
  // The build pool slots the latest Synchronize announced.
  int announced_slots_ ABSL_GUARDED_BY(mu_) = 0;
  int tasks_reported_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status stop_reason_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kbisect

#endif  // KBISECT_WORKER_WORKER_AGENT_H_
