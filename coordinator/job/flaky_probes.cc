// Copyright 2026 The kbisect Authors.
//
// BisectJob, a flaky pass/fail test (--exit-code --flaky): the endpoints, each probe's verdict
// from the posterior over every run of the job (or more runs), and the end check that the
// culprit's probability reached the confidence. The rules are flaky_verdicts.h's.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/job/bisect_job.h"
#include "coordinator/job/confidence_stop.h"
#include "coordinator/job/flaky_verdicts.h"
#include "coordinator/job/job_text.h"

namespace kbisect {
namespace {

// Failures BAD runs to before the search starts: they pin down the fail rate at BAD commits,
// without which passes at a commit are weak evidence (with p free, m passes at a BAD commit are
// explained by a small p: their weight falls like m^-(failures + 1), not exponentially).
constexpr int kFlakyBadFailures = 5;

FlakyOptions OptionsOf(const v1::JobSpec& spec) {
  FlakyOptions options;
  options.confidence = spec.confidence();
  options.min_runs = spec.runs_per_commit();
  options.max_runs = spec.max_runs();
  return options;
}

// A commit that runs `runs` times in all is judged against rates the endpoints pinned: each
// endpoint that has run fewer times (and is not running) runs up to as many, at most max_runs.
// Its side is known, so its runs are what tells "the commit fails at BAD's rate" from "GOOD fails
// that often too"; they are shared by every later commit.
void KeepEndpointsAhead(ProbeBook& book, const Calibration& calibration, int runs, int max_runs) {
  for (int position : {calibration.good_probe(), calibration.bad_probe()}) {
    if (position < 0 || book.probe(position).state() != v1::PROBE_STATE_FINISHED) continue;
    const int have = CountRuns(book.probe(position)).runs();
    const int wanted = std::min(runs, max_runs);
    if (have < wanted) book.Extend(position, wanted - have);
  }
}

// The most runs any commit inside the range has had (bisect probes not cancelled).
int MostRunsOfACommit(const v1::JobStatus& status) {
  int most = 0;
  for (const v1::Probe& probe : status.probes()) {
    if (probe.kind() != v1::PROBE_KIND_BISECT || probe.state() == v1::PROBE_STATE_CANCELLED) {
      continue;
    }
    most = std::max(most, CountRuns(probe).runs());
  }
  return most;
}

}  // namespace

void BisectJob::ClassifyFlaky(int probe_position, absl::Time now) {
  const absl::StatusOr<CulpritPosterior> posterior = ComputeCulpritPosterior(
      status_.commit_count(), FlakyEvidence(status_, calibration_), FlakyPosteriorOptions());
  v1::Probe& probe = book_.mutable_probe(probe_position);
  if (!posterior.ok()) {  // Not for a valid job: every count comes from its own probes.
    probe.set_message(std::string(posterior.status().message()));
    ApplyVerdict(probe_position, v1::VERDICT_SKIP, now);
    return;
  }
  const FlakyJudgement judgement = JudgeFlakyCommit(
      *posterior, probe.index(), CountRuns(probe).runs(), OptionsOf(status_.spec()));
  probe.set_message(judgement.reason);
  const bool judged = probe.verdict() == v1::VERDICT_GOOD || probe.verdict() == v1::VERDICT_BAD;
  if (judged && judgement.verdict == probe.verdict()) return;  // It stands; the end check decides.
  const int runs_after = CountRuns(probe).runs() + judgement.more_runs;
  if (judged && judgement.more_runs > 0) {
    // Measured again at the end and now unclear: more runs, its verdict kept meanwhile.
    book_.Extend(probe_position, judgement.more_runs);
    KeepEndpointsAhead(book_, calibration_, runs_after, status_.spec().max_runs());
    return;
  }
  if (judged) {
    // Its runs now say the other side: the search goes on without the old verdict.
    RetractVerdicts({probe_position}, /*probe_again=*/false, judgement.reason, now);
    ClassifyPending(now);
    return;
  }
  if (judgement.more_runs > 0) {
    book_.Extend(probe_position, judgement.more_runs);
    KeepEndpointsAhead(book_, calibration_, runs_after, status_.spec().max_runs());
    return;
  }
  ApplyVerdict(probe_position, judgement.verdict, now);
}

void BisectJob::EvaluateFlakyBaselines(absl::Time now) {
  const int good_position = calibration_.good_probe();
  const int bad_position = calibration_.bad_probe();
  const RunCounts good = CountRuns(book_.probe(good_position));
  const RunCounts bad = CountRuns(book_.probe(bad_position));
  const int min_runs = status_.spec().runs_per_commit();
  const int max_runs = status_.spec().max_runs();
  if (bad.failures < kFlakyBadFailures && bad.runs() < max_runs) {
    book_.Extend(bad_position, std::min(std::max(min_runs, bad.runs()), max_runs - bad.runs()));
    return;
  }
  if (bad.failures == 0) {
    if (bad.runs() < max_runs) {
      // As many runs again as it had (at least --runs): a rare flake is found in a few tasks.
      book_.Extend(bad_position, std::min(std::max(min_runs, bad.runs()), max_runs - bad.runs()));
      return;
    }
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
  if (const int wanted = FlakyGoodRunsWanted(bad, min_runs, max_runs); good.runs() < wanted) {
    // Enough GOOD runs to pin its fail rate (the worker stops a task at its first failure).
    book_.Extend(good_position, wanted - good.runs());
    return;
  }
  if (status_.state() == v1::JOB_STATE_BISECTING) {
    // An endpoint ran more (KeepEndpointsAhead): commits asked for more runs while it ran are
    // caught up with now.
    KeepEndpointsAhead(book_, calibration_, MostRunsOfACommit(status_), max_runs);
    return;
  }
  Emit(v1::JOB_EVENT_KIND_BASELINE,
       FlakyBaselineText(status_.good_sha(), good.failures, good.runs(), status_.bad_sha(),
                         bad.failures, bad.runs()),
       nullptr, now);
  status_.set_state(v1::JOB_STATE_BISECTING);
}

bool BisectJob::FlakyCulpritNeedsRuns(absl::Time now) {
  if (search_.Candidates().size() != 1) return false;
  for (const v1::Probe& probe : status_.probes()) {
    if (probe.kind() == v1::PROBE_KIND_BISECT &&
        (probe.state() == v1::PROBE_STATE_PENDING || probe.state() == v1::PROBE_STATE_RUNNING)) {
      return true;  // A boundary commit is measured again.
    }
  }
  const absl::StatusOr<CulpritPosterior> posterior = ComputeCulpritPosterior(
      status_.commit_count(), FlakyEvidence(status_, calibration_), FlakyPosteriorOptions());
  if (!posterior.ok()) return false;
  const FlakyOptions options = OptionsOf(status_.spec());
  const int last_good = search_.last_good();
  const int first_bad = search_.first_bad();
  const int good_row = DecidingProbe(status_, last_good, v1::VERDICT_GOOD);
  const int bad_row = DecidingProbe(status_, first_bad, v1::VERDICT_BAD);
  // A marked commit or an endpoint has no probe to extend: it has run all it may.
  const int good_runs = good_row < 0 ? options.max_runs : CountRuns(book_.probe(good_row)).runs();
  const int bad_runs = bad_row < 0 ? options.max_runs : CountRuns(book_.probe(bad_row)).runs();
  const FlakyCulpritCheck check =
      CheckFlakyCulprit(*posterior, last_good, first_bad, good_runs, bad_runs, options);
  if (check.remeasure < 0) {
    if (check.probability < options.confidence) {
      status_.add_warnings(
          ShortOfConfidenceText(check.probability, options.confidence, options.max_runs));
    }
    return false;
  }
  const int row = check.remeasure == last_good ? good_row : bad_row;
  Emit(v1::JOB_EVENT_KIND_WARNING,
       ConfidenceRemeasureText(check.probability, options.confidence,
                               commits_[check.remeasure].sha(), check.more_runs),
       nullptr, now);
  book_.Extend(row, check.more_runs);
  return true;
}

}  // namespace kbisect
