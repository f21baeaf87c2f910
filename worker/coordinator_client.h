// Copyright 2026 The kbisect Authors.
//
// The worker's side of WorkerService: the four calls a WorkerAgent makes to its coordinator,
// behind a small interface so that the agent can be tested against a scripted fake
// (tests/testing/fake_coordinator_client.h) instead of a server on a socket. The real one,
// GrpcCoordinatorClient (worker/grpc_coordinator_client.h), calls the coordinator over gRPC.
//
//   std::unique_ptr<CoordinatorClient> client = std::make_unique<GrpcCoordinatorClient>(channel);
//   absl::StatusOr<v1::OpenSessionResponse> session =
//       client->OpenSession(request, absl::Seconds(10));
//   if (absl::IsUnavailable(session.status())) ...  // Back off and retry.
#ifndef KBISECT_WORKER_COORDINATOR_CLIENT_H_
#define KBISECT_WORKER_COORDINATOR_CLIENT_H_

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// Every call blocks until the coordinator answers or `timeout` (real time, enforced by the
// transport) has passed, and fails with the canonical gRPC code of what went wrong: UNAVAILABLE
// when the coordinator cannot be reached, DEADLINE_EXCEEDED after `timeout`, NOT_FOUND when the
// coordinator does not know the session (it restarted), PERMISSION_DENIED when the credentials do
// not allow worker calls, CANCELLED after TryCancel(). Implementations are thread-safe.
class CoordinatorClient {
 public:
  virtual ~CoordinatorClient() = default;

  // Opens a session for a worker; the response carries the session id the other calls name.
  virtual absl::StatusOr<v1::OpenSessionResponse> OpenSession(const v1::OpenSessionRequest& request,
                                                              absl::Duration timeout) = 0;

  // Heartbeat and work pickup, a long poll: the coordinator answers at once when it has an
  // assignment or a cancellation for the worker, otherwise after the request's `wait`.
  virtual absl::StatusOr<v1::SynchronizeResponse> Synchronize(const v1::SynchronizeRequest& request,
                                                              absl::Duration timeout) = 0;

  // Reports the result of a lease.
  virtual absl::StatusOr<v1::CompleteLeaseResponse> CompleteLease(
      const v1::CompleteLeaseRequest& request, absl::Duration timeout) = 0;

  // Closes a session (the worker is leaving).
  virtual absl::StatusOr<v1::CloseSessionResponse> CloseSession(
      const v1::CloseSessionRequest& request, absl::Duration timeout) = 0;

  // Wakes the Synchronize call in flight: it returns CANCELLED soon. When none is in flight,
  // the next Synchronize call returns CANCELLED at once instead, so that a wake-up sent just
  // before the call starts is not lost (one TryCancel cancels one call). Safe from any thread;
  // does not block.
  virtual void TryCancel() = 0;
};

}  // namespace kbisect

#endif  // KBISECT_WORKER_COORDINATOR_CLIENT_H_
