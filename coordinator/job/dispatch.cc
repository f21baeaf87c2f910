// Copyright 2026 The kbisect Authors.
#include "coordinator/job/dispatch.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <utility>

#include "common/stats/stats.h"
#include "coordinator/job/confidence_stop.h"

namespace kbisect {

std::optional<double> TypicalSpan(const std::vector<MeasuredSpan>& spans) {
  std::vector<double> later;
  std::vector<double> first;
  std::set<std::string> seen;
  for (const MeasuredSpan& span : spans) {
    if (span.seconds <= 0) continue;
    (seen.insert(span.worker).second ? first : later).push_back(span.seconds);
  }
  if (later.empty()) later = std::move(first);
  if (later.empty()) return std::nullopt;
  return Median(later).value_or(0);
}

namespace {

// Any measurement about to end frees a worker (a calibration or a baseline too): new points
// placed together with it split the interval evenly; placed one by one they fill the largest
// gap first and can leave a piece twice the size of the others.
bool IsDueSoon(const RunningTask& task, double typical, absl::Time now) {
  if (task.kind == v1::PROBE_KIND_CONFIRM || !task.started.has_value()) return false;
  const double elapsed = absl::ToDoubleSeconds(now - *task.started);
  return elapsed >= kDueFraction * typical && elapsed <= kOverdueFraction * typical;
}

}  // namespace

bool ResultDueSoon(const std::vector<RunningTask>& running, std::optional<double> typical,
                   absl::Time now) {
  if (!typical.has_value()) return false;
  return std::any_of(running.begin(), running.end(),
                     [&](const RunningTask& task) { return IsDueSoon(task, *typical, now); });
}

bool WaitKeepsRoundBound(const std::vector<RunningTask>& running, std::optional<double> typical,
                         const BisectSearch& search, int commit_count, int workers, int round) {
  if (!typical.has_value()) return true;
  // Any result in flight may come before the one due: the latest round among them is what the
  // new points would wait on.
  int latest = 0;
  for (const RunningTask& task : running) {
    if (task.kind == v1::PROBE_KIND_BISECT) latest = std::max(latest, task.round);
  }
  if (latest < round) return true;
  const int bound = BisectSearch::EstimateRounds(commit_count, workers);
  return latest + BisectSearch::EstimateRounds(search.LargestPieceWith({}), workers) <= bound;
}

int BuiltSnapDistance(int interval, int points) {
  if (interval <= 0 || points <= 0) return 0;
  return static_cast<int>(kBuiltSnapFraction * interval / (points + 1));
}

bool PointsKeepRoundBound(const BisectSearch& search, const std::vector<int>& points,
                          int commit_count, int workers, int round) {
  const int bound = BisectSearch::EstimateRounds(commit_count, workers);
  return round + BisectSearch::EstimateRounds(search.LargestPieceWith(points), workers) <= bound;
}

bool EarlierRoundInFlight(const std::vector<RunningTask>& running, int round,
                          const std::vector<MeasuredSpan>& spans, absl::Time now) {
  const std::optional<double> overall = TypicalSpan(spans);
  return std::any_of(running.begin(), running.end(), [&](const RunningTask& task) {
    if (task.kind != v1::PROBE_KIND_BISECT || task.round >= round) return false;
    std::vector<MeasuredSpan> own;
    for (const MeasuredSpan& span : spans) {
      if (span.worker == task.worker) own.push_back(span);
    }
    const std::optional<double> typical = own.empty() ? overall : TypicalSpan(own);
    // A straggler (a hung benchmark) holds nobody: a round costs less than waiting for it.
    return !typical.has_value() || !task.started.has_value() ||
           absl::ToDoubleSeconds(now - *task.started) <= kStragglerFraction * *typical;
  });
}

std::vector<std::pair<size_t, size_t>> PairNearest(const std::vector<int>& checkouts,
                                                   const std::vector<int>& points,
                                                   int commit_count) {
  std::vector<std::pair<size_t, size_t>> pairs;
  std::vector<bool> taken(checkouts.size(), false);
  std::vector<bool> placed(points.size(), false);
  for (size_t assigned = 0; assigned < points.size() && assigned < checkouts.size(); ++assigned) {
    size_t best_worker = 0;
    size_t best_point = 0;
    long best = -1;
    for (size_t w = 0; w < checkouts.size(); ++w) {
      if (taken[w]) continue;
      const int at = checkouts[w];
      for (size_t i = 0; i < points.size(); ++i) {
        if (placed[i]) continue;
        const long distance = at < 0 ? commit_count + 1L : std::abs(at - points[i]);
        if (best < 0 || distance < best) {
          best = distance;
          best_worker = w;
          best_point = i;
        }
      }
    }
    taken[best_worker] = true;
    placed[best_point] = true;
    pairs.emplace_back(best_worker, best_point);
  }
  return pairs;
}

int AffordableCalibrations(const BisectSearch& search, int commit_count, int workers, int round,
                           int probing, int uncalibrated) {
  const int bound = BisectSearch::EstimateRounds(commit_count, workers);
  const int rounds_after = bound - round;
  if (rounds_after < 0 || probing <= 0) return 0;
  // (W + 1)^(rounds after this one), capped: beyond n it changes nothing.
  long capacity = 1;
  for (int i = 0; i < rounds_after && capacity <= commit_count; ++i) capacity *= workers + 1;
  // When this round's points can decide the search whatever they show, a calibration in place
  // of one of them would add a round to the wall time (the calibrations owed run beside the
  // confirmation at no cost): only the workers it does not need calibrate.
  const bool finishes = search.LargestPieceWith(search.PlanProbes(probing)) <= 1;
  int affordable = 0;
  for (int c = 1; c <= std::min(uncalibrated, probing); ++c) {
    const int widest = search.LargestPieceWith(search.PlanProbes(probing - c));
    if (finishes && widest > 1) break;
    // A round whose points decide the search whatever they show has no later round to lose.
    if (widest > 1 && static_cast<long>(widest) * kCalibrationSlack > capacity) break;
    affordable = c;
  }
  return affordable;
}

namespace {

// True when `worker` has a cached commit strictly inside the open interval of `search`.
bool HasAnchorInside(const DispatchWorker& worker, const BisectSearch& search) {
  return std::any_of(worker.anchors.begin(), worker.anchors.end(), [&](int anchor) {
    return anchor > search.last_good() && anchor < search.first_bad();
  });
}

// The plan's working copy of the job: what the assignments made so far changed.
class PlanState {
 public:
  explicit PlanState(const DispatchInput& input)
      : input_(input),
        workers_(input.workers),
        queue_(input.queue),
        running_(input.running),
        has_reference_(input.has_reference),
        bad_worker_(input.bad_worker) {}

