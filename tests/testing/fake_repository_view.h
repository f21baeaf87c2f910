// Copyright 2026 The kbisect Authors.
//
// A RepositoryView over a synthetic history, for tests of the coordinator without git.
#ifndef KBISECT_TESTS_TESTING_FAKE_REPOSITORY_VIEW_H_
#define KBISECT_TESTS_TESTING_FAKE_REPOSITORY_VIEW_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/repository_view.h"

namespace kbisect {

// A first-parent mainline of `commits` + 1 commits (index 0 = GOOD; shas MainSha(i), subjects
// "commit i"), optionally with one merge whose second parent is the tip of a side branch (shas
// BranchSha(1..length)) forked from the mainline. ResolveRange returns the mainline for any spec
// except the branch's own range (good = the fork's sha, bad = the branch tip) and a dependency
// follow-up's (a spec with a DependencyDescent: DependencySha(0..commits), subjects "dependency
// commit i"), and NotFound for good == "nope". Every commit changes kernels/attention.py (BLOCK_SIZE 64 -> 32). Each commit's
// tree_sha is TreeSha(its sha) unless SetTreeSha gave it another. Not thread-safe; the counters
// count calls.
class FakeRepositoryView : public RepositoryView {
 public:
  explicit FakeRepositoryView(int commits) : commits_(commits) {}

  // Makes mainline commit `merge_index` a merge of a `length`-commit branch forked at mainline
  // commit `fork_index` (< merge_index).
  void AddMergedBranch(int merge_index, int fork_index, int length);

  static std::string MainSha(int index);
  static std::string BranchSha(int index);
  // The commits of a dependency follow-up's range (a spec with a DependencyDescent): "d" then
  // 39 digits of the index, over as many commits as the mainline.
  static std::string DependencySha(int index);

  // Gives file `path` of commit `commit_sha` the contents `contents` (ReadFile).
  void SetFile(const std::string& commit_sha, const std::string& path, std::string contents);
  // The default fake tree id of the commit `commit_sha`: 40 characters, distinct for distinct
  // commits of this history ("e" then the 39 digits of a mainline index, "f" then those of a
  // branch index).
  static std::string TreeSha(const std::string& commit_sha);

  // Gives commit `commit_sha` the tree `tree_sha` (for instance another commit's, as a revert
  // would) in every later ResolveRange.
  void SetTreeSha(const std::string& commit_sha, std::string tree_sha);

  absl::StatusOr<std::vector<v1::CommitRef>> ResolveRange(const v1::JobSpec& spec) override;
  absl::StatusOr<MergedBranchRange> MergedBranch(const std::string& repository,
                                                 const std::string& merge_sha) override;
  absl::StatusOr<std::vector<v1::FileChange>> DiffStat(const std::string& repository,
                                                       const std::string& from,
                                                       const std::string& to) override;
  absl::StatusOr<std::string> DiffPatch(const std::string& repository, const std::string& from,
                                        const std::string& to) override;
  // No submodules: always an empty list.
  absl::StatusOr<std::vector<v1::SubmoduleBump>> SubmoduleBumps(const std::string& repository,
                                                                const std::string& from,
                                                                const std::string& to) override;
  // The contents SetFile gave, else NotFound.
  absl::StatusOr<std::string> ReadFile(const std::string& repository, const std::string& commit,
                                       const std::string& path) override;
  // What SetChange gave (every call the same), else Unimplemented: the fake history has no
  // commits to change.
  absl::StatusOr<ChangeCommit> MakeChange(const std::string& repository, const std::string& base,
                                          const ChangeSpec& change) override;
  // The result of every later MakeChange.
  void SetChange(absl::StatusOr<ChangeCommit> change) { change_ = std::move(change); }

  int resolves = 0;
  int diffs = 0;

 private:
  // Fills the tree_sha of every commit.
  void SetTreeShas(std::vector<v1::CommitRef>* commits) const;

  const int commits_;
  int merge_index_ = -1;
  int fork_index_ = -1;
  int branch_length_ = 0;
  std::map<std::string, std::string> tree_shas_;  // Commit sha -> tree id set by SetTreeSha.
  // (Commit sha, path) -> contents set by SetFile.
  std::map<std::pair<std::string, std::string>, std::string> files_;
  absl::StatusOr<ChangeCommit> change_ = absl::UnimplementedError("no change was set");
};

}  // namespace kbisect

#endif  // KBISECT_TESTS_TESTING_FAKE_REPOSITORY_VIEW_H_
