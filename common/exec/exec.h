// Copyright 2026 The kbisect Authors.
//
// Subprocess execution behind a small interface.
//
// Components that launch builds and benchmarks depend on CommandRunner, not on fork/exec, so that
// their tests can substitute FakeCommandRunner (tests/testing/fake_command_runner.h). The real
// implementation, NewSubprocessRunner(), runs every command in its own process group, captures
// stdout and stderr together under a memory cap, and enforces timeouts and cooperative
// cancellation by terminating the whole group (SIGTERM, then SIGKILL after a grace period).
//
//   std::unique_ptr<CommandRunner> runner = NewSubprocessRunner();
//   ExecRequest request;
//   request.argv = {"make", "-j8"};
//   request.timeout = absl::Minutes(30);
//   ASSIGN_OR_RETURN(ExecResult result, runner->Run(request, &cancellation));
//   if (!result.ok()) {
//     return absl::FailedPreconditionError(
//         absl::StrCat("build ", result.Describe(), ":\n", result.Tail(20)));
//   }
//
#ifndef KBISECT_COMMON_EXEC_EXEC_H_
#define KBISECT_COMMON_EXEC_EXEC_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace kbisect {

// A cooperative cancellation flag shared between a controlling thread and a running command.
// Once cancelled it stays cancelled. All methods are thread-safe.
class Cancellation {
 public:
  Cancellation() = default;
  Cancellation(const Cancellation&) = delete;
  Cancellation& operator=(const Cancellation&) = delete;

  // Requests cancellation. Commands observing this flag stop (their process group is
  // terminated) within a few tens of milliseconds plus their kill grace period.
  void Cancel();

  // Returns true once Cancel() has been called.
  bool IsCancelled() const;

 private:
  std::atomic<bool> cancelled_{false};
};

// A command to run. Exactly one of `argv` and `shell_command` must be set.
struct ExecRequest {
  // The program and its arguments. argv[0] is looked up on PATH unless it contains a '/'; the
  // PATH used is the one from `env` if it overrides PATH, otherwise the inherited one.
  std::vector<std::string> argv;

  // A command line run as `/bin/sh -c shell_command`.
  std::string shell_command;

  // The working directory of the command. Empty means the caller's working directory.
  std::string cwd;

  // Environment variables set on top of the inherited environment (overriding inherited values
  // with the same name). Names must be non-empty and must not contain '='.
  std::map<std::string, std::string> env;

  // How long the command may run before its process group is terminated.
  absl::Duration timeout = absl::InfiniteDuration();

  // After a timeout or cancellation the whole process group receives SIGTERM; whatever is still
  // alive `kill_grace` later receives SIGKILL.
  absl::Duration kill_grace = absl::Seconds(2);

  // The maximum number of bytes of combined stdout+stderr kept in ExecResult::output. When a
  // command produces more, the first half and the last half of this budget are kept.
  size_t output_limit_bytes = 1 << 20;

  // Called once on the calling thread with the command's process id, which is also its process
  // group's id, after the command started and before Run waits for it (unset: nothing). The
  // group is the command's until Run returns.
  std::function<void(int process_group)> on_started;
};

// The outcome of a command that was started.
struct ExecResult {
  // The exit status, valid when the command exited normally (signal == 0); -1 otherwise.
  int exit_code = -1;

  // The signal that terminated the command, or 0 if it exited normally.
  int signal = 0;

  // True if the command was terminated because it exceeded ExecRequest::timeout.
  bool timed_out = false;

  // True if the command was terminated (or never started) because of a Cancellation.
  bool cancelled = false;

  // The timeout that applied to the command; used by Describe().
  absl::Duration timeout = absl::InfiniteDuration();

  // Combined stdout and stderr, interleaved as produced. If the command produced more than
  // ExecRequest::output_limit_bytes, this holds the head, a marker line
  // "[... kbisect: N bytes omitted ...]", and the tail.
  std::string output;

  // The total number of bytes the command wrote to stdout and stderr, including omitted ones.
  uint64_t output_bytes = 0;

  // Time from start to the reaping of the command.
  absl::Duration wall_time = absl::ZeroDuration();

  // The CPU time (user + system) the command and the descendants it waited for used, as the
  // kernel counted it when the command was reaped (zero when it could not be reaped).
  absl::Duration cpu_time = absl::ZeroDuration();

  // Returns true if the command exited with code 0 and was neither timed out nor cancelled.
  bool ok() const;

  // Returns a short human-readable phrase for how the command ended, e.g. "exited with code 3",
  // "killed by signal 9 (Killed)", "timed out after 5s and was killed" or "cancelled". It reads
  // well after the command's name: "make " + Describe().
  std::string Describe() const;

  // Returns the last `lines` lines of `output` (without a trailing newline), for error messages.
  // Returns an empty string if `lines` <= 0.
  std::string Tail(int lines) const;
};

// Runs commands to completion. Implementations are thread-safe: several threads may call Run()
// concurrently.
class CommandRunner {
 public:
  virtual ~CommandRunner() = default;

  // Runs `request` to completion and returns how it ended. A non-zero exit, a signal death, a
  // timeout or a cancellation are all reported in the ExecResult, never as an error status.
  // Returns an error only when the command could not be started: InvalidArgument for a malformed
  // request, NotFound when the executable is not on PATH or does not exist or when `cwd` does
  // not exist, PermissionDenied when either cannot be accessed, and Internal for system failures.
  // If `cancel` is non-null it is polled while the command runs; if it is already cancelled the
  // command is not started and the result has `cancelled` set.
  virtual absl::StatusOr<ExecResult> Run(const ExecRequest& request,
                                         const Cancellation* cancel = nullptr) = 0;
};

// Returns a CommandRunner that runs real subprocesses (fork/exec, Linux).
//
// Each command runs in a new process group with default signal dispositions, an empty signal
// mask, stdin from /dev/null, and no file descriptors other than 0, 1 and 2. When the direct
// child exits, output is still read until every writer has closed the pipe, but for at most a
// short linger (about 200 ms) so that background processes left behind cannot stall Run(). On
// timeout or cancellation the group is sent SIGTERM, then SIGKILL after the kill grace; group
// members that outlive the direct child in that case are killed as well.
std::unique_ptr<CommandRunner> NewSubprocessRunner();

}  // namespace kbisect

#endif  // KBISECT_COMMON_EXEC_EXEC_H_
