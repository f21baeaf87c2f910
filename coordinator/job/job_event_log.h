// Copyright 2026 The kbisect Authors.
//
// JobEventLog: the events a job produced since the coordinator last took them
// (BisectJob::TakeEvents). Each is a typed fact (v1::JobEvent's `fact`, issue 48) stamped with
// its time, the job's progress at that moment and its probe when it has one; a FINISHED event
// carries the whole status. The parts of the job say what happened, never how to word it: the
// event's `message` is the fact's words from report/event_words, kept on the wire for clients
// older than the facts and for the JSON users' scripts read. It reads the job's status through
// the pointer it is given, as the job's other parts do. Thread-compatible.
#ifndef KBISECT_COORDINATOR_JOB_JOB_EVENT_LOG_H_
#define KBISECT_COORDINATOR_JOB_JOB_EVENT_LOG_H_

#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

class JobEventLog {
 public:
  // `status` must outlive the log.
  explicit JobEventLog(const v1::JobStatus* status) : status_(status) {}

  // Appends `fact`, an event with only its fact set, as an event of `kind` about `probe`
  // (copied; may be null) at `now`; its message is the fact's words.
  void Emit(v1::JobEventKind kind, v1::JobEvent fact, const v1::Probe* probe, absl::Time now);
  // Appends a WARNING or DRIFT event (`kind`) of `warning`, as Emit does.
  void Emit(v1::JobEventKind kind, v1::JobWarning warning, const v1::Probe* probe, absl::Time now);

  // The events appended since the last call, oldest first (sequence numbers unset: the
  // coordinator numbers them in the job's stream).
  std::vector<v1::JobEvent> Take() { return std::exchange(events_, {}); }

 private:
  const v1::JobStatus* status_;
  std::vector<v1::JobEvent> events_;
};

// Appends `warning` to `status`: the fact to warning_facts, its words to warnings.
void AddWarning(v1::JobWarning warning, v1::JobStatus* status);

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_JOB_EVENT_LOG_H_
