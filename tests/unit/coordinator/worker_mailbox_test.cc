// Copyright 2026 The kbisect Authors.
//
// WorkerMailbox: a poll takes only what is durable, in deposit order; a newer poll supersedes an
// older one; a closed mailbox sends every poll back to the coordinator; and a poll may begin
// without the coordinator only when the heartbeat would change nothing there. A poll that waits
// without a thread (AwaitAsync) ends the same ways, exactly once, on the scheduler's thread.
#include "coordinator/worker_mailbox.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "common/clock/clock.h"
#include "common/sync/mutex.h"
#include "coordinator/poll_scheduler.h"
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

// Records the ends of the polls that waited without a thread, and waits for them.
class Ends {
 public:
  WorkerMailbox::Continuation Record() {
    return [this](WorkerMailbox::Outcome outcome, WorkerMailbox::Delivery delivery) {
      kbisect::MutexLock lock(&mu_);
      outcomes_.push_back(outcome);
      delivered_ += static_cast<int>(delivery.assignments.size() + delivery.cancellations.size());
      thread_ids_.push_back(std::this_thread::get_id());
      changed_.SignalAll();
    };
  }
  // Waits (real time, at most `patience`) until `count` polls ended; returns the outcomes.
  std::vector<WorkerMailbox::Outcome> AwaitCount(size_t count,
                                                 absl::Duration patience = absl::Seconds(30)) {
    kbisect::MutexLock lock(&mu_);
    const absl::Time give_up = absl::Now() + patience;
    while (outcomes_.size() < count && absl::Now() < give_up) {
      changed_.WaitWithTimeout(&mu_, absl::Milliseconds(10));
    }
    return outcomes_;
  }
  int delivered() {
    kbisect::MutexLock lock(&mu_);
    return delivered_;
  }
  bool RanOn(std::thread::id id) {
    kbisect::MutexLock lock(&mu_);
    for (std::thread::id ran : thread_ids_) {
      if (ran == id) return true;
    }
    return false;
  }

 private:
  kbisect::Mutex mu_;
  kbisect::CondVar changed_;
  std::vector<WorkerMailbox::Outcome> outcomes_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread::id> thread_ids_ ABSL_GUARDED_BY(mu_);
  int delivered_ ABSL_GUARDED_BY(mu_) = 0;
};

class AsyncPollTest : public ::testing::Test {
 protected:
  std::atomic<uint64_t> durable_{0};
  FakeClock clock_;
  Ends ends_;  // Outlives the scheduler, which may still run what it recorded.
  PollScheduler scheduler_{&clock_, 2};
  std::shared_ptr<WorkerMailbox> mailbox_ = std::make_shared<WorkerMailbox>(&durable_);
};

TEST_F(AsyncPollTest, APollWithNewsEndsAtOnceOnTheCallingThread) {
  mailbox_->Deposit(Lease("a"), 0);
  const uint64_t poll = mailbox_->BeginPoll();
  mailbox_->AwaitAsync(poll, clock_.Now() + absl::Seconds(5), &scheduler_, ends_.Record());
  EXPECT_EQ(ends_.AwaitCount(1),
            std::vector<WorkerMailbox::Outcome>{WorkerMailbox::Outcome::kDelivered});
  EXPECT_TRUE(ends_.RanOn(std::this_thread::get_id()));
  EXPECT_EQ(ends_.delivered(), 1);
  EXPECT_EQ(scheduler_.timed(), 0) << "nothing waits";
}

TEST_F(AsyncPollTest, AWaitingPollEndsWhenItsLeaseIsDurableNotOnTheDepositingThread) {
  const uint64_t poll = mailbox_->BeginPoll();
  mailbox_->AwaitAsync(poll, clock_.Now() + absl::Seconds(5), &scheduler_, ends_.Record());
  mailbox_->Deposit(Lease("a"), 1);  // Not durable: it goes on waiting.
  EXPECT_TRUE(ends_.AwaitCount(0).empty());
  durable_ = 1;
  mailbox_->Notify();  // Under the coordinator's mutex in the product: nothing runs here.
  EXPECT_EQ(ends_.AwaitCount(1),
            std::vector<WorkerMailbox::Outcome>{WorkerMailbox::Outcome::kDelivered});
  EXPECT_FALSE(ends_.RanOn(std::this_thread::get_id()));
  EXPECT_EQ(ends_.delivered(), 1);
  EXPECT_FALSE(mailbox_->Undelivered("a"));
}

