// Copyright 2026 The kbisect Authors.
//
// How a task's build is named and asked for, whatever builds it: the host's build cache or the
// slot's own checkout (task_builder.h). Every place that turns a task into a BuildRequest (a
// probe's build, the builds its job keeps, a build ahead) goes through BuildRequestFor, with the
// environment TaskEnvironment gives, so that all of them name the same build: one repository,
// build command, environment and isolation.
//
//   const std::map<std::string, std::string> env = TaskEnvironment(task, slot_env);
//   BuildRequestOptions options;
//   options.env = &env;
//   BuildCache::Acquired built = cache->Acquire(BuildRequestFor(task, sha, options), ...);
#ifndef KBISECT_WORKER_BUILD_REQUEST_H_
#define KBISECT_WORKER_BUILD_REQUEST_H_

#include <map>
#include <string>
#include <vector>

#include "kbisect/v1/kbisect.pb.h"
#include "worker/build_step.h"

namespace kbisect {

// What to build: a commit and how to build it (BuildCache::Request in the host's build cache).
struct BuildRequest {
  // The repository (a URL or path) and the full id of the commit.
  std::string repository;
  std::string sha;
  // The build command with everything it sees in its environment, and its timeout.
  BuildCommand build;
  // The part of the environment that identifies the build (the job's `--env`); the rest of
  // `build.env` (the slot's device variables, KBISECT_COMMIT...) does not.
  std::map<std::string, std::string> key_env;
  // The commits whose builds the job will use again (Task.keep_build_shas), when it named
  // them: a miss then takes over an idle entry of another commit with the same repository and
  // command even in a cache that is not full (the job needs that build no more). Empty: a
  // miss takes an entry over only when the cache is full.
  std::vector<std::string> keep_shas;
  // Where the build installs (build_layer.h): a layer of its own by default.
  v1::BuildIsolation isolation = v1::BUILD_ISOLATION_UNSPECIFIED;
  // Its place among the builds waiting for one of the host's build slots (Task.build_order:
  // lower first; HostBuildSlots::Acquire).
  int build_order = 0;
};

// The environment of `task`'s commands (its build and its benchmark runs), before each commit's
// own variables: `slot_env` (the slot's device variables; empty for a build that belongs to no
// slot), the job's (Task.env, which wins), KBISECT_COMMIT_INDEX and, for a dependency follow-up,
// KBISECT_SUPERPROJECT_COMMIT.
std::map<std::string, std::string> TaskEnvironment(
    const v1::Task& task, const std::map<std::string, std::string>& slot_env);

// The command that builds commit `sha` as `task` says: the task's build command and build
// timeout (kDefaultBuildTimeout when it has none), run with `env` and KBISECT_COMMIT=`sha`.
BuildCommand BuildCommandFor(const v1::Task& task, const std::string& sha,
                             std::map<std::string, std::string> env);

// What a build request takes from its caller rather than its task (BuildRequestFor). The
// defaults name a build without running it, as BuildCache::MarkUsed needs.
struct BuildRequestOptions {
  // The environment the build command runs with, KBISECT_COMMIT aside (TaskEnvironment). Null:
  // the request runs no command, and its command has neither an environment nor the task's
  // timeout.
  const std::map<std::string, std::string>* env = nullptr;
  // Whether the request names the builds the job will use again (Task.keep_build_shas).
  bool keep_builds = false;
  // The build's place among the builds waiting for one of the host's build slots
  // (BuildRequest::build_order).
  int build_order = 0;
};

// The request for `task`'s build of commit `sha`: the task's repository, build command and
// isolation, keyed by the job's environment (Task.env), and what `options` adds.
BuildRequest BuildRequestFor(const v1::Task& task, const std::string& sha,
                             const BuildRequestOptions& options);

}  // namespace kbisect

#endif  // KBISECT_WORKER_BUILD_REQUEST_H_
