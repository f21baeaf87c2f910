// Copyright 2026 The kbisect Authors.
#include "worker/workspace.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/git/mirror.h"
#include "common/status_macros.h"

namespace kbisect {

GitWorkspace::GitWorkspace(std::string cache_dir, int slot)
    : cache_dir_(std::move(cache_dir)), slot_(slot) {}

std::string GitWorkspace::RepositoryKey(const std::string& repository) {
  // FNV-1a: stable across builds and platforms, unlike std::hash.
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : repository) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  std::string base = repository;
  while (!base.empty() && (base.back() == '/' || base.back() == '\\')) base.pop_back();
  if (auto slash = base.find_last_of("/:"); slash != std::string::npos) {
    base = base.substr(slash + 1);
  }
  if (base.size() > 4 && base.substr(base.size() - 4) == ".git") base.resize(base.size() - 4);
  for (char& c : base) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.';
    if (!safe) c = '_';
  }
  if (base.empty() || base[0] == '.') base = "repo" + base;
  return absl::StrFormat("%s-%016x", base.substr(0, 40), hash);
}

absl::StatusOr<std::string> GitWorkspace::Prepare(const std::string& repository,
                                                  const std::string& sha) {
  const std::string key = RepositoryKey(repository);
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
