// Copyright 2026 The kbisect Authors.
#include "report/eta.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "common/rpc/proto_time.h"

namespace kbisect {

void EtaEstimator::Observe(const v1::Probe& probe) {
  if (probe.state() == v1::PROBE_STATE_RUNNING && probe.has_start_time()) {
    running_.emplace(probe.probe_id(), FromProto(probe.start_time()));
    return;
  }
  running_.erase(probe.probe_id());
  if (probe.state() != v1::PROBE_STATE_FINISHED) return;
  if (probe.kind() == v1::PROBE_KIND_CONFIRM) confirmed_ = true;
  if (probe.kind() != v1::PROBE_KIND_BISECT || probe.cached()) return;
  if (!probe.has_start_time() || !probe.has_end_time()) return;
  if (!seen_.insert(probe.probe_id()).second) return;
  total_ += FromProto(probe.end_time()) - FromProto(probe.start_time());
  ++spans_;
}

std::optional<absl::Duration> EtaEstimator::Left(const v1::Progress& progress,
                                                 absl::Time now) const {
  if (spans_ == 0 && !prior_.has_value()) return std::nullopt;
  const absl::Duration span =
      prior_.has_value() ? (total_ + *prior_) / (spans_ + 1) : total_ / spans_;
  const int units = std::max(0, progress.estimated_rounds()) + (confirm_ && !confirmed_ ? 1 : 0);
  absl::Duration left = span * units;
  if (progress.probes_in_flight() > 0 && !running_.empty()) {
    absl::Time oldest = absl::InfiniteFuture();
    for (const auto& [id, start] : running_) oldest = std::min(oldest, start);
    if (oldest < now) left -= std::min(span, now - oldest);
  }
  return std::max(left, absl::ZeroDuration());
}

bool JobFinished(const v1::JobStatus& job) {
  return job.state() == v1::JOB_STATE_DONE || job.state() == v1::JOB_STATE_CANCELLED ||
         job.state() == v1::JOB_STATE_FAILED;
}

bool SameBenchmark(const v1::JobSpec& a, const v1::JobSpec& b) {
  return a.repository() == b.repository() && a.build_command() == b.build_command() &&
         std::equal(a.bench_command().begin(), a.bench_command().end(), b.bench_command().begin(),
                    b.bench_command().end()) &&
         a.metric().SerializeAsString() == b.metric().SerializeAsString() &&
         a.runs_per_commit() == b.runs_per_commit();
}

std::optional<PastSpan> PastSpanOf(const v1::JobStatus& job,
                                   const std::vector<v1::JobStatus>& history, int max_jobs) {
  std::vector<const v1::JobStatus*> same;
  for (const v1::JobStatus& past : history) {
    if (past.job_id() != job.job_id() && past.state() == v1::JOB_STATE_DONE &&
        SameBenchmark(past.spec(), job.spec())) {
      same.push_back(&past);
    }
  }
  std::stable_sort(same.begin(), same.end(), [](const v1::JobStatus* x, const v1::JobStatus* y) {
    return FromProto(x->create_time()) > FromProto(y->create_time());
  });
  PastSpan out{absl::ZeroDuration(), 0, 0};
  for (const v1::JobStatus* past : same) {
    if (out.jobs == max_jobs) break;
    EtaEstimator eta(false);
    absl::Duration total = absl::ZeroDuration();
    for (const v1::Probe& p : past->probes()) {
      const int before = eta.spans();
      eta.Observe(p);
      if (eta.spans() > before) total += FromProto(p.end_time()) - FromProto(p.start_time());
    }
    if (eta.spans() == 0) continue;
    out.mean += total;
    out.spans += eta.spans();
    ++out.jobs;
  }
  if (out.spans == 0) return std::nullopt;
  out.mean /= out.spans;
  return out;
}

std::optional<absl::Duration> EstimateTimeLeft(const v1::JobStatus& job, absl::Time now,
                                               std::optional<absl::Duration> prior) {
  if (JobFinished(job)) return std::nullopt;
  EtaEstimator eta(job.spec().confirm());
  if (prior.has_value()) eta.SetPrior(*prior);
  for (const v1::Probe& p : job.probes()) eta.Observe(p);
  return eta.Left(job.progress(), now);
}

std::string FormatEta(absl::Duration left) {
  const int64_t s = std::max<int64_t>(0, absl::ToInt64Seconds(left + absl::Milliseconds(500)));
  if (s < 60) return absl::StrFormat("~%ds", s);
  if (s < 3600) return absl::StrFormat("~%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("~%dh%02dm", s / 3600, (s % 3600) / 60);
}

}  // namespace kbisect
