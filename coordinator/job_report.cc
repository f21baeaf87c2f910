// Copyright 2026 The kbisect Authors.
#include "coordinator/job_report.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/rpc/proto_time.h"
#include "coordinator/root_cause/root_cause.h"

namespace kbisect {

ReportDetails GatherReportDetails(const v1::JobStatus& status, const WorkerRegistry& workers,
                                  RepositoryView* repositories) {
  ReportDetails report;
  // Identities of the workers that took part (the job filled in their calibration).
  for (const v1::JobWorker& worker : status.workers()) {
    if (const WorkerEntry* found = workers.Find(worker.worker()); found != nullptr) {
      report.identities[worker.worker()] = found->identity;
    }
  }
  if (status.status() == v1::OUTCOME_CULPRIT_FOUND) {
    // The diff of the culprit: small I/O on a finished job, done once.
    const std::string& repository = status.spec().repository();
    const std::string& from = status.last_good().sha();
    const std::string& to = status.culprit().sha();
    absl::StatusOr<std::vector<v1::FileChange>> files =
        repositories->DiffStat(repository, from, to);
    if (files.ok()) {
      report.files_changed = *std::move(files);
    } else {
      report.warnings.push_back(
          absl::StrCat("could not list the culprit's files: ", files.status().message()));
    }
    // A dependency bump: its own commits, read from the dependency's repository.
    absl::StatusOr<std::vector<v1::SubmoduleBump>> bumps =
        repositories->SubmoduleBumps(repository, from, to);
    if (bumps.ok()) {
      report.submodule_bumps = *std::move(bumps);
    } else {
      report.warnings.push_back(
          absl::StrCat("could not list the culprit's submodule bumps: ", bumps.status().message()));
    }
    absl::StatusOr<std::string> patch = repositories->DiffPatch(repository, from, to);
    if (patch.ok()) report.root_cause_hints = FindRootCauseHints(*patch);
  }
  return report;
}

}  // namespace kbisect
