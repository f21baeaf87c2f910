// Copyright 2026 The kbisect Authors.
//
// WorkerMailbox: a poll takes only what is durable, in deposit order; a newer poll supersedes an
// older one; a closed mailbox sends every poll back to the coordinator; and a poll may begin
// without the coordinator only when the heartbeat would change nothing there.
#include "coordinator/worker_mailbox.h"

#include <atomic>
#include <string>
#include <thread>

#include "absl/time/time.h"
#include "common/clock/clock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

v1::Lease Lease(const std::string& id) {
  v1::Lease lease;
  lease.set_lease_id(id);
  return lease;
}

v1::LeaseCancellation Cancellation(const std::string& id) {
  v1::LeaseCancellation cancel;
  cancel.set_lease_id(id);
  return cancel;
}

class WorkerMailboxTest : public ::testing::Test {
 protected:
  // Takes what is durable now, without waiting.
  WorkerMailbox::Outcome TakeNow(uint64_t sequence, WorkerMailbox::Delivery* delivery) {
    return mailbox_.Await(sequence, &clock_, absl::InfinitePast(), delivery);
  }

  std::atomic<uint64_t> durable_{0};
  FakeClock clock_;
  WorkerMailbox mailbox_{&durable_};
};

TEST_F(WorkerMailboxTest, APollTakesOnlyWhatIsDurableInDepositOrder) {
  mailbox_.Deposit(Lease("a"), 1);
  mailbox_.Deposit(Lease("b"), 2);
  mailbox_.DepositCancellation(Cancellation("c"), 2);
  const uint64_t poll = mailbox_.BeginPoll();
  WorkerMailbox::Delivery delivery;
  EXPECT_EQ(TakeNow(poll, &delivery), WorkerMailbox::Outcome::kTimedOut);
  EXPECT_TRUE(delivery.empty()) << "nothing is shown before its batch is durable";

  durable_ = 1;
  EXPECT_EQ(TakeNow(poll, &delivery), WorkerMailbox::Outcome::kDelivered);
  ASSERT_EQ(delivery.assignments.size(), 1u);
  EXPECT_EQ(delivery.assignments[0].lease_id(), "a");
  EXPECT_TRUE(delivery.cancellations.empty());
  EXPECT_TRUE(mailbox_.Undelivered("b"));
  EXPECT_FALSE(mailbox_.Undelivered("a"));

  durable_ = 2;
  WorkerMailbox::Delivery rest;
  EXPECT_EQ(TakeNow(poll, &rest), WorkerMailbox::Outcome::kDelivered);
  ASSERT_EQ(rest.assignments.size(), 1u);
  EXPECT_EQ(rest.assignments[0].lease_id(), "b");
  ASSERT_EQ(rest.cancellations.size(), 1u);
  EXPECT_EQ(rest.cancellations[0].lease_id(), "c");
}

TEST_F(WorkerMailboxTest, AWaitingPollIsAnsweredOnceItsLeaseIsDurable) {
  const uint64_t poll = mailbox_.BeginPoll();
  WorkerMailbox::Outcome outcome = WorkerMailbox::Outcome::kTimedOut;
  WorkerMailbox::Delivery delivery;
  std::thread waiter(
      [&] { outcome = mailbox_.Await(poll, &clock_, clock_.Now() + absl::Seconds(5), &delivery); });
  ASSERT_TRUE(clock_.BlockUntilWaiters(1));
  mailbox_.Deposit(Lease("a"), 1);  // Not durable yet: the poll goes on waiting.
  ASSERT_TRUE(clock_.BlockUntilWaiters(1));
  durable_ = 1;
  mailbox_.Notify();  // What the commit's leader does once the batch is durable.
  waiter.join();
  EXPECT_EQ(outcome, WorkerMailbox::Outcome::kDelivered);
  ASSERT_EQ(delivery.assignments.size(), 1u);
  EXPECT_EQ(delivery.assignments[0].lease_id(), "a");
}

TEST_F(WorkerMailboxTest, ADepositAlreadyDurableWakesThePollItself) {
  durable_ = 3;
  const uint64_t poll = mailbox_.BeginPoll();
  WorkerMailbox::Outcome outcome = WorkerMailbox::Outcome::kTimedOut;
  WorkerMailbox::Delivery delivery;
  std::thread waiter(
      [&] { outcome = mailbox_.Await(poll, &clock_, clock_.Now() + absl::Seconds(5), &delivery); });
  ASSERT_TRUE(clock_.BlockUntilWaiters(1));
  mailbox_.Deposit(Lease("a"), 3);
  waiter.join();
  EXPECT_EQ(outcome, WorkerMailbox::Outcome::kDelivered);
  EXPECT_EQ(delivery.assignments.size(), 1u);
}

TEST_F(WorkerMailboxTest, ANewerPollSupersedesTheWaitingOneWhichTakesNothing) {
  const uint64_t first = mailbox_.BeginPoll();
  WorkerMailbox::Outcome outcome = WorkerMailbox::Outcome::kDelivered;
  WorkerMailbox::Delivery delivery;
  std::thread waiter([&] {
    outcome = mailbox_.Await(first, &clock_, clock_.Now() + absl::Seconds(5), &delivery);
  });
  ASSERT_TRUE(clock_.BlockUntilWaiters(1));
  const uint64_t second = mailbox_.BeginPoll();
  waiter.join();
  EXPECT_EQ(outcome, WorkerMailbox::Outcome::kSuperseded);
  mailbox_.Deposit(Lease("a"), 0);
  EXPECT_EQ(TakeNow(first, &delivery), WorkerMailbox::Outcome::kSuperseded);
  EXPECT_TRUE(delivery.empty());
  EXPECT_EQ(TakeNow(second, &delivery), WorkerMailbox::Outcome::kDelivered);
  EXPECT_EQ(delivery.assignments.size(), 1u);
}

