// Copyright 2026 The kbisect Authors.
//
// ConfirmationStage runs the confirmation of one job's culprit (the rules are the pure functions
// of confirmation.h): the pairs measured ahead in the search's last round (speculation, decision
// 46), the start of the confirmation (early, beside the calibrations still owed, or once the
// search is settled), the pairs as they come in, and the judgement.
//
// It owns the confirmation's own state (whether it started early and for which two commits,
// the pairs kept from speculation, why a pair failed) and its record (`confirmation()`, which
// the job's status projects as JobStatus.confirmation). It reads the job's search, commits,
// calibration and reused results (the pairs earlier jobs measured, decision 224), and creates
// and cancels confirmation tasks in the job's probe book. It never ends
// the job nor emits an event: each call returns what the job must do (ConfirmationStep), and its
// warnings as facts.
#ifndef KBISECT_COORDINATOR_JOB_CONFIRMATION_STAGE_H_
#define KBISECT_COORDINATOR_JOB_CONFIRMATION_STAGE_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "common/search/bisect_search.h"
#include "coordinator/job/calibration.h"
#include "coordinator/job/confirmation.h"
#include "coordinator/job/job_frame.h"
#include "coordinator/job/probe_book.h"
#include "coordinator/job/result_reuse.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// What the job tells the stage at each call.
struct ConfirmationContext {
  absl::Time now;
  // The workers taking part in the job (BisectJob::ActiveWorkers): the fresh pairs are spread
  // over at most this many tasks.
  int workers = 1;
  // The round of the confirmation tasks created now (one past every round recorded).
  int round = 1;
};

// What the job must do after a call, and what happened meanwhile.
struct ConfirmationStep {
  enum class Next {
    kWait,          // Nothing: pairs are still measured (or the call needed none).
    kSettleSearch,  // The confirmation started early is complete: the job decides (MaybeFinish).
    kConfirmed,     // Judged and confirmed: the job ends with its culprit.
    kUnconfirmed,   // Judged and not confirmed (or no fresh pair could be measured).
  };
  Next next = Next::kWait;
  // kConfirmed, kUnconfirmed: the judgement (or why no fresh pair was measured); unset when
  // nothing could be judged.
  std::optional<v1::ConfirmationVerdictFact> verdict;
  // Set when the confirmation was judged on measured pairs: the culprit's median over
  // last-good's (ConfirmationJudgement::ratio). The job's `after` follows from it (its `before`
  // stays the search's median at last-good, in the reference's frame).
  std::optional<double> ratio;
  // Warnings to emit, in order, before acting on `next`.
  std::vector<v1::JobWarning> warnings;
  // Ids of running tasks the stage cancelled (their processes must be killed).
  std::vector<std::string> cancelled;
};

class ConfirmationStage {
 public:
  // Everything passed must outlive the stage. `frame`: the spec, the state and the baselines are
  // read. `reuse`: the earlier jobs' results (null: none), whose pairs of two commits on a
  // worker that agreed with itself count like the search's own samples. The confirmation's
  // record is the stage's own (confirmation()).
  ConfirmationStage(const JobFrame* frame, const std::vector<v1::CommitRef>* commits,
                    const BisectSearch* search, const Calibration* calibration,
                    const ResultReuse* reuse, ProbeBook* book);

  ConfirmationStage(const ConfirmationStage&) = delete;
  ConfirmationStage& operator=(const ConfirmationStage&) = delete;

  // --- Speculation (the search's last round). ---
  // True when workers the search leaves idle could measure a pair ahead now: the search is not
  // done, no point is left to place, and some possible culprit has no pair yet.
  bool HasSpeculationCandidates() const;
  // Creates one-pair confirmation tasks for the cheapest possible culprits whose pairs all fit
  // in `spare` tasks (ChooseSpeculation); returns their ids, to hand to the spare workers in
  // order.
  std::vector<std::string> CreateSpeculativeTasks(int spare, const ConfirmationContext& context);

  // --- The confirmation of the search's interval. ---
  // Starts the confirmation of (last_good, first_bad): the search's same-worker samples, the
  // pairs measured ahead, and fresh pairs queued over the workers. `early`: while calibrations
  // owed at the end still run (judged later, through kSettleSearch); otherwise the job is in
  // the CONFIRMING state and the judgement follows once no pair is outstanding.
  ConfirmationStep Start(bool early, const ConfirmationContext& context);
  // True while a confirmation started early runs.
  bool early() const { return early_; }
  // Cancels a confirmation started early when the search (reopened by a taken-back verdict)
  // can no longer close on its two commits.
  ConfirmationStep AbortIfTargetLost(const ConfirmationContext& context);
  // The search closed on the early confirmation's two commits and has settled (the job is
  // CONFIRMING now): the pairs measured ahead for this culprit since count, and the
  // confirmation is judged once no pair is outstanding.
  ConfirmationStep CompleteEarly(const ConfirmationContext& context);

