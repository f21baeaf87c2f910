// Copyright 2026 The kbisect Authors.
//
// Measures `kbisect run` with W = 1, 3, 7 workers against `git bisect run --first-parent` on the
// same generated repository (default: 1,000 commits, 2,000 files, a 0.4 s benchmark, 3 runs per
// commit as in the seed procedure), in one run, and prints wall time, rounds, bench runs and the
// ratios to git bisect, plus kbisect's per-probe overhead beyond build + bench (dispatch,
// checkout, result). Nothing is asserted: this prints figures (docs/benchmarks.md quotes them).
//
//   build/bin/bisect_vs_git_bench [--commits N] [--files F] [--bench-seconds S] [--workers 1,3,7]
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "google/protobuf/util/time_util.h"
#include "nlohmann/json.hpp"

namespace {

struct Shell {
  int exit_code;
  std::string out;
};

Shell RunShell(const std::string& command) {
  Shell result{-1, ""};
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.out.append(buffer, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

double Seconds(const std::string& rfc3339) {
  google::protobuf::Timestamp t;
  if (!google::protobuf::util::TimeUtil::FromString(rfc3339, &t)) return 0;
  return static_cast<double>(t.seconds()) + t.nanos() / 1e9;
}

double DurationSeconds(const nlohmann::json& d) {
  if (!d.is_string()) return 0;
  std::string s = d.get<std::string>();
  if (!s.empty() && s.back() == 's') s.pop_back();
  return std::atof(s.c_str());
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

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
  const std::string tmp = RunShell("mktemp -d /tmp/kbisect-bench.XXXXXX").out;
  const std::string dir = std::string(absl::StripTrailingAsciiWhitespace(tmp));
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
  const std::string clone = dir + "/git-bisect";
  RunShell(absl::StrCat("git clone -q ", repo, " ", clone));
  const std::string step = clone + "/.kbisect-step.sh";
  RunShell(absl::StrCat(
      "cat > ", step, " <<'SH'\n#!/bin/sh\n",
      "m() { for i in 1 2 3; do ./bench.sh; done | awk '{print $2}' | sort -n | sed -n 2p; }\n",
      "v=$(m); awk -v v=\"$v\" -v t=\"$THRESHOLD\" 'BEGIN { exit (v > t) }'\nSH\nchmod +x ", step));
  const absl::Time git_start = absl::Now();
  Shell git = RunShell(absl::StrCat(
      "cd ", clone, " && export ", env, " && ",
      "m() { for i in 1 2 3; do ./bench.sh; done | awk '{print $2}' | sort -n | sed -n 2p; } && ",
      "git checkout -q v1.0 && g=$(m) && git checkout -q main && b=$(m) && ",
      "export THRESHOLD=$(awk -v g=$g -v b=$b 'BEGIN { print g + 0.3 * (b - g) }') && ",
      "git bisect start --first-parent main v1.0 >/dev/null && ", "git bisect run ", step,
      " > bisect.log 2>&1; ", "grep -c '^running' bisect.log; git rev-parse refs/bisect/bad"));
  const double git_seconds = absl::ToDoubleSeconds(absl::Now() - git_start);
  std::vector<std::string> git_lines = absl::StrSplit(git.out, '\n', absl::SkipEmpty());
  const int git_steps = git_lines.empty() ? 0 : std::atoi(git_lines[0].c_str());
  const bool git_right = git_lines.size() > 1 && git_lines[1] == expected;

  std::cout << absl::StrFormat("\n%-22s %9s %7s %7s %11s %9s %8s %13s\n", "tool", "wall (s)",
                               "ratio", "rounds", "bench runs", "correct", "probes",
                               "overhead p50");
  std::cout << absl::StrFormat("%-22s %9.2f %7.2f %7d %11d %9s %8d %13s\n", "git bisect run",
                               git_seconds, 1.0, git_steps, 3 * git_steps + 6,
                               git_right ? "yes" : "NO", git_steps, "-");
  const std::vector<std::string> worker_counts = absl::StrSplit(workers_list, ',');
  for (const std::string& w : worker_counts) {
    // Cold: a fresh cache (mirror clone and every slot's first full checkout are paid inside the
    // run). Warm: the same cache again, as for any later bisect in that repository.
    for (const char* cache_state : {"cold", "warm"}) {
      const std::string json = absl::StrCat(dir, "/kbisect-w", w, "-", cache_state, ".json");
      const std::string cache = absl::StrCat(dir, "/cache-w", w);
      const absl::Time start = absl::Now();
      Shell run = RunShell(absl::StrCat(env, " KBISECT_CACHE_DIR=", cache, " ", bin,
                                        "/kbisect run v1.0 main --quiet --no-confirm --repo ", repo,
                                        " --workers ", w, " --json ", json,
                                        " -- ./bench.sh > /dev/null 2>&1"));
      const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
      nlohmann::json result;
      try {
        result = nlohmann::json::parse(RunShell("cat " + json).out);
      } catch (const std::exception& e) {
        std::cerr << "kbisect W=" << w << " produced no JSON (exit " << run.exit_code << ")\n";
        continue;
      }
      // A slot's first probe creates its checkout (a full tree write); later probes only move it.
      // Both are reported: the warm figure is the steady state of a long-lived worker.
      std::vector<double> overheads;
      std::vector<double> warm_overheads;
      std::vector<double> warm_checkouts;
      std::set<std::string> seen_workers;
      int probes = 0;
      std::vector<nlohmann::json> finished;
      for (const auto& probe : result["probes"]) {
        if (probe["state"] == "finished") finished.push_back(probe);
      }
      std::sort(finished.begin(), finished.end(), [](const auto& a, const auto& b) {
        return Seconds(a["start_time"]) < Seconds(b["start_time"]);
      });
      for (const auto& probe : finished) {
        ++probes;
        const double span = Seconds(probe["end_time"]) - Seconds(probe["start_time"]);
        const auto& timings = probe["timings"];
        const double overhead =
            span - DurationSeconds(timings["build"]) - DurationSeconds(timings["bench"]);
        overheads.push_back(overhead);
        if (!seen_workers.insert(probe["worker"].get<std::string>()).second) {
          warm_overheads.push_back(overhead);
          warm_checkouts.push_back(DurationSeconds(timings["checkout"]));
        }
      }
      const bool right = result["culprit"].is_object() && result["culprit"]["sha"] == expected;
      std::cout << absl::StrFormat(
          "%-22s %9.2f %7.2f %7d %11d %9s %8d %10.1f ms   (warm slots: %.1f ms, checkout %.1f "
          "ms)\n",
          absl::StrCat("kbisect W=", w, " ", cache_state), seconds, seconds / git_seconds,
          result["rounds"].get<int>(), result["bench_runs"].get<int>(), right ? "yes" : "NO",
          probes, Median(overheads) * 1000, Median(warm_overheads) * 1000,
          Median(warm_checkouts) * 1000);
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
