// Copyright 2026 The kbisect Authors.

#include "common/git/git_repo.h"

#include <git2.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/git/libgit2_util.h"
#include "common/status_macros.h"

namespace kbisect {
namespace {

using git_internal::CommitPtr;
using git_internal::DiffPtr;
using git_internal::Git2Error;
using git_internal::LastErrorMessage;
using git_internal::ObjectPtr;
using git_internal::OidToString;
using git_internal::OwnedBuf;
using git_internal::PatchPtr;
using git_internal::RevwalkPtr;
using git_internal::StripTrailingSlash;
using git_internal::TreePtr;

// Formats a signature time like git's %ai: "2026-01-02 15:04:05 +0100".
std::string FormatIsoLikeGit(const git_time& when) {
  const time_t local = static_cast<time_t>(when.time + static_cast<int64_t>(when.offset) * 60);
  struct tm tm_local;
  gmtime_r(&local, &tm_local);
  char date[32];
  strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S", &tm_local);
  const int minutes = std::abs(when.offset);
  const char sign = (when.offset < 0 || when.sign == '-') ? '-' : '+';
  return absl::StrFormat("%s %c%02d%02d", date, sign, minutes / 60, minutes % 60);
}

// Looks up the commit with the given full id.
absl::StatusOr<CommitPtr> LookupCommit(git_repository* repo, const std::string& sha) {
  ASSIGN_OR_RETURN(git_oid oid, git_internal::ParseFullOid(sha));
  git_commit* commit = nullptr;
  int rc = git_commit_lookup(&commit, repo, &oid);
  if (rc != 0) return Git2Error(rc, absl::StrCat("cannot read commit ", sha));
  return CommitPtr(commit);
}

// Returns the tree of the commit with the given full id.
absl::StatusOr<TreePtr> CommitTree(git_repository* repo, const std::string& sha) {
  ASSIGN_OR_RETURN(CommitPtr commit, LookupCommit(repo, sha));
  git_tree* tree = nullptr;
  int rc = git_commit_tree(&tree, commit.get());
  if (rc != 0) return Git2Error(rc, absl::StrCat("cannot read the tree of commit ", sha));
  return TreePtr(tree);
}

// Computes the tree-to-tree diff between two commits with git's default rename detection.
absl::StatusOr<DiffPtr> DiffCommits(git_repository* repo, const std::string& from,
                                    const std::string& to) {
  ASSIGN_OR_RETURN(TreePtr old_tree, CommitTree(repo, from));
  ASSIGN_OR_RETURN(TreePtr new_tree, CommitTree(repo, to));
  git_diff_options options = GIT_DIFF_OPTIONS_INIT;
  options.context_lines = 3;
  git_diff* raw = nullptr;
  int rc = git_diff_tree_to_tree(&raw, repo, old_tree.get(), new_tree.get(), &options);
  if (rc != 0) return Git2Error(rc, absl::StrCat("cannot diff ", from, " against ", to));
  DiffPtr diff(raw);
  git_diff_find_options find = GIT_DIFF_FIND_OPTIONS_INIT;
  find.flags = GIT_DIFF_FIND_RENAMES;
  find.rename_threshold = 50;
  find.rename_limit = 1000;  // git's diff.renameLimit default; libgit2's own default is 200.
  rc = git_diff_find_similar(diff.get(), &find);
  if (rc != 0) return Git2Error(rc, "rename detection failed");
  return diff;
}

}  // namespace

void GitRepo::RepositoryDeleter::operator()(git_repository* repo) const {
  git_repository_free(repo);
}

GitRepo::GitRepo(git_repository* repo)
    : git_dir_(StripTrailingSlash(git_repository_path(repo))),
      workdir_(git_repository_workdir(repo) == nullptr
                   ? std::string()
                   : StripTrailingSlash(git_repository_workdir(repo))),
      repo_(repo) {}

GitRepo::~GitRepo() = default;

absl::StatusOr<std::unique_ptr<GitRepo>> GitRepo::Open(const std::string& path) {
  git_internal::EnsureLibgit2Initialized();
  struct stat st;
  if (path.empty() || stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(
        absl::StrCat("'", path, "' does not exist; pass the path of a git checkout"));
  }
  git_repository* raw = nullptr;
  int rc = git_repository_open_ext(&raw, path.c_str(), 0, nullptr);
  git_internal::RepositoryPtr repo(raw);
  if (rc == GIT_ENOTFOUND) {
    return absl::FailedPreconditionError(
        absl::StrCat("'", path,
                     "' is not inside a git repository; run from inside a git checkout or pass the "
                     "repository's path (create one with `git init` or `git clone`)"));
  }
  if (rc != 0) {
    return Git2Error(rc, absl::StrCat("cannot open the git repository at '", path, "'"));
  }
  return std::unique_ptr<GitRepo>(new GitRepo(repo.release()));
}

std::string GitRepo::git_dir() const { return git_dir_; }

std::string GitRepo::workdir() const { return workdir_; }

std::string GitRepo::DescribeRepoLocked() const { return workdir_.empty() ? git_dir_ : workdir_; }

absl::StatusOr<std::string> GitRepo::ResolveLocked(std::string_view rev) const {
  if (absl::StripAsciiWhitespace(git_internal::ToAbsl(rev)).empty()) {
    return absl::InvalidArgumentError("empty revision; name a commit (a sha, branch, tag or HEAD)");
  }
  const std::string spec(rev);
  git_object* raw = nullptr;
  int rc = git_revparse_single(&raw, repo_.get(), spec.c_str());
  ObjectPtr object(raw);
  if (rc == GIT_EAMBIGUOUS) {
    return absl::InvalidArgumentError(absl::StrCat("revision '", spec, "' is ambiguous in ",
                                                   DescribeRepoLocked(), ": ", LastErrorMessage(),
                                                   "; use more hex digits or the full sha"));
  }
  if (rc != 0) {
    return absl::NotFoundError(absl::StrCat("unknown revision '", spec, "' in ",
                                            DescribeRepoLocked(), ": ", LastErrorMessage(),
                                            "; check `git log` for the commit you mean"));
  }
  git_object* peeled = nullptr;
  rc = git_object_peel(&peeled, object.get(), GIT_OBJECT_COMMIT);
  ObjectPtr commit(peeled);
  if (rc != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "revision '", spec, "' names a ", git_object_type2string(git_object_type(object.get())),
        ", not a commit; pass a commit, branch or tag"));
  }
  return OidToString(*git_object_id(commit.get()));
}

