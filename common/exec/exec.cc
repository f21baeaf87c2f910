// Copyright 2026 The kbisect Authors.
//
// The vfork/exec implementation of CommandRunner (Linux).
//
// Everything the child needs (argv, envp, the resolved executable path, file descriptors) is
// prepared before vfork(); between vfork() and execve() the child only makes system calls: it
// runs on the parent's memory, and other threads of the parent may hold locks (e.g. malloc's).
// Failures in the child are reported as {stage, errno} through a close-on-exec pipe: EOF on that
// pipe means execve() succeeded.

#include "common/exec/exec.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "common/exec/process_group_usage.h"
#include "common/status_macros.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

extern char** environ;

namespace kbisect {

void Cancellation::Cancel() { cancelled_.store(true, std::memory_order_release); }

bool Cancellation::IsCancelled() const { return cancelled_.load(std::memory_order_acquire); }

bool ExecResult::ok() const { return exit_code == 0 && signal == 0 && !timed_out && !cancelled; }

std::string ExecResult::Describe() const {
  if (cancelled) return "cancelled";
  if (timed_out)
    return absl::StrCat("timed out after ", absl::FormatDuration(timeout), " and was killed");
  if (signal != 0) {
    const char* description = sigdescr_np(signal);
    return absl::StrFormat("killed by signal %d (%s)", signal,
                           description != nullptr ? description : "unknown signal");
  }
  return absl::StrCat("exited with code ", exit_code);
}

std::string ExecResult::Tail(int lines) const {
  if (lines <= 0 || output.empty()) return "";
  size_t end = output.size();
  if (output[end - 1] == '\n') --end;
  size_t begin = end;
  int seen = 0;
  while (begin > 0) {
    if (output[begin - 1] == '\n' && ++seen == lines) break;
    --begin;
  }
  return output.substr(begin, end - begin);
}

namespace {

// Bytes read from the output pipe per read() call.
constexpr size_t kReadChunk = 256 * 1024;
// Reads per PumpOutput() call before the caller gets to check deadlines and cancellation again.
constexpr int kMaxReadsPerPump = 16;
// The longest the runner waits without checking for cancellation, deadlines and child exit.
constexpr absl::Duration kPollInterval = absl::Milliseconds(20);
// How long output is still read after the direct child exited while someone keeps the pipe open.
constexpr absl::Duration kDrainLinger = absl::Milliseconds(200);
// The pipe buffer size requested for the output pipe (fewer wakeups for chatty commands).
constexpr int kPipeSize = 1 << 20;

// Where in the child a setup step failed.
enum ChildStage : int {
  kStageSetpgid = 1,
  kStageStdin = 2,
  kStageStdout = 3,
  kStageStderr = 4,
  kStageChdir = 5,
  kStageExec = 6,
};

struct ChildError {
  int stage;
  int error;
};

const char* StageName(int stage) {
  switch (stage) {
    case kStageSetpgid:
      return "setpgid";
    case kStageStdin:
      return "redirecting stdin";
    case kStageStdout:
      return "redirecting stdout";
    case kStageStderr:
      return "redirecting stderr";
    case kStageChdir:
      return "chdir";
    case kStageExec:
      return "execve";
  }
  return "setup";
}

// Closes a file descriptor on destruction.
class ScopedFd {
 public:
  ScopedFd() = default;
  explicit ScopedFd(int fd) : fd_(fd) {}
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  ~ScopedFd() { Reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Reset(int fd = -1) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// Keeps the first half and the last half of a byte stream within a fixed budget.
class OutputCollector {
 public:
  explicit OutputCollector(size_t limit) : head_cap_(limit / 2), tail_cap_(limit - limit / 2) {}

  void Append(const char* data, size_t n) {
    total_ += n;
    if (head_.size() < head_cap_) {
      size_t take = std::min(n, head_cap_ - head_.size());
      head_.append(data, take);
      data += take;
      n -= take;
    }
    if (n == 0 || tail_cap_ == 0) return;
    if (n >= tail_cap_) {
      ring_.assign(data + (n - tail_cap_), tail_cap_);
      pos_ = 0;
      return;
    }
    if (ring_.size() < tail_cap_) {
      size_t take = std::min(n, tail_cap_ - ring_.size());
      ring_.append(data, take);
      data += take;
      n -= take;
      if (n == 0) return;
    }
    // The ring is full; pos_ indexes its oldest byte, which is overwritten first.
    size_t first = std::min(n, tail_cap_ - pos_);
    std::memcpy(&ring_[pos_], data, first);
    std::memcpy(&ring_[0], data + first, n - first);
    pos_ = (pos_ + n) % tail_cap_;
  }

  uint64_t total() const { return total_; }

  std::string Finish() {
    std::string tail = ring_.substr(pos_) + ring_.substr(0, pos_);
    uint64_t omitted = total_ - head_.size() - tail.size();
    if (omitted == 0) return head_ + tail;
    std::string out = std::move(head_);
    if (!out.empty() && out.back() != '\n') out += '\n';
    absl::StrAppend(&out, "[... kbisect: ", omitted, " bytes omitted ...]\n", tail);
    return out;
  }

 private:
  const size_t head_cap_;
  const size_t tail_cap_;
  std::string head_;
  std::string ring_;
  size_t pos_ = 0;
  uint64_t total_ = 0;
};

// True while some process of group `pgid` is alive. Zombies do not count: where PID 1 does not
// reap orphans (some containers), a killed grandchild lingers as a zombie forever and
// kill(-pgid, 0) keeps succeeding for it.
bool GroupHasLiveMembers(pid_t pgid) {
  return kill(-pgid, 0) == 0 && SampleProcessGroup(pgid).live > 0;
}

// Converts a duration to a poll() timeout in milliseconds, rounding up, capped at kPollInterval.
int PollTimeoutMs(absl::Duration wait) {
  wait = std::min(wait, kPollInterval);
  if (wait <= absl::ZeroDuration()) return 0;
  return static_cast<int>(absl::ToInt64Milliseconds(wait + absl::Microseconds(999)));
}

// Waits up to `wait` (at most kPollInterval) for output on `fd` and appends what is available to
// `out`. On EOF or a read error, closes `fd`. If `fd` is already closed, just sleeps.
void PumpOutput(ScopedFd& fd, absl::Duration wait, char* buffer, OutputCollector& out) {
  if (!fd.valid()) {
    absl::SleepFor(std::min(wait, kPollInterval));
    return;
  }
  struct pollfd pfd = {fd.get(), POLLIN, 0};
  int ready = poll(&pfd, 1, PollTimeoutMs(wait));
  if (ready <= 0) return;  // Timeout or EINTR: the caller loops.
  for (int i = 0; i < kMaxReadsPerPump; ++i) {
    ssize_t n = read(fd.get(), buffer, kReadChunk);
    if (n > 0) {
      out.Append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    fd.Reset();  // EOF or an unrecoverable error.
    return;
  }
}

// Returns `fd` if it is above 2, otherwise a close-on-exec duplicate above 2 (closing `fd`), so
// that dup2() onto 0, 1 and 2 in the child never clobbers it. Returns -1 on failure.
int MoveAboveStdio(int fd) {
  if (fd < 0 || fd > 2) return fd;
  int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  close(fd);
  return moved;
}

absl::Status ErrnoError(absl::string_view what, int error) {
  return absl::InternalError(absl::StrCat(what, ": ", strerror(error)));
}

std::string CommandName(const ExecRequest& request) {
  if (!request.argv.empty()) return request.argv[0];
  constexpr size_t kMaxShown = 80;
  if (request.shell_command.size() <= kMaxShown) return request.shell_command;
  return absl::StrCat(request.shell_command.substr(0, kMaxShown), "...");
}

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

// Resolves argv[0] the way execvp() would, but in the parent so that a missing program yields a
// clear error. Names containing '/' are returned unchanged (execve reports problems with them).
absl::StatusOr<std::string> ResolveExecutable(const ExecRequest& request, const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  std::string path_var;
  auto it = request.env.find("PATH");
  if (it != request.env.end()) {
    path_var = it->second;
  } else if (const char* inherited = getenv("PATH"); inherited != nullptr) {
    path_var = inherited;
  } else {
    path_var = "/usr/local/bin:/usr/bin:/bin";
  }
  for (absl::string_view dir : absl::StrSplit(path_var, ':')) {
    std::string candidate = absl::StrCat(dir.empty() ? "." : dir, "/", name);
    // Relative PATH entries are relative to the child's working directory.
    std::string probe = candidate;
    if (candidate[0] != '/' && !request.cwd.empty())
      probe = absl::StrCat(request.cwd, "/", candidate);
    if (IsExecutableFile(probe)) return candidate;
  }
  return absl::NotFoundError(absl::StrCat(
      "command '", name, "' not found on PATH (", path_var,
      "): check that it is installed and that its directory is on PATH, or give its full path"));
}

absl::Status ChildErrorToStatus(const ExecRequest& request, const std::string& path,
                                const ChildError& failure) {
  const std::string name = CommandName(request);
  const char* reason = strerror(failure.error);
  if (failure.stage == kStageChdir) {
    std::string message =
        absl::StrCat("cannot start '", name, "': working directory '", request.cwd, "' ");
    if (failure.error == ENOENT || failure.error == ENOTDIR) {
      return absl::NotFoundError(
          absl::StrCat(message, "does not exist or is not a directory (", reason, ")"));
    }
    if (failure.error == EACCES) {
      return absl::PermissionDeniedError(absl::StrCat(message, "is not accessible (", reason, ")"));
    }
    return absl::InternalError(absl::StrCat(message, "cannot be entered (", reason, ")"));
  }
  if (failure.stage == kStageExec) {
    std::string message = absl::StrCat("cannot execute '", path, "' for command '", name, "': ");
    switch (failure.error) {
      case ENOENT:
      case ENOTDIR:
        return absl::NotFoundError(absl::StrCat(
            message, reason,
            "; check that the program and its #! interpreter exist (and the working directory "
            "for relative paths)"));
      case EACCES:
      case EPERM:
        return absl::PermissionDeniedError(
            absl::StrCat(message, reason, "; check that the file is executable"));
      case ENOEXEC:
        return absl::FailedPreconditionError(
            absl::StrCat(message, reason, "; the file is not a valid executable or script"));
      case E2BIG:
        return absl::InvalidArgumentError(
            absl::StrCat(message, reason, "; the argument list or environment is too large"));
      default:
        return absl::InternalError(absl::StrCat(message, reason));
    }
  }
  return absl::InternalError(absl::StrCat("cannot start '", name, "': ", StageName(failure.stage),
                                          " failed in the child: ", reason));
}

// Runs in the vfork()ed child, on the parent's memory: only system calls, no writes to memory
// the parent reads afterwards. Never returns.
[[noreturn]] void ChildFail(int error_fd, int stage) {
  ChildError failure = {stage, errno};
  ssize_t ignored = write(error_fd, &failure, sizeof(failure));
  (void)ignored;
  _exit(127);
}

[[noreturn]] void RunChild(const char* path, char* const* argv, char* const* envp, const char* cwd,
                           int stdin_fd, int output_fd, int error_fd, int max_fd) {
  if (setpgid(0, 0) != 0) ChildFail(error_fd, kStageSetpgid);

  // Restore default dispositions (SIG_IGN survives execve) before unblocking signals, which the
  // parent blocked around vfork() so that none of its handlers can run here.
  struct sigaction default_action;
  memset(&default_action, 0, sizeof(default_action));
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    sigaction(sig, &default_action, nullptr);  // Fails harmlessly for reserved signals.
  }
  sigset_t empty;
  sigemptyset(&empty);
  sigprocmask(SIG_SETMASK, &empty, nullptr);

  if (dup2(stdin_fd, STDIN_FILENO) < 0) ChildFail(error_fd, kStageStdin);
  if (dup2(output_fd, STDOUT_FILENO) < 0) ChildFail(error_fd, kStageStdout);
  if (dup2(output_fd, STDERR_FILENO) < 0) ChildFail(error_fd, kStageStderr);
  if (cwd != nullptr && chdir(cwd) != 0) ChildFail(error_fd, kStageChdir);

  // Nothing but 0, 1 and 2 may leak into the command, even descriptors that other code in this
  // process opened without O_CLOEXEC. Marking them close-on-exec keeps error_fd usable below.
  if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    for (int fd = 3; fd < max_fd; ++fd) fcntl(fd, F_SETFD, FD_CLOEXEC);
  }

  execve(path, argv, envp);
  ChildFail(error_fd, kStageExec);
}

// Starts RunChild in a vfork()ed child and returns its pid, or -1 with errno set. vfork, not
// fork: the child borrows this process's memory until execve instead of copying its page tables,
// which in a large multi-threaded process (the coordinator with W local workers) costs a
// page-table copy per bench run and a TLB shootdown on each later write to a shared page.
// A function of its own, so that nothing in the caller's frame lives across vfork's two returns.
__attribute__((noinline)) pid_t StartChild(const char* path, char* const* argv, char* const* envp,
                                           const char* cwd, int stdin_fd, int output_fd,
                                           int error_fd, int max_fd) {
  const pid_t pid = vfork();
  if (pid == 0) RunChild(path, argv, envp, cwd, stdin_fd, output_fd, error_fd, max_fd);
  return pid;
}

// Returns an error when `request` is malformed: not exactly one of argv and shell_command, an
// empty program, or an environment variable name that is empty or contains '='.
absl::Status ValidateRequest(const ExecRequest& request) {
  if (request.argv.empty() == request.shell_command.empty()) {
    return absl::InvalidArgumentError(
        "exactly one of ExecRequest::argv and ExecRequest::shell_command must be set");
  }
  if (!request.argv.empty() && request.argv[0].empty()) {
    return absl::InvalidArgumentError("ExecRequest::argv[0] (the program) is empty");
  }
  for (const auto& [key, value] : request.env) {
    if (key.empty() || key.find('=') != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid environment variable name '", key, "' for command '",
                       CommandName(request), "': names must be non-empty and contain no '='"));
    }
  }
  return absl::OkStatus();
}

// What the child passes to execve, prepared before vfork(): the child may only make system
// calls. Not copyable: `argv` and `envp` point into `args` and `env_strings`.
struct ExecArgs {
  ExecArgs() = default;
  ExecArgs(const ExecArgs&) = delete;
  ExecArgs& operator=(const ExecArgs&) = delete;

