// Copyright 2026 The kbisect Authors.
#include "common/git/object_hash.h"

#include <git2.h>

#include <cstdlib>

#include "common/git/libgit2_util.h"

namespace kbisect {

std::string GitBlobId(std::string_view contents) {
  git_internal::EnsureLibgit2Initialized();
  git_oid oid;
  // Hashing a buffer only fails when libgit2 cannot allocate; there is nothing to fall back to.
  if (git_odb_hash(&oid, contents.data(), contents.size(), GIT_OBJECT_BLOB) != 0) std::abort();
  return git_internal::OidToString(oid);
}

}  // namespace kbisect
