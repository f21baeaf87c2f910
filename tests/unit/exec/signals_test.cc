// Copyright 2026 The kbisect Authors.
#include "common/exec/signals.h"

#include <signal.h>

#include "gtest/gtest.h"

namespace kbisect {
namespace {

TEST(SignalsTest, BlockedTerminationSignalsAreReceivedSynchronously) {
  BlockTerminationSignals();
  EXPECT_EQ(WaitForTerminationSignal(absl::Milliseconds(10)), 0);
  ASSERT_EQ(raise(SIGTERM), 0);  // Pending, not fatal: it is blocked.
  EXPECT_EQ(WaitForTerminationSignal(absl::Seconds(5)), SIGTERM);
  ASSERT_EQ(raise(SIGINT), 0);
  EXPECT_EQ(WaitForTerminationSignal(absl::Seconds(5)), SIGINT);
  EXPECT_EQ(WaitForTerminationSignal(absl::ZeroDuration()), 0);
}

}  // namespace
}  // namespace kbisect
