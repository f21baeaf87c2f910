// Copyright 2026 The kbisect Authors.
#include "coordinator/job_pages.h"

#include <utility>

#include "absl/time/clock.h"
#include "report/html/job_list_page.h"
#include "report/html/job_page.h"

namespace kbisect {

namespace {
constexpr int kJobRefreshSeconds = 2;
constexpr int kListRefreshSeconds = 5;
constexpr int kListedJobs = 100;
}  // namespace

JobPages MakeJobPages(const Coordinator* coordinator, std::string token, bool remote) {
  JobPages pages;
  pages.token = std::move(token);
  pages.remote = remote;
  pages.list = [coordinator]() -> absl::StatusOr<std::string> {
    v1::ListJobsRequest request;
    request.set_page_size(kListedJobs);
    return html::RenderJobListPage(coordinator->ListJobs(request), absl::Now(),
                                   kListRefreshSeconds);
  };
  pages.job = [coordinator](const std::string& job_id) -> absl::StatusOr<std::string> {
    absl::StatusOr<v1::JobStatus> job = coordinator->GetJob(job_id);
    if (!job.ok()) return job.status();
    html::PageOptions options;
    options.now = absl::Now();
    options.refresh_seconds = kJobRefreshSeconds;
    options.jobs_link = "/jobs";
    return html::RenderJobPage(*job, options);
  };
  return pages;
}

}  // namespace kbisect
