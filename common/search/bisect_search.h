// Copyright 2026 The kbisect Authors.
//
// The k-ary bisection search: a pure value type that knows which commits of a `good..bad` range
// are known good, known bad, skipped or being probed, and picks the next commits to probe.
//
// Commits are indices 0..n of the first-parent path: index 0 is GOOD (known good) and index n is
// BAD (known bad). The culprit (the first bad commit) is some index in 1..n. The model is
// monotone: every index below the culprit is good, every index at or above it is bad.
//
// With W idle workers, NextProbes(W) picks the points that split the open interval
// (last_good, first_bad) into W+1 near-equal pieces, so that with deterministic verdicts the
// search needs at most ceil(log_{W+1} n) synchronous rounds (see EstimateRounds). Results may
// arrive in any order: Record narrows the interval at once, UselessInFlight names the probes the
// caller should cancel, and freed workers get new points from NextProbes.
//
// Over a commit graph (`--no-first-parent`, BisectSearch::OverGraph) the same calls are answered
// by a CommitGraphSearch (commit_graph_search.h), since "bad" is not monotone along any one
// list of a graph's commits: the indices are those of the topological list, the candidates are
// the commits that may still be the culprit, NextProbes follows git's weight rule generalised to
// W probes, and the interval (last_good, first_bad] is the smallest one holding the candidates,
// for the callers that ask whether an index may still matter. Once one candidate c is left,
// first_bad() is c and last_good() its recorded-good ancestor of the highest index (GOOD at
// worst): in a graph c's parents may be known good only through other commits' verdicts.
//
// The class does no I/O and is not thread-safe; copy it freely.
//
//   BisectSearch search(n);
//   while (!search.Done()) {
//     for (int index : search.NextProbes(idle_workers)) Launch(index);
//     ... on each result: RETURN_IF_ERROR(search.Record(index, verdict));
//     for (int index : search.UselessInFlight()) { Cancel(index); search.Abandon(index); }
//   }
//   std::vector<int> culprits = search.Candidates();  // size 1: the exact culprit
//
#ifndef KBISECT_COMMON_SEARCH_BISECT_SEARCH_H_
#define KBISECT_COMMON_SEARCH_BISECT_SEARCH_H_

#include <optional>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/btree_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/search/commit_graph_search.h"
#include "common/search/verdict.h"

namespace kbisect {

// The state of one k-ary bisection over indices 0..n. A copyable value type.
class BisectSearch {
 public:
  // Creates the search over indices 0..n with index 0 known good and index n known bad.
  // Requires n >= 1; a smaller n is treated as 1.
  explicit BisectSearch(int n);

  // Creates the search over a commit graph: parents[i] lists the in-range parents of index i of
  // the topological list (index 0 GOOD, the last one BAD), as CommitGraphSearch::Create takes
  // them, and returns its errors.
  static absl::StatusOr<BisectSearch> OverGraph(std::vector<std::vector<int>> parents);

  BisectSearch(const BisectSearch&) = default;
  BisectSearch& operator=(const BisectSearch&) = default;
  BisectSearch(BisectSearch&&) = default;
  BisectSearch& operator=(BisectSearch&&) = default;

  // Returns the index of the known-bad end of the range (the n given to the constructor).
  int n() const { return n_; }

  // Returns the graph search when this search is over a commit graph, else nullptr.
  const CommitGraphSearch* graph() const { return graph_ ? &*graph_ : nullptr; }

  // Returns the largest index known to be good. Starts at 0.
  int last_good() const { return last_good_; }

  // Returns the smallest index known to be bad. Starts at n.
  int first_bad() const { return first_bad_; }

  // Picks up to `count` new indices to probe and marks them in flight; returns them ascending.
  //
  // The new indices are untested, not skipped, not in flight and strictly inside
  // (last_good, first_bad). Together with the useful in-flight probes they split the open
  // interval as evenly as possible: the new points are allocated among the gaps between
  // consecutive known points (last_good, the in-flight probes, first_bad) greedily by the largest
  // gap/(points+1), which minimises the largest resulting piece; within a gap of size g holding m
  // new points they are placed at a + floor(i*g/(m+1)) (one point in a gap of 3 at a + 2, the
  // commit `git bisect` tests there; decision 227), each snapped to the nearest eligible index
  // when the ideal one is skipped or already taken. Returns fewer indices (possibly none) when
  // fewer eligible ones remain. A count <= 0 returns none.
  std::vector<int> NextProbes(int count);

  // The indices NextProbes(count) would return, without marking them in flight: a dispatch plan
  // chooses its points with this and marks those it hands out with MarkInFlight.
  std::vector<int> PlanProbes(int count) const;

