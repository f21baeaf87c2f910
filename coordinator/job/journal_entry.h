// Copyright 2026 The kbisect Authors.
//
// JournalEntry is one mutating call made on a BisectJob, as a typed record (LevelDB's
// VersionEdit plays the same part): the coordinator makes every change of a job by handing one
// to BisectJob::Apply, the JobStore persists them in order (coordinator/job_store.h), and a
// restarted coordinator rebuilds the job by applying them again. Like a VersionEdit, the record
// encodes its own arguments (EncodePayload / DecodePayload); the store only lays them out.
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
    kTakeTasks = 1,     // TakeTasks(workers, time, pools, built)
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
  // The commits of the job's open interval (indices) already built where each worker of a
  // TakeTasks reads builds (coordinator/built_commits.h; those with none are absent).
  std::map<std::string, std::vector<int>> built;
  std::string task_id;
  std::string worker;
  int attempt = 0;
  std::string reason;
  v1::TaskResult result;

  // The kind's name in the journal ("take_tasks", "task_finished", ...), and back; false for a
  // name no kind has.
  static const char* KindName(Kind kind);
  static bool KindFromName(const std::string& name, Kind* kind);

  // The kind-specific arguments as the journal keeps them: the workers of a TakeTasks as
  // length-prefixed chunks (one that announced a build pool as "<worker>\0<pool>\0<slots>",
  // and one with built commits as "<worker>\0<pool or nothing>\0<slots>\0<i>,<j>,...": names
  // hold no NUL, and entries written before pools or built commits read back as they were),
  // the serialized result of a TaskFinished, nothing for the other kinds (their arguments have
  // columns of their own). DecodePayload reads that form for this entry's `kind` into it, and
  // returns false when it does not parse.
  std::string EncodePayload() const;
  bool DecodePayload(const std::string& payload);
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_JOURNAL_ENTRY_H_
