// Copyright 2026 The kbisect Authors.
#include "coordinator/follow_ups.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/rpc/enum_label.h"
#include "common/stats/stats.h"
#include "coordinator/job/probe_classifier.h"
#include "coordinator/job/suite_ledger.h"
#include "report/event_words.h"

namespace kbisect {

const char* FollowUpEventPrefix(v1::FollowUpKind kind) {
  switch (kind) {
    case v1::FOLLOW_UP_KIND_MERGED_BRANCH:
      return "[merged branch] ";
    case v1::FOLLOW_UP_KIND_STEPS_BEFORE:
      return "[before the culprit] ";
    case v1::FOLLOW_UP_KIND_STEPS_AFTER:
      return "[after the culprit] ";
    case v1::FOLLOW_UP_KIND_DEPENDENCY:
      return "[dependency] ";
    case v1::FOLLOW_UP_KIND_SUITE:
      return "[suite] ";
    case v1::FOLLOW_UP_KIND_REVERT_CHECK:
      return "[revert check] ";
    default:
      return "";
  }
}

namespace {

bool MayFollowUp(const v1::JobStatus& status) {
  return status.status() == v1::OUTCOME_CULPRIT_FOUND &&
         status.spec().follow_up_depth() < kMaxFollowUpDepth;
}

bool IsFullCommitSha(std::string_view text) {
  return text.size() == 40 && std::all_of(text.begin(), text.end(), [](char c) {
           return absl::ascii_isxdigit(static_cast<unsigned char>(c));
         });
}

PlannedFollowUp PlannedRange(v1::FollowUpKind kind, std::string good, std::string bad) {
  PlannedFollowUp plan;
  plan.kind = kind;
  plan.good = std::move(good);
  plan.bad = std::move(bad);
  return plan;
}

PlannedFollowUp PlannedDependency(const v1::JobStatus& status, v1::DependencyKind kind,
                                  const std::string& path, const std::string& repository,
                                  const std::string& old_sha, const std::string& new_sha) {
  PlannedFollowUp plan = PlannedRange(v1::FOLLOW_UP_KIND_DEPENDENCY, old_sha, new_sha);
  plan.repository = repository;
  plan.dependency.set_kind(kind);
  plan.dependency.set_superproject(status.spec().repository());
  plan.dependency.set_superproject_sha(status.culprit().sha());
  plan.dependency.set_path(path);
  // From a dependency follow-up: its own superproject is checked out as its descent says.
  if (status.spec().has_dependency()) *plan.dependency.mutable_outer() = status.spec().dependency();
  return plan;
}

// A suite's ranges (SUITE_METRIC_STATE_SEARCHING rows), once each, in the order of their first row:
// led by the metric of the range that moved most.
void PlanSuiteFollowUps(const v1::JobStatus& status, std::vector<PlannedFollowUp>* planned) {
  if (!SuiteFollowsUp(status.status(), status.spec())) return;
  std::vector<PlannedFollowUp> ranges;
  std::vector<double> moved;  // The lead's move, by range.
  for (const v1::SuiteMetricResult& row : status.suite()) {
    if (row.state() != v1::SUITE_METRIC_STATE_SEARCHING) continue;
    auto range = std::find_if(ranges.begin(), ranges.end(), [&](const PlannedFollowUp& plan) {
      return plan.good == row.last_good().sha() && plan.bad == row.first_bad().sha();
    });
    if (range == ranges.end()) {
      ranges.push_back(
          PlannedRange(v1::FOLLOW_UP_KIND_SUITE, row.last_good().sha(), row.first_bad().sha()));
      moved.push_back(-1);
      range = ranges.end() - 1;
    }
    range->members.push_back(row.name());
    double& most = moved[range - ranges.begin()];
    if (std::fabs(row.regression_pct()) > most) {
      most = std::fabs(row.regression_pct());
      range->lead = row.name();
    }
  }
  for (PlannedFollowUp& range : ranges) planned->push_back(std::move(range));
}

// The index in the parent's range of a follow-up's `commit` whose GOOD is the parent's `base`.
v1::CommitRef InParentRange(v1::CommitRef commit, const v1::CommitRef& base) {
  commit.set_index(commit.index() + base.index());
  return commit;
}

// Fills the parent's SEARCHING suite rows from a finished suite follow-up's rows.
void FoldSuiteRows(const std::string& child, const v1::JobStatus& result, const std::string& range,
                   v1::JobStatus* status) {
  for (const v1::SuiteMetricResult& found : result.suite()) {
    auto row = std::find_if(status->mutable_suite()->begin(), status->mutable_suite()->end(),
                            [&](const v1::SuiteMetricResult& r) {
                              return r.name() == found.name() &&
                                     r.state() == v1::SUITE_METRIC_STATE_SEARCHING;
                            });
    if (row == status->mutable_suite()->end()) continue;
    const v1::CommitRef base = row->last_good();
    if (found.state() == v1::SUITE_METRIC_STATE_CULPRIT) {
      row->set_state(v1::SUITE_METRIC_STATE_CULPRIT);
      *row->mutable_culprit() = InParentRange(found.culprit(), base);
      *row->mutable_last_good() = InParentRange(found.last_good(), base);
      row->clear_first_bad();
      row->set_before(found.before());
      row->set_after(found.after());
      row->set_culprit_regression_pct(found.culprit_regression_pct());
      row->set_job_id(found.job_id());
      continue;
    }
    row->set_state(v1::SUITE_METRIC_STATE_UNRESOLVED);
    row->set_job_id(child);
    const std::string why =
        !found.reason().empty()
            ? found.reason()
            : (result.error().empty() ? EnumLabel(result.status()) : result.error());
    row->set_reason(absl::StrCat(range, " gave no culprit: ",
                                 found.state() == v1::SUITE_METRIC_STATE_UNCHANGED
                                     ? absl::StrCat("its endpoints measured the same (", why, ")")
                                     : why));
  }
}

// The suite rows whose follow-up did not start or did not answer for them.
void EndSearchingRows(v1::JobStatus* status) {
  for (v1::SuiteMetricResult& row : *status->mutable_suite()) {
    if (row.state() != v1::SUITE_METRIC_STATE_SEARCHING) continue;
    row.set_state(v1::SUITE_METRIC_STATE_UNRESOLVED);
    row.set_reason(absl::StrCat("its step lies after ", row.last_good().short_sha(),
                                ", at or before ", row.first_bad().short_sha(),
                                ", and no follow-up answered for it (see the warnings)"));
  }
}

}  // namespace

bool WantsMergedBranch(const v1::JobStatus& status) {
  return MayFollowUp(status) && status.spec().descend_merges() && status.culprit().is_merge();
}

bool WantsRevertCheck(const v1::JobStatus& status) {
  const v1::JobSpec& spec = status.spec();
  return MayFollowUp(status) && spec.verify_revert() && status.confirmation().confirmed() &&
         !spec.find_fix() && !spec.has_try_change() && !spec.has_dependency() &&
         !status.culprit().sha().empty() && !status.bad_sha().empty();
}

v1::RevertCheck RevertCheckOf(const v1::JobStatus& status) {
  v1::RevertCheck check;
  check.set_culprit_sha(status.culprit().sha());
  check.set_base_sha(status.bad_sha());
  check.set_regression_pct(status.regression_pct());
  return check;
}

PlannedFollowUp PlanRevertCheck(const v1::JobStatus& status, const std::string& revert_sha,
                                const v1::TryChange& change) {
  PlannedFollowUp plan =
      PlannedRange(v1::FOLLOW_UP_KIND_REVERT_CHECK, status.bad_sha(), revert_sha);
  plan.try_change = change;
  return plan;
}

namespace {

// The samples of `values` divided by `scale`.
std::vector<double> Scaled(const google::protobuf::RepeatedField<double>& values, double scale) {
  std::vector<double> out;
  for (double value : values) out.push_back(value / scale);
  return out;
}

}  // namespace

v1::RevertCheck RevertCheckResult(const v1::JobStatus& parent, const std::string& child_id,
                                  const v1::JobStatus& child) {
  v1::RevertCheck check = RevertCheckOf(parent);
  check.set_job_id(child_id);
  check.set_revert_sha(child.bad_sha());
  const v1::Confirmation& pairs = child.confirmation();
  // BAD's and the reverted BAD's samples of every set, each set scaled to its own BAD median
  // (a worker's offset cancels); GOOD from the parent's baselines, scaled to its BAD's.
  std::vector<double> bad;
  std::vector<double> reverted;
  for (const v1::ConfirmationPairs& set : pairs.sets()) {
    const double scale = MedianOrZero(set.last_good_samples());
    if (scale == 0 || set.culprit_samples_size() == 0) continue;
    for (double v : Scaled(set.last_good_samples(), scale)) bad.push_back(v);
    for (double v : Scaled(set.culprit_samples(), scale)) reverted.push_back(v);
  }
  const double parent_bad = parent.baseline().bad().median();
  if (pairs.ratio() == 0 || bad.empty() || parent_bad == 0) {
    check.set_state(v1::RevertCheck::STATE_FAILED);
    check.set_error(child.error().empty() ? absl::StrCat("job ", child_id, " measured no pair (",
                                                         EnumLabel(child.status()), ")")
                                          : child.error());
    return check;
  }
  check.set_state(v1::RevertCheck::STATE_DONE);
  check.set_ratio(pairs.ratio());
  check.set_ci_low(pairs.ci_low());
  check.set_ci_high(pairs.ci_high());
  check.set_significant(pairs.confirmed());
  const std::vector<double> good = Scaled(parent.baseline().good().samples(), parent_bad);
  absl::StatusOr<ShareInterval> share =
      BootstrapRecoveredShare(good, bad, reverted, BootstrapOptions{});
  if (!share.ok()) {
    check.set_state(v1::RevertCheck::STATE_FAILED);
    check.set_error(std::string(share.status().message()));
    return check;
  }
  check.set_recovered_share(share->estimate);
  check.set_share_low(share->lower);
  check.set_share_high(share->upper);
  return check;
}

bool WantsPinFiles(const v1::JobStatus& status) {
  return MayFollowUp(status) && status.spec().descend_pins_size() > 0 &&
         !status.spec().has_dependency();
}

std::optional<std::string> PinnedCommit(std::string_view content) {
  // This abseil's string_view is its own type, not std::string_view.
  for (absl::string_view line :
       absl::StrSplit(absl::string_view(content.data(), content.size()), '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (IsFullCommitSha(std::string_view(line.data(), line.size()))) {
      return absl::AsciiStrToLower(line);
    }
  }
  return std::nullopt;
}

std::vector<PlannedFollowUp> PlanFollowUps(
    const v1::JobStatus& status,
    const std::optional<std::pair<std::string, std::string>>& merged_branch,
    const std::vector<PinMove>& pins, std::vector<std::string>* warnings) {
  std::vector<PlannedFollowUp> planned;
  if (!MayFollowUp(status)) {
    PlanSuiteFollowUps(status, &planned);
    return planned;
  }
  auto warn = [&](std::string text) {
    if (warnings != nullptr) warnings->push_back(std::move(text));
  };
  if (WantsMergedBranch(status) && merged_branch.has_value()) {
    planned.push_back(PlannedRange(v1::FOLLOW_UP_KIND_MERGED_BRANCH, merged_branch->first,
                                   merged_branch->second));
  }
  if (status.spec().all_culprits() && status.multiple_steps()) {
    if (status.last_good().sha() != status.good_sha()) {
      planned.push_back(PlannedRange(v1::FOLLOW_UP_KIND_STEPS_BEFORE, status.good_sha(),
                                     status.last_good().sha()));
    }
    if (status.culprit().sha() != status.bad_sha()) {
      planned.push_back(
          PlannedRange(v1::FOLLOW_UP_KIND_STEPS_AFTER, status.culprit().sha(), status.bad_sha()));
    }
  }
  // A dependency follow-up descends into its own submodules (nested, its descent as their
  // `outer`), never into pin files: those are the top superproject's (WantsPinFiles).
  if (status.spec().descend_submodules()) {
    for (const v1::SubmoduleBump& bump : status.submodule_bumps()) {
      const std::string cannot =
          absl::StrCat("cannot descend into submodule '", bump.path(), "': ");
      if (!bump.error().empty()) {
        warn(absl::StrCat(cannot, bump.error()));
      } else if (bump.old_sha().empty() || bump.new_sha().empty()) {
        warn(absl::StrCat(cannot, "the culprit ", bump.old_sha().empty() ? "added" : "removed",
                          " it, so there is no range of its own to bisect"));
      } else if (bump.backwards()) {
        warn(absl::StrCat(cannot, "the culprit moved it back (", bump.new_sha().substr(0, 7),
                          " is ", "older than ", bump.old_sha().substr(0, 7), ")"));
      } else if (bump.commit_count() > 0) {
        planned.push_back(PlannedDependency(status, v1::DEPENDENCY_KIND_SUBMODULE, bump.path(),
                                            bump.url(), bump.old_sha(), bump.new_sha()));
      }
    }
  }
  for (const PinMove& move : pins) {
    if (status.spec().has_dependency()) break;   // Pins are the top superproject's.
    if (move.old_sha == move.new_sha) continue;  // The file changed, the pinned commit did not.
    if (move.old_sha.empty() || move.new_sha.empty()) {
      warn(absl::StrCat("cannot descend into the commit pinned in ", move.pin.file(), ": it names ",
                        "no full commit id (40 hex digits) ",
                        move.old_sha.empty() ? "before the culprit" : "at the culprit"));
      continue;
    }
    planned.push_back(PlannedDependency(status, v1::DEPENDENCY_KIND_PIN_FILE, move.pin.file(),
                                        move.pin.repository(), move.old_sha, move.new_sha));
  }
  PlanSuiteFollowUps(status, &planned);
  return planned;
}

v1::JobSpec FollowUpSpec(const v1::JobSpec& parent, const std::string& parent_id,
                         const PlannedFollowUp& plan) {
  v1::JobSpec spec = parent;
  spec.set_good(plan.good);
  spec.set_bad(plan.bad);
  spec.set_parent_job_id(parent_id);
  spec.set_follow_up(plan.kind);
  spec.set_follow_up_depth(parent.follow_up_depth() + 1);
  spec.set_description(absl::StrCat(EnumLabel(plan.kind), " of ", parent_id));
  if (plan.kind == v1::FOLLOW_UP_KIND_REVERT_CHECK) {
    // An A/B of BAD and the revert: nothing of the parent's search applies.
    *spec.mutable_try_change() = plan.try_change;
    spec.set_verify_revert(false);
    spec.set_all_culprits(false);
    spec.set_descend_merges(false);
    spec.set_descend_submodules(false);
    spec.clear_descend_pins();
    spec.clear_marks();
    spec.set_allow_improvement(true);
    spec.set_confirm(true);
    spec.set_description(
        absl::StrCat(plan.try_change.description(), " (revert check of ", parent_id, ")"));
  }
  if (plan.kind == v1::FOLLOW_UP_KIND_DEPENDENCY) {
    spec.set_repository(plan.repository);
    *spec.mutable_dependency() = plan.dependency;
    spec.clear_descend_pins();
    spec.clear_marks();
    spec.set_description(absl::StrCat("dependency ", plan.dependency.path(), " of ", parent_id));
  }
  if (plan.kind == v1::FOLLOW_UP_KIND_SUITE) {
    spec.mutable_metric()->set_lead(plan.lead);
    spec.mutable_metric()->clear_members();
    for (const std::string& member : plan.members) spec.mutable_metric()->add_members(member);
    // The parent's direction and marks were its lead's.
    spec.clear_direction();
    spec.clear_marks();
    spec.set_description(absl::StrCat("suite metrics led by ", plan.lead, " of ", parent_id));
  }
  return spec;
}

std::string FollowUpRequestId(const std::string& parent_id, v1::FollowUpKind kind) {
  return absl::StrCat(parent_id, "/", EnumLabel(kind));
}

std::string FollowUpRequestId(const std::string& parent_id, const PlannedFollowUp& plan) {
  if (plan.kind == v1::FOLLOW_UP_KIND_SUITE) {
    return absl::StrCat(FollowUpRequestId(parent_id, plan.kind), ":", plan.lead);
  }
  if (plan.kind != v1::FOLLOW_UP_KIND_DEPENDENCY) return FollowUpRequestId(parent_id, plan.kind);
  return absl::StrCat(FollowUpRequestId(parent_id, plan.kind), ":", plan.dependency.path());
}

void FoldFollowUpResults(const std::vector<std::pair<std::string, const v1::JobStatus*>>& done,
                         v1::JobStatus* status) {
  const double total = status->baseline().bad().median() - status->baseline().good().median();
  for (const auto& [child, result] : done) {
    const v1::FollowUpKind kind = result->spec().follow_up();
    const bool merged = kind == v1::FOLLOW_UP_KIND_MERGED_BRANCH;
    const bool dependency = kind == v1::FOLLOW_UP_KIND_DEPENDENCY;
    status->set_bench_runs(status->bench_runs() + result->bench_runs());
    const std::string what =
        merged
            ? "the merged branch "
            : (dependency ? absl::StrCat("the dependency ", result->spec().dependency().path(), " ")
                          : std::string());
    const std::string range = absl::StrCat(what, result->good_sha().substr(0, 7), "..",
                                           result->bad_sha().substr(0, 7), " (job ", child, ")");
    if (kind == v1::FOLLOW_UP_KIND_SUITE) {
      FoldSuiteRows(child, *result, range, status);
      continue;
    }
    if (kind == v1::FOLLOW_UP_KIND_REVERT_CHECK) {
      *status->mutable_revert_check() = RevertCheckResult(*status, child, *result);
      v1::JobWarning fact;
      *fact.mutable_revert_checked() = status->revert_check();
      status->add_warnings(RevertCheckWords(status->revert_check()));
      *status->add_warning_facts() = std::move(fact);
      continue;
    }
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
    if (dependency) {
      v1::DependencyCulprit* found = status->add_dependency_culprits();
      found->set_kind(result->spec().dependency().kind());
      found->set_path(result->spec().dependency().path());
      found->set_repository(result->spec().repository());
      found->set_old_sha(result->good_sha());
      found->set_new_sha(result->bad_sha());
      *found->mutable_commit() = result->culprit();
      found->set_job_id(child);
      // What the dependency's own descents found (its submodules', nested), under their full
      // path in this job's repository.
      for (const v1::DependencyCulprit& nested : result->dependency_culprits()) {
        v1::DependencyCulprit* lifted = status->add_dependency_culprits();
        *lifted = nested;
        lifted->set_path(absl::StrCat(found->path(), "/", nested.path()));
      }
      continue;
    }
    for (const v1::Culprit& step : result->culprits()) {
      v1::Culprit* added = status->add_culprits();
      *added = step;
      added->set_share_of_total(total == 0 ? 0 : (step.after() - step.before()) / total);
    }
  }
  EndSearchingRows(status);
  if (status->culprits_size() > 1) {
    std::stable_sort(status->mutable_culprits()->begin(), status->mutable_culprits()->end(),
                     [](const v1::Culprit& a, const v1::Culprit& b) {
                       return std::fabs(a.after() - a.before()) > std::fabs(b.after() - b.before());
                     });
  }
}

}  // namespace kbisect
