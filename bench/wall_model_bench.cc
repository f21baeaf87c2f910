// Copyright 2026 The kbisect Authors.
//
// The wall time of a bisect as the job's policies make it, without the machine: the real
// BisectJob driven by tests/testing/job_simulator (asynchronous workers, a shared build cache,
// jittered spans) over user_cases_bench's cases a-d, against the seed procedure done serially
// (git bisect: the two baselines, then ceil(log2 n) steps, each a checkout, a build and N runs).
// It separates what the scheduling costs from what a loaded 2-core machine adds (checkouts of
// 2,000 files by 7 slots at once, other processes), so a dispatch change can be judged by its
// figures in seconds instead of by one noisy end-to-end run. The end-to-end figures remain
// user_cases_bench's. Nothing is asserted: this prints figures.
//
//   build/bin/wall_model_bench [--case a,b,c] [--workers 1,7] [--positions 12] [--seeds 2]
//                              [--build-ahead 0,4,16] [--trace]
//
// Per case and worker count: the mean and worst modelled wall time over culprit positions
// spread across the range and seeds, the ratio of the mean to the modelled serial git bisect,
// the mean probing rounds, bench runs and builds, and how often the culprit was right.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/rpc/proto_time.h"
#include "common/search/bisect_search.h"
#include "tests/testing/job_simulator.h"

namespace kbisect {
namespace {

struct ModelCase {
  std::string id;
  std::string title;
  int commits = 1000;
  int runs = 3;
  double cv = 0.01;
  double checkout_seconds = 0.1;
  double build_seconds = 0;
  double run_seconds = 0.4;
  double target = 0;  // Target ratio at W=7 (user_cases_bench's), 0: none.
};

std::vector<ModelCase> Cases() {
  return {
      {"a", "1,000 commits, 0.4 s benchmark, 3 runs, CV 1%", 1000, 3, 0.01, 0.1, 0, 0.4, 0.40},
      {"b", "deterministic, --runs 1", 1000, 1, 0, 0.1, 0, 0.4, 0.45},
      {"c", "(a) + a 2 s build, CV 2%", 1000, 3, 0.02, 0.1, 2, 0.4, 0.25},
      // user_cases_bench's case f (lz4) on a host whose cores carry every worker's build at once
      // (16 cores and more for `make -j2`): what more workers buy where the host is no limit.
      {"e", "lz4 on a large host: 873 commits, an 8 s build, 3 runs of 0.03 s, deterministic", 873,
       3, 0, 0.1, 8, 0.03, 0},
  };
}

// The seed procedure done by `git bisect run`: GOOD and BAD measured, then one step per halving,
// each a checkout, a build and `runs` runs.
double SerialSeconds(const ModelCase& c) {
  const double step = c.checkout_seconds + c.build_seconds + c.runs * c.run_seconds;
  return (2 + BisectSearch::EstimateRounds(c.commits, 1)) * step;
}

// Prints one job's probe table in time order (--trace): kind, worker, commit, verdict, round,
// start and end (seconds from the job's start) and samples.
void PrintTrace(const SimulationResult& result) {
  const absl::Time start = FromProto(result.status.create_time());
  std::vector<const v1::Probe*> probes;
  for (const v1::Probe& probe : result.status.probes()) {
    if (probe.has_start_time()) probes.push_back(&probe);
  }
  std::stable_sort(probes.begin(), probes.end(), [](const v1::Probe* a, const v1::Probe* b) {
    return FromProto(a->start_time()) < FromProto(b->start_time());
  });
  for (const v1::Probe* probe : probes) {
    const double from = absl::ToDoubleSeconds(FromProto(probe->start_time()) - start);
    const double to =
        probe->has_end_time() ? absl::ToDoubleSeconds(FromProto(probe->end_time()) - start) : -1;
    auto wait = result.build_wait.find(probe->probe_id());
    std::cout << absl::StrFormat("    %-22s %-4s %5d %-22s r%d %7.2f-%7.2f build %4.2f n=%d%s%s\n",
                                 v1::ProbeKind_Name(probe->kind()), probe->worker(), probe->index(),
                                 v1::Verdict_Name(probe->verdict()), probe->round(), from, to,
                                 wait == result.build_wait.end() ? -1.0 : wait->second,
                                 probe->samples_size(),
                                 probe->state() == v1::PROBE_STATE_CANCELLED ? " cancelled" : "",
                                 probe->cached() ? " cached" : "");
    if (!probe->message().empty()) std::cout << "        " << probe->message() << "\n";
  }
}

void RunCase(const ModelCase& c, int workers, int build_ahead, int positions, int seeds,
             bool trace) {
  double wall_sum = 0;
  double wall_max = 0;
  double rounds = 0;
  double runs = 0;
  double builds = 0;
  int right = 0;
  int jobs = 0;
  for (int p = 0; p < positions; ++p) {
    const int culprit = 1 + (c.commits - 1) * (2 * p + 1) / (2 * positions);
    for (int seed = 1; seed <= seeds; ++seed) {
      v1::JobSpec spec = SimulationSpec();
      spec.set_runs_per_commit(c.runs);
      if (c.build_seconds > 0) spec.set_build_command("make");
      SimulationOptions options;
      options.commits = c.commits;
      options.culprit = culprit;
      options.noise_cv = c.cv;
      options.seed = static_cast<uint64_t>(seed * 1000 + p);
      options.workers = SimulatedWorkers(workers);
      options.setup_seconds = c.checkout_seconds;
      options.build_seconds = c.build_seconds;
      options.build_ahead = build_ahead;
      options.run_seconds = c.run_seconds;
      const SimulationResult result = SimulateJob(spec, options);
      if (trace && p == positions / 2 && seed == 1) PrintTrace(result);
      wall_sum += result.wall_seconds;
      wall_max = std::max(wall_max, result.wall_seconds);
      rounds += result.status.rounds();
      runs += result.bench_runs;
      builds += result.builds;
      right += result.status.culprit().index() == culprit ? 1 : 0;
      ++jobs;
    }
  }
  const double mean = wall_sum / jobs;
  const double serial = SerialSeconds(c);
  std::cout << absl::StrFormat(
      "  %s  W=%d  B=%-2d %7.2f s (worst %6.2f)  serial %6.2f s  ratio %.2f%s  rounds %.2f  runs "
      "%.1f"
      "  builds %.1f  culprit %d/%d\n",
      c.id, workers, build_ahead, mean, wall_max, serial, mean / serial,
      workers == 7 && c.target > 0 ? absl::StrFormat(" (target <= %.2f)", c.target) : "",
      rounds / jobs, runs / jobs, builds / jobs, right, jobs);
}

// Case d: two nightlies sharing the result cache. Job 1 bisects 0..n, job 2 has GOOD 30% into
// that range and BAD 30% past it (the culprit at 2n/3 in both).
void RunNightlies(int n, int workers, int positions, int seeds, bool trace) {
  double runs_ratio = 0;
  double wall_ratio = 0;
  double first_wall = 0;
  double second_wall = 0;
  double second_worst = 0;
  double first_runs = 0;
  double second_runs = 0;
  int right = 0;
  int jobs = 0;
  for (int seed = 1; seed <= seeds * positions; ++seed) {
    SimulationOptions options;
    options.commits = n;
    options.culprit = 2 * n / 3;
    options.noise_cv = 0.01;
    options.seed = static_cast<uint64_t>(seed);
    options.workers = SimulatedWorkers(workers);
    const SimulationResult first = SimulateJob(SimulationSpec(), options);
    options.first_commit = 3 * n / 10;
    options.seed = static_cast<uint64_t>(seed + 1000);
    options.cached = CachedResultsOf(first);
    const SimulationResult second = SimulateJob(SimulationSpec(), options);
    if (trace && seed == 1) {
      PrintTrace(second);
      for (const v1::JobEvent& event : second.events) {
        std::cout << absl::StrFormat(
            "    %7.2f %s\n",
            absl::ToDoubleSeconds(FromProto(event.time()) - FromProto(second.status.create_time())),
            event.message());
      }
    }
    runs_ratio += static_cast<double>(second.bench_runs) / first.bench_runs;
    wall_ratio += second.wall_seconds / first.wall_seconds;
    first_wall += first.wall_seconds;
    second_wall += second.wall_seconds;
    second_worst = std::max(second_worst, second.wall_seconds);
    first_runs += first.bench_runs;
    second_runs += second.bench_runs;
    right += second.status.culprit().sha() == first.status.culprit().sha() ? 1 : 0;
    ++jobs;
  }
  std::cout << absl::StrFormat(
      "  d  W=%d  job 2 / job 1: bench runs %.2f (target <= 0.35), wall %.2f (target <= 0.35)"
      "  same culprit %d/%d\n"
      "        job 1 %.2f s %.1f runs, job 2 %.2f s (worst %.2f) %.1f runs\n",
      workers, runs_ratio / jobs, wall_ratio / jobs, right, jobs, first_wall / jobs,
      first_runs / jobs, second_wall / jobs, second_worst, second_runs / jobs);
}

}  // namespace
}  // namespace kbisect

