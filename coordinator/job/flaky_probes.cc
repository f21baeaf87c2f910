// Copyright 2026 The kbisect Authors.
//
// BisectJob, a flaky pass/fail test (--exit-code --flaky), searched by information (decision
// 144): the endpoints, where each probe goes (the commits whose results are expected to tell
// the most about the culprit, given those running), and the end of the search once the
// posterior over every run names a culprit with the confidence. The rules are
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
namespace {

// Failures BAD runs to before the search starts: one shows the test fails there at all (never
// failing in --max-runs runs: no regression). The fail rates are estimated from every run of the
// job, the search's included, so the endpoints need no more.
constexpr int kFlakyBadFailures = 1;

}  // namespace

absl::StatusOr<CulpritPosterior> BisectJob::FlakyPosterior() const {
  absl::StatusOr<CulpritPosterior> posterior = ComputeCulpritPosterior(
      status_.commit_count(), FlakyEvidence(status_, calibration_), FlakyPosteriorOptions());
  if (!posterior.ok()) return posterior;
  return WithinInterval(*std::move(posterior), search_.last_good(), search_.first_bad());
}

std::vector<int> BisectJob::FlakyPoints(int count) const {
  if (count <= 0) return {};
  const absl::StatusOr<CulpritPosterior> posterior = FlakyPosterior();
  if (!posterior.ok()) return {};
  const int max_runs = status_.spec().max_runs();
  std::vector<int> in_flight;
  std::map<int, int> runs;  // Runs of each commit, those in flight or queued included.
  for (const auto& [id, entry] : book_.tasks()) {
    if (entry.done || entry.task.kind() != v1::PROBE_KIND_BISECT) continue;
    in_flight.push_back(entry.task.commit_index());
    runs[entry.task.commit_index()] += std::max(1, entry.task.runs());
  }
  for (const v1::Probe& probe : status_.probes()) {
    if (probe.kind() != v1::PROBE_KIND_BISECT || probe.state() != v1::PROBE_STATE_FINISHED) {
      continue;
    }
    // An untestable commit (exit 125) is not run again.
    runs[probe.index()] += probe.verdict() == v1::VERDICT_SKIP ? max_runs : CountRuns(probe).runs();
  }
  return NextFlakyProbes(*posterior, in_flight, runs, count, search_.last_good(),
                         search_.first_bad(), max_runs);
}

