// Copyright 2026 The kbisect Authors.
//
// Which commits a worker host should build before anyone asks (build ahead). A probe's task is
// checkout -> build -> benchmark on one slot, and the build needs no GPU: while the probes of a
// round measure, the host can build the commits the next round will probe, whichever way each
// running probe comes out. PlanBuildAhead is pure: it takes the search and returns indices.
//
//   for (int index : PlanBuildAhead(search, workers, /*limit=*/4, bad_in_flight)) Hint(index);
#ifndef KBISECT_COORDINATOR_JOB_BUILD_AHEAD_H_
#define KBISECT_COORDINATOR_JOB_BUILD_AHEAD_H_

#include <string>
#include <vector>

#include "common/search/bisect_search.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// The coordinator sends a worker up to this many hints per build it can run at once
// (SynchronizeRequest.build_ahead_slots): builds finish within a round and the host moves on to
// the next hint, and a round leaves up to W + 1 pieces of W points each.
inline constexpr int kBuildAheadHintsPerSlot = 4;

// The commit indices worth building ahead, most useful first, at most `limit` (none when
// `limit` <= 0). With `reference_good_next` (the BAD baseline is being
// measured and its worker measures the reference GOOD next) index 0 comes first. Then the
// points of the next round: the probes in flight (inside the open interval) cut it into pieces,
// one of which is the open interval once they have reported; for each piece, the points
// PlanProbes(workers) places on a copy of `search` where that piece is the open interval (its
// ends recorded, the other probes abandoned). Pieces are taken round-robin (ascending), each
// piece's points nearest to one of its ends first: the probes there free the workers whose
// checkouts are nearest, and dispatch hands the point nearest its checkout to each
// (PairNearest). With nothing in flight the one piece is the open interval: its points are
// the next probes (built while, say, the reference GOOD is measured). Indices in flight, recorded
// (GOOD and BAD included, index 0 excepted as above) or already listed are left out.
std::vector<int> PlanBuildAhead(const BisectSearch& search, int workers, int limit,
                                bool reference_good_next);

// The commit indices whose builds the job will use again while it runs, for the host's build
// cache to keep: GOOD (index 0: calibrations, A/A controls), the ends of the open interval,
// `last_good` and `first_bad` (the confirmation measures both; BAD is an end until a probe
// below it is BAD), and the commits `in_flight` inside it: every later end is one of them, and
// a task carries the list it was handed, so a build that starts after the interval narrowed
// must not take their entries over (the confirmation would build its commits again). In that
// order, without repeats.
std::vector<int> BuildsToKeep(int last_good, int first_bad, const std::vector<int>& in_flight);

// Lists in `task` (Task.keep_build_shas) the shas of `commits` at BuildsToKeep(last_good,
// first_bad, in_flight), the task's own commit excepted. Nothing for a task without a build
// command.
void AddBuildsToKeep(const std::vector<v1::CommitRef>& commits, int last_good, int first_bad,
                     const std::vector<int>& in_flight, v1::Task* task);

// The build-ahead hint for `commit` at `index` of the job described by `spec` and `job_id`: a
// Task of kind PROBE_KIND_BUILD with the repository, commit, build command, environment and
// build timeout a probe of it would have (ProbeBook::NewTask), no task id, benchmark or runs.
v1::Task BuildAheadTask(const std::string& job_id, const v1::JobSpec& spec,
                        const v1::CommitRef& commit, int index);

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_BUILD_AHEAD_H_
