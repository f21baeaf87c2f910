// Copyright 2026 The kbisect Authors.
//
// How many tasks a job keeps in flight when its hosts' build slots are the bottleneck.
#include "coordinator/job/build_capacity.h"

#include <map>
#include <string>
#include <vector>

#include "google/protobuf/util/time_util.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using google::protobuf::RepeatedPtrField;
using google::protobuf::util::TimeUtil;

// A probe by `worker` whose build took `build` s in `pool` (with `slots` slots) and whose
// benchmark runs took `bench` s.
v1::Probe Built(const std::string& worker, const std::string& pool, int slots, double build,
                double bench, bool reused = false) {
  v1::Probe probe;
  probe.set_worker(worker);
  v1::TaskTimings* timings = probe.mutable_timings();
  *timings->mutable_build() = TimeUtil::MillisecondsToDuration(static_cast<int64_t>(build * 1000));
  *timings->mutable_bench() = TimeUtil::MillisecondsToDuration(static_cast<int64_t>(bench * 1000));
  timings->set_build_pool(pool);
  timings->set_build_pool_slots(slots);
  timings->set_build_reused(reused);
  return probe;
}

RepeatedPtrField<v1::Probe> Probes(const std::vector<v1::Probe>& list) {
  RepeatedPtrField<v1::Probe> probes;
  for (const v1::Probe& probe : list) *probes.Add() = probe;
  return probes;
}

const std::vector<std::string> kFour = {"w0", "w1", "w2", "w3"};

TEST(BuildCapacityTest, NothingBuiltYetMeansNoCap) {
  EXPECT_EQ(BuildCapacity(kFour, Probes({})), 0);
  v1::Probe no_cache;  // Built in the slot's own checkout: no pool.
  no_cache.set_worker("w0");
  *no_cache.mutable_timings()->mutable_build() = TimeUtil::SecondsToDuration(5);
  EXPECT_EQ(BuildCapacity(kFour, Probes({no_cache})), 0);
}

TEST(BuildCapacityTest, OneSlotFeedsOneTaskWhenBuildsDominate) {
  // Four workers on one 2-core host: 6 s builds, 0.3 s of benchmark, one build at a time.
  const auto probes = Probes({Built("w0", "h:/c", 1, 6, 0.3), Built("w1", "h:/c", 1, 6, 0.3),
                              Built("w2", "h:/c", 1, 6, 0.3), Built("w3", "h:/c", 1, 6, 0.3)});
  EXPECT_EQ(BuildCapacity(kFour, probes), 1) << "1 slot x (1 + 0.3 / 6), rounded";
  EXPECT_EQ(CapTasksInFlight(0, BuildCapacity(kFour, probes)), 1);
  EXPECT_EQ(CapTasksInFlight(1, BuildCapacity(kFour, probes)), 1) << "--max-workers still caps";
  // Benchmarks of 60% of a build's time: a second task benchmarks while one builds.
  EXPECT_EQ(BuildCapacity({"w0", "w1"},
                          Probes({Built("w0", "h:/c", 1, 5, 3), Built("w1", "h:/c", 1, 5, 3)})),
            2);
}

TEST(BuildCapacityTest, BenchmarksThatDominateLiftTheCap) {
  // 1 s builds and 30 s of benchmark: one slot keeps 31 tasks busy.
  const auto probes = Probes({Built("w0", "h:/c", 1, 1, 30), Built("w1", "h:/c", 1, 1, 30)});
  EXPECT_GE(BuildCapacity(kFour, probes), 4);
  EXPECT_EQ(CapTasksInFlight(0, 0), 0);
  EXPECT_EQ(CapTasksInFlight(3, 0), 3);
}

TEST(BuildCapacityTest, PoolsAddUpAndWorkersNotSeenBuildingCountOne) {
  // w0, w1 on host a (1 slot), w2 on host b (4 slots); w3 has not built yet.
  const auto probes = Probes({Built("w0", "a:/c", 1, 10, 0), Built("w1", "a:/c", 1, 10, 0),
                              Built("w2", "b:/c", 4, 10, 0)});
  EXPECT_EQ(BuildCapacity(kFour, probes), 1 + 4 + 1);
  // Only the workers taking part count.
  EXPECT_EQ(BuildCapacity({"w0", "w1"}, probes), 1);
}

