// Copyright 2026 The kbisect Authors.
#include "report/event_words.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/metric/percent.h"
#include "common/text/count.h"
#include "report/words.h"

namespace kbisect {
namespace {

// A metric value with the job's unit, "%.4g" (e.g. "1.52ms").
std::string MetricValue(double value, const std::string& unit) {
  return absl::StrCat(absl::StrFormat("%.4g", value), unit);
}

std::string StartedWords(const v1::JobStartedFact& f) {
  std::string text = absl::StrFormat(
      "Bisect range: %s..%s\nTotal commits in range: %d\n"
      "Estimated steps with one worker (git bisect): %d",
      ShortSha(f.good_sha()), ShortSha(f.bad_sha()), f.commits(), f.serial_steps());
  if (f.marks_size() > 0) {
    absl::StrAppend(&text, "\n", MarksText(f.marks(), f.remaining_candidates()));
  }
  return text;
}

std::string PassFailBaselineWords(const v1::PassFailBaselineFact& f) {
  return absl::StrFormat("Baseline results:\n  GOOD (%s): passes\n  BAD  (%s): fails",
                         ShortSha(f.good_sha()), ShortSha(f.bad_sha()));
}

std::string FlakyBaselineWords(const v1::FlakyBaselineFact& f) {
  return absl::StrFormat(
      "Baseline results (flaky test):\n  GOOD (%s): failed %d of %s\n  BAD  (%s): failed %d of %s",
      ShortSha(f.good_sha()), f.good_failures(), Count(f.good_runs(), "run"), ShortSha(f.bad_sha()),
      f.bad_failures(), Count(f.bad_runs(), "run"));
}

std::string MeasuredBaselineWords(const v1::MeasuredBaselineFact& f) {
  // regression_pct is positive when BAD is worse; an improvement (--find-fix, a try, BAD better
  // than GOOD) is said as one.
  const bool worse = f.regression_pct() >= 0;
  const bool higher_is_better = f.direction() == v1::DIRECTION_HIGHER_IS_BETTER;
  const char* way = worse ? (higher_is_better ? "lower (worse)" : "higher (worse)")
                          : (higher_is_better ? "higher (better)" : "lower (better)");
  std::string text = absl::StrFormat(
      "Baseline results:\n  GOOD (%s): %s = %s\n  BAD  (%s): %s = %s\n  %s: %s %s",
      ShortSha(f.good_sha()), f.metric_name(), MetricValue(f.good_median(), f.unit()),
      ShortSha(f.bad_sha()), f.metric_name(), MetricValue(f.bad_median(), f.unit()),
      worse ? "Regression" : "Improvement", FormatPercent(std::fabs(f.regression_pct())), way);
  if (f.one_run_per_probe()) {
    absl::StrAppend(&text,
                    "\n  Every run gave the same value at GOOD and at BAD: one run a probe (more "
                    "where a run matches neither; --runs N measures every probe N times)");
  }
  if (!f.provisional_bad_worker().empty()) {
    absl::StrAppend(
        &text, "\n",
        absl::StrFormat(
            "  (GOOD on %s, BAD on %s: the search starts now; its verdicts count once %s has "
            "measured GOOD too, so that the two GPUs' offset cancels)",
            f.provisional_good_worker(), f.provisional_bad_worker(), f.provisional_bad_worker()));
  }
  return text;
}

std::string SettledBaselineWords(const v1::SettledBaselineFact& f) {
  return absl::StrFormat(
      "Baselines on one GPU (%s, in place of %s's GOOD): GOOD %s, BAD %s; regression %s",
      f.good_worker(), f.stand_in(), MetricValue(f.good_median(), f.unit()),
      MetricValue(f.bad_median(), f.unit()), FormatPercent(f.regression_pct()));
}

std::string ProbeFinishedWords(const v1::ProbeFinishedFact& f, const v1::Probe& probe) {
  std::string metric;
  if (f.pass_fail() &&
      (probe.outcome() == v1::TASK_OUTCOME_PASSED || probe.outcome() == v1::TASK_OUTCOME_FAILED)) {
    metric = probe.outcome() == v1::TASK_OUTCOME_PASSED ? "passes" : "fails";
  } else if (probe.samples_size() > 0) {
    metric = absl::StrCat("metric=", MetricValue(probe.median(), f.unit()));
    if (probe.samples_size() > f.runs_per_commit()) {
      absl::StrAppend(&metric, " (", Count(probe.samples_size(), "run"), ")");
    }
  } else {
    metric = absl::StrCat("failed (", probe.message(), ")");
  }
  return absl::StrFormat("Step %d/%d: %s %s -> %s%s (%s left, %s in flight)", f.step(),
                         f.steps_estimated(), ShortSha(probe.sha()), metric,
                         VerdictWord(probe.verdict(), WordCase::kUpper),
                         probe.provisional() ? " (provisional: calibration pending)" : "",
                         Count(f.commits_left(), "commit"), Count(f.in_flight(), "probe"));
}

std::string FlakyRunWords(const v1::FlakyRunFact& f) {
  return absl::StrFormat(
      "Step %d: %s %s; likeliest culprit %s at %s", f.step(), ShortSha(f.sha()),
      f.failures() > 0 ? absl::StrCat("failed ", f.failures(), " of ", Count(f.runs(), "run"))
                       : absl::StrCat("passed ", Count(f.runs(), "run")),
      ShortSha(f.likeliest_sha()), FormatPercent(f.likeliest_probability() * 100));
}

std::string FinishedWords(const v1::JobFinishedFact& f) {
  switch (f.outcome()) {
    case v1::OUTCOME_CULPRIT_FOUND:
      return absl::StrCat("Culprit: ", f.culprit_sha(), " ", f.culprit_subject());
    case v1::OUTCOME_CANDIDATES_FOUND:
      return absl::StrCat("Culprit is one of ", Count(f.candidates(), "commit"),
                          " (skipped commits border it)");
    default:
      return f.error();
  }
}

std::string ContradictionWords(const v1::JobWarning::Contradiction& f) {
  return absl::StrCat("commit ", ShortSha(f.sha()), " measured ",
                      VerdictWord(f.verdict(), WordCase::kUpper),
                      ", contradicting earlier verdicts; treated as skipped");
}

std::string SmallRegressionWords(const v1::JobWarning::SmallRegression& f) {
  return absl::StrFormat(
      "the regression is only %s (under 5%%): it may be noise; consider more "
      "--runs",
      FormatPercent(f.regression_pct()));
}

std::string ShortOfConfidenceWords(const v1::JobWarning::ShortOfConfidence& f) {
  return absl::StrCat("The culprit's probability (", FormatPercent(100 * f.probability()),
                      ") is short of the confidence asked for (",
                      FormatPercent(100 * f.confidence()),
                      "): its commit and its parent ran --max-runs (", f.max_runs(),
                      ") each; a larger --max-runs goes on");
}

std::string ConfidenceRemeasureWords(const v1::JobWarning::ConfidenceRemeasure& f) {
  return absl::StrFormat("Culprit probability %.4f is short of %.4f: %d more runs of %s",
                         f.probability(), f.confidence(), f.runs(), ShortSha(f.sha()));
}

std::string ConfidenceRetractedWords(const v1::JobWarning::ConfidenceRetracted& f) {
  return absl::StrCat("Measured again for the confidence, ", ShortSha(f.sha()), " now looks ",
                      f.bad() ? "BAD" : "GOOD",
                      " (P(bad) = ", FormatPercent(100 * f.bad_probability()),
                      "): its verdict is taken back and the search goes on");
}

std::string MultipleStepsWords(const v1::JobWarning::MultipleSteps& f) {
  return absl::StrFormat(
      "the culprit explains only %s of the GOOD->BAD difference: the regression likely has "
      "several steps; %s %s..%s and %s..%s%s",
      FormatPercent(f.share() * 100), f.all_culprits() ? "bisecting" : "bisect",
      ShortSha(f.first_bad()), ShortSha(f.bad()), ShortSha(f.good()), ShortSha(f.last_good()),
      f.all_culprits() ? " too (--all-culprits)"
                       : " separately (or rerun with --all-culprits) to find the others");
}

std::string MergeCulpritWords(const v1::JobWarning::MergeCulprit& f) {
  const std::string sha = ShortSha(f.culprit());
  return absl::StrCat(
      "the culprit ", sha,
      " is a merge commit: the regression came in with the merged branch. To find the commit "
      "inside it, run `kbisect run $(git merge-base ",
      sha, "^1 ", sha, "^2) ", sha, "^2 -- ...`",
      f.descend_merges() ? " (--descend-merges does that now)" : " or rerun with --descend-merges");
}

std::string MethodChangeWords(const v1::JobWarning::MethodChange& f) {
  return absl::StrCat("the culprit changed how the benchmark measures (",
                      absl::StrJoin(f.changes(), "; "),
                      "): the step may be a change of method, not of the kernel. Pin the harness "
                      "of one side and measure both commits with it to get the kernel's change");
}

std::string ThrottledWords(const v1::JobWarning::Throttled& f) {
  return absl::StrFormat("%s ran with the GPU throttled (%s)%s", Count(f.runs(), "benchmark run"),
                         absl::StrJoin(f.reasons(), ", "),
                         f.discarded() > 0
                             ? absl::StrFormat(": %d discarded and re-run", f.discarded())
                             : "; pass --discard-throttled to re-run them");
}

std::string CappedWords(const v1::JobWarning::Capped& f) {
  return absl::StrFormat(
      "%s ran with the GPU's clocks capped by its driver (%s): kept, but their samples may be "
      "slow",
      Count(f.runs(), "benchmark run"), absl::StrJoin(f.reasons(), ", "));
}

std::string ForeignProcessesWords(const v1::JobWarning::ForeignProcesses& f) {
  return absl::StrFormat(
      "%s shared the GPU with other compute processes (%s): their samples are not to be "
      "trusted; free the GPU and run the job again",
      Count(f.runs(), "benchmark run"), absl::StrJoin(f.processes(), ", "));
}

std::string BadWorkerOffsetWords(const v1::JobWarning::BadWorkerOffset& f) {
  return absl::StrFormat(
      "Worker %s, which measured BAD, measures GOOD %s off the reference: BAD is taken as "
      "%s in the reference's frame and every verdict is judged again",
      f.worker(), FormatSignedPercent(100 * f.offset_fraction()),
      MetricValue(f.bad_median(), f.unit()));
}

std::string ReferenceMovesWords(const v1::JobWarning::ReferenceMoves& f) {
  return absl::StrCat("The reference GOOD moves from ", f.from(), " to ",
                      f.to().empty() ? "the next worker to calibrate" : f.to(),
                      ": every verdict is judged again");
}

std::string NoisyBaselinesWords(const v1::JobWarning::NoisyBaselines& f) {
  return absl::StrFormat(
      "The probes show noise of about %.4g%s, more than the baselines were judged with: %s; "
      "every verdict waits for them",
      f.noise(), f.unit(), f.reason());
}

std::string CacheCheckWords(const v1::JobWarning::CacheCheck& f) {
  const double moved =
      f.cached_median() == 0 ? 0 : 100.0 * (f.fresh_median() / f.cached_median() - 1);
  if (f.agreed()) {
    return absl::StrFormat(
        "Reusing %s's results from job %s: it measured %s at %.4g%s now and %.4g%s then (%s)",
        f.worker(), f.cached_job_id(), ShortSha(f.sha()), f.fresh_median(), f.unit(),
        f.cached_median(), f.unit(), FormatSignedPercent(moved));
  }
  return absl::StrFormat(
      "Not reusing %s's results from job %s: it measures %s at %.4g%s now against %.4g%s then "
      "(%s): its GPU has drifted since, so every commit is measured again",
      f.worker(), f.cached_job_id(), ShortSha(f.sha()), f.fresh_median(), f.unit(),
      f.cached_median(), f.unit(), FormatSignedPercent(moved));
}

std::string ConfirmingWords(const v1::JobWarning::Confirming& f) {
  std::string besides;
  if (f.reused_pairs() > 0) {
    besides = absl::StrCat(Count(f.reused_pairs(), "pair"), " the search already has");
    if (f.cached_pairs() > 0) {
      const std::string how_many = f.cached_pairs() == f.reused_pairs()
                                       ? std::string("all")
                                       : absl::StrCat(f.cached_pairs());
      absl::StrAppend(&besides, ", ", how_many,
                      " measured by earlier jobs on GPUs that agreed with themselves");
    }
  }
  if (f.speculative_pairs() > 0) {
    absl::StrAppend(
        &besides, besides.empty() ? "" : " and ",
        absl::StrFormat("%d measured during the search's last round", f.speculative_pairs()));
  }
  if (f.tasks() == 0) {
    return absl::StrFormat("Confirming: %s and %s interleaved, with the %s",
                           ShortSha(f.last_good()), ShortSha(f.culprit()), besides);
  }
  return absl::StrFormat("Confirming: re-measuring %s and %s interleaved, %s in each of %s%s",
                         ShortSha(f.last_good()), ShortSha(f.culprit()),
                         Count(f.pairs_per_task(), "pair"), Count(f.tasks(), "task"),
                         besides.empty() ? "" : absl::StrCat(" (besides ", besides, ")"));
}

std::string SuiteSearchWords(const v1::JobWarning::SuiteSearch& f) {
  std::vector<std::string> ranges;
  for (const v1::JobWarning::SuiteSearch::Range& range : f.ranges()) {
    ranges.push_back(absl::StrFormat("%s after %s, at or before %s (%s)",
                                     absl::StrJoin(range.metrics(), ", "),
                                     ShortSha(range.last_good()), ShortSha(range.first_bad()),
                                     Count(range.commits(), "commit")));
  }
  const std::string left = ranges.empty() ? "nothing left to narrow" : absl::StrJoin(ranges, "; ");
  if (f.measured_sha().empty()) {
    return absl::StrCat("Suite: searching the other metrics' steps in this job: ", left);
  }
  return absl::StrCat("Suite: measured ", ShortSha(f.measured_sha()), "; ", left);
}

}  // namespace

std::string QuarantineReasonWords(const v1::JobWarning::WorkerQuarantined& f) {
  switch (f.kind()) {
    case v1::DRIFT_KIND_BASELINE_OUTLIER:
      return absl::StrFormat(
          "its GOOD median %s is %s off the pool's %s, more than a third of the regression "
          "(%s): its probes are re-run elsewhere",
          MetricValue(f.median(), f.unit()), FormatSignedPercent(100 * f.offset_fraction()),
          MetricValue(f.center(), f.unit()), FormatPercent(100 * f.regression_fraction()));
    case v1::DRIFT_KIND_CONTROL_MOVED:
      return absl::StrFormat(
          "its A/A control of GOOD moved %s from its calibration (more than a third of the "
          "regression): the GPU drifted",
          FormatSignedPercent(100 * f.offset_fraction()));
    case v1::DRIFT_KIND_CALIBRATION_FAILED:
      return absl::StrCat("the benchmark fails at GOOD on this worker: ", f.failure());
    case v1::DRIFT_KIND_IDENTITY_CHANGED:
      return f.failure();
    default:  // DRIFT_KIND_UNSPECIFIED: no worker is quarantined without a kind.
      break;
  }
  return "";
}

std::string ConfirmationVerdictWords(const v1::ConfirmationVerdictFact& f) {
  if (!f.failure().empty()) return absl::StrCat("the confirmation run failed: ", f.failure());
  std::string pairs = Count(f.fresh_pairs(), "interleaved pair");
  if (f.reused_pairs() > 0) absl::StrAppend(&pairs, " and ", f.reused_pairs(), " from the search");
  std::string verdict =
      absl::StrFormat("step x%.4g, 95%% CI [%.4g, %.4g] from %s on %s", f.ratio(), f.ci_low(),
                      f.ci_high(), pairs, absl::StrJoin(f.workers(), ", "));
  if (f.across_workers()) {
    absl::StrAppend(&verdict,
                    " (last good on one worker, the culprit on another: they measure GOOD exactly "
                    "alike)");
  }
  if (f.below_minimum()) {
    absl::StrAppend(
        &verdict,
        ": smaller than half the minimum effect, a residue (the machine's drift between "
        "measurements at two moments), not a regression");
  }
  return verdict;
}

std::string RevertCheckWords(const v1::RevertCheck& check) {
  const std::string reverting = absl::StrCat("Reverting ", ShortSha(check.culprit_sha()),
                                             " at BAD (", ShortSha(check.base_sha()), ")");
  switch (check.state()) {
    case v1::RevertCheck::STATE_RUNNING:
      return absl::StrCat(reverting, ": measured against BAD in job ", check.job_id());
    case v1::RevertCheck::STATE_CONFLICT: {
      std::string words = absl::StrCat(reverting, " does not apply cleanly: it conflicts in ",
                                       absl::StrJoin(check.conflict_files(), ", "));
      if (check.later_commits_size() > 0) {
        absl::StrAppend(
            &words, "; later commits touched them: ", absl::StrJoin(check.later_commits(), "; "));
      }
      return words;
    }
    case v1::RevertCheck::STATE_FAILED:
      return absl::StrCat(reverting, " could not be measured: ", check.error());
    case v1::RevertCheck::STATE_DONE:
      break;
    default:
      return "";
  }
  std::string words = absl::StrFormat(
      "%s recovers %s (%s-%s) of the %s regression (reverted/BAD x%.4g, 95%% CI [%.4g, %.4g])",
      reverting, FormatPercent(100 * check.recovered_share()),
      FormatPercent(100 * check.share_low()), FormatPercent(100 * check.share_high()),
      FormatPercent(std::fabs(check.regression_pct())), check.ratio(), check.ci_low(),
      check.ci_high());
  if (!check.significant()) {
    absl::StrAppend(&words, ": the revert makes no significant difference at BAD");
  }
  if (check.share_high() < kFullRecovery) {
    absl::StrAppend(&words,
                    ": other commits of the range matter too (--all-culprits finds every step)");
  }
  return words;
}

std::string WarningWords(const v1::JobWarning& w) {
  switch (w.fact_case()) {
    case v1::JobWarning::kContradiction:
      return ContradictionWords(w.contradiction());
    case v1::JobWarning::kSmallRegression:
      return SmallRegressionWords(w.small_regression());
    case v1::JobWarning::kShortOfConfidence:
      return ShortOfConfidenceWords(w.short_of_confidence());
    case v1::JobWarning::kConfidenceRemeasure:
      return ConfidenceRemeasureWords(w.confidence_remeasure());
    case v1::JobWarning::kConfidenceRetracted:
      return ConfidenceRetractedWords(w.confidence_retracted());
    case v1::JobWarning::kMultipleSteps:
      return MultipleStepsWords(w.multiple_steps());
    case v1::JobWarning::kMergeCulprit:
      return MergeCulpritWords(w.merge_culprit());
    case v1::JobWarning::kMethodChange:
      return MethodChangeWords(w.method_change());
    case v1::JobWarning::kThrottled:
      return ThrottledWords(w.throttled());
    case v1::JobWarning::kCapped:
      return CappedWords(w.capped());
    case v1::JobWarning::kForeignProcesses:
      return ForeignProcessesWords(w.foreign_processes());
    case v1::JobWarning::kWorkerQuarantined:
      return absl::StrCat("worker ", w.worker_quarantined().worker(),
                          " quarantined: ", QuarantineReasonWords(w.worker_quarantined()));
    case v1::JobWarning::kMustCalibrateAgain:
      return absl::StrCat("Worker ", w.must_calibrate_again().worker(),
                          " must calibrate again: ", w.must_calibrate_again().why());
    case v1::JobWarning::kReferenceMoves:
      return ReferenceMovesWords(w.reference_moves());
    case v1::JobWarning::kBadWorkerOffset:
      return BadWorkerOffsetWords(w.bad_worker_offset());
    case v1::JobWarning::kBadRemeasured:
      return absl::StrCat("BAD is measured again: ", w.bad_remeasured().why(),
                          "; the verdicts so far wait for it");
    case v1::JobWarning::kNoisyBaselines:
      return NoisyBaselinesWords(w.noisy_baselines());
    case v1::JobWarning::kCacheCheck:
      return CacheCheckWords(w.cache_check());
    case v1::JobWarning::kConfirming:
      return ConfirmingWords(w.confirming());
    case v1::JobWarning::kConfirmationRestart:
      return "a calibration changed a verdict, so the confirmation started beside it is "
             "cancelled; it starts again once the search has its culprit";
    case v1::JobWarning::kConfirmed:
      return absl::StrCat("Confirmed: ", ConfirmationVerdictWords(w.confirmed().verdict()));
    case v1::JobWarning::kBaselinesUnclear:
      return absl::StrCat("Baselines unclear: ", w.baselines_unclear().reason());
    case v1::JobWarning::kRevertChecked:
      return RevertCheckWords(w.revert_checked());
    case v1::JobWarning::kSuiteSearch:
      return SuiteSearchWords(w.suite_search());
    case v1::JobWarning::FACT_NOT_SET:
      break;
  }
  return "";
}

std::string EventWords(const v1::JobEvent& event) {
  switch (event.fact_case()) {
    case v1::JobEvent::kStarted:
      return StartedWords(event.started());
    case v1::JobEvent::kPassFailBaseline:
      return PassFailBaselineWords(event.pass_fail_baseline());
    case v1::JobEvent::kFlakyBaseline:
      return FlakyBaselineWords(event.flaky_baseline());
    case v1::JobEvent::kMeasuredBaseline:
      return MeasuredBaselineWords(event.measured_baseline());
    case v1::JobEvent::kSettledBaseline:
      return SettledBaselineWords(event.settled_baseline());
    case v1::JobEvent::kProbeFinished:
      return ProbeFinishedWords(event.probe_finished(), event.probe());
    case v1::JobEvent::kFlakyRun:
      return FlakyRunWords(event.flaky_run());
    case v1::JobEvent::kProbeCancelled:
      return absl::StrCat("Cancelled probe of ", ShortSha(event.probe_cancelled().sha()),
                          ": the interval no longer contains it");
    case v1::JobEvent::kFinished:
      return FinishedWords(event.finished());
    case v1::JobEvent::kWarning:
      // The event of a quarantine and of a small regression say them their own way.
      if (event.warning().has_worker_quarantined()) {
        const v1::JobWarning::WorkerQuarantined& q = event.warning().worker_quarantined();
        return absl::StrCat("Quarantined worker ", q.worker(), ": ", QuarantineReasonWords(q));
      }
      if (event.warning().has_small_regression()) {
        return absl::StrCat("Warning: ", WarningWords(event.warning()));
      }
      return WarningWords(event.warning());
    case v1::JobEvent::FACT_NOT_SET:
      break;
  }
  return event.message();
}

}  // namespace kbisect
