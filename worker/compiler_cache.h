// Copyright 2026 The kbisect Authors.
//
// The compiler cache a host's builds share (ccache). A probe's build starts from another
// commit's build or from a fresh checkout; either way most translation units are ones some
// earlier build already compiled, in another cache entry's directory. ccache serves them when
// its hashes do not depend on where the entry lives: CCACHE_BASEDIR is the entry's checkout
// (absolute paths under it are rewritten as relative ones) and CCACHE_NOHASHDIR leaves the
// working directory out of the hash (the price: debug information may name another entry's
// directory as the compilation directory).
//
// Layout under <cache_dir>/compiler-cache/:
//   bin/    symlinks named after the compilers found on the build's PATH (cc, gcc, c++, g++,
//           clang, clang++, nvcc) pointing at ccache: put first on PATH, they make every
//           `make`, CMake or setuptools compile go through it (ccache finds the real compiler
//           further along PATH, skipping itself)
//   store/  ccache's own cache (CCACHE_DIR), bounded by its max_size (5 GiB unless the
//           operator set another in store/ccache.conf)
//
//   std::optional<CompilerCache> ccache = CompilerCache::Find(cache_dir, process_env);
//   if (ccache) for (auto& [k, v] : ccache->Variables(checkout, build_env)) build_env[k] = v;
#ifndef KBISECT_WORKER_COMPILER_CACHE_H_
#define KBISECT_WORKER_COMPILER_CACHE_H_

#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "common/exec/exec.h"

namespace kbisect {

// What a compiler cache holds and how often it served a compile.
struct CompilerCacheStats {
  int64_t hits = 0;    // compiles served from the cache (direct and preprocessed)
  int64_t misses = 0;  // compiles that ran the compiler and were stored
  int64_t size_bytes = 0;
  int64_t files = 0;

  // hits / (hits + misses), 0 when nothing was compiled.
  double HitRate() const;
};

class CompilerCache {
 public:
  // The compiler cache under `cache_dir`, when ccache is on the PATH of `env` (the environment
  // builds inherit): its compiler symlinks are made (or refreshed) for the compilers found on
  // that PATH. Nullopt when ccache is not installed, or the directory cannot be written (then
  // builds run without it).
  static std::optional<CompilerCache> Find(const std::string& cache_dir,
                                           const std::map<std::string, std::string>& env);

  // The variables a build in checkout `checkout_dir` runs with: PATH with the symlinks first
  // (after `build_env`'s own PATH, or the inherited one), CCACHE_DIR (unless `build_env` names
  // one), CCACHE_BASEDIR, CCACHE_NOHASHDIR and the sloppiness that lets files just checked out
  // be hashed directly.
  std::map<std::string, std::string> Variables(
      const std::string& checkout_dir, const std::map<std::string, std::string>& build_env) const;

  // The cache's directory (CCACHE_DIR).
  const std::string& store() const { return store_; }
  const std::string& ccache() const { return ccache_; }

  // What the store under `cache_dir` holds, read with `ccache --print-stats` through `runner`.
  // NotFound when there is no store (no build used one) or ccache is not installed.
  static absl::StatusOr<CompilerCacheStats> Stats(const std::string& cache_dir,
                                                  CommandRunner* runner);

 private:
  CompilerCache(std::string ccache, std::string bin, std::string store)
      : ccache_(std::move(ccache)), bin_(std::move(bin)), store_(std::move(store)) {}

  std::string ccache_;  // the ccache binary
  std::string bin_;     // the symlinks
  std::string store_;   // CCACHE_DIR
};

// Parses `ccache --print-stats` output (tab-separated "name\tvalue" lines).
CompilerCacheStats ParseCompilerCacheStats(const std::string& print_stats);

}  // namespace kbisect

#endif  // KBISECT_WORKER_COMPILER_CACHE_H_
