// Copyright 2026 The kbisect Authors.
#include "worker/workspace.h"

#include "absl/strings/str_cat.h"
#include "common/git/mirror.h"
#include "common/status_macros.h"

namespace kbisect {

absl::StatusOr<std::string> PrepareMirror(const std::string& cache_dir,
                                          const std::string& repository, const std::string& sha) {
  ASSIGN_OR_RETURN(std::string mirror_dir,
                   EnsureMirror(repository, absl::StrCat(cache_dir, "/mirrors/",
                                                         MirrorKey(repository), ".git")));
  RETURN_IF_ERROR(EnsureCommitInMirror(repository, mirror_dir, sha));
  return mirror_dir;
}

GitWorkspace::GitWorkspace(std::string cache_dir, int slot)
    : cache_dir_(std::move(cache_dir)), slot_(slot), submodules_(cache_dir_ + "/mirrors") {}

absl::StatusOr<std::string> GitWorkspace::Prepare(const std::string& repository,
                                                  const std::string& sha, WorkspaceLane lane) {
  const std::string key = MirrorKey(repository);
  ASSIGN_OR_RETURN(const std::string mirror_dir, PrepareMirror(cache_dir_, repository, sha));
  auto it = worktrees_.find({key, lane});
  if (it == worktrees_.end()) {
    const std::string dir = absl::StrCat(cache_dir_, "/worktrees/", key, "/slot-", slot_,
                                         lane == WorkspaceLane::kPaired ? "-b" : "");
    ASSIGN_OR_RETURN(std::unique_ptr<Worktree> worktree, Worktree::OpenOrCreate(mirror_dir, dir));
    it = worktrees_.emplace(std::make_pair(key, lane), std::move(worktree)).first;
  }
  RETURN_IF_ERROR(submodules_.CheckOut(*it->second, repository, sha));
  return it->second->path();
}

std::string DependencyDir(const std::string& checkout, const v1::DependencyDescent& dependency) {
  if (dependency.kind() == v1::DEPENDENCY_KIND_SUBMODULE) {
    // A nested submodule's path is relative to its superproject's (the outer dependency's).
    return absl::StrCat(
        dependency.has_outer() ? DependencyDir(checkout, dependency.outer()) : checkout, "/",
        dependency.path());
  }
  return absl::StrCat(checkout, "-dependency");
}

absl::StatusOr<std::string> Workspace::PrepareWithDependency(
    const v1::DependencyDescent& /*dependency*/, const std::string& /*repository*/,
    const std::string& /*sha*/, WorkspaceLane /*lane*/) {
  return absl::UnimplementedError("this workspace cannot check dependencies out");
}

absl::StatusOr<std::string> GitWorkspace::PrepareWithDependency(
    const v1::DependencyDescent& dependency, const std::string& repository,
    const std::string& sha, WorkspaceLane lane) {
  // The superproject as it is at the culprit (a submodule at the commit it records), then the
  // dependency moved to the probed commit: a submodule's checkout is taken over in place. A
  // nested descent's superproject is itself a dependency, checked out the same way first.
  ASSIGN_OR_RETURN(
      const std::string dir,
      dependency.has_outer()
          ? PrepareWithDependency(dependency.outer(), dependency.superproject(),
                                  dependency.superproject_sha(), lane)
          : Prepare(dependency.superproject(), dependency.superproject_sha(), lane));
  ASSIGN_OR_RETURN(const std::string mirror_dir, PrepareMirror(cache_dir_, repository, sha));
  ASSIGN_OR_RETURN(std::unique_ptr<Worktree> tree,
                   Worktree::OpenOrCreate(mirror_dir, DependencyDir(dir, dependency)));
  // Its errors keep their payload (IsUnfetchableSubmodule): a nested submodule nobody can fetch
  // is the probed commit's.
  RETURN_IF_ERROR(submodules_.CheckOut(*tree, repository, sha));
  return dir;
}

}  // namespace kbisect
