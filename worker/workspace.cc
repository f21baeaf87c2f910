// Copyright 2026 The kbisect Authors.
#include "worker/workspace.h"

#include "absl/strings/str_cat.h"
#include "common/git/mirror.h"
#include "common/status_macros.h"

namespace kbisect {

GitWorkspace::GitWorkspace(std::string cache_dir, int slot)
    : cache_dir_(std::move(cache_dir)), slot_(slot) {}


absl::StatusOr<std::string> GitWorkspace::Prepare(const std::string& repository,
                                                  const std::string& sha) {
  const std::string key = MirrorKey(repository);
  const std::string mirror_dir = absl::StrCat(cache_dir_, "/mirrors/", key, ".git");
  auto it = worktrees_.find(key);
  if (it == worktrees_.end()) {
    ASSIGN_OR_RETURN(std::string git_dir, EnsureMirror(repository, mirror_dir));
    (void)git_dir;
    RETURN_IF_ERROR(EnsureCommitInMirror(repository, mirror_dir, sha));
    ASSIGN_OR_RETURN(std::unique_ptr<Worktree> worktree,
                     Worktree::OpenOrCreate(mirror_dir, absl::StrCat(cache_dir_, "/worktrees/",
                                                                     key, "/slot-", slot_)));
    it = worktrees_.emplace(key, std::move(worktree)).first;
  } else {
    RETURN_IF_ERROR(EnsureCommitInMirror(repository, mirror_dir, sha));
  }
  RETURN_IF_ERROR(it->second->Checkout(sha));
  return it->second->path();
}

}  // namespace kbisect