  std::string path;                      // The resolved program.
  std::vector<std::string> args;         // The program and its arguments.
  std::vector<char*> argv;               // `args`, null-terminated.
  std::vector<std::string> env_strings;  // This process's environment, overridden by the request.
  std::vector<char*> envp;               // `env_strings`, null-terminated.
  const char* cwd = nullptr;             // The working directory; nullptr: this process's.
  int max_fd = 0;                        // Descriptors below this are closed on exec.
};

// Fills `exec` for `request` (argv, or /bin/sh -c shell_command), resolving the program on PATH;
// returns an error when it is not found.
absl::Status PrepareExec(const ExecRequest& request, ExecArgs* exec) {
  exec->args = request.argv;
  if (exec->args.empty()) exec->args = {"/bin/sh", "-c", request.shell_command};
  absl::StatusOr<std::string> path = ResolveExecutable(request, exec->args[0]);
  if (!path.ok()) return path.status();
  exec->path = *std::move(path);

  exec->argv.reserve(exec->args.size() + 1);
  for (std::string& arg : exec->args) exec->argv.push_back(arg.data());
  exec->argv.push_back(nullptr);

  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    absl::string_view var(*entry);
    absl::string_view key = var.substr(0, var.find('='));
    if (request.env.count(std::string(key)) == 0) exec->env_strings.emplace_back(var);
  }
  for (const auto& [key, value] : request.env) {
    exec->env_strings.push_back(absl::StrCat(key, "=", value));
  }
  exec->envp.reserve(exec->env_strings.size() + 1);
  for (std::string& var : exec->env_strings) exec->envp.push_back(var.data());
  exec->envp.push_back(nullptr);

