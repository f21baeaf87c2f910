// Copyright 2026 The kbisect Authors.
#include "coordinator/job/job_event_log.h"

#include "common/rpc/proto_time.h"
#include "report/event_words.h"

namespace kbisect {

void JobEventLog::Emit(v1::JobEventKind kind, v1::JobEvent fact, const v1::Probe* probe,
                       const v1::Progress& progress, absl::Time now) {
  v1::JobEvent& event = events_.emplace_back(std::move(fact));
  event.set_kind(kind);
  *event.mutable_time() = ToProto(now);
  if (probe != nullptr) *event.mutable_probe() = *probe;
  *event.mutable_progress() = progress;
  event.set_message(EventWords(event));
}

void JobEventLog::Emit(v1::JobEventKind kind, v1::JobWarning warning, const v1::Probe* probe,
                       const v1::Progress& progress, absl::Time now) {
  v1::JobEvent fact;
  *fact.mutable_warning() = std::move(warning);
  Emit(kind, std::move(fact), probe, progress, now);
}

}  // namespace kbisect
