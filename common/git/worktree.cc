// Copyright 2026 The kbisect Authors.

#include "common/git/worktree.h"

#include <git2.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <system_error>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/git/file_lock.h"
#include "common/git/libgit2_util.h"
#include "common/status_macros.h"

namespace kbisect {
namespace {

namespace fs = std::filesystem;

using git_internal::ConfigPtr;
using git_internal::Git2Error;
using git_internal::ObjectPtr;
using git_internal::OpenExactly;
using git_internal::OwnedBuf;
using git_internal::RepositoryPtr;
using git_internal::StatusListPtr;

// Returns the contents of `path`, or "" if it cannot be read.
std::string ReadSmallFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

// Writes `contents` to `path` atomically (write to a sibling, then rename).
absl::Status WriteFileAtomically(const fs::path& path, const std::string& contents) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << contents;
    if (!out.good()) {
      return absl::InternalError(absl::StrCat("cannot write '", tmp.string(), "'"));
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    return absl::InternalError(absl::StrCat("cannot write '", path.string(), "': ", ec.message()));
  }
  return absl::OkStatus();
}

// Deletes the untracked, not ignored files under `root` (the working tree of `repo`), then the
// directories that this leaves empty. Ignored files stay, even inside untracked directories.
// Checkout notification: a file about to be rewritten is unlinked first, so that libgit2 writes
// a new inode instead of truncating the old one in place. Truncating a file with data and
// rewriting it makes ext4 (auto_da_alloc, on by default) start writeback of every such file when
// it is closed: a 333-file jump took 100-145 ms, 43 ms with the unlink. A new inode also keeps
// the rewrite from reaching other hard links to the old file (ccache, cp -al). A path that is a
// directory is left alone (unlink fails) and libgit2 handles the type change as before.
int UnlinkBeforeUpdate(git_checkout_notify_t why, const char* path, const git_diff_file*,
                       const git_diff_file*, const git_diff_file*, void* payload) {
  if (why == GIT_CHECKOUT_NOTIFY_UPDATED && path != nullptr) {
    const std::string& root = *static_cast<const std::string*>(payload);
    (void)unlink((root + "/" + path).c_str());
  }
  return 0;
}

absl::Status RemoveUntracked(git_repository* repo, const std::string& root) {
  git_status_options options = GIT_STATUS_OPTIONS_INIT;
  options.show = GIT_STATUS_SHOW_WORKDIR_ONLY;
  // A submodule's own untracked files are its checkout's business (submodules.h): looking into
  // it here would only cost a status of the whole submodule.
  options.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS |
                  GIT_STATUS_OPT_EXCLUDE_SUBMODULES;
  git_status_list* raw = nullptr;
  int rc = git_status_list_new(&raw, repo, &options);
  if (rc != 0) return Git2Error(rc, absl::StrCat("cannot list untracked files in '", root, "'"));
  StatusListPtr list(raw);
  std::set<fs::path> parents;
  const size_t count = git_status_list_entrycount(list.get());
  for (size_t i = 0; i < count; ++i) {
    const git_status_entry* entry = git_status_byindex(list.get(), i);
    if (entry == nullptr || (entry->status & GIT_STATUS_WT_NEW) == 0 ||
        entry->index_to_workdir == nullptr) {
      continue;
    }
    const fs::path path = fs::path(root) / entry->index_to_workdir->new_file.path;
    std::error_code ec;
    fs::remove_all(path, ec);  // A directory only for a nested repository.
    if (ec) {
      return absl::InternalError(
          absl::StrCat("cannot remove untracked '", path.string(), "': ", ec.message()));
    }
    parents.insert(path.lexically_normal().parent_path());
  }
  // Deepest first, so that a directory's emptied subdirectories go before it.
  const fs::path top = fs::path(root).lexically_normal();
  for (auto it = parents.rbegin(); it != parents.rend(); ++it) {
    for (fs::path dir = *it; dir != top && dir.has_relative_path() && dir != dir.parent_path();
         dir = dir.parent_path()) {
      std::error_code ec;
      if (!fs::is_empty(dir, ec) || ec || !fs::remove(dir, ec)) break;
    }
  }
  return absl::OkStatus();
}

// True when `repo`'s HEAD is unborn and its working tree `root` holds nothing but `.git`: a
// first checkout there writes every file the tree ends up with.
bool EmptyUnbornWorktree(git_repository* repo, const std::string& root) {
  if (git_repository_head_unborn(repo) != 1) return false;
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename() != ".git") return false;
  }
  return !ec;
}

}  // namespace

