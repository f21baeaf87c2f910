// Copyright 2026 The kbisect Authors.
#include "worker/workspace.h"

#include <vector>

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
  return PrepareOverriding(repository, sha, lane, {});
}

absl::StatusOr<std::string> GitWorkspace::PrepareOverriding(
    const std::string& repository, const std::string& sha, WorkspaceLane lane,
    const SubmoduleCheckout::Overrides& overrides) {
  const std::string key = MirrorKey(repository);
  ASSIGN_OR_RETURN(const std::string mirror_dir, PrepareMirror(cache_dir_, repository, sha));
  auto it = worktrees_.find({key, lane});
  if (it == worktrees_.end()) {
    const std::string dir = absl::StrCat(cache_dir_, "/worktrees/", key, "/slot-", slot_,
                                         lane == WorkspaceLane::kPaired ? "-b" : "");
    ASSIGN_OR_RETURN(std::unique_ptr<Worktree> worktree, Worktree::OpenOrCreate(mirror_dir, dir));
    it = worktrees_.emplace(std::make_pair(key, lane), std::move(worktree)).first;
  }
  RETURN_IF_ERROR(submodules_.CheckOut(*it->second, repository, sha, overrides));
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
    const v1::DependencyDescent& dependency, const std::string& repository, const std::string& sha,
    WorkspaceLane lane) {
  // The levels of the descent, innermost first: each one's descent, and the repository and
  // commit checked out at its path (the probed commit, then each outer level's culprit).
  struct Level {
    const v1::DependencyDescent* descent;
    std::string repository;
    std::string sha;
  };
  std::vector<Level> levels = {{&dependency, repository, sha}};
  while (levels.back().descent->has_outer()) {
    const v1::DependencyDescent* inner = levels.back().descent;
    levels.push_back({&inner->outer(), inner->superproject(), inner->superproject_sha()});
  }
  const v1::DependencyDescent& top = *levels.back().descent;
  const bool pinned = top.kind() == v1::DEPENDENCY_KIND_PIN_FILE;
  // Submodules go straight to their commits, never first to the ones their superprojects
  // record: overrides by full path, from the top superproject (or from a pinned dependency's
  // directory, for submodules of a pinned dependency).
  SubmoduleCheckout::Overrides overrides;
  std::string path;
  for (auto level = levels.rbegin() + (pinned ? 1 : 0); level != levels.rend(); ++level) {
    path = path.empty() ? level->descent->path() : absl::StrCat(path, "/", level->descent->path());
    overrides[path] = {level->repository, level->sha};
  }
  // Errors keep their payload (IsUnfetchableSubmodule): a submodule nobody can fetch is the
  // probed commit's.
  ASSIGN_OR_RETURN(const std::string dir,
                   PrepareOverriding(top.superproject(), top.superproject_sha(), lane,
                                     pinned ? SubmoduleCheckout::Overrides() : overrides));
  if (pinned) {
    const Level& pin = levels.back();
    ASSIGN_OR_RETURN(const std::string mirror_dir,
                     PrepareMirror(cache_dir_, pin.repository, pin.sha));
    ASSIGN_OR_RETURN(std::unique_ptr<Worktree> tree,
                     Worktree::OpenOrCreate(mirror_dir, DependencyDir(dir, top)));
    RETURN_IF_ERROR(submodules_.CheckOut(*tree, pin.repository, pin.sha, overrides));
  }
  return dir;
}

}  // namespace kbisect
