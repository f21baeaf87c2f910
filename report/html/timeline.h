// Copyright 2026 The kbisect Authors.
//
// The worker timeline, an inline SVG: one row per worker, one bar per task from its lease to
// its result (`class="task ..."`), split into checkout, build and bench segments by the task's
// timings (what is left is the lease's wait and the report). Cancelled tasks are hatched, tasks
// still running end at `now`. It shows the parallelism the job had.
#ifndef KBISECT_REPORT_HTML_TIMELINE_H_
#define KBISECT_REPORT_HTML_TIMELINE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect::html {

// The <svg> element, or "" when no task has started.
absl::StatusOr<std::string> RenderTimeline(const v1::JobStatus& job, absl::Time now);

}  // namespace kbisect::html

#endif  // KBISECT_REPORT_HTML_TIMELINE_H_
