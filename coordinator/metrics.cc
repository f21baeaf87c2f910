// Copyright 2026 The kbisect Authors.
#include "coordinator/metrics.h"

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "common/rpc/enum_label.h"
#include "common/rpc/proto_time.h"
#include "common/version.h"
#include "coordinator/coordinator.h"

namespace kbisect {
namespace {

void Header(std::string* out, absl::string_view name, absl::string_view type,
            absl::string_view help) {
  absl::StrAppend(out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
}

}  // namespace

void DurationHistogram::Observe(double seconds) {
  size_t bucket = 0;
  while (bucket < std::size(kProbeDurationBuckets) && seconds > kProbeDurationBuckets[bucket]) {
    ++bucket;
  }
  ++buckets[bucket];
  sum += seconds;
  ++count;
}

std::string EscapeLabelValue(absl::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string RenderPrometheusText(const MetricsSnapshot& snapshot) {
  std::string out;
  Header(&out, "kbisect_jobs", "gauge", "Jobs known to the coordinator, by state.");
  for (const auto& [state, count] : snapshot.jobs_by_state) {
    absl::StrAppend(&out, "kbisect_jobs{state=\"", EscapeLabelValue(state), "\"} ", count, "\n");
  }
  Header(&out, "kbisect_probes_total", "counter", "Classified probes of all jobs, by verdict.");
  for (const auto& [verdict, count] : snapshot.probes_by_verdict) {
    absl::StrAppend(&out, "kbisect_probes_total{verdict=\"", EscapeLabelValue(verdict), "\"} ",
                    count, "\n");
  }
  Header(&out, "kbisect_bench_runs_total", "counter",
         "Benchmark executions of all jobs, baselines included.");
  absl::StrAppend(&out, "kbisect_bench_runs_total ", snapshot.bench_runs, "\n");
  Header(&out, "kbisect_workers", "gauge", "Workers by hardware class and state.");
  for (const auto& [key, count] : snapshot.workers) {
    absl::StrAppend(&out, "kbisect_workers{hardware_class=\"", EscapeLabelValue(key.first),
                    "\",state=\"", EscapeLabelValue(key.second), "\"} ", count, "\n");
  }
  Header(&out, "kbisect_drift_events_total", "counter",
         "Drift events of all jobs (quarantines, calibrations lost to a hardware change).");
  absl::StrAppend(&out, "kbisect_drift_events_total ", snapshot.drift_events, "\n");
  Header(&out, "kbisect_quarantines_total", "counter", "Workers quarantined for a job.");
  absl::StrAppend(&out, "kbisect_quarantines_total ", snapshot.quarantines, "\n");
  Header(&out, "kbisect_lease_expiries_total", "counter",
         "Leases that expired without a heartbeat since the coordinator started.");
  absl::StrAppend(&out, "kbisect_lease_expiries_total ", snapshot.lease_expiries, "\n");
  Header(&out, "kbisect_state_writable", "gauge",
         "1 while the coordinator can write its state directory; 0: it serves reads only.");
  absl::StrAppend(&out, "kbisect_state_writable ", snapshot.state_writable ? 1 : 0, "\n");
  Header(&out, "kbisect_build_info", "gauge", "Always 1; the labels say what is running.");
  absl::StrAppend(&out, "kbisect_build_info{version=\"", EscapeLabelValue(snapshot.version),
                  "\",grpc_version=\"", EscapeLabelValue(snapshot.grpc_version), "\"} 1\n");
  Header(&out, "kbisect_probe_duration_seconds", "histogram",
         "Wall time of measured probes (checkout, build and runs), by kind.");
  for (const auto& [kind, histogram] : snapshot.probe_seconds) {
    const std::string label = absl::StrCat("kind=\"", EscapeLabelValue(kind), "\"");
    int64_t cumulative = 0;
    for (size_t i = 0; i < histogram.buckets.size(); ++i) {
      cumulative += histogram.buckets[i];
      const std::string le = i < std::size(kProbeDurationBuckets)
                                 ? absl::StrCat(kProbeDurationBuckets[i])
                                 : std::string("+Inf");
      absl::StrAppend(&out, "kbisect_probe_duration_seconds_bucket{", label, ",le=\"", le, "\"} ",
                      cumulative, "\n");
    }
    absl::StrAppend(&out, "kbisect_probe_duration_seconds_sum{", label, "} ", histogram.sum, "\n",
                    "kbisect_probe_duration_seconds_count{", label, "} ", histogram.count, "\n");
  }
  return out;
}

// The snapshot is taken by the coordinator, under its lock.
MetricsSnapshot Coordinator::Metrics() const {
  MetricsSnapshot snapshot;
  for (int state = v1::JOB_STATE_QUEUED; state <= v1::JobState_MAX; ++state) {
    if (!v1::JobState_IsValid(state)) continue;
    snapshot.jobs_by_state[EnumLabel(static_cast<v1::JobState>(state))] = 0;
  }
  for (int verdict = v1::VERDICT_GOOD; verdict <= v1::VERDICT_AMBIGUOUS; ++verdict) {
    if (!v1::Verdict_IsValid(verdict)) continue;
    snapshot.probes_by_verdict[EnumLabel(static_cast<v1::Verdict>(verdict))] = 0;
  }
  kbisect::MutexLock lock(&mu_);
  for (const auto& [id, entry] : jobs_.entries()) {
    const v1::JobStatus& status = entry.Base();
    ++snapshot.jobs_by_state[EnumLabel(entry.State())];
    for (const v1::Probe& probe : status.probes()) {
      if (probe.state() == v1::PROBE_STATE_FINISHED && !probe.cached() && probe.has_start_time() &&
          probe.has_end_time()) {
        snapshot.probe_seconds[EnumLabel(probe.kind())].Observe(
            absl::ToDoubleSeconds(FromProto(probe.end_time()) - FromProto(probe.start_time())));
      }
      if (probe.verdict() == v1::VERDICT_UNSPECIFIED) continue;
      ++snapshot.probes_by_verdict[EnumLabel(probe.verdict())];
    }
    snapshot.bench_runs += status.bench_runs();
    snapshot.drift_events += status.drift_events_size();
    // Every drift event but a lost calibration (an identity changed) records a quarantine, which
    // BisectJob makes at most once per worker and job.
    for (const v1::DriftEvent& event : status.drift_events()) {
      if (event.kind() != v1::DRIFT_KIND_IDENTITY_CHANGED) ++snapshot.quarantines;
    }
  }
  for (const auto& [id, worker] : workers().entries()) {
    ++snapshot.workers[{worker.identity.hardware_class(), EnumLabel(worker.state)}];
  }
  snapshot.lease_expiries = leases_.expiries();
  snapshot.state_writable = journal_.writable(mu_);
  snapshot.version = kKbisectVersion;
  snapshot.grpc_version = grpc::Version();
  return snapshot;
}

}  // namespace kbisect
