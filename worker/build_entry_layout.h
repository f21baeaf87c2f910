// Copyright 2026 The kbisect Authors.
//
// The names inside a build-cache entry directory (build_cache.h's layout) that more than the
// cache reads: the build store (build_store.h) archives and unpacks exactly these members.
#ifndef KBISECT_WORKER_BUILD_ENTRY_LAYOUT_H_
#define KBISECT_WORKER_BUILD_ENTRY_LAYOUT_H_

namespace kbisect {

// The entry's checkout, built in place (a Worktree borrowing the host's mirror).
inline constexpr char kEntrySource[] = "src";
// The environment the entry's build installed into (build_layer.h).
inline constexpr char kEntryLayer[] = "layer";

}  // namespace kbisect

#endif  // KBISECT_WORKER_BUILD_ENTRY_LAYOUT_H_
