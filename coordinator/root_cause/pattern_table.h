// Copyright 2026 The kbisect Authors.
//
// The seed's table of GPU-kernel regression patterns (see root_cause.h) as data: one row per
// pattern, naming it, giving the seed's likely cause and the detector that finds it in a hunk.
//
// Internal to kbisect_root_cause: callers use root_cause.h.
#ifndef KBISECT_COORDINATOR_ROOT_CAUSE_PATTERN_TABLE_H_
#define KBISECT_COORDINATOR_ROOT_CAUSE_PATTERN_TABLE_H_

#include <string>
#include <vector>

#include "absl/types/span.h"
#include "coordinator/root_cause/code_hunks.h"

namespace kbisect {
namespace root_cause_internal {

// One place in a hunk where a pattern matched.
struct Finding {
  int line = 0;        // Index into the hunk's lines.
  int strength = 1;    // The strongest finding of a pattern in a hunk names the hint's line.
  std::string detail;  // The concrete change ("BLOCK_SIZE: 64 -> 32"); may be empty.
  std::string cause;   // Overrides the row's cause when not empty.
};

// Returns the findings of one pattern in `hunk` of `file`, in the order they were found. `files`
// is the whole analysed patch, where the twins of moved lines are.
using Detector = std::vector<Finding> (*)(const std::vector<File>& files, const File& file,
                                          const Hunk& hunk);

// One row of the table.
struct PatternRow {
  const char* name;   // RootCauseHint.pattern: one of the kPattern* names of root_cause.h.
  const char* cause;  // The seed's "Likely Cause", for findings that give none.
  Detector detect;
};

// Returns the table, one row per pattern, in the seed's order; hints of one hunk that name the
// same line keep this order.
absl::Span<const PatternRow> PatternTable();

}  // namespace root_cause_internal
}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_ROOT_CAUSE_PATTERN_TABLE_H_
