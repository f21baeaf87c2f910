// Copyright 2026 The kbisect Authors.
//
// BisectJob, a flaky pass/fail test (--exit-code --flaky), searched by information (decision
// 144; its endpoints are EndpointVerdict's): where each probe goes (the commits whose results are
// expected to tell the most about the culprit, given those running), and the end of the search once
// the posterior over every run names a culprit with the confidence. The rules are
// flaky_verdicts.h's.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/job/bisect_job.h"
#include "coordinator/job/flaky_verdicts.h"
#include "coordinator/job/job_text.h"

namespace kbisect {

void BisectJob::ClassifyFlaky(int probe_position, absl::Time now) {
  if (book_.probe(probe_position).verdict() != v1::VERDICT_UNSPECIFIED) return;  // Search over.
  ledger_.search().Abandon(book_.probe(probe_position).index());
  const int round = book_.probe(probe_position).round();
  ledger_.CountStep(round);
  const absl::StatusOr<CulpritPosterior> posterior =
      FlakyPosteriorWithin(frame_.commit_count, book_.rows(), calibration_, ledger_.search());
  if (!posterior.ok()) {  // Not for a valid job: every count comes from its own probes.
    book_.mutable_probe(probe_position).set_message(std::string(posterior.status().message()));
    ApplyVerdict(probe_position, v1::VERDICT_SKIP, now);
    return;
  }
  const v1::Probe& probe = book_.probe(probe_position);
  const RunCounts counts = CountRuns(probe);
  const int likeliest = posterior->most_likely;
  v1::JobEvent run;
  v1::FlakyRunFact& fact = *run.mutable_flaky_run();
  fact.set_step(ledger_.steps());
  fact.set_sha(probe.sha());
  fact.set_failures(counts.failures);
  fact.set_runs(counts.runs());
  fact.set_likeliest_sha(commits_[likeliest].sha());
  fact.set_likeliest_probability(posterior->probability[likeliest]);
  book_.mutable_probe(probe_position).set_message(EventWords(run));
  Emit(v1::JOB_EVENT_KIND_PROBE_FINISHED, std::move(run), &book_.probe(probe_position), now);

  int search_runs = 0;
  for (const v1::Probe& row : book_.rows()) {
    if (row.kind() == v1::PROBE_KIND_BISECT) search_runs += CountRuns(row).runs();
  }
  bool running = false;
  for (const auto& [id, entry] : book_.tasks()) {
    running = running || (!entry.done && entry.task.kind() == v1::PROBE_KIND_BISECT);
  }
  const int max_runs = frame_.spec.max_runs();
  const FlakyStep step = NextFlakyStep(
      *posterior, frame_.spec.confidence(), search_runs,
      FlakyRunBudget(frame_.commit_count, max_runs),
      /*nothing_left=*/!running &&
          FlakyPoints(frame_.commit_count, max_runs, calibration_, book_, ledger_.search(), 1)
              .empty());
  if (step.culprit < 0) return;
  if (step.short_of_confidence) {
    v1::JobWarning warning;
    v1::JobWarning::ShortOfConfidence& fact = *warning.mutable_short_of_confidence();
    fact.set_probability(posterior->probability[step.culprit]);
    fact.set_confidence(frame_.spec.confidence());
    fact.set_max_runs(max_runs);
    Warn(std::move(warning));
  }
  // The search ends: every probe gets the side the named culprit puts it on, and the search's
  // interval closes on the culprit.
  for (int row = 0; row < book_.probe_count(); ++row) {
    v1::Probe& measured = book_.mutable_probe(row);
    if (measured.kind() != v1::PROBE_KIND_BISECT || measured.state() != v1::PROBE_STATE_FINISHED ||
        measured.verdict() != v1::VERDICT_UNSPECIFIED) {
      continue;
    }
    const bool bad = measured.index() >= step.culprit;
    measured.set_verdict(bad ? v1::VERDICT_BAD : v1::VERDICT_GOOD);
    (void)ledger_.search().Record(measured.index(), bad ? v1::VERDICT_BAD : v1::VERDICT_GOOD);
  }
  if (step.culprit - 1 > ledger_.search().last_good())
    (void)ledger_.search().Record(step.culprit - 1, v1::VERDICT_GOOD);
  if (step.culprit < ledger_.search().first_bad())
    (void)ledger_.search().Record(step.culprit, v1::VERDICT_BAD);
  ledger_.ShowInterval();
  CancelUseless(now);
}

}  // namespace kbisect
