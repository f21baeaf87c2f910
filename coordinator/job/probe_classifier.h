// Copyright 2026 The kbisect Authors.
//
// Turns a probe's samples into a verdict relative to the GOOD and BAD baselines. Pure: no I/O,
// no clock, so the bisect simulation benchmark can run it millions of times.
#ifndef KBISECT_COORDINATOR_JOB_PROBE_CLASSIFIER_H_
#define KBISECT_COORDINATOR_JOB_PROBE_CLASSIFIER_H_

#include <string>
#include <vector>

#include "absl/types/span.h"
#include "common/spec/job_spec.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// Standard error of a median relative to that of a mean (normal data): sqrt(pi / 2).
inline constexpr double kMedianEfficiency = 1.2533;

// What the baselines say about the job, computed once both are measured.
struct BaselineAssessment {
  double good_median = 0;
  double bad_median = 0;
  // Regression of BAD versus GOOD in percent, positive when BAD is worse for `direction`.
  double regression_pct = 0;
  // True when BAD and GOOD are different enough to bisect (see AssessBaselines).
  bool regression = false;
  // True when BAD is better than GOOD (the endpoints look swapped).
  bool improvement = false;
  // Human-readable reason: why there is no regression, or why the baselines are unclear.
  std::string reason;
  // Set when the baselines are too thin to decide: run this many more of each and reassess.
  int more_runs = 0;
  // min(Mann-Whitney U, Kolmogorov-Smirnov) p-value of GOOD versus BAD.
  double p_value = 1;
  // Warnings about the step (a small_regression: under 5%, maybe noise).
  std::vector<v1::JobWarning> warnings;
};

// Compares GOOD and BAD samples. Both spans must be non-empty. `direction` must be LOWER or
// HIGHER. A move under max(min_effect_fraction, 1%) of GOOD is nothing to bisect, unless its
// uncertainty could hide twice that much (then more runs). Otherwise the move must place the
// threshold: with at least 5 runs each, the means are at least 4 standard errors apart (the
// spread inflated by 1.5 of its own standard errors); with fewer, the two sets do not overlap
// and the means are 10 standard errors apart. An unclear move asks for as many more runs of
// each as that separation needs if spread and difference hold (at least max(2, n/4), at most n
// more, never past max_runs); at max_runs a min(Mann-Whitney, KS) p-value under 0.05 decides.
// BAD better than GOOD sets `improvement`. A regression under 5% carries the seed's "may be
// noise" warning.
//
// `noise_floor` is the spread the job has seen elsewhere (Calibration::ObservedNoise): the
// baselines' spread is taken as at least that, so single-run baselines, which show none, are
// re-measured once the probes show noise.
BaselineAssessment AssessBaselines(absl::Span<const double> good, absl::Span<const double> bad,
                                   v1::Direction direction, double min_effect_fraction,
                                   int max_runs = kDefaultMaxRuns, double noise_floor = 0);

// Options of the statistical probe classifier.
struct ClassifierOptions {
  // The seed's point rule: BAD past good + threshold_fraction * (bad - good).
  double threshold_fraction = kDefaultThresholdFraction;
  // Runs may be doubled up to this many samples per commit.
  int max_runs = kDefaultMaxRuns;
  // The user's floor (--runs): a probe is measured this many times, and each sample's evidence
  // is capped at evidence / min(min_runs, 3), so that a benchmark whose spread is far below the
  // step is decided on the runs the user asked for (3 by default: three agreeing samples).
  int min_runs = kDefaultRunsPerCommit;
  // The noise the job has seen elsewhere (Calibration::ObservedNoise): the spread the evidence
  // assumes is at least this, so that single-run baselines (which show no spread) do not make
  // single noisy samples look decisive.
  double noise_floor = 0;
  // The seed's floor: within floor_band * |bad - good| of the threshold, take at least
  // floor_runs samples before deciding.
  double floor_band = 0.1;
  int floor_runs = 5;
  // Sequential evidence (log-likelihood-ratio units) needed to decide before max_runs.
  double evidence = 7.0;
  // A verdict of the evidence whose median lies this many standard errors on the other side of
  // the threshold marks a partial step, judged by the threshold at max_runs.
  double partial_step_z = 3.0;
  // At max_runs, a side is "clearly different" below this p-value (min of Mann-Whitney U and
  // Kolmogorov-Smirnov, as Pinpoint does).
  double alpha = 0.01;
};

