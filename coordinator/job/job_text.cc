// Copyright 2026 The kbisect Authors.
#include "coordinator/job/job_text.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/metric/percent.h"
#include "common/rpc/enum_label.h"
#include "common/text/count.h"

namespace kbisect {

v1::JobWarning QuarantinedFact(const QuarantineDecision& decision, const std::string& unit) {
  v1::JobWarning warning;
  v1::JobWarning::WorkerQuarantined& fact = *warning.mutable_worker_quarantined();
  fact.set_worker(decision.worker);
  fact.set_kind(decision.kind);
  fact.set_offset_fraction(decision.offset_fraction);
  fact.set_median(decision.median);
  fact.set_center(decision.center);
  fact.set_regression_fraction(decision.regression_fraction);
  fact.set_failure(decision.failure);
  fact.set_unit(unit);
  return warning;
}

v1::ConfirmationVerdictFact ConfirmationVerdictOf(const ConfirmationJudgement& judgement,
                                                  const std::vector<std::string>& workers,
                                                  int fresh_pairs, int reused_pairs) {
  v1::ConfirmationVerdictFact fact;
  fact.set_ratio(judgement.ratio);
  fact.set_ci_low(judgement.ci_low);
  fact.set_ci_high(judgement.ci_high);
  fact.set_fresh_pairs(fresh_pairs);
  fact.set_reused_pairs(reused_pairs);
  for (const std::string& worker : workers) fact.add_workers(worker);
  fact.set_below_minimum(judgement.below_minimum);
  return fact;
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

std::string FixSwappedText(const std::string& reason) {
  return absl::StrCat(reason,
                      ". With --find-fix GOOD is the slow commit and BAD the fast one: swap "
                      "them, or drop --find-fix to bisect the regression.");
}

std::string NoFixText(const std::string& reason) { return absl::StrCat("No fix: ", reason); }

std::string TryNotSignificantText(const std::string& judgement) {
  return judgement.empty()
             ? std::string("no significant difference between the base and the change")
             : absl::StrCat("no significant difference between the base and the change: ",
                            judgement);
}

std::string EveryWorkerQuarantinedText() {
  return "every worker was quarantined (see the drift events): the hardware is not consistent "
         "enough to bisect on; check the GPUs and rerun";
}

std::string SpeculationNotTheCulpritText() {
  return "not needed: measured ahead in case this commit was the culprit, and it is not";
}

std::string SpeculationNotNeededText() {
  return "not needed: the search's own samples confirm the culprit";
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
