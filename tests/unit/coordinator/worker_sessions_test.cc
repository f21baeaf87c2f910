// Copyright 2026 The kbisect Authors.
//
// WorkerSessions on its own, without a Coordinator: the worker calls on its registry and the
// lease table, with a JobSide that records what the calls ask of the jobs. Without a store, so
// nothing waits for a commit; zero-wait polls, so nothing blocks.
#include "coordinator/worker_sessions.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace kbisect {
namespace {

class WorkerSessionsTest : public ::testing::Test {
 protected:
  WorkerSessionsTest()
      : journal_(nullptr, &mu_, &clock_, JournalWriter::Options{}, [] {}),
        ids_("salt"),
        replies_(0),
        sessions_(WorkerSessions::Options{absl::Seconds(1), absl::Seconds(10), absl::Seconds(10)},
                  &mu_, &journal_, &ids_, &leases_, &clock_, nullptr, &replies_, Recording()) {}

  // A JobSide that records each call (with mu_ held, as the coordinator's does) and ends a
  // completed lease as the coordinator would.
  WorkerSessions::JobSide Recording() {
    WorkerSessions::JobSide side;
    side.dispatch = [this] { ++dispatches_; };
    side.lose_lease = [this](LeaseTable::Lease& lease, const std::string& why) {
      mu_.AssertHeld();
      lost_.push_back(lease.lease_id + ": " + why);
      leases_.End(lease, LeaseTable::State::kDead);
      // As Coordinator::EndLeaseLocked does: the lease leaves its worker's list.
      std::vector<std::string>& held = sessions_.registry(mu_).Find(lease.worker_id)->leases;
      held.erase(std::remove(held.begin(), held.end(), lease.lease_id), held.end());
    };
    side.worker_left = [this](WorkerEntry& worker, JournalEntry::Kind kind, const std::string&,
                              const std::string& why) {
      left_.push_back(worker.worker_id + ": " + why);
    };
    side.lease_completed = [this](LeaseTable::Lease& lease, const v1::TaskResult&) {
      mu_.AssertHeld();
      completed_.push_back(lease.lease_id);
      leases_.End(lease, LeaseTable::State::kCompleted);
      return std::optional<WorkerSessions::CacheWrite>();
    };
    side.pool_changed = [] {};
    side.build_ahead = [](const std::string&, int) { return std::vector<v1::Task>(); };
    return side;
  }

  v1::OpenSessionResponse Open(const std::string& name) {
    v1::OpenSessionRequest request;
    request.set_worker_name(name);
    request.mutable_identity()->set_hardware_class("h100");
    absl::StatusOr<v1::OpenSessionResponse> opened = sessions_.OpenSession(request);
    EXPECT_TRUE(opened.ok()) << opened.status();
    return *opened;
  }

  // Grants the worker an active lease, as a dispatch round would.
  std::string Grant(const v1::OpenSessionResponse& session, const std::string& task_id) {
    kbisect::MutexLock lock(&mu_);
    const std::string lease_id = leases_
                                     .Grant("lease-" + task_id, "job-1", task_id,
                                            session.worker_id(), clock_.Now() + absl::Seconds(10))
                                     .lease_id;
    sessions_.registry(mu_).Find(session.worker_id())->leases.push_back(lease_id);
    return lease_id;
  }

