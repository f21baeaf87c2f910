// Copyright 2026 The kbisect Authors.
//
// BisectJob is the state machine of one bisect job: baselines, the k-ary search over the commit
// list, probe bookkeeping, verdicts and the final result. It is pure: it never touches git, the
// network, threads or the clock (times are passed in), so the coordinator's behaviour can be
// tested step by step. The Coordinator owns one per job and serialises calls to it.
#ifndef KBISECT_COORDINATOR_BISECT_JOB_H_
#define KBISECT_COORDINATOR_BISECT_JOB_H_

#include <deque>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/search/bisect_search.h"
#include "coordinator/probe_classifier.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

class BisectJob {
 public:
  // How often a task may be handed out before a lost worker turns it into a skip.
  static constexpr int kMaxAttempts = 3;
  // Skipped candidates above this count make the result inconclusive rather than a range.
  static constexpr int kMaxReportedCandidates = 10;

  // Creates the job over `commits` (index 0 = GOOD, last = BAD; at least two entries) with the
  // spec's defaults filled in. Emits a STARTED event.
  BisectJob(std::string job_id, v1::JobSpec spec, std::vector<v1::CommitRef> commits,
            absl::Time now);

  BisectJob(const BisectJob&) = delete;
  BisectJob& operator=(const BisectJob&) = delete;

  // A task for a given worker.
  struct Assignment {
    std::string worker;
    v1::Task task;
  };

  // Hands out tasks to the idle `workers` (at most one each, in order): queued work first (the
  // BAD baseline, re-measurements pinned to their worker, retries of lost tasks), the reference
  // GOOD to the first worker without a calibration, then, to the other workers without one,
  // their GOOD calibration as soon as PlanRound says a round can afford it (a worker that probes
  // before it calibrates gets provisional verdicts, which count once it has calibrated), and
  // bisect probes that split the open interval as evenly as possible together with the probes
  // in flight. Quarantined workers get nothing. Respects the spec's max_workers. Returns none
  // once finished.
  std::vector<Assignment> TakeTasks(const std::vector<std::string>& workers, absl::Time now);

  // Convenience for tests and simulations: TakeTasks for workers "w0" .. "w<max_tasks-1>".
  std::vector<v1::Task> TakeTasks(int max_tasks, absl::Time now);

  // The worker left (closed its session or stopped heartbeating). Work pinned to it is dropped
  // and its commits are probed again by others; if it was the reference worker and the
  // baselines are not complete, another worker becomes the reference. Returns tasks to cancel.
  std::vector<std::string> OnWorkerGone(const std::string& worker, const std::string& why,
                                        absl::Time now);

  // The worker lost its calibration (it reconnected with another identity): it calibrates again
  // before its next probe counts; its unclassified probes are measured again elsewhere.
  void ForgetWorker(const std::string& worker, const std::string& why, absl::Time now);

  // Records that `task_id` was leased to `worker` (attempt `attempt`).
  void OnTaskStarted(const std::string& task_id, const std::string& worker, int attempt,
                     absl::Time now);

  // Records the result of `task_id`. Results of unknown, cancelled or already finished tasks are
  // ignored (returns an empty list). Returns the ids of in-flight tasks that became useless and
  // must be cancelled (their processes killed).
  std::vector<std::string> OnTaskFinished(const std::string& task_id, const v1::TaskResult& result,
                                          absl::Time now);

  // The lease of `task_id` was lost (worker died, lease expired, infrastructure error). The task
  // is queued again for another worker, or, after kMaxAttempts, recorded as a skip. Returns tasks
  // to cancel, as OnTaskFinished does.
  std::vector<std::string> OnTaskLost(const std::string& task_id, const std::string& why,
                                      absl::Time now);

  // Stops the job: every unfinished task is cancelled. Returns their ids.
  std::vector<std::string> Cancel(const std::string& reason, absl::Time now);

  // True once the job reached a terminal state (done, failed or cancelled), or the coordinator
  // marked it FOLLOWING_UP (its own search is over; follow-up jobs run).
  bool finished() const;

  // The job's status as reported to clients.
  const v1::JobStatus& status() const { return status_; }

  // Mutable access for the coordinator to attach report details (files changed, root-cause
  // hints, worker identities) that need I/O this class does not do.
  v1::JobStatus* mutable_status() { return &status_; }

  // Returns the events produced since the previous call (sequence numbers unset).
  std::vector<v1::JobEvent> TakeEvents();

  // Ids of tasks handed out and not yet finished, lost or cancelled.
  std::vector<std::string> ActiveTaskIds() const;

