// Copyright 2026 The kbisect Authors.
//
// The time a running job has left, estimated from what it has observed (docs/decisions.md, 52):
//
//   left = (rounds left + confirmation) x (the mean span of its finished bisect probes, lease to
//          result) - how long the oldest probe in flight has already run (at most one span)
//
// "Rounds left" is the job's Progress.estimated_rounds (the deterministic bound for the
// candidates left); the confirmation counts as one more span while the spec asks for one and no
// confirmation task has finished. Before any bisect probe has finished there is no estimate.
// The same estimator serves the progress lines (fed with each finished probe's event) and the
// HTML page (fed with the job's probes).
#ifndef KBISECT_REPORT_ETA_H_
#define KBISECT_REPORT_ETA_H_

#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/time/time.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

class EtaEstimator {
 public:
  explicit EtaEstimator(bool confirm) : confirm_(confirm) {}

  // Records a probe: a finished bisect probe's span counts once (by probe id), a finished
  // confirmation task ends the confirmation's share, a running probe's start is remembered
  // until it finishes.
  void Observe(const v1::Probe& probe);

  // The estimate for `progress` at `now`; nullopt before a bisect probe has finished.
  std::optional<absl::Duration> Left(const v1::Progress& progress, absl::Time now) const;

  int spans() const { return spans_; }

 private:
  const bool confirm_;
  std::set<std::string> seen_;
  int spans_ = 0;
  absl::Duration total_ = absl::ZeroDuration();
  bool confirmed_ = false;
  std::map<std::string, absl::Time> running_;  // Probe id -> start.
};

// The estimate for a job's status (every probe observed), or nullopt when the job is finished
// or has no finished bisect probe yet.
std::optional<absl::Duration> EstimateTimeLeft(const v1::JobStatus& job, absl::Time now);

// "~40s", "~3m", "~1h05m" (ETA words for progress lines and the page).
std::string FormatEta(absl::Duration left);

}  // namespace kbisect

#endif  // KBISECT_REPORT_ETA_H_
