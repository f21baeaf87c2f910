// Copyright 2026 The kbisect Authors.
//
// The bisection search over a commit graph (`--no-first-parent`): a pure value type that knows
// which commits of a `good..bad` range may still be the first bad commit, and picks the commits
// to probe next so that each round leaves as few of them as possible.
//
// The range is a DAG given as parent lists: node 0 is GOOD (known good), nodes 1..n are the
// commits of `git rev-list --topo-order --reverse good..bad` (every parent before its children)
// and node n is BAD (known bad). Parents outside the range are ancestors of GOOD, hence good, and
// are left out. The model is git bisect's: there is one first bad commit, the culprit, and a
// commit is bad if and only if the culprit is one of its ancestors or the commit itself.
//
// The candidates are the commits that may be the culprit given the verdicts: at the start the
// ancestors of BAD that are not ancestors of GOOD (all of 1..n). A good verdict at p removes p's
// ancestors (p included); a bad verdict at p removes everything that is not an ancestor of p.
// A skip removes nothing; the skipped commit is never chosen again.
//
// The probe rule generalises git's weight rule. A probe p splits the candidates into those that
// are its ancestors (bad at p) and the rest (good at p); with W probes the culprit's verdicts at
// the W probes put it into one of up to 2^W classes. Assuming the culprit uniform over the
// candidates, the expected number of candidates left after the round is sum(|class|^2) / N.
// ChooseProbes adds probes one at a time, each the candidate that minimises that sum given the
// probes in flight and those already chosen (ties: the lower index). For W = 1 and nothing in
// flight this is exactly git's rule: the candidate whose number of candidate ancestors (itself
// included) is closest to half of the candidates, since w^2 + (N-w)^2 is least where w is
// nearest N/2.
//
// Probes are only ever chosen among the candidates, as git chooses them, so that the answer with
// skipped commits is the one git reports. The search is done when no candidate that could split
// the candidates is left untested and no useful probe is in flight: then Candidates() is the
// culprit (one commit) or git's "The first bad commit could be any of" list (with one worker, the
// skipped candidates and the lowest bad commit, exactly as git bisect prints them).
//
// Memory and time: the ancestor sets are bit sets, (n+1)^2 bits in all (12.5 MB for 10,000
// commits); choosing W probes costs O(W * N * classes * n / 64) word operations.
//
// The class does no I/O and is not thread-safe; copy it freely.
//
//   ASSIGN_OR_RETURN(CommitGraphSearch search, CommitGraphSearch::Create(parents));
//   while (!search.Done()) {
//     for (int index : search.NextProbes(idle_workers)) Launch(index);
//     ... on each result: RETURN_IF_ERROR(search.Record(index, verdict));
//     for (int index : search.UselessInFlight()) { Cancel(index); search.Abandon(index); }
//   }
//   std::vector<int> culprits = search.Candidates();  // size 1: the exact culprit
//
#ifndef KBISECT_COMMON_SEARCH_COMMIT_GRAPH_SEARCH_H_
#define KBISECT_COMMON_SEARCH_COMMIT_GRAPH_SEARCH_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/btree_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/search/verdict.h"

namespace kbisect {

// The state of one bisection over a commit graph. A copyable value type.
class CommitGraphSearch {
 public:
  // Creates the search over nodes 0..n, n = parents.size() - 1: parents[i] lists the in-range
  // parents of node i (each < i; node 0, GOOD, may be one). Node 0 is known good and node n known
  // bad. Returns InvalidArgument if there are fewer than two nodes, if node 0 has parents, if a
  // parent index is not below its child's, or if a node of 1..n is not an ancestor of n (the
  // range is then not good..bad).
  static absl::StatusOr<CommitGraphSearch> Create(std::vector<std::vector<int>> parents);

  CommitGraphSearch(const CommitGraphSearch&) = default;
  CommitGraphSearch& operator=(const CommitGraphSearch&) = default;
  CommitGraphSearch(CommitGraphSearch&&) = default;
  CommitGraphSearch& operator=(CommitGraphSearch&&) = default;

  // Returns the index of BAD (the number of commits in the range).
  int n() const { return n_; }

  // Returns the in-range parents of `index` (empty for an index outside [0, n]).
  const std::vector<int>& Parents(int index) const;

