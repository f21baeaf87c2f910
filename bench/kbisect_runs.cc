// Copyright 2026 The kbisect Authors.
#include "bench/kbisect_runs.h"

#include <algorithm>
#include <exception>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/bench_util.h"

namespace kbisect_bench {

std::string KbisectCommand(const KbisectRunOptions& options) {
  std::string command = options.env.empty() ? "" : options.env + " ";
  absl::StrAppend(&command, ShellQuote(options.kbisect), " run ", ShellQuote(options.good), " ",
                  ShellQuote(options.bad), " --quiet --repo ", ShellQuote(options.repo),
                  " --workers ", options.workers, " --cache-dir ", ShellQuote(options.cache_dir),
                  " --json ", ShellQuote(options.json));
  for (const std::string& flag : options.flags) absl::StrAppend(&command, " ", ShellQuote(flag));
  absl::StrAppend(&command, " -- ", options.bench, " > /dev/null 2>&1");
  return command;
}

KbisectFigures RunKbisect(const KbisectRunOptions& options) {
  KbisectFigures figures;
  const absl::Time start = absl::Now();
  figures.exit_code = RunShell(KbisectCommand(options)).exit_code;
  figures.wall_seconds = absl::ToDoubleSeconds(absl::Now() - start);
  nlohmann::json result;
  try {
    result = nlohmann::json::parse(ReadFile(options.json));
  } catch (const std::exception&) {
    return figures;
  }
  figures.ok = true;
  figures.status = result.value("status", "");
  figures.rounds = result.value("rounds", 0);
  figures.bench_runs = result.value("bench_runs", 0);
  if (result["culprit"].is_object()) figures.culprit = result["culprit"].value("sha", "");
  figures.overhead = ProbeOverheadOf(result);
  for (const auto& probe : result.value("probes", nlohmann::json::array())) {
    if (probe.value("kind", "") == "confirm" && probe.value("state", "") == "finished") {
      figures.confirm_seconds = Seconds(probe["end_time"]) - Seconds(probe["start_time"]);
    }
  }
  return figures;
}

ProbeOverhead ProbeOverheadOf(const nlohmann::json& result) {
  // A probe's start and end times are those of its last task, while its timings add up every
  // task's (extra runs are further tasks), so only probes measured in one task count: those
  // with exactly the spec's runs per commit. The confirmation (one task alternating two
  // commits) is left out too.
  int runs_per_commit = 3;
  if (result.contains("spec")) runs_per_commit = result["spec"].value("runs_per_commit", 3);
  std::vector<nlohmann::json> finished;
  if (result.contains("probes")) {
    for (const auto& probe : result["probes"]) {
      if (probe.value("state", "") == "finished") finished.push_back(probe);
    }
  }
  std::sort(finished.begin(), finished.end(), [](const auto& a, const auto& b) {
    return Seconds(a["start_time"]) < Seconds(b["start_time"]);
  });
  std::vector<double> overheads;
  std::vector<double> warm_overheads;
  std::vector<double> warm_checkouts;
  std::set<std::string> seen_workers;
  ProbeOverhead overhead;
  for (const auto& probe : finished) {
    const bool first_of_worker = seen_workers.insert(probe.value("worker", "")).second;
    // Cached probes (from an earlier job) ran no task here; confirmations interleave two commits.
    const bool one_task = probe.value("kind", "") != "confirm" && !probe.value("cached", false) &&
                          probe.contains("runs") && probe.contains("timings") &&
                          static_cast<int>(probe["runs"].size()) == runs_per_commit;
    if (!one_task) {
      ++overhead.skipped;
      continue;
    }
    const double span = Seconds(probe["end_time"]) - Seconds(probe["start_time"]);
    const auto& timings = probe["timings"];
    const double probe_overhead =
        span - DurationSeconds(timings["build"]) - DurationSeconds(timings["bench"]);
    overheads.push_back(probe_overhead);
    if (!first_of_worker) {
      warm_overheads.push_back(probe_overhead);
      warm_checkouts.push_back(DurationSeconds(timings["checkout"]));
    }
  }
  overhead.probes = static_cast<int>(overheads.size());
  overhead.median_ms = Median(overheads) * 1000;
  overhead.warm_median_ms = Median(warm_overheads) * 1000;
  overhead.warm_checkout_median_ms = Median(warm_checkouts) * 1000;
  return overhead;
}

}  // namespace kbisect_bench
