// Copyright 2026 The kbisect Authors.
#include "common/search/round_plan.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

namespace kbisect {
namespace {

int CeilDiv(int a, int b) { return (a + b - 1) / b; }

// The value of a plan from some round on: fewer rounds first, then more splitting capacity (the
// log of the product of probes + 1 over the rounds that still split): at equal rounds, the plan
// with capacity to spare keeps its round count when a split comes out uneven.
struct PlanValue {
  int rounds = 0;
  double log_capacity = 0;
};

bool Better(const PlanValue& a, const PlanValue& b) {
  if (a.rounds != b.rounds) return a.rounds < b.rounds;
  return a.log_capacity > b.log_capacity + 1e-12;
}

// Plans rounds of `workers` slots, memoised over (candidates, owed) for rounds with every slot
// free.
class RoundCounter {
 public:
  explicit RoundCounter(int workers) : workers_(workers) {}

  // The best plan for a round with `busy` slots taken; among equally good ones, the one with the
  // most calibrations. Sets *value to the plan's value from this round on.
  RoundPlan Plan(int candidates, int owed, int busy, PlanValue* value) {
    RoundPlan best;
    PlanValue best_value;
    bool found = false;
    if (candidates <= 1 && owed == 0) {
      *value = PlanValue{};
      return RoundPlan{};
    }
    const int free = workers_ - busy;
    for (int c = 0; c <= std::min(owed, free); ++c) {
      const int probes = free - c;
      // A round in which nothing happens is no plan (only possible with every slot free).
      if (probes == 0 && c == 0 && busy == 0) continue;
      const bool splits = candidates > 1;
      const int next = splits ? CeilDiv(candidates, probes + 1) : candidates;
      PlanValue rest = Value(next, owed - c);
      PlanValue here{1 + rest.rounds,
                     rest.log_capacity + (splits ? std::log(static_cast<double>(probes + 1)) : 0)};
      if (!found || Better(here, best_value) || !Better(best_value, here)) {
        found = true;
        best = RoundPlan{c, splits ? probes : 0, here.rounds};
        best_value = here;
      }
    }
    *value = best_value;
    return best;
  }

 private:
  PlanValue Value(int candidates, int owed) {
    if (candidates <= 1) return PlanValue{CeilDiv(owed, workers_), 0};
    auto it = memo_.find({candidates, owed});
    if (it != memo_.end()) return it->second;
    PlanValue value;
    Plan(candidates, owed, 0, &value);
    memo_.emplace(std::make_pair(candidates, owed), value);
    return value;
  }

  int workers_;
  std::map<std::pair<int, int>, PlanValue> memo_;
};

}  // namespace

RoundPlan PlanRound(int candidates, int workers, int owed, int busy) {
  workers = std::max(1, workers);
  candidates = std::max(1, candidates);
  owed = std::clamp(owed, 0, workers);
  busy = std::clamp(busy, 0, workers);
  PlanValue value;
  return RoundCounter(workers).Plan(candidates, owed, busy, &value);
}

}  // namespace kbisect
