// Copyright 2026 The kbisect Authors.
#include "coordinator/job/job_event_log.h"

#include "common/rpc/proto_time.h"

namespace kbisect {

void JobEventLog::Emit(v1::JobEventKind kind, const std::string& message, const v1::Probe* probe,
                       absl::Time now) {
  v1::JobEvent event;
  event.set_kind(kind);
  event.set_message(message);
  *event.mutable_time() = ToProto(now);
  if (probe != nullptr) *event.mutable_probe() = *probe;
  *event.mutable_progress() = status_->progress();
  if (kind == v1::JOB_EVENT_KIND_FINISHED) *event.mutable_job() = *status_;
  events_.push_back(std::move(event));
}

}  // namespace kbisect
