// Copyright 2026 The kbisect Authors.

#include "common/search/commit_graph_search.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace kbisect {
namespace {

using Bits = std::vector<uint64_t>;

int CountBits(const Bits& bits) {
  int count = 0;
  for (uint64_t word : bits) count += __builtin_popcountll(word);
  return count;
}

int CountCommonBits(const Bits& a, const Bits& b) {
  int count = 0;
  for (size_t i = 0; i < a.size(); ++i) count += __builtin_popcountll(a[i] & b[i]);
  return count;
}

bool HasBit(const Bits& bits, int index) { return (bits[index / 64] >> (index % 64)) & 1U; }

void SetBit(Bits* bits, int index) { (*bits)[index / 64] |= uint64_t{1} << (index % 64); }

// Splits every class of `classes` by `probe` (its ancestors and the rest), dropping empty parts.
void SplitClasses(const Bits& ancestors, std::vector<Bits>* classes) {
  std::vector<Bits> next;
  next.reserve(classes->size() * 2);
  for (const Bits& group : *classes) {
    Bits inside(group.size());
    Bits outside(group.size());
    bool any_inside = false;
    bool any_outside = false;
    for (size_t i = 0; i < group.size(); ++i) {
      inside[i] = group[i] & ancestors[i];
      outside[i] = group[i] & ~ancestors[i];
      any_inside |= inside[i] != 0;
      any_outside |= outside[i] != 0;
    }
    if (any_inside) next.push_back(std::move(inside));
    if (any_outside) next.push_back(std::move(outside));
  }
  *classes = std::move(next);
}

}  // namespace

absl::StatusOr<CommitGraphSearch> CommitGraphSearch::Create(std::vector<std::vector<int>> parents) {
  if (parents.size() < 2) {
    return absl::InvalidArgumentError("a commit graph needs GOOD and at least one commit");
  }
  if (!parents[0].empty()) {
    return absl::InvalidArgumentError("node 0 (GOOD) must have no parents in the range");
  }
  CommitGraphSearch search;
  search.n_ = static_cast<int>(parents.size()) - 1;
  search.words_ = (search.n_ + 1 + 63) / 64;
  auto graph = std::make_shared<Graph>();
  graph->ancestors.assign(parents.size(), Bits(search.words_));
  for (int i = 0; i <= search.n_; ++i) {
    Bits& own = graph->ancestors[i];
    SetBit(&own, i);
    for (int parent : parents[i]) {
      if (parent < 0 || parent >= i) {
        return absl::InvalidArgumentError(absl::StrCat("parent ", parent, " of node ", i,
                                                       " is not an earlier node of the range"));
      }
      const Bits& inherited = graph->ancestors[parent];
      for (int w = 0; w < search.words_; ++w) own[w] |= inherited[w];
    }
  }
  for (int i = 1; i <= search.n_; ++i) {
    if (!HasBit(graph->ancestors[search.n_], i)) {
      return absl::InvalidArgumentError(
          absl::StrCat("node ", i, " is not an ancestor of BAD (node ", search.n_, ")"));
    }
  }
  graph->parents = std::move(parents);
  search.candidates_ = graph->ancestors[search.n_];
  for (int w = 0; w < search.words_; ++w) search.candidates_[w] &= ~graph->ancestors[0][w];
  search.graph_ = std::move(graph);
  search.Recount();
  search.verdicts_[0] = v1::VERDICT_GOOD;
  search.verdicts_[search.n_] = v1::VERDICT_BAD;
  return search;
}

const std::vector<int>& CommitGraphSearch::Parents(int index) const {
  static const std::vector<int> kNone;
  if (index < 0 || index > n_) return kNone;
  return graph_->parents[index];
}

bool CommitGraphSearch::IsAncestor(int ancestor, int descendant) const {
  if (ancestor < 0 || ancestor > n_ || descendant < 0 || descendant > n_) return false;
  return HasBit(AncestorsOf(descendant), ancestor);
}

void CommitGraphSearch::Recount() { candidate_count_ = CountBits(candidates_); }

bool CommitGraphSearch::IsCandidate(int index) const {
  return index >= 0 && index <= n_ && HasBit(candidates_, index);
}

bool CommitGraphSearch::Eligible(int index) const {
  return IsCandidate(index) && verdicts_.find(index) == verdicts_.end() &&
         in_flight_.find(index) == in_flight_.end();
}

bool CommitGraphSearch::Splits(int index) const {
  if (index < 0 || index > n_) return false;
  const int inside = CountCommonBits(candidates_, AncestorsOf(index));
  return inside > 0 && inside < candidate_count_;
}

