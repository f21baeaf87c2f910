// Copyright 2026 The kbisect Authors.
//
// What a user gets: `kbisect run` with its default options (confirmation on) unless a case says
// otherwise, each case against the seed procedure done by `git bisect run --first-parent` on
// the same repository in the same run (bench/seed_bisect.h: build, N runs, median vs good +
// 0.3 (bad - good), with the seed's baselines at GOOD and BAD). Every kbisect run starts with
// an empty cache (mirror clone and first checkouts paid inside the run) except case d's second
// job, which shares the first job's cache by design; git bisect works in a clone made before
// its clock starts. Builds are counted: the build command appends a line to a counter file
// outside the repository.
//
//   (a) 1,000 commits x 2,000 files, 0.4 s benchmark, no build, 3 runs, CV 1%; W=1 and W=7.
//       Target: W=7 <= 0.40x git bisect.                                   (51 s)
//   (b) as (a) with a deterministic benchmark (noise 0), `kbisect run --runs 1`, git bisect with
//       1 run per step and per baseline; W=1 and W=7. Targets: W=1 <= 1.05x, W=7 <= 0.45x.
//                                                                          (38 s)
//   (c) as (a) with a 2 s build (`sleep 2` plus the counter) at every probe and step, CV 2%;
//       W=7. Target: <= 0.25x (lower bound about one build + 4 rounds of benchmark: 0.18x).
//                                                                          (90 s)
//   (d) two nightlies with one cache dir on a 1,300-commit repository (culprit at 666): job 1
//       over commits 0..1000, then job 2 over 300..1300; W=7. Targets: job 2's bench runs <=
//       35% of job 1's, its wall time <= 0.35x job 1's.                    (64 s)
//   (e) a real compile: scripts/make-c-repo.sh (300 commits of a 12-file C library; each commit
//       edits one source file, commit 200 plants a 45% slowdown), `make -j2` at every probe
//       (incremental), benchmark = a program linked against the library printing a
//       deterministic work counter; W=1. Target: <= 1.10x.                 (35 s)
//   (f) a real history nobody here wrote: lz4 (--lz4 PATH, e.g. the repository `fetch
//       github:lz4/lz4` brings), the last 873 first-parent commits of its HEAD, `make -C lib
//       -j2` at every probe and step; a deterministic benchmark script outside the repository
//       (needs lib/liblz4.a; 130 ms at and after the planted culprit, the first-parent commit
//       60% into the range, else 100 ms). W=1, 2, 4. Targets: W=1 <= 1.05x git bisect, W>1
//       <= 1.0x git bisect and never slower than W=1.
//   (g) as (f) on a C++ project built with CMake: fmt (--fmt PATH), the last 300 first-parent
//       commits, `cmake -B build -DFMT_TEST=OFF ... && cmake --build build -j2`. W=1, 2, 4.
//   (h) as (g) with the build issue 51 names: one `g++ -O2 -c src/format.cc src/os.cc` at every
//       probe and step (one process, one core, nothing incremental, nothing ccache can cache
//       across commits that change format.h). W=1, 2. Targets: W=1 <= 1.15x, W=2 <= 0.8x.
//   (i) as (f) over lz4's whole first-parent range from the first commit with lib/Makefile to
//       HEAD (897 commits), with the history's own step instead of a planted one: the size
//       LZ4's default compression gives a fixed corpus (a C program linked against the
//       checkout's lib/, `--metric` and `--lower-is-better`), which 7d182b81 made 1.7% larger.
//       W=1, 4. Targets: W=1 <= 1.05x, W=4 <= 1.0x.
//       Cases f to i are skipped (and say so) when their repository is not given: nothing
//       is downloaded.
//
//   build/bin/user_cases_bench [--case all|a,b,...] [--commits N] [--c-commits N] [--files F]
//                              [--lz4 PATH] [--fmt PATH] [--pairs N]
//                              [--bench-seconds S] [--build-seconds S] [--workers 1,7] [--keep]
//                              [--kbisect-flags "--build-ahead 8"]
//
// The durations (generation included) are those of one `--case all` run on the project's
// 2-core machine shared with other work (load average 3-4): 4 min 37 s in all. The confirmation
// column is the span of kbisect's final interleaved re-measurement (one worker, after the
// search; its builds and bench runs are in the row's counts).
//
// --pairs N (N > 1) runs cases a, b, c, f and g as N interleaved (git bisect, kbisect) pairs per
// W, git first in even pairs and kbisect first in odd ones, and prints each case's median ratio
// (the VM's speed drifts within minutes: a single ordered pair is not a figure; issue 51). Case d
// runs N pairs of nightlies, each pair in a fresh cache, and prints the median of job 2's runs
// against job 1's.
//
// --commits sets the range of cases a-d (case d's repository is 1.3 N commits, its second job
// starts 0.3 N in); --c-commits the C history of case e; --workers replaces every selected
// case's worker counts. Nothing is asserted: this prints figures.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/bench_util.h"
#include "bench/fmt_issue_bench.h"
#include "bench/kbisect_runs.h"
#include "bench/lz4_size_bench.h"
#include "bench/seed_bisect.h"

