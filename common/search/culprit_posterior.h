// Copyright 2026 The kbisect Authors.
//
// How sure a bisect is: the posterior probability of every first-bad position k in 1..n of a
// `good..bad` range under the one-step model (every commit below k measures like GOOD, every
// commit at or above k like BAD), given every measurement the job made. Pure: no I/O, no clock.
//
// The prior is uniform over the positions. A commit with no measurement (untested, skipped,
// untestable) carries no evidence, so the positions it separates share their probability.
//
// Numeric samples (the benchmark's metric, all in one frame) are modelled as a location shift:
// a sample of side s is center_s + e, with e drawn from one noise density f estimated from the
// data (see ComputeCulpritPosterior). Pass/fail results (--exit-code) are modelled as a result
// that contradicts its side (a pass at a bad commit, a fail at a good one) with a small error
// rate, or, for a flaky test (`estimate_flake_rates`), with fail rates at GOOD and at BAD commits
// that are not known but estimated from the results: each has a Beta prior and is integrated out.
// Both kinds may be given together; their log-likelihoods add.
//
//   std::vector<CommitEvidence> evidence = ...;  // one entry per measured commit
//   ASSIGN_OR_RETURN(CulpritPosterior posterior, ComputeCulpritPosterior(n, evidence));
//   double p = posterior.probability[culprit_index];
#ifndef KBISECT_COMMON_SEARCH_CULPRIT_POSTERIOR_H_
#define KBISECT_COMMON_SEARCH_CULPRIT_POSTERIOR_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace kbisect {

// What was measured at one commit of the range (index 0 = GOOD, n = BAD).
struct CommitEvidence {
  int index = 0;
  // Benchmark samples, all in one frame (a worker's offset already removed). Finite values.
  std::vector<double> samples;
  // Pass/fail results (exit codes).
  int passes = 0;
  int failures = 0;
};

struct PosteriorOptions {
  // Probability that one pass/fail result contradicts its commit's side (an infrastructure
  // error, not a flaky test). With a uniform prior every position of a wide untested stretch
  // competes, so a pass at k-1 and a fail at k give about 1 / (1 + n * flake_rate): 0.99 at
  // n = 10,000.
  double flake_rate = 1e-6;
  // A flaky test (--flaky): a GOOD commit fails with an unknown rate q and a BAD one with an
  // unknown rate p, the same at every commit of a side. Each has a Beta prior and is integrated
  // out, so a split's pass/fail likelihood is the product of the two sides' Beta-binomial
  // marginals, B(a + failures, b + passes) / B(a, b) (exact, and order-free: a result counts the
  // same whether the worker stopped after it or not). flake_rate is then unused.
  bool estimate_flake_rates = false;
  // Beta(a, b) prior of q: mean 5%, 90% of its mass under 11.4% ("rarely fails at GOOD").
  double good_fail_prior_a = 1;
  double good_fail_prior_b = 19;
  // Beta(a, b) prior of p: uniform (a BAD commit may fail 1% or 100% of its runs).
  double bad_fail_prior_a = 1;
  double bad_fail_prior_b = 1;
  // Weight of the wide (Cauchy) component mixed into the noise density, so that a sample far
  // from both sides moves the posterior little.
  double outlier_weight = 0.01;
};

struct CulpritPosterior {
  int n = 0;
  // probability[k] = P(first bad commit = k), k in 1..n; probability[0] = 0. Sums to 1.
  std::vector<double> probability;
  // The most probable position (the smallest of equals).
  int most_likely = 0;
  // The spread of the noise the numeric model used (the residuals' robust standard deviation),
  // 0 without numeric samples.
  double noise_scale = 0;
  // With estimate_flake_rates: the posterior means of the fail rates at GOOD commits (q) and at
  // BAD commits (p), averaged over the positions; 0 otherwise.
  double good_fail_rate = 0;
  double bad_fail_rate = 0;
  // With estimate_flake_rates: per position k (0..n), the rates' posterior means given that the
  // first bad commit is k (what the next result at a commit is predicted with under k); empty
  // otherwise.
  std::vector<double> good_fail_rate_at;
  std::vector<double> bad_fail_rate_at;

  // The probability that the first bad commit is one of `positions` (out-of-range ones count 0).
  double MassOf(absl::Span<const int> positions) const;
  // Up to `count` positions by decreasing probability (ties by index), each at least
  // `min_probability`.
  std::vector<int> Top(int count, double min_probability) const;
};

// The posterior over the first-bad position of a range of n commits (indices 0..n) given the
// evidence (entries may repeat an index; they are merged).
//
// The numeric noise density is estimated from the data, in two steps. First the most likely
// split under a Gaussian model (the one minimising the within-side sum of squares) gives
// residuals (each sample minus its side's median); f is a kernel density estimate of those
// residuals (Gaussian kernel, Silverman's bandwidth from their robust spread), mixed with a
// wide Cauchy component (`outlier_weight`). A skewed or bimodal noise shows in f as it is, and an
// outlier far from both sides is nearly neutral. Each sample is scored leaving its own residual
// out of f, so the fit does not favour the split it was made from. Then, for every split, the
// two sides' centers are their medians under that split (refitted per hypothesis) and the
// log-likelihood carries the Laplace factor -1/2 log(n_good n_bad) for the two fitted centers.
// When the posterior's most likely split differs from the first one, the residuals are taken
// again from it and the posterior computed once more.
//
// Errors: InvalidArgument if n < 1, an index is outside [0, n], a count is negative, a sample is
// not finite, or an option is outside (0, 0.5) (a Beta prior's parameters: not positive).
absl::StatusOr<CulpritPosterior> ComputeCulpritPosterior(int n,
                                                         absl::Span<const CommitEvidence> evidence,
                                                         const PosteriorOptions& options = {});

}  // namespace kbisect

#endif  // KBISECT_COMMON_SEARCH_CULPRIT_POSTERIOR_H_