  exec->cwd = request.cwd.empty() ? nullptr : request.cwd.c_str();
  long open_max = sysconf(_SC_OPEN_MAX);
  exec->max_fd = static_cast<int>(std::clamp<long>(open_max, 256, 65536));
  return absl::OkStatus();
}

// The child's stdin (/dev/null), its output pipe (stdout and stderr) and its status pipe
// (ChildError, or EOF once execve succeeded). Every descriptor is above 2 and close-on-exec; the
// members close in reverse order.
struct ChildPipes {
  ScopedFd stdin_fd;
  ScopedFd output_read;
  ScopedFd output_write;
  ScopedFd error_read;
  ScopedFd error_write;
};

// Opens `pipes`, the output pipe's read end non-blocking; returns an error when a descriptor
// cannot be made (those already open close with `pipes`).
absl::Status OpenChildPipes(ChildPipes* pipes) {
  pipes->stdin_fd.Reset(MoveAboveStdio(open("/dev/null", O_RDONLY | O_CLOEXEC)));
  if (!pipes->stdin_fd.valid()) return ErrnoError("cannot open /dev/null", errno);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return ErrnoError("cannot create output pipe", errno);
  pipes->output_read.Reset(MoveAboveStdio(fds[0]));
  pipes->output_write.Reset(MoveAboveStdio(fds[1]));
  if (pipe2(fds, O_CLOEXEC) != 0) return ErrnoError("cannot create status pipe", errno);
  pipes->error_read.Reset(MoveAboveStdio(fds[0]));
  pipes->error_write.Reset(MoveAboveStdio(fds[1]));
  if (!pipes->output_read.valid() || !pipes->output_write.valid() || !pipes->error_read.valid() ||
      !pipes->error_write.valid()) {
    return ErrnoError("cannot move pipe descriptors", errno);
  }
  fcntl(pipes->output_read.get(), F_SETPIPE_SZ, kPipeSize);  // Best effort.
  int flags = fcntl(pipes->output_read.get(), F_GETFL);
  if (flags < 0 || fcntl(pipes->output_read.get(), F_SETFL, flags | O_NONBLOCK) != 0) {
    return ErrnoError("cannot make output pipe non-blocking", errno);
  }
  return absl::OkStatus();
}

