// Copyright 2026 The kbisect Authors.
//
// Tests of the real subprocess runner. They start real processes (sh, sleep, head, ...).

#include "common/exec/exec.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// A temporary directory removed (recursively) at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = "/tmp/kbisect_exec_test_XXXXXX";
    char* made = mkdtemp(tmpl.data());
    EXPECT_NE(made, nullptr);
    path_ = tmpl;
  }
  ~TempDir() { std::system(absl::StrCat("rm -rf '", path_, "'").c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

// Returns true if `pid` no longer runs (it does not exist or is a zombie awaiting its reaper).
bool ProcessGone(pid_t pid) {
  std::string stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  if (stat.empty()) return true;
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return true;
  char state = stat[paren + 2];
  return state == 'Z' || state == 'X';
}

// Waits up to `limit` for `pid` to be gone.
bool WaitProcessGone(pid_t pid, absl::Duration limit) {
  absl::Time until = absl::Now() + limit;
  while (absl::Now() < until) {
    if (ProcessGone(pid)) return true;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return ProcessGone(pid);
}

ExecRequest Shell(std::string command) {
  ExecRequest request;
  request.shell_command = std::move(command);
  return request;
}

ExecRequest Argv(std::vector<std::string> argv) {
  ExecRequest request;
  request.argv = std::move(argv);
  return request;
}

class ExecTest : public ::testing::Test {
 protected:
  ExecResult MustRun(const ExecRequest& request, const Cancellation* cancel = nullptr) {
    absl::StatusOr<ExecResult> result = runner_->Run(request, cancel);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *std::move(result) : ExecResult();
  }

  std::unique_ptr<CommandRunner> runner_ = NewSubprocessRunner();
};

TEST_F(ExecTest, CapturesExitCodeAndOutput) {
  ExecResult result = MustRun(Argv({"sh", "-c", "echo hello; exit 3"}));
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_EQ(result.signal, 0);
  EXPECT_FALSE(result.ok());
  EXPECT_FALSE(result.timed_out);
  EXPECT_FALSE(result.cancelled);
  EXPECT_EQ(result.output, "hello\n");
  EXPECT_EQ(result.output_bytes, 6u);
  EXPECT_EQ(result.Describe(), "exited with code 3");
}

TEST_F(ExecTest, AProgramBusyForAnInstantIsStartedOnceItIsFree) {
  // A script still open for writing cannot be executed (ETXTBSY), as when another thread of
  // the process checks it out while a child forked by a third holds its descriptor. Held for
  // 40 ms, the command still starts; held forever, the error says so.
  char dir_template[] = "/tmp/kbisect-exec-busy-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string script = absl::StrCat(dir_template, "/busy.sh");
  const int fd = open(script.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
  ASSERT_GE(fd, 0);
  const std::string body = "#!/bin/sh\necho ran\n";
  ASSERT_EQ(write(fd, body.data(), body.size()), static_cast<ssize_t>(body.size()));
  std::thread closer([fd] {
    absl::SleepFor(absl::Milliseconds(40));
    close(fd);
  });
  const ExecResult result = MustRun(Argv({script}));
  closer.join();
  EXPECT_EQ(result.output, "ran\n");

  const int held = open(script.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(held, 0);
  absl::StatusOr<ExecResult> busy = runner_->Run(Argv({script}), nullptr);
  close(held);
  ASSERT_FALSE(busy.ok());
  EXPECT_THAT(std::string(busy.status().message()), ::testing::HasSubstr("Text file busy"));
  unlink(script.c_str());
  rmdir(dir_template);
}

TEST_F(ExecTest, CpuTimeCountsTheCommandAndTheChildrenItWaitedFor) {
  // Two children each spin until their own CPU clock reads 0.2 s; a sleeping command uses
  // almost none. CPU time, not work done, so the machine's speed does not matter.
  const std::string spin = "python3 -c 'import time\nwhile time.process_time() < 0.2: pass'";
  const ExecResult busy = MustRun(Argv({"sh", "-c", absl::StrCat(spin, " & ", spin, " & wait")}));
  ASSERT_TRUE(busy.ok()) << busy.output;
  EXPECT_GE(busy.cpu_time, absl::Milliseconds(400));
  const ExecResult idle = MustRun(Argv({"sleep", "0.3"}));
  EXPECT_LT(idle.cpu_time, absl::Milliseconds(200));
}

TEST_F(ExecTest, SuccessIsOk) {
  ExecResult result = MustRun(Argv({"true"}));
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_TRUE(result.ok());
  EXPECT_EQ(result.output, "");
  EXPECT_EQ(result.Describe(), "exited with code 0");
}

TEST_F(ExecTest, EnvOverridesAreVisibleAndTheRestIsInherited) {
  ExecRequest request = Shell("printf '%s|%s|%s' \"$KBISECT_EXEC_TEST\" \"$HOME\" \"$PATH\"");
  request.env["KBISECT_EXEC_TEST"] = "value with spaces=and equals";
  request.env["HOME"] = "/overridden/home";
  ExecResult result = MustRun(request);
  ASSERT_TRUE(result.ok()) << result.Describe();
  const char* path = getenv("PATH");
  EXPECT_EQ(result.output, absl::StrCat("value with spaces=and equals|/overridden/home|",
                                        path != nullptr ? path : ""));
}

TEST_F(ExecTest, RejectsInvalidEnvironmentNames) {
  ExecRequest request = Argv({"true"});
  request.env["A=B"] = "x";
  EXPECT_EQ(runner_->Run(request).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ExecTest, HonorsWorkingDirectory) {
  TempDir dir;
  char* real = realpath(dir.path().c_str(), nullptr);
  ASSERT_NE(real, nullptr);
  std::string expected = absl::StrCat(real, "\n");
  free(real);
  ExecRequest request = Argv({"pwd", "-P"});
  request.cwd = dir.path();
  ExecResult result = MustRun(request);
  EXPECT_TRUE(result.ok());
  EXPECT_EQ(result.output, expected);
}

TEST_F(ExecTest, MissingWorkingDirectoryIsNotFound) {
  ExecRequest request = Argv({"true"});
  request.cwd = "/nonexistent/kbisect/dir";
  absl::StatusOr<ExecResult> result = runner_->Run(request);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(result.status().message(), HasSubstr("/nonexistent/kbisect/dir"));
  EXPECT_THAT(result.status().message(), HasSubstr("working directory"));
}

TEST_F(ExecTest, RunsShellCommands) {
  ExecResult result = MustRun(Shell("echo a && echo b | tr b c; exit 0"));
  EXPECT_TRUE(result.ok());
  EXPECT_EQ(result.output, "a\nc\n");
}

TEST_F(ExecTest, CapturesStderrInterleavedWithStdout) {
  ExecResult result = MustRun(Shell("echo out1; echo err1 >&2; echo out2; echo err2 >&2"));
  EXPECT_TRUE(result.ok());
  EXPECT_EQ(result.output, "out1\nerr1\nout2\nerr2\n");
}

TEST_F(ExecTest, MissingExecutableIsNotFoundAndNamesIt) {
  absl::StatusOr<ExecResult> result = runner_->Run(Argv({"kbisect-no-such-program", "--flag"}));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(result.status().message(), HasSubstr("'kbisect-no-such-program'"));
  EXPECT_THAT(result.status().message(), HasSubstr("PATH"));
}

TEST_F(ExecTest, MissingExecutablePathIsNotFound) {
  absl::StatusOr<ExecResult> result = runner_->Run(Argv({"/nonexistent/bin/kbisect-tool"}));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(result.status().message(), HasSubstr("/nonexistent/bin/kbisect-tool"));
}

TEST_F(ExecTest, NonExecutableFileIsPermissionDenied) {
  TempDir dir;
  std::string file = absl::StrCat(dir.path(), "/script.sh");
  std::ofstream(file) << "#!/bin/sh\necho hi\n";
  absl::StatusOr<ExecResult> result = runner_->Run(Argv({file}));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(result.status().message(), HasSubstr(file));
}

TEST_F(ExecTest, RejectsMalformedRequests) {
  EXPECT_EQ(runner_->Run(ExecRequest()).status().code(), absl::StatusCode::kInvalidArgument);
  ExecRequest both = Argv({"true"});
  both.shell_command = "true";
  EXPECT_EQ(runner_->Run(both).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ExecTest, StdinIsDevNull) {
  ExecResult result = MustRun(Argv({"cat"}));
  EXPECT_TRUE(result.ok());
  EXPECT_EQ(result.output, "");
}

TEST_F(ExecTest, ChildGetsDefaultSigpipeEvenIfParentIgnoresIt) {
  struct sigaction ignore = {}, saved = {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGPIPE, &ignore, &saved), 0);
  // With SIGPIPE ignored, `yes` would see EPIPE and complain on stderr instead of dying quietly.
  ExecResult result = MustRun(Shell("yes | head -n 1"));
  sigaction(SIGPIPE, &saved, nullptr);
  EXPECT_TRUE(result.ok());
  EXPECT_EQ(result.output, "y\n");
}

TEST_F(ExecTest, DoesNotLeakFileDescriptors) {
  int fd = open("/dev/null", O_RDONLY);  // Deliberately without O_CLOEXEC.
  ASSERT_GE(fd, 0);
  ASSERT_EQ(dup2(fd, 100), 100);
  close(fd);
  ExecResult result = MustRun(Shell("ls /proc/$$/fd"));
  close(100);
  EXPECT_TRUE(result.ok());
  std::vector<std::string> fds = absl::StrSplit(result.output, '\n', absl::SkipEmpty());
  EXPECT_THAT(fds, ::testing::UnorderedElementsAre("0", "1", "2")) << result.output;
}

TEST_F(ExecTest, RunsInItsOwnProcessGroup) {
  // Field 5 of /proc/self/stat is the process group; the shell must lead its own group.
  ExecResult result =
      MustRun(Shell("read -r stat < /proc/$$/stat; set -- ${stat##*) }; "
                    "[ \"$3\" = \"$$\" ] && echo leader"));
  EXPECT_EQ(result.output, "leader\n");
}

TEST_F(ExecTest, TimeoutKillsGrandchildThatIgnoresTerm) {
  TempDir dir;
  std::string pidfile = absl::StrCat(dir.path(), "/pid");
  ExecRequest request =
      Shell(absl::StrCat("trap '' TERM; sleep 30 & echo $! > ", pidfile, "; echo started; wait"));
  request.timeout = absl::Milliseconds(300);
  request.kill_grace = absl::Milliseconds(300);
  absl::Time start = absl::Now();
  ExecResult result = MustRun(request);
  absl::Duration elapsed = absl::Now() - start;
  EXPECT_TRUE(result.timed_out);
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.signal, SIGKILL);
  EXPECT_EQ(result.Describe(), "timed out after 300ms and was killed");
  EXPECT_EQ(result.output, "started\n");
  EXPECT_GE(elapsed, absl::Milliseconds(550));
  // `sleep 30` waited for would take 30 s: the bound tells killed from waited for, on any machine.
  EXPECT_LT(elapsed, absl::Seconds(20));
  pid_t grandchild = std::atoi(ReadFile(pidfile).c_str());
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(WaitProcessGone(grandchild, absl::Seconds(1)));
}

TEST_F(ExecTest, TimeoutKillsGrandchildThatOutlivesTheShell) {
  // The shell dies on SIGTERM at once; its background job ignores SIGTERM and must still be
  // killed once the grace period is over.
  TempDir dir;
  std::string pidfile = absl::StrCat(dir.path(), "/pid");
  ExecRequest request =
      Shell(absl::StrCat("(trap '' TERM; exec sleep 30) & echo $! > ", pidfile, "; wait"));
  request.timeout = absl::Milliseconds(200);
  request.kill_grace = absl::Milliseconds(300);
  absl::Time start = absl::Now();
  ExecResult result = MustRun(request);
  absl::Duration elapsed = absl::Now() - start;
  EXPECT_TRUE(result.timed_out);
  EXPECT_EQ(result.signal, SIGTERM);
  EXPECT_LT(elapsed, absl::Seconds(20));  // Not the 30 s of the grandchild's sleep.
  pid_t grandchild = std::atoi(ReadFile(pidfile).c_str());
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(WaitProcessGone(grandchild, absl::Seconds(1)));
}

TEST_F(ExecTest, TimeoutTerminatesGracefullyFirst) {
  ExecRequest request = Shell("trap 'echo got TERM; exit 7' TERM; sleep 30 & wait");
  request.timeout = absl::Milliseconds(200);
  request.kill_grace = absl::Seconds(5);
  absl::Time start = absl::Now();
  ExecResult result = MustRun(request);
  EXPECT_LT(absl::Now() - start, absl::Seconds(20));  // Not the 30 s of the sleep.
  EXPECT_TRUE(result.timed_out);
  EXPECT_EQ(result.exit_code, 7);
  EXPECT_THAT(result.output, HasSubstr("got TERM"));
}

TEST_F(ExecTest, CancellationFromAnotherThreadStopsTheCommand) {
  Cancellation cancel;
  std::thread canceller([&cancel] {
    absl::SleepFor(absl::Milliseconds(200));
    cancel.Cancel();
  });
  absl::Time start = absl::Now();
  ExecResult result = MustRun(Argv({"sleep", "30"}), &cancel);
  absl::Duration elapsed = absl::Now() - start;
  canceller.join();
  EXPECT_TRUE(result.cancelled);
  EXPECT_FALSE(result.timed_out);
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.Describe(), "cancelled");
  EXPECT_GE(elapsed, absl::Milliseconds(150));
  EXPECT_LT(elapsed, absl::Seconds(20));  // Not the 30 s of the sleep.
}

TEST_F(ExecTest, AlreadyCancelledCommandDoesNotStart) {
  TempDir dir;
  std::string marker = absl::StrCat(dir.path(), "/ran");
  Cancellation cancel;
  cancel.Cancel();
  ExecResult result = MustRun(Shell(absl::StrCat("touch ", marker)), &cancel);
  EXPECT_TRUE(result.cancelled);
  EXPECT_EQ(access(marker.c_str(), F_OK), -1);
}

TEST_F(ExecTest, FloodIsCappedKeepingHeadAndTail) {
  constexpr uint64_t kFlood = 1000000000;
  ExecRequest request =
      Shell(absl::StrCat("echo BEGIN; head -c ", kFlood, " /dev/zero; echo; echo END"));
  request.output_limit_bytes = 64 * 1024;
  ExecResult result = MustRun(request);
  EXPECT_TRUE(result.ok()) << result.Describe();
  const uint64_t total = 6 + kFlood + 1 + 4;
  EXPECT_EQ(result.output_bytes, total);
  EXPECT_GE(result.output.size(), 64u * 1024);
  EXPECT_LE(result.output.size(), 64u * 1024 + 100);
  EXPECT_THAT(result.output, StartsWith("BEGIN\n"));
  EXPECT_THAT(result.output, EndsWith("\nEND\n"));
  EXPECT_THAT(result.output, HasSubstr(absl::StrCat("\n[... kbisect: ", total - 64 * 1024,
                                                    " bytes omitted ...]\n")));
}

TEST_F(ExecTest, OutputCapKeepsExactHeadAndTail) {
  ExecRequest request = Shell("printf 0123456789");
  request.output_limit_bytes = 10;
  EXPECT_EQ(MustRun(request).output, "0123456789");
  request.shell_command = "printf 0123456789A";
  ExecResult result = MustRun(request);
  EXPECT_EQ(result.output, "01234\n[... kbisect: 1 bytes omitted ...]\n6789A");
  EXPECT_EQ(result.output_bytes, 11u);
}

TEST_F(ExecTest, OutputCapWithManySmallWrites) {
  std::string expected;
  for (int i = 1; i <= 3000; ++i) absl::StrAppend(&expected, "line", i, "\n");
  ExecRequest request = Shell("i=1; while [ $i -le 3000 ]; do echo line$i; i=$((i+1)); done");
  request.output_limit_bytes = 101;
  ExecResult result = MustRun(request);
  ASSERT_EQ(result.output_bytes, expected.size());
  EXPECT_EQ(result.output,
            absl::StrCat(expected.substr(0, 50), "\n[... kbisect: ", expected.size() - 101,
                         " bytes omitted ...]\n", expected.substr(expected.size() - 51)));
}

TEST_F(ExecTest, ReportsSignalDeath) {
  ExecResult result = MustRun(Shell("echo before; kill -9 $$"));
  EXPECT_EQ(result.signal, 9);
  EXPECT_EQ(result.exit_code, -1);
  EXPECT_FALSE(result.ok());
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.output, "before\n");
  EXPECT_EQ(result.Describe(), "killed by signal 9 (Killed)");
  result = MustRun(Argv({"sh", "-c", "kill -SEGV $$"}));
  EXPECT_EQ(result.signal, SIGSEGV);
}

TEST_F(ExecTest, WallTimeIsPlausible) {
  // Judged against the time measured around the call, not against fixed bounds: the command's
  // wall time is at least what it slept and at most what the call took, on any machine.
  absl::Time start = absl::Now();
  ExecResult result = MustRun(Argv({"sleep", "0.3"}));
  absl::Duration call = absl::Now() - start;
  EXPECT_TRUE(result.ok());
  EXPECT_GE(result.wall_time, absl::Milliseconds(280));
  EXPECT_LE(result.wall_time, call);
  start = absl::Now();
  result = MustRun(Argv({"true"}));
  call = absl::Now() - start;
  EXPECT_LE(result.wall_time, call);
  EXPECT_GT(result.wall_time, absl::ZeroDuration());
}

TEST_F(ExecTest, BackgroundProcessHoldingThePipeDoesNotStallRun) {
  TempDir dir;
  std::string pidfile = absl::StrCat(dir.path(), "/pid");
  absl::Time start = absl::Now();
  ExecResult result = MustRun(Shell(absl::StrCat("sleep 30 & echo $! > ", pidfile, "; echo done")));
  EXPECT_LT(absl::Now() - start, absl::Seconds(20));  // Not the 30 s of the background sleep.
  EXPECT_TRUE(result.ok());
  EXPECT_EQ(result.output, "done\n");
  pid_t leftover = std::atoi(ReadFile(pidfile).c_str());
  if (leftover > 0) kill(leftover, SIGKILL);
}

TEST_F(ExecTest, ConcurrentRunsFromSeveralThreads) {
  constexpr int kThreads = 4;
  constexpr int kRunsPerThread = 8;
  std::vector<std::string> failures[kThreads];
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t, &failures] {
      for (int i = 0; i < kRunsPerThread; ++i) {
        ExecRequest request = Shell("echo \"$WHO\"; sleep 0.02; echo done >&2; exit $CODE");
        request.env["WHO"] = absl::StrCat("thread ", t, " run ", i);
        request.env["CODE"] = absl::StrCat((t + i) % 5);
        absl::StatusOr<ExecResult> result = runner_->Run(request);
        if (!result.ok()) {
          failures[t].push_back(result.status().ToString());
          continue;
        }
        std::string expected = absl::StrCat("thread ", t, " run ", i, "\ndone\n");
        if (result->output != expected || result->exit_code != (t + i) % 5) {
          failures[t].push_back(absl::StrCat("got '", result->output, "' ", result->Describe()));
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_THAT(failures[t], ::testing::IsEmpty());
}

TEST(ExecResultTest, TailReturnsLastLines) {
  ExecResult result;
  result.output = "a\nb\nc\nd\n";
  EXPECT_EQ(result.Tail(2), "c\nd");
  EXPECT_EQ(result.Tail(4), "a\nb\nc\nd");
  EXPECT_EQ(result.Tail(10), "a\nb\nc\nd");
  EXPECT_EQ(result.Tail(0), "");
  result.output = "x\ny";
  EXPECT_EQ(result.Tail(1), "y");
  result.output = "";
  EXPECT_EQ(result.Tail(3), "");
}

TEST(ExecResultTest, DescribesEachOutcome) {
  ExecResult result;
  result.signal = SIGTERM;
  EXPECT_EQ(result.Describe(), "killed by signal 15 (Terminated)");
  result.timed_out = true;
  result.timeout = absl::Seconds(5);
  EXPECT_EQ(result.Describe(), "timed out after 5s and was killed");
  result.cancelled = true;
  EXPECT_EQ(result.Describe(), "cancelled");
  EXPECT_THAT(result.Describe(), Not(HasSubstr("signal")));
}

}  // namespace
}  // namespace kbisect
