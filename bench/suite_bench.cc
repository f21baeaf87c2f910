// Copyright 2026 The kbisect Authors.
//
// One suite job against one bisect per metric, on a generated repository whose benchmark prints
// 20 kernels (scripts/make-suite-repo.sh: 7 regress at one commit, 2 at a second, 1 at a third,
// 1 improves, 9 do not move). Per trial and noise level, in the same run:
//   * suite:    `kbisect run --suite auto` (its follow-ups included);
//   * separate: `kbisect run --metric 'kernel_II: ([0-9.]+) ms'` for each of the 20 kernels.
// Prints the bench runs and wall time of both (and their ratio), and each side's per-metric
// accuracy: a regressed kernel is right when its culprit is the planted commit, an improved or
// unchanged one when it gets none. Nothing is asserted; docs/benchmarks.md quotes the tables.
//
// With `--separate informed` the other side is what a user who knew the steps would run: one
// single-metric bisect per regressing step, of its first kernel (the accuracy then counts those
// kernels only). `--metrics` and `--steps` are make-suite-repo.sh's; issue 51's table of six
// kernels, two stepping at commit 17 and one at 41 of 60:
//
//   build/bin/suite_bench [--trials 5] [--commits 60] [--noise 0.005,0.02] [--workers 2]
//   build/bin/suite_bench --metrics 6 --steps 17:0-1:1.25,41:2-2:1.25 --separate informed
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/bench_util.h"
#include "bench/kbisect_runs.h"
#include "nlohmann/json.hpp"

namespace kbisect_bench {
namespace {

struct Side {
  int jobs = 0;
  long bench_runs = 0;
  double wall_seconds = 0;
  int right = 0;
  int judged = 0;
  long follow_up_runs = 0;  // Of bench_runs, those of a suite's follow-ups.
};

// What make-suite-repo.sh printed: kernel -> culprit sha, "improved" or "unchanged".
std::map<std::string, std::string> MakeRepo(const std::string& dir, int commits, double noise,
                                            int metrics, const std::string& steps) {
  std::string command =
      absl::StrCat(KBISECT_SOURCE_DIR, "/scripts/make-suite-repo.sh ", dir, " --commits ", commits,
                   " --noise ", noise, " --metrics ", metrics);
  if (!steps.empty()) absl::StrAppend(&command, " --steps ", steps);
  const std::string out = RunShell(command).out;
  std::map<std::string, std::string> expected;
  for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    std::vector<std::string> parts = absl::StrSplit(line, '=');
    if (parts.size() == 2) expected[parts[0]] = parts[1];
  }
  return expected;
}

bool Right(const std::string& want, const std::string& culprit) {
  if (want == "unchanged" || want == "improved") return culprit.empty();
  return culprit == want;
}

// The kernels a user who knew the steps would bisect: the first kernel of each regressing step.
std::map<std::string, std::string> FirstOfEachStep(const std::map<std::string, std::string>& all) {
  std::map<std::string, std::string> first;
  std::map<std::string, bool> seen;
  for (const auto& [kernel, want] : all) {
    if (want == "unchanged" || want == "improved" || seen[want]) continue;
    seen[want] = true;
    first[kernel] = want;
  }
  return first;
}

}  // namespace
}  // namespace kbisect_bench