 private:
  struct TaskEntry {
    v1::Task task;
    int probe = -1;             // Position in status_.probes.
    bool active = false;        // Handed out, no result yet.
    bool done = false;          // Finished, cancelled or given up.
    std::string pinned_worker;  // Only this worker may run it (calibrations, re-measurements).
  };
  // A worker's part in this job: its own GOOD calibration, which its verdicts are relative to.
  struct WorkerState {
    int calibration = -1;  // Probe position of its GOOD calibration, -1 before it has one.
    bool quarantined = false;
    int classified = 0;    // Probes classified since its calibration or last A/A control.
    bool gone = false;     // Left (or lost its lease); cleared when it takes work again.
    int checked_out = -1;  // Commit index of the last task handed to it (its checkout), or -1.
  };

  v1::Probe& ProbeOf(const TaskEntry& entry) { return *status_.mutable_probes(entry.probe); }
  std::string NewTask(v1::ProbeKind kind, int index, int round,
                      const std::string& pinned_worker = "");
  bool BaselinesReady() const;
  bool Measured(const v1::Probe& probe) const;
  void EvaluateBaselines(absl::Time now);
  void ClassifyPending(absl::Time now);
  // Classifies a measured probe: a verdict, or more runs (Extend) when the samples cannot tell.
  void Classify(int probe_position, absl::Time now);
  // Classifies the probe's samples against the baselines its worker is judged by (no side
  // effects).
  ProbeClassification Judge(const v1::Probe& probe) const;
  // Queues a task that adds `runs` samples to the probe at `probe_position`.
  void Extend(int probe_position, int runs);
  static void AddTimings(const v1::TaskTimings& add, v1::TaskTimings* total, bool first);
  void ApplyVerdict(int probe_position, v1::Verdict verdict, absl::Time now);
  // True when probes measured by `worker` can be classified now: provisionally while it has no
  // finished calibration, for good once it has one (sharpened when it has an offset).
  bool WorkerReady(const std::string& worker) const;
  // True when a worker other than `worker` has worked in this job and is neither quarantined
  // nor gone.
  bool AnotherWorkerLeft(const std::string& worker) const;
  // True when a worker of the job (not quarantined, not gone) has no finished calibration yet.
  bool MoreCalibrationsComing() const;
  // True when `worker` has a finished, measured GOOD calibration in this job.
  bool CalibrationDone(const std::string& worker) const;
  // True when the probe's verdict came from comparing its samples with the baselines (GOOD, BAD
  // or ambiguous), not from a failure (skip).
  static bool JudgedAgainstBaselines(const v1::Probe& probe);
  // Positions in status_.probes of the probes `which` accepts.
  std::vector<int> ProbePositions(const std::function<bool(const v1::Probe&)>& which) const;
  // The worker that measured the BAD baseline ("" before it is handed out).
  std::string BadWorker() const;
  // True when the probe's verdict (GOOD, BAD or ambiguous) was reached before its worker or the
  // BAD baseline's worker calibrated: it steers the search but does not count yet.
  bool IsProvisional(const v1::Probe& probe) const;
  // True when `worker` must calibrate before the job can end: it measured BAD, holds
  // provisional verdicts, or has probes measured or running.
  bool OwesCalibration(const std::string& worker) const;
  // How many of the uncalibrated workers may start their calibration now (PlanRound over the
  // workers of the job, the owed and running calibrations and the other running work).
  int CalibrationsToStart(const std::vector<std::string>& idle) const;
  // The BAD baseline's samples in the reference worker's frame: scaled by the ratio of the two
  // GOOD measurements when the BAD worker has a significant offset.
  std::vector<double> ReferenceBadSamples() const;
  double ReferenceBadMedian() const;
  // Confirms the provisional verdicts whose workers (and the BAD worker) have calibrated without
  // an offset; judges again those of workers with an offset, and every verdict when the BAD
  // worker has one.
  void SettleProvisional(absl::Time now);
  // Takes back the verdicts at `positions` (bisect probes JudgedAgainstBaselines; others are
  // ignored) and rebuilds the search without them. Their samples are judged again
  // (ClassifyPending), or, with `probe_again`, discarded so that others probe the commits again.
  void RetractVerdicts(const std::vector<int>& positions, bool probe_again, const std::string& why,
                       absl::Time now);
  // Takes back every verdict judged against the baselines; the samples are judged again.
  void JudgeEveryVerdictAgain(absl::Time now);
  // Rebuilds search_ from the recorded verdicts and the probes still running or waiting.
  void RebuildSearch();
  // Queues a new BAD baseline (the old one's worker cannot vouch for it) and takes back every
  // verdict until it is measured.
  void RemeasureBad(const std::string& why, absl::Time now);
  // The worker left or was quarantined: a reference GOOD not yet settled goes to another
  // worker; a BAD its worker can no longer calibrate for is measured again.
  void OnRoleHolderLost(const std::string& worker, const std::string& why, absl::Time now);
  // True when `worker`'s GOOD calibration differs significantly from the reference GOOD (see
  // OffsetIsSignificant): its verdicts are then judged against its own, sharpened calibration.
  bool HasOffset(const std::string& worker) const;
  // The workers whose measurements are judged together: the reference and every calibrated
  // worker that is not quarantined and has no significant offset.
  std::set<std::string> PoolMembers() const;
  // The pooled GOOD (side VERDICT_GOOD) or BAD samples: the reference baseline's, the pool's
  // calibrations (GOOD only), and the samples of the pool's bisect probes classified that side
  // whose samples agree with that baseline (p >= kPoolAlpha): under one step they measure the
  // same value, and every verdict after them is judged against sharper baselines.
  std::vector<double> PooledSamples(v1::Verdict side) const;
  static constexpr double kPoolAlpha = 0.05;
  // Samples a worker's GOOD calibration needs before its verdicts count, when it has an offset.
  int CalibrationRuns() const;
  // Re-measures calibrations that have fewer samples than CalibrationRuns().
  void SharpenCalibrations(absl::Time now);
  // Compares calibrated workers' GOOD medians; quarantines outliers.
  void CheckOutliers(absl::Time now);
  void Quarantine(const std::string& worker, const std::string& kind, const std::string& reason,
                  double offset_fraction, absl::Time now);
  // Discards `worker`'s queued and running work and, unless `keep_measured` and its calibration
  // can still judge them, its measured but unclassified probes: their commits are probed again.
  void DropProbesOf(const std::string& worker, const std::string& why, absl::Time now,
                    bool keep_measured = false);
  // True when the worker's GOOD calibration is complete enough to classify its probes.
  bool CalibrationUsable(const std::string& worker) const;
  void FillWorkerReport();
  // Picks another reference GOOD (the old reference left or was quarantined): a worker with a
  // finished calibration, else the next worker to calibrate.
  void ResetReference();
  void CancelUseless(absl::Time now);
  void MaybeFinish(absl::Time now);
  // Ends the job with the search's answer: the culprit, a candidate range or inconclusive.
  void FinishWithCandidates(absl::Time now);
  // Judges the interleaved re-measurement of last-good and culprit.
  void ConcludeConfirmation(const v1::Probe& probe, const v1::TaskResult& result, absl::Time now);
  void Finish(v1::Outcome outcome, const std::string& error, absl::Time now);
  void UpdateProgress();
  void Emit(v1::JobEventKind kind, const std::string& message, const v1::Probe* probe,
            absl::Time now);
  std::string FormatValue(double value) const;
  double MedianAt(int index) const;
  int InFlightCount() const;
  // True when a running measurement (a probe, baseline or calibration) has been running for
  // 70-130% of the job's typical
  // measurement span (median lease-to-result time of finished measurements, each worker's first,
  // which pays for its first checkout, left out while others exist): its result is due.
  bool ResultDueSoon(absl::Time now) const;

