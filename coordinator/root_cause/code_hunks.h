// Copyright 2026 The kbisect Authors.
//
// Code hunks: the analysed form of a patch that the pattern detectors read. Every diff line keeps
// its text and gains its code (comments and docstrings removed), a whitespace-free form for
// comparing code, its indentation and, for a line that only moved, the place of its twin.
//
// Internal to kbisect_root_cause: callers use root_cause.h.
#ifndef KBISECT_COORDINATOR_ROOT_CAUSE_CODE_HUNKS_H_
#define KBISECT_COORDINATOR_ROOT_CAUSE_CODE_HUNKS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/string_view.h"
#include "coordinator/root_cause/source_language.h"

namespace kbisect {
namespace root_cause_internal {

// One analysed diff line.
struct Line {
  char kind = ' ';   // ' ' (context), '+' (added) or '-' (removed).
  std::string raw;   // The text without its marker.
  std::string code;  // Without comments; empty for comment-only and blank lines.
  std::string norm;  // `code` without whitespace: equal norms are the same code.
  int indent = 0;
  // A removed line added verbatim elsewhere in the patch (or the reverse): not a real change.
  // The twin is line `twin_line` of hunk `twin_hunk` of file `twin_file` (-1 when none).
  bool moved = false;
  int twin_file = -1;
  int twin_hunk = -1;
  int twin_line = -1;
};

// One analysed hunk.
struct Hunk {
  std::string header;  // The "@@ ... @@" line.
  std::vector<Line> lines;
};

// One analysed file of the patch.
struct File {
  std::string path;  // The new path.
  LangInfo lang;
  std::vector<Hunk> hunks;
};

// Parses `unified_patch` (the output of `git diff`) and analyses it: binary and documentation
// files are left out, each line's code is found (comments and Python docstrings removed, also
// those that began above the hunk), and lines that only moved are marked and paired with their
// twins, first come first served. Returns the files in patch order; an empty or unparsable patch
// gives none.
std::vector<File> AnalysePatch(std::string_view unified_patch);

// Returns true if line `index` of `lines` sits inside a for/while loop visible in the hunk, on
// the new side (context and added lines) when `new_side` is set, else on the old side (context
// and removed lines): some loop header above it is indented less than it, with no function
// header in between. A loop header itself counts as inside.
bool InsideLoop(const std::vector<Line>& lines, int index, bool new_side);

// Returns `s` without any whitespace: the form in which two pieces of code compare equal.
std::string RemoveWhitespace(absl::string_view s);

}  // namespace root_cause_internal
}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_ROOT_CAUSE_CODE_HUNKS_H_
