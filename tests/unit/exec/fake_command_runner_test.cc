// Copyright 2026 The kbisect Authors.

#include "tests/testing/fake_command_runner.h"

#include <signal.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using ::testing::ElementsAre;

TEST(FakeCommandRunnerTest, DefaultHandlerSucceedsAndRecordsRequests) {
  FakeCommandRunner runner;
  ExecRequest request;
  request.argv = {"make", "-j8"};
  request.cwd = "/src";
  absl::StatusOr<ExecResult> result = runner.Run(request);
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->ok());
  ASSERT_EQ(runner.run_count(), 1u);
  EXPECT_THAT(runner.requests()[0].argv, ElementsAre("make", "-j8"));
  EXPECT_EQ(runner.requests()[0].cwd, "/src");
  runner.ClearRequests();
  EXPECT_EQ(runner.run_count(), 0u);
}

TEST(FakeCommandRunnerTest, ReturnsScriptedResultsAndErrors) {
  FakeCommandRunner runner([](const ExecRequest& request) -> absl::StatusOr<ExecResult> {
    if (request.shell_command == "missing") return absl::NotFoundError("no such command");
    if (request.shell_command == "crash") return FakeCommandRunner::Signaled(SIGSEGV);
    return FakeCommandRunner::Exited(2, "error: boom\n");
  });
  ExecRequest request;
  request.shell_command = "build";
  absl::StatusOr<ExecResult> result = runner.Run(request);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->exit_code, 2);
  EXPECT_EQ(result->output, "error: boom\n");
  EXPECT_EQ(result->output_bytes, 12u);
  EXPECT_EQ(result->Describe(), "exited with code 2");

  request.shell_command = "crash";
  result = runner.Run(request);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->signal, SIGSEGV);

  request.shell_command = "missing";
  EXPECT_EQ(runner.Run(request).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(runner.run_count(), 3u);
}

TEST(FakeCommandRunnerTest, HonorsCancellationAndHandlerReplacement) {
  FakeCommandRunner runner;
  runner.SetHandler([](const ExecRequest&) -> absl::StatusOr<ExecResult> {
    return FakeCommandRunner::Exited(1);
  });
  ExecRequest request;
  request.argv = {"bench"};
  Cancellation cancel;
  absl::StatusOr<ExecResult> result = runner.Run(request, &cancel);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->exit_code, 1);
  cancel.Cancel();
  result = runner.Run(request, &cancel);
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->cancelled);
  EXPECT_EQ(runner.run_count(), 2u);
}

}  // namespace
}  // namespace kbisect
