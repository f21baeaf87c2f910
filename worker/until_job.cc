// Copyright 2026 The kbisect Authors.
#include "worker/until_job.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/rpc/enum_label.h"
#include "common/rpc/status_conversion.h"
#include "grpcpp/client_context.h"
#include "kbisect/v1/kbisect.grpc.pb.h"

namespace kbisect {

UntilJobStep DecideUntilJob(const std::string& job_id, const absl::StatusOr<v1::JobState>& state) {
  UntilJobStep step;
  if (state.ok()) {
    if (*state == v1::JOB_STATE_DONE || *state == v1::JOB_STATE_CANCELLED ||
        *state == v1::JOB_STATE_FAILED) {
      step.action = UntilJobStep::Action::kDrain;
      step.message = absl::StrCat("job ", job_id, " has ended (", EnumLabel(*state),
                                  "): draining, then exiting (--until-job)");
    }
    return step;
  }
  switch (state.status().code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kAborted:
      return step;
    case absl::StatusCode::kNotFound:
      step.action = UntilJobStep::Action::kFail;
      step.exit_code = kExitUnknownUntilJob;
      step.message = absl::StrCat("--until-job ", job_id,
                                  ": the coordinator knows no such job (a typo, another "
                                  "coordinator, or deleted after its --retain): ",
                                  state.status().message());
      return step;
    default:
      step.action = UntilJobStep::Action::kFail;
      step.exit_code = 1;
      step.message = absl::StrCat("--until-job ", job_id,
                                  ": cannot ask the coordinator for the "
                                  "job's state (",
                                  absl::StatusCodeToString(state.status().code()), ": ",
                                  state.status().message(),
                                  "); a coordinator older than this worker does not serve "
                                  "WorkerService.GetJobState");
      return step;
  }
}

UntilJobWatch::UntilJobWatch(Options options, std::shared_ptr<grpc::Channel> channel,
                             std::function<void(const UntilJobStep&)> on_end)
    : options_(std::move(options)), channel_(std::move(channel)), on_end_(std::move(on_end)) {
  thread_ = std::thread([this] { Loop(); });
}

UntilJobWatch::~UntilJobWatch() {
  stop_.Notify();
  thread_.join();
}

void UntilJobWatch::Loop() {
  do {
    const UntilJobStep step = DecideUntilJob(options_.job_id, Ask());
    if (step.action != UntilJobStep::Action::kKeepServing) {
      if (!stop_.HasBeenNotified()) on_end_(step);
      return;
    }
  } while (!stop_.WaitForNotificationWithTimeout(options_.period));
}

absl::StatusOr<v1::JobState> UntilJobWatch::Ask() const {
  grpc::ClientContext context;
  // As the agent's calls: wait for a reconnecting channel rather than fail at once.
  context.set_wait_for_ready(true);
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(absl::ToInt64Milliseconds(options_.timeout)));
  v1::GetJobStateRequest request;
  request.set_job_id(options_.job_id);
  v1::GetJobStateResponse response;
  const grpc::Status status =
      v1::WorkerService::NewStub(channel_)->GetJobState(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response.state();
}

}  // namespace kbisect