absl::StatusOr<std::string> GitRepo::ResolveCommit(std::string_view rev) const {
  kbisect::MutexLock lock(&mu_);
  return ResolveLocked(rev);
}

absl::StatusOr<bool> GitRepo::IsAncestorLocked(const std::string& ancestor,
                                               const std::string& descendant) const {
  if (ancestor == descendant) return true;
  ASSIGN_OR_RETURN(git_oid a, git_internal::ParseFullOid(ancestor));
  ASSIGN_OR_RETURN(git_oid d, git_internal::ParseFullOid(descendant));
  int rc = git_graph_descendant_of(repo_.get(), &d, &a);
  if (rc < 0) {
    return Git2Error(
        rc, absl::StrCat("cannot tell whether ", ancestor, " is an ancestor of ", descendant));
  }
  return rc == 1;
}

absl::StatusOr<bool> GitRepo::IsAncestor(std::string_view ancestor,
                                         std::string_view descendant) const {
  kbisect::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(std::string a, ResolveLocked(ancestor));
  ASSIGN_OR_RETURN(std::string d, ResolveLocked(descendant));
  return IsAncestorLocked(a, d);
}

absl::StatusOr<std::string> GitRepo::MergeBase(std::string_view a_view,
                                               std::string_view b_view) const {
  const std::string a_rev(a_view);
  const std::string b_rev(b_view);
  kbisect::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(std::string a, ResolveLocked(a_rev));
  ASSIGN_OR_RETURN(std::string b, ResolveLocked(b_rev));
  ASSIGN_OR_RETURN(git_oid a_oid, git_internal::ParseFullOid(a));
  ASSIGN_OR_RETURN(git_oid b_oid, git_internal::ParseFullOid(b));
  git_oid base;
  const int rc = git_merge_base(&base, repo_.get(), &a_oid, &b_oid);
  if (rc == GIT_ENOTFOUND) {
    return absl::NotFoundError(
        absl::StrCat(a_rev, " and ", b_rev, " share no history in ", DescribeRepoLocked()));
  }
  if (rc != 0) return Git2Error(rc, absl::StrCat("cannot find the merge base of ", a, " and ", b));
  return git_internal::OidToString(base);
}

