// Copyright 2026 The kbisect Authors.
//
// JobEventLog: the events a job produced since the coordinator last took them
// (BisectJob::TakeEvents). Each is stamped with its time, the job's progress at that moment and
// its probe when it has one; a FINISHED event carries the whole status. It reads the job's status
// through the pointer it is given, as the job's other parts do. Thread-compatible.
#ifndef KBISECT_COORDINATOR_JOB_JOB_EVENT_LOG_H_
#define KBISECT_COORDINATOR_JOB_JOB_EVENT_LOG_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

class JobEventLog {
 public:
  // `status` must outlive the log.
  explicit JobEventLog(const v1::JobStatus* status) : status_(status) {}

  // Appends an event of `kind` saying `message` (the sentence job_text chose), about `probe`
  // (copied; may be null), at `now`.
  void Emit(v1::JobEventKind kind, const std::string& message, const v1::Probe* probe,
            absl::Time now);

  // The events appended since the last call, oldest first (sequence numbers unset: the
  // coordinator numbers them in the job's stream).
  std::vector<v1::JobEvent> Take() { return std::exchange(events_, {}); }

 private:
  const v1::JobStatus* status_;
  std::vector<v1::JobEvent> events_;
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_JOB_EVENT_LOG_H_
