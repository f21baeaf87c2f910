// Copyright 2026 The kbisect Authors.
//
// LeaseTable on its own: attempts, the live lease of a task, fencing of reported results,
// renewals and expiry.
#include "coordinator/lease_table.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace kbisect {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);
using Fence = LeaseTable::Fence;
using State = LeaseTable::State;

TEST(LeaseTableTest, EachGrantOfATaskTakesTheNextAttemptAndBecomesItsLiveLease) {
  LeaseTable table;
  const LeaseTable::Lease& first = table.Grant("lease-1", "job-1", "task-1", "w0", kNow);
  EXPECT_EQ(first.attempt, 1);
  EXPECT_EQ(first.state, State::kActive);
  EXPECT_EQ(table.LiveLeaseOf("task-1"), table.Find("lease-1"));
  ASSERT_TRUE(table.End(*table.Find("lease-1"), State::kDead));
  EXPECT_EQ(table.LiveLeaseOf("task-1"), nullptr);
  EXPECT_EQ(table.Grant("lease-2", "job-1", "task-1", "w1", kNow).attempt, 2);
  EXPECT_EQ(table.LiveLeaseOf("task-1")->lease_id, "lease-2");
  // Another task counts its own attempts.
  EXPECT_EQ(table.Grant("lease-3", "job-1", "task-2", "w0", kNow).attempt, 1);
}

TEST(LeaseTableTest, ARecordedAttemptFromTheJournalPushesTheNextGrantPastIt) {
  LeaseTable table;
  table.RecordAttempt("task-1", 3);
  table.RecordAttempt("task-1", 2);  // An older one changes nothing.
  EXPECT_EQ(table.Grant("lease-1", "job-1", "task-1", "w0", kNow).attempt, 4);
}

TEST(LeaseTableTest, AnEndedLeaseCannotEndAgain) {
  LeaseTable table;
  table.Grant("lease-1", "job-1", "task-1", "w0", kNow);
  LeaseTable::Lease& lease = *table.Find("lease-1");
  EXPECT_TRUE(table.End(lease, State::kCompleted));
  EXPECT_FALSE(table.End(lease, State::kDead));
  EXPECT_EQ(lease.state, State::kCompleted);
}

TEST(LeaseTableTest, AResultIsAcceptedOnlyFromTheHolderOfTheLiveLeaseForItsAttempt) {
  LeaseTable table;
  table.Grant("lease-1", "job-1", "task-1", "w0", kNow);
  EXPECT_EQ(table.CheckResult("lease-9", "w0", 1), Fence::kUnknownLease);
  EXPECT_EQ(table.CheckResult("lease-1", "w1", 1), Fence::kNotHolder);
  EXPECT_EQ(table.CheckResult("lease-1", "w0", 2), Fence::kWrongAttempt);
  EXPECT_EQ(table.CheckResult("lease-1", "w0", 1), Fence::kAccept);
  table.End(*table.Find("lease-1"), State::kCompleted);
  EXPECT_EQ(table.CheckResult("lease-1", "w0", 1), Fence::kDuplicate);

  table.Grant("lease-2", "job-1", "task-2", "w0", kNow);
  table.End(*table.Find("lease-2"), State::kDead);
  EXPECT_EQ(table.CheckResult("lease-2", "w0", 1), Fence::kEnded);
}

TEST(LeaseTableTest, OnlyTheHolderRenewsAnActiveLease) {
  LeaseTable table;
  table.Grant("lease-1", "job-1", "task-1", "w0", kNow);
  EXPECT_FALSE(table.Renew("lease-1", "w1", kNow + absl::Seconds(10)));
  EXPECT_EQ(table.Find("lease-1")->expire, kNow);
  EXPECT_TRUE(table.Renew("lease-1", "w0", kNow + absl::Seconds(10)));
  EXPECT_EQ(table.Find("lease-1")->expire, kNow + absl::Seconds(10));
  EXPECT_FALSE(table.Renew("lease-9", "w0", kNow));
  table.End(*table.Find("lease-1"), State::kDead);
  EXPECT_FALSE(table.Renew("lease-1", "w0", kNow + absl::Seconds(20)));
}

TEST(LeaseTableTest, ExpiredBeforeListsTheActiveLeasesPastTheirExpiryInIdOrder) {
  LeaseTable table;
  table.Grant("lease-3", "job-1", "task-3", "w2", kNow - absl::Seconds(1));
  table.Grant("lease-1", "job-1", "task-1", "w0", kNow - absl::Seconds(5));
  table.Grant("lease-2", "job-1", "task-2", "w1", kNow + absl::Seconds(5));
  table.Grant("lease-4", "job-1", "task-4", "w3", kNow - absl::Seconds(5));
  table.End(*table.Find("lease-4"), State::kCompleted);  // Ended: never expires.
  EXPECT_EQ(table.ExpiredBefore(kNow), (std::vector<std::string>{"lease-1", "lease-3"}));
  EXPECT_EQ(table.ExpiredBefore(kNow - absl::Seconds(2)), (std::vector<std::string>{"lease-1"}));
  EXPECT_EQ(table.expiries(), 0);
  table.CountExpiry();
  table.Clear();
  EXPECT_EQ(table.expiries(), 1);  // Since the process started: kept across Clear.
  EXPECT_EQ(table.Find("lease-1"), nullptr);
  EXPECT_TRUE(table.ExpiredBefore(kNow + absl::Hours(1)).empty());
  EXPECT_EQ(table.Grant("lease-5", "job-1", "task-1", "w0", kNow).attempt, 1);
}

}  // namespace
}  // namespace kbisect
