// Copyright 2026 The kbisect Authors.
//
// Follow-up jobs: the bisects a finished job's result calls for, and how their results fold
// back into it. Pure: the coordinator resolves ranges and creates the jobs (follow_up_jobs.cc).
//   * kMergedBranch: the culprit is a merge and the spec asks to descend (--descend-merges):
//     bisect merge-base..second parent; its culprit is the parent's merged_culprit.
//   * kStepsBefore / kStepsAfter: the culprit explains too little of the move and the spec asks
//     for every culprit (--all-culprits): bisect GOOD..last-good and culprit..BAD; their culprits
//     join the parent's, ranked by size.
//   * kDependency: the culprit moves a dependency, a submodule (--descend-submodules) or a commit
//     pinned in a file (--descend-pin FILE=REPOSITORY): bisect the dependency's own range
//     old..new with the superproject pinned at the culprit (JobSpec.dependency); its culprit
//     joins the parent's dependency_culprits. A dependency follow-up descends into its own
//     submodules in turn (nested: DependencyDescent.outer), never into pin files.
//   * kSuite: metrics of a suite (JobSpec.metric.suite) whose step the job's shared probes
//     placed in a range of their own (SuiteLedger: SUITE_METRIC_STATE_SEARCHING): bisect each such
//     range once, for the metrics whose step lies there, led by the one that moved most; their
//     culprits fill the parent's suite rows.
//   * kRevertCheck: the culprit is confirmed and the spec asks to verify it (--verify-revert):
//     BAD with the culprit reverted (a commit the coordinator makes, RepositoryView::MakeChange)
//     is measured against BAD by a try job (JobSpec.try_change); its result is the parent's
//     revert_check, with the share of GOOD->BAD the revert recovers.
#ifndef KBISECT_COORDINATOR_FOLLOW_UPS_H_
#define KBISECT_COORDINATOR_FOLLOW_UPS_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// Follow-ups of follow-ups are started up to this depth (a merge inside a merged branch...).
inline constexpr int kMaxFollowUpDepth = 3;

// The prefix of a follow-up's lines in its parent's event stream ("[merged branch] "); "" for
// FOLLOW_UP_KIND_UNSPECIFIED. A follow-up's kind is named elsewhere as EnumLabel names it
// ("merged_branch", ...): in its request id and its description.
const char* FollowUpEventPrefix(v1::FollowUpKind kind);

struct PlannedFollowUp {
  v1::FollowUpKind kind = v1::FOLLOW_UP_KIND_MERGED_BRANCH;
  std::string good;
  std::string bad;
  // kDependency only: the dependency's repository (the follow-up's JobSpec.repository) and how
  // its probes check the superproject out (JobSpec.dependency).
  std::string repository;
  v1::DependencyDescent dependency;
  // kSuite only: the metric that leads the follow-up's search and the metrics it answers for
  // (MetricSpec.lead and members).
  std::string lead;
  std::vector<std::string> members;
  // kRevertCheck only: the change the follow-up tries (JobSpec.try_change).
  v1::TryChange try_change;
};

// A pin file (JobSpec.descend_pins) the culprit changed: the commits it pins at last-good and
// at the culprit, read by the caller (PinnedCommit). An empty sha: the file pins nothing there.
struct PinMove {
  v1::DependencyPin pin;
  std::string old_sha;
  std::string new_sha;
};

// True when the result asks for the merged branch to be bisected: the culprit is a merge, the
// spec descends merges, and the depth allows another level.
bool WantsMergedBranch(const v1::JobStatus& status);

// True when the result asks for its pin files (JobSpec.descend_pins) to be read at last-good
// and at the culprit: a culprit was found, the spec names pins, the job is not itself a
// dependency follow-up (pins are the top superproject's), and the depth allows another level.
bool WantsPinFiles(const v1::JobStatus& status);

// True when the result asks for its culprit to be reverted at BAD and measured: the spec asks
// (verify_revert), the culprit was found and confirmed, the job is a regression's bisect (not a
// fix's, not a try, not a dependency's: the revert would be of another repository's commit),
// and the depth allows another level.
bool WantsRevertCheck(const v1::JobStatus& status);

