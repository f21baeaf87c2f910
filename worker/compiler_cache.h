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
//
// A cluster's workers also share a remote storage (`--compiler-cache-remote redis://HOST:PORT`,
// ccache's remote_storage, issue 52): a translation unit one node compiled is a hit on every
// other. ccache reads the local store first, then the remote, and writes both (the remote not
// when read-only). A remote that cannot be reached costs a counted error per compile, never a
// failed build.
#ifndef KBISECT_WORKER_COMPILER_CACHE_H_
#define KBISECT_WORKER_COMPILER_CACHE_H_

#include <map>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/exec/exec.h"

namespace kbisect {

// A remote storage the compiler caches of a cluster share (`--compiler-cache-remote`).
struct CompilerCacheRemote {
  // redis://HOST[:PORT], http://HOST[:PORT]/PATH or file:///DIR (shared storage); empty: none.
  std::string url;
  // Read from it, never write to it (`--compiler-cache-read-only`): for workers whose builds
  // should not fill the shared cache (another compiler, a debug build).
  bool read_only = false;

  bool enabled() const { return !url.empty(); }
  // ccache's remote_storage value: the URL with its attributes ("redis://h:6379|read-only=true").
  std::string StorageValue() const;
};

// Checks a --compiler-cache-remote URL: one of the schemes above, with a host for redis and
// http. InvalidArgument saying what is accepted.
absl::Status CheckCompilerCacheRemoteUrl(const std::string& url);

// Whether the remote answers now: a TCP connection to a redis or http remote's host and port
// (6379 and 80 by default) within `timeout`, a file remote's directory exists. Unavailable
// naming the address and the reason otherwise. Builds use it anyway (ccache falls back to the
// local store); this is for the warning.
absl::Status ReachCompilerCacheRemote(const CompilerCacheRemote& remote, absl::Duration timeout);

// The warning a worker or `kbisect run` logs when `remote` cannot be reached within a second
// (ReachCompilerCacheRemote), saying that builds go on with the local store; nullopt when it
// answers or there is none.
std::optional<std::string> CompilerCacheRemoteWarning(const CompilerCacheRemote& remote);

// What a compiler cache holds and how often it served a compile.
struct CompilerCacheStats {
  int64_t hits = 0;    // compiles served from the cache (direct and preprocessed)
  int64_t misses = 0;  // compiles that ran the compiler and were stored
  int64_t local_hits = 0;     // hits served by the local store
  int64_t remote_hits = 0;    // hits served by the remote storage
  int64_t remote_errors = 0;  // remote reads or writes that failed or timed out
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
                                           const std::map<std::string, std::string>& env,
                                           CompilerCacheRemote remote = {});

  // The variables a build in checkout `checkout_dir` runs with: PATH with the symlinks first
  // (after `build_env`'s own PATH, or the inherited one), CCACHE_DIR (unless `build_env` names
  // one), CCACHE_BASEDIR, CCACHE_NOHASHDIR and the sloppiness that lets files just checked out
  // be hashed directly, and CCACHE_REMOTE_STORAGE with a remote (unless `build_env` names one).
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
  CompilerCache(std::string ccache, std::string bin, std::string store, CompilerCacheRemote remote)
      : ccache_(std::move(ccache)),
        bin_(std::move(bin)),
        store_(std::move(store)),
        remote_(std::move(remote)) {}

  std::string ccache_;  // the ccache binary
  std::string bin_;     // the symlinks
  std::string store_;   // CCACHE_DIR
  CompilerCacheRemote remote_;
};

// Parses `ccache --print-stats` output (tab-separated "name\tvalue" lines).
CompilerCacheStats ParseCompilerCacheStats(const std::string& print_stats);

}  // namespace kbisect

#endif  // KBISECT_WORKER_COMPILER_CACHE_H_
