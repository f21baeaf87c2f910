// Copyright 2026 The kbisect Authors.
//
// Code matchers: what the pattern detectors look for in the lines of a hunk. Two kinds:
//   - parameters (loop bounds, tile sizes, layout parameters, waves_per_eu, num_stages,
//     num_warps, num_buffers) read from a line, and the pairing of a removed line's parameter with
//     the added line that sets it again, which turns them into changes; dtype changes are paired
//     the same way by the shape of the line;
//   - operations (synchronization, memory ops, masking, prefetch) found on a line, and the
//     operations of one side of a hunk that have no counterpart of the same kind on the other.
// The detectors of pattern_table.h turn these into findings.
//
// Internal to kbisect_root_cause: callers use root_cause.h.
#ifndef KBISECT_COORDINATOR_ROOT_CAUSE_CODE_MATCHERS_H_
#define KBISECT_COORDINATOR_ROOT_CAUSE_CODE_MATCHERS_H_

#include <functional>
#include <string>
#include <vector>

#include "coordinator/root_cause/code_hunks.h"
#include "coordinator/root_cause/source_language.h"

namespace kbisect {
namespace root_cause_internal {

// ------------------------------------------------------------------------------------------------
// Parameters and their changes.
// ------------------------------------------------------------------------------------------------

// A parameter read from one line: `key` identifies it ("BLOCK_SIZE"), `value` is how it reads.
struct Param {
  std::string key;
  std::string value;
};

using Extractor = std::function<std::vector<Param>(const Line&)>;

// Pairs parameters of removed lines with the same parameters of added lines in one hunk, in order,
// and calls `changed` for each pair whose values differ (ignoring whitespace). Moved lines are
// identical on both sides and take no part.
void PairChanges(
    const Hunk& hunk, const Extractor& extract,
    const std::function<void(int added_line, const std::string& key, const std::string& before,
                             const std::string& after)>& changed);

// Returns the loop header of `line` as a parameter: a Python `for x in range(...)` (positional
// arguments only), a C `for (init; cond; step)` or a `while (var op bound)`, keyed by the loop
// variable. Empty when the line is no loop header.
std::vector<Param> LoopBounds(const Line& line);

// Returns true if loop bound `after` doubles something (`* 2`, `2 *`, `<< 1`) that `before` did
// not.
bool LooksDoubled(const std::string& before, const std::string& after);

// Returns the tile sizes set on `line`: BLOCK_* / TILE_* / block_size / kBlock* assignments,
// keywords and config-dict entries, #defines, the threads per block of a <<<...>>> launch and
// dim3 block or thread shapes.
std::vector<Param> TileSizes(const Line& line);

// Return the value set on `line` for waves_per_eu (also amdgpu_waves_per_eu(...) and the
// "amdgpu-waves-per-eu" attribute), num_stages, num_warps and num_buffers, keyed by that name.
std::vector<Param> WavesPerEu(const Line& line);
std::vector<Param> NumStages(const Line& line);
std::vector<Param> NumWarps(const Line& line);
std::vector<Param> NumBuffers(const Line& line);

// Returns the layout parameters set on `line` (size_per_thread, warps_per_cta, order, ... in
// either spelling, or the arguments of a *Layout(...) call). On a line that does not mention a
// layout, only the layout-specific keywords count (not order, vec, per_phase or max_phase).
std::vector<Param> LayoutParams(const Line& line);

// A floating-point type that got wider from a removed line to the added line replacing it.
struct DtypeChange {
  int line = 0;      // The added line's index in the hunk.
  std::string from;  // The type as written before ("fp16").
  std::string to;    // The type as written after ("fp32").
  int ratio = 1;     // How many times wider the new type is.
};

// Pairs each removed line that names a floating-point type with the first unused added line of
// the hunk of the same shape (equal once the type names are masked) or assigning the same
// variable, and returns the pairs in which some type got wider. Narrower types are not reported.
std::vector<DtypeChange> FindDtypeChanges(const Hunk& hunk);

// ------------------------------------------------------------------------------------------------
// Operations that appear on one side of a hunk only.
// ------------------------------------------------------------------------------------------------

// Returns the kinds of the operations of one category on a line of a file in the given language.
using OpFinder = std::function<std::vector<std::string>(const Line&, const LangInfo&)>;

// Return the operations on `line` of a category: barriers and other synchronization; loads,
// stores and atomics (in assembly, MLIR and LLVM IR also memory instructions); masking
// (tl.where, mask=, boundary checks, and in CUDA-like files `if (idx < n)`); prefetch and
// double-buffering (cp.async, pipeline commit/wait, ...).
std::vector<std::string> SyncOps(const Line& line, const LangInfo& lang);
std::vector<std::string> MemoryOps(const Line& line, const LangInfo& lang);
std::vector<std::string> MaskingOps(const Line& line, const LangInfo& lang);
std::vector<std::string> PrefetchOps(const Line& line, const LangInfo& lang);

// Reports operations of `find` that appear on added lines (`added_side`) or removed lines
// (otherwise) with no counterpart of the same kind on the other side of the hunk. A counterpart
// with the same assigned name is preferred, so that `x = tl.load(p)` -> `x = tl.load(p, mask=m)`
// is a modified load, not a new one. When `moves_into_loops` is set, a line that moved into a
// loop (its twin was not in one) is reported too.
// `report` gets the line's index in `hunk`, the operation's kind and whether the line moved.
// `files` is the whole analysed patch, where the twins of moved lines are.
void FindUnmatchedOps(
    const std::vector<File>& files, const File& file, const Hunk& hunk, const OpFinder& find,
    bool added_side, bool moves_into_loops,
    const std::function<void(int line, const std::string& kind, bool moved)>& report);

}  // namespace root_cause_internal
}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_ROOT_CAUSE_CODE_MATCHERS_H_
