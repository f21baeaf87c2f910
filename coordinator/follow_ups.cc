// Copyright 2026 The kbisect Authors.
#include "coordinator/follow_ups.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/rpc/enum_label.h"

namespace kbisect {

const char* FollowUpKindName(FollowUpKind kind) {
  switch (kind) {
    case FollowUpKind::kMergedBranch:
      return "merged_branch";
    case FollowUpKind::kStepsBefore:
      return "steps_before";
    case FollowUpKind::kStepsAfter:
      return "steps_after";
  }
  return "";
}

std::optional<FollowUpKind> ParseFollowUpKind(std::string_view name) {
  for (FollowUpKind kind :
       {FollowUpKind::kMergedBranch, FollowUpKind::kStepsBefore, FollowUpKind::kStepsAfter}) {
    if (name == FollowUpKindName(kind)) return kind;
  }
  return std::nullopt;
}

const char* FollowUpEventPrefix(FollowUpKind kind) {
  switch (kind) {
    case FollowUpKind::kMergedBranch:
      return "[merged branch] ";
    case FollowUpKind::kStepsBefore:
      return "[before the culprit] ";
    case FollowUpKind::kStepsAfter:
      return "[after the culprit] ";
  }
  return "";
}

namespace {

bool MayFollowUp(const v1::JobStatus& status) {
  return status.status() == v1::OUTCOME_CULPRIT_FOUND &&
         status.spec().follow_up_depth() < kMaxFollowUpDepth;
}

}  // namespace

bool WantsMergedBranch(const v1::JobStatus& status) {
  return MayFollowUp(status) && status.spec().descend_merges() && status.culprit().is_merge();
}

std::vector<PlannedFollowUp> PlanFollowUps(
    const v1::JobStatus& status,
    const std::optional<std::pair<std::string, std::string>>& merged_branch) {
  std::vector<PlannedFollowUp> planned;
  if (!MayFollowUp(status)) return planned;
  if (WantsMergedBranch(status) && merged_branch.has_value()) {
    planned.push_back({FollowUpKind::kMergedBranch, merged_branch->first, merged_branch->second});
  }
  if (status.spec().all_culprits() && status.multiple_steps()) {
    if (status.last_good().sha() != status.good_sha()) {
      planned.push_back({FollowUpKind::kStepsBefore, status.good_sha(), status.last_good().sha()});
    }
    if (status.culprit().sha() != status.bad_sha()) {
      planned.push_back({FollowUpKind::kStepsAfter, status.culprit().sha(), status.bad_sha()});
    }
  }
  return planned;
}

v1::JobSpec FollowUpSpec(const v1::JobSpec& parent, const std::string& parent_id,
                         const PlannedFollowUp& plan) {
  v1::JobSpec spec = parent;
  spec.set_good(plan.good);
  spec.set_bad(plan.bad);
  spec.set_parent_job_id(parent_id);
  spec.set_follow_up(FollowUpKindName(plan.kind));
  spec.set_follow_up_depth(parent.follow_up_depth() + 1);
  spec.set_description(absl::StrCat(FollowUpKindName(plan.kind), " of ", parent_id));
  return spec;
}

std::string FollowUpRequestId(const std::string& parent_id, FollowUpKind kind) {
  return absl::StrCat(parent_id, "/", FollowUpKindName(kind));
}

void FoldFollowUpResults(const std::vector<std::pair<std::string, const v1::JobStatus*>>& done,
                         v1::JobStatus* status) {
  const double total = status->baseline().bad().median() - status->baseline().good().median();
  for (const auto& [child, result] : done) {
    const bool merged =
        ParseFollowUpKind(result->spec().follow_up()) == FollowUpKind::kMergedBranch;
    status->set_bench_runs(status->bench_runs() + result->bench_runs());
    const std::string range =
        absl::StrCat(merged ? "the merged branch " : "", result->good_sha().substr(0, 7), "..",
                     result->bad_sha().substr(0, 7), " (job ", child, ")");
    if (result->status() == v1::OUTCOME_NO_REGRESSION) {
      status->add_warnings(absl::StrCat("no further step in ", range, ": ", result->error()));
      continue;
    }
    if (result->status() != v1::OUTCOME_CULPRIT_FOUND) {
      status->add_warnings(
          absl::StrCat(range, " gave no culprit: ",
                       result->error().empty() ? EnumLabel(result->status()) : result->error()));
      continue;
    }
    if (merged) {
      *status->mutable_merged_culprit() = result->culprit();
      continue;
    }
    for (const v1::Culprit& step : result->culprits()) {
      v1::Culprit* added = status->add_culprits();
      *added = step;
      added->set_share_of_total(total == 0 ? 0 : (step.after() - step.before()) / total);
    }
  }
  if (status->culprits_size() > 1) {
    std::stable_sort(status->mutable_culprits()->begin(), status->mutable_culprits()->end(),
                     [](const v1::Culprit& a, const v1::Culprit& b) {
                       return std::fabs(a.after() - a.before()) > std::fabs(b.after() - b.before());
                     });
  }
}

}  // namespace kbisect