std::vector<int> CommitGraphSearch::Choose(int count) const {
  std::vector<int> chosen;
  if (count <= 0) return chosen;
  std::vector<Bits> classes = {candidates_};
  for (int probe : in_flight_) {
    if (Splits(probe)) SplitClasses(AncestorsOf(probe), &classes);
  }
  std::vector<int> eligible;
  for (int index = 1; index <= n_; ++index) {
    if (Eligible(index)) eligible.push_back(index);
  }
  std::vector<bool> taken(eligible.size(), false);
  for (int round = 0; round < count; ++round) {
    // Adding p turns a class of s into parts of a and s - a, lowering sum(|class|^2) by
    // 2 a (s - a): the best probe has the largest sum of a (s - a).
    int64_t best_gain = 0;
    int best = -1;
    for (size_t e = 0; e < eligible.size(); ++e) {
      if (taken[e]) continue;
      const Bits& ancestors = AncestorsOf(eligible[e]);
      int64_t gain = 0;
      for (const Bits& group : classes) {
        const int64_t size = CountBits(group);
        const int64_t inside = CountCommonBits(group, ancestors);
        gain += inside * (size - inside);
      }
      if (gain > best_gain) {
        best_gain = gain;
        best = static_cast<int>(e);
      }
    }
    if (best < 0) break;
    taken[best] = true;
    chosen.push_back(eligible[best]);
    SplitClasses(AncestorsOf(eligible[best]), &classes);
  }
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

std::vector<int> CommitGraphSearch::PlanProbes(int count) const { return Choose(count); }

int CommitGraphSearch::LargestClassWith(const std::vector<int>& points) const {
  std::vector<Bits> classes = {candidates_};
  for (int probe : in_flight_) {
    if (Splits(probe)) SplitClasses(AncestorsOf(probe), &classes);
  }
  for (int probe : points) {
    if (Splits(probe)) SplitClasses(AncestorsOf(probe), &classes);
  }
  int largest = 0;
  for (const Bits& group : classes) largest = std::max(largest, CountBits(group));
  return largest;
}

int CommitGraphSearch::LastGoodAncestor(int index) const {
  if (index < 0 || index > n_) return 0;
  int best = 0;
  for (const auto& [probe, verdict] : verdicts_) {
    if (verdict == v1::VERDICT_GOOD && HasBit(AncestorsOf(index), probe))
      best = std::max(best, probe);
  }
  return best;
}

std::vector<int> CommitGraphSearch::NextProbes(int count) {
  std::vector<int> result = Choose(count);
  in_flight_.insert(result.begin(), result.end());
  return result;
}

void CommitGraphSearch::MarkInFlight(int index) {
  if (index < 0 || index > n_) return;
  in_flight_.insert(index);
}

absl::Status CommitGraphSearch::Record(int index, v1::Verdict verdict) {
  verdict = SkipUnlessGoodOrBad(verdict);
  if (index < 0 || index > n_) {
    return absl::InvalidArgumentError(
        absl::StrCat("index ", index, " is outside the range [0, ", n_, "]"));
  }
  Bits next = candidates_;
  const Bits& ancestors = AncestorsOf(index);
  if (verdict == v1::VERDICT_GOOD) {
    for (int w = 0; w < words_; ++w) next[w] &= ~ancestors[w];
  } else if (verdict == v1::VERDICT_BAD) {
    for (int w = 0; w < words_; ++w) next[w] &= ancestors[w];
  }
  if (verdict != v1::VERDICT_SKIP && CountBits(next) == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        verdict == v1::VERDICT_GOOD ? "good" : "bad", " verdict at index ", index,
        verdict == v1::VERDICT_GOOD ? " contradicts the bad verdicts: every commit that may be the "
                                      "first bad one is an ancestor of it"
                                    : " contradicts the good verdicts: no commit that may be the "
                                      "first bad one is an ancestor of it"));
  }
  in_flight_.erase(index);
  if (verdict == v1::VERDICT_SKIP) {
    verdicts_.try_emplace(index, v1::VERDICT_SKIP);
    return absl::OkStatus();
  }
  verdicts_[index] = verdict;
  candidates_ = std::move(next);
  Recount();
  return absl::OkStatus();
}

void CommitGraphSearch::Abandon(int index) { in_flight_.erase(index); }

std::vector<int> CommitGraphSearch::UselessInFlight() const {
  std::vector<int> result;
  for (int index : in_flight_) {
    if (!Splits(index)) result.push_back(index);
  }
  return result;
}

std::vector<int> CommitGraphSearch::InFlight() const {
  return std::vector<int>(in_flight_.begin(), in_flight_.end());
}

bool CommitGraphSearch::Done() const {
  for (int index : in_flight_) {
    if (Splits(index)) return false;
  }
  for (int index = 1; index <= n_; ++index) {
    if (Eligible(index) && Splits(index)) return false;
  }
  return true;
}

std::vector<int> CommitGraphSearch::Candidates() const {
  std::vector<int> result;
  result.reserve(candidate_count_);
  for (int index = 0; index <= n_; ++index) {
    if (HasBit(candidates_, index)) result.push_back(index);
  }
  return result;
}

std::optional<v1::Verdict> CommitGraphSearch::VerdictAt(int index) const {
  auto it = verdicts_.find(index);
  if (it == verdicts_.end()) return std::nullopt;
  return it->second;
}

}  // namespace kbisect
