// Copyright 2026 The kbisect Authors.
#include "bench/seed_bisect.h"

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/bench_util.h"

namespace kbisect_bench {
namespace {

// Shell functions shared by the baselines and the step script: build() runs the build (its
// output goes to CLONE-build.log), m() prints the median of `runs` benchmark runs.
std::string ShellLibrary(const SeedBisectOptions& options) {
  return absl::StrCat(
      "build() {\n", options.build.empty() ? ":" : options.build, "\n} >> ", options.clone,
      "-build.log 2>&1\n", "m() {\n  for i in $(seq ", options.runs, "); do ", options.bench,
      " 2>/dev/null | sed -n 's/^", options.metric_label,
      ": *\\([0-9.eE+-]*\\).*/\\1/p' | tail -n 1; done |\n",
      "    sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) exit 1; ",
      "if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'\n}\n");
}

}  // namespace

SeedBisectFigures RunSeedBisect(const SeedBisectOptions& options) {
  SeedBisectFigures figures;
  if (RunShell(
          absl::StrCat("git clone -q ", ShellQuote(options.repo), " ", ShellQuote(options.clone)))
          .exit_code != 0) {
    figures.log = "cannot clone " + options.repo;
    return figures;
  }
  const std::string library = options.clone + "-lib.sh";
  const std::string step = options.clone + "-step.sh";
  std::ofstream(library) << ShellLibrary(options);
  // A build that fails makes the commit untestable (125), as does a benchmark without a value.
  std::ofstream(step) << "#!/bin/sh\n. " << library << "\n"
                      << "build || exit 125\nv=$(m) || exit 125\n"
                      << "awk -v v=\"$v\" -v t=\"$THRESHOLD\" 'BEGIN { exit (v > t) }'\n";
  RunShell("chmod +x " + ShellQuote(step));

  const absl::Time start = absl::Now();
  const Shell git = RunShell(absl::StrCat(
      "cd ", ShellQuote(options.clone), " && ",
      options.env.empty() ? "" : "export " + options.env + " && ", ". ", library,
      " && git checkout -q ", options.good, " && build && g=$(m) && git checkout -q ", options.bad,
      " && build && b=$(m) && ",
      absl::StrFormat("export THRESHOLD=$(awk -v g=$g -v b=$b 'BEGIN { print g + %g * (b - g) }')",
                      options.threshold),
      " && git bisect start --first-parent ", options.bad, " ", options.good, " >/dev/null && ",
      "git bisect run ", step, " > ", options.clone, "-bisect.log 2>&1; ", "grep -c '^running' ",
      options.clone, "-bisect.log; git rev-parse -q --verify refs/bisect/bad"));
  figures.wall_seconds = absl::ToDoubleSeconds(absl::Now() - start);
  figures.log = ReadFile(options.clone + "-bisect.log");
  const std::vector<std::string> lines = absl::StrSplit(git.out, '\n', absl::SkipEmpty());
  figures.steps = lines.empty() ? 0 : std::atoi(lines[0].c_str());
  figures.bench_runs = options.runs * (figures.steps + 2);
  if (lines.size() > 1) figures.culprit = lines[1];
  figures.ok =
      !figures.culprit.empty() && figures.log.find("is the first bad commit") != std::string::npos;
  return figures;
}

}  // namespace kbisect_bench
