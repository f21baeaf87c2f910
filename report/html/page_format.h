// Copyright 2026 The kbisect Authors.
//
// Small words and numbers shared by the HTML job page's parts: values with their unit, short
// shas, durations, the verdict class of a probe. Read from the job status, nothing recomputed.
#ifndef KBISECT_REPORT_HTML_PAGE_FORMAT_H_
#define KBISECT_REPORT_HTML_PAGE_FORMAT_H_

#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "kbisect/v1/kbisect.pb.h"
#include "report/gpu_during_job.h"
#include "report/words.h"

namespace kbisect::html {

// ShortSha and ProbeVerdictWord are report/words.h's.

// "%.4g" and the unit: "1.52ms", "812.3GB/s".
std::string Value(double value, absl::string_view unit);

// "0.18s", "4.2s", "3m05s", "1h02m".
std::string Seconds(double seconds);

// The CSS class of a probe's verdict: "good", "bad", "skip", "ambiguous", "pending" (not
// classified yet), "baseline-good" / "baseline-bad" for baselines and calibrations and
// "confirm" for the confirmation's tasks.
std::string VerdictClass(const v1::Probe& probe);

// True when `worker` is quarantined in `job`.
bool IsQuarantined(const v1::JobStatus& job, absl::string_view worker);

// The CSS class of a run's GPU mark (report/gpu_during_job.h): "gpu-throttled", "gpu-capped",
// "gpu-shared"; "" when clean.
std::string GpuMarkClass(GpuRunMark mark);

// The headline of a job: "Culprit found: 5f9a72c [kernel] Retune ...", "No regression", ...
std::string Headline(const v1::JobStatus& job);

// The subject of the commit at `index` when the job names it (culprit, last good, other steps,
// merged culprit), else "".
std::string KnownSubject(const v1::JobStatus& job, int index);

}  // namespace kbisect::html

#endif  // KBISECT_REPORT_HTML_PAGE_FORMAT_H_