// Starts the child with all signals blocked (it unblocks them after resetting its handlers),
// sets `*start`, puts the child in a process group of its own and closes the child's ends of
// `pipes` here. Returns the child's pid, or an error when it cannot fork.
absl::StatusOr<pid_t> ForkChild(const ExecRequest& request, const ExecArgs& exec, ChildPipes* pipes,
                                absl::Time* start) {
  sigset_t all_signals, saved_mask;
  sigfillset(&all_signals);
  pthread_sigmask(SIG_SETMASK, &all_signals, &saved_mask);
  *start = absl::Now();
  pid_t pid = StartChild(exec.path.c_str(), exec.argv.data(), exec.envp.data(), exec.cwd,
                         pipes->stdin_fd.get(), pipes->output_write.get(), pipes->error_write.get(),
                         exec.max_fd);
  int fork_errno = errno;
  pthread_sigmask(SIG_SETMASK, &saved_mask, nullptr);
  if (pid < 0)
    return ErrnoError(absl::StrCat("cannot fork to run '", CommandName(request), "'"), fork_errno);

  // Also set the group here, so that kill(-pid) works even before the child gets to run.
  setpgid(pid, pid);
  pipes->output_write.Reset();
  pipes->error_write.Reset();
  pipes->stdin_fd.Reset();
  return pid;
}

