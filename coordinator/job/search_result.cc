// Copyright 2026 The kbisect Authors.
#include "coordinator/job/search_result.h"

#include "absl/status/statusor.h"
#include "common/search/culprit_posterior.h"
#include "coordinator/job/confidence_stop.h"
#include "coordinator/job/flaky_verdicts.h"
#include "coordinator/job/job_event_log.h"
#include "coordinator/job/job_text.h"
#include "coordinator/job/measurement_changes.h"
#include "coordinator/job/probe_classifier.h"

namespace kbisect {
namespace {

// The culprit posterior reports at most this many positions, each at least this probable.
constexpr int kPosteriorPositions = 5;
constexpr double kPosteriorMinProbability = 0.001;

}  // namespace

std::vector<v1::JobWarning> SearchResult::RecordInterval() {
  const std::vector<v1::CommitRef>& commits = *commits_;
  const std::vector<int> candidates = ledger_->search().Candidates();
  const int last_good = ledger_->search().last_good();
  const int first_bad = ledger_->search().first_bad();
  std::vector<v1::JobWarning> warnings;
  answer_.last_good = commits[last_good];
  for (int index : candidates) answer_.candidates.push_back(commits[index].sha());
  answer_.before = calibration_->MedianAt(last_good);
  answer_.after = calibration_->MedianAt(first_bad);
  answer_.culprit_regression_pct =
      RegressionPercent(answer_.before, answer_.after, frame_->direction);
  if (candidates.size() == 1 && !calibration_->pass_fail()) {
    const double total = frame_->bad_baseline().median() - frame_->good_baseline().median();
    const double share = total == 0 ? 1 : (answer_.after - answer_.before) / total;
    v1::Culprit& step = answer_.culprits.emplace_back();
    *step.mutable_commit() = commits[first_bad];
    step.set_before(answer_.before);
    step.set_after(answer_.after);
    step.set_regression_pct(answer_.culprit_regression_pct);
    step.set_share_of_total(share);
    if (share < kSingleStepShare) {
      answer_.multiple_steps = true;
      v1::JobWarning::MultipleSteps& fact = *warnings.emplace_back().mutable_multiple_steps();
      fact.set_share(share);
      fact.set_all_culprits(frame_->spec.all_culprits());
      fact.set_first_bad(commits[first_bad].sha());
      fact.set_bad(frame_->bad_sha);
      fact.set_good(frame_->good_sha);
      fact.set_last_good(commits[last_good].sha());
    }
  }
  if (candidates.size() == 1 && commits[first_bad].is_merge()) {
    v1::JobWarning::MergeCulprit& fact = *warnings.emplace_back().mutable_merge_culprit();
    fact.set_culprit(commits[first_bad].sha());
    fact.set_descend_merges(frame_->spec.descend_merges());
  }
  return warnings;
}

void SearchResult::AdoptConfirmedRatio(double ratio) {
  answer_.after = answer_.before * ratio;
  answer_.culprit_regression_pct =
      RegressionPercent(answer_.before, answer_.after, frame_->direction);
}

SearchResult::Conclusion SearchResult::Conclude() {
  const std::vector<v1::CommitRef>& commits = *commits_;
  const std::vector<int> candidates = ledger_->search().Candidates();
  const int last_good = ledger_->search().last_good();
  const int first_bad = ledger_->search().first_bad();
  Conclusion out;
  if (candidates.size() == 1) {
    answer_.culprit = commits[first_bad];
    answer_.cause = v1::CAUSE_REAL_REGRESSION;
    // A culprit that changed how the benchmark measures is a method change, named.
    const std::vector<ManifestChange> changes = MethodChangesAt(*probes_, last_good, first_bad);
    if (!changes.empty()) {
      answer_.cause = v1::CAUSE_BENCHMARK_METHOD_CHANGE;
      google::protobuf::RepeatedPtrField<std::string> described;
      for (const ManifestChange& change : changes) {
        answer_.measurement_changes.push_back(change.Describe());
        *described.Add() = answer_.measurement_changes.back();
      }
      *out.warnings.emplace_back().mutable_method_change()->mutable_changes() = described;
    }
    SetCulpritProbability();
    out.outcome = v1::OUTCOME_CULPRIT_FOUND;
  } else if (static_cast<int>(candidates.size()) <= kMaxReportedCandidates) {
    answer_.cause = v1::CAUSE_REAL_REGRESSION;
    SetCulpritProbability();
    out.outcome = v1::OUTCOME_CANDIDATES_FOUND;
  } else {
    out.outcome = v1::OUTCOME_INCONCLUSIVE;
    out.error = InconclusiveText(static_cast<int>(candidates.size()) - 1, commits[last_good].sha(),
                                 commits[first_bad].sha());
  }
  return out;
}

void SearchResult::SetCulpritProbability() {
  const BisectSearch& search = ledger_->search();
  // The posterior's model is a first-parent path, where bad is monotone; over a commit graph it
  // would misplace the mass, so a graph search reports no probability (docs/decisions.md 151).
  if (search.graph() != nullptr) return;
  const bool pass_fail = calibration_->pass_fail();
  // A flaky test: every run counts, and the two fail rates are estimated (flaky_verdicts.h).
  const bool flaky = pass_fail && frame_->spec.flaky();
  const absl::StatusOr<CulpritPosterior> posterior =
      flaky ? ComputeCulpritPosterior(frame_->commit_count, FlakyEvidence(*probes_, *calibration_),
                                      FlakyPosteriorOptions())
            : ComputeCulpritPosterior(
                  frame_->commit_count,
                  PosteriorEvidence(*probes_, confirmation_->confirmation(), *calibration_,
                                    pass_fail, search.last_good(), search.first_bad()));
  if (!posterior.ok()) return;  // Nothing to say (no commits); the answer stands.
  if (flaky) {
    answer_.good_fail_rate = posterior->good_fail_rate;
    answer_.bad_fail_rate = posterior->bad_fail_rate;
  }
  answer_.culprit_probability = posterior->MassOf(search.Candidates());
  answer_.culprit_posterior.clear();
  for (int k : posterior->Top(kPosteriorPositions, kPosteriorMinProbability)) {
    v1::PositionProbability& position = answer_.culprit_posterior.emplace_back();
    position.set_sha((*commits_)[k].sha());
    position.set_index(k);
    position.set_probability(posterior->probability[k]);
  }
}

}  // namespace kbisect