TEST(BuildCapacityTest, AnnouncedPoolsPlaceWorkersBeforeTheyBuild) {
  // Four workers of one 2-core host, nothing built yet: one build at a time (the host builds its
  // first alone), so one task builds while one benchmarks (BAD, and a point at the middle).
  const std::map<std::string, BuildPool> one_host = {
      {"w0", {"h:/c", 1}}, {"w1", {"h:/c", 1}}, {"w2", {"h:/c", 1}}, {"w3", {"h:/c", 1}}};
  EXPECT_EQ(BuildCapacity(kFour, Probes({}), one_host), 2);
  // Two hosts of two workers each, one with 4 slots already measured there.
  EXPECT_EQ(
      BuildCapacity(
          kFour, Probes({}),
          {{"w0", {"a:/c", 1}}, {"w1", {"a:/c", 1}}, {"w2", {"b:/c", 4}}, {"w3", {"b:/c", 4}}}),
      2 + 8);
  // A worker that announced nothing (no build cache, an older worker) is a pool of its own.
  EXPECT_EQ(BuildCapacity(kFour, Probes({}), {{"w0", {"h:/c", 1}}, {"w1", {"h:/c", 1}}}), 2 + 2);
  EXPECT_EQ(BuildCapacity(kFour, Probes({}), {{"w0", {"", 0}}}), 0) << "nothing known";
  // The worker that built there last says the host now runs 8 builds: the most announced counts.
  EXPECT_EQ(
      BuildCapacity(
          kFour, Probes({}),
          {{"w0", {"h:/c", 8}}, {"w1", {"h:/c", 1}}, {"w2", {"h:/c", 1}}, {"w3", {"h:/c", 1}}}),
      16);
  // Once builds are measured, a worker whose tasks were all cancelled before they built (seven
  // workers on a 2-core host) still counts in its host's pool, not as one of its own.
  const auto probes = Probes({Built("w0", "h:/c", 1, 6, 0.3), Built("w1", "h:/c", 1, 6, 0.3)});
  EXPECT_EQ(BuildCapacity(kFour, probes, one_host), 1);
  EXPECT_EQ(BuildCapacity(kFour, probes), 1 + 2) << "without the announcements";
}

TEST(BuildCapacityTest, ReusedBuildsDoNotSizeItButStillPlaceTheirWorker) {
  // The latest pool size counts; reused builds say nothing of build times.
  const auto probes = Probes({Built("w0", "h:/c", 1, 8, 0), Built("w1", "h:/c", 2, 8, 0),
                              Built("w2", "h:/c", 2, 0.01, 100, /*reused=*/true)});
  EXPECT_EQ(BuildCapacity({"w0", "w1", "w2"}, probes), 2);
}

TEST(BuildOrderTest, BaselinesFirstThenPointsFromTheMiddleOutwards) {
  // Interval (0, 100): the middle is 50.
  EXPECT_EQ(BuildOrder(v1::PROBE_KIND_BASELINE_GOOD, 0, 0, 100), 0);
  EXPECT_EQ(BuildOrder(v1::PROBE_KIND_BASELINE_BAD, 100, 0, 100), 0);
  EXPECT_EQ(BuildOrder(v1::PROBE_KIND_CONFIRM, 40, 39, 40), 0);
  EXPECT_EQ(BuildOrder(v1::PROBE_KIND_CONTROL, 0, 0, 100), 0);
  EXPECT_EQ(BuildOrder(v1::PROBE_KIND_BISECT, 50, 0, 100), 1);
  EXPECT_EQ(BuildOrder(v1::PROBE_KIND_BISECT, 25, 0, 100), 251);
  EXPECT_EQ(BuildOrder(v1::PROBE_KIND_BISECT, 75, 0, 100), 251);
  EXPECT_EQ(BuildOrder(v1::PROBE_KIND_BISECT, 1, 0, 100), 491);
  // A round of five points on a host that builds one at a time: the middle one first, then
  // the quarter points, as git bisect would visit them.
  std::vector<int> orders;
  for (int point : {17, 33, 50, 67, 83}) {
    orders.push_back(BuildOrder(v1::PROBE_KIND_BISECT, point, 0, 100));
  }
  EXPECT_LT(orders[2], orders[1]);
  EXPECT_LT(orders[1], orders[0]);
  EXPECT_LT(orders[3], orders[4]);
  // An empty or inverted interval orders nothing.
  EXPECT_EQ(BuildOrder(v1::PROBE_KIND_BISECT, 5, 5, 5), 0);
}

}  // namespace
}  // namespace kbisect
