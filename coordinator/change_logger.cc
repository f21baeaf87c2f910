// Copyright 2026 The kbisect Authors.
#include "coordinator/change_logger.h"

#include <set>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace kbisect {
namespace {

bool Finished(v1::JobState state) {
  return state == v1::JOB_STATE_DONE || state == v1::JOB_STATE_CANCELLED ||
         state == v1::JOB_STATE_FAILED;
}

}  // namespace

const char* JobStateLabel(v1::JobState state) {
  switch (state) {
    case v1::JOB_STATE_QUEUED:
      return "queued";
    case v1::JOB_STATE_BASELINES:
      return "baselines";
    case v1::JOB_STATE_BISECTING:
      return "bisecting";
    case v1::JOB_STATE_CONFIRMING:
      return "confirming";
    case v1::JOB_STATE_FOLLOWING_UP:
      return "following_up";
    case v1::JOB_STATE_SUITE_SEARCH:
      return "suite_search";
    case v1::JOB_STATE_DONE:
      return "done";
    case v1::JOB_STATE_CANCELLED:
      return "cancelled";
    case v1::JOB_STATE_FAILED:
      return "failed";
    default:
      return "unknown";
  }
}

const char* WorkerStateLabel(v1::WorkerState state) {
  switch (state) {
    case v1::WORKER_STATE_IDLE:
      return "idle";
    case v1::WORKER_STATE_BUSY:
      return "busy";
    case v1::WORKER_STATE_DRAINING:
      return "draining";
    case v1::WORKER_STATE_LOST:
      return "lost";
    default:
      return "unknown";
  }
}

void ChangeLogger::Prime() {
  quiet_ = true;
  Poll();
  quiet_ = false;
}

void ChangeLogger::Poll() {
  std::set<std::string> listed;
  std::set<std::string> newest;
  // Every unfinished job, page after page.
  v1::ListJobsRequest active;
  active.set_page_size(Coordinator::kMaxListedJobs);
  for (v1::JobState state :
       {v1::JOB_STATE_QUEUED, v1::JOB_STATE_BASELINES, v1::JOB_STATE_BISECTING,
        v1::JOB_STATE_CONFIRMING, v1::JOB_STATE_SUITE_SEARCH, v1::JOB_STATE_FOLLOWING_UP}) {
    active.add_states(state);
  }
  std::vector<v1::JobSummary> summaries;
  while (true) {
    v1::ListJobsResponse page = coordinator_->ListJobs(active);
    for (v1::JobSummary& job : *page.mutable_jobs()) summaries.push_back(std::move(job));
    if (page.next_page_token().empty()) break;
    active.set_page_token(page.next_page_token());
  }
  // The newest jobs whatever their state.
  v1::ListJobsRequest latest;
  latest.set_page_size(kNewestJobs);
  v1::ListJobsResponse newest_page = coordinator_->ListJobs(latest);
  for (v1::JobSummary& job : *newest_page.mutable_jobs()) {
    newest.insert(job.job_id());
    summaries.push_back(std::move(job));
  }
  for (const v1::JobSummary& job : summaries) {
    if (!listed.insert(job.job_id()).second) continue;
    Observe(job.job_id(), job.state(), job.culprit_sha(), &job);
  }
  // Jobs seen unfinished and listed no more have ended (or were deleted by --retain).
  std::vector<std::string> ended;
  for (const auto& [job_id, state] : job_states_) {
    if (listed.count(job_id) == 0 && !Finished(state)) ended.push_back(job_id);
  }
  for (const std::string& job_id : ended) {
    absl::StatusOr<v1::JobStatus> job = coordinator_->GetJob(job_id);
    if (!job.ok()) {
      job_states_.erase(job_id);
      continue;
    }
    Observe(job_id, job->state(), job->culprit().sha(), nullptr);
  }
  // Ended jobs off the newest page are never listed again: forget them.
  for (auto it = job_states_.begin(); it != job_states_.end();) {
    if (Finished(it->second) && newest.count(it->first) == 0) {
      it = job_states_.erase(it);
    } else {
      ++it;
    }
  }
  PollWorkers();
}

void ChangeLogger::Observe(const std::string& job_id, v1::JobState state,
                           const std::string& culprit_sha, const v1::JobSummary* summary) {
  auto [it, inserted] = job_states_.emplace(job_id, state);
  if (!inserted && it->second == state) return;
  it->second = state;
  if (quiet_) return;
  std::string line = absl::StrCat("job ", job_id, " ", JobStateLabel(state));
  if (inserted && summary != nullptr) {
    absl::StrAppend(&line, " (", summary->repository(), " ", summary->good(), "..",
                    summary->bad().empty() ? "HEAD" : summary->bad(), ")");
  }
  if (!culprit_sha.empty()) absl::StrAppend(&line, " culprit ", culprit_sha);
  log_->Info(line, {{"job", job_id}, {"state", JobStateLabel(state)}, {"culprit", culprit_sha}});
}

void ChangeLogger::PollWorkers() {
  const v1::ListWorkersResponse workers = coordinator_->ListWorkers();
  for (const v1::Worker& worker : workers.workers()) {
    const bool lost = worker.state() == v1::WORKER_STATE_LOST;
    auto [it, inserted] = worker_lost_.emplace(worker.worker_id(), lost);
    if (!inserted && it->second == lost) continue;
    it->second = lost;
    log_->Info(absl::StrCat("worker ", worker.worker_id(), " ", WorkerStateLabel(worker.state()),
                            " (", worker.identity().hardware_class_label(), ")"),
               {{"worker", worker.worker_id()},
                {"state", WorkerStateLabel(worker.state())},
                {"hardware_class", worker.identity().hardware_class()}});
  }
}

}  // namespace kbisect