// Reads the status pipe to EOF or a whole ChildError and closes it. Returns the error the child
// reported, or nullopt when execve() succeeded (EOF).
std::optional<ChildError> ReadChildError(ScopedFd& error_read) {
  ChildError failure = {0, 0};
  size_t got = 0;
  while (got < sizeof(failure)) {
    ssize_t n =
        read(error_read.get(), reinterpret_cast<char*>(&failure) + got, sizeof(failure) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  error_read.Reset();
  if (got != sizeof(failure)) return std::nullopt;
  return failure;
}

// Supervises a started child, the leader of process group `pid`: collects its output, enforces
// the request's deadline and the cancellation by signalling the group, and reaps it.
class Supervision {
 public:
  Supervision(const ExecRequest& request, const Cancellation* cancel, pid_t pid, absl::Time start,
              ScopedFd& output_read)
      : cancel_(cancel),
        pid_(pid),
        output_read_(output_read),
        output_(request.output_limit_bytes),
        buffer_(new char[kReadChunk]),
        deadline_(request.timeout == absl::InfiniteDuration() ? absl::InfiniteFuture()
                                                              : start + request.timeout),
        grace_(std::max(request.kill_grace, absl::ZeroDuration())) {}

  // Reads output until the child exits and reaps it, sending SIGTERM then SIGKILL to its group
  // on cancellation or at the deadline (recorded in `result`, with the child's CPU time).
  void WaitForExit(ExecResult* result) {
    while (!reaped_) {
      absl::Time now = absl::Now();
      EnforceDeadline(now, result);
      if (TryReap(result)) break;
      PumpUntilNextEvent(now);
    }
  }

  // After a timeout or cancellation, group members may outlive the direct child (for example a
  // background job that ignores SIGTERM): gives them the rest of the grace period, then kills
  // them.
  void KillGroupStragglers() {
    if (!terminating_) return;
    while (!killed_ && GroupHasLiveMembers(pid_)) {
      absl::Time now = absl::Now();
      if (now >= kill_at_) break;
      PumpOutput(output_read_, std::min(kill_at_ - now, kPollInterval), buffer_.get(), output_);
    }
    kill(-pid_, SIGKILL);  // ESRCH if the group is already gone.
  }

  // Reads what is left of the output; stops early if a leftover background process keeps the
  // pipe open.
  void DrainOutput() {
    const absl::Time drain_until = absl::Now() + kDrainLinger;
    while (output_read_.valid()) {
      absl::Time now = absl::Now();
      if (now >= drain_until) break;
      PumpOutput(output_read_, drain_until - now, buffer_.get(), output_);
    }
  }

  // Records the exit status, the output and the wall time since `start` in `result`.
  void Finish(absl::Time start, ExecResult* result) {
    if (status_known_ && WIFEXITED(status_)) {
      result->exit_code = WEXITSTATUS(status_);
    } else if (status_known_ && WIFSIGNALED(status_)) {
      result->signal = WTERMSIG(status_);
    }
    result->output_bytes = output_.total();
    result->output = output_.Finish();
    result->wall_time = reaped_at_ - start;
  }

 private:
  // Sends SIGTERM to the group at `now`, and SIGKILL when there is no grace period.
  void Terminate(absl::Time now) {
    terminating_ = true;
    kill(-pid_, SIGTERM);
    kill_at_ = now + grace_;
    if (grace_ == absl::ZeroDuration()) {
      kill(-pid_, SIGKILL);
      killed_ = true;
    }
  }

  // Terminates the group on cancellation or at the deadline, and kills it once the grace period
  // after that is over.
  void EnforceDeadline(absl::Time now, ExecResult* result) {
    if (!terminating_) {
      if (cancel_ != nullptr && cancel_->IsCancelled()) {
        result->cancelled = true;
        Terminate(now);
      } else if (now >= deadline_) {
        result->timed_out = true;
        Terminate(now);
      }
    }
    if (terminating_ && !killed_ && now >= kill_at_) {
      kill(-pid_, SIGKILL);
      killed_ = true;
    }
  }

  // Reaps the child if it exited (or is gone: ECHILD, status unknown); returns true then.
  bool TryReap(ExecResult* result) {
    struct rusage usage;
    pid_t waited = wait4(pid_, &status_, WNOHANG, &usage);
    if (waited == pid_ || (waited < 0 && errno == ECHILD)) {
      if (waited == pid_) {
        result->cpu_time =
            absl::DurationFromTimeval(usage.ru_utime) + absl::DurationFromTimeval(usage.ru_stime);
      }
      reaped_ = true;
      status_known_ = waited == pid_;
      reaped_at_ = absl::Now();
      return true;
    }
    return false;
  }

  // Reads output until the next moment something must happen without the child's help (the
  // deadline, the SIGKILL, a look at the cancellation), at most kPollInterval.
  void PumpUntilNextEvent(absl::Time now) {
    absl::Time next_event = killed_ ? absl::InfiniteFuture() : terminating_ ? kill_at_ : deadline_;
    absl::Duration wait = next_event - now;
    // Cancellation has no file descriptor to wake poll(): look at it every kPollInterval.
    if (cancel_ != nullptr && !terminating_) wait = std::min(wait, kPollInterval);
    if (output_read_.valid()) {
      PumpOutput(output_read_, wait, buffer_.get(), output_);
    } else {
      // The child closed its output but is still running: back off up to kPollInterval.
      PumpOutput(output_read_, std::min(wait, idle_wait_), buffer_.get(), output_);
      idle_wait_ = std::min(idle_wait_ * 2, kPollInterval);
    }
  }

  const Cancellation* const cancel_;
  const pid_t pid_;
  ScopedFd& output_read_;
  OutputCollector output_;
  std::unique_ptr<char[]> buffer_;
  const absl::Time deadline_;
  const absl::Duration grace_;
  bool terminating_ = false;  // SIGTERM was sent to the group.
  bool killed_ = false;       // SIGKILL was sent to the group.
  absl::Time kill_at_ = absl::InfiniteFuture();
  int status_ = 0;
  bool reaped_ = false;
  bool status_known_ = true;
  absl::Time reaped_at_;
  absl::Duration idle_wait_ = absl::Microseconds(50);
};

// A program that is "busy" (ETXTBSY) is tried this many times, waiting 5 ms, 10 ms, ... between.
constexpr int kTextBusyAttempts = 8;

class SubprocessRunner : public CommandRunner {
 public:
  absl::StatusOr<ExecResult> Run(const ExecRequest& request, const Cancellation* cancel) override;

 private:
  // One attempt. `exec_errno` is set to execve's errno when the child could not execute.
  absl::StatusOr<ExecResult> RunOnce(const ExecRequest& request, const Cancellation* cancel,
                                     int* exec_errno);
};

absl::StatusOr<ExecResult> SubprocessRunner::Run(const ExecRequest& request,
                                                 const Cancellation* cancel) {
  // execve fails with ETXTBSY ("Text file busy") while any process holds the program open for
  // writing. In a process that checks out files on some threads and starts commands on others
  // (the slots of `kbisect run`), a child forked by one thread inherits for an instant the
  // descriptor another thread is writing a script through, until it closes its descriptors: a
  // freshly checked-out ./bench.sh can be busy for that instant. It clears within milliseconds,
  // so the command is started again (as Go's os/exec does), not reported as broken.
  absl::Duration backoff = absl::Milliseconds(5);
  for (int attempt = 1;; ++attempt) {
    int exec_errno = 0;
    absl::StatusOr<ExecResult> result = RunOnce(request, cancel, &exec_errno);
    if (exec_errno != ETXTBSY || attempt >= kTextBusyAttempts) return result;
    absl::SleepFor(backoff);
    backoff *= 2;
  }
}

absl::StatusOr<ExecResult> SubprocessRunner::RunOnce(const ExecRequest& request,
                                                     const Cancellation* cancel, int* exec_errno) {
  // Validate and prepare everything the child needs.
  RETURN_IF_ERROR(ValidateRequest(request));
  ExecResult result;
  result.timeout = request.timeout;
  if (cancel != nullptr && cancel->IsCancelled()) {
    result.cancelled = true;
    return result;
  }
  ExecArgs exec;
  RETURN_IF_ERROR(PrepareExec(request, &exec));
  ChildPipes pipes;
  RETURN_IF_ERROR(OpenChildPipes(&pipes));

  absl::Time start;
  ASSIGN_OR_RETURN(const pid_t pid, ForkChild(request, exec, &pipes, &start));
  if (std::optional<ChildError> failure = ReadChildError(pipes.error_read)) {
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (failure->stage == kStageExec) *exec_errno = failure->error;
    return ChildErrorToStatus(request, exec.path, *failure);
  }

  if (request.on_started) request.on_started(pid);
  Supervision supervision(request, cancel, pid, start, pipes.output_read);
  supervision.WaitForExit(&result);
  supervision.KillGroupStragglers();
  supervision.DrainOutput();
  supervision.Finish(start, &result);
  return result;
}

}  // namespace

std::unique_ptr<CommandRunner> NewSubprocessRunner() {
  return std::make_unique<SubprocessRunner>();
}

}  // namespace kbisect
