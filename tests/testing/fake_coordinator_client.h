// Copyright 2026 The kbisect Authors.
//
// A scripted CoordinatorClient for tests of the worker agent: no server, no sockets, no time.
//
//   FakeCoordinatorClient coordinator;
//   coordinator.AddOpenSessionAnswer(absl::UnavailableError("connection refused"));
//   coordinator.AddSynchronizeAnswer(response_with_an_assignment);
//   WorkerAgent agent(options, &coordinator, &task_runner);
//   ... run the agent on a thread ...
//   ASSERT_TRUE(coordinator.WaitForCalls(FakeCoordinatorClient::kCompleteLease, 1));
//   EXPECT_EQ(coordinator.complete_lease_requests()[0].lease_id(), "lease-1");
//
// Each RPC answers from its own queue of scripted answers, oldest first. With its queue empty:
//   * OpenSession succeeds with session id "session-N", N counting those default answers from 1;
//   * Synchronize blocks until an answer is added (it returns that one) or TryCancel() is called
//     (it returns CANCELLED), like a long poll with nothing to say that never times out;
//   * CompleteLease succeeds with accepted = true;
//   * CloseSession succeeds.
#ifndef KBISECT_TESTS_TESTING_FAKE_COORDINATOR_CLIENT_H_
#define KBISECT_TESTS_TESTING_FAKE_COORDINATOR_CLIENT_H_

#include <deque>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/sync/mutex.h"
#include "kbisect/v1/kbisect.pb.h"
#include "worker/coordinator_client.h"

namespace kbisect {

// Records every call and its request. Thread-safe; the agent's threads and the test's may call
// any method concurrently.
class FakeCoordinatorClient : public CoordinatorClient {
 public:
  enum Rpc { kOpenSession, kSynchronize, kCompleteLease, kCloseSession };

  FakeCoordinatorClient() = default;
  FakeCoordinatorClient(const FakeCoordinatorClient&) = delete;
  FakeCoordinatorClient& operator=(const FakeCoordinatorClient&) = delete;

  // Queue the answer to a future call of each RPC.
  void AddOpenSessionAnswer(absl::StatusOr<v1::OpenSessionResponse> answer)
      ABSL_LOCKS_EXCLUDED(mu_);
  void AddSynchronizeAnswer(absl::StatusOr<v1::SynchronizeResponse> answer)
      ABSL_LOCKS_EXCLUDED(mu_);
  void AddCompleteLeaseAnswer(absl::StatusOr<v1::CompleteLeaseResponse> answer)
      ABSL_LOCKS_EXCLUDED(mu_);

  // While held, OpenSession calls block (a session being opened); Release lets them answer.
  void HoldOpenSession() ABSL_LOCKS_EXCLUDED(mu_);
  void ReleaseOpenSession() ABSL_LOCKS_EXCLUDED(mu_);

  // From now on every Synchronize, blocked or new, returns UNAVAILABLE at once. For tearing down
  // a test whose agent did not stop.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

  absl::StatusOr<v1::OpenSessionResponse> OpenSession(const v1::OpenSessionRequest& request,
                                                      absl::Duration timeout) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<v1::SynchronizeResponse> Synchronize(const v1::SynchronizeRequest& request,
                                                      absl::Duration timeout) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<v1::CompleteLeaseResponse> CompleteLease(const v1::CompleteLeaseRequest& request,
                                                          absl::Duration timeout) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<v1::CloseSessionResponse> CloseSession(const v1::CloseSessionRequest& request,
                                                        absl::Duration timeout) override
      ABSL_LOCKS_EXCLUDED(mu_);
  // Cancels the blocked Synchronize call, or the next one when none is blocked (see
  // CoordinatorClient::TryCancel).
  void TryCancel() override ABSL_LOCKS_EXCLUDED(mu_);

  // The requests of every call so far, oldest first.
  std::vector<v1::OpenSessionRequest> open_session_requests() const ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<v1::SynchronizeRequest> synchronize_requests() const ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<v1::CompleteLeaseRequest> complete_lease_requests() const ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<v1::CloseSessionRequest> close_session_requests() const ABSL_LOCKS_EXCLUDED(mu_);

  // The number of calls of `rpc` so far (counted when the call starts).
  int calls(Rpc rpc) const ABSL_LOCKS_EXCLUDED(mu_);

  // The number of Synchronize calls that returned CANCELLED because of TryCancel().
  int cancelled_polls() const ABSL_LOCKS_EXCLUDED(mu_);

  // Blocks until `rpc` has been called at least `n` times, or `real_timeout` has passed (a bound
  // for a failing test). Returns whether the calls were made.
  bool WaitForCalls(Rpc rpc, int n, absl::Duration real_timeout = absl::Seconds(10)) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // Blocks until a Synchronize call is blocked waiting for an answer, or `real_timeout` has
  // passed. Returns whether one is.
  bool WaitForBlockedPoll(absl::Duration real_timeout = absl::Seconds(10)) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // Blocks until an OpenSession call is held (HoldOpenSession), or `real_timeout` has passed.
  // Returns whether one is.
  bool WaitForHeldOpenSession(absl::Duration real_timeout = absl::Seconds(10)) const
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // One RPC's scripted answers and recorded requests.
  template <typename Request, typename Response>
  struct Script {
    std::deque<absl::StatusOr<Response>> answers;
    std::vector<Request> requests;
  };

  // Records `request` in `script` and returns its next scripted answer, or `fallback()` when
  // there is none.
  template <typename Request, typename Response, typename Fallback>
  static absl::StatusOr<Response> Answer(Script<Request, Response>* script, const Request& request,
                                         Fallback fallback);

  int CallsLocked(Rpc rpc) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable kbisect::Mutex mu_;
  Script<v1::OpenSessionRequest, v1::OpenSessionResponse> open_session_ ABSL_GUARDED_BY(mu_);
  Script<v1::SynchronizeRequest, v1::SynchronizeResponse> synchronize_ ABSL_GUARDED_BY(mu_);
  Script<v1::CompleteLeaseRequest, v1::CompleteLeaseResponse> complete_lease_ ABSL_GUARDED_BY(mu_);
  Script<v1::CloseSessionRequest, v1::CloseSessionResponse> close_session_ ABSL_GUARDED_BY(mu_);
  int sessions_opened_ ABSL_GUARDED_BY(mu_) = 0;
  int blocked_polls_ ABSL_GUARDED_BY(mu_) = 0;
  bool hold_open_session_ ABSL_GUARDED_BY(mu_) = false;
  int held_open_sessions_ ABSL_GUARDED_BY(mu_) = 0;
  bool cancel_pending_ ABSL_GUARDED_BY(mu_) = false;  // TryCancel() not yet consumed by a poll.
  int cancelled_polls_ ABSL_GUARDED_BY(mu_) = 0;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace kbisect

#endif  // KBISECT_TESTS_TESTING_FAKE_COORDINATOR_CLIENT_H_
