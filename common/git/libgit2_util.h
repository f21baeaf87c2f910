// Copyright 2026 The kbisect Authors.
//
// Internal helpers shared by the files of common/git: one-time libgit2 initialisation, RAII owners
// for libgit2 handles, and conversion of libgit2 error codes into absl::Status. Code outside
// common/git must not include this header; it uses git_repo.h, mirror.h and worktree.h.
#ifndef KBISECT_COMMON_GIT_LIBGIT2_UTIL_H_
#define KBISECT_COMMON_GIT_LIBGIT2_UTIL_H_

#include <git2.h>

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kbisect {
namespace git_internal {

// Initialises libgit2 exactly once per process (thread-safe). Every entry point of common/git
// calls this before its first libgit2 call. libgit2 is never shut down.
void EnsureLibgit2Initialized();

// A deleter that releases a libgit2 handle with its matching `*_free` function.
template <typename T, void (*FreeFn)(T*)>
struct Git2Deleter {
  void operator()(T* handle) const {
    if (handle != nullptr) FreeFn(handle);
  }
};

using RepositoryPtr =
    std::unique_ptr<git_repository, Git2Deleter<git_repository, git_repository_free>>;
using ObjectPtr = std::unique_ptr<git_object, Git2Deleter<git_object, git_object_free>>;
using CommitPtr = std::unique_ptr<git_commit, Git2Deleter<git_commit, git_commit_free>>;
using TreePtr = std::unique_ptr<git_tree, Git2Deleter<git_tree, git_tree_free>>;
using DiffPtr = std::unique_ptr<git_diff, Git2Deleter<git_diff, git_diff_free>>;
using PatchPtr = std::unique_ptr<git_patch, Git2Deleter<git_patch, git_patch_free>>;
using RevwalkPtr = std::unique_ptr<git_revwalk, Git2Deleter<git_revwalk, git_revwalk_free>>;
using RemotePtr = std::unique_ptr<git_remote, Git2Deleter<git_remote, git_remote_free>>;
using ReferencePtr = std::unique_ptr<git_reference, Git2Deleter<git_reference, git_reference_free>>;
using OdbPtr = std::unique_ptr<git_odb, Git2Deleter<git_odb, git_odb_free>>;
using StatusListPtr =
    std::unique_ptr<git_status_list, Git2Deleter<git_status_list, git_status_list_free>>;
using ConfigPtr = std::unique_ptr<git_config, Git2Deleter<git_config, git_config_free>>;

// Owns a git_buf and disposes of it on destruction.
class OwnedBuf {
 public:
  OwnedBuf() = default;
  ~OwnedBuf() { git_buf_dispose(&buf_); }
  OwnedBuf(const OwnedBuf&) = delete;
  OwnedBuf& operator=(const OwnedBuf&) = delete;

  // Returns the buffer for a libgit2 call to fill.
  git_buf* get() { return &buf_; }
  // Returns a copy of the buffer's contents.
  std::string str() const {
    return buf_.ptr == nullptr ? std::string() : std::string(buf_.ptr, buf_.size);
  }

 private:
  git_buf buf_ = GIT_BUF_INIT;
};

// Returns libgit2's message for the most recent error on this thread, or "unknown libgit2 error".
std::string LastErrorMessage();

// Converts a negative libgit2 return code into a Status whose message is "<what>: <libgit2
// message>". The code is chosen from the libgit2 error code and class (GIT_ENOTFOUND -> NotFound,
// GIT_EAUTH -> PermissionDenied, network errors -> Unavailable, ...). Must not be called with 0.
absl::Status Git2Error(int code, std::string_view what);

// Formats an object id as 40 lowercase hex digits.
std::string OidToString(const git_oid& oid);

// Parses a full 40-digit hex object id. Returns InvalidArgument for anything else.
absl::StatusOr<git_oid> ParseFullOid(std::string_view hex);

// Converts a std::string_view to an absl::string_view (bookworm's abseil does not alias the two).
inline absl::string_view ToAbsl(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}

// Returns `path` without trailing slashes (but keeps "/" itself).
std::string StripTrailingSlash(std::string path);

// Returns the repository at exactly `dir` if there is one (no upward search), else nullptr.
RepositoryPtr OpenExactly(const std::string& dir);

}  // namespace git_internal
}  // namespace kbisect

#endif  // KBISECT_COMMON_GIT_LIBGIT2_UTIL_H_
