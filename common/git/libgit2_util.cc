// Copyright 2026 The kbisect Authors.

#include "common/git/libgit2_util.h"

#include <mutex>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace kbisect {
namespace git_internal {

void EnsureLibgit2Initialized() {
  static std::once_flag once;
  std::call_once(once, [] { git_libgit2_init(); });
}

std::string LastErrorMessage() {
  const git_error* error = git_error_last();
  if (error == nullptr || error->message == nullptr) return "unknown libgit2 error";
  return std::string(absl::StripTrailingAsciiWhitespace(error->message));
}

absl::Status Git2Error(int code, std::string_view what) {
  const git_error* error = git_error_last();
  const int klass = error != nullptr ? error->klass : GIT_ERROR_NONE;
  std::string message = absl::StrCat(ToAbsl(what), ": ", LastErrorMessage());
  switch (code) {
    case GIT_ENOTFOUND:
      return absl::NotFoundError(message);
    case GIT_EEXISTS:
      return absl::AlreadyExistsError(message);
    case GIT_EAMBIGUOUS:
    case GIT_EINVALIDSPEC:
    case GIT_EINVALID:
      return absl::InvalidArgumentError(message);
    case GIT_EAUTH:
      return absl::PermissionDeniedError(message);
    case GIT_ECERTIFICATE:
      return absl::UnavailableError(message);
    case GIT_ELOCKED:
      return absl::AbortedError(message);
    case GIT_EBAREREPO:
    case GIT_EUNBORNBRANCH:
    case GIT_EOWNER:
      return absl::FailedPreconditionError(message);
    default:
      break;
  }
  switch (klass) {
    case GIT_ERROR_NET:
    case GIT_ERROR_SSL:
    case GIT_ERROR_SSH:
    case GIT_ERROR_HTTP:
      return absl::UnavailableError(message);
    case GIT_ERROR_OS:
      return absl::InternalError(message);
    default:
      return absl::UnknownError(message);
  }
}

std::string OidToString(const git_oid& oid) {
  char hex[GIT_OID_HEXSZ + 1];
  git_oid_tostr(hex, sizeof(hex), &oid);
  return std::string(hex);
}

absl::StatusOr<git_oid> ParseFullOid(std::string_view hex) {
  git_oid oid;
  bool ok = hex.size() == GIT_OID_HEXSZ;
  for (char c : hex) ok = ok && absl::ascii_isxdigit(static_cast<unsigned char>(c));
  if (!ok || git_oid_fromstrn(&oid, hex.data(), hex.size()) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", ToAbsl(hex), "' is not a full 40-hex-digit object id"));
  }
  return oid;
}

RepositoryPtr OpenExactly(const std::string& dir) {
  git_repository* repo = nullptr;
  if (git_repository_open_ext(&repo, dir.c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr) != 0) {
    return nullptr;
  }
  return RepositoryPtr(repo);
}

std::string StripTrailingSlash(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

}  // namespace git_internal
}  // namespace kbisect
