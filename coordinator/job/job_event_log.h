// Copyright 2026 The kbisect Authors.
//
// JobEventLog: the events a job produced since the coordinator last took them
// (BisectJob::TakeEvents). Each is a typed fact (v1::JobEvent's `fact`, issue 48) stamped with
// its time, the job's progress at that moment and its probe when it has one; a FINISHED event
// carries the whole status, which the job puts in it. The parts of the job say what happened,
// never how to word it: the event's `message` is the fact's words from report/event_words, kept
// on the wire for clients older than the facts and for the JSON users' scripts read. It owns
// its events and reads nothing else. Thread-compatible.
#ifndef KBISECT_COORDINATOR_JOB_JOB_EVENT_LOG_H_
#define KBISECT_COORDINATOR_JOB_JOB_EVENT_LOG_H_

#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

class JobEventLog {
 public:
  // Appends `fact`, an event with only its fact set (and, for FINISHED, the job's status), as
  // an event of `kind` about `probe` (copied; may be null) at `now` with the job's `progress`
  // then; its message is the fact's words.
  void Emit(v1::JobEventKind kind, v1::JobEvent fact, const v1::Probe* probe,
            const v1::Progress& progress, absl::Time now);
  // Appends a WARNING or DRIFT event (`kind`) of `warning`, as Emit does.
  void Emit(v1::JobEventKind kind, v1::JobWarning warning, const v1::Probe* probe,
            const v1::Progress& progress, absl::Time now);

  // The events appended since the last call, oldest first (sequence numbers unset: the
  // coordinator numbers them in the job's stream).
  std::vector<v1::JobEvent> Take() { return std::exchange(events_, {}); }

 private:
  std::vector<v1::JobEvent> events_;
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_JOB_EVENT_LOG_H_
