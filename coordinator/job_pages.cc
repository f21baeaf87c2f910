// Copyright 2026 The kbisect Authors.
#include "coordinator/job_pages.h"

#include <optional>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "report/eta.h"
#include "report/html/job_list_page.h"
#include "report/html/job_page.h"

namespace kbisect {

namespace {
constexpr int kJobRefreshSeconds = 2;
constexpr int kListRefreshSeconds = 5;
constexpr int kListedJobs = 100;
// The most earlier jobs of the same repository read for the ETA's prior.
constexpr int kPastJobsRead = 20;

// The ETA's prior of a running job: the done jobs of its repository among the latest listed
// that ran the same benchmark (report/eta.h, PastSpanOf).
std::optional<PastSpan> PastSpanOfCoordinator(const Coordinator& coordinator,
                                              const v1::JobStatus& job) {
  if (JobFinished(job)) return std::nullopt;
  v1::ListJobsRequest request;
  request.set_page_size(kListedJobs);
  request.add_states(v1::JOB_STATE_DONE);
  std::vector<v1::JobStatus> history;
  const v1::ListJobsResponse listed = coordinator.ListJobs(request);
  for (const v1::JobSummary& summary : listed.jobs()) {
    if (static_cast<int>(history.size()) == kPastJobsRead) break;
    if (summary.job_id() == job.job_id() || summary.state() != v1::JOB_STATE_DONE ||
        summary.repository() != job.spec().repository()) {
      continue;
    }
    absl::StatusOr<v1::JobStatus> past = coordinator.GetJob(summary.job_id());
    if (past.ok()) history.push_back(*std::move(past));
  }
  return PastSpanOf(job, history);
}
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
    options.past = PastSpanOfCoordinator(*coordinator, *job);
    options.refresh_seconds = kJobRefreshSeconds;
    options.jobs_link = "/jobs";
    return html::RenderJobPage(*job, options);
  };
  return pages;
}

}  // namespace kbisect
