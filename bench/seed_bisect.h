// Copyright 2026 The kbisect Authors.
//
// The seed procedure, done with `git bisect run --first-parent` in a clone: build and measure
// GOOD and BAD (N runs each, median), threshold = good + 0.3 (bad - good), then at each step
// build and run the benchmark N times and call the commit bad when the median lies past the
// threshold (lower is better). The benchmarks' baseline for `kbisect run`.
#ifndef KBISECT_BENCH_SEED_BISECT_H_
#define KBISECT_BENCH_SEED_BISECT_H_

#include <string>

namespace kbisect_bench {

struct SeedBisectOptions {
  std::string repo;   // cloned into `clone` before the clock starts
  std::string clone;  // a path that does not exist yet
  std::string good;   // revisions (tag, branch or sha)
  std::string bad;
  std::string env;    // "K=V ..." exported for the builds and the benchmark ("" for none)
  std::string build;  // shell command run in the clone before each measurement ("": none)
  std::string bench;  // shell command printing "Latency: X ms" (the last such line counts)
  // The label of the benchmark's metric line ("LABEL: X ..."); lower is better.
  std::string metric_label = "Latency";
  int runs = 3;       // benchmark runs per commit (the median counts)
  double threshold = 0.3;
};

struct SeedBisectFigures {
  bool ok = false;          // git bisect named a first bad commit
  double wall_seconds = 0;  // baselines and bisect, builds included (not the clone)
  int steps = 0;            // git bisect run steps
  int bench_runs = 0;       // baselines included
  std::string culprit;      // refs/bisect/bad at the end
  std::string log;          // git bisect run's output, for diagnostics
};

SeedBisectFigures RunSeedBisect(const SeedBisectOptions& options);

}  // namespace kbisect_bench

#endif  // KBISECT_BENCH_SEED_BISECT_H_
