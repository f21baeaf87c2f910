// Copyright 2026 The kbisect Authors.
#include "coordinator/job/verdict_ledger.h"

#include <algorithm>
#include <utility>

#include "absl/status/statusor.h"
#include "common/rpc/proto_time.h"
#include "coordinator/job/job_text.h"
#include "coordinator/job/marks.h"

namespace kbisect {
namespace {

// The search with no verdicts over `commits`: over their graph when `spec` asks for every commit
// and they carry their parents and a merge, else over the list.
BisectSearch NewSearch(const v1::JobSpec& spec, const std::vector<v1::CommitRef>& commits) {
  const int n = static_cast<int>(commits.size()) - 1;
  if (spec.history() != v1::HISTORY_MODE_ALL_COMMITS || n < 1) return BisectSearch(n);
  // Jobs resolved before the ranges carried their parents (or a range with no merge, whose
  // graph is its list) keep the search over the list.
  bool merges = false;
  std::vector<std::vector<int>> parents;
  parents.reserve(commits.size());
  for (size_t i = 0; i < commits.size(); ++i) {
    if (i > 0 && commits[i].parent_indices().empty()) return BisectSearch(n);
    merges |= commits[i].parent_indices_size() > 1;
    parents.emplace_back(commits[i].parent_indices().begin(), commits[i].parent_indices().end());
  }
  if (!merges) return BisectSearch(n);
  absl::StatusOr<BisectSearch> graph = BisectSearch::OverGraph(std::move(parents));
  return graph.ok() ? *std::move(graph) : BisectSearch(n);
}

void AddOnce(std::vector<int>* positions, int position) {
  if (std::find(positions->begin(), positions->end(), position) == positions->end()) {
    positions->push_back(position);
  }
}

}  // namespace

VerdictLedger::VerdictLedger(const v1::JobSpec& spec, const std::vector<v1::CommitRef>& commits,
                             const JobFrame* frame, ProbeBook* book, const Calibration* calibration)
    : frame_(frame),
      book_(book),
      calibration_(calibration),
      empty_(NewSearch(spec, commits)),
      search_(empty_),
      shown_first_bad_(search_.first_bad()) {}

std::vector<int> VerdictLedger::TakeAwaiting() { return std::exchange(awaiting_, {}); }

int VerdictLedger::FreshAwaitingOf(const std::string& worker) const {
  return static_cast<int>(std::count_if(awaiting_.begin(), awaiting_.end(), [&](int position) {
    const v1::Probe& probe = book_->probe(position);
    return probe.worker() == worker && !probe.cached();
  }));
}

void VerdictLedger::DropAwaiting(const std::function<bool(int position)>& drop) {
  awaiting_.erase(std::remove_if(awaiting_.begin(), awaiting_.end(), drop), awaiting_.end());
}

void VerdictLedger::DropAwaitingOutsideInterval() {
  DropAwaiting([&](int position) {
    const int index = book_->probe(position).index();
    return index <= search_.last_good() || index >= search_.first_bad();
  });
}

bool VerdictLedger::Record(int position, v1::Verdict verdict) {
  const int index = book_->probe(position).index();
  if (search_.Record(index, verdict).ok()) return true;
  // Only possible with non-monotone measurements (noise, or a GPU not calibrated yet): the
  // commit is untestable until a verdict is taken back.
  search_.Abandon(index);
  (void)search_.Record(index, v1::VERDICT_SKIP);
  contradicted_.insert(position);
  return false;
}

void VerdictLedger::CountStep(int round) {
  ++steps_;
  max_round_ = std::max(max_round_, round);
}

void VerdictLedger::Retract(const std::vector<int>& positions, bool probe_again,
                            const std::string& why, absl::Time now) {
  bool changed = false;
  std::vector<int> retract = positions;
  if (!positions.empty()) {
    // A verdict that contradicted one of these was recorded as a skip: it is judged again too.
    retract.insert(retract.end(), contradicted_.begin(), contradicted_.end());
  }
  v1::Progress* progress = &progress_;
  for (int position : retract) {
    v1::Probe& probe = book_->mutable_probe(position);
    const bool contradicted =
        contradicted_.erase(position) > 0 &&
        std::find(positions.begin(), positions.end(), position) == positions.end();
    if (probe.kind() != v1::PROBE_KIND_BISECT || probe.state() != v1::PROBE_STATE_FINISHED ||
        (!JudgedAgainstBaselines(probe) && !contradicted)) {
      continue;
    }
    if (contradicted) {
      progress->set_skips(progress->skips() - 1);
      probe.set_verdict(v1::VERDICT_UNSPECIFIED);
      changed = true;
      AddOnce(&awaiting_, position);
      continue;
    }
    if (probe.verdict() == v1::VERDICT_AMBIGUOUS) progress->set_skips(progress->skips() - 1);
    probe.set_verdict(v1::VERDICT_UNSPECIFIED);
    probe.set_provisional(false);
    changed = true;
    // A quarantined worker's samples cannot be judged again.
    if (probe_again || calibration_->Quarantined(probe.worker())) {
      probe.set_state(v1::PROBE_STATE_CANCELLED);
      probe.set_message(DiscardedText(why.empty() ? "its worker was quarantined" : why));
      *probe.mutable_end_time() = ToProto(now);
    } else {
      AddOnce(&awaiting_, position);
    }
  }
  if (changed) Rebuild();
}

void VerdictLedger::RetractAll(absl::Time now) {
  Retract(book_->ProbePositions([](const v1::Probe&) { return true; }), /*probe_again=*/false, "",
          now);
}

void VerdictLedger::Rebuild() {
  BisectSearch search = empty_;
  RecordMarks(frame_->marks, &search);
  for (const v1::Probe& probe : book_->rows()) {
    if (probe.kind() != v1::PROBE_KIND_BISECT || probe.state() != v1::PROBE_STATE_FINISHED ||
        probe.verdict() == v1::VERDICT_UNSPECIFIED || IsMarked(frame_->marks, probe.index())) {
      continue;
    }
    if (!search.Record(probe.index(), probe.verdict()).ok()) {
      (void)search.Record(probe.index(), v1::VERDICT_SKIP);
    }
  }
  for (const auto& [id, entry] : book_->tasks()) {
    if (!entry.done && entry.task.kind() == v1::PROBE_KIND_BISECT) {
      search.MarkInFlight(entry.task.commit_index());
    }
  }
  for (int position : awaiting_) search.MarkInFlight(book_->probe(position).index());
  search_ = std::move(search);
  ShowInterval();
}

void VerdictLedger::UpdateProgress() {
  v1::Progress* progress = &progress_;
  int finished_probes = 0;
  for (const v1::Probe& probe : book_->rows()) {
    if (probe.state() == v1::PROBE_STATE_FINISHED) ++finished_probes;
  }
  progress->set_probes_finished(finished_probes);
  progress->set_probes_in_flight(book_->InFlightCount());
  progress->set_remaining_commits(search_.RemainingCandidates());
  progress->set_estimated_rounds(BisectSearch::EstimateRounds(
      search_.RemainingCandidates(), calibration_->ActiveWorkers(frame_->spec.max_workers())));
}

}  // namespace kbisect
