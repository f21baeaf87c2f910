// Copyright 2026 The kbisect Authors.
//
// How many tasks a job keeps in flight when its hosts' build slots, not its GPUs, are the
// bottleneck. A worker's builds take one of its host's build slots (worker/build_slots.h): on a
// 2-core host one `make -j2` at a time. Seven probes of one round there queue seven builds
// behind that slot, and a round that buys log2(8) = 3 bits of the search costs seven builds
// where `git bisect` pays one build per bit. With the tasks in flight capped at what the slots
// can feed, the round plan (dispatch.h) places fewer, better-spread points per round instead.
//
// A build pool (TaskTimings.build_pool: one per host and cache directory) with s slots, builds
// of B seconds and benchmarks of b seconds keeps s * (1 + b / B) tasks busy: while one task
// builds, the ones built before it benchmark. The capacity is the sum over the pools the job's
// workers were seen building in, plus one for each worker not seen building yet (its pool is
// unknown: it may be a host of its own). When benchmarks dominate (b >> B) the cap is above the
// worker count and changes nothing; on a large host (many slots) too. Pure.
#ifndef KBISECT_COORDINATOR_JOB_BUILD_CAPACITY_H_
#define KBISECT_COORDINATOR_JOB_BUILD_CAPACITY_H_

#include <map>
#include <string>
#include <vector>

#include "google/protobuf/repeated_ptr_field.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// A host's build slots as a worker announced them when it connected
// (OpenSessionRequest.build_pool): `name` is "<host>:<cache dir>", as in TaskTimings.build_pool,
// and `slots` the builds they ran at once then (1 before a build was measured there).
struct BuildPool {
  std::string name;
  int slots = 0;
};

// The tasks the job's `workers` (those taking part: not quarantined, not gone) can keep busy,
// judged from `probes` (their TaskTimings: the pool and slots of each build, and the median
// build and benchmark times of the most recent 8 probes that built) and, for a worker none of
// whose probes built yet, from the pool it announced (`announced`). Before any build was
// measured a pool counts twice its announced slots (one task builds while one benchmarks: on a
// 2-core host BAD builds alone, as the host runs the first build alone anyway, beside one point
// at the interval's middle, as git bisect would build it); with no pool known, 0 (no cap).
int BuildCapacity(const std::vector<std::string>& workers,
                  const google::protobuf::RepeatedPtrField<v1::Probe>& probes,
                  const std::map<std::string, BuildPool>& announced = {});

// `max_workers` (the spec's cap, <= 0 for none) combined with a build capacity (0 for none).
int CapTasksInFlight(int max_workers, int build_capacity);

// Task.build_order of a task of `kind` at `commit_index` handed out while the open interval is
// (last_good, first_bad): the order in which a host that cannot build every waiting task at
// once builds them. Baselines, calibrations, controls and confirmations (every kind but a point
// of the search) are 0: the job needs them whatever the points say. A point is 1 + its distance
// from the interval's middle in thousandths of the interval, so a round's points build from
// the middle outwards: one build at a time, that is git bisect's order, and each result
// cancels the queued points it puts outside the interval before they build.
int BuildOrder(v1::ProbeKind kind, int commit_index, int last_good, int first_bad);

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_BUILD_CAPACITY_H_
