// Copyright 2026 The kbisect Authors.
//
// How a task's build is asked of the host's build cache. Every place that turns a task into a
// BuildCache::Request (a probe's build, the builds its job keeps, a build ahead) goes through
// BuildRequestFor, so that all of them name the same build: one repository, build command,
// environment and isolation.
//
//   BuildRequestOptions options;
//   options.env = &env;  // The slot's variables, the job's, KBISECT_COMMIT_INDEX.
//   BuildCache::Acquired built = cache->Acquire(BuildRequestFor(task, sha, options), ...);
#ifndef KBISECT_WORKER_BUILD_REQUEST_H_
#define KBISECT_WORKER_BUILD_REQUEST_H_

#include <map>
#include <string>

#include "kbisect/v1/kbisect.pb.h"
#include "worker/build_cache.h"
#include "worker/build_step.h"

namespace kbisect {

// The command that builds commit `sha` as `task` says: the task's build command and build
// timeout (kDefaultBuildTimeout when it has none), run with `env` and KBISECT_COMMIT=`sha`.
BuildCommand BuildCommandFor(const v1::Task& task, const std::string& sha,
                             std::map<std::string, std::string> env);

// What a build request takes from its caller rather than its task (BuildRequestFor). The
// defaults name a build without running it, as BuildCache::MarkUsed needs.
struct BuildRequestOptions {
  // The environment the build command runs with, KBISECT_COMMIT aside: the slot's variables, the
  // job's (Task.env), KBISECT_COMMIT_INDEX. Null: the request runs no command, and its command
  // has neither an environment nor the task's timeout.
  const std::map<std::string, std::string>* env = nullptr;
  // Whether the request names the builds the job will use again (Task.keep_build_shas).
  bool keep_builds = false;
  // The build's place among the builds waiting for one of the host's build slots
  // (Request::build_order).
  int build_order = 0;
};

// The build cache's request for `task`'s build of commit `sha`: the task's repository, build
// command and isolation, keyed by the job's environment (Task.env), and what `options` adds.
BuildCache::Request BuildRequestFor(const v1::Task& task, const std::string& sha,
                                    const BuildRequestOptions& options);

}  // namespace kbisect

#endif  // KBISECT_WORKER_BUILD_REQUEST_H_
