// Copyright 2026 The kbisect Authors.
//
// The live /jobs page: the coordinator's jobs, newest first, each linking to /jobs/ID.
#ifndef KBISECT_REPORT_HTML_JOB_LIST_PAGE_H_
#define KBISECT_REPORT_HTML_JOB_LIST_PAGE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect::html {

// The page; it reloads itself every `refresh_seconds` when positive. Each job links to
// "/jobs/ID".
absl::StatusOr<std::string> RenderJobListPage(const v1::ListJobsResponse& jobs, absl::Time now,
                                              int refresh_seconds);

}  // namespace kbisect::html

#endif  // KBISECT_REPORT_HTML_JOB_LIST_PAGE_H_
