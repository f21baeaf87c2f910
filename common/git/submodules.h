// Copyright 2026 The kbisect Authors.
//
// The submodules of a commit: which they are, where their objects come from, and their checkout.
//
// A commit's submodules are the entries of its .gitmodules whose path is a gitlink (a tree entry
// of mode 160000, which records the submodule's commit) in the commit's tree. A gitlink that
// .gitmodules does not name, or names without a URL, has nowhere to come from and stays an empty
// directory, as after a `git checkout` without `--recurse-submodules`.
//
// Each submodule's objects come from a bare mirror of its URL (mirror.h), kept beside the
// superproject's mirrors and named by MirrorKey, so the slots of a host share one mirror per
// submodule URL. A relative URL ("../dep.git") is resolved as `git submodule init` resolves it:
// against the URL of the superproject's "origin" remote, or the superproject itself when it has
// none; a nested submodule's against its parent submodule's resolved URL.
//
//   SubmoduleCheckout submodules(cache_dir + "/mirrors");
//   ASSIGN_OR_RETURN(auto tree, Worktree::OpenOrCreate(mirror_git_dir, cache + "/slots/0"));
//   RETURN_IF_ERROR(submodules.CheckOut(*tree, repository, sha));   // submodules included
#ifndef KBISECT_COMMON_GIT_SUBMODULES_H_
#define KBISECT_COMMON_GIT_SUBMODULES_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kbisect {

class Worktree;

// One submodule of a commit.
struct SubmoduleRef {
  std::string name;  // Its name in .gitmodules (`[submodule "NAME"]`).
  std::string path;  // Its path in the superproject, relative to the top, without a trailing '/'.
  std::string url;   // Its URL as .gitmodules writes it (maybe relative), or "" when none.
  std::string sha;   // The commit its gitlink records (40 hex digits).

  bool operator==(const SubmoduleRef& other) const {
    return name == other.name && path == other.path && url == other.url && sha == other.sha;
  }
};

// Returns the submodules of commit `sha` (a full id or any revision) of the repository at
// `repository_dir` (a bare mirror, a worktree or any repository, opened in place), sorted by
// path: the entries of the commit's .gitmodules whose path is a gitlink in the commit. Returns
// an empty list when the commit has no .gitmodules. Returns NotFound if the commit is not in the
// repository, InvalidArgument if its .gitmodules cannot be parsed, and FailedPrecondition if
// `repository_dir` is not a repository.
absl::StatusOr<std::vector<SubmoduleRef>> ListSubmodules(const std::string& repository_dir,
                                                         std::string_view sha);

// Resolves a submodule URL from .gitmodules against `base`, the URL or path of the repository
// whose .gitmodules names it (SubmoduleBaseUrl for a top-level superproject). A URL that starts
// with "./" or "../" is relative: each "../" drops one component of `base` (a trailing '/' of
// `base` ignored; for scp-like "host:path" the component after the ':'), "./" drops none, and
// what is left is joined with '/' (or ':' after an scp host). Any other URL is returned as is.
// Pure. Returns InvalidArgument when a relative URL climbs above the root of `base`.
absl::StatusOr<std::string> ResolveSubmoduleUrl(std::string_view base, std::string_view url);

// Returns the URL that relative submodule URLs of `repository` (a URL or a local path, as a job
// names it) are resolved against: for a local repository with a remote "origin", that remote's
// URL, as `git submodule init` in a clone does; otherwise `repository` itself.
std::string SubmoduleBaseUrl(const std::string& repository);

// True for an error of SubmoduleCheckout that the commit causes and any worker would meet alike:
// a submodule whose URL does not resolve or names no repository, or whose recorded commit its
// repository does not have even after a fetch. Other errors (a network failure, a full disk) are
// the worker's.
bool IsUnfetchableSubmodule(const absl::Status& status);

// Checks commits out together with their submodules, recursively, each submodule from a bare
// mirror under one directory. Thread-compatible; the mirrors may be shared by any number of
// objects and processes (mirror.h serialises their fetches).
class SubmoduleCheckout {
 public:
  // `mirrors_dir` holds the submodules' mirrors, one per resolved URL, named
  // MirrorKey(url) + ".git" (the superproject's mirrors may live there too).
  explicit SubmoduleCheckout(std::string mirrors_dir);

  // Checks commit `sha` of `repository` (the URL or path the superproject's mirror was made
  // from) out in `tree` (Worktree::Checkout), then each of the commit's submodules at its
  // recorded commit in a worktree of its own at its path, borrowing the objects of the
  // submodule's mirror (fetched when it lacks the commit), and their submodules in turn.
  // Submodule directories the commit no longer has as submodules are removed before the
  // checkout; a submodule's ignored files (its build outputs) stay, like the superproject's.
  //
  // Errors name the submodule's full path, its URL and its commit. IsUnfetchableSubmodule tells
  // the ones the commit causes (NotFound, InvalidArgument) from the worker's (the errors of
  // EnsureMirror and Worktree). Errors of the superproject's own checkout are Worktree's.
  absl::Status CheckOut(Worktree& tree, const std::string& repository, std::string_view sha) const;

  // A submodule checked out at another commit than the one its superproject records (a
  // dependency follow-up's probe): the repository (a URL or path, used as the resolved URL) and
  // the commit it is checked out at instead.
  struct Override {
    std::string repository;
    std::string sha;
  };
  // By the submodule's full path from the top of `tree` ("third_party/dep",
  // "third_party/dep/nested").
  using Overrides = std::map<std::string, Override>;

  // As CheckOut, but each submodule whose full path `overrides` names is checked out at that
  // commit of that repository instead of the recorded one (its own submodules as that commit
  // records them, unless `overrides` names them too). A path `overrides` names that is not a
  // submodule of the commits checked out is ignored.
  absl::Status CheckOut(Worktree& tree, const std::string& repository, std::string_view sha,
                        const Overrides& overrides) const;

 private:
  // CheckOut with the base URL of `tree`'s relative submodule URLs already known ("" to compute
  // it from `repository` when needed), `prefix` the path of `tree` in the top superproject ("" or
  // ending in '/'), `located` the words that name `tree` in its own errors ("" for the top), and
  // `depth` the nesting level, `overrides` those of CheckOut (may be null).
  absl::Status CheckOutAt(Worktree& tree, const std::string& repository, std::string base,
                          std::string_view sha, const std::string& prefix,
                          const std::string& located, int depth,
                          const Overrides* overrides) const;

  const std::string mirrors_dir_;
};

}  // namespace kbisect

#endif  // KBISECT_COMMON_GIT_SUBMODULES_H_
