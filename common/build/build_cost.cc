// Copyright 2026 The kbisect Authors.
#include "common/build/build_cost.h"

#include <algorithm>
#include <cmath>

namespace kbisect {
namespace {

// Builds shorter than this say nothing reliable about the cores they use.
constexpr absl::Duration kShortestMeasuredBuild = absl::Milliseconds(50);
// The least share of a core a build is counted as.
constexpr double kLightestBuild = 0.125;

}  // namespace

std::optional<double> CoresPerBuild(const std::vector<BuildCost>& recent) {
  std::optional<double> heaviest;
  for (const BuildCost& cost : recent) {
    if (cost.wall < kShortestMeasuredBuild) continue;
    const double cores =
        absl::FDivDuration(cost.cpu, cost.wall) * (1 + std::max(0, cost.overlapping));
    if (!heaviest.has_value() || cores > *heaviest) heaviest = cores;
  }
  return heaviest;
}

int ConcurrentBuildLimit(int cores, std::optional<double> cores_per_build) {
  if (!cores_per_build.has_value()) return 1;
  // A build that keeps 1.9 of 2 cores busy is a 2-core build (the 0.1 rounds it up); one that
  // waits on something else (the network, a remote compiler) counts as kLightestBuild of a
  // core, so that the slots stay bounded.
  const double per_build = std::max(kLightestBuild, *cores_per_build);
  return std::max(1, static_cast<int>(std::floor(std::max(1, cores) / per_build + 0.1)));
}

}  // namespace kbisect
