// Copyright 2026 The kbisect Authors.
//
// WorkerAgent against a scripted coordinator (FakeCoordinatorClient), a FakeClock and a real
// TaskRunner whose commands are a FakeCommandRunner: every wait the agent makes is on the fake
// clock or on the fake coordinator, so these tests never sleep and never depend on timing. Real
// time only bounds a failing test (the fakes' Wait* helpers give up after 10 s).
#include "worker/worker_agent.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/clock/clock.h"
#include "common/sync/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_command_runner.h"
#include "tests/testing/fake_coordinator_client.h"
#include "worker/task_runner.h"
#include "worker/workspace.h"

namespace kbisect {
namespace {

using ::testing::ElementsAre;

constexpr absl::Duration kMinBackoff = absl::Milliseconds(100);
constexpr absl::Duration kMaxBackoff = absl::Seconds(1);

// Hands out one directory without touching the disk (the commands are fake too).
class FixedWorkspace : public Workspace {
 public:
  absl::StatusOr<std::string> Prepare(const std::string& repository, const std::string& sha,
                                      WorkspaceLane lane) override {
    return std::string("/nonexistent/kbisect-worker-agent-test");
  }
};

// A Synchronize answer that assigns lease `lease_id` (attempt `attempt`) of a two-run task.
v1::SynchronizeResponse Assignment(const std::string& lease_id, int attempt) {
  v1::SynchronizeResponse response;
  v1::Lease* lease = response.add_assignments();
  lease->set_lease_id(lease_id);
  lease->set_attempt(attempt);
  v1::Task* task = lease->mutable_task();
  task->set_task_id("task-1");
  task->set_commit_sha("0123456789abcdef0123456789abcdef01234567");
  task->add_bench_command("./bench");
  task->set_runs(2);
  task->mutable_metric()->set_kind(v1::METRIC_KIND_AUTO);
  return response;
}

class WorkerAgentTest : public ::testing::Test {
 protected:
  WorkerAgentTest() {
    options_.name = "host/slot0";
    options_.identity.set_hardware_class("class-a");
    options_.min_backoff = kMinBackoff;
    options_.max_backoff = kMaxBackoff;
    options_.clock = &clock_;
    commands_.SetHandler([this](const ExecRequest&) -> absl::StatusOr<ExecResult> {
      bench_release_.WaitForNotification();
      return FakeCommandRunner::Exited(0, "Latency: 1.5 ms\n");
    });
  }

  ~WorkerAgentTest() override {
    if (!bench_release_.HasBeenNotified()) bench_release_.Notify();
    if (agent_ != nullptr) StopAgent();
  }

  void StartAgent() {
    agent_ = std::make_unique<WorkerAgent>(options_, &coordinator_, &task_runner_);
    thread_ = std::thread([this] {
      agent_->Run();
      run_returned_.Notify();
    });
  }

  // Stops the agent and waits for Run() to return; a Run() that does not return fails the test
  // instead of hanging it.
  void StopAgent() {
    agent_->Stop();
    if (!run_returned_.WaitForNotificationWithTimeout(absl::Seconds(10))) {
      ADD_FAILURE() << "Run() did not return after Stop()";
      coordinator_.Shutdown();
    }
    thread_.join();
    agent_.reset();
  }

  // Asserts that the agent waits on the fake clock for exactly `backoff`, then lets it go on.
  void ExpectBackoff(absl::Duration backoff) {
    ASSERT_TRUE(clock_.BlockUntilWaiters(1)) << "the agent does not back off";
    EXPECT_EQ(clock_.NextDeadline() - clock_.Now(), backoff);
    clock_.Advance(backoff);
  }

  // Starts the agent, waits for its idle long poll to block, calls `leave` (Stop or Drain) and
  // expects Run() to return and close the session. The fake's poll never ends by itself, so Run()
  // can only return because `leave` cancelled it.
  void ExpectLeaveWakesTheIdlePoll(void (WorkerAgent::*leave)()) {
    StartAgent();
    ASSERT_TRUE(coordinator_.WaitForBlockedPoll());
    (agent_.get()->*leave)();
    EXPECT_TRUE(run_returned_.WaitForNotificationWithTimeout(absl::Seconds(10)));
    EXPECT_EQ(coordinator_.cancelled_polls(), 1);
    EXPECT_EQ(coordinator_.calls(FakeCoordinatorClient::kSynchronize), 1);
    const std::vector<v1::CloseSessionRequest> closes = coordinator_.close_session_requests();
    ASSERT_EQ(closes.size(), 1u);
    EXPECT_EQ(closes[0].session_id(), "session-1");
    EXPECT_EQ(clock_.waiters(), 0);
  }

