// Copyright 2026 The kbisect Authors.
//
// The words of a culprit's submodule bump (JobStatus.submodule_bumps), shared by the terminal
// report, the Markdown summary and the job page. Pure.
#ifndef KBISECT_REPORT_SUBMODULE_BUMP_H_
#define KBISECT_REPORT_SUBMODULE_BUMP_H_

#include <string>
#include <vector>

#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// One sentence naming the bump: its path, the old and new commits and how many commits lie
// between them, and its repository, e.g. "third_party/cutlass bumped 1a2b3c4 -> 5d6e7f8 (12
// commits), from URL"; "moved back" (with "N commits undone"), "added at 5d6e7f8", "removed (was
// 1a2b3c4)"; and "; its commits are unknown: WHY" after an error. Plain text: each rendering
// escapes it as its format needs.
std::string DescribeSubmoduleBump(const v1::SubmoduleBump& bump);

// One line per listed commit of the bump, oldest first, "5d6e7f8 Subject", with a line
// "... N more commits ..." where the middle of a long range is left out.
std::vector<std::string> SubmoduleBumpCommitLines(const v1::SubmoduleBump& bump);

}  // namespace kbisect

#endif  // KBISECT_REPORT_SUBMODULE_BUMP_H_
