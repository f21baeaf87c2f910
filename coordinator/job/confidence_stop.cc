// Copyright 2026 The kbisect Authors.
#include "coordinator/job/confidence_stop.h"

#include <algorithm>
#include <string>
#include <utility>

namespace kbisect {

std::vector<CommitEvidence> PosteriorEvidence(const ProbeRows& probes,
                                              const v1::Confirmation& confirmation,
                                              const Calibration& calibration, bool pass_fail,
                                              int last_good, int first_bad) {
  std::vector<CommitEvidence> evidence;
  auto counts = [&](const std::string& worker) {
    const Calibration::Worker* state = calibration.Find(worker);
    return state == nullptr || !state->quarantined;
  };
  auto frame = [&](const std::string& worker, double value) {
    return calibration.HasOffset(worker) ? calibration.InReferenceFrame(worker, value) : value;
  };
  for (int row = 0; row < probes.size(); ++row) {
    const v1::Probe& probe = probes.Get(row);
    if (probe.state() != v1::PROBE_STATE_FINISHED || probe.provisional() ||
        probe.kind() == v1::PROBE_KIND_CONFIRM || !counts(probe.worker())) {
      continue;
    }
    CommitEvidence e;
    e.index = probe.index();
    if (pass_fail) {
      e.passes = probe.outcome() == v1::TASK_OUTCOME_PASSED ? 1 : 0;
      e.failures = probe.outcome() == v1::TASK_OUTCOME_FAILED ? 1 : 0;
    } else if (probe.kind() == v1::PROBE_KIND_BASELINE_BAD) {
      if (row != calibration.bad_probe()) continue;  // A BAD measured again replaced it.
      e.samples = calibration.ReferenceBadSamples();
    } else if (probe.outcome() == v1::TASK_OUTCOME_SUCCEEDED) {
      for (double v : probe.samples()) e.samples.push_back(frame(probe.worker(), v));
    }
    evidence.push_back(std::move(e));
  }
  if (!pass_fail) {
    for (const v1::ConfirmationPairs& set : confirmation.sets()) {
      if (!set.interleaved() || !counts(set.worker())) continue;  // Others repeat probes.
      CommitEvidence before{last_good, {}, 0, 0};
      CommitEvidence after{first_bad, {}, 0, 0};
      for (double v : set.last_good_samples()) before.samples.push_back(frame(set.worker(), v));
      for (double v : set.culprit_samples()) after.samples.push_back(frame(set.worker(), v));
      evidence.push_back(std::move(before));
      evidence.push_back(std::move(after));
    }
  }
  return evidence;
}

double BadProbability(const CulpritPosterior& posterior, int index) {
  double bad = 0;
  for (int k = 1; k <= std::min(index, posterior.n); ++k) bad += posterior.probability[k];
  return bad;
}

int DecidingProbe(const ProbeRows& probes, int index, v1::Verdict verdict) {
  for (int row = probes.size() - 1; row >= 0; --row) {
    const v1::Probe& probe = probes.Get(row);
    if (probe.kind() == v1::PROBE_KIND_BISECT && probe.index() == index &&
        probe.state() == v1::PROBE_STATE_FINISHED && probe.verdict() == verdict) {
      return row;
    }
  }
  return -1;
}

ConfidenceCheck CheckConfidence(const CulpritPosterior& posterior, int last_good, int first_bad,
                                int last_good_runs, int first_bad_runs, double confidence,
                                int min_runs, int max_runs) {
  ConfidenceCheck check;
  if (first_bad < 1 || first_bad > posterior.n) return check;
  check.probability = posterior.probability[first_bad];
  if (check.probability >= confidence) return check;
  const double below = BadProbability(posterior, first_bad - 1);  // last_good is BAD.
  const double above = std::max(0.0, 1 - below - check.probability);
  struct Side {
    double doubt;
    int index;
    int runs;
  };
  Side sides[2] = {{below, last_good, last_good_runs}, {above, first_bad, first_bad_runs}};
  if (sides[1].doubt > sides[0].doubt) std::swap(sides[0], sides[1]);
  for (const Side& side : sides) {
    // An endpoint carries no doubt of its own (the first bad commit is in 1..n).
    if (side.doubt <= 0 || side.index <= 0 || side.index >= posterior.n) continue;
    const int left = max_runs - side.runs;
    if (left <= 0) continue;
    check.remeasure = side.index;
    check.more_runs = std::min(std::max(min_runs, side.runs), left);
    return check;
  }
  return check;
}

v1::Verdict RemeasuredSide(const CulpritPosterior& posterior, int index, v1::Verdict verdict) {
  const double bad = BadProbability(posterior, index);
  if (verdict == v1::VERDICT_GOOD && bad > 0.5) return v1::VERDICT_BAD;
  if (verdict == v1::VERDICT_BAD && bad < 0.5) return v1::VERDICT_GOOD;
  return verdict;
}

}  // namespace kbisect
