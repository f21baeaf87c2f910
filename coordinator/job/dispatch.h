// Copyright 2026 The kbisect Authors.
//
// The probe scheduler of one job: which idle worker gets which work now. PlanDispatch is a pure
// function of a snapshot of the job (DispatchInput) and the time; it returns the assignments in
// the order BisectJob applies them (creating tasks, so task ids follow that order). It plays the
// part of Ray's ISchedulingPolicy::Schedule: no I/O, no clock, no mutation of the job.
//
// The policy, in order, for each idle worker (in the order they asked):
//   1. Quarantined workers get nothing; the spec's max_workers caps the tasks in flight.
//   2. Queued work it may run (pinned to it or free for anyone: the BAD baseline, extra runs,
//      retries of lost tasks), first in queue order; a confirmation pair only once it has no
//      work of its own queued (BAD's worker's GOOD, the runs that complete its calibration) and
//      owes no calibration it has not started.
//   3. A worker that must calibrate (a probe of it failed or could not be decided before it had
//      a calibration) calibrates. With --exit-code, the first worker without a calibration while
//      the job has no reference GOOD measures it (with a metric, the reference GOOD is queued for
//      BAD's worker).
//   4. Other workers without a calibration calibrate when AffordableCalibrations says the round
//      bound can afford it (those that owe a calibration first: holders of provisional
//      verdicts) and no point this round could finish the search needs them, never in the first
//      wave except one with a build step (DispatchInput::builds) and, in a job that reuses
//      cached results, the workers with no cached commit inside the interval (the cache may
//      decide the search within the span; their calibration takes one run);
//      before the endpoint verdict, not while a measurement is due soon when a calibration
//      takes more than one run (DispatchInput::calibration_runs): after the verdict it is sized
//      by the step, and the workers probe the next round meanwhile;
//      once the search is done those that owe one calibrate (beside the confirmation: no
//      probing round).
//   5. Everyone else probes, unless it waits for the baselines (it probed ahead once already)
//      or a running measurement is due soon (ResultDueSoon) and waiting for it costs no round
//      (WaitKeepsRoundBound): points placed together with the coming result split the interval
//      evenly. Points come from BisectSearch::PlanProbes (in the first wave, half of a split
//      planned for both waves; later, a split that leaves room for the points of workers that
//      reported a moment ago and are about to ask, kReturningWithin); a point near a worker's
//      cached commit goes to it, moved there (kAnchorSnapFraction), then one near a commit already
//      built where a worker reads builds goes to that worker, moved there (kBuiltSnapFraction),
//      and the rest go to the idle worker whose checkout is nearest (closest pair first). A
//      point never moves onto a commit in flight (one being measured, or measured and awaiting
//      its verdict): that commit would get two verdicts.
#ifndef KBISECT_COORDINATOR_JOB_DISPATCH_H_
#define KBISECT_COORDINATOR_JOB_DISPATCH_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/search/bisect_search.h"
#include "coordinator/job/probe_book.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// A running measurement about to end is "due soon" within these fractions of the job's typical
// measurement span.
inline constexpr double kDueFraction = 0.7;
inline constexpr double kOverdueFraction = 1.3;

// What the scheduler knows of one worker of the job.
struct DispatchWorker {
  bool quarantined = false;
  bool gone = false;                 // Left; cleared when it asks for work again.
  bool calibration_started = false;  // Has a GOOD calibration (running or finished).
  // Must calibrate before the job can end because it holds provisional verdicts or has probes
  // measured or running (BAD's worker owes one too, see DispatchInput); such workers calibrate
  // first.
  bool owes_calibration = false;
  // It already probed ahead and the baselines are not settled.
  bool waits_for_baselines = false;
  // It has no calibration and one of its probes needs it (Calibration::Worker::must_calibrate):
  // it calibrates as soon as it has no queued work.
  bool must_calibrate = false;
  // Commits it measured in an earlier job whose results wait for it to show its GPU has not
  // drifted (ResultReuse::Anchors): a point of its is moved onto one of them when that is
  // within kAnchorSnapFraction of the interval.
  std::vector<int> anchors;
  // Commits inside the open interval already built where it reads builds: its host's build cache
  // or a shared build store (coordinator/built_commits.h). A point is moved onto one when that
  // splits about as well (AssignBuiltProbes).
  std::vector<int> built;
  int checked_out = -1;  // Commit index of its last task (its checkout), -1 before any.
};

// A task in the ready queue (not done, not running).
struct QueuedTask {
  std::string task_id;
  std::string pinned_worker;  // Empty: any worker.
  v1::ProbeKind kind = v1::PROBE_KIND_UNSPECIFIED;
  int commit_index = 0;
  std::optional<absl::Time> started;  // Its probe's start (an earlier attempt or measurement).
};