absl::StatusOr<std::vector<std::string>> GitRepo::CommitRange(std::string_view good_view,
                                                              std::string_view bad_view,
                                                              bool first_parent) const {
  const std::string good_rev(good_view);
  const std::string bad_rev(bad_view);
  kbisect::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(std::string good, ResolveLocked(good_rev));
  ASSIGN_OR_RETURN(std::string bad, ResolveLocked(bad_rev));
  if (good == bad) {
    return absl::InvalidArgumentError(
        absl::StrCat("good '", good_rev, "' and bad '", bad_rev, "' are the same commit ", good,
                     "; the range is empty, pick a good commit older than the bad one"));
  }
  ASSIGN_OR_RETURN(bool ordered, IsAncestorLocked(good, bad));
  if (!ordered) {
    ASSIGN_OR_RETURN(bool swapped, IsAncestorLocked(bad, good));
    if (swapped) {
      return absl::FailedPreconditionError(
          absl::StrCat("good '", good_rev, "' (", good, ") is a descendant of bad '", bad_rev,
                       "' (", bad, "), not an ancestor; did you swap good and bad?"));
    }
    ASSIGN_OR_RETURN(git_oid g, git_internal::ParseFullOid(good));
    ASSIGN_OR_RETURN(git_oid b, git_internal::ParseFullOid(bad));
    git_oid base;
    std::string hint = "they share no history";
    if (git_merge_base(&base, repo_.get(), &g, &b) == 0) {
      hint = absl::StrCat("their merge base is ", OidToString(base),
                          ", which may be a better good commit");
    }
    return absl::FailedPreconditionError(
        absl::StrCat("good '", good_rev, "' (", good, ") is not an ancestor of bad '", bad_rev,
                     "' (", bad, "), so good..bad is not a bisection range; ", hint));
  }

  std::vector<std::string> commits;
  if (first_parent) {
    std::string current = bad;
    while (current != good) {
      commits.push_back(current);
      ASSIGN_OR_RETURN(CommitPtr commit, LookupCommit(repo_.get(), current));
      if (git_commit_parentcount(commit.get()) == 0) {
        return absl::FailedPreconditionError(absl::StrCat(
            "good '", good_rev, "' (", good, ") is an ancestor of bad '", bad_rev, "' (", bad,
            ") but not on its first-parent chain: it was merged in from a side branch. Use "
            "--no-first-parent to search all commits in good..bad, or pick a good commit on "
            "the mainline (for example the merge that brought it in)"));
      }
      current = OidToString(*git_commit_parent_id(commit.get(), 0));
    }
    commits.push_back(good);
    std::reverse(commits.begin(), commits.end());
    return commits;
  }

  git_revwalk* raw_walk = nullptr;
  int rc = git_revwalk_new(&raw_walk, repo_.get());
  if (rc != 0) return Git2Error(rc, "cannot start a revision walk");
  RevwalkPtr walk(raw_walk);
  ASSIGN_OR_RETURN(git_oid g, git_internal::ParseFullOid(good));
  ASSIGN_OR_RETURN(git_oid b, git_internal::ParseFullOid(bad));
  if ((rc = git_revwalk_sorting(walk.get(), GIT_SORT_TOPOLOGICAL | GIT_SORT_REVERSE)) != 0 ||
      (rc = git_revwalk_push(walk.get(), &b)) != 0 ||
      (rc = git_revwalk_hide(walk.get(), &g)) != 0) {
    return Git2Error(rc, absl::StrCat("cannot walk ", good, "..", bad));
  }
  commits.push_back(good);
  git_oid oid;
  while ((rc = git_revwalk_next(&oid, walk.get())) == 0) commits.push_back(OidToString(oid));
  if (rc != GIT_ITEROVER) return Git2Error(rc, absl::StrCat("cannot walk ", good, "..", bad));
  return commits;
}

