// Copyright 2026 The kbisect Authors.
//
// Where a flaky pass/fail test runs next: the commits whose results are expected to tell the
// most about the culprit's position, measured as the mutual information between the results and
// the position under the culprit posterior (culprit_posterior.h). A probe at commit x fails at
// the BAD commits' rate p when the first bad commit is at or below x, else at the GOOD commits'
// rate q. With W workers the W commits are chosen together, each adding the most information to
// those already running and those chosen before it (a greedy choice over the joint results,
// which never counts the information two probes share twice). Git's midpoint is the answer for a
// deterministic test and a uniform posterior; with p = 0.3 and q = 0.05 the best single probe
// sits below the median (P(first bad <= x) = 0.44), with p = 0.1 and q = 0 at 0.37: a commit
// more likely GOOD, whose one failure would say much.
//
// Pure: no I/O, no clock; the same inputs give the same choice, so a journal replays it.
//
//   FailRates rates{posterior.good_fail_rate, posterior.bad_fail_rate};
//   std::vector<int> next = ChooseInformativeProbes(posterior.probability, rates, running,
//                                                   idle_workers, last_good + 1, first_bad - 1);
#ifndef KBISECT_COMMON_SEARCH_INFORMATION_GAIN_H_
#define KBISECT_COMMON_SEARCH_INFORMATION_GAIN_H_

#include <vector>

#include "absl/types/span.h"

namespace kbisect {

// The fail rates a probe's result is predicted with: at GOOD commits (q) and at BAD ones (p).
// Rates are clamped into [1e-6, 1 - 1e-6] so that no result is impossible.
struct FailRates {
  double at_good = 0.05;
  double at_bad = 0.5;
};

// The rates per position k (0..n): those a result is predicted with if the first bad commit is
// k (with unknown rates, their posterior means under k: CulpritPosterior::good_fail_rate_at).
// A probe at an endpoint tells nothing about k with rates known, and much with rates that
// depend on k (the BAD commit's failures pin p, which a long run of passes elsewhere questions).
struct PositionRates {
  std::vector<double> at_good;
  std::vector<double> at_bad;
};
PositionRates ConstantRates(int n, const FailRates& rates);

// The information (in bits) that one result at each of `probes` (commit indices; repeats are
// independent runs of one commit) is expected to give about the culprit's position k, where
// `probability[k]` = P(first bad commit = k) for k in 0..n (n = probability.size() - 1; it need
// not sum to 1, it is normalised): I(results; k) = H(results) - H(results | k). Exact for up to
// kExactProbes probes (every combination of results); beyond that it is estimated from a fixed,
// seeded sample of result combinations (deterministic). 0 without probes.
inline constexpr int kExactProbes = 12;
double ExpectedInformation(absl::Span<const double> probability, const FailRates& rates,
                           absl::Span<const int> probes);
double ExpectedInformation(absl::Span<const double> probability, const PositionRates& rates,
                           absl::Span<const int> probes);

// Up to `count` commits in [lowest, highest] to run next, in the order chosen: each the commit
// whose result adds the most ExpectedInformation to `in_flight` (probes running now, whose
// results will come) and those chosen before it; ties go to the commit nearest the posterior's
// median. A commit may be chosen again (in flight or twice here): two runs of it may tell more
// than one run elsewhere; never one in `excluded` (it may run no more). Candidates are every
// index of the range when it holds at most
// kMaxCandidates, else kMaxCandidates indices at evenly spaced quantiles of the posterior mass
// inside the range and its two ends (the informative commits are where the mass changes, and
// the ends when rates depend on the culprit). Returns none when the
// range is empty or `count` <= 0.
inline constexpr int kMaxCandidates = 192;
std::vector<int> ChooseInformativeProbes(absl::Span<const double> probability,
                                         const FailRates& rates, absl::Span<const int> in_flight,
                                         int count, int lowest, int highest,
                                         absl::Span<const int> excluded = {});
std::vector<int> ChooseInformativeProbes(absl::Span<const double> probability,
                                         const PositionRates& rates,
                                         absl::Span<const int> in_flight, int count, int lowest,
                                         int highest, absl::Span<const int> excluded = {});

}  // namespace kbisect

#endif  // KBISECT_COMMON_SEARCH_INFORMATION_GAIN_H_
