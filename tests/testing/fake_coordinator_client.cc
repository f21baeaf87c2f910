// Copyright 2026 The kbisect Authors.
#include "tests/testing/fake_coordinator_client.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace kbisect {

template <typename Request, typename Response, typename Fallback>
absl::StatusOr<Response> FakeCoordinatorClient::Answer(Script<Request, Response>* script,
                                                       const Request& request, Fallback fallback) {
  script->requests.push_back(request);
  if (script->answers.empty()) return fallback();
  absl::StatusOr<Response> answer = std::move(script->answers.front());
  script->answers.pop_front();
  return answer;
}

void FakeCoordinatorClient::AddOpenSessionAnswer(absl::StatusOr<v1::OpenSessionResponse> answer) {
  kbisect::MutexLock lock(&mu_);
  open_session_.answers.push_back(std::move(answer));
}

void FakeCoordinatorClient::AddSynchronizeAnswer(absl::StatusOr<v1::SynchronizeResponse> answer) {
  kbisect::MutexLock lock(&mu_);
  synchronize_.answers.push_back(std::move(answer));
}

void FakeCoordinatorClient::AddCompleteLeaseAnswer(
    absl::StatusOr<v1::CompleteLeaseResponse> answer) {
  kbisect::MutexLock lock(&mu_);
  complete_lease_.answers.push_back(std::move(answer));
}

void FakeCoordinatorClient::Shutdown() {
  kbisect::MutexLock lock(&mu_);
  shutdown_ = true;
}

void FakeCoordinatorClient::HoldOpenSession() {
  kbisect::MutexLock lock(&mu_);
  hold_open_session_ = true;
}

void FakeCoordinatorClient::ReleaseOpenSession() {
  kbisect::MutexLock lock(&mu_);
  hold_open_session_ = false;
}

absl::StatusOr<v1::OpenSessionResponse> FakeCoordinatorClient::OpenSession(
    const v1::OpenSessionRequest& request, absl::Duration timeout) {
  kbisect::MutexLock lock(&mu_);
  ++held_open_sessions_;
  mu_.Await(kbisect::Condition(
      +[](FakeCoordinatorClient* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) {
        return self->shutdown_ || !self->hold_open_session_;
      },
      this));
  --held_open_sessions_;
  // Counted here, under the lock, rather than in the fallback (which -Wthread-safety cannot see
  // runs under it): a default answer is given exactly when no scripted one is queued.
  if (open_session_.answers.empty()) ++sessions_opened_;
  const int session = sessions_opened_;
  return Answer(&open_session_, request, [&request, session] {
    v1::OpenSessionResponse response;
    response.set_session_id(absl::StrCat("session-", session));
    response.set_worker_id(request.worker_name());
    return response;
  });
}

absl::StatusOr<v1::SynchronizeResponse> FakeCoordinatorClient::Synchronize(
    const v1::SynchronizeRequest& request, absl::Duration timeout) {
  kbisect::MutexLock lock(&mu_);
  synchronize_.requests.push_back(request);  // Answered below, once there is an answer.
  ++blocked_polls_;
  mu_.Await(kbisect::Condition(
      // Conditions run with mu_ held; the annotation lets -Wthread-safety check the body.
      +[](FakeCoordinatorClient* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) {
        return self->shutdown_ || self->cancel_pending_ || !self->synchronize_.answers.empty();
      },
      this));
  --blocked_polls_;
  if (shutdown_) return absl::UnavailableError("the fake coordinator was shut down");
  if (cancel_pending_) {
    cancel_pending_ = false;
    ++cancelled_polls_;
    return absl::CancelledError("cancelled by TryCancel");
  }
  absl::StatusOr<v1::SynchronizeResponse> answer = std::move(synchronize_.answers.front());
  synchronize_.answers.pop_front();
  return answer;
}

absl::StatusOr<v1::CompleteLeaseResponse> FakeCoordinatorClient::CompleteLease(
    const v1::CompleteLeaseRequest& request, absl::Duration timeout) {
  kbisect::MutexLock lock(&mu_);
  return Answer(&complete_lease_, request, [] {
    v1::CompleteLeaseResponse response;
    response.set_accepted(true);
    return response;
  });
}

absl::StatusOr<v1::CloseSessionResponse> FakeCoordinatorClient::CloseSession(
    const v1::CloseSessionRequest& request, absl::Duration timeout) {
  kbisect::MutexLock lock(&mu_);
  return Answer(&close_session_, request, [] { return v1::CloseSessionResponse(); });
}

void FakeCoordinatorClient::TryCancel() {
  kbisect::MutexLock lock(&mu_);
  cancel_pending_ = true;
}

std::vector<v1::OpenSessionRequest> FakeCoordinatorClient::open_session_requests() const {
  kbisect::MutexLock lock(&mu_);
  return open_session_.requests;
}

std::vector<v1::SynchronizeRequest> FakeCoordinatorClient::synchronize_requests() const {
  kbisect::MutexLock lock(&mu_);
  return synchronize_.requests;
}

std::vector<v1::CompleteLeaseRequest> FakeCoordinatorClient::complete_lease_requests() const {
  kbisect::MutexLock lock(&mu_);
  return complete_lease_.requests;
}

std::vector<v1::CloseSessionRequest> FakeCoordinatorClient::close_session_requests() const {
  kbisect::MutexLock lock(&mu_);
  return close_session_.requests;
}

int FakeCoordinatorClient::calls(Rpc rpc) const {
  kbisect::MutexLock lock(&mu_);
  return CallsLocked(rpc);
}

int FakeCoordinatorClient::CallsLocked(Rpc rpc) const {
  switch (rpc) {
    case kOpenSession:
      return static_cast<int>(open_session_.requests.size());
    case kSynchronize:
      return static_cast<int>(synchronize_.requests.size());
    case kCompleteLease:
      return static_cast<int>(complete_lease_.requests.size());
    case kCloseSession:
      return static_cast<int>(close_session_.requests.size());
  }
  return 0;
}

int FakeCoordinatorClient::cancelled_polls() const {
  kbisect::MutexLock lock(&mu_);
  return cancelled_polls_;
}

bool FakeCoordinatorClient::WaitForCalls(Rpc rpc, int n, absl::Duration real_timeout) const {
  struct Enough {
    const FakeCoordinatorClient* self;
    Rpc rpc;
    int n;
  } enough{this, rpc, n};
  kbisect::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(kbisect::Condition(
                                  +[](Enough* e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(e->self->mu_) {
                                    return e->self->CallsLocked(e->rpc) >= e->n;
                                  },
                                  &enough),
                              real_timeout);
}

bool FakeCoordinatorClient::WaitForBlockedPoll(absl::Duration real_timeout) const {
  kbisect::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(
      kbisect::Condition(
          +[](const FakeCoordinatorClient* self)
               ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) { return self->blocked_polls_ > 0; },
          this),
      real_timeout);
}

bool FakeCoordinatorClient::WaitForHeldOpenSession(absl::Duration real_timeout) const {
  kbisect::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(
      kbisect::Condition(
          +[](const FakeCoordinatorClient* self)
               ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) { return self->held_open_sessions_ > 0; },
          this),
      real_timeout);
}

}  // namespace kbisect
