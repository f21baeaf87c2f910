// Copyright 2026 The kbisect Authors.
//
// `kbisect cache`: inspect and prune the result cache (coordinator/result_cache.h) that kbisect
// keeps in <cache dir>/results.sqlite:
//
//   kbisect cache stats [--cache-dir DIR]
//   kbisect cache prune --older-than AGE [--cache-dir DIR]
//
// The cache directory defaults to the one `kbisect run` uses (worker/worker_slot.h
// DefaultCacheDir: $KBISECT_CACHE_DIR, $XDG_CACHE_HOME/kbisect, ~/.cache/kbisect).
#ifndef KBISECT_CLI_CACHE_COMMAND_H_
#define KBISECT_CLI_CACHE_COMMAND_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace kbisect {

// Runs `kbisect cache` with argv starting at the subcommand name ("cache", "stats", ...).
// Prints to stdout what the cache holds (stats) or how many results it removed (prune); a
// missing cache file is reported as empty and not created. Returns 0 on success, 1 when the
// cache cannot be opened or read (the message says why and what to do), 2 on a usage error.
int CacheCommand(int argc, char** argv);

}  // namespace kbisect

#endif  // KBISECT_CLI_CACHE_COMMAND_H_