int main(int argc, char** argv) {
  using namespace kbisect_bench;
  CLI::App app{"One suite job against one bisect per metric"};
  int trials = 5;
  int commits = 60;
  int workers = 2;
  std::vector<double> noises = {0.005, 0.02};
  int metrics = 20;
  std::string steps;
  std::string separate_kind = "all";
  app.add_option("--trials", trials, "Trials per noise level");
  app.add_option("--commits", commits, "Commits in the generated range");
  app.add_option("--workers", workers, "Workers of every run");
  app.add_option("--noise", noises, "Uniform noise fractions of the benchmark")->delimiter(',');
  app.add_option("--metrics", metrics, "Kernels the benchmark prints");
  app.add_option("--steps", steps, "make-suite-repo.sh's steps (default: its own)");
  app.add_option("--separate", separate_kind,
                 "all: one bisect per kernel; informed: one per regressing step")
      ->check(CLI::IsMember({"all", "informed"}));
  CLI11_PARSE(app, argc, argv);

  const std::string tmp = MakeTempDir("suite-bench");
  const bool informed = separate_kind == "informed";
  std::printf("%d kernels, %d commits, %d workers, %d trials per noise level, separate: %s\n\n",
              metrics, commits, workers, trials,
              informed ? "one bisect per regressing step" : "one bisect per kernel");
  std::printf(
      "| noise | side | jobs | bench runs / trial | of which follow-ups' | wall s / trial | "
      "per-metric right |\n");
  std::printf("|---|---|--:|--:|--:|--:|--:|\n");
  for (double noise : noises) {
    const std::string repo = absl::StrCat(tmp, "/repo-", noise);
    const std::map<std::string, std::string> expected =
        MakeRepo(repo, commits, noise, metrics, steps);
    const std::map<std::string, std::string> bisected =
        informed ? FirstOfEachStep(expected) : expected;
    Side suite;
    Side separate;
    for (int trial = 0; trial < trials; ++trial) {
      KbisectRunOptions options;
      options.kbisect = absl::StrCat(KBISECT_BIN_DIR, "/kbisect");
      options.repo = repo;
      options.good = "v1.0";
      options.bad = "HEAD";
      options.workers = workers;
      options.cache_dir = absl::StrCat(tmp, "/cache-", noise, "-", trial);
      options.bench = "./bench.sh";
      options.json = absl::StrCat(tmp, "/suite.json");
      options.flags = {"--suite", "auto", "--no-cache"};
      const KbisectFigures figures = RunKbisect(options);
      ++suite.jobs;
      suite.bench_runs += figures.bench_runs;
      suite.wall_seconds += figures.wall_seconds;
      nlohmann::json result;
      try {
        result = nlohmann::json::parse(ReadFile(options.json));
      } catch (const std::exception&) {
      }
      // The parent's own runs are its rows'; the rest of the job's bench runs are its follow-ups'.
      long parent_runs = 0;
      if (result.contains("probes")) {
        for (const auto& probe : result["probes"]) {
          if (probe.contains("runs")) parent_runs += static_cast<long>(probe["runs"].size());
        }
      }
      suite.follow_up_runs += figures.bench_runs - parent_runs;
      std::map<std::string, std::string> found;
      if (result.contains("suite")) {
        for (const auto& row : result["suite"]) {
          found[row.value("name", "")] =
              row["culprit"].is_object() ? row["culprit"].value("sha", "") : "";
        }
      }
      for (const auto& [kernel, want] : expected) {
        ++suite.judged;
        auto it = found.find(kernel);
        suite.right += it != found.end() && Right(want, it->second);
      }
      for (const auto& [kernel, want] : bisected) {
        options.json = absl::StrCat(tmp, "/", kernel, ".json");
        options.flags = {"--metric", absl::StrCat(kernel, ": ([0-9.]+) ms"), "--no-cache"};
        const KbisectFigures one = RunKbisect(options);
        ++separate.jobs;
        separate.bench_runs += one.bench_runs;
        separate.wall_seconds += one.wall_seconds;
        ++separate.judged;
        separate.right += one.ok && Right(want, one.culprit);
      }
    }
    for (const auto& [name, side] : {std::pair<const char*, Side>{"suite", suite},
                                     std::pair<const char*, Side>{"separate", separate}}) {
      std::printf("| %.1f%% | %s | %d | %.1f | %.1f | %.2f | %d/%d |\n", 100 * noise, name,
                  side.jobs, static_cast<double>(side.bench_runs) / trials,
                  static_cast<double>(side.follow_up_runs) / trials, side.wall_seconds / trials,
                  side.right, side.judged);
    }
    std::printf("| %.1f%% | suite / separate | | %.1f%% | | %.1f%% | |\n", 100 * noise,
                100.0 * suite.bench_runs / separate.bench_runs,
                100.0 * suite.wall_seconds / separate.wall_seconds);
    std::fflush(stdout);
  }
  return 0;
}
