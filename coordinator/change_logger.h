// Copyright 2026 The kbisect Authors.
//
// The daemon's change log: one line per job state change and per worker arrival or loss, found by
// comparing snapshots of the coordinator that Poll takes (kbisect-coordinator polls once a
// second). A poll costs what is active, not what the store holds: it lists every unfinished job
// (all pages of a state-filtered ListJobs), the newest kNewestJobs jobs whatever their state (so
// a job that started and ended between two polls is logged too), and asks GetJob for each job it
// saw unfinished and no longer lists (it ended). Jobs that ended and left the newest page are
// forgotten, so memory stays bounded by the active and the newest jobs.
#ifndef KBISECT_COORDINATOR_CHANGE_LOGGER_H_
#define KBISECT_COORDINATOR_CHANGE_LOGGER_H_

#include <map>
#include <string>

#include "common/log/log.h"
#include "coordinator/coordinator.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

class ChangeLogger {
 public:
  // Jobs listed whatever their state, newest first, at each poll.
  static constexpr int kNewestJobs = 100;

  // Both must outlive the logger. Not thread-safe: one thread polls.
  ChangeLogger(Coordinator* coordinator, const Logger* log)
      : coordinator_(coordinator), log_(log) {}

  // Records the current states without logging them (the jobs recovered at start).
  void Prime();

  // Logs what changed since the last poll.
  void Poll();

 private:
  // Records `state` of the job; logs it unless quiet_ or unchanged. `summary` (for the line of a
  // job seen for the first time) may be null.
  void Observe(const std::string& job_id, v1::JobState state, const std::string& culprit_sha,
               const v1::JobSummary* summary);
  void PollWorkers();

  Coordinator* const coordinator_;
  const Logger* const log_;
  std::map<std::string, v1::JobState> job_states_;
  std::map<std::string, bool> worker_lost_;
  bool quiet_ = false;
};

// Short, stable labels for log lines.
const char* JobStateLabel(v1::JobState state);
const char* WorkerStateLabel(v1::WorkerState state);

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_CHANGE_LOGGER_H_
