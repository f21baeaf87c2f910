// Copyright 2026 The kbisect Authors.
//
// The flags of a compiler cache's remote storage (`--compiler-cache-remote URL`,
// `--compiler-cache-read-only`, compiler_cache.h), registered the same way on `kbisect-worker`
// and `kbisect run`.
#ifndef KBISECT_WORKER_COMPILER_CACHE_FLAGS_H_
#define KBISECT_WORKER_COMPILER_CACHE_FLAGS_H_

#include "worker/compiler_cache.h"

// CLI11 is included only where flags are registered.
namespace CLI {
class App;
}  // namespace CLI

namespace kbisect {

// Registers --compiler-cache-remote (also read from KBISECT_COMPILER_CACHE_REMOTE, checked by
// CheckCompilerCacheRemoteUrl) and --compiler-cache-read-only on `app`, into `remote`.
void AddCompilerCacheRemoteFlags(CLI::App* app, CompilerCacheRemote* remote);

}  // namespace kbisect

#endif  // KBISECT_WORKER_COMPILER_CACHE_FLAGS_H_