TEST_F(WorkerMailboxTest, AClosedMailboxSendsEveryPollBack) {
  const uint64_t poll = mailbox_.BeginPoll();
  WorkerMailbox::Outcome outcome = WorkerMailbox::Outcome::kDelivered;
  WorkerMailbox::Delivery delivery;
  std::thread waiter(
      [&] { outcome = mailbox_.Await(poll, &clock_, clock_.Now() + absl::Seconds(5), &delivery); });
  ASSERT_TRUE(clock_.BlockUntilWaiters(1));
  mailbox_.Close();
  waiter.join();
  EXPECT_EQ(outcome, WorkerMailbox::Outcome::kClosed);
  mailbox_.Deposit(Lease("a"), 0);
  EXPECT_EQ(TakeNow(mailbox_.BeginPoll(), &delivery), WorkerMailbox::Outcome::kClosed);
  EXPECT_TRUE(delivery.empty()) << "a closed session's lease is never shown";
  EXPECT_TRUE(mailbox_.closed());
}

TEST_F(WorkerMailboxTest, APollEndsEmptyHandedAtItsDeadline) {
  const uint64_t poll = mailbox_.BeginPoll();
  WorkerMailbox::Outcome outcome = WorkerMailbox::Outcome::kDelivered;
  WorkerMailbox::Delivery delivery;
  std::thread waiter(
      [&] { outcome = mailbox_.Await(poll, &clock_, clock_.Now() + absl::Seconds(5), &delivery); });
  ASSERT_TRUE(clock_.BlockUntilWaiters(1));
  mailbox_.Deposit(Lease("a"), 1);  // Never durable in this test.
  clock_.Advance(absl::Seconds(5));
  waiter.join();
  EXPECT_EQ(outcome, WorkerMailbox::Outcome::kTimedOut);
  EXPECT_TRUE(delivery.empty());
  EXPECT_TRUE(mailbox_.Undelivered("a")) << "kept for the next poll";
}

TEST_F(WorkerMailboxTest, AWithdrawnLeaseIsNeverDelivered) {
  mailbox_.Deposit(Lease("a"), 0);
  mailbox_.Deposit(Lease("b"), 0);
  EXPECT_TRUE(mailbox_.Withdraw("a"));
  EXPECT_FALSE(mailbox_.Withdraw("a"));
  WorkerMailbox::Delivery delivery;
  EXPECT_EQ(TakeNow(mailbox_.BeginPoll(), &delivery), WorkerMailbox::Outcome::kDelivered);
  ASSERT_EQ(delivery.assignments.size(), 1u);
  EXPECT_EQ(delivery.assignments[0].lease_id(), "b");
  EXPECT_FALSE(mailbox_.Withdraw("b")) << "a delivered lease is the worker's";
}

TEST_F(WorkerMailboxTest, APollBeginsWithoutTheCoordinatorOnlyWhenNothingWouldChangeThere) {
  const absl::Time now = clock_.Now();
  // Not ready (a new session before its first Synchronize, draining, or lost).
  EXPECT_EQ(mailbox_.BeginPollWithoutChanges(now), 0u);
  EXPECT_EQ(mailbox_.heartbeat(), absl::InfinitePast());

  // Ready and idle: nothing to renew or lose.
  mailbox_.SetStanding(/*ready=*/true, /*active_leases=*/0);
  const uint64_t idle = mailbox_.BeginPollWithoutChanges(now);
  EXPECT_NE(idle, 0u);
  EXPECT_EQ(mailbox_.heartbeat(), now);

  // One active lease, its assignment waiting here: still nothing to renew or lose.
  mailbox_.SetStanding(true, 1);
  mailbox_.Deposit(Lease("a"), 0);
  const uint64_t waiting = mailbox_.BeginPollWithoutChanges(now + absl::Seconds(1));
  EXPECT_GT(waiting, idle);
  EXPECT_EQ(mailbox_.heartbeat(), now + absl::Seconds(1));
  WorkerMailbox::Delivery delivery;
  EXPECT_EQ(TakeNow(waiting, &delivery), WorkerMailbox::Outcome::kDelivered);

  // The lease was delivered: a poll that does not report it would lose it.
  EXPECT_EQ(mailbox_.BeginPollWithoutChanges(now + absl::Seconds(2)), 0u);
  EXPECT_EQ(mailbox_.heartbeat(), now + absl::Seconds(1));

  // Its cancellation (the lease is no longer active) changes nothing there either.
  mailbox_.SetStanding(true, 0);
  mailbox_.DepositCancellation(Cancellation("a"), 0);
  EXPECT_NE(mailbox_.BeginPollWithoutChanges(now + absl::Seconds(3)), 0u);

  mailbox_.Close();
  EXPECT_EQ(mailbox_.BeginPollWithoutChanges(now + absl::Seconds(4)), 0u);
}

}  // namespace
}  // namespace kbisect
