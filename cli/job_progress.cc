// Copyright 2026 The kbisect Authors.
#include "cli/job_progress.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "cli/report/report.h"
#include "cli/report/status_json.h"
#include "cli/run_command.h"
#include "common/rpc/status_conversion.h"
#include "common/search/bisect_search.h"
#include "common/spec/job_spec.h"
#include "common/text/count.h"
#include "report/event_words.h"
#include "report/words.h"

namespace kbisect {

void PrintJobHeader(const v1::JobStatus& job, int workers, std::ostream& out) {
  const int n = job.commit_count();
  workers = std::max(1, workers);
  out << absl::StrFormat(
      "Bisect range: %s..%s\nTotal commits in range: %d\n"
      "Workers: %d; estimated rounds: %d (git bisect: %s)\n",
      job.good_sha().substr(0, 7), job.bad_sha().substr(0, 7), n, workers,
      BisectSearch::EstimateRounds(n, workers), Count(BisectSearch::EstimateRounds(n, 1), "step"));
  if (n > 100) {
    out << "Note: more than 100 commits; each round runs the benchmark "
        << (job.spec().runs_per_commit() == 1
                ? std::string("once")
                : absl::StrCat(job.spec().runs_per_commit(), " times"))
        << " per probe"
        << (MayRunOncePerProbe(job.spec()) ? " (once if GOOD and BAD each repeat one value)" : "")
        << ".\n";
  }
  if (job.marks_size() > 0) {
    out << MarksText(job.marks(), std::max(0, job.first_bad_index() - job.last_good_index()))
        << "\n";
  }
  out << std::flush;
}

bool IsProgressLine(const v1::JobEvent& event) {
  switch (event.kind()) {
    case v1::JOB_EVENT_KIND_STARTED:
    case v1::JOB_EVENT_KIND_PROBE_CANCELLED:
    case v1::JOB_EVENT_KIND_FINISHED:
      return false;
    default:
      return !EventWords(event).empty();
  }
}

ProgressLines::ProgressLines(const v1::JobStatus& job, int workers)
    : eta_(job.spec().confirm()),
      rounds_(BisectSearch::EstimateRounds(job.commit_count(), std::max(1, workers))) {}

std::string ProgressLines::Line(const v1::JobEvent& event, absl::Time now) {
  // The fact's words (report/event_words), or the message of a coordinator older than facts.
  std::string line = EventWords(event);
  line = absl::StrReplaceAll(line, {{"(1 commits left", "(1 commit left"},
                                    {", 1 probes in flight", ", 1 probe in flight"}});
  if (event.kind() != v1::JOB_EVENT_KIND_PROBE_FINISHED || !event.has_probe()) return line;
  eta_.Observe(event.probe());
  const size_t colon = line.find(": ");
  if (absl::StartsWith(line, "Step ") && colon != std::string::npos) {
    const int round = std::max(1, event.probe().round());
    rounds_ = std::max({rounds_, round, round + event.progress().estimated_rounds() - 1});
    line = absl::StrCat("Round ", round, " of ~", rounds_, line.substr(colon));
  }
  const std::optional<absl::Duration> left = eta_.Left(event.progress(), now);
  if (left.has_value() && absl::EndsWith(line, ")")) {
    line.insert(line.size() - 1, absl::StrCat(", ", FormatEta(*left), " left"));
  }
  return line;
}

int ReportFinalStatus(const v1::JobStatus& job, const JobOutputs& outputs) {
  std::cout << FormatReport(job) << std::flush;
  const absl::Status written = WriteJobOutputs(job, outputs);
  if (job.status() == v1::OUTCOME_ERROR && !job.error().empty()) {
    std::cerr << "kbisect: " << job.error() << "\n";
  }
  if (!written.ok()) {
    std::cerr << "kbisect: " << written.message() << "\n";
    return kExitError;
  }
  return ExitCodeForJob(job);
}

JobFollower::JobFollower(v1::CoordinatorService::StubInterface* stub, std::string job_id)
    : stub_(stub), job_id_(std::move(job_id)) {}

void JobFollower::Stop() {
  kbisect::MutexLock lock(&mu_);
  stopped_ = true;
  if (context_ != nullptr) context_->TryCancel();
}

absl::StatusOr<v1::JobStatus> JobFollower::Follow(
    const std::function<void(const v1::JobEvent&)>& on_event, absl::Duration reconnect_timeout) {
  const absl::Duration kMinBackoff = absl::Milliseconds(200);
  int64_t after = 0;
  absl::Duration backoff = kMinBackoff;
  absl::Time failing_since = absl::InfiniteFuture();
  while (true) {
    grpc::ClientContext context;
    {
      kbisect::MutexLock lock(&mu_);
      if (stopped_) return absl::CancelledError("stopped following the job");
      context_ = &context;
    }
    v1::WatchJobRequest request;
    request.set_job_id(job_id_);
    request.set_after_sequence(after);
    std::unique_ptr<grpc::ClientReaderInterface<v1::WatchJobResponse>> reader =
        stub_->WatchJob(&context, request);
    v1::WatchJobResponse response;
    std::optional<v1::JobStatus> final_status;
    while (reader->Read(&response)) {
      failing_since = absl::InfiniteFuture();
      backoff = kMinBackoff;
      const v1::JobEvent& event = response.event();
      if (event.sequence() != 0 && event.sequence() <= after) continue;  // Seen before.
      after = std::max(after, event.sequence());
      if (event.kind() == v1::JOB_EVENT_KIND_FINISHED) {
        final_status = event.job();
        context.TryCancel();
        break;
      }
      on_event(event);
    }
    const grpc::Status status = reader->Finish();
    {
      kbisect::MutexLock lock(&mu_);
      context_ = nullptr;
      if (final_status.has_value()) return *std::move(final_status);
      if (stopped_) return absl::CancelledError("stopped following the job");
    }
    const grpc::StatusCode code = status.error_code();
    if (!status.ok() && code != grpc::StatusCode::UNAVAILABLE &&
        code != grpc::StatusCode::DEADLINE_EXCEEDED && code != grpc::StatusCode::CANCELLED &&
        code != grpc::StatusCode::INTERNAL && code != grpc::StatusCode::UNKNOWN) {
      return FromGrpcStatus(status);
    }
    // The stream dropped: resume after the last event seen, with backoff.
    const absl::Time now = absl::Now();
    if (failing_since == absl::InfiniteFuture()) failing_since = now;
    if (now - failing_since > reconnect_timeout) {
      return status.ok() ? absl::UnavailableError("the coordinator keeps closing the event stream")
                         : FromGrpcStatus(status);
    }
    kbisect::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(kbisect::Condition(&stopped_), backoff);
    backoff = std::min(backoff * 2, absl::Seconds(5));
  }
}

}  // namespace kbisect
