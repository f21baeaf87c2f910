// Copyright 2026 The kbisect Authors.
//
// The libgit2-backed RepositoryView.
#include <algorithm>
#include <map>
#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/exec/exec.h"
#include "common/git/git_repo.h"
#include "common/git/mirror.h"
#include "common/git/submodules.h"
#include "common/status_macros.h"
#include "common/sync/mutex.h"
#include "coordinator/repository_view.h"

namespace kbisect {
namespace {

bool LooksLikeUrl(const std::string& repository) {
  return absl::StrContains(repository, "://") ||
         (absl::StrContains(repository, "@") && absl::StrContains(repository, ":"));
}

v1::CommitRef ToCommitRef(const CommitInfo& info, int index) {
  v1::CommitRef ref;
  ref.set_sha(info.sha);
  ref.set_short_sha(info.sha.substr(0, 7));
  ref.set_index(index);
  ref.set_subject(info.subject);
  ref.set_author(absl::StrCat(info.author_name, " <", info.author_email, ">"));
  ref.set_date(info.author_date);
  ref.set_body(info.body);
  ref.set_is_merge(info.parents.size() > 1);
  ref.set_tree_sha(info.tree_sha);
  return ref;
}

// A failed fetch of `repository` by the coordinator. The coordinator was reached, so a network
// failure of the fetch (UNAVAILABLE, which clients read as "cannot reach the coordinator", or
// the INTERNAL/UNKNOWN libgit2 gives a refused connection) becomes FAILED_PRECONDITION; codes
// that say something about the request (NOT_FOUND, PERMISSION_DENIED...) stay. The message says
// whose fetch failed and what to check.
absl::Status CannotFetch(const std::string& repository, const absl::Status& fetched) {
  absl::StatusCode code = fetched.code();
  switch (code) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnknown:
      code = absl::StatusCode::kFailedPrecondition;
      break;
    default:
      break;
  }
  return absl::Status(
      code, absl::StrCat("the coordinator cannot fetch ", repository, ": ", fetched.message(),
                         ". Check the URL, and that the coordinator's host can reach it and "
                         "has credentials for it."));
}

bool IsFullCommitId(const std::string& rev) {
  return rev.size() == 40 &&
         std::all_of(rev.begin(), rev.end(), [](char c) { return absl::ascii_isxdigit(c); });
}

class GitRepositoryView : public RepositoryView {
 public:
  explicit GitRepositoryView(std::string cache_dir) : cache_dir_(std::move(cache_dir)) {}

  absl::StatusOr<std::vector<v1::CommitRef>> ResolveRange(const v1::JobSpec& spec) override {
    const std::string bad_rev = spec.bad().empty() ? "HEAD" : spec.bad();
    // Full commit ids never move: a range between two of them (a follow-up job's) needs no
    // fetch when the mirror has both. Names (branches, tags, HEAD) are fetched fresh.
    if (IsFullCommitId(spec.good()) && IsFullCommitId(bad_rev)) {
      absl::StatusOr<std::vector<v1::CommitRef>> cached = Resolve(spec, bad_rev, false);
      if (cached.ok()) return cached;
    }
    return Resolve(spec, bad_rev, /*refresh=*/true);
  }

  absl::StatusOr<std::vector<v1::CommitRef>> Resolve(const v1::JobSpec& spec,
                                                     const std::string& bad_rev, bool refresh) {
    ASSIGN_OR_RETURN(GitRepo * repo, Open(spec.repository(), refresh));
    ASSIGN_OR_RETURN(std::string good, repo->ResolveCommit(spec.good()));
    ASSIGN_OR_RETURN(std::string bad, repo->ResolveCommit(bad_rev));
    ASSIGN_OR_RETURN(std::vector<std::string> shas,
                     repo->CommitRange(good, bad, spec.history() != v1::HISTORY_MODE_ALL_COMMITS));
    std::vector<v1::CommitRef> commits;
    commits.reserve(shas.size());
    const bool graph = spec.history() == v1::HISTORY_MODE_ALL_COMMITS;
    absl::flat_hash_map<std::string, int> positions;
    for (size_t i = 0; i < shas.size(); ++i) {
      ASSIGN_OR_RETURN(CommitInfo info, repo->GetCommit(shas[i]));
      commits.push_back(ToCommitRef(info, static_cast<int>(i)));
      if (!graph) continue;
      positions[shas[i]] = static_cast<int>(i);
      if (i == 0) continue;  // GOOD's parents are outside the range.
      for (const std::string& parent : info.parents) {
        auto it = positions.find(parent);
        if (it != positions.end()) commits.back().add_parent_indices(it->second);
      }
      // Parents outside the range are ancestors of GOOD, and GOOD stands for them: a commit of
      // a branch forked below GOOD (every parent outside) hangs from index 0, so that an empty
      // list keeps meaning "no graph recorded" (decision 192).
      if (commits.back().parent_indices().empty()) commits.back().add_parent_indices(0);
    }
    return commits;
  }

