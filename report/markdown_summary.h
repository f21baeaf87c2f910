// Copyright 2026 The kbisect Authors.
//
// A short Markdown summary of a job for an issue, a pull request comment or chat
// (`--markdown FILE`): the outcome, the culprit with its author and the change with the
// confirmation's 95% CI, the top root-cause hint, a table of the probes, and the command that
// reproduces the job. GitHub-flavoured: pipes in cells are escaped.
//
//   ### kbisect: culprit `5f9a72c` [kernel] Retune attention tiles for smaller shapes
//   **Author:** Dev 0 <dev0@kbisect.invalid> · **Date:** 2026-01-02 17:00:00 +0000
//   **Change:** latency 0.9955ms → 1.441ms (44.8% worse), confirmed: ratio 1.46 (95% CI ...)
//   **Likely cause:** Changed tile sizes in kernels/attention.py: Worse occupancy ...
//   | # | commit | worker | round | median | runs | verdict |
//   ...
#ifndef KBISECT_REPORT_MARKDOWN_SUMMARY_H_
#define KBISECT_REPORT_MARKDOWN_SUMMARY_H_

#include <string>

#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

std::string MarkdownSummary(const v1::JobStatus& job);

}  // namespace kbisect

#endif  // KBISECT_REPORT_MARKDOWN_SUMMARY_H_