absl::StatusOr<CommitInfo> GitRepo::GetCommit(std::string_view rev) const {
  kbisect::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(std::string sha, ResolveLocked(rev));
  ASSIGN_OR_RETURN(CommitPtr commit, LookupCommit(repo_.get(), sha));
  CommitInfo info;
  info.sha = sha;
  info.tree_sha = OidToString(*git_commit_tree_id(commit.get()));
  const unsigned int parent_count = git_commit_parentcount(commit.get());
  for (unsigned int i = 0; i < parent_count; ++i) {
    info.parents.push_back(OidToString(*git_commit_parent_id(commit.get(), i)));
  }
  const git_signature* author = git_commit_author(commit.get());
  info.author_name = author->name;
  info.author_email = author->email;
  info.author_time = author->when.time;
  info.author_tz_offset_minutes = author->when.offset;
  info.author_date = FormatIsoLikeGit(author->when);
  const git_signature* committer = git_commit_committer(commit.get());
  info.committer_name = committer->name;
  info.commit_time = committer->when.time;
  const char* summary = git_commit_summary(commit.get());
  if (summary != nullptr) info.subject = summary;
  const char* body = git_commit_body(commit.get());
  if (body != nullptr) {
    info.body = std::string(absl::StripTrailingAsciiWhitespace(body));
    // Drop leading blank lines (git's %b starts at the first non-blank line of the body).
    size_t start = 0;
    while (start < info.body.size()) {
      size_t eol = info.body.find('\n', start);
      if (eol == std::string::npos) break;
      if (!absl::StripAsciiWhitespace(absl::string_view(info.body).substr(start, eol - start))
               .empty()) {
        break;
      }
      start = eol + 1;
    }
    info.body.erase(0, start);
  }
  return info;
}

absl::StatusOr<std::vector<FileChange>> GitRepo::DiffStat(std::string_view from,
                                                          std::string_view to) const {
  kbisect::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(std::string from_sha, ResolveLocked(from));
  ASSIGN_OR_RETURN(std::string to_sha, ResolveLocked(to));
  ASSIGN_OR_RETURN(DiffPtr diff, DiffCommits(repo_.get(), from_sha, to_sha));
  std::vector<FileChange> changes;
  const size_t count = git_diff_num_deltas(diff.get());
  changes.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    git_patch* raw_patch = nullptr;
    int rc = git_patch_from_diff(&raw_patch, diff.get(), i);
    PatchPtr patch(raw_patch);
    if (rc != 0) return Git2Error(rc, absl::StrCat("cannot diff ", from_sha, " against ", to_sha));
    const git_diff_delta* delta =
        patch != nullptr ? git_patch_get_delta(patch.get()) : git_diff_get_delta(diff.get(), i);
    FileChange change;
    change.status = git_diff_status_char(delta->status);
    change.path = delta->status == GIT_DELTA_DELETED ? delta->old_file.path : delta->new_file.path;
    if (delta->status == GIT_DELTA_RENAMED || delta->status == GIT_DELTA_COPIED) {
      change.old_path = delta->old_file.path;
    }
    change.binary = (delta->flags & GIT_DIFF_FLAG_BINARY) != 0;
    if (!change.binary && patch != nullptr) {
      size_t additions = 0;
      size_t deletions = 0;
      rc = git_patch_line_stats(nullptr, &additions, &deletions, patch.get());
      if (rc != 0) return Git2Error(rc, "cannot count changed lines");
      change.additions = static_cast<int>(additions);
      change.deletions = static_cast<int>(deletions);
    }
    changes.push_back(std::move(change));
  }
  return changes;
}

absl::StatusOr<std::vector<std::string>> GitRepo::ChangedPaths(std::string_view from,
                                                               std::string_view to) const {
  kbisect::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(std::string from_sha, ResolveLocked(from));
  ASSIGN_OR_RETURN(std::string to_sha, ResolveLocked(to));
  ASSIGN_OR_RETURN(TreePtr old_tree, CommitTree(repo_.get(), from_sha));
  ASSIGN_OR_RETURN(TreePtr new_tree, CommitTree(repo_.get(), to_sha));
  git_diff_options options = GIT_DIFF_OPTIONS_INIT;
  git_diff* raw = nullptr;
  const int rc = git_diff_tree_to_tree(&raw, repo_.get(), old_tree.get(), new_tree.get(), &options);
  if (rc != 0) return Git2Error(rc, absl::StrCat("cannot diff ", from_sha, " against ", to_sha));
  DiffPtr diff(raw);
  std::vector<std::string> paths;
  const size_t count = git_diff_num_deltas(diff.get());
  paths.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const git_diff_delta* delta = git_diff_get_delta(diff.get(), i);
    const char* path =
        delta->new_file.path != nullptr ? delta->new_file.path : delta->old_file.path;
    if (path != nullptr) paths.emplace_back(path);
  }
  return paths;
}

