// Copyright 2026 The kbisect Authors.
//
// A lenient parser for unified diffs as `git diff A B` prints them:
//
//   diff --git a/kernels/attn.py b/kernels/attn.py
//   index 1111111..2222222 100644
//   --- a/kernels/attn.py
//   +++ b/kernels/attn.py
//   @@ -10,7 +10,7 @@ def attn_kernel(...)
//        context line
//   -    removed line
//   +    added line
//
// Plain `diff -u` output (no `diff --git` line), renames, new and deleted files, binary files and
// "\ No newline at end of file" markers are understood. Hunk bodies are read by the line counts
// of their `@@` header, so a removed line that happens to start with "--- " is not mistaken for a
// file header. The parser never fails: lines it does not understand are ignored.
#ifndef KBISECT_COORDINATOR_ROOT_CAUSE_UNIFIED_DIFF_H_
#define KBISECT_COORDINATOR_ROOT_CAUSE_UNIFIED_DIFF_H_

#include <string>
#include <string_view>
#include <vector>

namespace kbisect {

// One line of a hunk body.
struct DiffLine {
  // ' ' for context, '+' for an added line, '-' for a removed line.
  char kind = ' ';
  // The line without its leading marker and without a trailing "\r".
  std::string text;
  // 1-based line number in the old file (context and removed lines; 0 for added lines).
  int old_line = 0;
  // 1-based line number in the new file (context and added lines; 0 for removed lines).
  int new_line = 0;
};

// One `@@ -a,b +c,d @@` hunk.
struct DiffHunk {
  // The whole header line, e.g. "@@ -10,7 +10,7 @@ def kernel(...)".
  std::string header;
  int old_start = 0;
  int old_count = 0;
  int new_start = 0;
  int new_count = 0;
  std::vector<DiffLine> lines;
};

// The changes to one file.
struct FileDiff {
  // Paths without their "a/" / "b/" prefixes; empty for the side of an added or deleted file.
  std::string old_path;
  std::string new_path;
  bool is_new = false;
  bool is_deleted = false;
  bool is_rename = false;
  bool is_binary = false;
  std::vector<DiffHunk> hunks;

  // The path a person would name: the new path, or the old one for a deleted file.
  const std::string& path() const { return new_path.empty() ? old_path : new_path; }
};

// Splits `patch` into files and hunks. Returns the files in patch order; an empty or
// unrecognisable patch gives an empty vector.
std::vector<FileDiff> ParseUnifiedDiff(std::string_view patch);

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_ROOT_CAUSE_UNIFIED_DIFF_H_
