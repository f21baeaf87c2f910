// Copyright 2026 The kbisect Authors.
//
// FakeClock's waits end when the clock is advanced past their deadline and never before; the
// real clock's waits are absl's. Real time only bounds a failing test (BlockUntilWaiters).
#include "common/clock/clock.h"

#include <thread>

#include "common/sync/mutex.h"
#include "common/sync/notification.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

TEST(FakeClockTest, SleepForWakesOnlyWhenAdvancedPastTheDeadline) {
  FakeClock clock;
  const absl::Time start = clock.Now();
  kbisect::Notification woke;
  std::thread sleeper([&] {
    clock.SleepFor(absl::Seconds(3));
    woke.Notify();
  });
  ASSERT_TRUE(clock.BlockUntilWaiters(1));
  EXPECT_EQ(clock.NextDeadline(), start + absl::Seconds(3));
  clock.Advance(absl::Seconds(3) - absl::Nanoseconds(1));
  EXPECT_FALSE(woke.HasBeenNotified());
  EXPECT_EQ(clock.waiters(), 1);
  clock.Advance(absl::Nanoseconds(1));
  EXPECT_TRUE(woke.WaitForNotificationWithTimeout(absl::Seconds(10)));
  sleeper.join();
  EXPECT_EQ(clock.waiters(), 0);
  EXPECT_EQ(clock.NextDeadline(), absl::InfiniteFuture());
}

TEST(FakeClockTest, WaitsWithAPassedDeadlineReturnAtOnce) {
  FakeClock clock;
  kbisect::Mutex mu;
  kbisect::CondVar cv;
  bool never = false;
  kbisect::MutexLock lock(&mu);
  clock.SleepFor(absl::ZeroDuration());
  EXPECT_FALSE(clock.AwaitWithDeadline(&mu, kbisect::Condition(&never), clock.Now()));
  EXPECT_TRUE(clock.WaitWithDeadline(&cv, &mu, clock.Now() - absl::Seconds(1)));
  EXPECT_EQ(clock.waiters(), 0);
}

// A thread that waits on `clock` for `ready` (guarded by `mu`) for at most `timeout`.
class AwaitingThread {
 public:
  AwaitingThread(FakeClock* clock, absl::Duration timeout)
      : thread_([this, clock, timeout] {
          kbisect::MutexLock lock(&mu);
          result_ =
              clock->AwaitWithDeadline(&mu, kbisect::Condition(&ready), clock->Now() + timeout);
        }) {}

  // Joins the thread and returns what AwaitWithDeadline returned.
  bool Join() {
    thread_.join();
    return result_;
  }

  kbisect::Mutex mu;
  bool ready ABSL_GUARDED_BY(mu) = false;

 private:
  bool result_ = false;
  std::thread thread_;
};

TEST(FakeClockTest, AwaitWithDeadlineReturnsWhenTheConditionHolds) {
  FakeClock clock;
  AwaitingThread waiter(&clock, absl::Hours(1));
  ASSERT_TRUE(clock.BlockUntilWaiters(1));
  {
    kbisect::MutexLock lock(&waiter.mu);
    waiter.ready = true;
  }
  EXPECT_TRUE(waiter.Join());
  EXPECT_EQ(clock.waiters(), 0);
}

TEST(FakeClockTest, AwaitWithDeadlineTimesOutOnTheFakeClock) {
  FakeClock clock;
  AwaitingThread waiter(&clock, absl::Minutes(1));
  ASSERT_TRUE(clock.BlockUntilWaiters(1));
  clock.Advance(absl::Minutes(2));
  EXPECT_FALSE(waiter.Join());
}

TEST(FakeClockTest, WaitWithDeadlineIsSignalledOrTimesOut) {
  FakeClock clock;
  kbisect::Mutex mu;
  kbisect::CondVar cv;
  bool signalled = false;
  bool timed_out = true;
  std::thread first([&] {
    kbisect::MutexLock lock(&mu);
    while (!signalled) {
      timed_out = clock.WaitWithDeadline(&cv, &mu, clock.Now() + absl::Hours(1));
      if (timed_out) break;
    }
  });
  ASSERT_TRUE(clock.BlockUntilWaiters(1));
  {
    kbisect::MutexLock lock(&mu);
    signalled = true;
    cv.Signal();
  }
  first.join();
  EXPECT_FALSE(timed_out);

  timed_out = false;
  std::thread second([&] {
    kbisect::MutexLock lock(&mu);
    timed_out = clock.WaitWithDeadline(&cv, &mu, clock.Now() + absl::Seconds(5));
  });
  ASSERT_TRUE(clock.BlockUntilWaiters(1));
  clock.Advance(absl::Seconds(5));
  second.join();
  EXPECT_TRUE(timed_out);
}

TEST(FakeClockTest, OneAdvanceWakesEveryDueWaiterAndNoOther) {
  FakeClock clock;
  kbisect::Notification short_done;
  kbisect::Notification long_done;
  std::thread short_sleeper([&] {
    clock.SleepFor(absl::Seconds(1));
    short_done.Notify();
  });
  std::thread long_sleeper([&] {
    clock.SleepFor(absl::Seconds(10));
    long_done.Notify();
  });
  ASSERT_TRUE(clock.BlockUntilWaiters(2));
  clock.Advance(absl::Seconds(5));
  EXPECT_TRUE(short_done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  short_sleeper.join();
  EXPECT_FALSE(long_done.HasBeenNotified());
  EXPECT_EQ(clock.waiters(), 1);
  clock.Advance(absl::Seconds(5));
  long_sleeper.join();
  EXPECT_TRUE(long_done.HasBeenNotified());
}

TEST(RealClockTest, WaitsUseRealTime) {
  Clock* clock = Clock::Real();
  kbisect::Mutex mu;
  kbisect::CondVar cv;
  bool never = false;
  const absl::Time start = clock->Now();
  clock->SleepFor(absl::Milliseconds(2));
  kbisect::MutexLock lock(&mu);
  EXPECT_FALSE(clock->AwaitWithDeadline(&mu, kbisect::Condition(&never),
                                        clock->Now() + absl::Milliseconds(2)));
  while (!clock->WaitWithDeadline(&cv, &mu, start + absl::Milliseconds(6))) {
  }
  EXPECT_GE(clock->Now() - start, absl::Milliseconds(6));
}

}  // namespace
}  // namespace kbisect