// What a revert check of `status`'s culprit is before it is measured: the culprit, BAD (where it
// is reverted) and the GOOD->BAD regression. Its state is unset. Pure.
v1::RevertCheck RevertCheckOf(const v1::JobStatus& status);

// The revert check's follow-up: BAD against `change`'s commit `revert_sha`, which reverts the
// culprit on BAD.
PlannedFollowUp PlanRevertCheck(const v1::JobStatus& status, const std::string& revert_sha,
                                const v1::TryChange& change);

// The parent's revert check once its follow-up `child` (job `child_id`) ended: the revert's
// ratio against BAD and its interval from the child's pairs, and the share of the parent's
// GOOD->BAD regression it recovers (BootstrapRecoveredShare over the parent's baselines and the
// child's pairs, each scaled to its own BAD median). STATE_FAILED with the reason when the child
// measured no pair. Pure.
v1::RevertCheck RevertCheckResult(const v1::JobStatus& parent, const std::string& child_id,
                                  const v1::JobStatus& child);

// The commit a pin file's `content` names: its first line that is a full commit id (40 hex
// digits) once surrounding whitespace is trimmed, lower-cased; nullopt when no line is. Pure.
std::optional<std::string> PinnedCommit(std::string_view content);

// The follow-ups the finished job `status` calls for, in start order. A suite's ranges come
// last, one per range of its SEARCHING rows (in the order of the rows), when the job found its
// culprit or its lead did not move (then its whole range is searched again for the metrics that
// did). `merged_branch` is the
// range (base, tip) of the culprit's merged branch when WantsMergedBranch, resolved by the
// caller; nullopt when it could not be resolved (no merged-branch follow-up then). With
// JobSpec.descend_submodules, each of status.submodule_bumps that moved forward (both commits
// known, read without error) gets a dependency follow-up (from a dependency follow-up, with its
// descent as the new one's `outer`); `pins` (read by the caller when WantsPinFiles; ignored
// from a dependency follow-up) each get one when both of their commits are known and differ. A bump
// or pin that cannot be descended into adds a sentence saying why to `warnings` (may be null).
std::vector<PlannedFollowUp> PlanFollowUps(
    const v1::JobStatus& status,
    const std::optional<std::pair<std::string, std::string>>& merged_branch,
    const std::vector<PinMove>& pins = {}, std::vector<std::string>* warnings = nullptr);

// The spec of a planned follow-up of job `parent_id`: the parent's, over the planned range, one
// level deeper, with its kind recorded. A dependency follow-up's repository is the
// dependency's, it carries the plan's DependencyDescent, and it keeps neither the parent's pins
// nor its marks (both name the superproject's files and commits).
v1::JobSpec FollowUpSpec(const v1::JobSpec& parent, const std::string& parent_id,
                         const PlannedFollowUp& plan);

// The request id of a follow-up ("<parent>/<kind>", "<parent>/dependency:<path>" for a
// dependency's): a restarted coordinator finds it again.
std::string FollowUpRequestId(const std::string& parent_id, v1::FollowUpKind kind);
std::string FollowUpRequestId(const std::string& parent_id, const PlannedFollowUp& plan);

// Folds the finished follow-ups (job id, status) into their parent's `status`: a suite
// follow-up's rows fill the parent's SEARCHING rows of the same metrics (a culprit, with its
// index in the parent's range, or why there is none), and the suite rows still SEARCHING after
// that are unresolved; their bench runs
// count, a merged branch's culprit becomes merged_culprit, the steps' culprits join the parent's
// with their share of the whole move, ranked by size, a dependency's culprit joins
// dependency_culprits (with the path, the repository and the dependency's two commits), and so
// do the dependency's own (nested: their paths prefixed with its path); a follow-up without a
// culprit adds a warning saying why.
// A revert check's result becomes revert_check (RevertCheckResult) and a warning fact.
void FoldFollowUpResults(const std::vector<std::pair<std::string, const v1::JobStatus*>>& done,
                         v1::JobStatus* status);

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_FOLLOW_UPS_H_
