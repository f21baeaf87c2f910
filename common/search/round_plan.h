// Copyright 2026 The kbisect Authors.
//
// Plans how a job's workers split one probing round between bisect probes and GOOD
// calibrations, so that calibrating every worker costs as few rounds as possible.
//
// A worker's probes are judged against its own GOOD calibration (hardware drift, see the
// coordinator's BisectJob). A worker that probes before it has calibrated produces provisional
// verdicts that only count once it calibrates, so every uncalibrated worker owes one
// calibration before the job can finish. Calibrating everyone first costs a whole round; probing
// with everyone and calibrating at the end costs a round too. PlanRound spends the slack of the
// k-ary search instead: with W workers, ceil(log_{W+1} n) rounds are often more than the interval
// needs (1,000 commits on 7 workers need 4 rounds that could split 4,096), so some workers can
// calibrate in a round without the search needing an extra one.
//
// The model is synchronous rounds of W worker slots. In a round, `busy` slots do other work
// (baselines, extra runs), c of the owed calibrations run, and the other W - busy - c slots probe,
// splitting an interval of m candidate positions into pieces of at most ceil(m / (probes + 1)).
// The job is over when one candidate is left and nothing is owed. PlanRound explores every
// choice of c in every future round (memoised over (m, owed), so the cost is small) and returns
// this round's c of the best plan: the fewest rounds; among those, the most splitting capacity
// (the product of probes + 1 over the rounds), so that a split that comes out uneven (workers
// freed one at a time) does not cost a round; among those, the most calibrations now, which
// make verdicts final sooner and find an offset GPU before it misleads many probes. For 1,000
// commits on 7 workers: 5 probes in every round (capacity 6^4 = 1,296), rather than 2, 5, 6, 7
// (capacity 1,008, no slack).
//
// Pure and deterministic; no I/O.
#ifndef KBISECT_COMMON_SEARCH_ROUND_PLAN_H_
#define KBISECT_COMMON_SEARCH_ROUND_PLAN_H_

namespace kbisect {

struct RoundPlan {
  int calibrations = 0;  // Owed calibrations to run this round.
  int probes = 0;        // Slots left for bisect probes this round.
  int rounds = 0;        // Rounds to finish, this one included (0 when nothing is left to do).
};

// Plans the round starting now. `candidates` is the number of positions the culprit may still
// be at (last_good..first_bad exclusive of last_good: 1 means found), `workers` the slots of a
// round (>= 1), `owed` the calibrations still owed (running ones included: they are part of this
// round), `busy` the slots taken this round by other work. Values out of range are clamped:
// candidates to >= 1, workers to >= 1, owed and busy to 0..workers.
RoundPlan PlanRound(int candidates, int workers, int owed, int busy);

}  // namespace kbisect

#endif  // KBISECT_COMMON_SEARCH_ROUND_PLAN_H_