void Worktree::RepositoryDeleter::operator()(git_repository* repo) const {
  git_repository_free(repo);
}

Worktree::Worktree(std::string path, std::string mirror_dir, git_repository* repo,
                   std::unique_ptr<FileLock> slot_lock)
    : path_(std::move(path)),
      mirror_dir_(std::move(mirror_dir)),
      repo_(repo),
      slot_lock_(std::move(slot_lock)) {}

Worktree::~Worktree() = default;

absl::StatusOr<std::unique_ptr<Worktree>> Worktree::OpenOrCreate(const std::string& mirror_dir,
                                                                 const std::string& dir) {
  git_internal::EnsureLibgit2Initialized();
  std::error_code ec;
  const std::string mirror =
      git_internal::StripTrailingSlash(fs::absolute(mirror_dir).lexically_normal().string());
  RepositoryPtr mirror_repo = OpenExactly(mirror);
  if (mirror_repo == nullptr || !git_repository_is_bare(mirror_repo.get())) {
    return absl::FailedPreconditionError(absl::StrCat(
        "'", mirror, "' is not a bare mirror repository; create it with EnsureMirror"));
  }
  OwnedBuf objects_buf;
  int rc =
      git_repository_item_path(objects_buf.get(), mirror_repo.get(), GIT_REPOSITORY_ITEM_OBJECTS);
  if (rc != 0) return Git2Error(rc, absl::StrCat("cannot locate the objects of '", mirror, "'"));
  mirror_repo.reset();
  const std::string mirror_objects = git_internal::StripTrailingSlash(objects_buf.str());

  const std::string path =
      git_internal::StripTrailingSlash(fs::absolute(dir).lexically_normal().string());
  fs::create_directories(path, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create '", path, "': ", ec.message()));

  RepositoryPtr repo = OpenExactly(path);
  if (repo != nullptr && git_repository_is_bare(repo.get())) {
    return absl::FailedPreconditionError(
        absl::StrCat("'", path, "' is a bare repository, not a worktree; pick another directory"));
  }
  if (repo == nullptr) {
    git_repository* raw = nullptr;
    rc = git_repository_init(&raw, path.c_str(), /*is_bare=*/0);
    if (rc != 0) return Git2Error(rc, absl::StrCat("cannot create a worktree at '", path, "'"));
    repo.reset(raw);
    git_config* raw_config = nullptr;
    rc = git_repository_config(&raw_config, repo.get());
    if (rc != 0) return Git2Error(rc, "cannot open the worktree's config");
    ConfigPtr config(raw_config);
    // The objects live in the mirror; a gc here must never try to repack or prune them.
    rc = git_config_set_int32(config.get(), "gc.auto", 0);
    if (rc != 0) return Git2Error(rc, "cannot write the worktree's config");
  }
  // One user at a time. Holding the slot lock also means git lock files in the worktree (an
  // index.lock from a worker killed mid-checkout) are stale: they would fail every checkout.
  const std::string git_dir = git_internal::StripTrailingSlash(git_repository_path(repo.get()));
  ASSIGN_OR_RETURN(std::unique_ptr<FileLock> slot_lock,
                   FileLock::TryAcquire(git_dir + "/kbisect-slot",
                                        "another kbisect worker using this slot: give each "
                                        "worker its own --cache-dir or slot"));
  if (RemoveStaleGitLocks(git_dir) > 0) {
    repo.reset();  // Reopen without state read next to the stale locks.
    repo = OpenExactly(path);
    if (repo == nullptr) return Git2Error(-1, absl::StrCat("cannot reopen worktree '", path, "'"));
  }
  const fs::path alternates =
      fs::path(git_repository_path(repo.get())) / "objects" / "info" / "alternates";
  const std::string wanted = mirror_objects + "\n";
  if (ReadSmallFile(alternates) != wanted) {
    RETURN_IF_ERROR(WriteFileAtomically(alternates, wanted));
    repo.reset();  // Reopen so that the object database reads the new alternates.
    repo = OpenExactly(path);
    if (repo == nullptr) return Git2Error(-1, absl::StrCat("cannot reopen worktree '", path, "'"));
  }
  return std::unique_ptr<Worktree>(
      new Worktree(path, mirror, repo.release(), std::move(slot_lock)));
}

absl::Status Worktree::Checkout(std::string_view sha_view) {
  const absl::string_view sha = git_internal::ToAbsl(sha_view);
  bool hex = sha.size() >= 4 && sha.size() <= GIT_OID_HEXSZ;
  for (char c : sha) hex = hex && absl::ascii_isxdigit(static_cast<unsigned char>(c));
  if (!hex) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", sha, "' is not a commit id; Worktree::Checkout takes 4 to 40 hex digits"));
  }
  git_oid oid;
  int rc = git_oid_fromstrn(&oid, sha.data(), sha.size());
  if (rc != 0) return Git2Error(rc, absl::StrCat("bad commit id '", sha, "'"));
  git_object* raw = nullptr;
  rc = git_object_lookup_prefix(&raw, repo_.get(), &oid, sha.size(), GIT_OBJECT_COMMIT);
  ObjectPtr commit(raw);
  if (rc == GIT_ENOTFOUND) {
    return absl::NotFoundError(absl::StrCat("commit ", sha, " is not in the mirror '", mirror_dir_,
                                            "'; fetch it (EnsureCommitInMirror) and retry"));
  }
  if (rc != 0) return Git2Error(rc, absl::StrCat("cannot look up commit ", sha));

  // libgit2's GIT_CHECKOUT_REMOVE_UNTRACKED would delete an untracked directory together with the
  // ignored files inside it, so untracked files are removed afterwards, one by one, like
  // `git clean -fd` does. That also judges ignores by the .gitignore files of the new commit.
  // A first checkout into an empty directory (every worker's first probe) has no file to unlink
  // and leaves nothing untracked: it skips both, and the status that finds the untracked files,
  // which hashed every file it had just written (their times equal the index's).
  const bool first = EmptyUnbornWorktree(repo_.get(), path_);
  git_checkout_options options = GIT_CHECKOUT_OPTIONS_INIT;
  options.checkout_strategy = GIT_CHECKOUT_FORCE;
  std::string root = path_;  // The callback's payload is not const.
  if (!first) {
    options.notify_flags = GIT_CHECKOUT_NOTIFY_UPDATED;
    options.notify_cb = UnlinkBeforeUpdate;
    options.notify_payload = &root;
  }
  rc = git_checkout_tree(repo_.get(), commit.get(), &options);
  if (rc != 0) {
    return Git2Error(rc, absl::StrCat("cannot check out ", sha, " in '", path_, "'"));
  }
  rc = git_repository_set_head_detached(repo_.get(), git_object_id(commit.get()));
  if (rc != 0) return Git2Error(rc, absl::StrCat("cannot move HEAD of '", path_, "'"));
  if (first || keep_untracked_) return absl::OkStatus();
  return RemoveUntracked(repo_.get(), path_);
}

absl::Status Worktree::SetExcludes(const std::vector<std::string>& patterns) {
  std::string contents = "# Written by kbisect: untracked paths that Checkout keeps.\n";
  for (const std::string& pattern : patterns) absl::StrAppend(&contents, pattern, "\n");
  return WriteFileAtomically(fs::path(git_repository_path(repo_.get())) / "info" / "exclude",
                             contents);
}

std::string Worktree::path() const { return path_; }

std::string Worktree::head() const {
  git_oid oid;
  if (git_reference_name_to_id(&oid, repo_.get(), "HEAD") != 0) return "";
  return git_internal::OidToString(oid);
}

}  // namespace kbisect
