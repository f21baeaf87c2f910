// Copyright 2026 The kbisect Authors.
//
// A scripted CommandRunner for tests of components that launch commands (test support: linked
// by tests through kbisect_fake_command_runner, never by production code).
//
//   FakeCommandRunner runner([](const ExecRequest& request) -> absl::StatusOr<ExecResult> {
//     if (request.argv[0] == "make") return FakeCommandRunner::Exited(2, "error: boom\n");
//     return FakeCommandRunner::Exited(0, "");
//   });
//   ... code under test calls runner.Run(...) ...
//   EXPECT_EQ(runner.requests().size(), 3);
//
#ifndef KBISECT_TESTS_TESTING_FAKE_COMMAND_RUNNER_H_
#define KBISECT_TESTS_TESTING_FAKE_COMMAND_RUNNER_H_

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "common/exec/exec.h"
#include "common/sync/mutex.h"

namespace kbisect {

// A CommandRunner that starts no processes: it records every request and answers each with the
// result of a user-supplied handler. Thread-safe; the handler may be called concurrently from
// several threads and must itself be thread-safe in that case.
class FakeCommandRunner : public CommandRunner {
 public:
  // Computes the outcome of one request. Returning an error status simulates a command that
  // could not be started.
  using Handler = std::function<absl::StatusOr<ExecResult>(const ExecRequest&)>;

  // Creates a runner whose commands all succeed (exit code 0, no output).
  FakeCommandRunner();

  // Creates a runner that answers requests with `handler`.
  explicit FakeCommandRunner(Handler handler);

  FakeCommandRunner(const FakeCommandRunner&) = delete;
  FakeCommandRunner& operator=(const FakeCommandRunner&) = delete;

  // Records `request`. If `cancel` is already cancelled, returns a result with `cancelled` set
  // without calling the handler; otherwise returns what the handler returns. Results from the
  // handler get output_bytes filled in from `output` when the handler left it at 0.
  absl::StatusOr<ExecResult> Run(const ExecRequest& request,
                                 const Cancellation* cancel = nullptr) override;

  // Replaces the handler used by subsequent Run() calls.
  void SetHandler(Handler handler) ABSL_LOCKS_EXCLUDED(mu_);

  // Returns a copy of every request passed to Run() so far, in call order.
  std::vector<ExecRequest> requests() const ABSL_LOCKS_EXCLUDED(mu_);

  // Returns the number of Run() calls so far.
  size_t run_count() const ABSL_LOCKS_EXCLUDED(mu_);

  // Forgets the recorded requests.
  void ClearRequests() ABSL_LOCKS_EXCLUDED(mu_);

  // Returns a result for a command that exited normally with `exit_code` and printed `output`.
  static ExecResult Exited(int exit_code, std::string output = "");

  // Returns a result for a command that was killed by `signal` after printing `output`.
  static ExecResult Signaled(int signal, std::string output = "");

 private:
  mutable kbisect::Mutex mu_;
  Handler handler_ ABSL_GUARDED_BY(mu_);
  std::vector<ExecRequest> requests_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kbisect

#endif  // KBISECT_TESTS_TESTING_FAKE_COMMAND_RUNNER_H_
