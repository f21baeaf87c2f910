// Copyright 2026 The kbisect Authors.
//
// BisectJob is the state machine of one bisect job: baselines, the k-ary search over the commit
// list, verdicts and the final result. It is pure: it never touches git, the network, threads or
// the clock (times are passed in), so the coordinator's behaviour can be tested step by step.
// The Coordinator owns one per job and serialises calls to it.
//
// It owns the job's frame (job_frame.h: id, spec, range, marks, stage, outcome, the metric and
// the recorded baselines), which every piece reads and only the job writes, and its tally (the
// counters, warnings and drift events); status() projects them and each piece's own state into
// the wire status (job_status_projection.cc, its one writer). It is the facade over the job's
// pieces, each in its own file of coordinator/job/:
//   job_spec (common/spec)  the defaults and the checks of the spec;
//   probe_book              tasks, the ready queue and the probe table;
//   dispatch                PlanDispatch, the pure scheduler (who gets what now);
//   calibration             roles, per-worker calibration, pooling, offsets, quarantine checks,
//                           the noise the job has seen;
//   probe_classifier        the verdict rules (baselines, probes, the confirmation's bootstrap);
//   flaky_verdicts          the verdict rules of a flaky pass/fail test (--flaky);
//   confirmation            the confirmation's plan (pairs from the noise) and its judgement;
//   confirmation_stage      the confirmation as it runs: speculation, start, pairs, judgement;
//   endpoint_verdict        whether GOOD and BAD differ by a step, deferred, settled, reassessed;
//   verdict_ledger          the search with the verdicts recorded, taken back and contradicted,
//                           the probes waiting for one, and the progress;
//   culprit_confidence      --confidence with a metric: the end check, verdicts taken back,
//                           AMBIGUOUS put on the posterior's side;
//   search_result           what the finished search says: interval, culprit, cause, outcome;
//   suite_ledger            every metric of a suite judged on the job's shared runs;
//   worker_standing         what a worker's changed standing does to the measurements and work:
//                           provisional verdicts settle, calibrations sharpen, a departed
//                           worker's work is dropped, BAD is measured again;
//   job_event_log           the events since the coordinator last took them;
//   result_reuse            which cached results of earlier jobs may be used, and when;
//   build_ahead             which commits to build before a slot is handed them;
//   job_text                every sentence of its events, warnings and errors.
// BisectJob itself sequences them: it applies dispatch plans, routes results to the
// classifier, applies quarantine decisions and composes the result. Its methods live in
// bisect_job.cc (dispatch, results, verdicts), baselines.cc, cached_probes.cc, suite_probes.cc,
// worker_changes.cc (roles when a worker leaves or is quarantined), flaky_probes.cc and
// job_result.cc.
#ifndef KBISECT_COORDINATOR_JOB_BISECT_JOB_H_
#define KBISECT_COORDINATOR_JOB_BISECT_JOB_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/search/bisect_search.h"
#include "common/search/culprit_posterior.h"
#include "coordinator/job/calibration.h"
#include "coordinator/job/confirmation_stage.h"
#include "coordinator/job/culprit_confidence.h"
#include "coordinator/job/dispatch.h"
#include "coordinator/job/endpoint_verdict.h"
#include "coordinator/job/job_event_log.h"
#include "coordinator/job/job_frame.h"
#include "coordinator/job/journal_entry.h"
#include "coordinator/job/marks.h"
#include "coordinator/job/probe_book.h"
#include "coordinator/job/probe_classifier.h"
#include "coordinator/job/result_reuse.h"
#include "coordinator/job/search_result.h"
#include "coordinator/job/suite_ledger.h"
#include "coordinator/job/verdict_ledger.h"
#include "coordinator/job/worker_standing.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// What a job counted and kept along the way, besides its parts' state: BisectJob's own, shown in
// its status (job_status_projection.cc).
struct JobTally {
  int bench_runs = 0;     // Benchmark executions in total, baselines included.
  int cached_probes = 0;  // Probe rows taken from the result cache.
  std::vector<std::string> cache_refused_workers;  // Their cached results disagreed.
  std::vector<v1::DriftEvent> drift_events;
  std::vector<v1::JobWarning> warnings;      // Shown as facts and as sentences.
  std::vector<v1::JobWorker> worker_report;  // Made when the job finishes.
  std::optional<absl::Time> finish_time;
  double wall_seconds = 0;
};

