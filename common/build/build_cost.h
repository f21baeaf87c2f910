// Copyright 2026 The kbisect Authors.
//
// What a build costs a host, and how many builds its cores carry at once: the policy that the
// worker's build slots (worker/build_slots.h) and the coordinator's dispatch
// (coordinator/job/build_capacity.h) share. Pure functions.
#ifndef KBISECT_COMMON_BUILD_BUILD_COST_H_
#define KBISECT_COMMON_BUILD_BUILD_COST_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace kbisect {

// What one finished build cost: its wall time and the CPU time it used.
struct BuildCost {
  absl::Duration wall = absl::ZeroDuration();
  absl::Duration cpu = absl::ZeroDuration();
  // The most other builds that ran on the host's cores at the same time (0: it ran alone). Two
  // `make -j2` sharing two cores each measure one core; alone each would keep two busy.
  int overlapping = 0;
  // The parallel jobs its command asked of its build tool (RequestedBuildJobs; 0: none asked).
  int requested_jobs = 0;
  // The processes of its process group that were running or waiting for a core, the median of
  // samples taken while it ran (0: not sampled; RunnableTally). What it would keep busy alone:
  // two one-process compiles that overlapped on two cores each measure one core and one such
  // process, two `make -j2` sharing two cores each measure one core and two.
  double runnable = 0;
};

// What "every core" stands for in a job count: `make -j` with no number, `-j$(nproc)`.
inline constexpr int kAllCoresJobs = 1 << 16;

// The parallel jobs that a build command and its environment ask of make, ninja, cmake or a
// setup.py: the highest of `-jN`, `-j N`, `-sj4`-style make flags, `--jobs[=]N`, `--parallel[=]N`,
// the same in MAKEFLAGS, and CMAKE_BUILD_PARALLEL_LEVEL; kAllCoresJobs for a job flag without a
// number it can read (`make -j`, `-j$(nproc)`, `cmake --build . --parallel`); 0 when nothing
// asks. Only a request: an old Makefile that compiles every file in one command keeps one core
// busy under `make -j2`.
int RequestedBuildJobs(absl::string_view command, const std::map<std::string, std::string>& env);

// The cores the heaviest of `recent` builds kept busy (CPU time over wall time, times 1 +
// `overlapping`: an estimate of what it would use alone, never below what it used; where its
// processes were sampled, no more than the `runnable` ones, since a build cannot use more cores
// than it has processes asking for one; and never below the jobs its command asked for: the
// commit that measured one core under `make -j2` may have an old Makefile, the next one will
// not), or nullopt when none of them ran long enough to say (under 50 ms of wall time). The
// heaviest, not a typical one: an incremental build that recompiles one file keeps one core busy,
// the full build of the next probe all that `make -j` was given, and the bound must hold for both.
std::optional<double> CoresPerBuild(const std::vector<BuildCost>& recent);

// The most builds a core carries (a build counts as at least 1/8 of a core): ConcurrentBuildLimit
// never exceeds this many per core.
inline constexpr int kMostBuildsPerCore = 8;

// A build running now counts as loading no core once it has run this long with its process group
// keeping at most kLightRunningBuild cores busy (CoresPerBuildWhileRunning).
inline constexpr absl::Duration kRunningSampleAfter = absl::Milliseconds(300);
inline constexpr double kLightRunningBuild = 0.25;

// A build running now counts as keeping one core busy once it has run kRunningSampleAfter with
// one process asking for a core (the median of its samples, BuildCost::runnable) and at most
// kOneProcessRunningBuild cores busy: a compiler called once, as a one-call `g++` build is.
inline constexpr double kOneProcessRunningBuild = 1.25;

// The cores a build keeps busy when no build has finished yet, from the builds running now, each
// given as its cost so far (`wall` since it started, `cpu` what its process group used, with a
// process running at the sample counted as a core for the whole time; `requested_jobs` and
// `runnable` as in BuildCost): their heaviest, when every one of them has run
// kRunningSampleAfter, asked for no parallel jobs, and either kept at most kLightRunningBuild
// cores busy (it waits on the network, a remote compiler, a download or a sleep: holding the
// next build back until it ends gains nothing) or is a one-process build (one core: a second
// fits beside it on a host with two). Otherwise nullopt, and the first build still runs alone (a
// build that loads several cores is measured without sharing them). A build whose first phase
// is one process and whose next is parallel (a configure step before a bare `ninja`) is taken
// for one core while the first runs: the two builds then share the cores in the second, which
// delays the first one's end but not the pair's (decision 226). Pure.
std::optional<double> CoresPerBuildWhileRunning(const std::vector<BuildCost>& running);

// The number of builds a host with `cores` cores runs at once when one build keeps
// `cores_per_build` of them busy: as many as fit, at least one; a build that keeps less than an
// eighth of a core busy (it waits on the network, a remote compiler, a sleep) counts as an
// eighth, so at most 8 builds per core. With nothing measured yet (nullopt) one: the first
// build runs alone, and is measured without sharing the cores.
int ConcurrentBuildLimit(int cores, std::optional<double> cores_per_build);

}  // namespace kbisect

#endif  // KBISECT_COMMON_BUILD_BUILD_COST_H_
