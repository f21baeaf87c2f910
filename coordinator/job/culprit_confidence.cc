// Copyright 2026 The kbisect Authors.
#include "coordinator/job/culprit_confidence.h"

#include "absl/strings/str_cat.h"
#include "common/metric/percent.h"
#include "coordinator/job/confidence_stop.h"
#include "coordinator/job/job_text.h"

namespace kbisect {

absl::StatusOr<CulpritPosterior> CulpritConfidence::Posterior() const {
  return ComputeCulpritPosterior(
      frame_->commit_count,
      PosteriorEvidence(book_->rows(), confirmation_->confirmation(), *calibration_,
                        /*pass_fail=*/false, ledger_->search().last_good(),
                        ledger_->search().first_bad()));
}

CulpritConfidence::EndCheck CulpritConfidence::CheckCulprit() const {
  EndCheck out;
  if (calibration_->pass_fail()) return out;
  const double confidence = frame_->spec.confidence();
  if (confidence <= 0 || ledger_->search().Candidates().size() != 1) return out;
  for (const v1::Probe& probe : book_->rows()) {
    if (probe.kind() == v1::PROBE_KIND_BISECT &&
        (probe.state() == v1::PROBE_STATE_PENDING || probe.state() == v1::PROBE_STATE_RUNNING)) {
      out.wait = true;  // A boundary commit is measured again.
      return out;
    }
  }
  const absl::StatusOr<CulpritPosterior> posterior = Posterior();
  if (!posterior.ok()) return out;
  const int last_good = ledger_->search().last_good();
  const int first_bad = ledger_->search().first_bad();
  const int max_runs = frame_->spec.max_runs();
  const int good_row = DecidingProbe(book_->rows(), last_good, v1::VERDICT_GOOD);
  const int bad_row = DecidingProbe(book_->rows(), first_bad, v1::VERDICT_BAD);
  // A marked commit or an endpoint has no probe to extend: it has run all it may.
  const int good_runs = good_row < 0 ? max_runs : book_->probe(good_row).samples_size();
  const int bad_runs = bad_row < 0 ? max_runs : book_->probe(bad_row).samples_size();
  const ConfidenceCheck check =
      CheckConfidence(*posterior, last_good, first_bad, good_runs, bad_runs, confidence,
                      frame_->spec.runs_per_commit(), max_runs);
  if (check.remeasure < 0) {
    if (check.probability < confidence) {
      v1::JobWarning::ShortOfConfidence& fact =
          *out.warning.emplace().mutable_short_of_confidence();
      fact.set_probability(check.probability);
      fact.set_confidence(confidence);
      fact.set_max_runs(max_runs);
    }
    return out;
  }
  out.wait = true;
  out.extend_row = check.remeasure == last_good ? good_row : bad_row;
  out.more_runs = check.more_runs;
  v1::JobWarning::ConfidenceRemeasure& fact = *out.event.mutable_confidence_remeasure();
  fact.set_probability(check.probability);
  fact.set_confidence(confidence);
  fact.set_sha((*commits_)[check.remeasure].sha());
  fact.set_runs(check.more_runs);
  return out;
}

std::optional<CulpritConfidence::Reversal> CulpritConfidence::Reverse(int probe_position) const {
  const absl::StatusOr<CulpritPosterior> posterior = Posterior();
  if (!posterior.ok()) return std::nullopt;  // Not for a valid job; the verdict stands.
  const v1::Probe& probe = book_->probe(probe_position);
  const v1::Verdict side = RemeasuredSide(*posterior, probe.index(), probe.verdict());
  if (side == probe.verdict()) return std::nullopt;  // It stands; the end check decides next.
  Reversal out;
  out.side = side;
  v1::JobWarning::ConfidenceRetracted& fact = *out.warning.mutable_confidence_retracted();
  fact.set_sha(probe.sha());
  fact.set_bad(side == v1::VERDICT_BAD);
  fact.set_bad_probability(BadProbability(*posterior, probe.index()));
  return out;
}

CulpritConfidence::Side CulpritConfidence::Resolve(int probe_position, v1::Verdict verdict) const {
  Side out;
  out.verdict = verdict;
  if (verdict != v1::VERDICT_AMBIGUOUS || frame_->spec.confidence() <= 0) return out;
  const absl::StatusOr<CulpritPosterior> posterior = Posterior();
  if (!posterior.ok()) return out;
  const double bad = BadProbability(*posterior, book_->probe(probe_position).index());
  out.verdict = bad >= 0.5 ? v1::VERDICT_BAD : v1::VERDICT_GOOD;
  out.note =
      absl::StrCat("; taken as ", bad >= 0.5 ? "BAD" : "GOOD",
                   ", the side the posterior puts it on (P(bad) = ", FormatPercent(100 * bad), ")");
  return out;
}

}  // namespace kbisect
