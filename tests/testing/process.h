// Copyright 2026 The kbisect Authors.
//
// Helpers for tests that run the real daemons: background processes (killable, pausable),
// polling with a deadline, and a fixture that starts `kbisect-coordinator` and `kbisect-worker`s
// on loopback and drives the `kbisect` client against them.
//
//   class MyTest : public kbisect::testing::ClusterFixture {};
//   TEST_F(MyTest, Works) {
//     std::string culprit = MakeRepo(tmp_.Join("repo"), "--commits 30 --culprit 12");
//     std::unique_ptr<Process> coordinator = StartCoordinator();
//     std::unique_ptr<Process> worker = StartWorker("w0", 0);
//     nlohmann::json workers = Json("workers --json");
//   }
//
// Binaries come from $KBISECT_BIN_DIR and scripts from $KBISECT_SOURCE_DIR (set by kbisect_test).
#ifndef KBISECT_TESTS_TESTING_PROCESS_H_
#define KBISECT_TESTS_TESTING_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace testing {

// The environment variable `name`, or "" when unset.
std::string Env(const char* name);

// The path of the built binary `name` ($KBISECT_BIN_DIR/name).
std::string Bin(const std::string& name);

// `s` without leading and trailing whitespace.
std::string Trim(const std::string& s);

// True while process `pid` exists and is not a zombie waiting to be reaped.
bool ProcessRunning(pid_t pid);

// Polls `done` every 50 ms until it holds or `timeout` passes; returns its last value.
bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout);

// A free loopback TCP port for a daemon a test starts: bound once, then released (0 when none
// could be bound).
int FreeLoopbackPort();

// A background process started with /bin/sh, its stdout and stderr appended to a log file.
// Killed (SIGKILL) when destroyed if it is still running.
class Process {
 public:
  Process(const std::string& command, std::string log);
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  bool running() const { return pid_ > 0 && exit_code_ == kRunning; }
  pid_t pid() const { return pid_; }
  // Sends `sig` to the process (not its children) if it is still running.
  void Signal(int sig) const;

  // Waits for the process to exit; returns its exit code, 128+N if killed by signal N, or
  // kRunning on timeout.
  int Wait(std::chrono::milliseconds timeout);

  std::string log() const { return ReadFile(log_); }

  static constexpr int kRunning = -1000;

 private:
  std::string log_;
  pid_t pid_ = -1;
  int exit_code_ = kRunning;
};

// A temp dir with the daemons and the client pointed at each other.
class ClusterFixture : public ::testing::Test {
 protected:
  // Starts kbisect-coordinator on `listen` (default: a free loopback port) with state in
  // tmp_/state and `flags`; waits until it serves and sets address_.
  std::unique_ptr<Process> StartCoordinator(const std::string& flags = "",
                                            const std::string& lease_duration = "5",
                                            const std::string& listen = "127.0.0.1:0");

  // Starts a kbisect-worker named `name` on slot `gpu` whose benchmark sleeps `sleep` seconds,
  // with its cache in tmp_/`cache` (default: "cache-" + name).
  std::unique_ptr<Process> StartWorker(const std::string& name, int gpu,
                                       const std::string& sleep = "0.01",
                                       const std::string& flags = "",
                                       const std::string& cache = "");

  // Runs the kbisect client against the coordinator (through KBISECT_COORDINATOR).
  CommandResult Kbisect(const std::string& args);

  // Kbisect(args), expecting exit code 0 and JSON on stdout.
  nlohmann::json Json(const std::string& args);

  // The worker `name` as `kbisect workers --json` shows it, or null.
  nlohmann::json Worker(const std::string& name);

  // Workers not shown as lost.
  int LiveWorkers();

  // Generates a demo repository with scripts/make-demo-repo.sh; returns the culprit sha.
  std::string MakeRepo(const std::string& dir, const std::string& options);

  TempDir tmp_{"kbisect-cluster-test"};
  std::string address_;
  // Extra `NAME=VALUE ...` assignments in every worker's environment (e.g. an activated venv).
  std::string worker_env_;
};

}  // namespace testing
}  // namespace kbisect

#endif  // KBISECT_TESTS_TESTING_PROCESS_H_