bool GitRepo::TreePaths::Holds(std::string_view path) const {
  // git orders a tree's entries by name with a directory's name taken as "name/", which is how
  // the directory stands in a full path: a pre-order walk lists full paths in byte order.
  if (std::binary_search(files.begin(), files.end(), path)) return true;
  return std::any_of(submodules.begin(), submodules.end(), [&](const std::string& submodule) {
    return path.size() > submodule.size() && path.substr(0, submodule.size()) == submodule &&
           path[submodule.size()] == '/';
  });
}

absl::StatusOr<GitRepo::TreePaths> GitRepo::ListTree(std::string_view rev) const {
  kbisect::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(std::string sha, ResolveLocked(rev));
  ASSIGN_OR_RETURN(TreePtr tree, CommitTree(repo_.get(), sha));
  TreePaths paths;
  auto visit = [](const char* root, const git_tree_entry* entry, void* payload) -> int {
    auto* out = static_cast<TreePaths*>(payload);
    const git_object_t type = git_tree_entry_type(entry);
    if (type == GIT_OBJECT_BLOB) {
      out->files.push_back(absl::StrCat(root, git_tree_entry_name(entry)));
    } else if (type == GIT_OBJECT_COMMIT) {
      out->submodules.push_back(absl::StrCat(root, git_tree_entry_name(entry)));
    }
    return 0;
  };
  const int rc = git_tree_walk(tree.get(), GIT_TREEWALK_PRE, visit, &paths);
  if (rc != 0) return Git2Error(rc, absl::StrCat("cannot list the tree of ", sha));
  return paths;
}

absl::StatusOr<std::string> GitRepo::DiffPatch(std::string_view from, std::string_view to) const {
  kbisect::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(std::string from_sha, ResolveLocked(from));
  ASSIGN_OR_RETURN(std::string to_sha, ResolveLocked(to));
  ASSIGN_OR_RETURN(DiffPtr diff, DiffCommits(repo_.get(), from_sha, to_sha));
  OwnedBuf buf;
  int rc = git_diff_to_buf(buf.get(), diff.get(), GIT_DIFF_FORMAT_PATCH);
  if (rc != 0) return Git2Error(rc, absl::StrCat("cannot format the patch ", from_sha, ".."));
  return buf.str();
}

absl::StatusOr<std::string> GitRepo::ReadFile(std::string_view rev, std::string_view path) const {
  kbisect::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(std::string sha, ResolveLocked(rev));
  ASSIGN_OR_RETURN(TreePtr tree, CommitTree(repo_.get(), sha));
  const std::string where = absl::StrCat(std::string(path), " in commit ", sha.substr(0, 12));
  git_tree_entry* raw_entry = nullptr;
  if (git_tree_entry_bypath(&raw_entry, tree.get(), std::string(path).c_str()) != 0) {
    return absl::NotFoundError(absl::StrCat("there is no file ", where));
  }
  std::unique_ptr<git_tree_entry, git_internal::Git2Deleter<git_tree_entry, git_tree_entry_free>>
      entry(raw_entry);
  if (git_tree_entry_type(entry.get()) != GIT_OBJECT_BLOB) {
    return absl::NotFoundError(absl::StrCat(where, " is not a file"));
  }
  git_blob* raw_blob = nullptr;
  int rc = git_blob_lookup(&raw_blob, repo_.get(), git_tree_entry_id(entry.get()));
  if (rc != 0) return Git2Error(rc, absl::StrCat("cannot read ", where));
  std::unique_ptr<git_blob, git_internal::Git2Deleter<git_blob, git_blob_free>> blob(raw_blob);
  return std::string(static_cast<const char*>(git_blob_rawcontent(blob.get())),
                     static_cast<size_t>(git_blob_rawsize(blob.get())));
}

}  // namespace kbisect
