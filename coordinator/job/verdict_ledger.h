// Copyright 2026 The kbisect Authors.
//
// VerdictLedger: a job's bisect verdicts as the search holds them. It owns the BisectSearch (the
// open interval and the points in flight), the measured probes that wait for a verdict (their
// worker has not calibrated, or the baselines are not settled), the verdicts that contradicted the
// search and stand as skips until a verdict is taken back, and the count of steps and the latest
// round recorded, the job's progress (probes finished, in flight, skipped and cancelled, the
// commits and rounds left), and the interval the job shows. It records a verdict (a skip when
// it contradicts), takes verdicts back and rebuilds the search from the probe table, and keeps
// the interval shown in step with the search after each.
//
// The probe rows are the ProbeBook's; the ledger changes only a row's verdict, provisional flag,
// and, for a row it discards, its state, message and end time. Which verdict a probe gets is the
// classifier's (probe_classifier.h, Calibration::Judge); when is BisectJob's.
#ifndef KBISECT_COORDINATOR_JOB_VERDICT_LEDGER_H_
#define KBISECT_COORDINATOR_JOB_VERDICT_LEDGER_H_

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/search/bisect_search.h"
#include "coordinator/job/calibration.h"
#include "coordinator/job/job_frame.h"
#include "coordinator/job/probe_book.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

class VerdictLedger {
 public:
  // The ledger of a job over `commits` (index 0 = GOOD, last = BAD; at least two), with no
  // verdict yet: its search runs over their commit graph when `spec` asks for every commit
  // (HISTORY_MODE_ALL_COMMITS) and the commits carry their parent_indices and a merge, else over
  // the list (the first-parent path). `frame` (its marks and max_workers are read), `book` and
  // `calibration` must outlive it; they may be constructed after it.
  VerdictLedger(const v1::JobSpec& spec, const std::vector<v1::CommitRef>& commits,
                const JobFrame* frame, ProbeBook* book, const Calibration* calibration);

  VerdictLedger(const VerdictLedger&) = delete;
  VerdictLedger& operator=(const VerdictLedger&) = delete;

  BisectSearch& search() { return search_; }
  const BisectSearch& search() const { return search_; }

  // --- Probes waiting for a verdict. ---------------------------------------------------------
  // Row `position`, a measured (or failed) bisect probe, waits for a verdict.
  void Await(int position) { awaiting_.push_back(position); }
  // The waiting rows, in the order they came; the ledger forgets them.
  std::vector<int> TakeAwaiting();
  const std::vector<int>& awaiting() const { return awaiting_; }
  // The waiting rows measured by `worker` in this job (not taken from the result cache).
  int FreshAwaitingOf(const std::string& worker) const;
  // Forgets the waiting rows for which `drop` returns true (`drop` may change the row).
  void DropAwaiting(const std::function<bool(int position)>& drop);
  // Forgets the waiting rows whose commit is outside the open interval: no longer needed.
  void DropAwaitingOutsideInterval();

  // --- Verdicts. -----------------------------------------------------------------------------
  // Records `verdict` (GOOD, BAD, or else a skip) of the bisect probe at row `position` in the
  // search. Returns false when it contradicts the verdicts recorded: the commit then stands as a
  // skip, and the row is judged again whenever a verdict is taken back.
  bool Record(int position, v1::Verdict verdict);
  // A verdict (or a flaky search's result) of round `round` counted: one more step.
  void CountStep(int round);
  // Probes that got a verdict (steps of the progress lines), and the latest round among them.
  int steps() const { return steps_; }
  // Counts the probes finished and in flight, the commits left, and the rounds the search still
  // needs with the job's active workers, into the progress.
  void UpdateProgress();
  int max_round() const { return max_round_; }
  // A verdict recorded as a skip (or AMBIGUOUS) counts in the progress.
  void CountSkip() { progress_.set_skips(progress_.skips() + 1); }
  // A probe cancelled before it finished counts in the progress.
  void CountCancelled() { progress_.set_probes_cancelled(progress_.probes_cancelled() + 1); }
  // The progress as last counted (JobStatus.progress and every event's).
  const v1::Progress& progress() const { return progress_; }

  // The interval the job shows, (last_good_index, first_bad_index]: the search's, as of the
  // last ShowInterval or Rebuild.
  void ShowInterval() {
    shown_last_good_ = search_.last_good();
    shown_first_bad_ = search_.first_bad();
  }
  int shown_last_good() const { return shown_last_good_; }
  int shown_first_bad() const { return shown_first_bad_; }

  // Takes back the verdicts of the rows at `positions` that were judged against the baselines
  // (others are ignored), with every verdict that contradicted one and stands as a skip, and
  // rebuilds the search without them. Their samples are judged again (they wait for a verdict),
  // or, with `probe_again` or when their worker was quarantined, discarded ("why" says why) so
  // that others probe the commits again. The skips taken back leave the progress' count.
  void Retract(const std::vector<int>& positions, bool probe_again, const std::string& why,
               absl::Time now);
  // Takes back every verdict judged against the baselines; their samples are judged again.
  void RetractAll(absl::Time now);

  // Rebuilds the search from the frame's marks, the recorded verdicts of the probe table (a
  // verdict that no longer fits is a skip), the bisect tasks not done and the waiting rows, and
  // shows its interval.
  void Rebuild();

 private:
  const JobFrame* const frame_;
  ProbeBook* const book_;
  const Calibration* const calibration_;
  BisectSearch empty_;  // The search with no verdict and nothing in flight: Rebuild's start.
  BisectSearch search_;
  std::vector<int> awaiting_;
  std::set<int> contradicted_;
  int steps_ = 0;
  int max_round_ = 0;
  v1::Progress progress_;
  int shown_last_good_ = 0;
  int shown_first_bad_ = 0;
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_VERDICT_LEDGER_H_
