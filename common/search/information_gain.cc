// Copyright 2026 The kbisect Authors.
#include "common/search/information_gain.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

namespace kbisect {
namespace {

constexpr double kRateFloor = 1e-6;
// Result combinations sampled past kExactProbes probes.
constexpr int kSampledOutcomes = 4096;

double Clamp(double rate) { return std::clamp(rate, kRateFloor, 1 - kRateFloor); }

// Binary entropy in bits.
double BinaryEntropy(double rate) {
  return -(rate * std::log2(rate) + (1 - rate) * std::log2(1 - rate));
}

// cumulative[k] = probability[1] + ... + probability[k] (position 0 holds no culprit),
// normalised to end at 1 (all zeros: a uniform posterior over 1..n).
std::vector<double> Cumulative(absl::Span<const double> probability) {
  const int n = static_cast<int>(probability.size()) - 1;
  std::vector<double> cumulative(probability.size(), 0);
  double sum = 0;
  for (int k = 1; k <= n; ++k) {
    sum += std::max(0.0, probability[k]);
    cumulative[k] = sum;
  }
  if (sum <= 0) {
    for (int k = 0; k <= n; ++k) cumulative[k] = n > 0 ? static_cast<double>(k) / n : 1;
    return cumulative;
  }
  for (double& c : cumulative) c /= sum;
  return cumulative;
}

// Positions first..last (within 1..n) whose rates are the same.
struct RateRun {
  int first = 1;
  int last = 1;
  double q = 0;
  double p = 0;
};

std::vector<RateRun> RateRuns(const PositionRates& rates, int n) {
  std::vector<RateRun> runs;
  for (int k = 1; k <= n; ++k) {
    const double q = Clamp(rates.at_good[k]);
    const double p = Clamp(rates.at_bad[k]);
    if (!runs.empty() && runs.back().q == q && runs.back().p == p) {
      runs.back().last = k;
    } else {
      runs.push_back({k, k, q, p});
    }
  }
  return runs;
}

// Positions with one mass, one pair of rates and the same `below` probes above the culprit's
// side (GOOD side: rate q; the others at or past it: rate p).
struct Atom {
  double mass = 0;
  int below = 0;
  double q = 0;
  double p = 0;
  double log_q = 0, log_not_q = 0, log_p = 0, log_not_p = 0;
};

// I(results; position) for `sorted` probes (ascending).
double Information(const std::vector<double>& cumulative, const std::vector<RateRun>& runs,
                   const std::vector<int>& sorted) {
  const int m = static_cast<int>(sorted.size());
  if (m == 0) return 0;
  std::vector<Atom> atoms;
  for (const RateRun& run : runs) {
    int start = run.first;
    while (start <= run.last) {
      // Probes below position k are those at k - 1 or lower.
      const int below = static_cast<int>(
          std::upper_bound(sorted.begin(), sorted.end(), start - 1) - sorted.begin());
      const int next = below < m ? sorted[below] + 1 : std::numeric_limits<int>::max();
      const int end = std::min(run.last, next - 1);
      Atom atom;
      atom.mass = std::max(0.0, cumulative[end] - cumulative[start - 1]);
      atom.below = below;
      atom.q = run.q;
      atom.p = run.p;
      atom.log_q = std::log(run.q);
      atom.log_not_q = std::log(1 - run.q);
      atom.log_p = std::log(run.p);
      atom.log_not_p = std::log(1 - run.p);
      if (atom.mass > 0) atoms.push_back(atom);
      start = end + 1;
    }
  }
  double conditional = 0;  // H(results | position).
  for (const Atom& a : atoms) {
    conditional += a.mass * (a.below * BinaryEntropy(a.q) + (m - a.below) * BinaryEntropy(a.p));
  }
  std::vector<int> failed_before(m + 1, 0);  // Failures among the first i probes.
  std::vector<bool> fails(m);
  auto probability_of = [&]() {
    for (int i = 0; i < m; ++i) failed_before[i + 1] = failed_before[i] + (fails[i] ? 1 : 0);
    double total = 0;
    for (const Atom& a : atoms) {
      const int good_failures = failed_before[a.below];
      const int bad_failures = failed_before[m] - good_failures;
      total += a.mass * std::exp(good_failures * a.log_q + (a.below - good_failures) * a.log_not_q +
                                 bad_failures * a.log_p +
                                 (m - a.below - bad_failures) * a.log_not_p);
    }
    return total;
  };
  double marginal = 0;  // H(results).
  if (m <= kExactProbes) {
    for (uint32_t o = 0; o < (1u << m); ++o) {
      for (int i = 0; i < m; ++i) fails[i] = (o >> i) & 1u;
      const double z = probability_of();
      if (z > 0) marginal -= z * std::log2(z);
    }
  } else {
    std::mt19937_64 rng(0x5eedULL + static_cast<uint64_t>(m));
    std::vector<double> masses;
    for (const Atom& a : atoms) masses.push_back(a.mass);
    std::discrete_distribution<int> pick(masses.begin(), masses.end());
    std::uniform_real_distribution<double> unit(0, 1);
    for (int s = 0; s < kSampledOutcomes; ++s) {
      const Atom& a = atoms[pick(rng)];
      for (int i = 0; i < m; ++i) fails[i] = unit(rng) < (i < a.below ? a.q : a.p);
      const double z = probability_of();
      if (z > 0) marginal -= std::log2(z) / kSampledOutcomes;
    }
  }
  return std::max(0.0, marginal - conditional);
}

}  // namespace

PositionRates ConstantRates(int n, const FailRates& rates) {
  PositionRates out;
  out.at_good.assign(std::max(0, n) + 1, rates.at_good);
  out.at_bad.assign(std::max(0, n) + 1, rates.at_bad);
  return out;
}

double ExpectedInformation(absl::Span<const double> probability, const FailRates& rates,
                           absl::Span<const int> probes) {
  const int n = static_cast<int>(probability.size()) - 1;
  return ExpectedInformation(probability, ConstantRates(n, rates), probes);
}

double ExpectedInformation(absl::Span<const double> probability, const PositionRates& rates,
                           absl::Span<const int> probes) {
  const int n = static_cast<int>(probability.size()) - 1;
  if (n < 1) return 0;
  std::vector<int> sorted(probes.begin(), probes.end());
  std::sort(sorted.begin(), sorted.end());
  return Information(Cumulative(probability), RateRuns(rates, n), sorted);
}

std::vector<int> ChooseInformativeProbes(absl::Span<const double> probability,
                                         const FailRates& rates, absl::Span<const int> in_flight,
                                         int count, int lowest, int highest,
                                         absl::Span<const int> excluded) {
  const int n = static_cast<int>(probability.size()) - 1;
  return ChooseInformativeProbes(probability, ConstantRates(n, rates), in_flight, count, lowest,
                                 highest, excluded);
}

std::vector<int> ChooseInformativeProbes(absl::Span<const double> probability,
                                         const PositionRates& rates,
                                         absl::Span<const int> in_flight, int count, int lowest,
                                         int highest, absl::Span<const int> excluded) {
  const int n = static_cast<int>(probability.size()) - 1;
  lowest = std::max(lowest, 0);
  highest = std::min(highest, n);
  if (count <= 0 || n < 1 || lowest > highest) return {};
  const std::vector<double> cumulative = Cumulative(probability);
  const std::vector<RateRun> runs = RateRuns(rates, n);

  std::vector<int> candidates;
  if (highest - lowest + 1 <= kMaxCandidates) {
    for (int x = lowest; x <= highest; ++x) candidates.push_back(x);
  } else {
    // The range's ends, then its mass's quantiles.
    candidates = {lowest, highest};
    const double start = lowest > 0 ? cumulative[lowest - 1] : 0;
    const double inside = cumulative[highest] - start;
    for (int i = 0; i < kMaxCandidates - 2; ++i) {
      int x = 0;
      if (inside <= 0) {
        x = lowest + static_cast<int>((static_cast<int64_t>(highest - lowest) * i) /
                                      (kMaxCandidates - 3));
      } else {
        const double target = start + inside * (i + 0.5) / (kMaxCandidates - 2);
        x = static_cast<int>(std::lower_bound(cumulative.begin() + lowest,
                                              cumulative.begin() + highest + 1, target) -
                             cumulative.begin());
        x = std::min(x, highest);
      }
      candidates.push_back(x);
    }
    std::sort(candidates.begin(), candidates.end());
    candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  }
  candidates.erase(std::remove_if(candidates.begin(), candidates.end(),
                                  [&](int x) {
                                    return std::find(excluded.begin(), excluded.end(), x) !=
                                           excluded.end();
                                  }),
                   candidates.end());
  const int median =
      static_cast<int>(std::lower_bound(cumulative.begin(), cumulative.end(), 0.5) -
                       cumulative.begin());

  std::vector<int> chosen;
  std::vector<int> probes(in_flight.begin(), in_flight.end());
  for (int c = 0; c < count; ++c) {
    int best = -1;
    double best_information = -1;
    for (int x : candidates) {
      std::vector<int> with = probes;
      with.push_back(x);
      std::sort(with.begin(), with.end());
      const double information = Information(cumulative, runs, with);
      const bool better = information > best_information + 1e-12;
      const bool tie = std::abs(information - best_information) <= 1e-12 &&
                       std::abs(x - median) < std::abs(best - median);
      if (best < 0 || better || tie) {
        best = x;
        best_information = information;
      }
    }
    if (best < 0) break;
    chosen.push_back(best);
    probes.push_back(best);
  }
  return chosen;
}

}  // namespace kbisect