TEST_F(AsyncPollTest, AWaitingPollEndsAtItsDeadlineOnTheClock) {
  const uint64_t poll = mailbox_->BeginPoll();
  mailbox_->AwaitAsync(poll, clock_.Now() + absl::Seconds(5), &scheduler_, ends_.Record());
  clock_.Advance(absl::Seconds(4));
  EXPECT_TRUE(ends_.AwaitCount(0).empty());
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(ends_.AwaitCount(1),
            std::vector<WorkerMailbox::Outcome>{WorkerMailbox::Outcome::kTimedOut});
  EXPECT_EQ(ends_.delivered(), 0);
}

TEST_F(AsyncPollTest, ANewerPollOrAClosedMailboxEndsTheWaitingOneExactlyOnce) {
  const uint64_t first = mailbox_->BeginPoll();
  mailbox_->AwaitAsync(first, clock_.Now() + absl::Seconds(5), &scheduler_, ends_.Record());
  const uint64_t second = mailbox_->BeginPoll();
  EXPECT_EQ(ends_.AwaitCount(1),
            std::vector<WorkerMailbox::Outcome>{WorkerMailbox::Outcome::kSuperseded});
  mailbox_->AwaitAsync(second, clock_.Now() + absl::Seconds(5), &scheduler_, ends_.Record());
  mailbox_->Close();
  EXPECT_EQ(ends_.AwaitCount(2),
            (std::vector<WorkerMailbox::Outcome>{WorkerMailbox::Outcome::kSuperseded,
                                                 WorkerMailbox::Outcome::kClosed}));
  // Their deadlines pass: neither ends a second time, and a deposit finds no poll.
  mailbox_->Deposit(Lease("late"), 0);
  clock_.Advance(absl::Seconds(10));
  EXPECT_EQ(ends_.AwaitCount(3, absl::Milliseconds(200)).size(), 2u);
  // A poll of a superseded sequence ends at once.
  Ends stale;
  mailbox_->AwaitAsync(first, clock_.Now() + absl::Seconds(5), &scheduler_, stale.Record());
  EXPECT_EQ(stale.AwaitCount(1),
            std::vector<WorkerMailbox::Outcome>{WorkerMailbox::Outcome::kClosed});
}

TEST_F(AsyncPollTest, ManyPollsWaitOnFewThreads) {
  // A thousand idle workers' polls wait on the scheduler's two threads and one timer.
  std::vector<std::shared_ptr<WorkerMailbox>> mailboxes;
  for (int i = 0; i < 1000; ++i) {
    mailboxes.push_back(std::make_shared<WorkerMailbox>(&durable_));
    const uint64_t poll = mailboxes.back()->BeginPoll();
    mailboxes.back()->AwaitAsync(poll, clock_.Now() + absl::Seconds(1 + i % 10), &scheduler_,
                                 ends_.Record());
  }
  EXPECT_EQ(scheduler_.timed(), 1000);
  for (int i = 0; i < 500; ++i) mailboxes[i]->Deposit(Lease("a"), 0);
  EXPECT_EQ(ends_.AwaitCount(500).size(), 500u);
  clock_.Advance(absl::Seconds(10));
  EXPECT_EQ(ends_.AwaitCount(1000).size(), 1000u);
  EXPECT_EQ(ends_.delivered(), 500);
}

TEST(SessionMailboxesTest, FindsTheMailboxOfALiveSessionOnly) {
  std::atomic<uint64_t> durable{0};
  SessionMailboxes sessions;
  auto first = std::make_shared<WorkerMailbox>(&durable);
  auto second = std::make_shared<WorkerMailbox>(&durable);
  EXPECT_EQ(sessions.Find("s1"), nullptr);
  sessions.Add("s1", first);
  sessions.Add("s2", second);
  EXPECT_EQ(sessions.Find("s1"), first);
  EXPECT_EQ(sessions.Find("s2"), second);
  sessions.Remove("s1");  // The worker opened a new session or was lost.
  EXPECT_EQ(sessions.Find("s1"), nullptr);
  EXPECT_EQ(sessions.Find("s2"), second);
  sessions.Remove("s1");  // Removing twice is harmless.
  EXPECT_EQ(sessions.Find("s2"), second);
}

}  // namespace
}  // namespace kbisect
