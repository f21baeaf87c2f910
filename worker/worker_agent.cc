// Copyright 2026 The kbisect Authors.
#include "worker/worker_agent.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "common/rpc/proto_time.h"
#include "worker/build_cache.h"
#include "worker/grpc_coordinator_client.h"

namespace kbisect {
namespace {

constexpr absl::Duration kBusyPoll = absl::Seconds(1);
constexpr absl::Duration kRpcSlack = absl::Seconds(10);
constexpr absl::Duration kGoodbyeTimeout = absl::Seconds(2);
constexpr int kReportAttempts = 20;

}  // namespace

WorkerAgent::WorkerAgent(WorkerAgentOptions options,
                         std::unique_ptr<CoordinatorClient> owned_client, CoordinatorClient* client,
                         TaskExecutor* executor)
    : options_(std::move(options)),
      owned_client_(std::move(owned_client)),
      client_(owned_client_ != nullptr ? owned_client_.get() : client),
      clock_(options_.clock),
      executor_(executor) {}

WorkerAgent::WorkerAgent(WorkerAgentOptions options, CoordinatorClient* client,
                         TaskExecutor* executor)
    : WorkerAgent(std::move(options), nullptr, client, executor) {}

WorkerAgent::WorkerAgent(WorkerAgentOptions options, std::shared_ptr<grpc::Channel> channel,
                         TaskExecutor* executor)
    : WorkerAgent(std::move(options), std::make_unique<GrpcCoordinatorClient>(std::move(channel)),
                  nullptr, executor) {}

WorkerAgent::~WorkerAgent() {
  Stop();
  kbisect::MutexLock lock(&mu_);
  if (task_ != nullptr && task_->thread.joinable()) {
    task_->cancel.Cancel();
    mu_.Unlock();
    task_->thread.join();
    mu_.Lock();
  }
}

bool WorkerAgent::stopping() const {
  kbisect::MutexLock lock(&mu_);
  return stop_;
}

absl::Status WorkerAgent::stop_reason() const {
  kbisect::MutexLock lock(&mu_);
  return stop_reason_;
}

int WorkerAgent::tasks_reported() const {
  kbisect::MutexLock lock(&mu_);
  return tasks_reported_;
}

void WorkerAgent::WakePollLocked() {
  if (polling_) client_->TryCancel();
}

void WorkerAgent::Stop() {
  kbisect::MutexLock lock(&mu_);
  stop_ = true;
  if (task_ != nullptr) task_->cancel.Cancel();
  // Whether or not a poll is running: a stop while the session opens, or between Run()'s check
  // and its next poll, must end that poll too (TryCancel keeps the cancel for the next call).
  client_->TryCancel();
  wake_.SignalAll();
}

void WorkerAgent::Drain() {
  kbisect::MutexLock lock(&mu_);
  drain_ = true;
  WakePollLocked();
}

void WorkerAgent::Backoff(absl::Duration* delay) {
  kbisect::MutexLock lock(&mu_);
  clock_->AwaitWithDeadline(&mu_, kbisect::Condition(&stop_), clock_->Now() + *delay);
  *delay = std::min(*delay * 2, options_.max_backoff);
}

bool WorkerAgent::OpenSession() {
  v1::OpenSessionRequest request;
  *request.mutable_identity() = options_.identity;
  request.set_worker_name(options_.name);
  if (const BuildCache* cache = executor_->build_cache(); cache != nullptr) {
    const auto [pool, slots] = cache->Pool();
    request.set_build_pool(pool);
    request.set_build_pool_slots(slots);
    request.set_build_store(cache->StoreName());
  }
  {
    kbisect::MutexLock lock(&mu_);
    if (task_ != nullptr && !task_->finished) {
      v1::LeaseStatus* held = request.add_held_leases();
      held->set_lease_id(task_->lease.lease_id());
      held->set_attempt(task_->lease.attempt());
    }
  }
  absl::StatusOr<v1::OpenSessionResponse> response = client_->OpenSession(request, kRpcSlack);
  if (!response.ok()) return false;
  kbisect::MutexLock lock(&mu_);
  session_id_ = response->session_id();
  return true;
}

void WorkerAgent::StartTask(const v1::Lease& lease) {
  task_ = std::make_unique<RunningTask>();
  task_->lease = lease;
  RunningTask* task = task_.get();
  task->thread = std::thread([this, task] {
    v1::TaskResult result = executor_->Run(
        task->lease.task(), &task->cancel, [this, task](v1::TaskPhase phase, int runs_done, int) {
          kbisect::MutexLock lock(&mu_);
          // A build measured: when the host now runs more (or fewer) builds at once, the
          // coordinator hears it now rather than after the benchmark (decision 190).
          if (phase == v1::TASK_PHASE_BENCH && task->phase != v1::TASK_PHASE_BENCH) {
            const BuildCache* cache = executor_->build_cache();
            if (cache != nullptr && cache->Pool().second != announced_slots_) WakePollLocked();
          }
          task->phase = phase;
          task->runs_done = runs_done;
        });
    kbisect::MutexLock lock(&mu_);
    task->result = std::move(result);
    task->finished = true;
    // Wake the heartbeat poll so the result is reported at once.
    WakePollLocked();
    wake_.SignalAll();
  });
}

void WorkerAgent::FinishTask() {
  std::unique_ptr<RunningTask> task;
  std::string session_id;
  {
    kbisect::MutexLock lock(&mu_);
    task = std::move(task_);
    session_id = session_id_;
  }
  if (task == nullptr) return;
  task->thread.join();
  if (task->cancelled_by_coordinator) return;  // The lease is dead; nothing to report.
  if (stopping() && task->result.outcome() == v1::TASK_OUTCOME_CANCELLED) {
    // Stopped locally: hand the lease back so the coordinator re-dispatches it now.
    v1::CompleteLeaseRequest request;
    request.set_session_id(session_id);
    request.set_lease_id(task->lease.lease_id());
    request.set_attempt(task->lease.attempt());
    request.mutable_result()->set_outcome(v1::TASK_OUTCOME_INFRA_ERROR);
    request.mutable_result()->set_message("the worker was stopped");
    (void)client_->CompleteLease(request, kGoodbyeTimeout);
    return;
  }
  v1::CompleteLeaseRequest request;
  request.set_lease_id(task->lease.lease_id());
  request.set_attempt(task->lease.attempt());
  *request.mutable_result() = std::move(task->result);
  // Every result names the hardware class that measured it.
  request.mutable_result()->set_hardware_class(options_.identity.hardware_class());
  absl::Duration delay = options_.min_backoff;
  for (int attempt = 0; attempt < kReportAttempts; ++attempt) {
    {
      kbisect::MutexLock lock(&mu_);
      request.set_session_id(session_id_);
    }
    absl::StatusOr<v1::CompleteLeaseResponse> response = client_->CompleteLease(request, kRpcSlack);
    if (response.ok()) {
      if (response->accepted()) {
        kbisect::MutexLock lock(&mu_);
        ++tasks_reported_;
      }
      return;  // Accepted, or rejected by fencing: either way the lease is settled.
    }
    if (absl::IsNotFound(response.status())) {
      // The coordinator forgot the session (restart): reopen, then report again.
      if (!OpenSession()) Backoff(&delay);
      continue;
    }
    if (absl::IsPermissionDenied(response.status()) ||
        absl::IsFailedPrecondition(response.status())) {
      return;  // Not this worker's lease (any more): nothing to report.
    }
    if (stopping()) return;
    Backoff(&delay);
  }
}

bool WorkerAgent::ShouldLeave() const {
  kbisect::MutexLock lock(&mu_);
  return stop_ || (drain_ && task_ == nullptr);
}

bool WorkerAgent::HasSession() const {
  kbisect::MutexLock lock(&mu_);
  return !session_id_.empty();
}

std::optional<WorkerAgent::SynchronizeCall> WorkerAgent::NextSynchronizeCall() {
  kbisect::MutexLock lock(&mu_);
  if (task_ != nullptr && task_->finished) return std::nullopt;
  SynchronizeCall call;
  v1::SynchronizeRequest& request = call.request;
  request.set_session_id(session_id_);
  if (task_ != nullptr) {
    v1::LeaseStatus* status = request.add_leases();
    status->set_lease_id(task_->lease.lease_id());
    status->set_attempt(task_->lease.attempt());
    status->set_phase(task_->phase);
    status->set_runs_done(task_->runs_done);
    status->set_runs_total(task_->lease.task().runs());
  }
  request.set_ready_for_work(task_ == nullptr && !drain_);
  if (options_.build_ahead != nullptr) {
    request.set_build_ahead_slots(options_.build_ahead->max_builds());
  }
  if (const BuildCache* cache = executor_->build_cache(); cache != nullptr) {
    announced_slots_ = cache->Pool().second;
    request.set_build_pool_slots(announced_slots_);
  }
  request.set_draining(drain_);
  const absl::Duration wait = task_ != nullptr ? kBusyPoll : options_.idle_poll;
  *request.mutable_wait() = ToProto(drain_ && task_ == nullptr ? absl::ZeroDuration() : wait);
  call.timeout = wait + kRpcSlack;
  polling_ = true;
  return call;
}

bool WorkerAgent::ContinueAfterSynchronizeError(const absl::Status& status, absl::Duration* delay) {
  if (absl::IsCancelled(status)) return true;  // Woken locally.
  if (absl::IsFailedPrecondition(status)) {
    // Another process took over this worker's name: taking it back would only make the two
    // steal each other's sessions (and leases) forever.
    kbisect::MutexLock lock(&mu_);
    stop_reason_ = status;
    stop_ = true;
    session_id_.clear();
    return false;
  }
  if (absl::IsNotFound(status)) {
    kbisect::MutexLock lock(&mu_);
    session_id_.clear();
    return true;
  }
  Backoff(delay);
  return true;
}

void WorkerAgent::FollowSynchronizeResponse(const v1::SynchronizeResponse& response) {
  std::vector<std::string> in_use;  // The commits the running task builds or uses.
  {
    kbisect::MutexLock lock(&mu_);
    for (const v1::LeaseCancellation& cancel : response.cancellations()) {
      if (task_ != nullptr && task_->lease.lease_id() == cancel.lease_id()) {
        task_->cancelled_by_coordinator = true;
        task_->cancel.Cancel();
      }
    }
    for (const v1::Lease& lease : response.assignments()) {
      if (task_ == nullptr && !stop_) StartTask(lease);
      // A second assignment while busy cannot happen (the worker only asks when idle); if it
      // did, not reporting it makes the coordinator re-dispatch it.
    }
    if (task_ != nullptr && !task_->cancelled_by_coordinator) {
      in_use.push_back(task_->lease.task().commit_sha());
      const std::string& paired = task_->lease.task().paired_commit_sha();
      if (!paired.empty()) in_use.push_back(paired);
    }
  }
  if (options_.build_ahead != nullptr) {
    options_.build_ahead->Update(
        options_.name,
        std::vector<v1::Task>(response.build_ahead().begin(), response.build_ahead().end()),
        in_use);
  }
}

void WorkerAgent::Leave() {
  if (options_.build_ahead != nullptr) options_.build_ahead->Forget(options_.name);
  {
    kbisect::MutexLock lock(&mu_);
    if (task_ != nullptr) task_->cancel.Cancel();
  }
  FinishTask();
  std::string session_id;
  {
    kbisect::MutexLock lock(&mu_);
    session_id = session_id_;
  }
  if (!session_id.empty()) {
    v1::CloseSessionRequest request;
    request.set_session_id(session_id);
    request.set_reason("worker stopping");
    (void)client_->CloseSession(request, kGoodbyeTimeout);
  }
}

void WorkerAgent::Run() {
  absl::Duration delay = options_.min_backoff;
  while (!ShouldLeave()) {
    if (!HasSession()) {
      if (!OpenSession()) {
        Backoff(&delay);
        continue;
      }
      delay = options_.min_backoff;
    }
    std::optional<SynchronizeCall> call = NextSynchronizeCall();
    if (!call.has_value()) {  // The task finished: report it before asking for more.
      FinishTask();
      continue;
    }
    absl::StatusOr<v1::SynchronizeResponse> response =
        client_->Synchronize(call->request, call->timeout);
    {
      kbisect::MutexLock lock(&mu_);
      polling_ = false;
    }
    if (!response.ok()) {
      if (!ContinueAfterSynchronizeError(response.status(), &delay)) break;
      continue;
    }
    delay = options_.min_backoff;
    FollowSynchronizeResponse(*response);
  }
  Leave();
}

}  // namespace kbisect