  FakeClock clock_;
  FakeCoordinatorClient coordinator_;
  kbisect::Notification bench_release_;  // The benchmark commands block until this.
  FakeCommandRunner commands_;
  FixedWorkspace workspace_;
  TaskRunner task_runner_{&commands_, &workspace_, {}, &clock_};
  WorkerAgentOptions options_;
  std::unique_ptr<WorkerAgent> agent_;
  std::thread thread_;
  kbisect::Notification run_returned_;
};

TEST_F(WorkerAgentTest, ReconnectsAfterUnavailableWithExponentialBackoffWithinItsBounds) {
  const std::vector<absl::Duration> expected = {absl::Milliseconds(100),
                                                absl::Milliseconds(200),
                                                absl::Milliseconds(400),
                                                absl::Milliseconds(800),
                                                kMaxBackoff,
                                                kMaxBackoff};
  for (size_t i = 0; i < expected.size(); ++i) {
    coordinator_.AddOpenSessionAnswer(absl::UnavailableError("connection refused"));
  }
  coordinator_.AddSynchronizeAnswer(absl::UnavailableError("connection reset"));
  StartAgent();

  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_TRUE(coordinator_.WaitForCalls(FakeCoordinatorClient::kOpenSession, i + 1));
    ASSERT_TRUE(clock_.BlockUntilWaiters(1));
    EXPECT_EQ(clock_.NextDeadline() - clock_.Now(), expected[i]) << "retry " << i + 1;
    // Not a moment early: just before the deadline the agent still waits.
    clock_.Advance(expected[i] - absl::Nanoseconds(1));
    EXPECT_EQ(coordinator_.calls(FakeCoordinatorClient::kOpenSession), static_cast<int>(i + 1));
    EXPECT_EQ(clock_.waiters(), 1);
    clock_.Advance(absl::Nanoseconds(1));
  }
  // The seventh attempt opens the session; the first Synchronize with it fails, and the backoff
  // starts again from the minimum while the session is kept.
  ASSERT_TRUE(coordinator_.WaitForCalls(FakeCoordinatorClient::kSynchronize, 1));
  ExpectBackoff(kMinBackoff);
  ASSERT_TRUE(coordinator_.WaitForBlockedPoll());
  EXPECT_EQ(coordinator_.calls(FakeCoordinatorClient::kOpenSession), 7);
  const std::vector<v1::SynchronizeRequest> polls = coordinator_.synchronize_requests();
  ASSERT_EQ(polls.size(), 2u);
  EXPECT_EQ(polls[0].session_id(), "session-1");
  EXPECT_EQ(polls[1].session_id(), "session-1");
  EXPECT_TRUE(polls[1].ready_for_work());
}

TEST_F(WorkerAgentTest, RetriesCompleteLeaseAfterATransientFailureAndReportsOnce) {
  bench_release_.Notify();
  coordinator_.AddSynchronizeAnswer(Assignment("lease-1", 3));
  coordinator_.AddCompleteLeaseAnswer(absl::UnavailableError("connection reset"));
  StartAgent();

  ASSERT_TRUE(coordinator_.WaitForCalls(FakeCoordinatorClient::kCompleteLease, 1));
  ExpectBackoff(kMinBackoff);
  ASSERT_TRUE(coordinator_.WaitForCalls(FakeCoordinatorClient::kCompleteLease, 2));
  // Accepted: the agent asks for work again and reports nothing more.
  ASSERT_TRUE(coordinator_.WaitForBlockedPoll());
  EXPECT_EQ(agent_->tasks_reported(), 1);
  const v1::SynchronizeRequest last_poll = coordinator_.synchronize_requests().back();
  EXPECT_TRUE(last_poll.ready_for_work());
  EXPECT_EQ(last_poll.leases_size(), 0);
  StopAgent();

  const std::vector<v1::CompleteLeaseRequest> reports = coordinator_.complete_lease_requests();
  ASSERT_EQ(reports.size(), 2u);
  for (const v1::CompleteLeaseRequest& report : reports) {
    EXPECT_EQ(report.session_id(), "session-1");
    EXPECT_EQ(report.lease_id(), "lease-1");
    EXPECT_EQ(report.attempt(), 3);
    EXPECT_EQ(report.result().outcome(), v1::TASK_OUTCOME_SUCCEEDED);
    EXPECT_THAT(report.result().samples(), ElementsAre(1.5, 1.5));
    EXPECT_EQ(report.result().hardware_class(), "class-a");
  }
  EXPECT_EQ(commands_.run_count(), 2u);
  EXPECT_EQ(coordinator_.calls(FakeCoordinatorClient::kCloseSession), 1);
}

TEST_F(WorkerAgentTest, StopWakesABlockedLongPoll) {
  ExpectLeaveWakesTheIdlePoll(&WorkerAgent::Stop);
}

// A Stop() while the session is being opened, before any long poll: the poll that follows is
// cancelled as it starts (`kbisect run` stops its workers as soon as the job is refused, and
// each slot waited out a whole idle poll, 5 s, when the stop came in that window).
TEST_F(WorkerAgentTest, StopWhileTheSessionOpensEndsThePollThatFollows) {
  coordinator_.HoldOpenSession();
  StartAgent();
  ASSERT_TRUE(coordinator_.WaitForHeldOpenSession());
  agent_->Stop();
  coordinator_.ReleaseOpenSession();
  // The fake's poll never ends by itself: Run() returns only if the stop reached it.
  EXPECT_TRUE(run_returned_.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_LE(coordinator_.calls(FakeCoordinatorClient::kSynchronize), 1);
}

TEST_F(WorkerAgentTest, DrainWakesABlockedIdleLongPoll) {
  ExpectLeaveWakesTheIdlePoll(&WorkerAgent::Drain);
}

TEST_F(WorkerAgentTest, ReopensTheSessionWithItsHeldLeaseWhenSynchronizeSaysNotFound) {
  coordinator_.AddSynchronizeAnswer(Assignment("lease-7", 1));
  coordinator_.AddSynchronizeAnswer(absl::NotFoundError("unknown session"));
  StartAgent();

  // The busy poll (the benchmark is blocked) gets NOT_FOUND: the agent opens a new session at
  // once, without a backoff, telling the coordinator which lease it still runs.
  ASSERT_TRUE(coordinator_.WaitForCalls(FakeCoordinatorClient::kOpenSession, 2));
  ASSERT_TRUE(coordinator_.WaitForBlockedPoll());
  EXPECT_EQ(clock_.waiters(), 0);
  const std::vector<v1::OpenSessionRequest> opens = coordinator_.open_session_requests();
  ASSERT_EQ(opens.size(), 2u);
  EXPECT_EQ(opens[0].held_leases_size(), 0);
  ASSERT_EQ(opens[1].held_leases_size(), 1);
  EXPECT_EQ(opens[1].held_leases(0).lease_id(), "lease-7");
  EXPECT_EQ(opens[1].held_leases(0).attempt(), 1);
  EXPECT_EQ(opens[1].worker_name(), "host/slot0");
  const std::vector<v1::SynchronizeRequest> polls = coordinator_.synchronize_requests();
  ASSERT_EQ(polls.size(), 3u);
  EXPECT_EQ(polls[1].session_id(), "session-1");
  EXPECT_EQ(polls[2].session_id(), "session-2");
  ASSERT_EQ(polls[2].leases_size(), 1);
  EXPECT_EQ(polls[2].leases(0).lease_id(), "lease-7");
  EXPECT_FALSE(polls[2].ready_for_work());

  // The result goes to the new session.
  bench_release_.Notify();
  ASSERT_TRUE(coordinator_.WaitForCalls(FakeCoordinatorClient::kCompleteLease, 1));
  ASSERT_TRUE(coordinator_.WaitForBlockedPoll());
  EXPECT_EQ(coordinator_.complete_lease_requests()[0].session_id(), "session-2");
  EXPECT_EQ(agent_->tasks_reported(), 1);
}

}  // namespace
}  // namespace kbisect
