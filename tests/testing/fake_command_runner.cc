// Copyright 2026 The kbisect Authors.

#include "tests/testing/fake_command_runner.h"

#include <utility>

namespace kbisect {

FakeCommandRunner::FakeCommandRunner()
    : FakeCommandRunner(
          [](const ExecRequest&) -> absl::StatusOr<ExecResult> { return Exited(0); }) {}

FakeCommandRunner::FakeCommandRunner(Handler handler) : handler_(std::move(handler)) {}

absl::StatusOr<ExecResult> FakeCommandRunner::Run(const ExecRequest& request,
                                                  const Cancellation* cancel) {
  Handler handler;
  {
    kbisect::MutexLock lock(&mu_);
    requests_.push_back(request);
    handler = handler_;
  }
  if (cancel != nullptr && cancel->IsCancelled()) {
    ExecResult result;
    result.cancelled = true;
    result.timeout = request.timeout;
    return result;
  }
  absl::StatusOr<ExecResult> result = handler(request);
  if (result.ok() && result->output_bytes == 0) result->output_bytes = result->output.size();
  return result;
}

void FakeCommandRunner::SetHandler(Handler handler) {
  kbisect::MutexLock lock(&mu_);
  handler_ = std::move(handler);
}

std::vector<ExecRequest> FakeCommandRunner::requests() const {
  kbisect::MutexLock lock(&mu_);
  return requests_;
}

size_t FakeCommandRunner::run_count() const {
  kbisect::MutexLock lock(&mu_);
  return requests_.size();
}

void FakeCommandRunner::ClearRequests() {
  kbisect::MutexLock lock(&mu_);
  requests_.clear();
}

ExecResult FakeCommandRunner::Exited(int exit_code, std::string output) {
  ExecResult result;
  result.exit_code = exit_code;
  result.output_bytes = output.size();
  result.output = std::move(output);
  return result;
}

ExecResult FakeCommandRunner::Signaled(int signal, std::string output) {
  ExecResult result;
  result.signal = signal;
  result.output_bytes = output.size();
  result.output = std::move(output);
  return result;
}

}  // namespace kbisect
