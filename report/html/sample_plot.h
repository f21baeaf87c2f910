// Copyright 2026 The kbisect Authors.
//
// The job page's main figure, an inline SVG: one column per probed commit in first-parent order
// (labelled with its index; hover shows sha, subject, verdict and median), every sample of every
// probe as one mark (`class="sample ..."`, jittered inside the column), each probe's median as a
// tick, the GOOD and BAD baselines as bands (their samples' range) around their medians, the
// verdict threshold as a dashed line, and the culprit and last-good columns highlighted.
//
// Marks: circles, filled in the verdict's colour; hollow while provisional; squares when cached
// (reused from an earlier job); faded and crossed for quarantined workers. The confirmation's
// interleaved last-good samples sit in the last-good column (`class="sample paired ..."`).
#ifndef KBISECT_REPORT_HTML_SAMPLE_PLOT_H_
#define KBISECT_REPORT_HTML_SAMPLE_PLOT_H_

#include <string>

#include "absl/status/statusor.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect::html {

// The <svg> element, or "" when no probe has samples yet.
absl::StatusOr<std::string> RenderSamplePlot(const v1::JobStatus& job);

// How many marks RenderSamplePlot draws: every probe's samples plus the interleaved
// confirmation sets' last-good samples (what a test counts in the browser's DOM).
int SampleMarkCount(const v1::JobStatus& job);

}  // namespace kbisect::html

#endif  // KBISECT_REPORT_HTML_SAMPLE_PLOT_H_