// True when every value of `good` is one number, every value of `bad` another, and every
// sample equals the first or every sample the second: a benchmark that repeats exactly, at a
// commit that measures like one of its baselines (decision 229). False when a span is empty.
bool RepeatsABaseline(absl::Span<const double> samples, absl::Span<const double> good,
                      absl::Span<const double> bad);

// A probe's classification and its evidence.
struct ProbeClassification {
  v1::Verdict verdict = v1::VERDICT_UNSPECIFIED;
  // Set when the samples cannot decide yet: run this many more and classify again.
  int more_runs = 0;
  double median = 0;
  double p_value_vs_good = 1;
  double p_value_vs_bad = 1;
  std::string reason;
};

// Classifies `samples` of one commit against the GOOD and BAD baselines (all non-empty). The
// evidence is a sequential log-likelihood ratio around the threshold point
// good + threshold_fraction * (bad - good), with the noise taken from the baselines
// (conservatively for few samples) and each sample's weight capped against outliers. Once it
// passes +-evidence (and the seed's floor is met) the side decides; otherwise it asks for twice as
// many samples; at max_runs it decides only when the threshold side is backed by a significant
// test against the other baseline (min of Mann-Whitney U and KS, as Pinpoint), else AMBIGUOUS.
ProbeClassification ClassifyProbe(absl::Span<const double> samples, absl::Span<const double> good,
                                  absl::Span<const double> bad, const ClassifierOptions& options);

// The interleaved re-measurement of last-good and culprit (A/B/A/B on one worker), judged.
struct ConfirmationJudgement {
  // False when a side has no sample or the bootstrap could not run: nothing was confirmed.
  bool measured = false;
  // Median ratio culprit / last-good and its 95% bootstrap interval.
  double ratio = 0;
  double ci_low = 0;
  double ci_high = 0;
  double last_good_median = 0;
  double culprit_median = 0;
  // The interval excludes "no change" on the regression's side, and the step is no smaller than
  // the least step worth naming (JudgeConfirmationSets).
  bool confirmed = false;
  // The interval excludes "no change" but the step is smaller than the least step worth naming:
  // a residue (a machine's drift between baselines measured at two moments), not a regression.
  bool below_minimum = false;
};

// The least step a confirmation names, as a fraction: half the job's minimum effect (its
// --min-effect, at least 1%). A step that small or smaller is no regression worth a culprit.
double MinimumConfirmedStep(double min_effect_fraction);

// Judges the confirmation: a percentile bootstrap of the median ratio (fixed seed, 4,000
// resamples) must exclude 1 in the direction of the regression (`worse_is_up`: the regression
// raises the metric).
ConfirmationJudgement JudgeConfirmation(absl::Span<const double> last_good,
                                        absl::Span<const double> culprit, bool worse_is_up);

// True when a worker's GOOD samples `calibration` differ from the reference worker's GOOD
// samples `reference` by more than noise: the difference of the means is over three standard
// errors (pooled spread), or, with at least three samples each, the two sets do not overlap and
// min(Mann-Whitney U, KS) is under 0.01. Workers without a significant offset share one pool.
bool OffsetIsSignificant(absl::Span<const double> calibration, absl::Span<const double> reference);

// True when `samples` (a worker's GOOD calibration or A/A control) lie clearly more than `limit`
// away from `center` (the pool's or the worker's own GOOD): their mean's distance to it exceeds
// `limit` by two standard errors, the spread taken from `samples` and `reference` (the samples
// `center` was computed from). A noisy GPU is not quarantined on three unlucky runs.
bool OffsetExceeds(absl::Span<const double> samples, absl::Span<const double> reference,
                   double center, double limit);

// The spread of the metric seen in the GOOD and BAD samples: their pooled standard deviation,
// inflated for few samples as the classifier does (0 for single samples: nothing seen).
double BaselineNoise(absl::Span<const double> good, absl::Span<const double> bad);

// The median of `samples`, 0 when there are none (a probe without samples has no median).
double MedianOrZero(absl::Span<const double> samples);

// Min of the two-sided Mann-Whitney U and Kolmogorov-Smirnov p-values (1 when undefined).
double MinTestPValue(absl::Span<const double> a, absl::Span<const double> b);

// The seed's point rule: a probe is BAD when its median lies past
// good + threshold_fraction * (bad - good), on BAD's side; otherwise GOOD. `samples` must be
// non-empty and good_median != bad_median.
v1::Verdict ClassifyByThreshold(absl::Span<const double> samples, double good_median,
                                double bad_median, double threshold_fraction);

// Regression of `after` versus `before` in percent, positive when `after` is worse for `direction`.
double RegressionPercent(double before, double after, v1::Direction direction);

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_PROBE_CLASSIFIER_H_
