// Copyright 2026 The kbisect Authors.
//
// Lookback: finding GOOD when nobody knows it (`kbisect run --find-good BAD`). A nightly knows
// the bad commit, rarely the last good one. Lookback probes distances back from BAD on the
// first-parent chain, galloping (BAD~1, ~2, ~4, ... and the lookback's end last), a few at a
// time in parallel, until one is better than BAD; the bracket it found is then bisected. Pure:
// it says which distances to try and when the answer is known; the caller measures.
//
//   Lookback lookback(/*max_lookback=*/256);
//   for (int d : lookback.Next(workers)) Start(d);  // each compares BAD~d with BAD
//   lookback.Record(d, Lookback::Outcome::kNotBetter);
//   if (std::optional<int> good = lookback.Found()) Bisect(*good);
#ifndef KBISECT_COMMON_SEARCH_LOOKBACK_H_
#define KBISECT_COMMON_SEARCH_LOOKBACK_H_

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "absl/types/span.h"

namespace kbisect {

class Lookback {
 public:
  enum class Outcome {
    kBetter,         // BAD~d is better than BAD (by the job's min effect), or passes.
    kNotBetter,      // It is not: the step is further back.
    kUntestable,     // It cannot be measured (its build or benchmark fails): no information.
    kBeyondHistory,  // The first-parent chain is shorter than d.
  };

  // Distances up to `max_lookback` (at least 1).
  explicit Lookback(int max_lookback);

  // Up to `count` distances to try next, ascending, none tried before: the galloping sequence
  // 1, 2, 4, ..., 2^k < max_lookback, then max_lookback; never past a distance found beyond
  // the history. Marks them tried. None once Found or Exhausted.
  std::vector<int> Next(int count);

  // Records the outcome at a tried distance (others are ignored).
  void Record(int distance, Outcome outcome);

  // The GOOD to bisect from: the smallest distance found better, once every smaller distance
  // tried is known not to be (not better, or untestable). nullopt until then.
  std::optional<int> Found() const;

  // True when every distance the sequence has was tried and known, and none is better: there
  // is no GOOD within the lookback (or the history).
  bool Exhausted() const;

  // The largest distance known not better below Found() (0 when none: BAD itself), so the step
  // lies in (BAD~Found, BAD~LargestNotBetter].
  int LargestNotBetter() const;

  // The farthest distance the sequence may reach: max_lookback, or, once a distance was found
  // beyond the history, the farthest one tried below it (the root's distance is not known; a
  // caller that knows the chain's length passes it as max_lookback).
  int Reach() const;

  // Tried distances and their outcomes (nullopt: still running), ascending.
  const std::map<int, std::optional<Outcome>>& tried() const { return tried_; }

 private:
  // The galloping sequence up to Reach().
  std::vector<int> Sequence() const;

  int max_lookback_;
  int history_end_ = 0;  // Smallest distance beyond the history, 0 while none is known.
  std::map<int, std::optional<Outcome>> tried_;
};

// The most lookback jobs a deterministic step at distance `d` (1 <= d <= max_lookback) takes
// before Found() with `workers` tried per round: ceil(k / workers) rounds, k being the position
// of the first sequence element >= d (1-based).
int LookbackRoundsBound(int d, int max_lookback, int workers);

// `--since DATE`: how far back from BAD the lookback may go when only commits at or after
// `since` (seconds since the epoch) count. `chain_times` are the committer times of BAD~1,
// BAD~2, ... in chain order (as far as the caller walked); the first commit older than `since`
// ends the chain, as `git log --first-parent --since` stops there, so the answer is the number
// of leading times >= since, at most `max_lookback`. 0: not even BAD~1 is that recent.
int LookbackReachSince(absl::Span<const int64_t> chain_times, int64_t since, int max_lookback);

}  // namespace kbisect

#endif  // KBISECT_COMMON_SEARCH_LOOKBACK_H_