namespace {

using kbisect_bench::KbisectFigures;
using kbisect_bench::KbisectRunOptions;
using kbisect_bench::RunShell;
using kbisect_bench::SeedBisectFigures;
using kbisect_bench::SeedBisectOptions;

struct Settings {
  std::string source;  // the kbisect source tree (scripts/)
  std::string bin;     // build/bin
  std::string dir;     // scratch directory of this run
  int commits = 1000;
  int c_commits = 300;
  int files = 2000;
  double bench_seconds = 0.4;
  double build_seconds = 2;
  std::vector<int> workers;  // empty: each case's own
  std::string lz4;           // case f's repository ("": skipped)
  std::string fmt;           // case g's repository ("": skipped)
  // Options added to every kbisect run (--kbisect-flags), to measure a non-default beside the
  // defaults; empty: the defaults only.
  std::vector<std::string> extra_flags;
  // --pairs: interleaved (git bisect, kbisect) pairs per case and W (1: git once per case, as
  // before).
  int pairs = 1;
};

std::string RatioTarget(double ratio, double max_ratio);

// The interleaved pairs of one case at one W (--pairs > 1). The VM's speed drifts up to 1.6x
// within minutes, so a ratio must not depend on which tool ran first: pair p runs git bisect
// first when p is even and kbisect first when it is odd, back to back, and the case's figure is
// the median of the pairs' ratios.
struct Pairs {
  std::string case_id;
  int workers = 0;
  double max_ratio = 0;        // The target (0: none).
  std::vector<double> ratios;  // kbisect / git bisect, per pair, in order.
  bool all_right = true;       // Every run of both tools named the culprit.

  // "case a, W=7: 0.41 0.39 0.44 (git first, kbisect first, git first): median 0.41 (<= 0.40x:
  // NOT met)".
  std::string Summary() const {
    std::vector<std::string> shown, orders;
    for (size_t p = 0; p < ratios.size(); ++p) {
      shown.push_back(absl::StrFormat("%.2f", ratios[p]));
      orders.push_back(p % 2 == 0 ? "git first" : "kbisect first");
    }
    const double median = kbisect_bench::Median(ratios);
    std::string target = max_ratio > 0 ? absl::StrCat(", ", RatioTarget(median, max_ratio)) : "";
    if (!all_right) target = ", NOT met (a run had no right answer)";
    return absl::StrFormat("case %s, W=%d: %s (%s): median %.2f of %d interleaved pairs%s", case_id,
                           workers, absl::StrJoin(shown, " "), absl::StrJoin(orders, ", "), median,
                           ratios.size(), target);
  }
};

// make-demo-repo.sh's noise is uniform in +-FRACTION: a CV of c needs FRACTION = c * sqrt(3).
std::string NoiseForCv(double cv) { return absl::StrFormat("%.4f", cv * std::sqrt(3.0)); }

struct Row {
  std::string case_id;
  std::string run;
  double wall = 0;
  double ratio = 0;
  int rounds = 0;
  int bench_runs = 0;
  std::string builds;         // "-" without a build step
  std::string correct;        // "yes", "NO", or why there is no answer
  std::string confirm = "-";  // kbisect: seconds of the final confirmation
  std::string overhead;       // kbisect only
  std::string target;         // "<= 0.40x: met" / "... NOT met" / ""
};

class Table {
 public:
  void Add(const Row& row) {
    rows_.push_back(row);
    std::cout << "  " << Format(row) << std::flush;
  }
  void Print() const {
    std::cout << "\n" << Heading();
    std::string last_case;
    for (const Row& row : rows_) {
      if (!last_case.empty() && row.case_id != last_case) std::cout << "\n";
      last_case = row.case_id;
      std::cout << Format(row);
    }
  }
  static std::string Heading() {
    return absl::StrFormat("%-4s %-28s %8s %6s %6s %10s %6s %-14s %11s %-20s %s\n", "case", "run",
                           "wall (s)", "ratio", "rounds", "bench runs", "builds", "culprit",
                           "confirm (s)", "overhead p50 (warm)", "target");
  }

