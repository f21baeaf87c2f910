// Copyright 2026 The kbisect Authors.
//
// What makes two builds the same, for the build cache (build_cache.h): the files built (the
// commit's tree id, so two commits with one tree share a build), the build command, and the
// job's own environment (`--env`) and isolation (`--isolation`). The slot's device variables and
// KBISECT_COMMIT / KBISECT_COMMIT_INDEX are not part of it: slots share builds, and a build must
// not depend on which slot or which job built it.
#ifndef KBISECT_WORKER_BUILD_KEY_H_
#define KBISECT_WORKER_BUILD_KEY_H_

#include <map>
#include <string>
#include <string_view>

namespace kbisect {

struct BuildKey {
  // The full id of the tree of the commit built.
  std::string tree;
  // The build command, as the job gives it (a shell command line).
  std::string command;
  // The job's environment variables (its `--env`), which the build sees.
  std::map<std::string, std::string> env;
  // Where the build installs (the job's `--isolation`, as v1::BuildIsolation's number): a build
  // made in a layer of its own and one made without are not interchangeable.
  int isolation = 0;

  // The key as text, the same for equal keys and different for different ones (fields are
  // length-prefixed, so no command or value can imitate another split). Stored in each cache
  // entry, so a digest collision is detected rather than served.
  std::string Text() const;

  // A file-name-safe digest of Text(): 32 lowercase hex digits (FNV-1a, 128 bits), the same in
  // every build and on every host.
  std::string Digest() const;
};

// A file-name-safe digest of `text`: 32 lowercase hex digits (FNV-1a, 128 bits), the same in every
// build and on every host.
std::string KeyDigest(std::string_view text);

}  // namespace kbisect

#endif  // KBISECT_WORKER_BUILD_KEY_H_