  // The record of the confirmation (JobStatus.confirmation): its sets, pairs and judgement.
  // Present from Start until a confirmation started early is abandoned; the default (empty)
  // record while absent.
  bool has_confirmation() const { return confirmation_.has_value(); }
  const v1::Confirmation& confirmation() const {
    return confirmation_.has_value() ? *confirmation_ : v1::Confirmation::default_instance();
  }

  // True when `task` (a confirmation task) measures the culprit whose confirmation has started.
  bool StartedFor(const v1::Task& task) const;
  // Queues `tasks` tasks of `pairs_per_task` interleaved pairs of the search's interval at the
  // front of the ready queue.
  void QueueTasks(int tasks, int pairs_per_task, int round);

  // The result of confirmation task `task` (row `probe`), or a failed result when it gave up:
  // pairs measured ahead are kept for their culprit; pairs of the started confirmation are
  // added, and the confirmation is judged once the last is in.
  ConfirmationStep OnResult(const v1::Probe& probe, const v1::Task& task,
                            const v1::TaskResult& result, const ConfirmationContext& context);

 private:
  // The search's samples of last-good and culprit, per worker that measured both, and for a
  // worker without both in this job's rows, its cached pair (CachedSets).
  std::vector<ConfirmationSet> ReusableSets() const;
  // When no worker measured both: last-good's samples of one worker and the culprit's of
  // another that measures GOOD exactly alike (Calibration::MeasureGoodAlike, decision 232), as
  // one set (PairsAcross); nullopt when no two such workers did.
  std::optional<ConfirmationSet> SetAcrossWorkers(
      const std::map<std::string, ConfirmationSet>& by_worker) const;
  // Makes `sets` the confirmation's reused sets, and their pairs its reused (and cached) pairs,
  // in place of whatever it held.
  void RecordReusableSets(const std::vector<ConfirmationSet>& sets);
  // True when last-good's samples of `good_worker` and the culprit's of `bad_worker` pair as
  // one worker's would: they measure GOOD exactly alike (decision 232), and the job is no try.
  bool PairsAcross(const std::string& good_worker, const std::string& bad_worker) const;
  // The samples of `last_good` and `culprit` that one earlier job measured on a worker whose GPU
  // agreed with itself in this job (ResultReuse::PairsAt), one set per worker.
  std::vector<ConfirmationSet> CachedSets(int last_good, int culprit) const;
  // The fresh pairs the interval needs when `reused` pairs come from the search.
  ConfirmationPlan PlanNow(int reused, int workers) const;
  // The pairs the search would give the confirmation of (`last_good`, `culprit`): the samples
  // of both commits one worker measured or measures now, and the cached pairs of the others.
  int ExpectedReusedPairs(int last_good, int culprit) const;
  // True while the search can still close on the early confirmation's two commits.
  bool EarlyTargetPossible() const;
  bool TasksPending() const;
  // Adds a set of fresh interleaved pairs to the record; returns how many.
  int AddInterleavedPairs(const v1::ConfirmationPairs& set);
  // Adds the kept pairs of the culprit and cancels the speculative tasks of other commits;
  // returns the culprit's speculative pairs, measured or still running.
  int AdoptSpeculativePairs(absl::Time now, ConfirmationStep* step);
  // Cancels every unfinished confirmation task.
  void CancelTasks(const std::string& why, absl::Time now, ConfirmationStep* step);
  // The warning that the confirmation of the search's interval starts: `plan`'s fresh tasks,
  // besides `reused` pairs of the search (`cached` of them measured by earlier jobs) and
  // `speculative` measured during its last round.
  v1::JobWarning ConfirmingFact(const ConfirmationPlan& plan, int reused, int cached,
                                int speculative) const;
  // Queues `pairs` more fresh pairs and says so (`reused` from the search).
  void QueueMorePairs(int pairs, int reused, const ConfirmationContext& context,
                      ConfirmationStep* step);
  // Drops the fresh pairs of GPUs quarantined since and queues as many again; false when there
  // were none.
  bool RemeasureQuarantinedPairs(const ConfirmationContext& context, ConfirmationStep* step);
  // Judges every set: confirmed, more pairs, or unconfirmed.
  ConfirmationStep Judge(const ConfirmationContext& context, ConfirmationStep step);

  // The record, created empty on first write.
  v1::Confirmation* MutableConfirmation();

  const JobFrame* frame_;
  const std::vector<v1::CommitRef>* commits_;
  const BisectSearch* search_;
  const Calibration* calibration_;
  const ResultReuse* reuse_;
  ProbeBook* book_;

  std::optional<v1::Confirmation> confirmation_;
  std::string failure_;  // Why a confirmation task failed, if one did.
  // A confirmation started while the calibrations owed at the end ran, for this interval.
  bool early_ = false;
  int early_last_good_ = 0;
  int early_first_bad_ = 0;
  // The commits given a pair ahead of the search's end, and the pairs that finished before
  // their culprit's confirmation started, by (culprit, last-good sha).
  std::set<int> speculated_;
  std::map<std::pair<int, std::string>, std::vector<v1::ConfirmationPairs>> speculative_sets_;
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_CONFIRMATION_STAGE_H_