  bool Room() const {
    return input_.max_workers <= 0 || static_cast<int>(running_.size()) < input_.max_workers;
  }

  DispatchWorker& Worker(const std::string& name) { return workers_[name]; }

  bool Owes(const std::string& name) {
    return Worker(name).owes_calibration || (!input_.pass_fail && name == bad_worker_);
  }

  // Removes and returns the first queued task `worker` may run. A worker that owes its
  // calibration, or has work queued that only it can do (its calibration queued with the BAD
  // baseline, which settles the endpoint on one GPU; the runs that complete its calibration),
  // leaves the confirmation's pairs to others: it does its own work meanwhile, which the job
  // waits for too.
  std::optional<QueuedTask> TakeQueued(const std::string& worker) {
    const bool own_work_queued =
        std::any_of(queue_.begin(), queue_.end(),
                    [&](const QueuedTask& task) { return task.pinned_worker == worker; });
    const bool calibrates_first =
        (Owes(worker) && !Worker(worker).calibration_started) || own_work_queued;
    auto it = std::find_if(queue_.begin(), queue_.end(), [&](const QueuedTask& task) {
      if (calibrates_first && task.kind == v1::PROBE_KIND_CONFIRM) return false;
      return task.pinned_worker.empty() || task.pinned_worker == worker;
    });
    if (it == queue_.end()) return std::nullopt;
    QueuedTask task = *it;
    queue_.erase(it);
    return task;
  }