class BisectJob {
 public:
  // How often a task may be handed out before a lost worker turns it into a skip.
  static constexpr int kMaxAttempts = 3;
  // Measured probes a worker may hold while the baselines are not settled.
  static constexpr int kProbesAheadOfBaselines = 2;

  // Creates the job over `commits` (index 0 = GOOD, last = BAD; at least two entries) with the
  // spec's defaults filled in. Emits a STARTED event.
  // `cached`: results of earlier jobs with the same spec digest at commits of the range (the
  // result cache's lookup). A worker's cached results are reused once it measures one of those
  // commits again in this job and agrees with it (ResultReuse); they are part of the job's
  // arguments, so a replayed job reuses the same ones.
  BisectJob(std::string job_id, v1::JobSpec spec, std::vector<v1::CommitRef> commits,
            absl::Time now, std::vector<v1::CachedResult> cached = {});

  // A job that finished in an earlier process and was compacted (its commit list and journal
  // are gone): its status is `final_status`, it is finished and emits no event.
  static std::unique_ptr<BisectJob> Finished(std::string job_id, v1::JobSpec spec,
                                             v1::JobStatus final_status, absl::Time create_time);

  BisectJob(const BisectJob&) = delete;
  BisectJob& operator=(const BisectJob&) = delete;

  // A task for a given worker.
  struct Assignment {
    std::string worker;
    v1::Task task;
  };

  // Hands out tasks to the idle `workers` (at most one each, in order; see dispatch.h): queued
  // work first (the BAD baseline and then its worker's reference GOOD, re-measurements pinned to
  // their worker, retries of lost tasks, the confirmation's pairs), calibrations of workers that
  // must or can afford to calibrate (a worker that probes before it calibrates gets provisional
  // verdicts, which count once it has calibrated), and bisect probes that split the open
  // interval as evenly as possible together with the probes in flight (moved onto a worker's
  // cached commit when one is close). Cached results that became usable join the search first.
  // Quarantined workers get nothing. Respects the spec's max_workers, and the builds the hosts
  // can run (build_capacity.h), judged from the results and, before those, from the build pools
  // the workers announced (`pools`, remembered). A point goes to a worker that can read a build
  // of a commit close to it (`built`: commit indices by worker, replacing what earlier calls said
  // of the workers asked), moved onto that commit, when it splits about as well
  // (AssignBuiltProbes in dispatch.h). Returns none once finished.
  std::vector<Assignment> TakeTasks(const std::vector<std::string>& workers, absl::Time now,
                                    const std::map<std::string, BuildPool>& pools = {},
                                    const std::map<std::string, std::vector<int>>& built = {});

  // The task `task_id` as it was made, or null for a task the job does not know.
  const v1::Task* TaskOf(const std::string& task_id) const;

  // The indices of the commits among `shas` strictly inside the open interval, ascending: what
  // TakeTasks's `built` needs of the commits built where a worker reads builds. Empty once
  // finished.
  std::vector<int> IndicesInsideInterval(const std::set<std::string>& shas) const;

  // What Apply returned: tasks handed out (kTakeTasks) and tasks to cancel.
  struct Applied {
    std::vector<Assignment> assignments;
    std::vector<std::string> cancel;
  };

  // Makes the call `entry` records (TakeTasks, OnTaskStarted, OnTaskFinished, OnTaskLost,
  // OnWorkerGone, ForgetWorker or Cancel) with its arguments. The coordinator changes a job only
  // through here, live and when replaying its journal, so replay reproduces the job exactly.
  Applied Apply(const JournalEntry& entry);

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

  // True once the job reached a terminal state (done, failed or cancelled).
  bool finished() const;