  v1::JobStatus status_;
  std::vector<v1::CommitRef> commits_;
  BisectSearch search_;
  std::map<std::string, TaskEntry> tasks_;
  std::deque<std::string> queue_;  // Tasks ready to hand out (baselines, retries).
  bool pass_fail_ = false;         // --exit-code: verdicts from exit codes, no metric.
  // The baselines, -1 until created: the reference GOOD (the first calibration handed out; its
  // worker is the reference) and BAD (measured by whichever worker asked first, brought to the
  // reference's frame by ReferenceBadSamples). Workers with an offset are judged against their
  // own GOOD and BAD scaled by the ratio of their GOOD to the reference GOOD.
  int good_probe_ = -1;
  int bad_probe_ = -1;
  std::string reference_worker_;
  bool bad_offset_checked_ = false;  // The BAD worker's calibration has been compared.
  std::map<std::string, WorkerState> workers_;
  std::vector<int> unclassified_;  // Measured bisect probes awaiting the baselines.
  int next_task_ = 0;
  int steps_ = 0;  // Finished bisect probes with a verdict.
  int max_round_recorded_ = 0;
  absl::Time start_time_;
  std::vector<v1::JobEvent> events_;
  std::vector<std::string> to_cancel_;  // Returned (and cleared) by the public mutators.
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_BISECT_JOB_H_
