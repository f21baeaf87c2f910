// Copyright 2026 The kbisect Authors.
//
// WorkerEntry's rules on their own: when a worker may be handed a task, what its mailbox is told
// of it, when it was last heard of, and when it counts as gone.
#include "coordinator/worker_entry.h"

#include <atomic>
#include <memory>

#include "gtest/gtest.h"

namespace kbisect {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

WorkerEntry ReadyWorker() {
  WorkerEntry worker;
  worker.worker_id = "w0";
  worker.session_id = "s0";
  worker.ready = true;
  return worker;
}

TEST(WorkerEntryTest, IdleOnlyWithASessionReadyNotDrainingNotLostAndWithoutLeases) {
  EXPECT_TRUE(ReadyWorker().Idle());
  WorkerEntry no_session = ReadyWorker();
  no_session.session_id.clear();
  EXPECT_FALSE(no_session.Idle());
  WorkerEntry not_ready = ReadyWorker();
  not_ready.ready = false;
  EXPECT_FALSE(not_ready.Idle());
  WorkerEntry draining = ReadyWorker();
  draining.draining = true;
  EXPECT_FALSE(draining.Idle());
  WorkerEntry lost = ReadyWorker();
  lost.state = v1::WORKER_STATE_LOST;
  EXPECT_FALSE(lost.Idle());
  WorkerEntry busy = ReadyWorker();
  busy.leases.push_back("lease-1");
  EXPECT_FALSE(busy.Idle());
}

TEST(WorkerEntryTest, ItsMailboxLearnsItsStandingAndAPollWithoutChangesIsItsHeartbeat) {
  std::atomic<uint64_t> durable{0};
  WorkerEntry worker = ReadyWorker();
  worker.StandingChanged();  // No mailbox: nothing to tell, and nothing breaks.
  worker.last_seen = kNow;
  EXPECT_EQ(worker.LastSeen(), kNow);

  worker.mailbox = std::make_shared<WorkerMailbox>(&durable);
  EXPECT_EQ(worker.LastSeen(), kNow) << "no heartbeat in the mailbox yet";
  // Not ready by its standing until told: a poll without changes is refused.
  EXPECT_EQ(worker.mailbox->BeginPollWithoutChanges(kNow + absl::Seconds(1)), 0u);
  worker.StandingChanged();
  EXPECT_NE(worker.mailbox->BeginPollWithoutChanges(kNow + absl::Seconds(2)), 0u);
  EXPECT_EQ(worker.LastSeen(), kNow + absl::Seconds(2)) << "the mailbox's heartbeat is later";
  worker.last_seen = kNow + absl::Seconds(5);
  EXPECT_EQ(worker.LastSeen(), kNow + absl::Seconds(5));

  // Draining: the mailbox is told, and a poll then takes the coordinator's mutex.
  worker.draining = true;
  worker.StandingChanged();
  EXPECT_EQ(worker.mailbox->BeginPollWithoutChanges(kNow + absl::Seconds(6)), 0u);
}

TEST(WorkerEntryTest, ItIsOverdueOnceUnheardForALeaseWithASessionAndNotYetLost) {
  WorkerEntry worker = ReadyWorker();
  worker.last_seen = kNow;
  const absl::Duration lease = absl::Seconds(10);
  EXPECT_FALSE(worker.HeartbeatOverdue(kNow + lease, lease)) << "exactly a lease: not yet";
  EXPECT_TRUE(worker.HeartbeatOverdue(kNow + lease + absl::Seconds(1), lease));
  worker.state = v1::WORKER_STATE_LOST;
  EXPECT_FALSE(worker.HeartbeatOverdue(kNow + absl::Hours(1), lease)) << "lost once only";
  worker.state = v1::WORKER_STATE_IDLE;
  worker.session_id.clear();
  EXPECT_FALSE(worker.HeartbeatOverdue(kNow + absl::Hours(1), lease)) << "no session to lose";
}

TEST(WorkerEntryTest, AWorkerFromBeforeARestartIsOverdueAfterTheGraceUnlessItReconnected) {
  WorkerEntry worker;
  worker.last_seen = kNow;
  worker.awaiting_reconnect = true;
  const absl::Duration grace = absl::Seconds(30);
  EXPECT_FALSE(worker.ReconnectOverdue(kNow + grace, grace));
  EXPECT_TRUE(worker.ReconnectOverdue(kNow + grace + absl::Seconds(1), grace));
  worker.awaiting_reconnect = false;
  EXPECT_FALSE(worker.ReconnectOverdue(kNow + absl::Hours(1), grace));
}

}  // namespace
}  // namespace kbisect
