// Copyright 2026 The kbisect Authors.
//
// Git's object hash of arbitrary bytes, for content digests that must be stable across machines
// and versions (the result cache's keys, common/spec/action_digest.h).
//
//   std::string id = GitBlobId("hello\n");  // ce013625030ba8dba906f756967f9e9ca394464a
#ifndef KBISECT_COMMON_GIT_OBJECT_HASH_H_
#define KBISECT_COMMON_GIT_OBJECT_HASH_H_

#include <string>
#include <string_view>

namespace kbisect {

// Returns the id git gives a blob holding `contents`, as `git hash-object --stdin` prints it:
// 40 lower-case hex digits of the SHA-1 (libgit2's collision-detecting SHA-1) of
// "blob <size>\0" followed by `contents`. Thread-safe; never fails.
std::string GitBlobId(std::string_view contents);

}  // namespace kbisect

#endif  // KBISECT_COMMON_GIT_OBJECT_HASH_H_
