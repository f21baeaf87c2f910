// Copyright 2026 The kbisect Authors.
//
// Moving a configured CMake build tree to another directory. CMake writes absolute paths into
// every file of a build tree (CMakeCache.txt, the generated Makefiles or build.ninja, the
// dependency files), so a build-cache entry copied from another one names the entry it came from.
// Built as it is, it would read and write there. Relocating rewrites those paths to the new
// entry and keeps each file's modification time, so make or ninja then rebuild only what the
// checkout changed, as `git bisect` in one directory does. Without it a copied tree has to be
// configured and built again (through the compiler cache).
#ifndef KBISECT_WORKER_CMAKE_RELOCATION_H_
#define KBISECT_WORKER_CMAKE_RELOCATION_H_

#include <filesystem>
#include <string>

namespace kbisect {

// What RelocateCMakeTrees did.
struct CMakeRelocation {
  int relocated = 0;  // Build trees whose paths now name their new directory.
  int removed = 0;    // Stale build trees removed (configured elsewhere, not relocatable).
};

// For every CMake build tree under `dir` (a CMakeCache.txt up to three levels down, not inside
// .git), configured in another directory: when that directory starts with `from_prefix`, the
// tree's build-system files (CMakeCache.txt, *.cmake, Makefiles, *.make, *.d, *.ninja, the
// ninja logs, *.txt, *.json, *.rsp, *.internal, *.includecache) have `from_prefix` replaced by
// `to_prefix`, their modification times kept. Both prefixes are directories ending in '/'. Binary
// files (ninja's deps log) are rewritten only when both prefixes have the same length, else the
// deps log is deleted (ninja then rebuilds what it covered). A tree configured elsewhere, or one
// where a build-system file still names `from_prefix` afterwards, is removed as stale: its sources
// are configured and built again. An in-source tree (the tree is `dir` itself) loses only CMake's
// own files then.
CMakeRelocation RelocateCMakeTrees(const std::filesystem::path& dir, const std::string& from_prefix,
                                   const std::string& to_prefix);

}  // namespace kbisect

#endif  // KBISECT_WORKER_CMAKE_RELOCATION_H_
