// Copyright 2026 The kbisect Authors.
//
// Following a job as `kbisect run`, `kbisect submit --wait` and `kbisect watch` show it: the
// header (range, commit count, estimated rounds), one line per progress event from WatchJob,
// then the final report. All three are plain gRPC clients of a coordinator, in-process or not.
#ifndef KBISECT_CLI_JOB_PROGRESS_H_
#define KBISECT_CLI_JOB_PROGRESS_H_

#include <functional>
#include <ostream>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cli/job_outputs.h"
#include "common/sync/mutex.h"
#include "grpcpp/client_context.h"
#include "kbisect/v1/kbisect.grpc.pb.h"
#include "kbisect/v1/kbisect.pb.h"
#include "report/eta.h"

namespace kbisect {

// Writes the lines shown before the first probe: the range, the number of commits, and the
// estimated rounds with `workers` workers next to git bisect's step count.
void PrintJobHeader(const v1::JobStatus& job, int workers, std::ostream& out);

// True for the events whose message is a progress line (baselines, finished probes, warnings,
// drift); false for STARTED (the header says it), PROBE_CANCELLED and FINISHED (the report).
bool IsProgressLine(const v1::JobEvent& event);

// Rewrites progress events' lines for the terminal. A finished probe's "Step s/S:" (whose S
// moves as the search learns) becomes a stable "Round r of ~R:" (R starts at the header's
// estimate and only grows, to the probe's round plus the rounds still needed), "1 commits" and
// "1 probes" become singular, and the time left (report/eta.h, from the finished probes' spans
// and the rounds left) is added: "(12 commits left, 3 probes in flight, ~40s left)".
class ProgressLines {
 public:
  ProgressLines(const v1::JobStatus& job, int workers);

  // The line to print for `event` (IsProgressLine), at `now`.
  std::string Line(const v1::JobEvent& event, absl::Time now);

 private:
  EtaEstimator eta_;
  int rounds_ = 0;
};

// Prints the final report of `job` on stdout, writes the `outputs` asked for (JSON, HTML,
// Markdown, the notification), prints the job's error on stderr when it failed, and returns the
// exit code of `kbisect run` for it (ExitCodeFor), or kExitError when an output failed.
int ReportFinalStatus(const v1::JobStatus& job, const JobOutputs& outputs);

// Follows one job's events through WatchJob. Thread-safe: Stop() may be called from another
// thread (a signal handler thread) while Follow() runs.
class JobFollower {
 public:
  // `stub` must outlive the follower.
  JobFollower(v1::CoordinatorService::StubInterface* stub, std::string job_id);

  JobFollower(const JobFollower&) = delete;
  JobFollower& operator=(const JobFollower&) = delete;

  // Calls `on_event` with each event of the job, in order and once each, until the FINISHED
  // event, whose final status it returns. A stream that drops (coordinator restart, network)
  // is resumed after the last sequence seen; an unreachable coordinator is retried with backoff
  // for up to `reconnect_timeout` before its Unavailable status is returned. Returns Cancelled
  // after Stop(), and other errors (NotFound, Unauthenticated, ...) as they come.
  absl::StatusOr<v1::JobStatus> Follow(const std::function<void(const v1::JobEvent&)>& on_event,
                                       absl::Duration reconnect_timeout = absl::Minutes(2));

  // Makes a running or later Follow() return Cancelled promptly. Idempotent.
  void Stop();

 private:
  v1::CoordinatorService::StubInterface* const stub_;
  const std::string job_id_;
  kbisect::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace kbisect

#endif  // KBISECT_CLI_JOB_PROGRESS_H_