// A task running now.
struct RunningTask {
  v1::ProbeKind kind = v1::PROBE_KIND_UNSPECIFIED;
  std::optional<absl::Time> started;
  int round = 0;       // A bisect probe's round (0 for other kinds).
  std::string worker;  // Who runs it.
};

// A worker the job knows that holds none of its tasks and is not asking now, and when its last
// task of the job ended: a worker asks again as soon as it has reported, so one whose task ended
// a moment ago is about to ask (kReturningWithin).
struct FreedWorker {
  std::string worker;
  absl::Time ended;
};

// A finished measurement (not a confirmation), in probe table order.
struct MeasuredSpan {
  std::string worker;
  double seconds = 0;  // Lease to result.
};

struct DispatchInput {
  std::vector<std::string> idle;                  // Idle workers in the order they asked.
  std::map<std::string, DispatchWorker> workers;  // Workers the job knows (not all idle).
  std::vector<QueuedTask> queue;                  // Ready work in queue order.
  std::vector<RunningTask> running;
  std::vector<FreedWorker> freed;
  std::vector<MeasuredSpan> spans;
  bool has_reference = false;  // A reference GOOD exists (handed out or measured).
  // The BAD baseline's task and the worker that last ran it: that worker owes a calibration
  // (its BAD must be placed in the reference's frame) unless `pass_fail`.
  std::string bad_task_id;
  std::string bad_worker;
  bool pass_fail = false;
  // The baselines are being measured and no probe has been measured yet: the probers of this
  // first wave probe once more before the endpoint verdict (a second wave of the same round), so
  // their points leave room for the second wave's, and nobody calibrates yet.
  bool first_wave = false;
  // The endpoint verdict is in (the job bisects or confirms); false while the baselines are
  // measured.
  bool baselines_settled = false;
  // The runs a calibration handed out now takes (a worker that will not hold the reference
  // GOOD): --runs before the endpoint verdict, except in a job that reuses cached results.
  int calibration_runs = 1;
  // The spec has a build step. Then, in the first wave, the first idle worker other than BAD's
  // calibrates (measures GOOD) instead of probing: GOOD and BAD build in parallel on two
  // workers, and BAD's worker finds GOOD built when it measures the reference GOOD next (on one
  // host the build cache is shared: a second build of one commit waits for the first).
  bool builds = false;
  int round = 1;  // The probing round new probes belong to.
  // Points the job chose itself (a flaky test's, by information: flaky_verdicts.h), best first:
  // bisect probes take them in this order instead of search->PlanProbes, and nobody waits for a
  // result due soon (the next result changes the posterior, not a split).
  std::optional<std::vector<int>> chosen_points;
  int max_workers = 0;   // Most tasks in flight; <= 0: no cap.
  int commit_count = 0;  // n: commits in the range (index 0 = GOOD, n = BAD).
  const BisectSearch* search = nullptr;
};

// One assignment of the plan.
struct DispatchAssignment {
  enum class Kind {
    kQueued,     // Hand out the queued task `task_id`.
    kCalibrate,  // Create and hand out the worker's GOOD calibration (the reference if none).
    kProbe,      // Create and hand out a bisect probe of `commit_index`.
  };
  Kind kind = Kind::kQueued;
  std::string worker;
  std::string task_id;
  int commit_index = 0;
};

struct DispatchPlan {
  std::vector<DispatchAssignment> assignments;
  // Idle workers the plan looked at (before the cap stopped it): they take part in the job
  // (known to it, no longer gone) whether or not they got work.
  std::vector<std::string> seen;
};

// How far (a fraction of the open interval) a probe point may move onto a worker's cached
// commit (an anchor): measuring it again verifies the worker's cached results and costs no
// round.
inline constexpr double kAnchorSnapFraction = 0.1;

// How far a probe point may move onto a commit already built where its worker reads builds: this
// fraction of the piece each point splits off (the open interval over the points + 1), and only
// while the points still keep the round bound (PointsKeepRoundBound). A point a quarter piece
// off the even split leaves pieces of 0.75 and 1.25: about 4% less information at W = 1, against
// a build saved, which on a real repository is most of a probe's time.
inline constexpr double kBuiltSnapFraction = 0.25;

// A calibrated worker whose task ended at most this long ago and that is not asking yet is about
// to ask: the points planned for the workers asking now leave room for its point
// (BisectSearch::PlanProbes(count, planned)). Results arrive one at a time, and the worker
// waiting for the first is dispatched before the one that reported asks again: planned alone, two
// workers' points would fall at a half and a quarter of the interval instead of its thirds.
inline constexpr absl::Duration kReturningWithin = absl::Seconds(1);