 private:
  static std::string Format(const Row& row) {
    return absl::StrFormat("%-4s %-28s %8.2f %6.2f %6d %10d %6s %-14s %11s %-20s %s\n", row.case_id,
                           row.run, row.wall, row.ratio, row.rounds, row.bench_runs, row.builds,
                           row.correct, row.confirm, row.overhead, row.target);
  }
  std::vector<Row> rows_;
};

std::string Verdict(bool met) { return met ? "met" : "NOT met"; }

// `value` as printed with `decimals` decimals: targets are judged on the figures shown.
double Shown(double value, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(value * scale) / scale;
}

std::string RatioTarget(double ratio, double max_ratio) {
  if (max_ratio <= 0) return "";
  return absl::StrFormat("<= %.2fx: %s", max_ratio, Verdict(Shown(ratio, 2) <= max_ratio));
}

// The build command of a run: `build` (may be empty: only the counter) and then a line appended
// to `counter`, so that a failed build is not counted.
std::string CountedBuild(const std::string& build, const std::string& counter) {
  return absl::StrCat(build.empty() ? "" : build + " && ", "echo build >> ", counter);
}

// The git bisect row of a case; `counter` is "" without a build step.
Row GitRow(const std::string& case_id, const std::string& run, const SeedBisectFigures& git,
           const std::string& expected, const std::string& counter) {
  Row row;
  row.case_id = case_id;
  row.run = run;
  row.wall = git.wall_seconds;
  row.ratio = 1.0;
  row.rounds = git.steps;
  row.bench_runs = git.bench_runs;
  row.builds = counter.empty() ? "-" : absl::StrCat(kbisect_bench::CountLines(counter));
  row.correct = !git.ok ? "NO (no answer)" : git.culprit == expected ? "yes" : "NO";
  if (!git.ok) std::cerr << "git bisect run (" << run << ") failed:\n" << git.log << "\n";
  return row;
}

Row KbisectRow(const std::string& case_id, const std::string& run, const KbisectFigures& k,
               double git_seconds, const std::string& expected, const std::string& counter,
               double max_ratio) {
  Row row;
  row.case_id = case_id;
  row.run = run;
  row.wall = k.wall_seconds;
  row.ratio = git_seconds > 0 ? k.wall_seconds / git_seconds : 0;
  row.rounds = k.rounds;
  row.bench_runs = k.bench_runs;
  row.builds = counter.empty() ? "-" : absl::StrCat(kbisect_bench::CountLines(counter));
  if (!k.ok) {
    row.correct = absl::StrCat("NO (exit ", k.exit_code, ")");
  } else if (k.culprit == expected) {
    row.correct = k.status == "culprit_found" ? "yes" : absl::StrCat("yes (", k.status, ")");
  } else {
    row.correct = absl::StrCat("NO (", k.status, ")");
  }
  row.overhead = absl::StrFormat("%.0f ms (%.0f) n=%d", k.overhead.median_ms,
                                 k.overhead.warm_median_ms, k.overhead.probes);
  if (k.confirm_seconds > 0) row.confirm = absl::StrFormat("%.2f", k.confirm_seconds);
  row.target = RatioTarget(row.ratio, max_ratio);
  if (max_ratio > 0 && row.correct.rfind("yes", 0) != 0) row.target = "NOT met (no right answer)";
  return row;
}

// Generates a make-demo-repo.sh repository; returns the culprit's sha ("" on failure).
std::string DemoRepo(const Settings& s, const std::string& path, int commits,
                     const std::string& noise, int culprit) {
  const kbisect_bench::Shell made = RunShell(absl::StrCat(
      s.source, "/scripts/make-demo-repo.sh ", path, " --commits ", commits, " --files ", s.files,
      " --noise ", noise, culprit > 0 ? absl::StrCat(" --culprit ", culprit) : ""));
  if (made.exit_code != 0) return "";
  return std::string(absl::StripTrailingAsciiWhitespace(made.out));
}

std::vector<int> WorkersOr(const Settings& s, std::vector<int> defaults) {
  return s.workers.empty() ? defaults : s.workers;
}

// The seed procedure over GOOD..BAD of `repo` in a clone at `clone`, benchmark `bench`.
SeedBisectOptions SeedOver(const std::string& repo, const std::string& clone,
                           const std::string& good, const std::string& bad,
                           const std::string& bench) {
  SeedBisectOptions seed;
  seed.repo = repo;
  seed.clone = clone;
  seed.good = good;
  seed.bad = bad;
  seed.bench = bench;
  return seed;
}

// `kbisect run` over GOOD..BAD of `repo` on `workers` workers, its cache and JSON at the paths
// given, benchmark `bench`.
KbisectRunOptions KbisectOver(const Settings& s, const std::string& repo, const std::string& good,
                              const std::string& bad, int workers, const std::string& cache_dir,
                              const std::string& json, const std::string& bench) {
  KbisectRunOptions run;
  run.kbisect = s.bin + "/kbisect";
  run.repo = repo;
  run.good = good;
  run.bad = bad;
  run.workers = workers;
  run.cache_dir = cache_dir;
  run.json = json;
  run.bench = bench;
  run.flags = s.extra_flags;
  return run;
}

// One demo-repository case (a, b, c): git bisect, then kbisect at each W with a fresh cache.
struct DemoCase {
  std::string id;
  std::string noise;
  int runs = 3;              // git bisect's runs per commit (kbisect: --runs when not 3)
  double build_seconds = 0;  // 0: no build step
  std::vector<int> workers;
  std::map<int, double> max_ratio;  // the targets by W
};

// Runs git bisect and kbisect at one W `pairs` times, alternating which goes first (Pairs), and
// returns the pairs' ratios. `git(suffix)` and `kbisect(suffix)` run one of each, with scratch
// paths ending in `suffix`, add their rows and return wall seconds (0: no right answer).
Pairs Interleave(const std::string& case_id, int workers, double max_ratio, int pairs,
                 const std::function<double(const std::string&)>& git,
                 const std::function<double(const std::string&, double)>& kbisect) {
  Pairs out{case_id, workers, max_ratio, {}, true};
  for (int p = 0; p < pairs; ++p) {
    const std::string suffix = absl::StrCat("-w", workers, "-pair", p);
    double git_s = 0, kbisect_s = 0;
    if (p % 2 == 0) {
      git_s = git(suffix);
      kbisect_s = kbisect(suffix, git_s);
    } else {
      // kbisect first: its row's ratio is filled against the git run that follows.
      kbisect_s = kbisect(suffix, 0);
      git_s = git(suffix);
    }
    if (git_s <= 0 || kbisect_s <= 0) out.all_right = false;
    out.ratios.push_back(git_s > 0 ? kbisect_s / git_s : 0);
  }
  return out;
}

void RunDemoCase(const Settings& s, const DemoCase& c, Table& table,
                 std::vector<std::string>* notes) {
  const std::string dir = s.dir + "/" + c.id;
  const std::string repo = dir + "/repo";
  const std::string expected = DemoRepo(s, repo, s.commits, c.noise, 0);
  if (expected.empty()) {
    std::cerr << "case " << c.id << ": cannot generate the repository\n";
    return;
  }
  const std::string env = absl::StrFormat("KBISECT_DEMO_SLEEP=%.3f", s.bench_seconds);
  const std::string build = c.build_seconds > 0 ? absl::StrFormat("sleep %g", c.build_seconds) : "";

  // One git bisect run (clone and counter named by `suffix`); returns its wall (0: wrong).
  auto run_git = [&](const std::string& suffix) {
    SeedBisectOptions seed =
        SeedOver(repo, dir + "/git-bisect" + suffix, "v1.0", "main", "./bench.sh");
    seed.env = env;
    seed.runs = c.runs;
    const std::string git_counter = c.build_seconds > 0 ? dir + "/builds-git" + suffix : "";
    if (c.build_seconds > 0) seed.build = CountedBuild(build, git_counter);
    const SeedBisectFigures git = kbisect_bench::RunSeedBisect(seed);
    table.Add(GitRow(c.id, absl::StrCat("git bisect run (", c.runs, " runs)", suffix), git,
                     expected, git_counter));
    return git.ok && git.culprit == expected ? git.wall_seconds : 0.0;
  };
  // One kbisect run at `w` workers with a fresh cache; its row's ratio is against `git_s`.
  auto run_kbisect = [&](int w, const std::string& suffix, double git_s) {
    KbisectRunOptions run =
        KbisectOver(s, repo, "v1.0", "main", w, absl::StrCat(dir, "/cache", suffix),
                    absl::StrCat(dir, "/kbisect", suffix, ".json"), "./bench.sh");
    run.env = env;
    if (c.runs != 3) {
      run.flags.push_back("--runs");
      run.flags.push_back(absl::StrCat(c.runs));
    }
    const std::string counter = c.build_seconds > 0 ? absl::StrCat(dir, "/builds", suffix) : "";
    if (c.build_seconds > 0) {
      run.flags.push_back("--build");
      run.flags.push_back(CountedBuild(build, counter));
    }
    const KbisectFigures k = kbisect_bench::RunKbisect(run);
    const auto target = c.max_ratio.find(w);
    // Run before its pair's git bisect (git_s 0), the row has no ratio: the pair's line judges it.
    table.Add(KbisectRow(c.id, absl::StrCat("kbisect W=", w, suffix), k, git_s, expected, counter,
                         target == c.max_ratio.end() || git_s <= 0 ? 0 : target->second));
    return k.ok && k.culprit == expected ? k.wall_seconds : 0.0;
  };

  if (s.pairs > 1) {
    for (int w : WorkersOr(s, c.workers)) {
      const auto target = c.max_ratio.find(w);
      notes->push_back(Interleave(c.id, w, target == c.max_ratio.end() ? 0 : target->second,
                                  s.pairs, run_git,
                                  [&](const std::string& suffix, double git_s) {
                                    return run_kbisect(w, suffix, git_s);
                                  })
                           .Summary());
    }
    return;
  }
  const double git_s = run_git("");
  for (int w : WorkersOr(s, c.workers)) run_kbisect(w, absl::StrCat("-w", w), git_s);
}

// Case d: two nightlies sharing one cache directory, the second range starting 30% into the
// first and ending past it. Returns the summary lines (job 2 against job 1).
std::vector<std::string> RunNightlies(const Settings& s, Table& table) {
  const std::string dir = s.dir + "/d";
  const std::string repo = dir + "/repo";
  const int n = s.commits;
  const int total = n + (3 * n + 9) / 10;
  const int second_good = (3 * n + 9) / 10;
  const int culprit = n * 2 / 3;
  const std::string expected = DemoRepo(s, repo, total, NoiseForCv(0.01), culprit);
  if (expected.empty()) return {"case d: cannot generate the repository"};
  const std::vector<std::string> shas =
      absl::StrSplit(RunShell("git -C " + repo + " rev-list --first-parent --reverse main").out,
                     '\n', absl::SkipEmpty());
  if (static_cast<int>(shas.size()) != total + 1) return {"case d: unexpected rev-list"};
  const std::string env = absl::StrFormat("KBISECT_DEMO_SLEEP=%.3f", s.bench_seconds);
  struct Job {
    int good;
    int bad;
  };
  const Job jobs[2] = {{0, n}, {second_good, total}};

  double git_seconds[2];
  for (int j = 0; j < 2; ++j) {
    SeedBisectOptions seed = SeedOver(repo, absl::StrCat(dir, "/git-bisect-job", j + 1),
                                      shas[jobs[j].good], shas[jobs[j].bad], "./bench.sh");
    seed.env = env;
    const SeedBisectFigures git = kbisect_bench::RunSeedBisect(seed);
    git_seconds[j] = git.wall_seconds;
    table.Add(
        GitRow("d", absl::StrFormat("git bisect job %d (%d..%d)", j + 1, jobs[j].good, jobs[j].bad),
               git, expected, ""));
  }
  std::vector<std::string> summary;
  for (int w : WorkersOr(s, {7})) {
    // --pairs: several pairs of jobs, each pair in a cache of its own (one pair's ratio moves
    // by a third from run to run).
    std::vector<double> runs_pcts;
    std::vector<double> wall_ratios;
    for (int p = 0; p < std::max(1, s.pairs); ++p) {
      const std::string pair = s.pairs > 1 ? absl::StrCat("-pair", p) : "";
      KbisectFigures figures[2];
      for (int j = 0; j < 2; ++j) {
        KbisectRunOptions run = KbisectOver(
            s, repo, shas[jobs[j].good], shas[jobs[j].bad], w,
            absl::StrCat(dir, "/cache-w", w, pair),  // shared by both jobs of the pair
            absl::StrCat(dir, "/kbisect-w", w, pair, "-job", j + 1, ".json"), "./bench.sh");
        run.env = env;
        figures[j] = kbisect_bench::RunKbisect(run);
        Row row = KbisectRow("d", absl::StrFormat("kbisect job %d W=%d%s", j + 1, w, pair),
                             figures[j], git_seconds[j], expected, "", 0);
        if (j == 1) {
          const double runs_pct =
              figures[0].bench_runs > 0 ? 100.0 * figures[1].bench_runs / figures[0].bench_runs : 0;
          const double wall_ratio =
              figures[0].wall_seconds > 0 ? figures[1].wall_seconds / figures[0].wall_seconds : 0;
          runs_pcts.push_back(runs_pct);
          wall_ratios.push_back(wall_ratio);
          row.target = absl::StrFormat(
              "runs %.0f%% of job 1 (<= 40%%: %s), wall %.2fx (<= 0.35x: %s)", runs_pct,
              Verdict(Shown(runs_pct, 0) <= 40), wall_ratio, Verdict(Shown(wall_ratio, 2) <= 0.35));
          summary.push_back(absl::StrFormat(
              "case d, W=%d%s: job 2 ran %d bench runs = %.0f%% of job 1's %d (issue 51's target "
              "<= 40%%) in %.2f s = %.2fx job 1's %.2f s (target <= 0.35x)",
              w, pair, figures[1].bench_runs, runs_pct, figures[0].bench_runs,
              figures[1].wall_seconds, wall_ratio, figures[0].wall_seconds));
        }
        table.Add(row);
      }
    }
    if (runs_pcts.size() > 1) {
      const double median = kbisect_bench::Median(runs_pcts);
      summary.push_back(absl::StrFormat(
          "case d, W=%d: job 2's runs %s%% of job 1's: median %.0f%% of %d pairs (<= 40%%: %s), "
          "wall median %.2fx",
          w,
          absl::StrJoin(
              runs_pcts, "% ",
              [](std::string* out, double v) { absl::StrAppend(out, absl::StrFormat("%.0f", v)); }),
          median, runs_pcts.size(), Verdict(Shown(median, 0) <= 40),
          kbisect_bench::Median(wall_ratios)));
    }
  }
  return summary;
}

// Case e: a real C library; `make -j2` at every probe and step, W=1 unless --workers.
void RunCompileCase(const Settings& s, Table& table) {
  const std::string dir = s.dir + "/e";
  const std::string repo = dir + "/repo";
  const kbisect_bench::Shell made = RunShell(
      absl::StrCat(s.source, "/scripts/make-c-repo.sh ", repo, " --commits ", s.c_commits));
  const std::string expected(absl::StripTrailingAsciiWhitespace(made.out));
  if (made.exit_code != 0 || expected.empty()) {
    std::cerr << "case e: cannot generate the repository\n";
    return;
  }
  const std::string make = "make -j2 -s";
  SeedBisectOptions seed = SeedOver(repo, dir + "/git-bisect", "v1.0", "main", "./build/bench");
  seed.build = CountedBuild(make, dir + "/builds-git");
  const SeedBisectFigures git = kbisect_bench::RunSeedBisect(seed);
  table.Add(GitRow("e", "git bisect run (3 runs)", git, expected, dir + "/builds-git"));
  for (int w : WorkersOr(s, {1})) {
    KbisectRunOptions run =
        KbisectOver(s, repo, "v1.0", "main", w, absl::StrCat(dir, "/cache-w", w),
                    absl::StrCat(dir, "/kbisect-w", w, ".json"), "./build/bench");
    const std::string counter = absl::StrCat(dir, "/builds-w", w);
    run.flags.push_back("--build");
    run.flags.push_back(CountedBuild(make, counter));
    const KbisectFigures k = kbisect_bench::RunKbisect(run);
    table.Add(KbisectRow("e", absl::StrCat("kbisect W=", w), k, git.wall_seconds, expected, counter,
                         w == 1 ? 1.10 : 0));
  }
}

// A real project's history (cases f, g).
struct RealHistory {
  std::string id;
  std::string repo;      // a path to the project's repository (bare or not)
  int commits = 0;       // the range: the last `commits` first-parent commits of HEAD
  std::string build;     // run in the checkout at every probe and step
  std::string artifact;  // what the build leaves (the benchmark checks it is there)
  std::vector<int> workers;
  // The target ratio to git bisect by W (none given: W=1 <= 1.05x, W>1 <= 1.0x).
  std::map<int, double> targets;
  // Case i: the range is the first first-parent commit touching `good_path` to HEAD (`commits`
  // unused), and the step is the history's own (`own_culprit`), measured by
  // `own_bench` (a command printing "LABEL: N", lower is better, LABEL being `metric_label`
  // and kbisect's --metric `metric_regex`) instead of the planted one.
  std::string good_path;
  std::string own_culprit;
  std::string own_bench;
  std::string metric_label;
  std::string metric_regex;
  // Case j: the range is good_ref..bad_ref on bad_ref's first-parent line (`commits` and
  // `good_path` unused); good_ref must be on that line.
  std::string good_ref;
  std::string bad_ref;
  double Target(int w) const {
    auto it = targets.find(w);
    return it != targets.end() ? it->second : w == 1 ? 1.05 : 1.0;
  }
};

// A case over the last `commits` first-parent commits of `repo` (0 when another field sets the
// range), its build leaving `artifact`.
RealHistory History(std::string id, std::string repo, int commits, std::string build,
                    std::string artifact, std::vector<int> workers,
                    std::map<int, double> targets = {}) {
  RealHistory h;
  h.id = std::move(id);
  h.repo = std::move(repo);
  h.commits = commits;
  h.build = std::move(build);
  h.artifact = std::move(artifact);
  h.workers = std::move(workers);
  h.targets = std::move(targets);
  return h;
}

// The first-parent commits of `h`'s range in the clone `repo`, oldest (GOOD) first; fewer than
// two when they cannot be listed.
std::vector<std::string> FirstParentRange(const std::string& repo, const RealHistory& h) {
  std::string command;
  if (!h.good_ref.empty()) {
    command = absl::StrCat("git -C ", repo, " rev-parse ", h.good_ref, "^{commit} && git -C ", repo,
                           " rev-list --reverse --first-parent ", h.good_ref, "..", h.bad_ref);
  } else if (!h.good_path.empty()) {
    const std::string since(absl::StripTrailingAsciiWhitespace(
        RunShell(absl::StrCat("git -C ", repo, " log --first-parent --format=%H -- ", h.good_path,
                              " | tail -n 1"))
            .out));
    if (since.empty()) return {};
    command =
        absl::StrCat("git -C ", repo, " rev-list --reverse --first-parent ", since, "^..HEAD");
  } else {
    command = absl::StrCat("git -C ", repo, " rev-list --first-parent --max-count=", h.commits + 1,
                           " HEAD | tac");
  }
  const kbisect_bench::Shell listed = RunShell(command);
  std::vector<std::string> shas = absl::StrSplit(listed.out, '\n', absl::SkipEmpty());
  const bool counted = h.good_ref.empty() && h.good_path.empty();
  if (listed.exit_code != 0 || (counted && static_cast<int>(shas.size()) != h.commits + 1)) {
    return {};
  }
  return shas;
}

// Case f or g: git bisect and kbisect over the last `commits` first-parent commits of the real
// repository, with a planted culprit the benchmark knows by ancestry.
std::vector<std::string> RunRealHistoryCase(const Settings& s, const RealHistory& h, Table& table) {
  if (h.repo.empty()) {
    return {absl::StrCat("case ", h.id, " skipped: its repository was not given (--",
                         h.id == "f" || h.id == "i" ? "lz4" : "fmt", " PATH)")};
  }
  const std::string dir = s.dir + "/" + h.id;
  // A clone of the given repository (which may be bare), as a user's checkout: both tools start
  // from it.
  const std::string repo = dir + "/source";
  if (RunShell(absl::StrCat("mkdir -p ", dir, " && git clone -q '", h.repo, "' ", repo))
          .exit_code != 0) {
    return {absl::StrCat("case ", h.id, ": cannot clone ", h.repo)};
  }
  const std::vector<std::string> shas = FirstParentRange(repo, h);
  if (shas.size() < 2) {
    return {absl::StrCat("case ", h.id, ": cannot list the first-parent commits of ", h.repo)};
  }
  const std::string good = shas.front();
  const std::string bad = shas.back();
  const bool own = !h.own_culprit.empty();
  if (own && std::find(shas.begin(), shas.end(), h.own_culprit) == shas.end()) {
    return {absl::StrCat("case ", h.id, " skipped: ", h.own_culprit.substr(0, 8),
                         " is not on the first-parent range of ", h.repo)};
  }
  const std::string expected = own ? h.own_culprit : shas[shas.size() * 6 / 10];
  const std::string bench = own ? h.own_bench : dir + "/bench.sh";
  if (!own) {
    RunShell(absl::StrCat(
        "printf '%s\\n' '#!/bin/sh' 'test -e ", h.artifact, " || { echo \"no ", h.artifact,
        " built\" >&2; exit 1; }' ", "'if git merge-base --is-ancestor ", expected,
        " HEAD; then echo \"Latency: 130 ms\"; else echo \"Latency: 100 ms\"; fi' > ", bench,
        " && chmod +x ", bench));
  }
  auto run_git = [&](const std::string& suffix) {
    SeedBisectOptions seed = SeedOver(repo, dir + "/git-bisect" + suffix, good, bad, bench);
    seed.build = CountedBuild(h.build, dir + "/builds-git" + suffix);
    if (own) seed.metric_label = h.metric_label;
    const SeedBisectFigures git = kbisect_bench::RunSeedBisect(seed);
    table.Add(GitRow(h.id, "git bisect run (3 runs)" + suffix, git, expected,
                     dir + "/builds-git" + suffix));
    return git.ok && git.culprit == expected ? git.wall_seconds : 0.0;
  };
  auto run_kbisect = [&](int w, const std::string& suffix, double git_s) {
    KbisectRunOptions run = KbisectOver(s, repo, good, bad, w, absl::StrCat(dir, "/cache", suffix),
                                        absl::StrCat(dir, "/kbisect", suffix, ".json"), bench);
    const std::string counter = absl::StrCat(dir, "/builds", suffix);
    run.flags.push_back("--build");
    run.flags.push_back(CountedBuild(h.build, counter));
    if (own) {
      for (const std::string& flag :
           {std::string("--metric"), h.metric_regex, std::string("--lower-is-better")}) {
        run.flags.push_back(flag);
      }
    }
    const KbisectFigures k = kbisect_bench::RunKbisect(run);
    table.Add(KbisectRow(h.id, absl::StrCat("kbisect W=", w, suffix), k, git_s, expected, counter,
                         git_s <= 0 ? 0 : h.Target(w)));
    return k.ok && k.culprit == expected ? k.wall_seconds : 0.0;
  };
  std::vector<std::string> notes;
  if (s.pairs > 1) {
    for (int w : WorkersOr(s, h.workers)) {
      notes.push_back(Interleave(h.id, w, h.Target(w), s.pairs, run_git,
                                 [&](const std::string& suffix, double git_s) {
                                   return run_kbisect(w, suffix, git_s);
                                 })
                          .Summary());
    }
    return notes;
  }
  const double git_s = run_git("");
  double w1 = 0;
  for (int w : WorkersOr(s, h.workers)) {
    const double k = run_kbisect(w, absl::StrCat("-w", w), git_s);
    if (w == 1) w1 = k;
    if (w > 1 && w1 > 0 && k > 0) {
      notes.push_back(absl::StrFormat("case %s, W=%d: %.2fx of W=1's wall (target <= 1.0: %s)",
                                      h.id, w, k / w1, Verdict(Shown(k / w1, 2) <= 1.0)));
    }
  }
  return notes;
}

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  std::string cases = "all";
  std::string workers;
  bool keep = false;
  CLI::App app{"kbisect run with its defaults vs the seed procedure by git bisect run, per case"};
  app.add_option("--case", cases, "all, or a comma-separated list of a, b, c, d, e, f, g, h, i")
      ->capture_default_str();
  app.add_option("--commits", s.commits, "Range of cases a-d")->capture_default_str();
  app.add_option("--c-commits", s.c_commits, "C history of case e")->capture_default_str();
  app.add_option("--files", s.files, "Files of the demo repositories")->capture_default_str();
  app.add_option("--bench-seconds", s.bench_seconds, "One demo benchmark run (cases a-d)")
      ->capture_default_str();
  app.add_option("--build-seconds", s.build_seconds, "Case c's build")->capture_default_str();
  app.add_option("--workers", workers, "Worker counts for every selected case (e.g. 1,7)");
  std::string kbisect_flags;
  app.add_option("--kbisect-flags", kbisect_flags,
                 "Options added to every kbisect run, space-separated (e.g. '--build-ahead 8')");
  app.add_option("--lz4", s.lz4, "Case f: a path to lz4's repository (skipped without)");
  app.add_option("--fmt", s.fmt, "Cases g, h, j: a path to fmt's repository (skipped without)");
  app.add_flag("--keep", keep, "Keep the scratch directory");
  app.add_option(
         "--pairs", s.pairs,
         "Cases a, b, c, f, g, h, i, j: interleaved (git bisect, kbisect) pairs per W, alternating "
         "which "
         "runs first; the median ratio is printed (default 1: git once per case); case d: pairs "
         "of nightlies, each in a fresh cache, and the median of job 2's runs against job 1's")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  for (const std::string& w :
       std::vector<std::string>(absl::StrSplit(workers, ',', absl::SkipEmpty()))) {
    s.workers.push_back(std::atoi(w.c_str()));
  }
  s.extra_flags = absl::StrSplit(kbisect_flags, ' ', absl::SkipEmpty());
  std::set<std::string> selected;
  for (const std::string& c :
       std::vector<std::string>(absl::StrSplit(cases, ',', absl::SkipEmpty()))) {
    if (c == "all") {
      selected.insert({"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"});
    } else if (c.size() == 1 && c[0] >= 'a' && c[0] <= 'j') {
      selected.insert(c);
    } else {
      std::cerr << "unknown case '" << c << "' (all, a, b, c, d, e, f, g, h, i, j)\n";
      return 2;
    }
  }
  s.source = KBISECT_SOURCE_DIR;
  s.bin = KBISECT_BIN_DIR;
  s.dir = kbisect_bench::MakeTempDir("kbisect-cases");
  if (s.dir.empty()) {
    std::cerr << "cannot create a scratch directory\n";
    return 1;
  }
  const int second = (3 * s.commits + 9) / 10;
  const std::map<std::string, std::string> titles = {
      {"a", absl::StrFormat("%d commits x %d files, %.2f s benchmark, no build, 3 runs, CV 1%%: "
                            "W=1, W=7. Target W=7 <= 0.40x",
                            s.commits, s.files, s.bench_seconds)},
      {"b",
       "as (a), deterministic benchmark (noise 0), kbisect --runs 1, git bisect 1 run per "
       "step and baseline: W=1, W=7. Targets W=1 <= 1.05x, W=7 <= 0.45x"},
      {"c", absl::StrFormat("as (a) with a %g s build at every probe/step, CV 2%%: W=7. Target "
                            "<= 0.25x (bound ~0.18x: one build + 4 rounds of benchmark)",
                            s.build_seconds)},
      {"d", absl::StrFormat("two nightlies, one cache dir: job 1 over %d..%d, job 2 over %d..%d "
                            "(culprit %d in both), CV 1%%: W=7. Targets: job 2 bench runs <= "
                            "35%% and wall <= 0.35x of job 1",
                            0, s.commits, second, s.commits + second, s.commits * 2 / 3)},
      {"e", absl::StrFormat("real compile: %d commits of a 12-file C library, make -j2 at every "
                            "probe/step, deterministic work counter: W=1. Target <= 1.10x",
                            s.c_commits)},
      {"f",
       "real history: lz4's last 873 first-parent commits, make -C lib -j2 at every "
       "probe/step, deterministic benchmark: W=1, 2, 4. Targets W=1 <= 1.05x, W>1 <= 1.0x "
       "and <= W=1"},
      {"g",
       "real history: fmt's last 300 first-parent commits, CMake library build at every "
       "probe/step, deterministic benchmark: W=1, 2, 4. Targets as (f)"},
      {"h",
       "real history: fmt's last 300 first-parent commits, one g++ -O2 call compiling "
       "src/format.cc and src/os.cc at every probe/step (nothing incremental, one core), "
       "deterministic benchmark: W=1, 2. Targets W=1 <= 1.15x, W=2 <= 0.8x"},
      {"i",
       "real history, its own step: lz4 from the first commit with lib/Makefile to HEAD, make "
       "-C lib -j2 at every probe/step, the size LZ4 compresses a fixed corpus to (7d182b81 "
       "made it 1.7% larger): W=1, 4. Targets W=1 <= 1.05x, W=4 <= 1.0x"},
      {"j",
       "real history, its own step: fmt issue #3674, 9.1.0..10.0.0 (280 first-parent commits), "
       "one g++ -O2 call compiling src/format.cc, src/os.cc and the issue's reproducer at every "
       "probe/step, its time (192859c2 made it ~15x slower): W=1, 2. Targets W=1 <= 1.15x, "
       "W=2 <= 0.8x"},
  };
  std::cout << "kbisect run (defaults: confirmation on, 3 runs, cold cache) vs git bisect run "
               "doing the seed procedure, same repository, same run. Scratch: "
            << s.dir << "\n";
  for (const std::string& c : selected) std::cout << "  (" << c << ") " << titles.at(c) << "\n";
  if (!s.workers.empty()) {
    std::cout << "  Worker counts of every case replaced by --workers " << workers << "\n";
  }
  std::cout << "\n" << Table::Heading();

