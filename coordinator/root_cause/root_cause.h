// Copyright 2026 The kbisect Authors.
//
// Root-cause hints: the seed's table of common GPU-kernel regression patterns (section 4.2 of
// seeds/000_*), applied to the culprit's diff.
//
//   Changed loop bounds     range(N) -> range(N*2)            More iterations, doubled work
//   Added synchronization   s_barrier, tl.debug_barrier()     Extra sync stalls
//   Changed tile sizes      BLOCK_SIZE=64 -> BLOCK_SIZE=32    Worse occupancy or more iterations
//   Added memory ops        new tl.load / gl.load in a loop   More memory traffic
//   Changed dtype           fp16 -> fp32                      2x memory bandwidth, 2x registers
//   Removed prefetch        deleted double-buffer logic       Load latency exposed
//   Changed waves_per_eu    waves_per_eu=2 -> 1               Reduced occupancy
//   Added masking           new tl.where / boundary checks    Extra ALU + branch divergence
//   Refactored layout       changed BlockedLayout params      Bank conflicts / non-coalescing
//   Changed num_stages      num_stages=1 -> 2                 Triton pipelining change
//   Changed num_warps       num_warps=4 -> 8                  Occupancy / register change
//
// Only code is examined: comments, docstrings and documentation files (README, *.md, ...) are
// ignored, whitespace-only edits are not changes, and a line that was moved (removed in one place
// and added verbatim in another, e.g. by a rename or a refactor) is not "added" or "removed" --
// unless a load/store or barrier moved into a loop, which is reported. "Change" patterns pair a
// removed line with an added line of the same hunk that sets the same parameter to another value.
//
// Everything here is pure: no I/O, no git.
#ifndef KBISECT_COORDINATOR_ROOT_CAUSE_ROOT_CAUSE_H_
#define KBISECT_COORDINATOR_ROOT_CAUSE_ROOT_CAUSE_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// Pattern names as they appear in RootCauseHint.pattern.
inline constexpr char kPatternLoopBounds[] = "Changed loop bounds";
inline constexpr char kPatternSynchronization[] = "Added synchronization";
inline constexpr char kPatternTileSizes[] = "Changed tile sizes";
inline constexpr char kPatternMemoryOps[] = "Added memory ops";
inline constexpr char kPatternDtype[] = "Changed dtype";
inline constexpr char kPatternPrefetch[] = "Removed prefetch";
inline constexpr char kPatternWavesPerEu[] = "Changed waves_per_eu";
inline constexpr char kPatternMasking[] = "Added masking";
inline constexpr char kPatternLayout[] = "Refactored layout";
inline constexpr char kPatternNumStages[] = "Changed num_stages";
inline constexpr char kPatternNumWarps[] = "Changed num_warps";

// Parses `unified_patch` (the output of `git diff LAST_GOOD CULPRIT`) and returns at most
// `max_hints` hints, in patch order (file, then hunk, then line). Each hint names the pattern,
// the likely cause (the seed's text, followed by the concrete change in parentheses when there is
// one, e.g. "Worse occupancy or more iterations (BLOCK_SIZE: 64 -> 32)"), the file (new path),
// the hunk's "@@ ... @@" header line, and the matching diff line with its "+"/"-" marker. A
// pattern is reported at most once per hunk; further matches in the same hunk add to its
// parenthesised details. Returns an empty vector when no known pattern matched (or the patch is
// empty or unparsable).
std::vector<v1::RootCauseHint> FindRootCauseHints(std::string_view unified_patch,
                                                  size_t max_hints = 20);

// Returns a one- or two-sentence root-cause hypothesis for `hints`: "Likely cause: <pattern> in
// <file>: <likely cause>." for the strongest hint (loop bounds, tile sizes and dtype changes rank
// above added synchronization, memory ops, layout and masking), followed by "Other suspects: ..."
// naming up to three further hints. With no hints it returns
// "No known pattern matched; read the culprit's diff."
std::string SummarizeHypothesis(const std::vector<v1::RootCauseHint>& hints);

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_ROOT_CAUSE_ROOT_CAUSE_H_