  void HandOutQueued(const std::string& worker, const QueuedTask& task, DispatchPlan* plan) {
    Worker(worker).checked_out = task.commit_index;
    // A queued bisect probe (a retry) counts as of the round new points would be.
    running_.push_back(
        {task.kind, task.started, task.kind == v1::PROBE_KIND_BISECT ? input_.round : 0, worker});
    if (!input_.bad_task_id.empty() && task.task_id == input_.bad_task_id) bad_worker_ = worker;
    plan->assignments.push_back({DispatchAssignment::Kind::kQueued, worker, task.task_id, 0});
  }

  void Calibrate(const std::string& worker, DispatchPlan* plan) {
    DispatchWorker& state = Worker(worker);
    state.calibration_started = true;
    state.checked_out = 0;
    has_reference_ = true;
    running_.push_back({v1::PROBE_KIND_BASELINE_GOOD, std::nullopt, 0, worker});
    plan->assignments.push_back({DispatchAssignment::Kind::kCalibrate, worker, "", 0});
  }

  bool has_reference() const { return has_reference_; }

  // True when a worker other than BAD's has a calibration (running or finished).
  bool OtherCalibrationStarted() const {
    for (const auto& [name, state] : workers_) {
      if (state.calibration_started && name != bad_worker_) return true;
    }
    return false;
  }
  const std::string& bad_worker() const { return bad_worker_; }
  int in_flight() const { return static_cast<int>(running_.size()); }
  const std::vector<RunningTask>& running() const { return running_; }

  // The round's slots: the workers that worked in the job and are still here, and the idle ones
  // asking now, capped by max_workers.
  int Slots() const {
    std::set<std::string> members;
    for (const auto& [worker, state] : workers_) {
      if (!state.quarantined && !state.gone && state.checked_out >= 0) members.insert(worker);
    }
    for (const std::string& worker : input_.idle) {
      auto it = workers_.find(worker);
      if (it != workers_.end() && !it->second.quarantined) members.insert(worker);
    }
    int slots = static_cast<int>(members.size());
    if (input_.max_workers > 0) slots = std::min(slots, input_.max_workers);
    return std::max(1, slots);
  }