  // The job's own status: the search's state and result, the wire form of its parts' state
  // (job_status_projection.cc), built when the job changed since the last call. The reference
  // stays valid as long as the job; its contents are those of the latest call. Const, but it
  // may rebuild the projection: callers serialise it with the job's mutators (the coordinator's
  // mutex does). The coordinator publishes it with what it adds (coordinator/published_status.h).
  const v1::JobStatus& status() const;

  // Returns the events produced since the previous call (sequence numbers unset).
  std::vector<v1::JobEvent> TakeEvents();

  // The result cache's records of what task `task_id` measured (its probe, with every run so
  // far), once `result` (its result) is applied: one per commit it measured on its worker, the
  // paired commit of a confirmation task included (ToCachedResults); none for a pass/fail job.
  std::vector<v1::CachedResult> CacheRecordsOf(const std::string& task_id,
                                               const v1::TaskResult& result) const;

  // Ids of tasks handed out and not yet finished, lost or cancelled.
  std::vector<std::string> ActiveTaskIds() const;

  // The builds worth preparing ahead now, most useful first, at most `limit`: tasks of kind
  // PROBE_KIND_BUILD (BuildAheadTask) at the commits PlanBuildAhead picks for the search with the
  // job's active workers, the GOOD commit first while the BAD baseline is measured and the
  // reference GOOD is not. None without a build command or once the job is finished. Does not
  // change the job (nothing is journaled: a hint is not a task).
  std::vector<v1::Task> BuildAheadTasks(int limit) const;

 private:
  using TaskEntry = ProbeBook::TaskEntry;