// The furthest a point may move onto a built commit (kBuiltSnapFraction) when `points` points
// split an open interval of `interval` commits (first_bad - last_good): 0 when no move is small
// enough.
int BuiltSnapDistance(int interval, int points);

// A calibration during the search takes a probe's slot. It is affordable when the round bound
// keeps this much slack: the widest piece the round leaves, times kCalibrationSlack, must still
// be split within the rounds left of ceil(log_{W+1} n). Real rounds are not synchronous (workers
// are freed one at a time, pieces come out uneven), and a plan with no slack loses a round to
// the first uneven split.
inline constexpr int kCalibrationSlack = 3;

// How many of `uncalibrated` idle workers may calibrate now, when `probing` idle workers could
// probe (the uncalibrated ones included), in round `round` of a job of `workers` slots over
// `commit_count` commits: the most c such that the widest piece left by the points in flight and
// the probing - c new points (search.PlanProbes), times kCalibrationSlack, is at most
// (W + 1)^(R - round), where R = ceil(log_{W+1} n) is the round bound. When all `probing`
// points would leave no piece wider than 1 (this round can finish the search), only the c that
// still do: a calibration in place of such a point costs a round of wall time. Calibrations
// owed once the search is done cost no probing round and are not planned here.
int AffordableCalibrations(const BisectSearch& search, int commit_count, int workers, int round,
                           int probing, int uncalibrated);

// Plans the dispatch at `now`. `input.search` must be set.
DispatchPlan PlanDispatch(const DispatchInput& input, absl::Time now);

// The typical span of one measurement in the job so far: the median of `spans`, each worker's
// first left out while others exist (it pays for the worker's first checkout). nullopt when
// there is none.
std::optional<double> TypicalSpan(const std::vector<MeasuredSpan>& spans);

// True when a running task (not a confirmation) with a start time has been running for
// kDueFraction..kOverdueFraction of `typical` seconds at `now`.
bool ResultDueSoon(const std::vector<RunningTask>& running, std::optional<double> typical,
                   absl::Time now);

// True when idle workers may wait for the results ResultDueSoon sees without costing a probing
// round against the bound R = ceil(log_{W+1} n) (`workers` slots, `commit_count` commits): no
// bisect probe in flight is of round `round` or later (any of them may report first; new points
// placed after an earlier round's verdict are still of `round`), or the search fits R even when
// new points wait for the latest of them: its round plus the rounds that the widest piece left
// by the points in flight still needs. A wait that would cost a round does not happen: the
// points go out now (decision 139).
// True when the search fits the round bound R = ceil(log_{W+1} n) with `points` placed now in
// round `round`: the rounds after it split the widest piece that they and the points in flight
// leave (round + ceil(log_{W+1} piece) <= R).
bool PointsKeepRoundBound(const BisectSearch& search, const std::vector<int>& points,
                          int commit_count, int workers, int round);

// True when a bisect probe of a round before `round` is running and is no straggler: it has run
// at most kStragglerFraction of its worker's typical span at `now` (TypicalSpan of that
// worker's `spans`, else of all; a GPU that is always slow is not a straggler, a hung benchmark
// is), or nothing is typical yet. Its verdict narrows the interval without deepening it, so
// points waiting for it keep their round. PlanDispatch holds points that would break the bound
// (PointsKeepRoundBound) while one runs.
inline constexpr double kStragglerFraction = 3.0;
bool EarlierRoundInFlight(const std::vector<RunningTask>& running, int round,
                          const std::vector<MeasuredSpan>& spans, absl::Time now);

bool WaitKeepsRoundBound(const std::vector<RunningTask>& running, std::optional<double> typical,
                         const BisectSearch& search, int commit_count, int workers, int round);

// Pairs probe points with probing workers, nearest checkout first: repeatedly the closest
// (worker, point) pair among those not yet paired (a worker without a checkout is n + 1 away;
// ties go to the earlier worker, then the earlier point). Returns, per point in `points`
// order of pairing, (worker index, point index).
std::vector<std::pair<size_t, size_t>> PairNearest(const std::vector<int>& checkouts,
                                                   const std::vector<int>& points,
                                                   int commit_count);

// The round of a bisect probe handed out now: one more than the rounds of the two verdicts
// that bound the open interval of `search` (the endpoints and marks are round 0; rows of
// `probes`). A probe's place depends on those two verdicts alone (the points in flight space it
// but are not waited for), so this is its depth in the chain of results the search waited for:
// a verdict that came back first from a piece the interval no longer holds does not delay it.
// Over a commit graph, or for a flaky test (`by_results`: no verdict until the search ends),
// every result may shape the candidates: one more than `max_round_recorded`.
int RoundOfNewProbes(const BisectSearch& search, const ProbeRows& probes, int max_round_recorded,
                     bool by_results);

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_DISPATCH_H_
