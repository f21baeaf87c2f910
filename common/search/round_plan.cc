// Copyright 2026 The kbisect Authors.
#include "common/search/round_plan.h"

#include <algorithm>
#include <map>
#include <utility>

namespace kbisect {
namespace {

int CeilDiv(int a, int b) { return (a + b - 1) / b; }

// Rounds needed from a round start with `candidates` positions and `owed` calibrations, every
// slot free. Memoised in `memo`.
class RoundCounter {
 public:
  explicit RoundCounter(int workers) : workers_(workers) {}

  // The best plan for a round with `busy` slots taken: the largest c among the fastest.
  RoundPlan Plan(int candidates, int owed, int busy) {
    RoundPlan best;
    best.rounds = -1;
    if (candidates <= 1 && owed == 0) return RoundPlan{};
    const int free = workers_ - busy;
    for (int c = 0; c <= std::min(owed, free); ++c) {
      const int probes = free - c;
      // A round in which nothing happens is no plan (only possible with every slot free).
      if (probes == 0 && c == 0 && busy == 0) continue;
      const int next = candidates <= 1 ? candidates : CeilDiv(candidates, probes + 1);
      const int rounds = 1 + Rounds(next, owed - c);
      if (best.rounds < 0 || rounds <= best.rounds) {
        best = RoundPlan{c, candidates <= 1 ? 0 : probes, rounds};
      }
    }
    return best;
  }

 private:
  int Rounds(int candidates, int owed) {
    if (candidates <= 1) return CeilDiv(owed, workers_);
    auto it = memo_.find({candidates, owed});
    if (it != memo_.end()) return it->second;
    const int rounds = Plan(candidates, owed, 0).rounds;
    memo_.emplace(std::make_pair(candidates, owed), rounds);
    return rounds;
  }

  int workers_;
  std::map<std::pair<int, int>, int> memo_;
};

}  // namespace

RoundPlan PlanRound(int candidates, int workers, int owed, int busy) {
  workers = std::max(1, workers);
  candidates = std::max(1, candidates);
  owed = std::clamp(owed, 0, workers);
  busy = std::clamp(busy, 0, workers);
  return RoundCounter(workers).Plan(candidates, owed, busy);
}

}  // namespace kbisect
