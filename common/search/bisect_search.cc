// Copyright 2026 The kbisect Authors.

#include "common/search/bisect_search.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <queue>

#include "absl/strings/str_cat.h"

namespace kbisect {
namespace {

// Where the i-th of m points evenly spread over the gap (a, b) ideally goes. One point in a gap
// of three (candidates a+1, a+2, b for the first bad) goes to a+2, as `git bisect` (2.39) puts
// it on a linear range; a+1 splits as well, and every other gap's midpoint, the floor of its
// half, is git's too. So at W=1 on a first-parent range kbisect probes the commits `git bisect
// --first-parent` tests, step for step (decision 227).
int IdealPoint(int a, int b, int i, int m) {
  const int64_t g = b - a;
  if (m == 1 && g == 3) return a + 2;
  return a + static_cast<int>(i * g / (m + 1));
}

}  // namespace

BisectSearch::BisectSearch(int n) : n_(std::max(n, 1)), last_good_(0), first_bad_(n_) {
  verdicts_[0] = v1::VERDICT_GOOD;
  verdicts_[n_] = v1::VERDICT_BAD;
}

absl::StatusOr<BisectSearch> BisectSearch::OverGraph(std::vector<std::vector<int>> parents) {
  absl::StatusOr<CommitGraphSearch> graph = CommitGraphSearch::Create(std::move(parents));
  if (!graph.ok()) return graph.status();
  BisectSearch search(graph->n());
  search.graph_.emplace(*std::move(graph));
  search.SyncGraphBounds();
  return search;
}

void BisectSearch::SyncGraphBounds() {
  const std::vector<int> candidates = graph_->Candidates();
  if (candidates.empty()) return;
  first_bad_ = candidates.back();
  last_good_ = candidates.size() == 1 ? graph_->LastGoodAncestor(candidates.front())
                                      : candidates.front() - 1;
}

int BisectSearch::RecordedStrictlyInside(int a, int b) const {
  int count = 0;
  for (auto it = verdicts_.upper_bound(a); it != verdicts_.end() && it->first < b; ++it) ++count;
  return count;
}

bool BisectSearch::Eligible(int index) const {
  return index > last_good_ && index < first_bad_ && verdicts_.find(index) == verdicts_.end() &&
         in_flight_.find(index) == in_flight_.end();
}

std::vector<int> BisectSearch::NextProbes(int count) {
  if (graph_) return graph_->NextProbes(count);
  std::vector<int> result = PlanProbes(count);
  in_flight_.insert(result.begin(), result.end());
  return result;
}

int BisectSearch::LargestPieceWith(const std::vector<int>& points) const {
  if (graph_) return graph_->LargestClassWith(points);
  std::vector<int> cuts = {last_good_, first_bad_};
  for (int index : in_flight_) {
    if (index > last_good_ && index < first_bad_) cuts.push_back(index);
  }
  for (int index : points) {
    if (index > last_good_ && index < first_bad_) cuts.push_back(index);
  }
  std::sort(cuts.begin(), cuts.end());
  int widest = 0;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) widest = std::max(widest, cuts[i + 1] - cuts[i]);
  return widest;
}

std::vector<int> BisectSearch::PlanProbes(int count, int planned) const {
  // The graph's greedy choice is already in waves: its first `count` probes are the best `count`.
  if (planned <= count || graph_) return PlanProbes(count);
  std::vector<int> all = PlanProbes(planned);
  std::sort(all.begin(), all.end());
  const int total = static_cast<int>(all.size());
  if (total <= count) return all;
  std::vector<int> result;
  for (int j = 0; j < count; ++j) {
    // The (2j+1)/(2 count) quantile of the planned points: every other one for planned = 2 count.
    result.push_back(all[std::min(total - 1, (2 * j + 1) * total / (2 * count))]);
  }
  return result;
}

