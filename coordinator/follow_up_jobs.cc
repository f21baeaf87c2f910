// Copyright 2026 The kbisect Authors.
//
// Coordinator, follow-up jobs: starting the bisects a finished job's result calls for
// (coordinator/follow_ups.h plans them) and folding their results back in once they finish.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/rpc/enum_label.h"
#include "common/rpc/proto_time.h"
#include "coordinator/coordinator.h"
#include "coordinator/follow_ups.h"
#include "coordinator/write_lock.h"

namespace kbisect {

void Coordinator::StartFollowUpsLocked(const std::string& job_id, JobEntry& entry) {
  const v1::JobStatus status = entry.Status();
  std::vector<std::string> problems;
  std::optional<std::pair<std::string, std::string>> merged_branch;
  if (WantsMergedBranch(status)) {
    absl::StatusOr<RepositoryView::MergedBranchRange> branch =
        repositories_->MergedBranch(status.spec().repository(), status.culprit().sha());
    if (branch.ok()) {
      merged_branch.emplace(branch->base, branch->tip);
    } else {
      problems.push_back(absl::StrCat("cannot bisect the merged branch of ",
                                      status.culprit().sha().substr(0, 12), ": ",
                                      branch.status().message()));
    }
  }
  std::vector<PinMove> pins;
  if (WantsPinFiles(status)) {
    // The pins are read from the superproject, like the culprit's diff: a little git I/O.
    for (const v1::DependencyPin& pin : status.spec().descend_pins()) {
      absl::StatusOr<std::string> after =
          repositories_->ReadFile(status.spec().repository(), status.culprit().sha(), pin.file());
      absl::StatusOr<std::string> before =
          repositories_->ReadFile(status.spec().repository(), status.last_good().sha(), pin.file());
      if (!after.ok() && !before.ok()) {
        problems.push_back(absl::StrCat("cannot descend into the commit pinned in ", pin.file(),
                                        ": ", after.status().message()));
        continue;
      }
      PinMove move;
      move.pin = pin;
      if (before.ok()) move.old_sha = PinnedCommit(*before).value_or("");
      if (after.ok()) move.new_sha = PinnedCommit(*after).value_or("");
      pins.push_back(std::move(move));
    }
  }
  std::vector<PlannedFollowUp> planned = PlanFollowUps(status, merged_branch, pins, &problems);
  if (std::optional<PlannedFollowUp> revert = RevertCheckLocked(status, entry)) {
    planned.push_back(*std::move(revert));
  }
  for (const PlannedFollowUp& plan : planned) {
    v1::JobSpec spec = FollowUpSpec(status.spec(), job_id, plan);
    const std::string request_id = FollowUpRequestId(job_id, plan);
    std::string child_id;
    if (const std::string* known = jobs_.JobOfRequest(request_id); known != nullptr) {
      child_id = *known;  // Started before a coordinator restart.
    } else if (auto stored = unloaded_follow_ups_.find(request_id);
               stored != unloaded_follow_ups_.end()) {
      // Replaying (Recover): the follow-up was created here; it is loaded here too.
      StoredJob job = std::move(stored->second);
      unloaded_follow_ups_.erase(stored);
      child_id = job.job_id;
      AfterJobChangeLocked(child_id, jobs_.AddStored(std::move(job)));
    } else {
      // Resolving is a little git I/O on a finished job, like the report's diff.
      absl::StatusOr<std::vector<v1::CommitRef>> commits = repositories_->ResolveRange(spec);
      if (!commits.ok() && absl::IsFailedPrecondition(commits.status()) &&
          spec.history() != v1::HISTORY_MODE_ALL_COMMITS) {
        // The branch's base is not on its first-parent chain (it merged mainline meanwhile).
        spec.set_history(v1::HISTORY_MODE_ALL_COMMITS);
        commits = repositories_->ResolveRange(spec);
      }
      if (!commits.ok()) {
        problems.push_back(absl::StrCat("cannot start the ", EnumLabel(plan.kind),
                                        " follow-up: ", commits.status().message()));
        continue;
      }
      child_id = CreateJobLocked(spec, request_id, *std::move(commits));
    }
    entry.follow_ups.push_back(child_id);
    entry.published.AddFollowUp(child_id);
    if (plan.kind == v1::FOLLOW_UP_KIND_REVERT_CHECK) {
      v1::RevertCheck running = RevertCheckOf(status);
      running.set_state(v1::RevertCheck::STATE_RUNNING);
      running.set_job_id(child_id);
      running.set_revert_sha(plan.bad);
      entry.published.SetRevertCheck(std::move(running));
    }
  }
  for (std::string& problem : problems) entry.published.AddWarning(std::move(problem));
  if (!entry.follow_ups.empty()) DispatchLocked();
}

std::optional<PlannedFollowUp> Coordinator::RevertCheckLocked(const v1::JobStatus& status,
                                                             JobEntry& entry) {
  if (!WantsRevertCheck(status)) return std::nullopt;
  // A little git I/O on a finished job, like resolving a follow-up's range: a scratch clone
  // that borrows the repository's objects, the revert, a push under refs/kbisect/try/.
  const ChangeSpec revert{ChangeSpec::Kind::kRevert, status.culprit().sha()};
  absl::StatusOr<ChangeCommit> made =
      repositories_->MakeChange(status.spec().repository(), status.bad_sha(), revert);
  v1::RevertCheck check = RevertCheckOf(status);
  if (!made.ok()) {
    check.set_state(v1::RevertCheck::STATE_FAILED);
    check.set_error(std::string(made.status().message()));
  } else if (made->conflict.has_value()) {
    check.set_state(v1::RevertCheck::STATE_CONFLICT);
    for (const std::string& file : made->conflict->files) check.add_conflict_files(file);
    for (const std::string& later : made->conflict->later_commits) check.add_later_commits(later);
  }
  if (check.state() != v1::RevertCheck::STATE_UNSPECIFIED) {
    entry.published.SetRevertCheck(std::move(check));
    return std::nullopt;
  }
  v1::TryChange change;
  change.set_kind(v1::TryChange::KIND_REVERT);
  change.set_target(status.culprit().sha());
  change.set_description(made->description);
  change.set_ref(made->ref);
  return PlanRevertCheck(status, made->sha, change);
}

void Coordinator::MaybeCompleteLocked(const std::string& job_id) {
  JobEntry* found_entry = jobs_.Find(job_id);
  if (found_entry == nullptr) return;
  JobEntry& entry = *found_entry;
  if (entry.complete || entry.held_finish == nullptr) return;
  for (const std::string& child : entry.follow_ups) {
    const JobEntry* found = jobs_.Find(child);
    if (found != nullptr && !found->complete) return;
  }
  v1::JobStatus status = entry.Status();
  std::vector<v1::JobStatus> children;
  for (const std::string& child : entry.follow_ups) {
    if (const JobEntry* found = jobs_.Find(child); found != nullptr) {
      children.push_back(found->Status());
    }
  }
  std::vector<std::pair<std::string, const v1::JobStatus*>> done;
  for (const v1::JobStatus& child : children) done.emplace_back(child.job_id(), &child);
  FoldFollowUpResults(done, &status);
  std::unique_ptr<v1::JobEvent> finish = std::move(entry.held_finish);
  status.set_state(finish->job().state());
  if (!entry.follow_ups.empty()) {
    // The result took its follow-ups too: their runs and time count.
    const absl::Time now = clock_->Now();
    *status.mutable_finish_time() = ToProto(now);
    status.set_wall_seconds(absl::ToDoubleSeconds(now - FromProto(status.create_time())));
  }
  *finish->mutable_job() = status;
  entry.complete = true;
  if (store_ != nullptr && !replaying_)
    journal_.pending(mu_).final_statuses.emplace_back(job_id, status);
  const std::string parent = status.spec().parent_job_id();
  entry.published.Freeze(std::move(status));
  jobs_.AppendEvent(entry, std::move(*finish));
  entry.published.set_revision(static_cast<int64_t>(entry.events.size()));
  changed_.SignalAll();
  CompactFamilyLocked(job_id);
  if (!parent.empty()) MaybeCompleteLocked(parent);
}

}  // namespace kbisect
