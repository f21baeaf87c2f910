// Copyright 2026 The kbisect Authors.
//
// PollScheduler: what is handed over runs on its threads; a timed function runs once the clock
// reaches its deadline, never before; and destroying the scheduler runs everything still waiting.
#include "coordinator/poll_scheduler.h"

#include <atomic>
#include <thread>

#include "absl/time/time.h"
#include "common/clock/clock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

// Waits (real time, bounded) until `counter` reaches `value`.
bool Reaches(const std::atomic<int>& counter, int value) {
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (counter.load() < value && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(1));
  return counter.load() >= value;
}

TEST(PollSchedulerTest, RunsWhatIsHandedOverOnItsOwnThreads) {
  FakeClock clock;
  PollScheduler scheduler(&clock, 3);
  std::atomic<int> ran{0};
  std::atomic<int> here{0};
  const std::thread::id caller = std::this_thread::get_id();
  for (int i = 0; i < 100; ++i) {
    scheduler.Run([&] {
      if (std::this_thread::get_id() == caller) ++here;
      ++ran;
    });
  }
  EXPECT_TRUE(Reaches(ran, 100));
  EXPECT_EQ(here.load(), 0);
}

TEST(PollSchedulerTest, ATimedFunctionRunsWhenTheClockReachesItsDeadline) {
  FakeClock clock;
  PollScheduler scheduler(&clock, 1);
  std::atomic<int> early{0};
  std::atomic<int> late{0};
  scheduler.RunAt(clock.Now() + absl::Seconds(10), [&] { ++late; });
  scheduler.RunAt(clock.Now() + absl::Seconds(2), [&] { ++early; });  // An earlier deadline.
  scheduler.RunAt(clock.Now() - absl::Seconds(1), [&] { ++early; });  // Past: at once.
  EXPECT_TRUE(Reaches(early, 1));
  EXPECT_EQ(scheduler.timed(), 2);
  clock.Advance(absl::Seconds(2));
  EXPECT_TRUE(Reaches(early, 2));
  EXPECT_EQ(late.load(), 0);
  EXPECT_EQ(scheduler.timed(), 1);
  clock.Advance(absl::Seconds(8));
  EXPECT_TRUE(Reaches(late, 1));
  EXPECT_EQ(scheduler.timed(), 0);
}

TEST(PollSchedulerTest, DestroyingItRunsEverythingStillWaiting) {
  FakeClock clock;
  std::atomic<int> ran{0};
  {
    PollScheduler scheduler(&clock, 2);
    for (int i = 0; i < 10; ++i) {
      scheduler.RunAt(clock.Now() + absl::Hours(1), [&] { ++ran; });
      scheduler.Run([&] { ++ran; });
    }
  }
  EXPECT_EQ(ran.load(), 20);
}

}  // namespace
}  // namespace kbisect
