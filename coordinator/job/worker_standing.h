// Copyright 2026 The kbisect Authors.
//
// WorkerStanding: what a change in a worker's standing does to the measurements and the work of
// one job. A worker's standing changes when it calibrates (its provisional verdicts settle or are
// judged again, and a BAD measured on a GPU with an offset moves into the reference's frame),
// when its calibration is short of runs (it gets more, or, once the worker is gone, what it
// measured is probed again elsewhere), when it leaves, is lost or is quarantined (its queued and
// running work is dropped and its unclassified measurements are probed again), and when BAD's
// worker can no longer vouch for BAD (BAD is measured again). BisectJob decides when, and
// follows up (roles that move, the endpoint verdict, the end of the job); this part changes the
// probe table, the ledger, the calibration's per-worker rows and the confirmation's queue through
// the pointers it is given, emits its warnings, and adds the tasks it cancels to `to_cancel`.
// The job calls it from bisect_job.cc, baselines.cc and worker_changes.cc.
// Thread-compatible.
#ifndef KBISECT_COORDINATOR_JOB_WORKER_STANDING_H_
#define KBISECT_COORDINATOR_JOB_WORKER_STANDING_H_

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "coordinator/job/calibration.h"
#include "coordinator/job/confirmation_stage.h"
#include "coordinator/job/job_event_log.h"
#include "coordinator/job/probe_book.h"
#include "coordinator/job/verdict_ledger.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

class WorkerStanding {
 public:
  // All must outlive the part; they may be constructed after it. `pass_fail`: verdicts from exit
  // codes (--exit-code), which have no offsets and nothing provisional.
  WorkerStanding(v1::JobStatus* status, ProbeBook* book, VerdictLedger* ledger,
                 Calibration* calibration, ConfirmationStage* confirmation, JobEventLog* events,
                 std::vector<std::string>* to_cancel, bool pass_fail)
      : status_(status),
        book_(book),
        ledger_(ledger),
        calibration_(calibration),
        confirmation_(confirmation),
        events_(events),
        to_cancel_(to_cancel),
        pass_fail_(pass_fail) {}

  WorkerStanding(const WorkerStanding&) = delete;
  WorkerStanding& operator=(const WorkerStanding&) = delete;

  // While the job bisects: confirms the provisional verdicts whose workers (and the BAD worker)
  // have calibrated without an offset; judges again those of workers with an offset, and every
  // verdict when the BAD worker has one (BAD's baseline is then restated in the reference's
  // frame, with a warning).
  void SettleProvisional(absl::Time now);

  // Queues a new BAD baseline (the old one's worker cannot vouch for it: `why`) and takes back
  // every verdict until it is measured; the job goes back to its baselines. Nothing when BAD is
  // not measured yet (its task is still to come, for any worker).
  void RemeasureBad(const std::string& why, absl::Time now);

  // Gives the calibrations that have fewer samples than Calibration::CalibrationRuns() the runs
  // they miss when their worker has an offset; a worker that left cannot, so its work is dropped
  // instead (DropWorkOf).
  void SharpenCalibrations(absl::Time now);

  // Discards `worker`'s queued and running work and, unless `keep_measured` and its calibration
  // can still judge them, its measured but unclassified probes: their commits are probed again.
  // A confirmation pair it was measuring is queued again for any worker.
  void DropWorkOf(const std::string& worker, const std::string& why, absl::Time now,
                  bool keep_measured = false);

  // Gives both baselines `runs` more runs on the workers that measured them. A baseline whose
  // worker left cannot get them there (a task pinned to it would wait for ever): the reference
  // moves to another calibrated worker, whose GOOD gets them, and BAD is measured again by any
  // worker (RemeasureBad).
  void ExtendBaselines(int runs, absl::Time now);

  // OnTaskLost of `entry`, work only its worker could do (a calibration, a control, a
  // re-measurement against its calibration): the worker is gone, and so is what depended on it.
  // The probe is cancelled, the worker marked gone (it calibrates again if it comes back), its
  // work dropped (DropWorkOf, measurements its calibration can judge kept), and BAD measured
  // again when this was an extension of it. The job then moves the worker's roles.
  void LosePinnedTask(ProbeBook::TaskEntry& entry, const std::string& why, absl::Time now);

 private:
  v1::JobStatus* const status_;
  ProbeBook* const book_;
  VerdictLedger* const ledger_;
  Calibration* const calibration_;
  ConfirmationStage* const confirmation_;
  JobEventLog* const events_;
  std::vector<std::string>* const to_cancel_;
  const bool pass_fail_;
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_WORKER_STANDING_H_