 private:
  const DispatchInput& input_;
  std::map<std::string, DispatchWorker> workers_;
  std::vector<QueuedTask> queue_;
  std::vector<RunningTask> running_;
  bool has_reference_;
  std::string bad_worker_;
};

// True when `worker` (`self`), idle with no queued work for it and no calibration, calibrates
// now (step 3 of the policy, and step 4's first wave): it must, the job has no reference GOOD,
// or the first wave measures GOOD beside BAD or calibrates a worker the cache leaves idle.
bool CalibratesAtOnce(const DispatchInput& input, const PlanState& state, const std::string& worker,
                      const DispatchWorker& self, bool reuses_results) {
  if (self.must_calibrate && state.has_reference()) return true;
  if (!state.has_reference()) return true;
  if (input.first_wave && worker != state.bad_worker() && !state.OtherCalibrationStarted() &&
      (input.builds || AffordableCalibrations(*input.search, input.commit_count, state.Slots(),
                                              /*round=*/1, state.Slots() - 1, 1) > 0)) {
    // GOOD is measured beside BAD (DispatchInput::first_wave).
    return true;
  }
  // The cached results may decide the search within this span; a worker with none of them here
  // calibrates (one run: Calibration::RunsAtHandOut) rather than probe a point they may make
  // moot, and is ready for the points they leave.
  return input.first_wave && worker != state.bad_worker() && reuses_results &&
         !HasAnchorInside(self, *input.search);
}

// Goes over the idle workers in the order they asked (steps 1 to 3 of the policy): hands each
// its queued work or the calibration it calibrates at once, and sorts the others into
// `probing` and `uncalibrated`.
void DispatchIdle(const DispatchInput& input, PlanState* state, DispatchPlan* plan,
                  std::vector<std::string>* probing, std::vector<std::string>* uncalibrated) {
  const bool reuses_results =
      std::any_of(input.workers.begin(), input.workers.end(),
                  [&](const auto& entry) { return HasAnchorInside(entry.second, *input.search); });
  for (const std::string& worker : input.idle) {
    if (!state->Room()) break;
    DispatchWorker& self = state->Worker(worker);
    if (self.quarantined) continue;
    self.gone = false;
    plan->seen.push_back(worker);
    if (std::optional<QueuedTask> queued = state->TakeQueued(worker)) {
      state->HandOutQueued(worker, *queued, plan);
      continue;
    }
    if (!self.calibration_started) {
      if (CalibratesAtOnce(input, *state, worker, self, reuses_results)) {
        state->Calibrate(worker, plan);
      } else {
        uncalibrated->push_back(worker);
      }
      continue;
    }
    if (!self.waits_for_baselines) probing->push_back(worker);
  }
}

// Returns `uncalibrated` with the workers that owe a calibration first, each group in its
// original order.
std::vector<std::string> OwersFirst(const std::vector<std::string>& uncalibrated,
                                    PlanState* state) {
  std::vector<bool> owes;
  for (const std::string& worker : uncalibrated) owes.push_back(state->Owes(worker));
  std::vector<std::string> ordered;
  for (size_t i = 0; i < uncalibrated.size(); ++i) {
    if (owes[i]) ordered.push_back(uncalibrated[i]);
  }
  for (size_t i = 0; i < uncalibrated.size(); ++i) {
    if (!owes[i]) ordered.push_back(uncalibrated[i]);
  }
  return ordered;
}

// How many of the `uncalibrated` workers may calibrate during the search, when `probing` others
// could probe: AffordableCalibrations, none in the first wave or once the search is done.
int AllowedCalibrations(const DispatchInput& input, const PlanState& state, size_t probing,
                        size_t uncalibrated) {
  if (input.first_wave || input.search->Done()) return 0;
  int can_probe = static_cast<int>(probing + uncalibrated);
  if (input.max_workers > 0) can_probe = std::min(can_probe, input.max_workers - state.in_flight());
  return AffordableCalibrations(*input.search, input.commit_count, state.Slots(), input.round,
                                can_probe, static_cast<int>(uncalibrated));
}

// True when idle workers wait for a result due soon at `now` rather than take new work: it is
// due soon (ResultDueSoon) and waiting for it costs no round (WaitKeepsRoundBound).
bool WaitForResultDueSoon(const DispatchInput& input, const PlanState& state, absl::Time now) {
  return ResultDueSoon(state.running(), TypicalSpan(input.spans), now) &&
         WaitKeepsRoundBound(state.running(), TypicalSpan(input.spans), *input.search,
                             input.commit_count, state.Slots(), input.round);
}

// Step 4 of the policy: hands the `uncalibrated` workers the calibrations the round plan can
// afford (or, once the search is done, those they owe), and adds the others that do not wait
// for the baselines to `probing`; their verdicts are provisional until they calibrate.
void DispatchUncalibrated(const DispatchInput& input, absl::Time now,
                          const std::vector<std::string>& uncalibrated, PlanState* state,
                          DispatchPlan* plan, std::vector<std::string>* probing) {
  // The BAD baseline's worker and those holding provisional verdicts calibrate first.
  const std::vector<std::string> ordered = OwersFirst(uncalibrated, state);
  int allowed = AllowedCalibrations(input, *state, probing->size(), uncalibrated.size());
  // Before the endpoint verdict a calibration takes --runs; after it, the runs that the step
  // and the noise need (often one). While a measurement is about to end (it may be the
  // verdict, or it narrows the interval) the workers wait for it, as probes do.
  const bool hold = !input.baselines_settled && input.calibration_runs > 1 &&
                    WaitForResultDueSoon(input, *state, now);
  for (const std::string& worker : ordered) {
    if (!state->Room()) break;
    if (input.search->Done()) {
      if (state->Owes(worker)) state->Calibrate(worker, plan);
      continue;
    }
    if (hold) continue;
    if (allowed > 0) {
      --allowed;
      state->Calibrate(worker, plan);
      continue;
    }
    if (!state->Worker(worker).waits_for_baselines) probing->push_back(worker);
  }
}

// The number of bisect probes the `probing` idle workers place now (step 5 of the policy):
// capped by max_workers, and none while they wait for a result due soon.
int ProbeBudget(const DispatchInput& input, absl::Time now, const PlanState& state,
                size_t probing) {
  int budget = static_cast<int>(probing);
  if (input.max_workers > 0) budget = std::min(budget, input.max_workers - state.in_flight());
  // A probe about to report narrows the interval any moment: new points placed now would split
  // the old interval and many would be cancelled. A calibration or baseline about to end frees
  // a worker whose point is better placed together with these. Idle workers wait for it (the
  // result dispatches again); a measurement running late does not hold them.
  if (budget > 0 && !input.chosen_points.has_value() && WaitForResultDueSoon(input, state, now)) {
    budget = 0;
  }
  return budget;
}

// How many workers not asking now will probe in a moment, beside the `budget` points planned
// now: calibrated workers that take part and owe nothing, whose task ended within
// kReturningWithin of `now`, as many as the cap on tasks in flight (those running and those this
// plan handed out so far, `state`) leaves room for. None before the baselines are settled (the
// first wave plans its own second wave).
int ReturningProbers(const DispatchInput& input, const PlanState& state, absl::Time now,
                     int budget) {
  if (!input.baselines_settled) return 0;
  int returning = 0;
  for (const FreedWorker& freed : input.freed) {
    auto known = input.workers.find(freed.worker);
    if (known == input.workers.end() || now - freed.ended > kReturningWithin) continue;
    const DispatchWorker& worker = known->second;
    if (worker.quarantined || worker.gone || !worker.calibration_started || worker.must_calibrate ||
        worker.owes_calibration) {
      continue;
    }
    ++returning;
  }
  if (input.max_workers > 0) {
    returning = std::min(returning, input.max_workers - state.in_flight() - budget);
  }
  return std::max(0, returning);
}

// The `budget` points to probe now: the job's chosen points, else the search's split. nullopt
// when the split breaks the round bound while a result of an earlier round is still to come.
std::optional<std::vector<int>> PlanPoints(const DispatchInput& input, absl::Time now,
                                           const PlanState& state, int budget) {
  if (input.chosen_points.has_value()) {
    return std::vector<int>(
        input.chosen_points->begin(),
        input.chosen_points->begin() + std::min<size_t>(budget, input.chosen_points->size()));
  }
  // The endpoint verdict comes after the first wave when GOOD is measured beside BAD; else the
  // first wave's points leave room for a second wave of the same round, or for the points of
  // workers about to ask (kReturningWithin).
  const bool second_wave = input.first_wave && !state.OtherCalibrationStarted();
  const int planned =
      budget + std::max(second_wave ? 1 : 0, ReturningProbers(input, state, now, budget));
  std::vector<int> points = planned > budget ? input.search->PlanProbes(budget, planned)
                                             : input.search->PlanProbes(budget);
  // Points that leave more than the rounds left can split wait, when a result of an earlier
  // round is still to come: it narrows the interval without deepening it, and the points placed
  // after it split what is left within the bound (decision 139).
  if (!PointsKeepRoundBound(*input.search, points, input.commit_count, state.Slots(),
                            input.round) &&
      EarlierRoundInFlight(state.running(), input.round, input.spans, now)) {
    return std::nullopt;
  }
  return points;
}

// Which of `points` went to which of the probing workers so far.
struct Placement {
  std::vector<bool> point_placed;
  std::vector<bool> worker_busy;
};

// The commits of a worker a point may move onto: DispatchWorker::anchors or DispatchWorker::built.
using SnapTargets = std::vector<int> DispatchWorker::*;

// For point `points[i]`: the probing worker not yet busy (its index in `probing`) with the commit
// among its `targets` closest to the point, strictly inside the open interval, at most `snap`
// away and not another point's (`taken`), and that commit; {-1, -1} when there is none.
std::pair<int, int> ClosestTarget(const DispatchInput& input, const std::vector<int>& points,
                                  size_t i, const std::vector<std::string>& probing,
                                  SnapTargets targets, double snap, const std::set<int>& taken,
                                  PlanState* state, const Placement& placement) {
  int best_worker = -1;
  int best_commit = -1;
  for (size_t w = 0; w < probing.size(); ++w) {
    if (placement.worker_busy[w]) continue;
    for (int commit : state->Worker(probing[w]).*targets) {
      if (commit <= input.search->last_good() || commit >= input.search->first_bad() ||
          (taken.count(commit) > 0 && commit != points[i]) || std::abs(commit - points[i]) > snap) {
        continue;
      }
      if (best_commit < 0 || std::abs(commit - points[i]) < std::abs(best_commit - points[i])) {
        best_commit = commit;
        best_worker = static_cast<int>(w);
      }
    }
  }
  return {best_worker, best_commit};
}

// Hands each point not yet placed that one of a probing worker's `targets` is close to (within
// `snap`; ClosestTarget) to that worker, moved onto that commit; with `keep_round_bound`, only
// while the points moved so far still keep the round bound (PointsKeepRoundBound).
void SnapProbes(const DispatchInput& input, std::vector<int> points,
                const std::vector<std::string>& probing, SnapTargets targets, double snap,
                bool keep_round_bound, PlanState* state, Placement* placement, DispatchPlan* plan) {
  // A commit in flight (being measured, or measured and awaiting its verdict) is no target: a
  // second probe of it would give the commit two verdicts.
  std::set<int> taken(points.begin(), points.end());
  for (int index : input.search->InFlight()) taken.insert(index);
  for (size_t i = 0; i < points.size(); ++i) {
    if (placement->point_placed[i]) continue;
    const auto [worker, commit] =
        ClosestTarget(input, points, i, probing, targets, snap, taken, state, *placement);
    if (worker < 0) continue;
    std::vector<int> moved = points;
    moved[i] = commit;
    if (keep_round_bound && !PointsKeepRoundBound(*input.search, moved, input.commit_count,
                                                  state->Slots(), input.round)) {
      continue;
    }
    taken.erase(points[i]);
    taken.insert(commit);
    points = std::move(moved);
    placement->point_placed[i] = true;
    placement->worker_busy[worker] = true;
    plan->assignments.push_back({DispatchAssignment::Kind::kProbe, probing[worker], "", commit});
  }
}

// Hands each point near a cached commit of a probing worker (an anchor) to that worker, moved
// onto the anchor: the measurement verifies its cache (see ResultReuse) and splits as well.
void AssignAnchoredProbes(const DispatchInput& input, const std::vector<int>& points,
                          const std::vector<std::string>& probing, PlanState* state,
                          Placement* placement, DispatchPlan* plan) {
  const int interval = input.search->first_bad() - input.search->last_good();
  // In the first wave nothing is known yet and one agreeing measurement makes a worker's whole
  // cache usable: its cached commit nearest to a point anywhere in the interval will do.
  const double snap = input.first_wave ? interval : kAnchorSnapFraction * interval;
  SnapProbes(input, points, probing, &DispatchWorker::anchors, snap, /*keep_round_bound=*/false,
             state, placement, plan);
}

// Hands each point not yet placed that a commit already built where a probing worker reads builds
// is close to (BuiltSnapDistance) to that worker, moved onto the closest such commit, while the
// points moved so far still keep the round bound: the probe then fetches or reuses the build
// instead of making it.
void AssignBuiltProbes(const DispatchInput& input, const std::vector<int>& points,
                       const std::vector<std::string>& probing, PlanState* state,
                       Placement* placement, DispatchPlan* plan) {
  const int snap = BuiltSnapDistance(input.search->first_bad() - input.search->last_good(),
                                     static_cast<int>(points.size()));
  if (snap <= 0) return;
  SnapProbes(input, points, probing, &DispatchWorker::built, snap, /*keep_round_bound=*/true, state,
             placement, plan);
}

// Hands the points not yet placed to the probing workers not yet busy, each to the one whose
// checkout is nearest (PairNearest): a checkout costs about one file write per commit between
// the two.
void AssignNearestProbes(const DispatchInput& input, const std::vector<int>& points,
                         const std::vector<std::string>& probing, const Placement& placement,
                         PlanState* state, DispatchPlan* plan) {
  std::vector<int> rest_points;
  for (size_t i = 0; i < points.size(); ++i) {
    if (!placement.point_placed[i]) rest_points.push_back(points[i]);
  }
  std::vector<std::string> rest_workers;
  std::vector<int> checkouts;
  for (size_t w = 0; w < probing.size(); ++w) {
    if (placement.worker_busy[w]) continue;
    rest_workers.push_back(probing[w]);
    checkouts.push_back(state->Worker(probing[w]).checked_out);
  }
  for (const auto& [w, i] : PairNearest(checkouts, rest_points, input.commit_count)) {
    plan->assignments.push_back(
        {DispatchAssignment::Kind::kProbe, rest_workers[w], "", rest_points[i]});
  }
}

}  // namespace

DispatchPlan PlanDispatch(const DispatchInput& input, absl::Time now) {
  DispatchPlan plan;
  PlanState state(input);
  std::vector<std::string> probing;
  std::vector<std::string> uncalibrated;
  DispatchIdle(input, &state, &plan, &probing, &uncalibrated);
  if (!uncalibrated.empty()) {
    DispatchUncalibrated(input, now, uncalibrated, &state, &plan, &probing);
  }
  const int budget = ProbeBudget(input, now, state, probing.size());
  if (budget <= 0) return plan;
  const std::optional<std::vector<int>> points = PlanPoints(input, now, state, budget);
  if (!points.has_value()) return plan;
  // Points near a worker's cached commit go to it first; the others go to the idle worker whose
  // checkout is nearest (closest pair first).
  Placement placement{std::vector<bool>(points->size(), false),
                      std::vector<bool>(probing.size(), false)};
  AssignAnchoredProbes(input, *points, probing, &state, &placement, &plan);
  AssignBuiltProbes(input, *points, probing, &state, &placement, &plan);
  AssignNearestProbes(input, *points, probing, placement, &state, &plan);
  return plan;
}

int RoundOfNewProbes(const BisectSearch& search, const ProbeRows& probes, int max_round_recorded,
                     bool by_results) {
  if (search.graph() != nullptr || by_results) return max_round_recorded + 1;
  int depth = 0;
  const int ends[2] = {search.last_good(), search.first_bad()};
  const v1::Verdict sides[2] = {v1::VERDICT_GOOD, v1::VERDICT_BAD};
  for (int i = 0; i < 2; ++i) {
    const int row = DecidingProbe(probes, ends[i], sides[i]);
    if (row >= 0) depth = std::max(depth, probes.Get(row).round());
  }
  return depth + 1;
}

}  // namespace kbisect