  Table table;
  std::vector<std::string> notes;
  std::vector<std::string> durations;
  for (const std::string& c : selected) {
    const absl::Time start = absl::Now();
    if (c == "a") {
      RunDemoCase(s, {"a", NoiseForCv(0.01), 3, 0, {1, 7}, {{7, 0.40}}}, table, &notes);
    } else if (c == "b") {
      RunDemoCase(s, {"b", "0", 1, 0, {1, 7}, {{1, 1.05}, {7, 0.45}}}, table, &notes);
    } else if (c == "c") {
      RunDemoCase(s, {"c", NoiseForCv(0.02), 3, s.build_seconds, {7}, {{7, 0.25}}}, table, &notes);
    } else if (c == "d") {
      for (const std::string& line : RunNightlies(s, table)) notes.push_back(line);
    } else if (c == "e") {
      RunCompileCase(s, table);
    } else if (c == "f") {
      for (const std::string& line : RunRealHistoryCase(
               s, History("f", s.lz4, 873, "make -C lib -j2 -s", "lib/liblz4.a", {1, 2, 4}),
               table)) {
        notes.push_back(line);
      }
    } else if (c == "g") {
      for (const std::string& line : RunRealHistoryCase(
               s,
               History("g", s.fmt, 300,
                       "cmake -S . -B build -DFMT_TEST=OFF -DFMT_DOC=OFF -DFMT_INSTALL=OFF "
                       ">/dev/null && cmake --build build -j2 >/dev/null",
                       "build/libfmt.a", {1, 2, 4}),
               table)) {
        notes.push_back(line);
      }
    } else if (c == "h") {
      for (const std::string& line : RunRealHistoryCase(
               s,
               History("h", s.fmt, 300, "g++ -O2 -std=c++17 -Iinclude -c src/format.cc src/os.cc",
                       "format.o", {1, 2}, {{1, 1.15}, {2, 0.8}}),
               table)) {
        notes.push_back(line);
      }
    } else if (c == "i") {
      RealHistory own = History("i", s.lz4, 0, "make -C lib -j2 -s", "lib/liblz4.a", {1, 4});
      own.good_path = "lib/Makefile";
      // Found by building every first-parent commit from the first with lib/Makefile to the
      // 34th and every 32nd after it to HEAD: the size changes once, 2,210,534 -> 2,248,489
      // bytes, at this merge of May 2015 (the 11th commit of the range).
      own.own_culprit = "7d182b816ace89d6d6d16b7aee376a9962a05caa";
      own.own_bench = s.lz4.empty() ? "" : kbisect_bench::WriteCompressedSizeBench(s.dir);
      own.metric_label = "compressed";
      own.metric_regex = "^compressed: ([0-9]+) bytes";
      if (!s.lz4.empty() && own.own_bench.empty()) {
        notes.push_back("case i: cannot write its benchmark (python3 is needed for the corpus)");
      } else {
        for (const std::string& line : RunRealHistoryCase(s, own, table)) notes.push_back(line);
      }
    } else if (c == "j") {
      // fmt issue #3674 as its reporter bisected it: 9.1.0..10.0.0, culprit 192859c2 (the
      // commit `git bisect` named in the issue's thread), one g++ call building the library
      // with the thread's reproducer at every probe and step.
      const std::string source = s.fmt.empty() ? "" : kbisect_bench::WriteFmtIssueBench(s.dir);
      RealHistory issue = History("j", s.fmt, 0, kbisect_bench::FmtIssueBuild(source), "fmtbench",
                                  {1, 2}, {{1, 1.15}, {2, 0.8}});
      issue.own_culprit = "192859c2b5dda3a015a7b1bf023f0c2475f0350c";
      issue.own_bench = "./fmtbench";
      issue.metric_label = "time_ms";
      issue.metric_regex = "^time_ms: ([0-9.]+)";
      issue.good_ref = "9.1.0";
      issue.bad_ref = "10.0.0";
      if (!s.fmt.empty() && source.empty()) {
        notes.push_back("case j: cannot write its benchmark source");
      } else {
        for (const std::string& line : RunRealHistoryCase(s, issue, table)) notes.push_back(line);
      }
    }
    durations.push_back(
        absl::StrFormat("%s %.0f s", c, absl::ToDoubleSeconds(absl::Now() - start)));
  }

  table.Print();
  std::cout << "\n";
  for (const std::string& note : notes) std::cout << note << "\n";
  std::cout << "Case durations (generation included): " << absl::StrJoin(durations, ", ") << "\n"
            << "ratio = wall / git bisect's wall in the same case (same range); git bisect rounds "
               "= steps, its bench runs include the baselines; kbisect rounds = probing rounds.\n"
               "builds = lines in the build counter; overhead = probe span at the coordinator "
               "minus build and bench, median over the n probes measured in one task (warm: "
               "after each worker's first).\n";
  if (keep) {
    std::cout << "Kept " << s.dir << "\n";
  } else {
    RunShell("rm -rf " + s.dir);
  }
  return 0;
}
