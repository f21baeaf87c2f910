// Copyright 2026 The kbisect Authors.
#include "coordinator/published_status.h"

#include "report/event_words.h"

#include <utility>

namespace kbisect {

void PublishedStatus::AttachReport(ReportDetails details) {
  for (std::string& warning : details.warnings) warnings_.push_back(std::move(warning));
  details.warnings.clear();
  report_ = std::move(details);
}

void PublishedStatus::AddFollowUp(const std::string& job_id) { follow_ups_.push_back(job_id); }

void PublishedStatus::AddWarning(std::string warning) { warnings_.push_back(std::move(warning)); }

void PublishedStatus::Freeze(v1::JobStatus status) { frozen_ = std::move(status); }

v1::JobStatus PublishedStatus::Build(const v1::JobStatus& own) const {
  v1::JobStatus status = frozen_ ? *frozen_ : own;
  status.set_revision(revision_);
  if (frozen_) return status;
  if (report_) {
    for (v1::JobWorker& worker : *status.mutable_workers()) {
      auto identity = report_->identities.find(worker.worker());
      if (identity != report_->identities.end()) *worker.mutable_identity() = identity->second;
    }
    for (const v1::FileChange& file : report_->files_changed) *status.add_files_changed() = file;
    for (const v1::SubmoduleBump& bump : report_->submodule_bumps) {
      *status.add_submodule_bumps() = bump;
    }
    for (const v1::RootCauseHint& hint : report_->root_cause_hints) {
      *status.add_root_cause_hints() = hint;
    }
  }
  for (const std::string& warning : warnings_) status.add_warnings(warning);
  if (revert_check_.has_value()) {
    *status.mutable_revert_check() = *revert_check_;
    if (revert_check_->state() != v1::RevertCheck::STATE_RUNNING) {
      status.add_warnings(RevertCheckWords(*revert_check_));
      *status.add_warning_facts()->mutable_revert_checked() = *revert_check_;
    }
  }
  for (const std::string& id : follow_ups_) status.add_follow_up_job_ids(id);
  if (following_up_) status.set_state(v1::JOB_STATE_FOLLOWING_UP);
  return status;
}

}  // namespace kbisect
