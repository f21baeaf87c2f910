// Copyright 2026 The kbisect Authors.
//
// A worker that serves until one job has ended (`kbisect-worker --until-job JOB`, env
// KBISECT_UNTIL_JOB): the pods of a Kubernetes Indexed Job that `kbisect k8s-job` makes for one
// bisect, which must exit 0 once that bisect is over so that the Job completes and its GPUs go
// back to the queue (docs/operations.md, "Kueue").
//
// UntilJobWatch asks the coordinator for the job's state (WorkerService.GetJobState, which a
// worker's certificate may call) every few seconds on the worker's own channel, and
// DecideUntilJob, pure, says what each answer means: keep serving, drain (the job is DONE,
// CANCELLED or FAILED: the worker then drains exactly as on SIGTERM), or fail (the coordinator
// does not know the job: exit 2, so a Job's pod failure policy can fail the Job at once rather
// than retry a typo). A job FOLLOWING_UP has not ended: its follow-up jobs still need workers.
//
//   UntilJobWatch watch({.job_id = "job-7"}, channel, [&](const UntilJobStep& step) { ... });
#ifndef KBISECT_WORKER_UNTIL_JOB_H_
#define KBISECT_WORKER_UNTIL_JOB_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/sync/notification.h"
#include "grpcpp/channel.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// The exit code of a worker whose --until-job names a job the coordinator does not know: the
// usage errors' code, since retrying the same command cannot help.
inline constexpr int kExitUnknownUntilJob = 2;

// What a worker serving until a job has ended does after one answer about that job.
struct UntilJobStep {
  enum class Action {
    kKeepServing,  // The job still runs, or the coordinator could not be asked this time.
    kDrain,        // The job has ended: drain as on SIGTERM, then exit 0.
    kFail,         // The job cannot be followed: stop at once and exit with `exit_code`.
  };
  Action action = Action::kKeepServing;
  // kFail's exit code: kExitUnknownUntilJob for a job the coordinator does not know, 1 for any
  // other refusal (no such RPC at an older coordinator, credentials refused).
  int exit_code = 0;
  // kDrain and kFail: the sentence to log, naming the job.
  std::string message;
};

// Returns what a worker serving until `job_id` has ended does after the coordinator answered
// `state` for it: the job's state, or the call's error. Errors that pass (UNAVAILABLE,
// DEADLINE_EXCEEDED, CANCELLED, RESOURCE_EXHAUSTED, ABORTED: a coordinator restarting or busy)
// keep serving.
UntilJobStep DecideUntilJob(const std::string& job_id, const absl::StatusOr<v1::JobState>& state);

// Asks the coordinator about one job on a thread of its own until the answer ends the serving.
class UntilJobWatch {
 public:
  struct Options {
    // The job to serve until; not empty.
    std::string job_id;
    // The time between two questions; the first is asked at once.
    absl::Duration period = absl::Seconds(5);
    // The deadline of one question.
    absl::Duration timeout = absl::Seconds(10);
  };

  // Starts asking over `channel`; calls `on_end` once, from the watch's thread, with the first
  // step that is not kKeepServing, and asks no more after it.
  UntilJobWatch(Options options, std::shared_ptr<grpc::Channel> channel,
                std::function<void(const UntilJobStep&)> on_end);
  // Stops asking and joins the thread; `on_end` is not called after it returns.
  ~UntilJobWatch();

  UntilJobWatch(const UntilJobWatch&) = delete;
  UntilJobWatch& operator=(const UntilJobWatch&) = delete;

 private:
  // The watch's thread: asks every period until an answer ends the serving or the destructor
  // runs.
  void Loop();
  // Asks the coordinator once for the job's state.
  absl::StatusOr<v1::JobState> Ask() const;

  const Options options_;
  const std::shared_ptr<grpc::Channel> channel_;
  const std::function<void(const UntilJobStep&)> on_end_;
  kbisect::Notification stop_;
  std::thread thread_;
};

}  // namespace kbisect

#endif  // KBISECT_WORKER_UNTIL_JOB_H_
