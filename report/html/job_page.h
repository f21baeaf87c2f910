// Copyright 2026 The kbisect Authors.
//
// The HTML job page: one self-contained file (inline SVG, CSS and script, no network fetches)
// that shows a bisect from its job status, nothing recomputed. `kbisect run/status/watch
// --html FILE` write it; the coordinator serves it live at /jobs/ID (docs/operations.md).
//
// Sections: the headline and facts (range, metric, rounds, runs, wall time, ETA while running);
// the culprit (commit, before/after, the confirmation's ratio and 95% CI, every step with
// --all-culprits, the merged branch's culprit); the samples plot (sample_plot.h); the worker
// timeline (timeline.h); the probes (one row per task, output tails where kept); the workers;
// files changed and root-cause hints with their hunks; warnings and drift; the command that
// reproduces the job.
#ifndef KBISECT_REPORT_HTML_JOB_PAGE_H_
#define KBISECT_REPORT_HTML_JOB_PAGE_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kbisect/v1/kbisect.pb.h"
#include "report/eta.h"

namespace kbisect::html {

struct PageOptions {
  // "Now", for probes still running, the page's footer and the ETA.
  absl::Time now = absl::UnixEpoch();
  // When positive and the job is not finished, the page reloads itself after this many seconds
  // (the coordinator's live page).
  int refresh_seconds = 0;
  // Where the list of jobs is (the live page's link back), or "" for none.
  std::string jobs_link;
  // What earlier jobs of the same benchmark say about a probe's span (the coordinator's live
  // page): the ETA's prior, and the page says it used it.
  std::optional<PastSpan> past;
};

// The whole page, "<!DOCTYPE html>..." to "</html>".
absl::StatusOr<std::string> RenderJobPage(const v1::JobStatus& job, const PageOptions& options);

// The page's parts, shared with the job list page: the <head> (title, style) and the closing
// script and tags.
absl::StatusOr<std::string> PageHead(const std::string& title, int refresh_seconds);
std::string PageEnd(absl::Time now);

}  // namespace kbisect::html

#endif  // KBISECT_REPORT_HTML_JOB_PAGE_H_