  kbisect::Mutex mu_;
  FakeClock clock_;
  JournalWriter journal_;
  IdMinter ids_;
  LeaseTable leases_;
  MutatingReplies replies_;
  int dispatches_ = 0;
  std::vector<std::string> lost_;
  std::vector<std::string> left_;
  std::vector<std::string> completed_;
  WorkerSessions sessions_;
};

TEST_F(WorkerSessionsTest, OpeningASessionRegistersTheWorkerAndDispatches) {
  const v1::OpenSessionResponse session = Open("w1");
  EXPECT_EQ(session.worker_id(), "w1");
  EXPECT_FALSE(session.session_id().empty());
  EXPECT_EQ(dispatches_, 1);
  const v1::ListWorkersResponse workers = sessions_.ListWorkers();
  ASSERT_EQ(workers.workers_size(), 1);
  EXPECT_EQ(workers.workers(0).identity().hardware_class(), "h100");
}

TEST_F(WorkerSessionsTest, AReopenedSessionKeepsOnlyTheLeasesTheWorkerStillHolds) {
  const v1::OpenSessionResponse first = Open("w1");
  const std::string dropped = Grant(first, "task-1");
  const std::string kept = Grant(first, "task-2");
  const std::string also_dropped = Grant(first, "task-3");
  v1::OpenSessionRequest again;
  again.set_worker_name("w1");
  again.mutable_identity()->set_hardware_class("h100");
  again.add_held_leases()->set_lease_id(kept);
  ASSERT_TRUE(sessions_.OpenSession(again).ok());
  EXPECT_EQ(lost_,
            (std::vector<std::string>{dropped + ": the worker reconnected without it",
                                      also_dropped + ": the worker reconnected without it"}));
  {
    kbisect::MutexLock lock(&mu_);
    EXPECT_EQ(sessions_.registry(mu_).Find("w1")->leases, (std::vector<std::string>{kept}));
    EXPECT_EQ(leases_.Find(kept)->state, LeaseTable::State::kActive);
  }
  // The old session's calls learn that another process took the name over.
  v1::SynchronizeRequest old;
  old.set_session_id(first.session_id());
  EXPECT_TRUE(absl::IsFailedPrecondition(sessions_.Synchronize(old).status()));
}

TEST_F(WorkerSessionsTest, AWorkerBackOnOtherHardwareLeavesTheJobsFirst) {
  Open("w1");
  v1::OpenSessionRequest again;
  again.set_worker_name("w1");
  again.mutable_identity()->set_hardware_class("a100");
  ASSERT_TRUE(sessions_.OpenSession(again).ok());
  EXPECT_EQ(
      left_,
      (std::vector<std::string>{"w1: it reconnected with a different GPU, driver or toolkit"}));
}

TEST_F(WorkerSessionsTest, AHeartbeatRenewsReportedLeasesAndCancelsDeadOnes) {
  const v1::OpenSessionResponse session = Open("w1");
  const std::string live = Grant(session, "task-1");
  v1::SynchronizeRequest beat;
  beat.set_session_id(session.session_id());
  beat.add_leases()->set_lease_id(live);
  beat.add_leases()->set_lease_id("lease-unknown");
  absl::StatusOr<v1::SynchronizeResponse> answer = sessions_.Synchronize(beat);
  ASSERT_TRUE(answer.ok()) << answer.status();
  ASSERT_EQ(answer->cancellations_size(), 1);
  EXPECT_EQ(answer->cancellations(0).lease_id(), "lease-unknown");
  EXPECT_TRUE(lost_.empty());
  // A delivered lease it no longer reports is lost.
  v1::SynchronizeRequest without;
  without.set_session_id(session.session_id());
  ASSERT_TRUE(sessions_.Synchronize(without).ok());
  EXPECT_EQ(lost_, (std::vector<std::string>{live + ": the worker no longer holds it"}));
}

TEST_F(WorkerSessionsTest, OnlyTheLiveLeasesResultIsHandedToTheJobs) {
  const v1::OpenSessionResponse session = Open("w1");
  const std::string lease = Grant(session, "task-1");
  v1::CompleteLeaseRequest wrong;
  wrong.set_session_id(session.session_id());
  wrong.set_lease_id(lease);
  wrong.set_attempt(2);
  absl::StatusOr<v1::CompleteLeaseResponse> refused = sessions_.CompleteLease(wrong);
  ASSERT_TRUE(refused.ok());
  EXPECT_FALSE(refused->accepted());
  EXPECT_TRUE(completed_.empty());

  v1::CompleteLeaseRequest right = wrong;
  right.set_attempt(1);
  absl::StatusOr<v1::CompleteLeaseResponse> accepted = sessions_.CompleteLease(right);
  ASSERT_TRUE(accepted.ok());
  EXPECT_TRUE(accepted->accepted());
  EXPECT_EQ(completed_, (std::vector<std::string>{lease}));
  // Reported again: a duplicate, not handed over twice.
  absl::StatusOr<v1::CompleteLeaseResponse> again = sessions_.CompleteLease(right);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->duplicate());
  EXPECT_EQ(completed_.size(), 1u);
}

TEST_F(WorkerSessionsTest, ClosingASessionLosesItsLeasesAndTheWorkerLeaves) {
  const v1::OpenSessionResponse session = Open("w1");
  const std::string lease = Grant(session, "task-1");
  v1::CloseSessionRequest close;
  close.set_session_id(session.session_id());
  ASSERT_TRUE(sessions_.CloseSession(close).ok());
  EXPECT_EQ(lost_, (std::vector<std::string>{lease + ": the worker closed its session"}));
  EXPECT_EQ(left_, (std::vector<std::string>{"w1: it closed its session"}));
  EXPECT_EQ(sessions_.ListWorkers().workers(0).state(), v1::WORKER_STATE_LOST);
}

TEST_F(WorkerSessionsTest, AfterShutdownWorkerCallsAreRefused) {
  const v1::OpenSessionResponse session = Open("w1");
  {
    kbisect::MutexLock lock(&mu_);
    sessions_.Shutdown(mu_);
  }
  v1::SynchronizeRequest beat;
  beat.set_session_id(session.session_id());
  EXPECT_TRUE(absl::IsUnavailable(sessions_.Synchronize(beat).status()));
  v1::OpenSessionRequest open;
  open.set_worker_name("w2");
  EXPECT_TRUE(absl::IsUnavailable(sessions_.OpenSession(open).status()));
}

}  // namespace
}  // namespace kbisect
