// Copyright 2026 The kbisect Authors.
//
// A worker slot's place to build and run commits: a private checkout per (repository, slot)
// backed by a bare mirror in the worker's cache. Behind an interface so the task runner is
// tested without git.
#ifndef KBISECT_WORKER_WORKSPACE_H_
#define KBISECT_WORKER_WORKSPACE_H_

#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/git/worktree.h"

namespace kbisect {

class Workspace {
 public:
  virtual ~Workspace() = default;

  // Makes a directory hold exactly commit `sha` of `repository` (a URL or path) and returns the
  // directory. Ignored files (build outputs) survive between calls, so builds are incremental.
  virtual absl::StatusOr<std::string> Prepare(const std::string& repository,
                                              const std::string& sha) = 0;
};

// The real workspace of slot `slot`: mirrors under <cache_dir>/mirrors/, checkouts under
// <cache_dir>/worktrees/<repository key>/slot-<slot>. The source repository is only read.
// Thread-compatible: one slot's workspace is used by one task at a time.
class GitWorkspace : public Workspace {
 public:
  GitWorkspace(std::string cache_dir, int slot);

  absl::StatusOr<std::string> Prepare(const std::string& repository,
                                      const std::string& sha) override;

 private:
  const std::string cache_dir_;
  const int slot_;
  std::map<std::string, std::unique_ptr<Worktree>> worktrees_;  // By repository key.
};

}  // namespace kbisect

#endif  // KBISECT_WORKER_WORKSPACE_H_