  v1::Probe& ProbeOf(const TaskEntry& entry) { return book_.ProbeOf(entry); }
  bool Measured(const v1::Probe& probe) const { return IsMeasured(probe, pass_fail_); }
  // Compares a fresh measurement with the worker's cached one (ResultReuse::OnMeasured) and
  // reports what it showed.
  void CheckCachedResults(int position, absl::Time now);
  // Turns the usable cached results of verified workers inside the open interval into probe
  // rows, classified like measured probes.
  void ApplyCachedResults(absl::Time now);
  // Puts the samples of the probes of commit `index` by `record`'s worker in this job (finished,
  // measured here) before a confirmation's `record` of that commit, which then stands for a
  // probe (kind BISECT); leaves it as it is when that worker did not probe the commit.
  void MergeProbeSamples(int index, v1::CachedResult* record) const;
  // The snapshot PlanDispatch plans from.
  DispatchInput MakeDispatchInput(const std::vector<std::string>& idle) const;
  // Creates the worker's GOOD calibration (the reference GOOD when the job has none yet) and
  // hands it out.
  void Calibrate(const std::string& worker, std::vector<Assignment>* out);
  void HandOut(const std::string& worker, const std::string& task_id, std::vector<Assignment>* out);
  // Makes `worker`, which was handed the BAD baseline, the reference: its GOOD calibration
  // (queued first for it when it has none) is the reference GOOD.
  void MakeReference(const std::string& worker);
  // The stages of OnTaskFinished.
  // The result as the job judges it: `reported`, or, for a suite's task handed out before the
  // job knew its lead metric, `reported` with the lead's samples (ProjectOnLead) in `projected`.
  const v1::TaskResult& ResultOfLead(const TaskEntry& entry, const v1::TaskResult& reported,
                                     v1::TaskResult* projected) const;
  // Writes `result` into its finished `probe` (samples, runs, timings, manifest, end time) and
  // counts its runs; the first measured result names the job's metric and direction. Returns
  // true when the probe is measured.
  bool RecordResult(const v1::TaskResult& result, absl::Time now, v1::Probe* probe);
  // A GOOD measured off the reference at `position` (a worker's calibration, an A/A control, BAD's
  // worker's own GOOD after a stand-in), or a GOOD a worker failed to measure while another
  // worker can take over (`measured` false: the worker is quarantined with `failure`).
  void OnGoodOffReference(int position, bool measured, const std::string& failure, absl::Time now);
  // A bisect probe (or a flaky test's) at `position` finished: classified, skipped, or kept
  // until its worker's calibration can judge it.
  void OnProbeFinished(int position, bool measured, absl::Time now);
  // Acts on what the endpoint verdict returned, in EndpointStep's order.
  void FollowEndpoint(const EndpointStep& step, absl::Time now);
  // Judges a suite's metrics again (SuiteLedger) and, when some are too close to tell at the
  // baselines and both reference baselines are measured, queues the runs they ask for of both.
  // Returns true when it queued them.
  bool ExtendSuiteBaselines();
  // After a baseline or calibration changed: outliers, sharper calibrations, provisional
  // verdicts, then the probes waiting to be classified.
  void RecheckCalibrations(absl::Time now);
  // Settles the provisional verdicts (WorkerStanding::SettleProvisional), after restating BAD in
  // the reference's frame, with a warning, and taking every verdict back, when BAD's worker
  // turned out to have an offset (WorkerStanding::RestateBad).
  void SettleProvisional(absl::Time now);
  // Acts on what a call of WorkerStanding returned, in StandingStep's order: the running tasks
  // it cancelled join to_cancel_, the job goes back to its baselines, its warnings are emitted.
  void FollowStanding(StandingStep step, absl::Time now);
  void ClassifyPending(absl::Time now);
  // Classifies a measured probe: a verdict, or more runs (Extend) when the samples cannot tell.
  void Classify(int probe_position, absl::Time now);
  void ApplyVerdict(int probe_position, v1::Verdict verdict, absl::Time now);
  // A flaky pass/fail test (--flaky; flaky_probes.cc, rules in flaky_verdicts.h) is searched by
  // information (decision 144): its probes carry no verdict; each result updates the posterior
  // over every run, and the search ends, recording the sides of every probe, once the
  // likeliest culprit reaches the confidence (or the run budget is spent, or nothing may run).
  bool FlakySearch() const { return pass_fail_ && frame_.spec.flaky(); }
  void ClassifyFlaky(int probe_position, absl::Time now);
  // The worker left or was quarantined: a reference GOOD not yet settled goes to another
  // worker; a BAD its worker can no longer calibrate for is measured again.
  void OnRoleHolderLost(const std::string& worker, const std::string& why, absl::Time now);
  void Quarantine(const QuarantineDecision& decision, absl::Time now);
  void CancelUseless(absl::Time now);
  void MaybeFinish(absl::Time now);
  // The confirmation (coordinator/job/confirmation_stage.h) at this moment: the time, the
  // workers its fresh pairs spread over, and the round of the tasks it creates.
  ConfirmationContext ConfirmationNow(absl::Time now) const;
  // Acts on what a call of the confirmation returned: kills the tasks it cancelled, emits its
  // warnings, then settles the search or ends the job as `step.next` says.
  void FollowConfirmation(ConfirmationStep step, absl::Time now);
  // Speculative confirmation: hands the workers the plan left idle in the search's last round a
  // pair of each possible culprit (ConfirmationStage::CreateSpeculativeTasks).
  void SpeculateConfirmations(const DispatchPlan& plan, absl::Time now,
                              std::vector<Assignment>* out);
  void Finish(v1::Outcome outcome, const std::string& error, absl::Time now);
  // Marks every task not finished done, running ones to be cancelled, and empties the queue.
  void CloseOpenTasks();
  // A suite's own search (suite_probes.cc, decision 223). When the lead's search ends with
  // `outcome` (its culprit, or no regression) and some other metric's range can still be
  // narrowed on this job's calibration (PlanSuiteProbes), the job holds that outcome, closes its
  // open tasks and probes those ranges (JOB_STATE_SUITE_SEARCH); returns true when it does.
  bool HoldForSuite(v1::Outcome outcome, const std::string& error, absl::Time now);
  // Hands the idle `workers` that have their own GOOD the suite's retries, then new suite probes.
  void DispatchSuiteProbes(const std::vector<std::string>& workers, std::vector<Assignment>* out);
  // A suite probe at `position` has its result: the rows judged again, an event of the ranges
  // left, then ContinueSuiteSearch.
  void OnSuiteProbeFinished(int position, absl::Time now);
  // After a suite probe's result or loss, on the suite's rows as last judged: finishes with the
  // held outcome once no suite probe is pending and none is worth making, or no worker with its
  // own GOOD is left to make it.
  void ContinueSuiteSearch(absl::Time now);
  // True when `worker` may measure suite probes: here, not quarantined, with its own GOOD.
  bool ProbesForSuite(const std::string& worker) const;
  // True when PlanSuiteProbes has a point for one more worker on the rows as last judged.
  bool SuitePointsLeft() const;
  // The suite probes running on `worker`, which left, are queued again.
  void RequeueSuiteProbesOf(const std::string& worker);
  // Ends the job as the search's answer says: its warnings, then Finish.
  void FinishWith(SearchResult::Conclusion conclusion, absl::Time now);
  // Appends an event of `fact` (see JobEventLog::Emit) with the progress as it is now.
  void Emit(v1::JobEventKind kind, v1::JobEvent fact, const v1::Probe* probe, absl::Time now) {
    events_.Emit(kind, std::move(fact), probe, ledger_.progress(), now);
  }
  void Emit(v1::JobEventKind kind, v1::JobWarning warning, const v1::Probe* probe, absl::Time now) {
    events_.Emit(kind, std::move(warning), probe, ledger_.progress(), now);
  }
  // Keeps `warning` for the job's status (its fact and its sentence).
  void Warn(v1::JobWarning warning) { tally_.warnings.push_back(std::move(warning)); }
  // The job changed (every public mutator calls it first): the next status() builds the
  // projection again.
  void Changed() { ++revision_; }
  // Writes the frame, the tally and what the parts own into projection_
  // (job_status_projection.cc, the one writer of the job's wire status).
  void Project() const;

