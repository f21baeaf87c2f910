// Copyright 2026 The kbisect Authors.
#include "tests/testing/fake_repository_view.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kbisect {

void FakeRepositoryView::AddMergedBranch(int merge_index, int fork_index, int length) {
  merge_index_ = merge_index;
  fork_index_ = fork_index;
  branch_length_ = length;
}

std::string FakeRepositoryView::MainSha(int index) { return absl::StrFormat("%040d", index); }

std::string FakeRepositoryView::BranchSha(int index) {
  return absl::StrCat("b", absl::StrFormat("%039d", index));
}

std::string FakeRepositoryView::TreeSha(const std::string& commit_sha) {
  if (commit_sha.empty()) return std::string();
  return absl::StrCat(commit_sha[0] == 'b' ? "f" : "e", commit_sha.substr(1));
}

void FakeRepositoryView::SetTreeSha(const std::string& commit_sha, std::string tree_sha) {
  tree_shas_[commit_sha] = std::move(tree_sha);
}

absl::StatusOr<std::vector<v1::CommitRef>> FakeRepositoryView::ResolveRange(
    const v1::JobSpec& spec) {
  ++resolves;
  if (spec.good() == "nope") {
    return absl::NotFoundError("unknown revision 'nope' in /repo; check `git log`");
  }
  std::vector<v1::CommitRef> commits;
  if (spec.has_dependency()) {
    for (int i = 0; i <= commits_; ++i) {
      v1::CommitRef ref;
      ref.set_sha(DependencySha(i));
      ref.set_index(i);
      ref.set_subject(absl::StrCat("dependency commit ", i));
      commits.push_back(ref);
    }
    SetTreeShas(&commits);
    return commits;
  }
  if (merge_index_ >= 0 && spec.good() == MainSha(fork_index_) &&
      spec.bad() == BranchSha(branch_length_)) {
    for (int i = 0; i <= branch_length_; ++i) {
      v1::CommitRef ref;
      ref.set_sha(i == 0 ? MainSha(fork_index_) : BranchSha(i));
      ref.set_index(i);
      ref.set_subject(absl::StrCat("branch commit ", i));
      commits.push_back(ref);
    }
    SetTreeShas(&commits);
    return commits;
  }
  for (int i = 0; i <= commits_; ++i) {
    v1::CommitRef ref;
    ref.set_sha(MainSha(i));
    ref.set_index(i);
    ref.set_subject(absl::StrCat("commit ", i));
    ref.set_is_merge(i == merge_index_);
    commits.push_back(ref);
  }
  SetTreeShas(&commits);
  return commits;
}

void FakeRepositoryView::SetTreeShas(std::vector<v1::CommitRef>* commits) const {
  for (v1::CommitRef& commit : *commits) {
    auto it = tree_shas_.find(commit.sha());
    commit.set_tree_sha(it != tree_shas_.end() ? it->second : TreeSha(commit.sha()));
  }
}

absl::StatusOr<RepositoryView::MergedBranchRange> FakeRepositoryView::MergedBranch(
    const std::string&, const std::string& merge_sha) {
  if (merge_index_ < 0 || merge_sha != MainSha(merge_index_)) {
    return absl::FailedPreconditionError(absl::StrCat(merge_sha, " is not a merge commit"));
  }
  return MergedBranchRange{MainSha(fork_index_), BranchSha(branch_length_)};
}

absl::StatusOr<std::vector<v1::FileChange>> FakeRepositoryView::DiffStat(const std::string&,
                                                                         const std::string&,
                                                                         const std::string&) {
  ++diffs;
  v1::FileChange file;
  file.set_path("kernels/attention.py");
  file.set_additions(1);
  file.set_deletions(1);
  return std::vector<v1::FileChange>{file};
}

absl::StatusOr<std::string> FakeRepositoryView::DiffPatch(const std::string&, const std::string&,
                                                          const std::string&) {
  return std::string(
      "diff --git a/kernels/attention.py b/kernels/attention.py\n"
      "--- a/kernels/attention.py\n+++ b/kernels/attention.py\n"
      "@@ -5,3 +5,3 @@ def attention(q, k, v, o, N):\n"
      "-    BLOCK_SIZE=64\n+    BLOCK_SIZE=32\n");
}

absl::StatusOr<std::vector<v1::SubmoduleBump>> FakeRepositoryView::SubmoduleBumps(
    const std::string& /*repository*/, const std::string& /*from*/, const std::string& /*to*/) {
  return std::vector<v1::SubmoduleBump>();
}

std::string FakeRepositoryView::DependencySha(int index) {
  return absl::StrCat("d", absl::StrFormat("%039d", index));
}

void FakeRepositoryView::SetFile(const std::string& commit_sha, const std::string& path,
                                 std::string contents) {
  files_[{commit_sha, path}] = std::move(contents);
}

absl::StatusOr<std::string> FakeRepositoryView::ReadFile(const std::string& /*repository*/,
                                                         const std::string& commit,
                                                         const std::string& path) {
  auto it = files_.find({commit, path});
  if (it != files_.end()) return it->second;
  return absl::NotFoundError(absl::StrCat("there is no file ", path, " in commit ", commit));
}

absl::StatusOr<ChangeCommit> FakeRepositoryView::MakeChange(const std::string& /*repository*/,
                                                            const std::string& /*base*/,
                                                            const ChangeSpec& /*change*/) {
  return change_;
}

}  // namespace kbisect
