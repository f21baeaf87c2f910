// Copyright 2026 The kbisect Authors.
//
// Rounds of the graph search (`kbisect run --no-first-parent`, CommitGraphSearch) against the
// bound, on generated commit graphs: for each shape and size, up to 100 commits spread over the
// range are the culprit in turn (deterministic verdicts, W synchronous probes a round), and the
// mean and largest number of rounds are printed beside ceil(log_{W+1} n), the bound of a
// first-parent path of the same n commits. A graph can need more: a probe's verdict splits the
// candidates into its ancestors and the rest, and in a wide graph (many short parallel branches) no
// commit has half of them as ancestors. docs/benchmarks.md quotes the output.
//
//   graph_rounds_bench [--seed 1] [--sizes 60,250,1000] [--workers 1,2,4,8]
#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "common/search/bisect_search.h"
#include "common/search/commit_graph_search.h"
#include "tests/testing/commit_graphs.h"

namespace kbisect {
namespace {

struct Rounds {
  double mean = 0;
  int max = 0;
};

// Rounds over up to 100 culprits spread evenly over the graph (every one of a smaller graph)
// with `workers` probes a round.
Rounds Measure(const CommitGraphSearch& start, int workers) {
  Rounds rounds;
  const int n = start.n();
  const int step = std::max(1, n / 100);
  int culprits = 0;
  for (int culprit = 1; culprit <= n; culprit += step) {
    ++culprits;
    CommitGraphSearch search = start;
    int round = 0;
    for (std::vector<int> probes = search.NextProbes(workers); !probes.empty();
         probes = search.NextProbes(workers)) {
      ++round;
      for (int p : probes) {
        (void)search.Record(p, search.IsAncestor(culprit, p) ? v1::VERDICT_BAD : v1::VERDICT_GOOD);
      }
    }
    if (search.Candidates() != std::vector<int>{culprit}) {
      std::fprintf(stderr, "culprit %d not found\n", culprit);
    }
    rounds.mean += round;
    rounds.max = std::max(rounds.max, round);
  }
  rounds.mean /= culprits;
  return rounds;
}

int Main(int argc, char** argv) {
  CLI::App app{"Rounds of the graph search against the bound on generated commit graphs"};
  unsigned seed = 1;
  std::vector<int> sizes = {60, 250, 1000};
  std::vector<int> workers = {1, 2, 4, 8};
  app.add_option("--seed", seed, "Random seed of the graphs");
  app.add_option("--sizes", sizes, "Graph sizes (commits)")->delimiter(',');
  app.add_option("--workers", workers, "Probes a round (W)")->delimiter(',');
  CLI11_PARSE(app, argc, argv);

  std::printf("%-17s %5s %5s", "shape", "n", "merges");
  for (int w : workers) std::printf("   W=%d mean/max (bound)", w);
  std::printf("\n");
  std::mt19937 rng(seed);
  for (int size : sizes) {
    for (int shape = 0; shape < 4; ++shape) {
      testing::CommitGraph graph = shape == 0   ? testing::RandomMergesGraph(&rng, size)
                                   : shape == 1 ? testing::CrissCrossGraph(&rng, size)
                                   : shape == 2 ? testing::OctopusGraph(&rng, size)
                                                : testing::LongSideBranchGraph(&rng, size);
      int merges = 0;
      for (const auto& parents : graph.parents) merges += parents.size() > 1 ? 1 : 0;
      absl::StatusOr<CommitGraphSearch> search = CommitGraphSearch::Create(graph.parents);
      if (!search.ok()) {
        std::fprintf(stderr, "%s\n", std::string(search.status().message()).c_str());
        return 1;
      }
      std::printf("%-17s %5d %5d", graph.shape.c_str(), search->n(), merges);
      for (int w : workers) {
        const Rounds rounds = Measure(*search, w);
        std::printf("   %7.2f / %2d    (%2d)", rounds.mean, rounds.max,
                    BisectSearch::EstimateRounds(search->n(), w));
      }
      std::printf("\n");
    }
  }
  return 0;
}

}  // namespace
}  // namespace kbisect

int main(int argc, char** argv) { return kbisect::Main(argc, argv); }
