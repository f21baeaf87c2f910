// Copyright 2026 The kbisect Authors.
#include "coordinator/root_cause/pattern_table.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "coordinator/root_cause/code_matchers.h"
#include "coordinator/root_cause/root_cause.h"

namespace kbisect {
namespace root_cause_internal {
namespace {

constexpr char kWeakMemoryCause[] =
    "Possibly more memory traffic, though not inside a loop in this hunk";

std::string ChangeDetail(const std::string& key, const std::string& before,
                         const std::string& after) {
  return absl::StrCat(key, ": ", before, " -> ", after);
}

// A parameter of `Extract` set to another value: "key: before -> after".
template <std::vector<Param> (*Extract)(const Line&)>
std::vector<Finding> DetectParamChange(const std::vector<File>&, const File&, const Hunk& hunk) {
  std::vector<Finding> found;
  PairChanges(
      hunk, Extract,
      [&](int line, const std::string& key, const std::string& before, const std::string& after) {
        found.push_back({line, 1, ChangeDetail(key, before, after), ""});
      });
  return found;
}

// Operations of `find` on the added (`added_side`) or removed lines of `hunk` with no counterpart
// on the other side, moved lines left out: "<verb> <op>".
std::vector<Finding> OneSidedOps(const std::vector<File>& files, const File& file, const Hunk& hunk,
                                 const OpFinder& find, bool added_side, const char* verb) {
  std::vector<Finding> found;
  FindUnmatchedOps(files, file, hunk, find, added_side, /*moves_into_loops=*/false,
                   [&](int line, const std::string& kind, bool) {
                     found.push_back({line, 1, absl::StrCat(verb, " ", kind), ""});
                   });
  return found;
}

std::vector<Finding> DetectLoopBounds(const std::vector<File>&, const File&, const Hunk& hunk) {
  std::vector<Finding> found;
  PairChanges(
      hunk, LoopBounds,
      [&](int line, const std::string&, const std::string& before, const std::string& after) {
        found.push_back({line, 1, absl::StrCat(before, " -> ", after),
                         LooksDoubled(before, after) ? "More iterations, doubled work" : ""});
      });
  return found;
}

std::vector<Finding> DetectSynchronization(const std::vector<File>& files, const File& file,
                                           const Hunk& hunk) {
  std::vector<Finding> found;
  FindUnmatchedOps(
      files, file, hunk, SyncOps, /*added_side=*/true, /*moves_into_loops=*/true,
      [&](int line, const std::string& kind, bool moved) {
        found.push_back(
            {line, 1, moved ? absl::StrCat(kind, " moved into a loop") : absl::StrCat("new ", kind),
             ""});
      });
  return found;
}

std::vector<Finding> DetectMemoryOps(const std::vector<File>& files, const File& file,
                                     const Hunk& hunk) {
  std::vector<Finding> found;
  FindUnmatchedOps(files, file, hunk, MemoryOps, /*added_side=*/true, /*moves_into_loops=*/true,
                   [&](int line, const std::string& kind, bool moved) {
                     if (moved) {
                       found.push_back({line, 2, absl::StrCat(kind, " moved into a loop"), ""});
                     } else if (InsideLoop(hunk.lines, line, /*new_side=*/true)) {
                       found.push_back({line, 2, absl::StrCat("new ", kind, " inside a loop"), ""});
                     } else {
                       found.push_back({line, 1, absl::StrCat("new ", kind), kWeakMemoryCause});
                     }
                   });
  return found;
}

std::vector<Finding> DetectDtype(const std::vector<File>&, const File&, const Hunk& hunk) {
  std::vector<Finding> found;
  for (const DtypeChange& change : FindDtypeChanges(hunk)) {
    found.push_back({change.line, 1, absl::StrCat(change.from, " -> ", change.to),
                     absl::StrFormat("%dx memory bandwidth, %dx register pressure", change.ratio,
                                     change.ratio)});
  }
  return found;
}

// Deleted prefetch or double-buffering operations, and fewer buffers.
std::vector<Finding> DetectPrefetch(const std::vector<File>& files, const File& file,
                                    const Hunk& hunk) {
  std::vector<Finding> found =
      OneSidedOps(files, file, hunk, PrefetchOps, /*added_side=*/false, "deleted");
  PairChanges(
      hunk, NumBuffers,
      [&](int line, const std::string& key, const std::string& before, const std::string& after) {
        int64_t b = 0, a = 0;
        if (absl::SimpleAtoi(before, &b) && absl::SimpleAtoi(after, &a) && a < b) {
          found.push_back({line, 2, ChangeDetail(key, before, after), ""});
        }
      });
  return found;
}

std::vector<Finding> DetectWavesPerEu(const std::vector<File>&, const File&, const Hunk& hunk) {
  std::vector<Finding> found;
  PairChanges(
      hunk, WavesPerEu,
      [&](int line, const std::string& key, const std::string& before, const std::string& after) {
        int64_t b = 0, a = 0;
        const bool increased = absl::SimpleAtoi(before, &b) && absl::SimpleAtoi(after, &a) && a > b;
        found.push_back({line, 1, ChangeDetail(key, before, after),
                         increased ? "Changed occupancy target: more waves per EU leave fewer "
                                     "registers per wave (possible spills)"
                                   : ""});
      });
  return found;
}

std::vector<Finding> DetectMasking(const std::vector<File>& files, const File& file,
                                   const Hunk& hunk) {
  return OneSidedOps(files, file, hunk, MaskingOps, /*added_side=*/true, "new");
}

constexpr PatternRow kTable[] = {
    {kPatternLoopBounds, "More iterations, more work", &DetectLoopBounds},
    {kPatternSynchronization, "Extra sync stalls", &DetectSynchronization},
    {kPatternTileSizes, "Worse occupancy or more iterations", &DetectParamChange<TileSizes>},
    {kPatternMemoryOps, "More memory traffic", &DetectMemoryOps},
    {kPatternDtype, "More memory bandwidth and register pressure", &DetectDtype},
    {kPatternPrefetch, "Load latency exposed", &DetectPrefetch},
    {kPatternWavesPerEu, "Reduced occupancy", &DetectWavesPerEu},
    {kPatternMasking, "Extra ALU + potential branch divergence", &DetectMasking},
    {kPatternLayout, "Possible bank conflicts or non-coalesced access",
     &DetectParamChange<LayoutParams>},
    {kPatternNumStages, "Triton pipelining change", &DetectParamChange<NumStages>},
    {kPatternNumWarps, "Different warps per program: changed occupancy and register pressure",
     &DetectParamChange<NumWarps>},
};

}  // namespace

absl::Span<const PatternRow> PatternTable() { return kTable; }

}  // namespace root_cause_internal
}  // namespace kbisect
