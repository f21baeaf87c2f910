// Copyright 2026 The kbisect Authors.
//
// JournalEntry is one mutating call made on a BisectJob, as a typed record (LevelDB's
// VersionEdit plays the same part): the coordinator makes every change of a job by handing one
// to BisectJob::Apply, the JobStore persists them in order (coordinator/job_store.h), and a
// restarted coordinator rebuilds the job by applying them again.
#ifndef KBISECT_COORDINATOR_JOB_JOURNAL_ENTRY_H_
#define KBISECT_COORDINATOR_JOB_JOURNAL_ENTRY_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "coordinator/job/build_capacity.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// One mutating call made on a BisectJob, with its arguments. Which fields are used depends on
// the kind; the others stay empty.
struct JournalEntry {
  enum class Kind {
    kTakeTasks = 1,     // TakeTasks(workers, time, pools)
    kTaskStarted = 2,   // OnTaskStarted(task_id, worker, attempt, time)
    kTaskFinished = 3,  // OnTaskFinished(task_id, result, time)
    kTaskLost = 4,      // OnTaskLost(task_id, reason, time)
    kWorkerGone = 5,    // OnWorkerGone(worker, reason, time)
    kForgetWorker = 6,  // ForgetWorker(worker, reason, time)
    kCancel = 7,        // Cancel(reason, time)
  };

  // Position in the job's journal: 1, 2, 3, ... without gaps.
  int64_t sequence = 0;
  Kind kind = Kind::kTakeTasks;
  absl::Time time;
  std::vector<std::string> workers;
  // The build pools the workers of a TakeTasks announced (those that announced one).
  std::map<std::string, BuildPool> pools;
  std::string task_id;
  std::string worker;
  int attempt = 0;
  std::string reason;
  v1::TaskResult result;
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_JOURNAL_ENTRY_H_
