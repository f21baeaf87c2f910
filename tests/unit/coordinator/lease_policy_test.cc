// Copyright 2026 The kbisect Authors.
#include "coordinator/lease_policy.h"

#include <deque>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

// A round holds views of the names, as of the coordinator's worker map: these live as long as
// the test binary.
absl::string_view Kept(std::string name) {
  static auto* names = new std::deque<std::string>();
  return names->emplace_back(std::move(name));
}

std::vector<DispatchRound::IdleWorker> Idle(const std::vector<std::string>& ids,
                                            const std::string& hardware_class = "H100") {
  std::vector<DispatchRound::IdleWorker> idle;
  for (const std::string& id : ids) idle.push_back({Kept(id), Kept(hardware_class)});
  return idle;
}

DispatchJob Job(int max_workers = 0, int live_leases = 0, std::string hardware_class = "") {
  DispatchJob job;
  job.max_workers = max_workers;
  job.live_leases = live_leases;
  job.hardware_class = std::move(hardware_class);
  return job;
}

TEST(LeasePolicyTest, AnUncappedJobIsAskedAboutEveryIdleWorkerInOrder) {
  DispatchRound round(Idle({"a", "b", "c"}), kNow);
  JobOffers offers;
  EXPECT_THAT(round.Candidates(Job(), offers), ElementsAre("a", "b", "c"));
  // Asking records nothing for an uncapped job.
  EXPECT_THAT(offers.offered(), IsEmpty());
}

TEST(LeasePolicyTest, WorkersThatGotATaskLeaveTheRoundForTheNextJob) {
  DispatchRound round(Idle({"a", "b", "c"}), kNow);
  JobOffers first;
  JobOffers second;
  const std::vector<std::string> asked = round.Candidates(Job(), first);
  round.Answered(asked, {"b"}, first);
  EXPECT_THAT(round.Candidates(Job(), second), ElementsAre("a", "c"));
  round.Answered({"a", "c"}, {"a", "c"}, second);
  EXPECT_TRUE(round.empty());
}

TEST(LeasePolicyTest, AJobIsAskedOnlyAboutWorkersOfItsHardwareClass) {
  std::vector<DispatchRound::IdleWorker> idle = Idle({"h1", "h2"}, "H100");
  idle.push_back({"m1", "MI300"});
  DispatchRound round(std::move(idle), kNow);
  JobOffers offers;
  EXPECT_THAT(round.Candidates(Job(0, 0, "MI300"), offers), ElementsAre("m1"));
  EXPECT_THAT(round.Candidates(Job(0, 0, ""), offers), ElementsAre("h1", "h2", "m1"));
}

TEST(LeasePolicyTest, ACappedJobIsAskedAboutItsOwnWorkersAndAsManyOthersAsItHasRoomFor) {
  DispatchRound round(Idle({"a", "b", "c", "d", "e"}), kNow);
  JobOffers offers;
  offers.WorkerUsed("d");
  offers.WorkerUsed("e");
  // Cap 3, one lease running: room for 2 new workers, on top of the two that worked in it.
  EXPECT_THAT(round.Candidates(Job(3, 1), offers), ElementsAre("a", "b", "d", "e"));
  EXPECT_THAT(offers.offered(), ElementsAre("a", "b"));
}

TEST(LeasePolicyTest, ACappedJobPrefersTheWorkersItWasOfferedBefore) {
  JobOffers offers;
  {
    DispatchRound round(Idle({"a", "b", "c"}), kNow);
    EXPECT_THAT(round.Candidates(Job(1), offers), ElementsAre("a"));
    round.Answered({"a"}, {}, offers);
  }
  offers.Changed();  // Something happened: the job is asked again at once.
  DispatchRound round(Idle({"b", "c", "a"}), kNow);
  // "a" comes back first although "b" is first in the round.
  EXPECT_THAT(round.Candidates(Job(1), offers), ElementsAre("a"));
  EXPECT_THAT(offers.offered(), ElementsAre("a"));
}

TEST(LeasePolicyTest, AJobAtItsCapIsNotAsked) {
  DispatchRound round(Idle({"a", "b"}), kNow);
  JobOffers offers;
  offers.WorkerUsed("a");
  EXPECT_THAT(round.Candidates(Job(2, 2), offers), IsEmpty());
}

TEST(LeasePolicyTest, ADeclineIsNotRepeatedUntilTheJobChangesTimePassesOrNewWorkersCome) {
  JobOffers offers;
  {
    DispatchRound round(Idle({"a", "b"}), kNow);
    const std::vector<std::string> asked = round.Candidates(Job(), offers);
    round.Answered(asked, {}, offers);  // Nothing for them.
  }
  // Same workers (or fewer), no change, within the period: not asked.
  EXPECT_THAT(
      DispatchRound(Idle({"a", "b"}), kNow + absl::Milliseconds(50)).Candidates(Job(), offers),
      IsEmpty());
  EXPECT_THAT(DispatchRound(Idle({"b"}), kNow + absl::Milliseconds(50)).Candidates(Job(), offers),
              IsEmpty());
  // A new worker: asked.
  EXPECT_THAT(
      DispatchRound(Idle({"a", "c"}), kNow + absl::Milliseconds(50)).Candidates(Job(), offers),
      ElementsAre("a", "c"));
  // The period passed: asked.
  EXPECT_THAT(DispatchRound(Idle({"a", "b"}), kNow + DispatchRound::kRedispatchPeriod)
                  .Candidates(Job(), offers),
              ElementsAre("a", "b"));
  // The job changed: asked.
  offers.Changed();
  EXPECT_THAT(
      DispatchRound(Idle({"a", "b"}), kNow + absl::Milliseconds(50)).Candidates(Job(), offers),
      ElementsAre("a", "b"));
}

TEST(LeasePolicyTest, ATaskHandedOutEndsTheDecline) {
  JobOffers offers;
  {
    DispatchRound round(Idle({"a", "b"}), kNow);
    round.Answered(round.Candidates(Job(), offers), {}, offers);
  }
  {
    DispatchRound round(Idle({"a", "b", "c"}), kNow);
    round.Answered(round.Candidates(Job(), offers), {"c"}, offers);
  }
  EXPECT_THAT(DispatchRound(Idle({"a", "b"}), kNow).Candidates(Job(), offers),
              ElementsAre("a", "b"));
}

TEST(LeasePolicyTest, AnOrphanLeasedOutsideTheWalkLeavesTheRound) {
  DispatchRound round(Idle({"a", "b"}), kNow);
  round.Remove("a");
  round.Remove("zzz");  // Not in the round: nothing happens.
  JobOffers offers;
  EXPECT_THAT(round.Candidates(Job(), offers), ElementsAre("b"));
  EXPECT_THAT(round.remaining(), ElementsAre("b"));
}

}  // namespace
}  // namespace kbisect
