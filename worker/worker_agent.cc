// Copyright 2026 The kbisect Authors.
#include "worker/worker_agent.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "common/rpc/proto_time.h"

namespace kbisect {
namespace {


constexpr absl::Duration kBusyPoll = absl::Seconds(1);
constexpr absl::Duration kRpcSlack = absl::Seconds(10);
constexpr int kReportAttempts = 20;

void SetDeadline(grpc::ClientContext* context, absl::Duration timeout) {
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::milliseconds(absl::ToInt64Milliseconds(timeout)));
}

}  // namespace

WorkerAgent::WorkerAgent(WorkerAgentOptions options, std::shared_ptr<grpc::Channel> channel,
                         TaskRunner* task_runner)
    : options_(std::move(options)),
      stub_(v1::WorkerService::NewStub(std::move(channel))),
      task_runner_(task_runner) {}

WorkerAgent::~WorkerAgent() {
  Stop();
  absl::MutexLock lock(&mu_);
  if (task_ != nullptr && task_->thread.joinable()) {
    task_->cancel.Cancel();
    mu_.Unlock();
    task_->thread.join();
    mu_.Lock();
  }
}

bool WorkerAgent::stopping() const {
  absl::MutexLock lock(&mu_);
  return stop_;
}

int WorkerAgent::tasks_reported() const {
  absl::MutexLock lock(&mu_);
  return tasks_reported_;
}

void WorkerAgent::Stop() {
  absl::MutexLock lock(&mu_);
  stop_ = true;
  if (task_ != nullptr) task_->cancel.Cancel();
  if (poll_context_ != nullptr) poll_context_->TryCancel();
  wake_.SignalAll();
}

void WorkerAgent::Drain() {
  absl::MutexLock lock(&mu_);
  drain_ = true;
  if (poll_context_ != nullptr) poll_context_->TryCancel();
}

void WorkerAgent::Backoff(absl::Duration* delay) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(&stop_), *delay);
  *delay = std::min(*delay * 2, options_.max_backoff);
}

bool WorkerAgent::OpenSession() {
  v1::OpenSessionRequest request;
  *request.mutable_identity() = options_.identity;
  request.set_worker_name(options_.name);
  {
    absl::MutexLock lock(&mu_);
    if (task_ != nullptr && !task_->finished) {
      v1::LeaseStatus* held = request.add_held_leases();
      held->set_lease_id(task_->lease.lease_id());
      held->set_attempt(task_->lease.attempt());
    }
  }
  grpc::ClientContext context;
  SetDeadline(&context, kRpcSlack);
  v1::OpenSessionResponse response;
  grpc::Status status = stub_->OpenSession(&context, request, &response);
  if (!status.ok()) return false;
  absl::MutexLock lock(&mu_);
  session_id_ = response.session_id();
  return true;
}

void WorkerAgent::StartTask(const v1::Lease& lease) {
  task_ = std::make_unique<RunningTask>();
  task_->lease = lease;
  RunningTask* task = task_.get();
  task->thread = std::thread([this, task] {
    v1::TaskResult result = task_runner_->Run(
        task->lease.task(), &task->cancel,
        [this, task](v1::TaskPhase phase, int runs_done, int) {
          absl::MutexLock lock(&mu_);
          task->phase = phase;
          task->runs_done = runs_done;
        });
    absl::MutexLock lock(&mu_);
    task->result = std::move(result);
    task->finished = true;
    // Wake the heartbeat poll so the result is reported at once.
    if (poll_context_ != nullptr) poll_context_->TryCancel();
    wake_.SignalAll();
  });
}

void WorkerAgent::FinishTask() {
  std::unique_ptr<RunningTask> task;
  std::string session_id;
  {
    absl::MutexLock lock(&mu_);
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
    grpc::ClientContext context;
    SetDeadline(&context, absl::Seconds(2));
    v1::CompleteLeaseResponse response;
    (void)stub_->CompleteLease(&context, request, &response);
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
      absl::MutexLock lock(&mu_);
      request.set_session_id(session_id_);
    }
    grpc::ClientContext context;
    SetDeadline(&context, kRpcSlack);
    v1::CompleteLeaseResponse response;
    grpc::Status status = stub_->CompleteLease(&context, request, &response);
    if (status.ok()) {
      if (response.accepted()) {
        absl::MutexLock lock(&mu_);
        ++tasks_reported_;
      }
      return;  // Accepted, or rejected by fencing: either way the lease is settled.
    }
    if (status.error_code() == grpc::StatusCode::NOT_FOUND) {
      // The coordinator forgot the session (restart): reopen, then report again.
      if (!OpenSession()) Backoff(&delay);
      continue;
    }
    if (status.error_code() == grpc::StatusCode::PERMISSION_DENIED) return;
    if (stopping()) return;
    Backoff(&delay);
  }
}

void WorkerAgent::Run() {
  absl::Duration delay = options_.min_backoff;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stop_) break;
      if (drain_ && task_ == nullptr) break;
    }
    bool have_session;
    {
      absl::MutexLock lock(&mu_);
      have_session = !session_id_.empty();
    }
    if (!have_session) {
      if (!OpenSession()) {
        Backoff(&delay);
        continue;
      }
      delay = options_.min_backoff;
    }

    bool finished = false;
    v1::SynchronizeRequest request;
    grpc::ClientContext context;
    {
      absl::MutexLock lock(&mu_);
      finished = task_ != nullptr && task_->finished;
      if (!finished) {
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
        request.set_draining(drain_);
        const absl::Duration wait = task_ != nullptr ? kBusyPoll : options_.idle_poll;
        *request.mutable_wait() = ToProto(drain_ && task_ == nullptr ? absl::ZeroDuration() : wait);
        SetDeadline(&context, wait + kRpcSlack);
        poll_context_ = &context;
      }
    }
    if (finished) {
      FinishTask();
      continue;
    }
    v1::SynchronizeResponse response;
    grpc::Status status = stub_->Synchronize(&context, request, &response);
    {
      absl::MutexLock lock(&mu_);
      poll_context_ = nullptr;
    }
    if (!status.ok()) {
      if (status.error_code() == grpc::StatusCode::CANCELLED) continue;  // Woken locally.
      if (status.error_code() == grpc::StatusCode::NOT_FOUND) {
        absl::MutexLock lock(&mu_);
        session_id_.clear();
        continue;
      }
      Backoff(&delay);
      continue;
    }
    delay = options_.min_backoff;
    absl::MutexLock lock(&mu_);
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
  }
  // Leaving: kill and hand back any task, close the session.
  {
    absl::MutexLock lock(&mu_);
    if (task_ != nullptr) task_->cancel.Cancel();
  }
  FinishTask();
  std::string session_id;
  {
    absl::MutexLock lock(&mu_);
    session_id = session_id_;
  }
  if (!session_id.empty()) {
    v1::CloseSessionRequest request;
    request.set_session_id(session_id);
    request.set_reason("worker stopping");
    grpc::ClientContext context;
    SetDeadline(&context, absl::Seconds(2));
    v1::CloseSessionResponse response;
    (void)stub_->CloseSession(&context, request, &response);
  }
}

}  // namespace kbisect
