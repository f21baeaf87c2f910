// Copyright 2026 The kbisect Authors.
//
// The coordinator's cross-job lease policy: in one dispatch round, which idle workers each
// running job is asked about (BisectJob::TakeTasks then decides what, if anything, each gets).
// It is pure: the coordinator builds a DispatchRound from its idle workers, walks its running
// jobs in creation order asking Candidates for each, and reports each job's answer back
// (Answered); a job's bookkeeping between rounds is its JobOffers. No lock, no I/O, no clock
// (the time is passed in), so the rules below are unit-tested on their own
// (tests/unit/coordinator/lease_policy_test.cc):
//   - Jobs are served in creation order; a worker leaves the round once it got a task.
//   - A job runs on one hardware class (its spec's, else its first worker's): it is asked about
//     workers of that class only.
//   - A job capped at max_workers with `live` leases running is asked about the idle workers
//     that worked in it (its calibrations and nearest checkouts are theirs) and at most
//     `cap - live` others, those it was offered before first; a job at its cap is not asked.
//     Asking a capped job about every idle worker of a large cluster would cost each round
//     O(jobs x workers) and have the job keep a record of each.
//   - A job that just declined these workers (or a superset of them), and has not changed since,
//     would decline again: only time alone could change its answer, so it is asked again after
//     kRedispatchPeriod. This keeps each result from asking every waiting job again.
// Candidates come in the round's idle order.
#ifndef KBISECT_COORDINATOR_LEASE_POLICY_H_
#define KBISECT_COORDINATOR_LEASE_POLICY_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace kbisect {

// What the lease policy remembers of one job across dispatch rounds.
class JobOffers {
 public:
  // A task of the job started on `worker` (live or replayed).
  void WorkerUsed(const std::string& worker);
  // A call that the job journals changed it (a decline journals nothing).
  void Changed() { ++changes_; }

  // The workers that worked in the job, in the order they started.
  const std::vector<std::string>& used() const { return used_; }
  // The other workers it was offered since this process started, in that order.
  const std::vector<std::string>& offered() const { return offered_; }

 private:
  friend class DispatchRound;
  std::vector<std::string> used_;
  std::set<std::string> used_set_;
  std::vector<std::string> offered_;
  uint64_t changes_ = 0;
  // Its last TakeTasks handed out nothing: after how many changes, when, and which workers
  // (sorted) it was asked about.
  bool declined_ = false;
  uint64_t declined_changes_ = 0;
  absl::Time declined_time_;
  std::vector<std::string> declined_workers_;
};

// A running job as a dispatch round sees it.
struct DispatchJob {
  int max_workers = 0;  // The spec's cap; 0: none.
  int live_leases = 0;  // Its tasks leased now.
  // The class it runs on; empty while any class may.
  std::string hardware_class;
};

class DispatchRound {
 public:
  // How long a job that declined a set of workers is not asked about them again unless it
  // changed.
  static constexpr absl::Duration kRedispatchPeriod = absl::Milliseconds(100);

  // An idle worker, by views of strings that must outlive the round (the coordinator's worker
  // map): a round is built on every dispatch, so it copies no name.
  struct IdleWorker {
    absl::string_view worker_id;
    absl::string_view hardware_class;
  };
  // A round over `idle` (in the order jobs should prefer them) at time `now`.
  DispatchRound(std::vector<IdleWorker> idle, absl::Time now);

  // True when every worker of the round got a task.
  bool empty() const { return remaining_.empty(); }
  // The workers still idle in this round, in its order.
  std::vector<std::string> remaining() const;

  // The workers to ask `job` about now, in the round's order; empty when it is not to be asked.
  // Records the new workers a capped job is offered in `offers`.
  std::vector<std::string> Candidates(const DispatchJob& job, JobOffers& offers);
  // The job was asked about `asked` (what Candidates returned) and `taken` of them got a task:
  // they leave the round; when none did, the job declined them.
  void Answered(const std::vector<std::string>& asked, const std::vector<std::string>& taken,
                JobOffers& offers);
  // `worker_id` got a task outside the job walk (a restarted coordinator's orphan): it leaves
  // the round.
  void Remove(const std::string& worker_id);

 private:
  struct Slot {
    absl::string_view worker_id;
    absl::string_view hardware_class;
    uint64_t stamp = 0;  // The Candidates call that last picked it.
  };
  // Picks slot `index` for the Candidates call `stamp` when it is of `hardware_class` (any if
  // empty) and not picked by that call yet.
  bool Pick(size_t index, const std::string& hardware_class, uint64_t stamp);

  const absl::Time now_;
  std::vector<Slot> slots_;                               // The round's workers, in its order.
  std::vector<size_t> remaining_;                         // Indices of those still idle, ascending.
  absl::flat_hash_map<absl::string_view, size_t> index_;  // Worker id -> slot, of those still idle.
  uint64_t stamp_ = 0;
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_LEASE_POLICY_H_
