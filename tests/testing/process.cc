// Copyright 2026 The kbisect Authors.
#include "tests/testing/process.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"

namespace kbisect {
namespace testing {

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

std::string Bin(const std::string& name) { return Env("KBISECT_BIN_DIR") + "/" + name; }

std::string Trim(const std::string& s) { return std::string(absl::StripAsciiWhitespace(s)); }

int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  close(fd);
  return port;
}

bool ProcessRunning(pid_t pid) {
  std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
  std::string line;
  if (!std::getline(stat, line)) return false;
  const size_t paren = line.rfind(')');
  if (paren == std::string::npos || paren + 2 >= line.size()) return false;
  const char state = line[paren + 2];
  return state != 'Z' && state != 'X';
}

bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

Process::Process(const std::string& command, std::string log) : log_(std::move(log)) {
  pid_ = fork();
  if (pid_ == 0) {
    const std::string line = absl::StrCat("exec ", command, " >>", ShellQuote(log_), " 2>&1");
    execl("/bin/sh", "sh", "-c", line.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
}

Process::~Process() {
  if (running()) {
    kill(pid_, SIGKILL);
    Wait(std::chrono::seconds(5));
  }
}

void Process::Signal(int sig) const {
  if (running()) kill(pid_, sig);
}

int Process::Wait(std::chrono::milliseconds timeout) {
  WaitFor(
      [this] {
        if (!running()) return true;
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
          exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
          return true;
        }
        return false;
      },
      timeout);
  return exit_code_;
}

std::unique_ptr<Process> ClusterFixture::StartCoordinator(const std::string& flags,
                                                          const std::string& lease_duration,
                                                          const std::string& listen) {
  const std::string port_file = tmp_.Join("coordinator.port");
  RunShell("rm -f " + port_file);
  auto process = std::make_unique<Process>(
      absl::StrCat(Bin("kbisect-coordinator"), " --listen ", listen, " --state-dir ",
                   ShellQuote(tmp_.Join("state")), " --port-file ", port_file, " --lease-duration ",
                   lease_duration, " ", flags),
      tmp_.Join("coordinator.log"));
  const bool up =
      WaitFor([&] { return access(port_file.c_str(), F_OK) == 0; }, std::chrono::seconds(15));
  EXPECT_TRUE(up) << process->log();
  address_ = absl::StrCat("127.0.0.1:", Trim(ReadFile(port_file)));
  return process;
}

std::unique_ptr<Process> ClusterFixture::StartWorker(const std::string& name, int gpu,
                                                     const std::string& sleep,
                                                     const std::string& flags,
                                                     const std::string& cache) {
  return std::make_unique<Process>(
      absl::StrCat("env KBISECT_DEMO_SLEEP=", sleep, " ", worker_env_, " ", Bin("kbisect-worker"),
                   " --coordinator ", address_, " --cache-dir ",
                   ShellQuote(tmp_.Join(cache.empty() ? "cache-" + name : cache)), " --gpu ", gpu,
                   " --name ", ShellQuote(name), " --idle-poll 1 ", flags),
      tmp_.Join(absl::StrCat("worker-", absl::StrReplaceAll(name, {{"/", "_"}}), ".log")));
}

CommandResult ClusterFixture::Kbisect(const std::string& args) {
  return RunShell(absl::StrCat("cd ", ShellQuote(tmp_.path()), " && KBISECT_COORDINATOR=", address_,
                               " ", Bin("kbisect"), " ", args));
}

nlohmann::json ClusterFixture::Json(const std::string& args) {
  CommandResult result = Kbisect(args);
  EXPECT_EQ(result.exit_code, 0) << args << ": " << result.err;
  nlohmann::json parsed = nlohmann::json::parse(result.out, nullptr, false);
  EXPECT_FALSE(parsed.is_discarded()) << result.out;
  return parsed;
}

nlohmann::json ClusterFixture::Worker(const std::string& name) {
  nlohmann::json workers = Json("workers --json");
  for (const auto& worker : workers["workers"]) {
    if (worker["worker_id"] == name) return worker;
  }
  return nullptr;
}

int ClusterFixture::LiveWorkers() {
  int live = 0;
  const nlohmann::json workers = Json("workers --json");
  for (const auto& worker : workers["workers"]) {
    if (worker["state"] != "lost") ++live;
  }
  return live;
}

std::string ClusterFixture::MakeRepo(const std::string& dir, const std::string& options) {
  CommandResult made = RunShell(absl::StrCat(
      Env("KBISECT_SOURCE_DIR"), "/scripts/make-demo-repo.sh ", ShellQuote(dir), " ", options));
  EXPECT_EQ(made.exit_code, 0) << made.err;
  return Trim(made.out);
}

}  // namespace testing
}  // namespace kbisect
