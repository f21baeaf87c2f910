// Copyright 2026 The kbisect Authors.
//
// The coordinator's Prometheus metrics: a plain snapshot of counts (filled by
// Coordinator::Metrics) and its rendering in the Prometheus text exposition format 0.0.4, which
// `kbisect-coordinator --metrics-listen` serves at GET /metrics. Pure: no locks, no I/O.
#ifndef KBISECT_COORDINATOR_METRICS_H_
#define KBISECT_COORDINATOR_METRICS_H_

#include <cstdint>
#include <iterator>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace kbisect {

// The upper bounds, in seconds, of kbisect_probe_duration_seconds's buckets (+Inf follows): from
// a short benchmark to a long build and benchmark on a GPU.
inline constexpr double kProbeDurationBuckets[] = {1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600};

// Observations of one histogram: counts per bucket of kProbeDurationBuckets (not cumulative; the
// last element counts those above the largest bound), their sum and count.
struct DurationHistogram {
  std::vector<int64_t> buckets = std::vector<int64_t>(std::size(kProbeDurationBuckets) + 1, 0);
  double sum = 0;
  int64_t count = 0;

  void Observe(double seconds);
};

struct MetricsSnapshot {
  // Jobs per state ("queued", "baselines", "bisecting", "confirming", "suite_search",
  // "following_up", "done", "cancelled", "failed"); the coordinator lists every state, with zeros.
  std::map<std::string, int64_t> jobs_by_state;
  // Classified probes of every job per verdict ("good", "bad", "skip", "ambiguous").
  std::map<std::string, int64_t> probes_by_verdict;
  // Benchmark executions of every job, baselines included.
  int64_t bench_runs = 0;
  // Workers per (hardware class fingerprint, state: "idle", "busy", "draining", "lost").
  std::map<std::pair<std::string, std::string>, int64_t> workers;
  // Drift events of every job (quarantines and calibrations lost to a hardware change).
  int64_t drift_events = 0;
  // Workers quarantined for a job (counted once per job and worker).
  int64_t quarantines = 0;
  // Leases that expired because their worker stopped heart-beating, since the coordinator started.
  int64_t lease_expiries = 0;
  // Whether the coordinator can persist changes (false: it serves reads only; see
  // coordinator/coordinator.h).
  bool state_writable = true;
  // kbisect_build_info's labels: kbisect's version and the gRPC library's.
  std::string version;
  std::string grpc_version;
  // Wall time from start to end of every probe of every job that a worker measured to its end
  // (cached and cancelled ones not), by probe kind ("baseline_good", "bisect", "confirm", ...).
  std::map<std::string, DurationHistogram> probe_seconds;
};

// Returns `value` escaped for a label value in the text format: backslash, double quote and
// newline become \\, \" and \n.
std::string EscapeLabelValue(absl::string_view value);

// Returns the snapshot in the Prometheus text exposition format 0.0.4: for each metric a
// "# HELP" and a "# TYPE" line, then its samples, one per line, ending with a newline. Metrics:
// kbisect_jobs{state} (gauge), kbisect_probes_total{verdict}, kbisect_bench_runs_total,
// kbisect_workers{hardware_class,state} (gauge), kbisect_drift_events_total,
// kbisect_quarantines_total and kbisect_lease_expiries_total (counters), kbisect_state_writable
// (gauge, 1 or 0), kbisect_build_info{version,grpc_version} (gauge, 1) and
// kbisect_probe_duration_seconds{kind} (histogram, kProbeDurationBuckets).
std::string RenderPrometheusText(const MetricsSnapshot& snapshot);

// The Content-Type of RenderPrometheusText's output.
inline constexpr char kPrometheusContentType[] = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_METRICS_H_