int main(int argc, char** argv) {
  CLI::App app{"Modelled wall time of kbisect's job policies against a serial git bisect"};
  std::string cases = "a,b,c,d";
  std::string workers = "1,7";
  int positions = 12;
  int seeds = 2;
  bool trace = false;
  std::string build_ahead = "0";
  app.add_option("--case", cases, "Cases to model (a,b,c,d,e)");
  app.add_option("--workers", workers, "Worker counts");
  app.add_option("--positions", positions, "Culprit positions across the range");
  app.add_option("--seeds", seeds, "Seeds per position");
  app.add_option("--build-ahead", build_ahead, "Builds ahead of the host (cases with a build)");
  app.add_flag("--trace", trace, "Print the probe table of the middle culprit's first job");
  CLI11_PARSE(app, argc, argv);
  std::cout << "Modelled wall time (job_simulator: shared build cache, 5% jitter), mean over "
            << positions << " culprit positions x " << seeds << " seeds\n";
  for (const kbisect::ModelCase& c : kbisect::Cases()) {
    if (cases.find(c.id) == std::string::npos) continue;
    std::cout << "(" << c.id << ") " << c.title << "\n";
    for (absl::string_view w : absl::StrSplit(workers, ',')) {
      for (absl::string_view b : absl::StrSplit(build_ahead, ',')) {
        if (c.build_seconds <= 0 && b != "0") continue;
        kbisect::RunCase(c, std::stoi(std::string(w)), std::stoi(std::string(b)), positions, seeds,
                         trace);
      }
    }
  }
  if (cases.find('d') != std::string::npos) {
    std::cout << "(d) two nightlies over overlapping ranges, one result cache\n";
    for (absl::string_view w : absl::StrSplit(workers, ',')) {
      kbisect::RunNightlies(1000, std::stoi(std::string(w)), positions, seeds, trace);
    }
  }
  return 0;
}
