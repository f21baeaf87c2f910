// Copyright 2026 The kbisect Authors.
//
// kbisect::Mutex, MutexLock, CondVar and Notification keep absl's contracts, and in a
// ThreadSanitizer build (scripts/test.sh --sanitize thread) every hand-off below is ordered for
// TSan: each test passes data between threads only through one of these types, so a missing or
// misplaced annotation shows as a data race report, which fails the test binary.
#include "common/sync/mutex.h"

#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/sync/notification.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

TEST(MutexTest, MutexLockSerialisesWriters) {
  Mutex mu;
  int counter = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        MutexLock lock(&mu);
        ++counter;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  MutexLock lock(&mu);
  EXPECT_EQ(counter, 4000);
}

TEST(MutexTest, LockAndUnlockHandOverPlainData) {
  Mutex mu;
  bool ready = false;
  std::vector<int> payload;  // Written before the unlock, read after the lock, outside both.
  std::thread writer([&] {
    payload = {1, 2, 3};
    mu.Lock();
    ready = true;
    mu.Unlock();
  });
  bool seen = false;
  while (!seen) {
    mu.Lock();
    seen = ready;
    mu.Unlock();
  }
  EXPECT_EQ(payload, (std::vector<int>{1, 2, 3}));
  writer.join();
}

TEST(MutexTest, TryLockFailsWhileAnotherThreadHoldsTheMutex) {
  Mutex mu;
  Notification locked;
  Notification release;
  std::thread holder([&] {
    MutexLock lock(&mu);
    locked.Notify();
    release.WaitForNotification();
  });
  locked.WaitForNotification();
  EXPECT_FALSE(mu.TryLock());
  release.Notify();
  holder.join();
  ASSERT_TRUE(mu.TryLock());
  mu.AssertHeld();
  mu.Unlock();
}

TEST(MutexTest, AwaitReturnsWithTheConditionTrueAndTheWritesVisible) {
  Mutex mu;
  bool ready = false;
  int value = 0;
  int plain = 0;  // Written before the lock that sets `ready`, read after Await returns.
  std::thread writer([&] {
    plain = 7;
    MutexLock lock(&mu);
    value = 42;
    ready = true;
  });
  {
    MutexLock lock(&mu);
    mu.Await(Condition(&ready));
    EXPECT_EQ(value, 42);
  }
  EXPECT_EQ(plain, 7);
  writer.join();
}

TEST(MutexTest, AwaitWithTimeoutAndDeadlineGiveUp) {
  Mutex mu;
  bool never = false;
  MutexLock lock(&mu);
  EXPECT_FALSE(mu.AwaitWithTimeout(Condition(&never), absl::Milliseconds(5)));
  EXPECT_FALSE(mu.AwaitWithDeadline(Condition(&never), absl::Now() + absl::Milliseconds(5)));
  bool always = true;
  EXPECT_TRUE(mu.AwaitWithTimeout(Condition(&always), absl::ZeroDuration()));
  EXPECT_TRUE(mu.AwaitWithDeadline(Condition(&always), absl::InfinitePast()));
}

TEST(MutexTest, AwaitWithTimeoutSeesAConditionMadeTrueByAnotherThread) {
  Mutex mu;
  int stage = 0;
  std::thread writer([&] {
    for (int i = 1; i <= 3; ++i) {
      MutexLock lock(&mu);
      stage = i;
    }
  });
  {
    MutexLock lock(&mu);
    EXPECT_TRUE(mu.AwaitWithTimeout(Condition(
                                        +[](int* s) { return *s == 3; }, &stage),
                                    absl::Seconds(30)));
  }
  writer.join();
}

TEST(CondVarTest, WaitIsSignalledAndHandsOverGuardedData) {
  Mutex mu;
  CondVar cv;
  std::vector<int> queue;
  std::thread producer([&] {
    for (int i = 0; i < 100; ++i) {
      MutexLock lock(&mu);
      queue.push_back(i);
      cv.Signal();
    }
  });
  int sum = 0;
  int taken = 0;
  MutexLock lock(&mu);
  while (taken < 100) {
    while (queue.empty()) cv.Wait(&mu);
    for (int v : queue) sum += v;
    taken += static_cast<int>(queue.size());
    queue.clear();
  }
  EXPECT_EQ(sum, 99 * 100 / 2);
  producer.join();
}

TEST(CondVarTest, TimedWaitsReportTimeouts) {
  Mutex mu;
  CondVar cv;
  MutexLock lock(&mu);
  EXPECT_TRUE(cv.WaitWithTimeout(&mu, absl::Milliseconds(5)));
  EXPECT_TRUE(cv.WaitWithDeadline(&mu, absl::Now() + absl::Milliseconds(5)));
}

TEST(CondVarTest, SignalAllWakesEveryWaiter) {
  Mutex mu;
  CondVar cv;
  bool go = false;
  int woken = 0;
  std::vector<std::thread> waiters;
  for (int t = 0; t < 3; ++t) {
    waiters.emplace_back([&] {
      MutexLock lock(&mu);
      while (!go) cv.WaitWithTimeout(&mu, absl::Seconds(30));
      ++woken;
    });
  }
  {
    MutexLock lock(&mu);
    go = true;
    cv.SignalAll();
  }
  for (std::thread& waiter : waiters) waiter.join();
  MutexLock lock(&mu);
  EXPECT_EQ(woken, 3);
}

TEST(NotificationTest, WaitersSeeWhatWasWrittenBeforeNotify) {
  Notification done;
  std::vector<int> payload;
  std::thread writer([&] {
    payload = {4, 5};
    done.Notify();
  });
  done.WaitForNotification();
  EXPECT_EQ(payload, (std::vector<int>{4, 5}));
  EXPECT_TRUE(done.HasBeenNotified());
  writer.join();
}

TEST(NotificationTest, TimedWaitsAndQueries) {
  Notification n;
  EXPECT_FALSE(n.HasBeenNotified());
  EXPECT_FALSE(n.WaitForNotificationWithTimeout(absl::Milliseconds(5)));
  EXPECT_FALSE(n.WaitForNotificationWithDeadline(absl::Now() + absl::Milliseconds(5)));
  int plain = 0;
  std::thread writer([&] {
    plain = 3;
    n.Notify();
  });
  while (!n.HasBeenNotified()) absl::SleepFor(absl::Milliseconds(1));
  EXPECT_EQ(plain, 3);
  EXPECT_TRUE(n.WaitForNotificationWithTimeout(absl::ZeroDuration()));
  EXPECT_TRUE(n.WaitForNotificationWithDeadline(absl::InfinitePast()));
  writer.join();
}

}  // namespace
}  // namespace kbisect
