// Copyright 2026 The kbisect Authors.
#include "coordinator/job/job_text.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/metric/percent.h"
#include "common/rpc/enum_label.h"
#include "common/text/count.h"

namespace kbisect {

std::string FormatMetricValue(double value, const std::string& unit) {
  return absl::StrCat(absl::StrFormat("%.4g", value), unit);
}

std::string StartedText(const std::string& good_sha, const std::string& bad_sha, int commits,
                        int serial_steps) {
  return absl::StrFormat(
      "Bisect range: %s..%s\nTotal commits in range: %d\n"
      "Estimated steps with one worker (git bisect): %d",
      ShortSha(good_sha), ShortSha(bad_sha), commits, serial_steps);
}

std::string MethodChangeText(const google::protobuf::RepeatedPtrField<std::string>& changes) {
  return absl::StrCat("the culprit changed how the benchmark measures (",
                      absl::StrJoin(changes, "; "),
                      "): the step may be a change of method, not of the kernel. Pin the harness "
                      "of one side and measure both commits with it to get the kernel's change");
}

std::string PassFailBaselineText(const std::string& good_sha, const std::string& bad_sha) {
  return absl::StrFormat("Baseline results:\n  GOOD (%s): passes\n  BAD  (%s): fails",
                         ShortSha(good_sha), ShortSha(bad_sha));
}

std::string FlakyBaselineText(const std::string& good_sha, int good_failures, int good_runs,
                              const std::string& bad_sha, int bad_failures, int bad_runs) {
  return absl::StrFormat(
      "Baseline results (flaky test):\n  GOOD (%s): failed %d of %s\n  BAD  (%s): failed %d of %s",
      ShortSha(good_sha), good_failures, Count(good_runs, "run"), ShortSha(bad_sha), bad_failures,
      Count(bad_runs, "run"));
}

std::string FlakyPassesAtBadText(const v1::Probe& bad, int runs) {
  return absl::StrCat("the check passed all ", Count(runs, "run"), " at BAD (", ShortSha(bad.sha()),
                      "): nothing to bisect, or a flake rarer than 1 in ", runs,
                      " (raise --max-runs)");
}

std::string FlakyFailsAtGoodText(const v1::Probe& good, int failures, int runs) {
  return absl::StrCat("the check fails at GOOD (", ShortSha(good.sha()), ") in ", failures, " of ",
                      Count(runs, "run"), ": GOOD is not good, pick an older one");
}

std::string ConfidenceRemeasureText(double probability, double confidence, const std::string& sha,
                                    int runs) {
  return absl::StrFormat("Culprit probability %.4f is short of %.4f: %d more runs of %s",
                         probability, confidence, runs, ShortSha(sha));
}

std::string ConfidenceRetractText(const std::string& sha, bool bad, double bad_probability) {
  return absl::StrCat("Measured again for the confidence, ", ShortSha(sha), " now looks ",
                      bad ? "BAD" : "GOOD", " (P(bad) = ", FormatPercent(100 * bad_probability),
                      "): its verdict is taken back and the search goes on");
}

std::string ShortOfConfidenceText(double probability, double confidence, int max_runs) {
  return absl::StrCat("The culprit's probability (", FormatPercent(100 * probability),
                      ") is short of the confidence asked for (", FormatPercent(100 * confidence),
                      "): its commit and its parent ran --max-runs (", max_runs,
                      ") each; a larger --max-runs goes on");
}

std::string BaselineText(const v1::JobStatus& status, double good_median, double bad_median,
                         double regression_pct) {
  const std::string& unit = status.metric_unit();
  return absl::StrFormat(
      "Baseline results:\n  GOOD (%s): %s = %s\n  BAD  (%s): %s = %s\n  Regression: %s %s",
      ShortSha(status.good_sha()), status.metric_name(), FormatMetricValue(good_median, unit),
      ShortSha(status.bad_sha()), status.metric_name(), FormatMetricValue(bad_median, unit),
      FormatPercent(regression_pct),
      status.direction() == v1::DIRECTION_HIGHER_IS_BETTER ? "lower (worse)" : "higher (worse)");
}

std::string ProvisionalEndpointText(const std::string& bad_worker, const std::string& good_worker) {
  return absl::StrFormat(
      "  (GOOD on %s, BAD on %s: the search starts now; its verdicts count once %s has measured "
      "GOOD too, so that the two GPUs' offset cancels)",
      good_worker, bad_worker, bad_worker);
}

std::string SettledEndpointText(const v1::JobStatus& status, const std::string& stand_in,
                                double regression_pct) {
  const v1::Baseline& good = status.baseline().good();
  return absl::StrFormat(
      "Baselines on one GPU (%s, in place of %s's GOOD): GOOD %s, BAD %s; regression %s",
      good.worker(), stand_in, FormatMetricValue(good.median(), status.metric_unit()),
      FormatMetricValue(status.baseline().bad().median(), status.metric_unit()),
      FormatPercent(regression_pct));
}

std::string BaselineFailedText(bool good, const v1::Probe& probe, const v1::TaskResult& result) {
  const char* which = good ? "GOOD" : "BAD";
  return absl::StrFormat(
      "the benchmark failed at %s (%s): %s. Fix the build/bench command or choose another %s "
      "commit.%s%s",
      which, ShortSha(probe.sha()),
      result.message().empty() ? "no sample was produced" : result.message(), which,
      result.log_tail().empty() ? "" : "\nLast output:\n", result.log_tail());
}

std::string BaselineGaveUpText(bool good, const std::string& why) {
  return absl::StrCat("could not measure the ", good ? "GOOD" : "BAD", " baseline: ", why);
}

std::string CheckFailsAtGoodText(const v1::Probe& good) {
  return absl::StrCat("the check already fails at GOOD (", ShortSha(good.sha()),
                      "): ", good.message(), ". Choose a GOOD commit where it passes.");
}

std::string CheckPassesAtBadText(const v1::Probe& bad) {
  return absl::StrCat("the check passes at BAD (", ShortSha(bad.sha()), "): nothing to bisect");
}

std::string SwappedText(const std::string& reason) {
  return absl::StrCat(reason,
                      ". Swap GOOD and BAD, or pass --allow-improvement to bisect the "
                      "improvement.");
}

std::string QuarantineReasonText(const QuarantineDecision& decision, const std::string& unit) {
  switch (decision.kind) {
    case v1::DRIFT_KIND_BASELINE_OUTLIER:
      return absl::StrFormat(
          "its GOOD median %s is %s off the pool's %s, more than a third of the regression "
          "(%s): its probes are re-run elsewhere",
          FormatMetricValue(decision.median, unit),
          FormatSignedPercent(100 * decision.offset_fraction),
          FormatMetricValue(decision.center, unit),
          FormatPercent(100 * decision.regression_fraction));
    case v1::DRIFT_KIND_CONTROL_MOVED:
      return absl::StrFormat(
          "its A/A control of GOOD moved %s from its calibration (more than a third of the "
          "regression): the GPU drifted",
          FormatSignedPercent(100 * decision.offset_fraction));
    case v1::DRIFT_KIND_CALIBRATION_FAILED:
      return absl::StrCat("the benchmark fails at GOOD on this worker: ", decision.failure);
    case v1::DRIFT_KIND_IDENTITY_CHANGED:
      return decision.failure;
    default:  // DRIFT_KIND_UNSPECIFIED: no decision is made without a kind.
      break;
  }
  return "";
}

std::string QuarantinedWarningText(const std::string& worker, const std::string& reason) {
  return absl::StrCat("worker ", worker, " quarantined: ", reason);
}

std::string QuarantinedEventText(const std::string& worker, const std::string& reason) {
  return absl::StrCat("Quarantined worker ", worker, ": ", reason);
}

std::string EveryWorkerQuarantinedText() {
  return "every worker was quarantined (see the drift events): the hardware is not consistent "
         "enough to bisect on; check the GPUs and rerun";
}

std::string MustCalibrateAgainText(const std::string& worker, const std::string& why) {
  return absl::StrCat("Worker ", worker, " must calibrate again: ", why);
}

std::string BadWorkerOffsetText(const std::string& worker, double offset_fraction,
                                double bad_median, const std::string& unit) {
  return absl::StrFormat(
      "Worker %s, which measured BAD, measures GOOD %s off the reference: BAD is taken as "
      "%s in the reference's frame and every verdict is judged again",
      worker, FormatSignedPercent(100 * offset_fraction), FormatMetricValue(bad_median, unit));
}

std::string BadRemeasuredText(const std::string& why) {
  return absl::StrCat("BAD is measured again: ", why, "; the verdicts so far wait for it");
}

std::string ReferenceMovesText(const std::string& from, const std::string& to) {
  return absl::StrCat("The reference GOOD moves from ", from, " to ",
                      to.empty() ? "the next worker to calibrate" : to,
                      ": every verdict is judged again");
}

std::string ContradictionText(const std::string& sha, v1::Verdict verdict) {
  return absl::StrCat("commit ", ShortSha(sha), " measured ",
                      VerdictWord(verdict, WordCase::kUpper),
                      ", contradicting earlier verdicts; treated as skipped");
}

std::string ProbeFinishedText(const v1::Probe& probe, const v1::JobStatus& status, bool pass_fail,
                              const ProbeLine& line) {
  std::string metric;
  if (pass_fail &&
      (probe.outcome() == v1::TASK_OUTCOME_PASSED || probe.outcome() == v1::TASK_OUTCOME_FAILED)) {
    metric = probe.outcome() == v1::TASK_OUTCOME_PASSED ? "passes" : "fails";
  } else if (probe.samples_size() > 0) {
    metric = absl::StrCat("metric=", FormatMetricValue(probe.median(), status.metric_unit()));
    if (probe.samples_size() > status.spec().runs_per_commit()) {
      absl::StrAppend(&metric, " (", Count(probe.samples_size(), "run"), ")");
    }
  } else {
    metric = absl::StrCat("failed (", probe.message(), ")");
  }
  return absl::StrFormat("Step %d/%d: %s %s -> %s%s (%s left, %s in flight)", line.step,
                         line.steps_estimated, ShortSha(probe.sha()), metric,
                         VerdictWord(probe.verdict(), WordCase::kUpper),
                         probe.provisional() ? " (provisional: calibration pending)" : "",
                         Count(line.commits_left, "commit"), Count(line.in_flight, "probe"));
}

std::string FlakyRunText(int step, const std::string& sha, int failures, int runs,
                         const std::string& likeliest_sha, double likeliest_probability) {
  return absl::StrFormat("Step %d: %s %s; likeliest culprit %s at %s", step, ShortSha(sha),
                         failures > 0
                             ? absl::StrCat("failed ", failures, " of ", Count(runs, "run"))
                             : absl::StrCat("passed ", Count(runs, "run")),
                         ShortSha(likeliest_sha), FormatPercent(likeliest_probability * 100));
}

std::string ProbeCancelledText(const std::string& sha) {
  return absl::StrCat("Cancelled probe of ", ShortSha(sha), ": the interval no longer contains it");
}

std::string MultipleStepsText(double share, bool all_culprits, const std::string& first_bad,
                              const std::string& bad, const std::string& good,
                              const std::string& last_good) {
  return absl::StrFormat(
      "the culprit explains only %s of the GOOD->BAD difference: the regression likely has "
      "several steps; %s %s..%s and %s..%s%s",
      FormatPercent(share * 100), all_culprits ? "bisecting" : "bisect", ShortSha(first_bad),
      ShortSha(bad), ShortSha(good), ShortSha(last_good),
      all_culprits ? " too (--all-culprits)"
                   : " separately (or rerun with --all-culprits) to find the others");
}

std::string MergeCulpritText(const std::string& culprit, bool descend_merges) {
  const std::string sha = ShortSha(culprit);
  return absl::StrCat(
      "the culprit ", sha,
      " is a merge commit: the regression came in with the merged branch. To find the commit "
      "inside it, run `kbisect run $(git merge-base ",
      sha, "^1 ", sha, "^2) ", sha, "^2 -- ...`",
      descend_merges ? " (--descend-merges does that now)" : " or rerun with --descend-merges");
}

std::string ConfirmingText(const std::string& last_good, const std::string& culprit, int tasks,
                           int pairs_per_task, int reused_pairs, int speculative_pairs) {
  std::string besides;
  if (reused_pairs > 0) {
    besides = absl::StrCat(Count(reused_pairs, "pair"), " the search already has");
  }
  if (speculative_pairs > 0) {
    absl::StrAppend(
        &besides, besides.empty() ? "" : " and ",
        absl::StrFormat("%d measured during the search's last round", speculative_pairs));
  }
  if (tasks == 0) {
    return absl::StrFormat("Confirming: %s and %s interleaved, with the %s", ShortSha(last_good),
                           ShortSha(culprit), besides);
  }
  return absl::StrFormat("Confirming: re-measuring %s and %s interleaved, %s on each of %s%s",
                         ShortSha(last_good), ShortSha(culprit), Count(pairs_per_task, "pair"),
                         Count(tasks, "worker"),
                         besides.empty() ? "" : absl::StrCat(" (besides ", besides, ")"));
}

std::string SpeculationNotTheCulpritText() {
  return "not needed: measured ahead in case this commit was the culprit, and it is not";
}

std::string SpeculationNotNeededText() {
  return "not needed: the search's own samples confirm the culprit";
}

std::string ConfirmationVerdictText(const ConfirmationJudgement& judgement,
                                    const std::vector<std::string>& workers, int fresh_pairs,
                                    int reused_pairs) {
  std::string pairs = Count(fresh_pairs, "interleaved pair");
  if (reused_pairs > 0) {
    absl::StrAppend(&pairs, " and ", reused_pairs, " from the search");
  }
  std::string verdict =
      absl::StrFormat("step x%.4g, 95%% CI [%.4g, %.4g] from %s on %s", judgement.ratio,
                      judgement.ci_low, judgement.ci_high, pairs, absl::StrJoin(workers, ", "));
  if (judgement.below_minimum) {
    absl::StrAppend(
        &verdict,
        ": smaller than half the minimum effect, a residue (the machine's drift between "
        "measurements at two moments), not a regression");
  }
  return verdict;
}

std::string NoisyBaselinesText(double noise, const std::string& unit,
                               const BaselineAssessment& assessment) {
  return absl::StrFormat(
      "The probes show noise of about %.4g%s, more than the baselines were judged with: %s; "
      "every verdict waits for them",
      noise, unit, assessment.reason);
}

std::string CacheCheckText(const ResultReuse::Check& check, const std::string& sha,
                           const std::string& unit) {
  const double moved =
      check.cached_median == 0 ? 0 : 100.0 * (check.fresh_median / check.cached_median - 1);
  if (check.agreed) {
    return absl::StrFormat(
        "Reusing %s's results from job %s: it measured %s at %.4g%s now and %.4g%s then (%s)",
        check.worker, check.cached_job_id, ShortSha(sha), check.fresh_median, unit,
        check.cached_median, unit, FormatSignedPercent(moved));
  }
  return absl::StrFormat(
      "Not reusing %s's results from job %s: it measures %s at %.4g%s now against %.4g%s then "
      "(%s): its GPU has drifted since, so every commit is measured again",
      check.worker, check.cached_job_id, ShortSha(sha), check.fresh_median, unit,
      check.cached_median, unit, FormatSignedPercent(moved));
}

std::string ConfirmationRestartText() {
  return "a calibration changed a verdict, so the confirmation started beside it is cancelled; it "
         "starts again once the search has its culprit";
}

std::string ConfirmationFailedText(const std::string& message) {
  return absl::StrCat("the confirmation run failed: ", message);
}

std::string ConfirmedText(const std::string& verdict) {
  return absl::StrCat("Confirmed: ", verdict);
}

std::string UnconfirmedText(const std::string& culprit, const std::string& last_good,
                            const std::string& verdict) {
  return absl::StrCat("the step at ", ShortSha(culprit),
                      " did not reproduce when re-measured interleaved with ", ShortSha(last_good),
                      " (", verdict,
                      "): it is reported as unconfirmed, not as a culprit; the regression may be "
                      "noise or spread over several commits");
}

std::string InconclusiveText(int untested, const std::string& last_good,
                             const std::string& first_bad) {
  return absl::StrFormat(
      "%s between %s and %s could not be tested (build or benchmark failures); the "
      "regression is somewhere in %s",
      Count(untested, "commit"), ShortSha(last_good), ShortSha(first_bad),
      untested == 1 ? "it" : "them");
}

std::string ThrottledText(int throttled, int discarded, const std::vector<std::string>& reasons) {
  return absl::StrFormat("%s ran with the GPU throttled (%s)%s", Count(throttled, "benchmark run"),
                         absl::StrJoin(reasons, ", "),
                         discarded > 0 ? absl::StrFormat(": %d discarded and re-run", discarded)
                                       : "; pass --discard-throttled to re-run them");
}

std::string ForeignProcessesText(int runs, const std::vector<std::string>& processes) {
  return absl::StrFormat(
      "%s shared the GPU with other compute processes (%s): their samples are not to be "
      "trusted; free the GPU and run the job again",
      Count(runs, "benchmark run"), absl::StrJoin(processes, ", "));
}

std::string CappedText(int capped, const std::vector<std::string>& reasons) {
  return absl::StrFormat(
      "%s ran with the GPU's clocks capped by its driver (%s): kept, but their samples may be "
      "slow",
      Count(capped, "benchmark run"), absl::StrJoin(reasons, ", "));
}

std::string FinishedText(const v1::JobStatus& status, const std::string& error) {
  switch (status.status()) {
    case v1::OUTCOME_CULPRIT_FOUND:
      return absl::StrCat("Culprit: ", status.culprit().sha(), " ", status.culprit().subject());
    case v1::OUTCOME_CANDIDATES_FOUND:
      return absl::StrCat("Culprit is one of ", Count(status.candidates_size(), "commit"),
                          " (skipped commits border it)");
    default:
      return error;
  }
}

std::string LostWithWorkerText(const std::string& why) {
  return absl::StrCat("lost with its worker: ", why);
}

std::string AttemptLostText(int attempt, const std::string& why) {
  return absl::StrCat("attempt ", attempt, " lost: ", why);
}

std::string GaveUpText(int attempts, const std::string& why) {
  return absl::StrCat("gave up after ", Count(attempts, "attempt"), ": ", why);
}

std::string DiscardedText(const std::string& why) { return absl::StrCat("discarded: ", why); }

std::string OutsideIntervalText() { return "cancelled: outside the open interval"; }

std::string CancelledText(const std::string& reason) { return absl::StrCat("cancelled: ", reason); }

}  // namespace kbisect
