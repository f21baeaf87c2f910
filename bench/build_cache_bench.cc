// Copyright 2026 The kbisect Authors.
//
// build_cache_bench: what a host's build cache costs a probe beyond its build (issue 51's
// per-probe overhead with copies). It runs BuildCache::Acquire, the worker's own path from a task
// to a built checkout, over the commits a W=1 bisect of a real repository visits, in that order,
// with a real build command, and prints for each commit the acquisition's time outside the build
// command: the lookup and the checkout (Acquired::checkout_time, which the task reports as its
// checkout), and the rest (the read watch, the marker, eviction), as the task adds them to its
// span.
//
//   build/bin/build_cache_bench --repo /work/.mirror/lz4+lz4/repo [--commits 873]
//       [--build "make -C lib -j2"] [--step 0.6] [--cache-size 16] [--passes 1]
//
// The commits are the last --commits + 1 first-parent commits of the repository's HEAD (index 0
// the oldest); the order is a binary search for a step at --step of the range, BAD and GOOD
// first, as `kbisect run` at W=1 visits them. --passes > 1 runs the sequence again in a fresh
// cache directory each time (the compiler cache, outside it, stays warm).
#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "bench/bench_util.h"
#include "common/exec/exec.h"
#include "worker/build_cache.h"

namespace kbisect {
namespace {

// The indices a W=1 bisect of `n` commits with its step at `step` visits: n (BAD), 0 (GOOD),
// then the midpoints.
std::vector<int> BisectOrder(int n, int step) {
  std::vector<int> order = {n, 0};
  int good = 0;
  int bad = n;
  while (bad - good > 1) {
    const int mid = good + (bad - good) / 2;
    order.push_back(mid);
    if (mid >= step) {
      bad = mid;
    } else {
      good = mid;
    }
  }
  return order;
}

double Ms(absl::Duration d) { return absl::ToDoubleMilliseconds(d); }

int Main(int argc, char** argv) {
  std::string repo;
  int commits = 873;
  std::string build = "make -C lib -j2";
  double step = 0.6;
  int cache_size = kDefaultBuildCacheSize;
  int passes = 1;
  CLI::App app{"What a host's build cache costs a probe beyond its build"};
  app.add_option("--repo", repo, "A git repository (its HEAD's first-parent history)")->required();
  app.add_option("--commits", commits, "The range: this many commits before HEAD")
      ->capture_default_str();
  app.add_option("--build", build, "The build command")->capture_default_str();
  app.add_option("--step", step, "Where the bisect's step is, a fraction of the range")
      ->capture_default_str();
  app.add_option("--cache-size", cache_size, "--build-cache-size")->capture_default_str();
  app.add_option("--passes", passes, "Sequences, each in a fresh cache")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::vector<std::string> shas =
      absl::StrSplit(kbisect_bench::RunShell(
                         absl::StrFormat("git -C %s rev-list --first-parent --reverse -n %d HEAD",
                                         kbisect_bench::ShellQuote(repo), commits + 1))
                         .out,
                     '\n', absl::SkipEmpty());
  if (static_cast<int>(shas.size()) != commits + 1) {
    std::cerr << "build_cache_bench: cannot list " << commits + 1 << " commits of " << repo << "\n";
    return 1;
  }
  const std::vector<int> order = BisectOrder(commits, static_cast<int>(step * commits));
  std::unique_ptr<CommandRunner> runner = NewSubprocessRunner();
  std::vector<double> checkout_ms;
  std::vector<double> rest_ms;
  std::cout << "| pass | index | started from | checkout ms | rest ms | build s |\n"
            << "|---|---|---|---|---|---|\n";
  for (int pass = 0; pass < passes; ++pass) {
    const std::string cache_dir = kbisect_bench::MakeTempDir("kbisect-build-cache-bench");
    BuildCacheOptions options;
    options.max_entries = cache_size;
    BuildCache cache(cache_dir, options, runner.get());
    for (int index : order) {
      BuildRequest request;
      request.repository = repo;
      request.sha = shas[index];
      request.build.shell_command = build;
      request.build.env = BuildLayers::ProcessEnvironment();
      const absl::Time start = absl::Now();
      BuildCache::Acquired built = cache.Acquire(request, nullptr, nullptr);
      const absl::Duration total = absl::Now() - start;
      if (!built.step.ok()) {
        std::cerr << "build_cache_bench: " << index << ": " << built.step.message << "\n";
        return 1;
      }
      const absl::Duration rest = total - built.checkout_time - built.step.wall_time;
      std::string from = built.started_from.empty() ? "-" : built.started_from.substr(0, 7);
      for (int i = 0; i <= commits; ++i) {
        if (shas[i] == built.started_from) from = absl::StrCat(i);
      }
      std::cout << absl::StrFormat("| %d | %d | %s | %.1f | %.1f | %.2f |\n", pass + 1, index, from,
                                   Ms(built.checkout_time), Ms(rest),
                                   absl::ToDoubleSeconds(built.step.wall_time));
      if (index != commits) {  // The first acquisition clones the mirror.
        checkout_ms.push_back(Ms(built.checkout_time));
        rest_ms.push_back(Ms(rest));
      }
    }
    if (kbisect_bench::RunShell("rm -rf " + kbisect_bench::ShellQuote(cache_dir)).exit_code != 0) {
      return 1;
    }
  }
  std::sort(checkout_ms.begin(), checkout_ms.end());
  std::sort(rest_ms.begin(), rest_ms.end());
  std::cout << absl::StrFormat(
      "\nmedian over %d acquisitions (the first of each pass left out): checkout %.1f ms, rest "
      "%.1f ms, total outside the build %.1f ms\n",
      checkout_ms.size(), checkout_ms[checkout_ms.size() / 2], rest_ms[rest_ms.size() / 2],
      checkout_ms[checkout_ms.size() / 2] + rest_ms[rest_ms.size() / 2]);
  return 0;
}

}  // namespace
}  // namespace kbisect

int main(int argc, char** argv) { return kbisect::Main(argc, argv); }