std::vector<int> BisectSearch::PlanProbes(int count) const {
  if (graph_) return graph_->PlanProbes(count);
  std::vector<int> result;
  if (count <= 0) return result;

  // The known points bounding the gaps: last_good, the useful in-flight probes, first_bad.
  std::vector<int> points;
  points.push_back(last_good_);
  for (auto it = in_flight_.upper_bound(last_good_); it != in_flight_.end() && *it < first_bad_;
       ++it) {
    points.push_back(*it);
  }
  points.push_back(first_bad_);

  struct Gap {
    int a;         // Lower known point.
    int b;         // Upper known point.
    int capacity;  // Eligible indices strictly inside (a, b).
    int m;         // New points allocated to this gap.
  };
  std::vector<Gap> gaps;
  for (size_t i = 0; i + 1 < points.size(); ++i) {
    const int a = points[i];
    const int b = points[i + 1];
    if (b - a < 2) continue;
    const int capacity = (b - a - 1) - RecordedStrictlyInside(a, b);
    if (capacity > 0) gaps.push_back(Gap{a, b, capacity, 0});
  }

  // Greedy allocation: always give the next point to the gap whose resulting largest piece,
  // g/(m+1), is the largest. Ties go to the larger gap, then the lower one.
  auto worse = [&gaps](int x, int y) {
    const Gap& gx = gaps[x];
    const Gap& gy = gaps[y];
    const int64_t lhs = static_cast<int64_t>(gx.b - gx.a) * (gy.m + 1);
    const int64_t rhs = static_cast<int64_t>(gy.b - gy.a) * (gx.m + 1);
    if (lhs != rhs) return lhs < rhs;
    if (gx.b - gx.a != gy.b - gy.a) return gx.b - gx.a < gy.b - gy.a;
    return gx.a > gy.a;
  };
  std::priority_queue<int, std::vector<int>, decltype(worse)> queue(worse);
  for (size_t i = 0; i < gaps.size(); ++i) queue.push(static_cast<int>(i));
  int remaining = count;
  while (remaining > 0 && !queue.empty()) {
    const int top = queue.top();
    queue.pop();
    ++gaps[top].m;
    --remaining;
    if (gaps[top].m < gaps[top].capacity) queue.push(top);
  }

  // Even placement within each gap, snapped to the nearest eligible index (lower one on a tie).
  absl::btree_set<int> taken;
  for (const Gap& gap : gaps) {
    for (int i = 1; i <= gap.m; ++i) {
      const int ideal = IdealPoint(gap.a, gap.b, i, gap.m);
      for (int d = 0; d < gap.b - gap.a; ++d) {
        int chosen = -1;
        for (int candidate : {ideal - d, ideal + d}) {
          if (candidate > gap.a && candidate < gap.b && Eligible(candidate) &&
              taken.find(candidate) == taken.end()) {
            chosen = candidate;
            break;
          }
        }
        if (chosen >= 0) {
          taken.insert(chosen);
          break;
        }
      }
    }
  }
  result.assign(taken.begin(), taken.end());
  return result;
}

void BisectSearch::MarkInFlight(int index) {
  if (graph_) return graph_->MarkInFlight(index);
  if (index < 0 || index > n_) return;
  in_flight_.insert(index);
}

absl::Status BisectSearch::Record(int index, v1::Verdict verdict) {
  verdict = SkipUnlessGoodOrBad(verdict);
  if (graph_) {
    absl::Status recorded = graph_->Record(index, verdict);
    if (recorded.ok()) SyncGraphBounds();
    return recorded;
  }
  if (index < 0 || index > n_) {
    return absl::InvalidArgumentError(
        absl::StrCat("index ", index, " is outside the range [0, ", n_, "]"));
  }
  if (verdict == v1::VERDICT_GOOD && index >= first_bad_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "good verdict at index ", index, " contradicts the bad verdict at index ", first_bad_));
  }
  if (verdict == v1::VERDICT_BAD && index <= last_good_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "bad verdict at index ", index, " contradicts the good verdict at index ", last_good_));
  }
  in_flight_.erase(index);
  if (verdict == v1::VERDICT_GOOD) {
    verdicts_[index] = v1::VERDICT_GOOD;
    last_good_ = std::max(last_good_, index);
  } else if (verdict == v1::VERDICT_BAD) {
    verdicts_[index] = v1::VERDICT_BAD;
    first_bad_ = std::min(first_bad_, index);
  } else {
    verdicts_.try_emplace(index, v1::VERDICT_SKIP);
  }
  return absl::OkStatus();
}

void BisectSearch::Abandon(int index) {
  if (graph_) return graph_->Abandon(index);
  in_flight_.erase(index);
}

std::vector<int> BisectSearch::UselessInFlight() const {
  if (graph_) return graph_->UselessInFlight();
  std::vector<int> result;
  for (int index : in_flight_) {
    if (index <= last_good_ || index >= first_bad_) result.push_back(index);
  }
  return result;
}

std::vector<int> BisectSearch::InFlight() const {
  if (graph_) return graph_->InFlight();
  return std::vector<int>(in_flight_.begin(), in_flight_.end());
}

bool BisectSearch::Done() const {
  if (graph_) return graph_->Done();
  auto it = in_flight_.upper_bound(last_good_);
  if (it != in_flight_.end() && *it < first_bad_) return false;
  return (first_bad_ - last_good_ - 1) - RecordedStrictlyInside(last_good_, first_bad_) == 0;
}

std::vector<int> BisectSearch::Candidates() const {
  if (graph_) return graph_->Candidates();
  std::vector<int> result;
  result.reserve(first_bad_ - last_good_);
  for (int index = last_good_ + 1; index <= first_bad_; ++index) result.push_back(index);
  return result;
}

int BisectSearch::EstimateRounds(int n, int workers) {
  const int64_t base = static_cast<int64_t>(std::max(workers, 1)) + 1;
  int rounds = 0;
  for (int64_t reach = 1; reach < n; reach *= base) ++rounds;
  return rounds;
}

int BisectSearch::EstimateProbes(int n, int workers) {
  const int64_t w = std::max(workers, 1);
  int64_t candidates = n;
  int probes = 0;
  while (candidates > 1) {
    const int64_t points = std::min(w, candidates - 1);
    probes += static_cast<int>(points);
    candidates = (candidates + points) / (points + 1);
  }
  return probes;
}

std::optional<v1::Verdict> BisectSearch::VerdictAt(int index) const {
  if (graph_) return graph_->VerdictAt(index);
  auto it = verdicts_.find(index);
  if (it == verdicts_.end()) return std::nullopt;
  return it->second;
}

}  // namespace kbisect
