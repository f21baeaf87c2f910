// Copyright 2026 The kbisect Authors.
//
// What the coordinator knows is built, and where: the commits whose builds succeeded on some
// worker, by build (one repository, build command, `--env` and isolation: BuildSignature) and by
// the places that keep them. A place is a host's build cache (its build pool,
// OpenSessionRequest.build_pool: the workers of one host share it) or a shared build store with a
// hardware class (OpenSessionRequest.build_store: every worker of that class that names the
// store can fetch the build instead of building, worker/build_store.h). A job's dispatch prefers
// a point already built in a place its worker reads when it splits the interval about as well
// (dispatch.h, AssignBuiltProbes): a build is the costly part of a probe on real repositories.
//
// Learned from every finished task (Record), of every job: what one job built, the next job over
// an overlapping range, a suite's follow-ups or a job with another benchmark of the same build
// can use. Kept in memory only, bounded per build; a coordinator restart forgets it, which costs
// builds, never an answer. The jobs see it through their journaled TakeTasks (the built commits
// of each worker asked are part of the call), so a replayed job makes the same choices.
//
// Not thread-safe: the coordinator calls it under its mutex.
#ifndef KBISECT_COORDINATOR_BUILT_COMMITS_H_
#define KBISECT_COORDINATOR_BUILT_COMMITS_H_

#include <cstddef>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// How many built commits BuiltCommits keeps per build: the oldest recorded go first.
inline constexpr size_t kBuiltCommitsPerBuild = 4096;

// The build a task's commit was built with, as text (length-prefixed fields, so no command can
// imitate another split): its repository, build command, environment and isolation. Empty for a
// task without a build command, and for a dependency follow-up's (its build is of the
// superproject and the dependency together).
std::string BuildSignature(const v1::Task& task);
// The same for the tasks of a job with `spec` (empty likewise).
std::string BuildSignature(const v1::JobSpec& spec);

// The places a worker reads builds from: its host's build pool ("pool:<name>") and, with a
// build store, the store for its hardware class ("store:<store>|<hardware class>"). Empty
// names give no place.
std::vector<std::string> BuildPlaces(const std::string& build_pool, const std::string& build_store,
                                     const std::string& hardware_class);

// True when `result`'s build succeeded through a build cache or a build store
// (TaskTimings.build_pool, build_store: a build fetched from the store names no pool): the task
// got past its build (a sample, a failed or skipped benchmark, a missing metric, a pass/fail
// verdict), so its commits' builds are kept on the host, and in the store when it names one.
bool ResultLeftABuild(const v1::TaskResult& result);

class BuiltCommits {
 public:
  BuiltCommits() = default;
  BuiltCommits(const BuiltCommits&) = delete;
  BuiltCommits& operator=(const BuiltCommits&) = delete;

  // Records that `sha` was built with `signature` and is kept in `places`. A commit recorded
  // again gains the new places and counts as recorded now. Empty signatures, commits or places
  // record nothing.
  void Record(const std::string& signature, const std::string& sha,
              const std::vector<std::string>& places);

  // Records what the task `task`, finished with `result` on a worker of `hardware_class`, built
  // (its commit, and a confirmation's paired commit), when ResultLeftABuild.
  void RecordResult(const v1::Task& task, const v1::TaskResult& result,
                    const std::string& hardware_class);

  // The commits built with `signature` in any of `places`.
  std::set<std::string> BuiltIn(const std::string& signature,
                                const std::vector<std::string>& places) const;

  // The number of commits recorded for `signature`.
  size_t size(const std::string& signature) const;

 private:
  struct Build {
    std::map<std::string, std::set<std::string>> places_of;  // By commit.
    std::deque<std::string> order;                           // Commits, oldest recorded first.
  };
  std::map<std::string, Build> builds_;
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_BUILT_COMMITS_H_