  // `count` of the points PlanProbes(planned) would return (planned >= count), every other one,
  // so that a second wave of planned - count points placed later by PlanProbes (into the largest
  // gaps these leave) completes the even split of `planned`. For workers that probe twice in one
  // round, e.g. while the baselines are measured.
  std::vector<int> PlanProbes(int count, int planned) const;

  // Marks `index` in flight, for callers that choose their own points. In-flight indices are not
  // returned by NextProbes and split the interval like known points. Indices outside [0, n] are
  // ignored.
  void MarkInFlight(int index);

  // Records the verdict for `index` (in flight or not) and stops tracking it as in flight.
  // A good verdict raises last_good and a bad one lowers first_bad at once; verdicts outside the
  // open interval are recorded but never widen it. A skip never replaces a good or bad verdict
  // already recorded for the index, while a good or bad verdict replaces an earlier skip.
  //
  // Returns InvalidArgument if `index` is outside [0, n], and FailedPrecondition on a
  // contradiction: a good verdict at or above first_bad, or a bad verdict at or below last_good.
  // On error the state is left unchanged.
  absl::Status Record(int index, v1::Verdict verdict);

  // Stops tracking the in-flight probe `index` without a verdict (its worker died or it was
  // cancelled); the index becomes eligible for NextProbes again. No-op if it is not in flight.
  void Abandon(int index);

  // Returns, ascending, the in-flight probes that can no longer narrow the interval because they
  // lie outside the open interval (last_good, first_bad). The caller should cancel them and call
  // Abandon (or Record, if a result arrives anyway). Does not change the state.
  std::vector<int> UselessInFlight() const;

  // Returns all in-flight probes, ascending.
  std::vector<int> InFlight() const;

  // Returns true when no eligible index remains strictly inside (last_good, first_bad) and no
  // useful probe is in flight, i.e. nothing more can be learned.
  bool Done() const;

  // Returns, ascending, the indices where the culprit may still be: last_good+1 .. first_bad.
  // Once Done, every index strictly between last_good and first_bad is skipped, so the result is
  // those skipped indices plus first_bad ("only skipped commits left"); a single element is the
  // exact culprit.
  std::vector<int> Candidates() const;

  // Returns first_bad - last_good, the number of positions the culprit may still be at (over a
  // graph: the number of candidates).
  int RemainingCandidates() const {
    return graph_ ? graph_->RemainingCandidates() : first_bad_ - last_good_;
  }

  // The widest piece (b - a) the interval is cut into by the in-flight probes inside it and
  // `points` (indices outside the interval are ignored). Over a graph: the largest number of
  // candidates an outcome of those probes can leave (CommitGraphSearch::LargestClassWith).
  int LargestPieceWith(const std::vector<int>& points) const;

  // Returns ceil(log_{workers+1}(n)) computed exactly in integers: the smallest r with
  // (workers+1)^r >= n, the number of synchronous rounds the search needs at most with
  // deterministic verdicts. Returns 0 for n <= 1; workers < 1 is treated as 1.
  static int EstimateRounds(int n, int workers);

  // The number of probes the search needs at most for `n` candidates with `workers` synchronous
  // workers and deterministic verdicts: each round places min(workers, candidates - 1) points
  // and leaves ceil(candidates / (points + 1)) candidates. Returns 0 for n <= 1; workers < 1 is
  // treated as 1.
  static int EstimateProbes(int n, int workers);

  // Returns the verdict recorded for `index` (index 0 is good and index n is bad from the start),
  // or nullopt if none was recorded. Verdicts merely implied by the interval are not reported.
  std::optional<v1::Verdict> VerdictAt(int index) const;

 private:
  // Returns the number of indices strictly inside (a, b) that carry a recorded verdict.
  int RecordedStrictlyInside(int a, int b) const;
  // Returns true if `index` is strictly inside the open interval, has no verdict and is not in
  // flight.
  bool Eligible(int index) const;
  // Over a graph: sets last_good_ and first_bad_ from the graph search's candidates.
  void SyncGraphBounds();

  int n_;
  int last_good_;
  int first_bad_;
  absl::btree_map<int, v1::Verdict> verdicts_;
  absl::btree_set<int> in_flight_;
  // Set over a commit graph: it then holds the verdicts and in-flight probes, and the members
  // above only the bounds.
  std::optional<CommitGraphSearch> graph_;
};

}  // namespace kbisect

#endif  // KBISECT_COMMON_SEARCH_BISECT_SEARCH_H_
