// Copyright 2026 The kbisect Authors.
//
// The noise models the simulated benchmarks draw samples from (accuracy_bench,
// suite_accuracy_bench): Gaussian with CVs 1-10%, a heavy-tailed Student t, and a bimodal one
// (a noisy neighbour). Each returns one sample of a commit whose true value is `value`.
#ifndef KBISECT_BENCH_NOISE_MODELS_H_
#define KBISECT_BENCH_NOISE_MODELS_H_

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"

namespace kbisect {

struct NoiseModel {
  std::string name;
  // Returns one sample of a commit whose true value is `value`.
  std::function<double(double value, std::mt19937_64& rng)> sample;
};

inline std::vector<NoiseModel> NoiseModels() {
  std::vector<NoiseModel> models;
  for (double cv : {0.01, 0.03, 0.05, 0.10}) {
    models.push_back(
        {absl::StrFormat("gauss cv=%g%%", cv * 100), [cv](double v, std::mt19937_64& rng) {
           return v * (1 + std::normal_distribution<double>(0, cv)(rng));
         }});
  }
  // Student t with 3 degrees of freedom scaled to a 5% standard deviation: rare large outliers.
  models.push_back({"heavy-tail t3 5%", [](double v, std::mt19937_64& rng) {
                      const double t = std::student_t_distribution<double>(3)(rng);
                      return v * (1 + 0.05 * t / std::sqrt(3.0));
                    }});
  // 2% gaussian noise plus a slow mode (+15%) one run in five, as with a noisy neighbour.
  models.push_back({"bimodal 2%+15%@20%", [](double v, std::mt19937_64& rng) {
                      const double base = v * (1 + std::normal_distribution<double>(0, 0.02)(rng));
                      return std::bernoulli_distribution(0.2)(rng) ? base * 1.15 : base;
                    }});
  return models;
}

}  // namespace kbisect

#endif  // KBISECT_BENCH_NOISE_MODELS_H_
