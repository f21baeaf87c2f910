// Copyright 2026 The kbisect Authors.
//
// The worker's one build path: how a commit of a task becomes the tree its benchmark runs in.
// The task runner asks a TaskBuilder for each commit it measures and builds nothing itself. The
// real one, SlotBuilder, turns the task into a build request (BuildRequestFor, build_request.h)
// and prepares the commit in the task's mode (BuildModeFor):
//   - kCached: from the host's build cache (build_cache.h): a built entry reused, or one taken
//     over, copied or checked out afresh and built there, in the entry's layer; the entry is
//     held in use until the tree is let go;
//   - kInPlace: in the slot's checkout (workspace.h, in the lane the runner names), built there
//     in a layer beside it (`<checkout>-layer`, build_layer.h) made afresh for each build;
//   - kCheckoutOnly: the task has no build command: the lane is checked out, nothing is built.
// Every mode fails, times out and is cancelled the same way (BuildStep), and reports the same
// times and events (the checkout's time, the build's, `on_build_start` just before a build).
//
//   SlotBuilder builder(runner, &workspace);
//   builder.set_build_cache(&cache);  // Optional: without it, builds are made in place.
//   builder.StartTask(task);
//   BuiltTree tree = builder.Prepare({&task, sha, WorkspaceLane::kPrimary, &env, &cancel, {}});
//   if (!tree.step.ok()) return Fail(tree.step);
//   RunBenchmarkIn(tree.dir, tree.layer_env);  // A cache entry stays in use while `tree` lives.
#ifndef KBISECT_WORKER_TASK_BUILDER_H_
#define KBISECT_WORKER_TASK_BUILDER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "common/clock/clock.h"
#include "common/exec/exec.h"
#include "common/git/file_lock.h"
#include "kbisect/v1/kbisect.pb.h"
#include "worker/build_cache.h"
#include "worker/build_layer.h"
#include "worker/build_request.h"
#include "worker/build_step.h"
#include "worker/workspace.h"

namespace kbisect {

// Where a task's commits are prepared (BuildModeFor).
enum class BuildMode {
  // No build command: checked out in the slot's lane, nothing built.
  kCheckoutOnly,
  // Checked out and built in the slot's lane, in a layer beside the checkout.
  kInPlace,
  // Taken from the host's build cache, built there when it is not cached.
  kCached,
};

// The mode of `task`'s commits on a slot with a build cache (`has_cache`) or without one: without
// a build command nothing is built; with one, a dependency follow-up (Task.dependency) builds in
// place, since the cache keys a build by one repository's commit and its commits are two
// repositories' commits; any other task builds in the cache when there is one, else in place.
// Pure.
BuildMode BuildModeFor(const v1::Task& task, bool has_cache);

// What to prepare: a commit of a task, where, and how the preparation reports and stops.
struct TreeRequest {
  // The task (must not be null) and the commit of it to prepare (its commit or its paired one).
  const v1::Task* task = nullptr;
  std::string sha;
  // The slot's checkout the commit goes to when it is not taken from the build cache.
  WorkspaceLane lane = WorkspaceLane::kPrimary;
  // The environment of the task's commands (TaskEnvironment, build_request.h; must not be
  // null): the build runs with it and KBISECT_COMMIT.
  const std::map<std::string, std::string>* env = nullptr;
  // Stops the preparation when set (may be null): the build's process group is killed and the
  // step is CANCELLED; a checkout done when it is set is not built.
  const Cancellation* cancel = nullptr;
  // Called just before the build command starts, when one runs (may be empty).
  std::function<void()> on_build_start;
};

// A commit made ready for its benchmark runs, or why it is not.
struct BuiltTree {
  // OK when `dir` holds the commit, built as its task says (or only checked out, without a build
  // command); otherwise the outcome, message and log tail of the failure: INFRA_ERROR for a
  // mirror, checkout or cache error, CHECKOUT_FAILED for a submodule commit nobody can fetch
  // (common/git/submodules.h), and the build's own (build_step.h). Its times are the build
  // command's (zero when none ran).
  BuildStep step;
  // The directory the commit is in (a cache entry's checkout or the slot's lane), absolute.
  std::string dir;
  // The variables of the build's layer (build_layer.h), to set on top of the environment of every
  // benchmark run in `dir` (empty when nothing was built, or without isolation).
  std::map<std::string, std::string> layer_env;
  // True when the build was found in the build cache: no checkout and no build ran.
  bool reused = false;
  // The time until the directory was ready, the build excepted (the checkout; in the cache also
  // the mirror, the lookup and the wait for another slot's build of the same commit).
  absl::Duration checkout_time = absl::ZeroDuration();
  // When a build ran in the cache: the host's build slots ("<host>:<cache dir>") and how many
  // builds they run at once now (TaskTimings.build_pool, build_pool_slots); empty otherwise.
  std::string build_pool;
  int build_pool_slots = 0;
  // The build store the build was fetched from or published to (TaskTimings.build_store);
  // empty when neither happened. `fetched`: the build was fetched, not built on this host.
  std::string build_store;
  bool fetched = false;
  // Holds a cache entry in use (never evicted or rebuilt) until destroyed; null in the slot's
  // checkout.
  std::unique_ptr<FileLock> in_use;
};

// Makes the commits of tasks ready for their benchmark runs. An interface, so that the task
// runner knows one build path whatever the mode, and a test can stand in for it.
class TaskBuilder {
 public:
  virtual ~TaskBuilder() = default;

