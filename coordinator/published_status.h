// Copyright 2026 The kbisect Authors.
//
// PublishedStatus is what the coordinator adds to a job's own status (BisectJob::status(), the
// search's) before anyone sees it: the report details it found by I/O once the job finished (the
// workers' identities, the culprit's files, submodule bumps and root-cause hints, and the
// warnings of what it could not find), the follow-up jobs it started, the FOLLOWING_UP state
// while they run, the revision (how many events the job's stream holds), and, once the job and
// its follow-ups completed or when it is restored from the store, the final status itself. The
// wire form (v1::JobStatus) is built on demand by Build; nothing writes into the job's own
// status, so the search's state and the coordinator's stay apart (docs/decisions.md 165).
//
// Thread-safety: none; the coordinator holds its mutex around every call.
#ifndef KBISECT_COORDINATOR_PUBLISHED_STATUS_H_
#define KBISECT_COORDINATOR_PUBLISHED_STATUS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// The report details of a finished job that need I/O (GatherReportDetails, job_report.h).
struct ReportDetails {
  // Identity of each worker that took part, by worker id.
  std::map<std::string, v1::RunnerIdentity> identities;
  std::vector<v1::FileChange> files_changed;
  std::vector<v1::SubmoduleBump> submodule_bumps;
  std::vector<v1::RootCauseHint> root_cause_hints;
  // What could not be found, in words.
  std::vector<std::string> warnings;
};

class PublishedStatus {
 public:
  // Adds the report of the finished job. Called at most once.
  void AttachReport(ReportDetails details);
  // Records a follow-up job the job started (its id is listed in follow_up_job_ids).
  void AddFollowUp(const std::string& job_id);
  // Adds a warning after the job's own (e.g. a follow-up that could not start).
  void AddWarning(std::string warning);
  // The revert check (--verify-revert) as it stands: running in a follow-up, or why it could
  // not be measured (a conflict, a failure: also a warning then). A follow-up's result replaces
  // it when the follow-ups are folded in.
  void SetRevertCheck(v1::RevertCheck check) { revert_check_ = std::move(check); }
  // The job's own search finished and its follow-ups run: its state shows FOLLOWING_UP until
  // Freeze.
  void HoldForFollowUps() { following_up_ = true; }
  // From now on the published status is `status` (a completed job's status with its
  // follow-ups' results folded in, or the final status the store kept), whatever the job's own
  // status says; only the revision still changes.
  void Freeze(v1::JobStatus status);
  // The number of events in the job's stream, published as JobStatus.revision.
  void set_revision(int64_t revision) { revision_ = revision; }

  // The frozen status, or null before Freeze.
  const v1::JobStatus* frozen() const { return frozen_ ? &*frozen_ : nullptr; }
  // What the published status rests on: the frozen status, else the job's own `own`. For readers
  // of the search's fields (spec, probes, workers' counts) that need no copy.
  const v1::JobStatus& Base(const v1::JobStatus& own) const { return frozen_ ? *frozen_ : own; }
  // The published state of a job whose own status is `own` (Build(own).state() without a copy).
  v1::JobState State(const v1::JobStatus& own) const {
    if (frozen_) return frozen_->state();
    return following_up_ ? v1::JOB_STATE_FOLLOWING_UP : own.state();
  }
  // The published status of a job whose own status is `own`.
  v1::JobStatus Build(const v1::JobStatus& own) const;

 private:
  std::optional<ReportDetails> report_;
  std::vector<std::string> follow_ups_;
  // Warnings added after the job's own, in the order they were added (the report's first).
  std::vector<std::string> warnings_;
  std::optional<v1::RevertCheck> revert_check_;
  bool following_up_ = false;
  int64_t revision_ = 0;
  std::optional<v1::JobStatus> frozen_;
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_PUBLISHED_STATUS_H_
