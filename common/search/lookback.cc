// Copyright 2026 The kbisect Authors.
#include "common/search/lookback.h"

#include <algorithm>

namespace kbisect {

Lookback::Lookback(int max_lookback) : max_lookback_(std::max(1, max_lookback)) {}

int Lookback::Reach() const {
  if (history_end_ == 0) return max_lookback_;
  // The chain ends before history_end_: the farthest distance tried below it is the last one
  // worth trying (the root's own distance is not known).
  int reach = 0;
  for (const auto& [d, outcome] : tried_) {
    if (d < history_end_) reach = d;
  }
  return reach;
}

std::vector<int> Lookback::Sequence() const {
  std::vector<int> sequence;
  const int reach = Reach();
  for (long d = 1; d < reach; d *= 2) sequence.push_back(static_cast<int>(d));
  if (reach >= 1 && (sequence.empty() || sequence.back() != reach)) sequence.push_back(reach);
  return sequence;
}

std::vector<int> Lookback::Next(int count) {
  std::vector<int> out;
  if (Found().has_value() || Exhausted()) return out;
  for (int d : Sequence()) {
    if (static_cast<int>(out.size()) >= count) break;
    if (tried_.count(d) > 0) continue;
    // Past a distance already found better nothing is worth trying.
    bool beyond_better = false;
    for (const auto& [t, outcome] : tried_) {
      beyond_better = beyond_better || (t < d && outcome == Outcome::kBetter);
    }
    if (beyond_better) break;
    tried_[d] = std::nullopt;
    out.push_back(d);
  }
  return out;
}

void Lookback::Record(int distance, Outcome outcome) {
  auto it = tried_.find(distance);
  if (it == tried_.end()) return;
  it->second = outcome;
  if (outcome == Outcome::kBeyondHistory && (history_end_ == 0 || distance < history_end_)) {
    history_end_ = distance;
  }
}

std::optional<int> Lookback::Found() const {
  for (const auto& [d, outcome] : tried_) {         // Ascending.
    if (!outcome.has_value()) return std::nullopt;  // A nearer answer may still come.
    if (*outcome == Outcome::kBetter) return d;
  }
  return std::nullopt;
}

bool Lookback::Exhausted() const {
  if (Found().has_value()) return false;
  for (int d : Sequence()) {
    auto it = tried_.find(d);
    if (it == tried_.end() || !it->second.has_value()) return false;
  }
  return true;
}

int Lookback::LargestNotBetter() const {
  const std::optional<int> found = Found();
  int largest = 0;
  for (const auto& [d, outcome] : tried_) {
    if (found.has_value() && d >= *found) break;
    if (outcome == Outcome::kNotBetter) largest = d;
  }
  return largest;
}

int LookbackRoundsBound(int d, int max_lookback, int workers) {
  Lookback lookback(max_lookback);
  int position = 0;
  for (int t : lookback.Next(max_lookback)) {
    ++position;
    if (t >= d) break;
  }
  workers = std::max(1, workers);
  return (position + workers - 1) / workers;
}

int LookbackReachSince(absl::Span<const int64_t> chain_times, int64_t since, int max_lookback) {
  int reach = 0;
  for (int64_t time : chain_times) {
    if (reach >= max_lookback || time < since) break;
    ++reach;
  }
  return reach;
}

}  // namespace kbisect