  // Called once when `task` starts, before any of its commits is prepared: in the cache, marks the
  // builds its job will use again (Task.keep_build_shas) as used, so that the room this task's
  // builds make is taken from other builds.
  virtual void StartTask(const v1::Task& task) = 0;

  // Prepares commit `request.sha` of `request.task` in the task's mode. Never returns an error
  // status: every way a preparation can end is a BuiltTree's step.
  virtual BuiltTree Prepare(const TreeRequest& request) = 0;

  // The host's build cache the builds use, or null when they use none.
  virtual const BuildCache* build_cache() const = 0;
};

// The real builder of one slot: its workspace's lanes, and the host's build cache when it has
// one. Thread-compatible: one slot prepares one task's commits at a time (the build cache itself
// is shared by every slot of the host).
class SlotBuilder : public TaskBuilder {
 public:
  // `runner`, `workspace` and `clock` must outlive this object. Checkout times are measured on
  // `clock` (build times are the commands' wall times as `runner` reports them). Builds in the
  // workspace get a layer next to their checkout, over the environment `layer_env` (this
  // process's by default).
  SlotBuilder(CommandRunner* runner, Workspace* workspace, Clock* clock = Clock::Real(),
              std::map<std::string, std::string> layer_env = BuildLayers::ProcessEnvironment());

  SlotBuilder(const SlotBuilder&) = delete;
  SlotBuilder& operator=(const SlotBuilder&) = delete;

  // Makes tasks with a build command get their checkout and build from `cache` (which must
  // outlive this object; BuildModeFor). Null (the default) builds in the workspace's checkouts.
  void set_build_cache(BuildCache* cache) { cache_ = cache; }

  void StartTask(const v1::Task& task) override;
  BuiltTree Prepare(const TreeRequest& request) override;
  const BuildCache* build_cache() const override { return cache_; }

 private:
  // Takes the build of `build` from the cache, building it there when it is not cached.
  BuiltTree FromCache(const TreeRequest& request, const BuildRequest& build);
  // Checks `build`'s commit out in the request's lane and, in `mode` kInPlace, builds it there.
  BuiltTree InWorkspace(const TreeRequest& request, const BuildRequest& build, BuildMode mode);
  // Builds `build` in `tree.dir`, the lane's checkout, in a layer of its own beside it.
  void BuildInCheckout(const TreeRequest& request, const BuildRequest& build, BuiltTree* tree);

  Workspace* const workspace_;
  Clock* const clock_;
  BuildCache* cache_ = nullptr;
  BuildLayers layers_;  // For builds in the workspace's checkouts; the cache has its own.
};

}  // namespace kbisect

#endif  // KBISECT_WORKER_TASK_BUILDER_H_