  absl::StatusOr<MergedBranchRange> MergedBranch(const std::string& repository,
                                                 const std::string& merge_sha) override {
    ASSIGN_OR_RETURN(GitRepo * repo, Open(repository, /*refresh=*/false));
    ASSIGN_OR_RETURN(CommitInfo info, repo->GetCommit(merge_sha));
    if (info.parents.size() < 2) {
      return absl::FailedPreconditionError(
          absl::StrCat(merge_sha, " is not a merge commit: it has no merged branch"));
    }
    MergedBranchRange range;
    range.tip = info.parents[1];
    ASSIGN_OR_RETURN(range.base, repo->MergeBase(info.parents[0], info.parents[1]));
    return range;
  }

  absl::StatusOr<std::vector<v1::FileChange>> DiffStat(const std::string& repository,
                                                       const std::string& from,
                                                       const std::string& to) override {
    ASSIGN_OR_RETURN(GitRepo * repo, Open(repository, /*refresh=*/false));
    ASSIGN_OR_RETURN(std::vector<FileChange> changes, repo->DiffStat(from, to));
    std::vector<v1::FileChange> out;
    for (const FileChange& change : changes) {
      v1::FileChange file;
      file.set_path(change.path);
      file.set_old_path(change.old_path);
      file.set_status(std::string(1, change.status));
      file.set_additions(change.additions);
      file.set_deletions(change.deletions);
      file.set_binary(change.binary);
      out.push_back(std::move(file));
    }
    return out;
  }

  absl::StatusOr<std::string> DiffPatch(const std::string& repository, const std::string& from,
                                        const std::string& to) override {
    ASSIGN_OR_RETURN(GitRepo * repo, Open(repository, /*refresh=*/false));
    return repo->DiffPatch(from, to);
  }

  absl::StatusOr<std::string> ReadFile(const std::string& repository, const std::string& commit,
                                       const std::string& path) override {
    ASSIGN_OR_RETURN(GitRepo * repo, Open(repository, /*refresh=*/false));
    return repo->ReadFile(commit, path);
  }

