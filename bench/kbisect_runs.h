// Copyright 2026 The kbisect Authors.
//
// One `kbisect run` as a benchmark sees it: the command line, the wall time measured around the
// process, and the figures read back from its --json file (rounds, bench runs, culprit, and the
// per-probe overhead beyond build + bench).
#ifndef KBISECT_BENCH_KBISECT_RUNS_H_
#define KBISECT_BENCH_KBISECT_RUNS_H_

#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace kbisect_bench {

struct KbisectRunOptions {
  std::string kbisect;  // path of the kbisect binary
  std::string repo;
  std::string good;
  std::string bad;
  int workers = 1;
  std::string cache_dir;           // --cache-dir (a fresh one: a cold cache)
  std::string json;                // --json FILE
  std::string env;                 // "K=V ..." set for the process ("" for none)
  std::vector<std::string> flags;  // further options, one argv word each ("--runs", "1")
  std::string bench;               // the benchmark command after `--` (split by the shell)
};

// Per-probe overhead: a probe's span at the coordinator (lease to result) minus its build and
// bench time, i.e. dispatch, checkout and reporting, over the probes measured in one task (see
// ProbeOverheadOf). A slot's first probe writes its whole checkout; the warm figures leave each
// worker's first probe out.
struct ProbeOverhead {
  int probes = 0;   // probes counted
  int skipped = 0;  // finished probes left out: extra runs (several tasks) or the confirmation
  double median_ms = 0;
  double warm_median_ms = 0;
  double warm_checkout_median_ms = 0;
};

struct KbisectFigures {
  bool ok = false;  // the JSON was read
  int exit_code = -1;
  double wall_seconds = 0;  // around the process: start-up and report included
  std::string status;       // culprit_found, inconclusive, ...
  int rounds = 0;
  int bench_runs = 0;
  std::string culprit;         // "" when none
  double confirm_seconds = 0;  // the confirmation's span (one worker, after the search), 0: none
  ProbeOverhead overhead;
};

// The shell command line of `options` (stdout and stderr discarded).
std::string KbisectCommand(const KbisectRunOptions& options);

KbisectFigures RunKbisect(const KbisectRunOptions& options);

// The per-probe overhead of a `kbisect run --json` result.
ProbeOverhead ProbeOverheadOf(const nlohmann::json& result);

}  // namespace kbisect_bench

#endif  // KBISECT_BENCH_KBISECT_RUNS_H_
