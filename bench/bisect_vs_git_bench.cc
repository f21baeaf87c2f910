// Copyright 2026 The kbisect Authors.
//
// Measures `kbisect run` with W = 1, 3, 7 workers against `git bisect run --first-parent` on the
// same generated repository (default: 1,000 commits, 2,000 files, a 0.4 s benchmark, 3 runs per
// commit as in the seed procedure), in one run, and prints wall time, rounds, bench runs and the
// ratios to git bisect, plus kbisect's per-probe overhead beyond build + bench (dispatch,
// checkout, result). Nothing is asserted: this prints figures (docs/benchmarks.md quotes them).
//
//   build/bin/bisect_vs_git_bench [--commits N] [--files F] [--bench-seconds S] [--workers 1,3,7]
#include <iostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/bench_util.h"
#include "bench/kbisect_runs.h"
#include "bench/seed_bisect.h"

using kbisect_bench::KbisectFigures;
using kbisect_bench::KbisectRunOptions;
using kbisect_bench::RunShell;
using kbisect_bench::SeedBisectFigures;
using kbisect_bench::SeedBisectOptions;
using kbisect_bench::Shell;

int main(int argc, char** argv) {
  int commits = 1000;
  int files = 2000;
  double bench_seconds = 0.4;
  std::string workers_list = "1,3,7";
  int culprit = 0;
  CLI::App app{"kbisect run vs git bisect run on a generated repository"};
  app.add_option("--commits", commits)->capture_default_str();
  app.add_option("--files", files)->capture_default_str();
  app.add_option("--bench-seconds", bench_seconds)->capture_default_str();
  app.add_option("--workers", workers_list)->capture_default_str();
  app.add_option("--culprit", culprit, "Culprit position (default: 2/3 of the range)");
  CLI11_PARSE(app, argc, argv);

  const std::string source = KBISECT_SOURCE_DIR;
  const std::string bin = KBISECT_BIN_DIR;
  const std::string dir = kbisect_bench::MakeTempDir("kbisect-bench");
  const std::string repo = dir + "/repo";
  std::cout << absl::StrFormat(
      "Generating %d commits x %d files (benchmark %.2f s, 3 runs per commit) in %s\n", commits,
      files, bench_seconds, dir);
  Shell made = RunShell(absl::StrCat(
      source, "/scripts/make-demo-repo.sh ", repo, " --commits ", commits, " --files ", files,
      culprit > 0 ? absl::StrCat(" --culprit ", culprit) : "", " --noise 0.01"));
  if (made.exit_code != 0) {
    std::cerr << "cannot generate the repository\n";
    return 1;
  }
  const std::string expected(absl::StripTrailingAsciiWhitespace(made.out));
  const std::string env = absl::StrFormat("KBISECT_DEMO_SLEEP=%.3f", bench_seconds);

  // git bisect run, as the seed procedure does it: baselines at GOOD and BAD (3 runs, median),
  // threshold = good + 0.3 (bad - good), then each step runs the benchmark 3 times.
  SeedBisectOptions seed;
  seed.repo = repo;
  seed.clone = dir + "/git-bisect";
  seed.good = "v1.0";
  seed.bad = "main";
  seed.env = env;
  seed.bench = "./bench.sh";
  const SeedBisectFigures git = kbisect_bench::RunSeedBisect(seed);
  const bool git_right = git.ok && git.culprit == expected;

  std::cout << absl::StrFormat("\n%-22s %9s %7s %7s %11s %9s %8s %13s\n", "tool", "wall (s)",
                               "ratio", "rounds", "bench runs", "correct", "probes",
                               "overhead p50");
  std::cout << absl::StrFormat("%-22s %9.2f %7.2f %7d %11d %9s %8d %13s\n", "git bisect run",
                               git.wall_seconds, 1.0, git.steps, git.bench_runs,
                               git_right ? "yes" : "NO", git.steps, "-");
  const std::vector<std::string> worker_counts = absl::StrSplit(workers_list, ',');
  for (const std::string& w : worker_counts) {
    // Cold: a fresh cache (mirror clone and every slot's first full checkout are paid inside the
    // run). Warm: the same cache again, as for any later bisect in that repository.
    for (const char* cache_state : {"cold", "warm"}) {
      KbisectRunOptions run;
      run.kbisect = bin + "/kbisect";
      run.repo = repo;
      run.good = "v1.0";
      run.bad = "main";
      run.workers = std::atoi(w.c_str());
      run.cache_dir = absl::StrCat(dir, "/cache-w", w);
      run.json = absl::StrCat(dir, "/kbisect-w", w, "-", cache_state, ".json");
      run.env = env;
      run.flags = {"--no-confirm"};
      run.bench = "./bench.sh";
      const KbisectFigures result = kbisect_bench::RunKbisect(run);
      if (!result.ok) {
        std::cerr << "kbisect W=" << w << " produced no JSON (exit " << result.exit_code << ")\n";
        continue;
      }
      // A slot's first probe creates its checkout (a full tree write); later probes only move it.
      // Both are reported: the warm figure is the steady state of a long-lived worker.
      const bool right = result.culprit == expected;
      std::cout << absl::StrFormat(
          "%-22s %9.2f %7.2f %7d %11d %9s %8d %10.1f ms   (warm slots: %.1f ms, checkout %.1f "
          "ms)\n",
          absl::StrCat("kbisect W=", w, " ", cache_state), result.wall_seconds,
          result.wall_seconds / git.wall_seconds, result.rounds, result.bench_runs,
          right ? "yes" : "NO", result.overhead.probes, result.overhead.median_ms,
          result.overhead.warm_median_ms, result.overhead.warm_checkout_median_ms);
    }
  }
  std::cout << "\ngit bisect run: 'rounds' = steps; bench runs include the seed's 3+3 baseline "
               "runs. kbisect rounds are probing rounds (the first overlaps the "
               "baselines).\nOverhead = probe span at the "
               "coordinator (lease to result) minus build and bench time, median over probes;\n"
               "warm slots = probes after each worker's first (whose checkout writes the whole "
               "tree).\n";
  RunShell("rm -rf " + dir);
  return 0;
}
