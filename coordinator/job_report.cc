// Copyright 2026 The kbisect Authors.
//
// Coordinator, the report details of a finished job that need I/O: the workers' identities,
// the culprit's files changed, its submodule bumps and its root-cause hints.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/rpc/proto_time.h"
#include "coordinator/coordinator.h"
#include "coordinator/root_cause/root_cause.h"
#include "coordinator/write_lock.h"

namespace kbisect {

void Coordinator::AttachReportLocked(JobEntry& entry) {
  entry.reported = true;
  v1::JobStatus* status = entry.job->mutable_status();
  // Identities of the workers that took part (the job filled in their calibration).
  for (v1::JobWorker& worker : *status->mutable_workers()) {
    auto it = workers_.find(worker.worker());
    if (it != workers_.end()) *worker.mutable_identity() = it->second.identity;
  }
  if (status->status() != v1::OUTCOME_CULPRIT_FOUND) return;
  // The diff of the culprit: small I/O on a finished job, done once.
  const std::string& repository = status->spec().repository();
  const std::string& from = status->last_good().sha();
  const std::string& to = status->culprit().sha();
  absl::StatusOr<std::vector<v1::FileChange>> files = repositories_->DiffStat(repository, from, to);
  if (files.ok()) {
    for (v1::FileChange& file : *files) *status->add_files_changed() = std::move(file);
  } else {
    status->add_warnings(
        absl::StrCat("could not list the culprit's files: ", files.status().message()));
  }
  // A dependency bump: its own commits, read from the dependency's repository.
  absl::StatusOr<std::vector<v1::SubmoduleBump>> bumps =
      repositories_->SubmoduleBumps(repository, from, to);
  if (bumps.ok()) {
    for (v1::SubmoduleBump& bump : *bumps) *status->add_submodule_bumps() = std::move(bump);
  } else {
    status->add_warnings(
        absl::StrCat("could not list the culprit's submodule bumps: ", bumps.status().message()));
  }
  absl::StatusOr<std::string> patch = repositories_->DiffPatch(repository, from, to);
  if (patch.ok()) {
    for (v1::RootCauseHint& hint : FindRootCauseHints(*patch)) {
      *status->add_root_cause_hints() = std::move(hint);
    }
  }
}

}  // namespace kbisect
