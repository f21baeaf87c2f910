// Copyright 2026 The kbisect Authors.
//
// A worker slot's place to build and run commits: private checkouts per (repository, slot) backed
// by a bare mirror in the worker's cache. Behind an interface so the task runner is tested
// without git.
#ifndef KBISECT_WORKER_WORKSPACE_H_
#define KBISECT_WORKER_WORKSPACE_H_

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "common/git/submodules.h"
#include "common/git/worktree.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// The directory a dependency follow-up's dependency is checked out in, given the superproject's
// checkout `checkout`: the submodule's path inside it (inside the outer dependency's directory
// for a nested one, DependencyDescent.outer), or for a pin file the directory
// `<checkout>-dependency` beside it (outside the superproject's tree, so its cleaning never
// touches it). The build and the benchmark see it as KBISECT_DEPENDENCY_DIR. Pure.
std::string DependencyDir(const std::string& checkout, const v1::DependencyDescent& dependency);

// Which of a slot's two checkouts of a repository a commit goes to. A confirmation measures two
// commits in alternation: the paired commit (last-good) gets a checkout of its own, so switching
// between the two never checks out or builds again. Every other task uses the primary one.
enum class WorkspaceLane { kPrimary, kPaired };

class Workspace {
 public:
  virtual ~Workspace() = default;

  // Makes the directory of `lane` hold exactly commit `sha` of `repository` (a URL or path),
  // its submodules included, recursively, and returns the directory. The two lanes are
  // different directories. Ignored files (build outputs) survive between calls on one lane, so
  // builds are incremental. An error for which IsUnfetchableSubmodule (common/git/submodules.h)
  // is true is the commit's (a submodule commit nobody can fetch); any other is the worker's.
  virtual absl::StatusOr<std::string> Prepare(const std::string& repository, const std::string& sha,
                                              WorkspaceLane lane) = 0;

  // A dependency follow-up's probe (Task.dependency): makes the directory of `lane` hold
  // commit `dependency.superproject_sha()` of `dependency.superproject()` as Prepare does (or,
  // nested, as PrepareWithDependency of `dependency.outer()` does), except that
  // DependencyDir of it holds commit `sha` of the dependency `repository`, its own submodules
  // included, and returns the superproject's directory. A submodule is checked out at `sha`
  // directly, never first at the commit its superproject records. Errors as Prepare's. The
  // default implementation (for workspaces without git) returns Unimplemented.
  virtual absl::StatusOr<std::string> PrepareWithDependency(const v1::DependencyDescent& dependency,
                                                            const std::string& repository,
                                                            const std::string& sha,
                                                            WorkspaceLane lane);
};

// Makes sure the worker's mirror of `repository` (<cache_dir>/mirrors/<MirrorKey>.git, created
// on first use) holds commit `sha`, fetching once if it does not, and returns the mirror's git
// directory. The errors are those of EnsureMirror and EnsureCommitInMirror (common/git/mirror.h).
absl::StatusOr<std::string> PrepareMirror(const std::string& cache_dir,
                                          const std::string& repository, const std::string& sha);

// The real workspace of slot `slot`: mirrors under <cache_dir>/mirrors/ (the submodules' too,
// one per submodule URL), checkouts under
// <cache_dir>/worktrees/<repository key>/slot-<slot> (the primary lane) and .../slot-<slot>-b
// (the paired lane, created by the slot's first confirmation). The source repository is only
// read. Thread-compatible: one slot's workspace is used by one task at a time.
class GitWorkspace : public Workspace {
 public:
  GitWorkspace(std::string cache_dir, int slot);

  absl::StatusOr<std::string> Prepare(const std::string& repository, const std::string& sha,
                                      WorkspaceLane lane) override;
  absl::StatusOr<std::string> PrepareWithDependency(const v1::DependencyDescent& dependency,
                                                    const std::string& repository,
                                                    const std::string& sha,
                                                    WorkspaceLane lane) override;

 private:
  // Prepare, with submodules checked out at other commits than recorded (SubmoduleCheckout).
  absl::StatusOr<std::string> PrepareOverriding(const std::string& repository,
                                                const std::string& sha, WorkspaceLane lane,
                                                const SubmoduleCheckout::Overrides& overrides);

  const std::string cache_dir_;
  const int slot_;
  const SubmoduleCheckout submodules_;
  // By repository key and lane.
  std::map<std::pair<std::string, WorkspaceLane>, std::unique_ptr<Worktree>> worktrees_;
};

}  // namespace kbisect

#endif  // KBISECT_WORKER_WORKSPACE_H_