  // What every part reads (job_frame.h); the job is its only writer.
  JobFrame frame_;
  // What the job counted and kept along the way, besides its parts' state.
  JobTally tally_;
  // The wire status status() returns, built by Project from the above. A compacted job
  // (Finished) keeps its final status here and projects nothing.
  mutable v1::JobStatus projection_;
  // Changes so far (Changed), and the change projection_ was last projected at (-1: never).
  int64_t revision_ = 0;
  mutable int64_t projected_revision_ = -1;
  bool compacted_ = false;  // Restored by Finished: its parts are empty.
  std::vector<v1::CommitRef> commits_;
  // The search, the probes waiting for a verdict, contradicted verdicts, steps and rounds.
  VerdictLedger ledger_;
  ProbeBook book_;
  Calibration calibration_;
  ResultReuse reuse_;
  EndpointVerdict endpoints_;
  ConfirmationStage confirmation_;
  // --confidence with a metric: the end check, verdicts taken back, AMBIGUOUS put on a side.
  CulpritConfidence confidence_;
  // What the finished search says: interval, culprit or candidates, cause, probability.
  SearchResult result_;
  // What a worker's changed standing does to the measurements and the work (worker_standing.h).
  WorkerStanding standing_;
  // Every metric of a suite, judged on the job's shared runs (suite_ledger.h).
  SuiteLedger suite_{&frame_, &book_.rows(), &commits_};
  // The lead's outcome while the job searches its suite's other ranges (HoldForSuite).
  struct SuiteHold {
    v1::Outcome outcome = v1::OUTCOME_UNSPECIFIED;
    std::string error;
  };
  std::optional<SuiteHold> suite_hold_;
  // The build pools the workers announced (TakeTasks), for the build capacity.
  std::map<std::string, BuildPool> announced_pools_;
  // The commits built where each worker reads builds, as the latest TakeTasks that asked it said.
  std::map<std::string, std::vector<int>> built_by_worker_;
  bool pass_fail_ = false;  // --exit-code: verdicts from exit codes, no metric.
  absl::Time start_time_;
  JobEventLog events_;
  // Tasks cancelled while running, their processes to kill: what the parts' steps and the job's
  // own cancellations add, returned (and cleared) by the public mutators.
  std::vector<std::string> to_cancel_;
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_BISECT_JOB_H_