void BisectJob::ClassifyFlaky(int probe_position, absl::Time now) {
  if (book_.probe(probe_position).verdict() != v1::VERDICT_UNSPECIFIED) return;  // Search over.
  search_.Abandon(book_.probe(probe_position).index());
  const int round = book_.probe(probe_position).round();
  max_round_recorded_ = std::max(max_round_recorded_, round);
  status_.set_rounds(std::max(status_.rounds(), round));
  ++steps_;
  const absl::StatusOr<CulpritPosterior> posterior = FlakyPosterior();
  if (!posterior.ok()) {  // Not for a valid job: every count comes from its own probes.
    book_.mutable_probe(probe_position).set_message(std::string(posterior.status().message()));
    ApplyVerdict(probe_position, v1::VERDICT_SKIP, now);
    return;
  }
  const v1::Probe& probe = book_.probe(probe_position);
  const RunCounts counts = CountRuns(probe);
  const int likeliest = posterior->most_likely;
  const std::string text =
      FlakyRunText(steps_, probe.sha(), counts.failures, counts.runs(), commits_[likeliest].sha(),
                   posterior->probability[likeliest]);
  book_.mutable_probe(probe_position).set_message(text);
  Emit(v1::JOB_EVENT_KIND_PROBE_FINISHED, text, &book_.probe(probe_position), now);

  int search_runs = 0;
  for (const v1::Probe& row : status_.probes()) {
    if (row.kind() == v1::PROBE_KIND_BISECT) search_runs += CountRuns(row).runs();
  }
  bool running = false;
  for (const auto& [id, entry] : book_.tasks()) {
    running = running || (!entry.done && entry.task.kind() == v1::PROBE_KIND_BISECT);
  }
  const int max_runs = status_.spec().max_runs();
  const FlakyStep step =
      NextFlakyStep(*posterior, status_.spec().confidence(), search_runs,
                    FlakyRunBudget(status_.commit_count(), max_runs),
                    /*nothing_left=*/!running && FlakyPoints(1).empty());
  if (step.culprit < 0) return;
  if (step.short_of_confidence) {
    status_.add_warnings(ShortOfConfidenceText(posterior->probability[step.culprit],
                                               status_.spec().confidence(), max_runs));
  }
  // The search ends: every probe gets the side the named culprit puts it on, and the search's
  // interval closes on the culprit.
  for (int row = 0; row < status_.probes_size(); ++row) {
    v1::Probe& measured = book_.mutable_probe(row);
    if (measured.kind() != v1::PROBE_KIND_BISECT ||
        measured.state() != v1::PROBE_STATE_FINISHED ||
        measured.verdict() != v1::VERDICT_UNSPECIFIED) {
      continue;
    }
    const bool bad = measured.index() >= step.culprit;
    measured.set_verdict(bad ? v1::VERDICT_BAD : v1::VERDICT_GOOD);
    (void)search_.Record(measured.index(), bad ? Verdict::kBad : Verdict::kGood);
  }
  if (step.culprit - 1 > search_.last_good()) (void)search_.Record(step.culprit - 1, Verdict::kGood);
  if (step.culprit < search_.first_bad()) (void)search_.Record(step.culprit, Verdict::kBad);
  status_.set_last_good_index(search_.last_good());
  status_.set_first_bad_index(search_.first_bad());
  CancelUseless(now);
}

void BisectJob::EvaluateFlakyBaselines(absl::Time now) {
  const int good_position = calibration_.good_probe();
  const int bad_position = calibration_.bad_probe();
  const RunCounts good = CountRuns(book_.probe(good_position));
  const RunCounts bad = CountRuns(book_.probe(bad_position));
  const int min_runs = status_.spec().runs_per_commit();
  const int max_runs = status_.spec().max_runs();
  if (bad.failures < kFlakyBadFailures && bad.runs() < max_runs) {
    // As many runs again as it had (at least --runs): a rare flake is found in a few tasks.
    book_.Extend(bad_position, std::min(std::max(min_runs, bad.runs()), max_runs - bad.runs()));
    return;
  }
  if (bad.failures == 0) {
    Finish(v1::OUTCOME_NO_REGRESSION, FlakyPassesAtBadText(book_.probe(bad_position), bad.runs()),
           now);
    return;
  }
  if (good.failures > 0 && good.runs() < min_runs) {
    // The worker stopped at the failure: the rest of --runs says whether GOOD fails often.
    book_.Extend(good_position, min_runs - good.runs());
    return;
  }
  if (2 * good.failures > good.runs() && good.runs() < 2 * min_runs) {
    // Failing in most of a few runs happens to a GOOD that fails 5% of the time too (once in
    // two thousand jobs for 3 of 4): one more look before calling GOOD broken.
    book_.Extend(good_position, 2 * min_runs - good.runs());
    return;
  }
  if (2 * good.failures > good.runs()) {
    Finish(v1::OUTCOME_ERROR,
           FlakyFailsAtGoodText(book_.probe(good_position), good.failures, good.runs()), now);
    return;
  }
  if (status_.state() == v1::JOB_STATE_BISECTING) return;
  Emit(v1::JOB_EVENT_KIND_BASELINE,
       FlakyBaselineText(status_.good_sha(), good.failures, good.runs(), status_.bad_sha(),
                         bad.failures, bad.runs()),
       nullptr, now);
  status_.set_state(v1::JOB_STATE_BISECTING);
}

}  // namespace kbisect
