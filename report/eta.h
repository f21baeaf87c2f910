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
//
// In the coordinator, finished jobs of the same benchmark (SameBenchmark) give a prior span
// (docs/decisions.md, 55): it counts as one more observed span, so the live page has an
// estimate from the start, and the job's own spans outweigh it as they come.
#ifndef KBISECT_REPORT_ETA_H_
#define KBISECT_REPORT_ETA_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

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

  // A span learned from earlier jobs; it weighs as one of the job's own spans.
  void SetPrior(absl::Duration span) { prior_ = span; }

  // The estimate for `progress` at `now`; nullopt before a bisect probe has finished and
  // without a prior.
  std::optional<absl::Duration> Left(const v1::Progress& progress, absl::Time now) const;

  int spans() const { return spans_; }

 private:
  const bool confirm_;
  std::set<std::string> seen_;
  int spans_ = 0;
  absl::Duration total_ = absl::ZeroDuration();
  bool confirmed_ = false;
  std::map<std::string, absl::Time> running_;  // Probe id -> start.
  std::optional<absl::Duration> prior_;
};

// True when `job` has ended: done, cancelled or failed (no time left to estimate).
bool JobFinished(const v1::JobStatus& job);

// True when two specs run the same benchmark the same way: the same repository, build command,
// benchmark command, metric and runs per commit (the range, marks and options may differ).
bool SameBenchmark(const v1::JobSpec& a, const v1::JobSpec& b);

// What earlier jobs say about the span of one bisect probe.
struct PastSpan {
  absl::Duration mean;  // The mean over every span counted.
  int jobs = 0;         // Jobs that contributed.
  int spans = 0;        // Finished, measured (not cached) bisect probes counted.
};

// The mean span of the finished, measured bisect probes of the done jobs in `history` that ran
// the same benchmark as `job` (not `job` itself), the `max_jobs` most recently created first;
// nullopt when none has one.
std::optional<PastSpan> PastSpanOf(const v1::JobStatus& job,
                                   const std::vector<v1::JobStatus>& history, int max_jobs = 5);

// The estimate for a job's status (every probe observed), or nullopt when the job is finished
// or has no finished bisect probe yet.
std::optional<absl::Duration> EstimateTimeLeft(const v1::JobStatus& job, absl::Time now,
                                               std::optional<absl::Duration> prior = std::nullopt);

// "~40s", "~3m", "~1h05m" (ETA words for progress lines and the page).
std::string FormatEta(absl::Duration left);

}  // namespace kbisect

#endif  // KBISECT_REPORT_ETA_H_