  // Returns true if `ancestor` is an ancestor of `descendant` or the same node.
  bool IsAncestor(int ancestor, int descendant) const;

  // Picks up to `count` new indices to probe (the rule in the file comment), marks them in
  // flight and returns them ascending. Returns fewer (possibly none) when fewer candidates can
  // still split the candidates. A count <= 0 returns none.
  std::vector<int> NextProbes(int count);

  // The indices NextProbes(count) would return, without marking them in flight.
  std::vector<int> PlanProbes(int count) const;

  // Marks `index` in flight, for callers that choose their own points. Indices outside [0, n]
  // are ignored.
  void MarkInFlight(int index);

  // Records the verdict for `index` (in flight or not) and stops tracking it as in flight.
  // A good verdict removes the ancestors of `index` from the candidates, a bad one every
  // candidate that is not an ancestor of `index`. A skip never replaces a good or bad verdict
  // already recorded for the index, while a good or bad verdict replaces an earlier skip.
  //
  // Returns InvalidArgument if `index` is outside [0, n], and FailedPrecondition on a
  // contradiction: a verdict that would leave no candidate (a good verdict at a commit every
  // candidate is an ancestor of, a bad one at a commit none of them is an ancestor of). On error
  // the state is left unchanged.
  absl::Status Record(int index, v1::Verdict verdict);

  // Stops tracking the in-flight probe `index` without a verdict. No-op if it is not in flight.
  void Abandon(int index);

  // Returns true if a verdict at `index` would remove some candidates whichever it is: some but
  // not all of the candidates are ancestors of `index`.
  bool Splits(int index) const;

  // Returns, ascending, the in-flight probes that no longer split the candidates. The caller
  // should cancel them and call Abandon (or Record, if a result arrives anyway).
  std::vector<int> UselessInFlight() const;

  // Returns all in-flight probes, ascending.
  std::vector<int> InFlight() const;

  // Returns true when no candidate without a verdict that splits the candidates is left and no
  // in-flight probe splits them: nothing more can be learned.
  bool Done() const;

  // Returns the candidates, ascending: once Done, the culprit (size 1) or the commits it could
  // be any of.
  std::vector<int> Candidates() const;

  // Returns true if `index` is a candidate.
  bool IsCandidate(int index) const;

  // Returns the number of candidates.
  int RemainingCandidates() const { return candidate_count_; }

  // Returns the largest number of candidates any outcome of the in-flight probes that split the
  // candidates and `points` can leave (the biggest class of candidates with the same verdicts
  // at all of them): the graph's counterpart of BisectSearch::LargestPieceWith.
  int LargestClassWith(const std::vector<int>& points) const;

  // Returns the recorded-good ancestor of `index` with the highest index (0, GOOD, at worst): the
  // nearest measured commit known to be without the culprit's change.
  int LastGoodAncestor(int index) const;

  // Returns the verdict recorded for `index` (index 0 is good and index n is bad from the start),
  // or nullopt if none was recorded. Verdicts merely implied by others are not reported.
  std::optional<v1::Verdict> VerdictAt(int index) const;

 private:
  using Bits = std::vector<uint64_t>;

  CommitGraphSearch() = default;

  // Returns true if `index` is a candidate with no verdict that is not in flight.
  bool Eligible(int index) const;
  // Returns the probes NextProbes would add to the in-flight ones given.
  std::vector<int> Choose(int count) const;
  void Recount();

  // The graph, shared by copies (build-ahead plans copy the search for each outcome).
  struct Graph {
    std::vector<std::vector<int>> parents;
    std::vector<Bits> ancestors;  // ancestors[i]: the ancestors of i, i included.
  };

  const Bits& AncestorsOf(int index) const { return graph_->ancestors[index]; }

  int n_ = 0;
  int words_ = 0;
  std::shared_ptr<const Graph> graph_;
  Bits candidates_;
  int candidate_count_ = 0;
  absl::btree_map<int, v1::Verdict> verdicts_;
  absl::btree_set<int> in_flight_;
};

}  // namespace kbisect

#endif  // KBISECT_COMMON_SEARCH_COMMIT_GRAPH_SEARCH_H_
