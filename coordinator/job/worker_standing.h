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
// the parts it is given, and returns what is the job's to do (StandingStep, RestatedBad): the
// running tasks it cancelled, the job's state, its baselines and the warnings it raised. The
// job calls it from bisect_job.cc, baselines.cc and worker_changes.cc and applies what it
// returns (BisectJob::FollowStanding).
// Thread-compatible.
#ifndef KBISECT_COORDINATOR_JOB_WORKER_STANDING_H_
#define KBISECT_COORDINATOR_JOB_WORKER_STANDING_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "coordinator/job/calibration.h"
#include "coordinator/job/confirmation_stage.h"
#include "coordinator/job/job_frame.h"
#include "coordinator/job/probe_book.h"
#include "coordinator/job/verdict_ledger.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// What a call of WorkerStanding leaves to the job, applied in this order
// (BisectJob::FollowStanding).
struct StandingStep {
  // The tasks it cancelled that were running: their processes must be killed.
  std::vector<std::string> to_cancel;
  // BAD is measured again from the start: a job that bisects goes back to its baselines.
  bool back_to_baselines = false;
  // The warnings it raised, to emit as WARNING events in order.
  std::vector<v1::JobWarning> warnings;
};

// BAD measured on a GPU with an offset, restated in the reference's frame (RestateBad): its
// samples there, which become the BAD baseline, and the warning that says so.
struct RestatedBad {
  std::vector<double> samples;
  v1::JobWarning warning;
};

class WorkerStanding {
 public:
  // All must outlive the part; they may be constructed after it. `frame` is only read (its
  // state, commit count and unit). `pass_fail`: verdicts from exit codes (--exit-code), which
  // have no offsets and nothing provisional.
  WorkerStanding(const JobFrame* frame, ProbeBook* book, VerdictLedger* ledger,
                 Calibration* calibration, ConfirmationStage* confirmation, bool pass_fail)
      : frame_(frame),
        book_(book),
        ledger_(ledger),
        calibration_(calibration),
        confirmation_(confirmation),
        pass_fail_(pass_fail) {}

  WorkerStanding(const WorkerStanding&) = delete;
  WorkerStanding& operator=(const WorkerStanding&) = delete;

  // While the job bisects, the first time the BAD worker has calibrated: when it has an offset,
  // BAD restated in the reference's frame, after which every verdict judged against it must be
  // judged again (the job sets the baseline, warns, and takes every verdict back, before
  // SettleProvisional). Nullopt otherwise; once checked, never again until BAD is measured anew.
  std::optional<RestatedBad> RestateBad();

  // While the job bisects: confirms the provisional verdicts whose workers (and the BAD worker)
  // have calibrated without an offset; judges again those of workers with an offset.
  void SettleProvisional(absl::Time now);

  // Queues a new BAD baseline (the old one's worker cannot vouch for it: `why`) and takes back
  // every verdict until it is measured; the job goes back to its baselines, with a warning.
  // Nothing when BAD is not measured yet (its task is still to come, for any worker).
  StandingStep RemeasureBad(const std::string& why, absl::Time now);

  // Gives the calibrations that have fewer samples than Calibration::CalibrationRuns() the runs
  // they miss when their worker has an offset; a worker that left cannot, so its work is dropped
  // instead (DropWorkOf).
  StandingStep SharpenCalibrations(absl::Time now);

  // Discards `worker`'s queued and running work and, unless `keep_measured` and its calibration
  // can still judge them, its measured but unclassified probes: their commits are probed again.
  // A confirmation pair it was measuring is queued again for any worker.
  StandingStep DropWorkOf(const std::string& worker, const std::string& why, absl::Time now,
                          bool keep_measured = false);

  // Gives both baselines `runs` more runs on the workers that measured them. A baseline whose
  // worker left cannot get them there (a task pinned to it would wait for ever): the reference
  // moves to another calibrated worker, whose GOOD gets them, and BAD is measured again by any
  // worker (RemeasureBad).
  StandingStep ExtendBaselines(int runs, absl::Time now);

  // OnTaskLost of `entry`, work only its worker could do (a calibration, a control, a
  // re-measurement against its calibration): the worker is gone, and so is what depended on it.
  // The probe is cancelled, the worker marked gone (it calibrates again if it comes back), its
  // work dropped (DropWorkOf, measurements its calibration can judge kept), and BAD measured
  // again when this was an extension of it. The job then moves the worker's roles.
  StandingStep LosePinnedTask(ProbeBook::TaskEntry& entry, const std::string& why, absl::Time now);

 private:
  // RemeasureBad and DropWorkOf, adding what they leave to the job to `step`.
  void RemeasureBadInto(const std::string& why, absl::Time now, StandingStep* step);
  void DropWorkInto(const std::string& worker, const std::string& why, absl::Time now,
                    bool keep_measured, StandingStep* step);
  // True while the job bisects with a metric (SettleProvisional and RestateBad act only then).
  bool Bisecting() const;

  const JobFrame* const frame_;
  ProbeBook* const book_;
  VerdictLedger* const ledger_;
  Calibration* const calibration_;
  ConfirmationStage* const confirmation_;
  const bool pass_fail_;
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_WORKER_STANDING_H_