  absl::StatusOr<ChangeCommit> MakeChange(const std::string& repository, const std::string& base,
                                          const ChangeSpec& change) override {
    if (LooksLikeUrl(repository)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the job's repository is a URL (", repository,
          "), where the coordinator cannot push the revert's commit; bisect a local clone the "
          "workers reach, or measure the revert with `kbisect try --revert`"));
    }
    std::unique_ptr<CommandRunner> runner = NewSubprocessRunner();
    return MakeChangeCommit(*runner, repository, base, change);
  }

  absl::StatusOr<std::vector<v1::SubmoduleBump>> SubmoduleBumps(const std::string& repository,
                                                                const std::string& from,
                                                                const std::string& to) override {
    ASSIGN_OR_RETURN(GitRepo * repo, Open(repository, /*refresh=*/false));
    ASSIGN_OR_RETURN(std::vector<SubmoduleRef> before, ListSubmodules(repo->git_dir(), from));
    ASSIGN_OR_RETURN(std::vector<SubmoduleRef> after, ListSubmodules(repo->git_dir(), to));
    std::map<std::string, std::pair<const SubmoduleRef*, const SubmoduleRef*>> by_path;
    for (const SubmoduleRef& ref : before) by_path[ref.path].first = &ref;
    for (const SubmoduleRef& ref : after) by_path[ref.path].second = &ref;
    std::vector<v1::SubmoduleBump> bumps;
    std::string base;  // Computed once, when a relative URL needs it.
    for (const auto& [path, pair] : by_path) {
      const auto& [old_ref, new_ref] = pair;
      if (old_ref != nullptr && new_ref != nullptr && old_ref->sha == new_ref->sha) continue;
      v1::SubmoduleBump bump;
      bump.set_path(path);
      if (old_ref != nullptr) bump.set_old_sha(old_ref->sha);
      if (new_ref != nullptr) bump.set_new_sha(new_ref->sha);
      const std::string& raw_url = new_ref != nullptr ? new_ref->url : old_ref->url;
      if (raw_url.empty()) {
        bump.set_error("its .gitmodules names no URL");
        bumps.push_back(std::move(bump));
        continue;
      }
      if (base.empty()) base = SubmoduleBaseUrl(repository);
      absl::StatusOr<std::string> url = ResolveSubmoduleUrl(base, raw_url);
      if (!url.ok()) {
        bump.set_url(raw_url);
        bump.set_error(std::string(url.status().message()));
      } else {
        bump.set_url(*url);
        if (old_ref != nullptr && new_ref != nullptr) {
          if (absl::Status read = ReadDependencyRange(*url, &bump); !read.ok()) {
            bump.clear_commits();
            bump.set_commit_count(0);
            bump.set_error(std::string(read.message()));
          }
        }
      }
      bumps.push_back(std::move(bump));
    }
    return bumps;
  }

 private:
  // The first and last kBumpEnds commits of a bump's range are listed.
  static constexpr int kBumpEnds = 3;

  // Fills `bump`'s commit count and commits from the dependency at `url`, fetched again when it
  // lacks either recorded commit.
  absl::Status ReadDependencyRange(const std::string& url, v1::SubmoduleBump* bump) {
    ASSIGN_OR_RETURN(GitRepo * dep, Open(url, /*refresh=*/false));
    if (!dep->GetCommit(bump->old_sha()).ok() || !dep->GetCommit(bump->new_sha()).ok()) {
      ASSIGN_OR_RETURN(dep, Open(url, /*refresh=*/true));
    }
    absl::StatusOr<std::vector<std::string>> range =
        dep->CommitRange(bump->old_sha(), bump->new_sha(), /*first_parent=*/false);
    if (!range.ok() && absl::IsFailedPrecondition(range.status())) {
      absl::StatusOr<std::vector<std::string>> back =
          dep->CommitRange(bump->new_sha(), bump->old_sha(), /*first_parent=*/false);
      if (back.ok()) {
        bump->set_backwards(true);
        range = std::move(back);
      } else if (absl::IsFailedPrecondition(back.status())) {
        return absl::FailedPreconditionError(absl::StrCat("neither ", bump->old_sha().substr(0, 7),
                                                          " nor ", bump->new_sha().substr(0, 7),
                                                          " is an ancestor of the other in ", url));
      }
    }
    if (!range.ok()) return range.status();
    // The range is [from, c1, ..., to]: its commits are all but the first.
    const int count = static_cast<int>(range->size()) - 1;
    bump->set_commit_count(count);
    for (int i = 1; i <= count; ++i) {
      if (count > 2 * kBumpEnds && i > kBumpEnds && i <= count - kBumpEnds) continue;
      ASSIGN_OR_RETURN(CommitInfo info, dep->GetCommit((*range)[i]));
      v1::CommitRef* commit = bump->add_commits();
      *commit = ToCommitRef(info, i);
      commit->clear_body();
    }
    return absl::OkStatus();
  }

  // Opens (and caches) the repository: local paths in place, URLs through a mirror that is
  // fetched when `refresh` is set.
  absl::StatusOr<GitRepo*> Open(const std::string& repository, bool refresh) {
    kbisect::MutexLock lock(&mu_);
    auto it = repos_.find(repository);
    if (it != repos_.end() && !(refresh && LooksLikeUrl(repository))) return it->second.get();
    std::string path = repository;
    if (LooksLikeUrl(repository)) {
      const std::string mirror =
          absl::StrCat(cache_dir_, "/coordinator-mirrors/", MirrorKey(repository), ".git");
      if (absl::Status fetched = FetchIntoMirror(repository, mirror); !fetched.ok()) {
        return CannotFetch(repository, fetched);
      }
      path = mirror;
    }
    ASSIGN_OR_RETURN(std::unique_ptr<GitRepo> repo, GitRepo::Open(path));
    GitRepo* raw = repo.get();
    repos_[repository] = std::move(repo);
    return raw;
  }

  const std::string cache_dir_;
  kbisect::Mutex mu_;
  std::map<std::string, std::unique_ptr<GitRepo>> repos_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<RepositoryView> NewGitRepositoryView(std::string cache_dir) {
  return std::make_unique<GitRepositoryView>(std::move(cache_dir));
}

}  // namespace kbisect
