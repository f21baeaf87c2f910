// Copyright 2026 The kbisect Authors.
#include "worker/task_builder.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/git/submodules.h"

namespace kbisect {
namespace {

// Whether `cancel` (may be null) is set.
bool IsCancelled(const Cancellation* cancel) { return cancel != nullptr && cancel->IsCancelled(); }

// The step of a checkout of `sha` that failed with `status`. A worker that cannot check out is
// an infrastructure problem: retried elsewhere. A submodule commit nobody can fetch is the
// commit's: it is skipped, like a failed build.
BuildStep CheckoutFailure(const std::string& sha, const absl::Status& status) {
  return FailedStep(IsUnfetchableSubmodule(status) ? v1::TASK_OUTCOME_CHECKOUT_FAILED
                                                   : v1::TASK_OUTCOME_INFRA_ERROR,
                    absl::StrCat("checkout of ", sha.substr(0, 7), " failed: ", status.message()));
}

}  // namespace

BuildMode BuildModeFor(const v1::Task& task, bool has_cache) {
  if (task.build_command().empty()) return BuildMode::kCheckoutOnly;
  if (has_cache && !task.has_dependency()) return BuildMode::kCached;
  return BuildMode::kInPlace;
}

SlotBuilder::SlotBuilder(CommandRunner* runner, Workspace* workspace, Clock* clock,
                         std::map<std::string, std::string> layer_env)
    : workspace_(workspace), clock_(clock), layers_(runner, std::move(layer_env)) {}

void SlotBuilder::StartTask(const v1::Task& task) {
  if (BuildModeFor(task, cache_ != nullptr) != BuildMode::kCached) return;
  for (const std::string& sha : task.keep_build_shas()) {
    cache_->MarkUsed(BuildRequestFor(task, sha, BuildRequestOptions()));
  }
}

BuiltTree SlotBuilder::Prepare(const TreeRequest& request) {
  const v1::Task& task = *request.task;
  BuildRequestOptions options;
  options.env = request.env;
  options.keep_builds = true;
  options.build_order = task.build_order();
  const BuildRequest build = BuildRequestFor(task, request.sha, options);
  const BuildMode mode = BuildModeFor(task, cache_ != nullptr);
  if (mode == BuildMode::kCached) return FromCache(request, build);
  return InWorkspace(request, build, mode);
}

BuiltTree SlotBuilder::FromCache(const TreeRequest& request, const BuildRequest& build) {
  BuildCache::Acquired acquired = cache_->Acquire(build, request.cancel, request.on_build_start);
  BuiltTree tree;
  tree.step = std::move(acquired.step);
  tree.dir = std::move(acquired.dir);
  tree.layer_env = std::move(acquired.layer_env);
  tree.reused = acquired.reused;
  tree.checkout_time = acquired.checkout_time;
  tree.build_pool = std::move(acquired.build_pool);
  tree.build_pool_slots = acquired.build_pool_slots;
  tree.build_store = std::move(acquired.build_store);
  tree.fetched = acquired.fetched;
  tree.in_use = std::move(acquired.in_use);
  return tree;
}

BuiltTree SlotBuilder::InWorkspace(const TreeRequest& request, const BuildRequest& build,
                                   BuildMode mode) {
  const v1::Task& task = *request.task;
  const absl::Time checkout_start = clock_->Now();
  absl::StatusOr<std::string> prepared =
      task.has_dependency() ? workspace_->PrepareWithDependency(task.dependency(), build.repository,
                                                                build.sha, request.lane)
                            : workspace_->Prepare(build.repository, build.sha, request.lane);
  BuiltTree tree;
  tree.checkout_time = clock_->Now() - checkout_start;
  if (!prepared.ok()) {
    tree.step = CheckoutFailure(build.sha, prepared.status());
    return tree;
  }
  tree.dir = *std::move(prepared);
  if (mode == BuildMode::kInPlace && !IsCancelled(request.cancel)) {
    BuildInCheckout(request, build, &tree);
  }
  return tree;
}

void SlotBuilder::BuildInCheckout(const TreeRequest& request, const BuildRequest& build,
                                  BuiltTree* tree) {
  BuildCommand command = build.build;
  if (request.task->has_dependency()) {
    command.env["KBISECT_DEPENDENCY_DIR"] = DependencyDir(tree->dir, request.task->dependency());
  }
  if (request.on_build_start) request.on_build_start();
  // The checkout's layer sits beside it, made afresh for each build (build_layer.h).
  tree->step = layers_.BuildInLayer(command, tree->dir, tree->dir + "-layer", build.isolation,
                                    build.sha, request.cancel, &tree->layer_env);
}

}  // namespace kbisect
