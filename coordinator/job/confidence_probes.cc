// Copyright 2026 The kbisect Authors.
//
// BisectJob, `--confidence P` with a metric: once the search has named one culprit, the end check
// measures a boundary commit again until the culprit posterior puts P on the culprit (or both
// boundaries ran --max-runs), and a commit whose new samples put it on the other side has its
// verdict taken back. The rules are confidence_stop.h's; a flaky pass/fail test has its own
// (flaky_probes.cc).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/metric/percent.h"
#include "coordinator/job/bisect_job.h"
#include "coordinator/job/confidence_stop.h"
#include "coordinator/job/job_text.h"

namespace kbisect {

bool BisectJob::CulpritNeedsRuns(absl::Time now) {
  if (pass_fail_) return false;
  const double confidence = status_.spec().confidence();
  if (confidence <= 0 || ledger_.search().Candidates().size() != 1) return false;
  for (const v1::Probe& probe : status_.probes()) {
    if (probe.kind() == v1::PROBE_KIND_BISECT &&
        (probe.state() == v1::PROBE_STATE_PENDING || probe.state() == v1::PROBE_STATE_RUNNING)) {
      return true;  // A boundary commit is measured again.
    }
  }
  const int last_good = ledger_.search().last_good();
  const int first_bad = ledger_.search().first_bad();
  const absl::StatusOr<CulpritPosterior> posterior = ComputeCulpritPosterior(
      status_.commit_count(),
      PosteriorEvidence(status_, calibration_, /*pass_fail=*/false, last_good, first_bad));
  if (!posterior.ok()) return false;
  const int max_runs = status_.spec().max_runs();
  const int good_row = DecidingProbe(status_, last_good, v1::VERDICT_GOOD);
  const int bad_row = DecidingProbe(status_, first_bad, v1::VERDICT_BAD);
  // A marked commit or an endpoint has no probe to extend: it has run all it may.
  const int good_runs = good_row < 0 ? max_runs : book_.probe(good_row).samples_size();
  const int bad_runs = bad_row < 0 ? max_runs : book_.probe(bad_row).samples_size();
  const ConfidenceCheck check =
      CheckConfidence(*posterior, last_good, first_bad, good_runs, bad_runs, confidence,
                      status_.spec().runs_per_commit(), max_runs);
  if (check.remeasure < 0) {
    if (check.probability < confidence) {
      status_.add_warnings(ShortOfConfidenceText(check.probability, confidence, max_runs));
    }
    return false;
  }
  Emit(v1::JOB_EVENT_KIND_WARNING,
       ConfidenceRemeasureText(check.probability, confidence, commits_[check.remeasure].sha(),
                               check.more_runs),
       nullptr, now);
  book_.Extend(check.remeasure == last_good ? good_row : bad_row, check.more_runs);
  return true;
}

void BisectJob::ClassifyRemeasured(int probe_position, absl::Time now) {
  const absl::StatusOr<CulpritPosterior> posterior = ComputeCulpritPosterior(
      status_.commit_count(),
      PosteriorEvidence(status_, calibration_, /*pass_fail=*/false, ledger_.search().last_good(),
                        ledger_.search().first_bad()));
  if (!posterior.ok()) return;  // Not for a valid job; the verdict stands.
  const v1::Probe& probe = book_.probe(probe_position);
  const v1::Verdict side = RemeasuredSide(*posterior, probe.index(), probe.verdict());
  if (side == probe.verdict()) return;  // It stands; the end check decides what is next.
  const std::string why = ConfidenceRetractText(probe.sha(), side == v1::VERDICT_BAD,
                                                BadProbability(*posterior, probe.index()));
  Emit(v1::JOB_EVENT_KIND_WARNING, why, &probe, now);
  ledger_.Retract({probe_position}, /*probe_again=*/false, why, now);
  // Its samples are the posterior's, not the classifier's (it has run past what the classifier
  // would ask): the side they say is its verdict, and the search goes on from it.
  book_.mutable_probe(probe_position).set_message(why);
  ApplyVerdict(probe_position, side, now);
  ClassifyPending(now);
}

v1::Verdict BisectJob::ConfidentVerdict(int probe_position, v1::Verdict verdict) {
  if (verdict != v1::VERDICT_AMBIGUOUS || status_.spec().confidence() <= 0) return verdict;
  const absl::StatusOr<CulpritPosterior> posterior = ComputeCulpritPosterior(
      status_.commit_count(),
      PosteriorEvidence(status_, calibration_, /*pass_fail=*/false, ledger_.search().last_good(),
                        ledger_.search().first_bad()));
  if (!posterior.ok()) return verdict;
  v1::Probe& probe = book_.mutable_probe(probe_position);
  const double bad = BadProbability(*posterior, probe.index());
  probe.set_message(absl::StrCat(
      probe.message(), "; taken as ", bad >= 0.5 ? "BAD" : "GOOD",
      ", the side the posterior puts it on (P(bad) = ", FormatPercent(100 * bad), ")"));
  return bad >= 0.5 ? v1::VERDICT_BAD : v1::VERDICT_GOOD;
}

}  // namespace kbisect
