// Copyright 2026 The kbisect Authors.
//
// The flags of what a host's builds share with other hosts: a compiler cache's remote storage
// (`--compiler-cache-remote URL`, `--compiler-cache-read-only`, compiler_cache.h) and the build
// store (`--build-store DIR`, build_store.h), registered the same way on `kbisect-worker` and
// `kbisect run`.
#ifndef KBISECT_WORKER_COMPILER_CACHE_FLAGS_H_
#define KBISECT_WORKER_COMPILER_CACHE_FLAGS_H_

#include <string>

#include "worker/compiler_cache.h"

// CLI11 is included only where flags are registered.
namespace CLI {
class App;
}  // namespace CLI

namespace kbisect {

// Registers --compiler-cache-remote (also read from KBISECT_COMPILER_CACHE_REMOTE, checked by
// CheckCompilerCacheRemoteUrl) and --compiler-cache-read-only on `app`, into `remote`.
void AddCompilerCacheRemoteFlags(CLI::App* app, CompilerCacheRemote* remote);

// Registers --build-store (also read from KBISECT_BUILD_STORE) on `app`, into `dir`.
void AddBuildStoreFlag(CLI::App* app, std::string* dir);

}  // namespace kbisect

#endif  // KBISECT_WORKER_COMPILER_CACHE_FLAGS_H_
