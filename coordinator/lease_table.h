// Copyright 2026 The kbisect Authors.
//
// LeaseTable: every lease the coordinator granted since it started (or last rebuilt its memory
// from the store), each task's live lease and each task's attempt count. It answers the lease
// questions on its own: whether a reported result is accepted (fencing), whether a heartbeat's
// lease is renewed, which leases expired. The coordinator applies what follows from the answers
// (the job's call, the worker's standing, the mailbox).
//
// A lease is active until it ends, completed (its result was accepted) or dead (cancelled, lost
// or expired); an ended lease stays in the table, so that a result reported twice is recognised
// as a duplicate and a late one is refused. Thread-compatible: the coordinator keeps it under its
// mutex.
#ifndef KBISECT_COORDINATOR_LEASE_TABLE_H_
#define KBISECT_COORDINATOR_LEASE_TABLE_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace kbisect {

class LeaseTable {
 public:
  enum class State { kActive, kCompleted, kDead };
  struct Lease {
    std::string lease_id;
    std::string job_id;
    std::string task_id;
    std::string worker_id;
    int attempt = 0;
    absl::Time expire;
    State state = State::kActive;
  };

  // Grants `worker_id` an active lease `lease_id` on task `task_id` of `job_id`, expiring at
  // `expire`, with the task's next attempt (one more than any granted or recorded before). It is
  // the task's live lease from now on. `lease_id` must be new.
  const Lease& Grant(std::string lease_id, std::string job_id, std::string task_id,
                     std::string worker_id, absl::Time expire);

  // Records that `task_id` ran as attempt `attempt` (a replayed journal): the next Grant for the
  // task takes a later attempt.
  void RecordAttempt(const std::string& task_id, int attempt);

  // The lease with that id, or null.
  Lease* Find(const std::string& lease_id);
  const Lease* Find(const std::string& lease_id) const;
  // The task's live lease (active), or null.
  Lease* LiveLeaseOf(const std::string& task_id);

  // Ends an active lease with `state` (kCompleted or kDead): it is no longer its task's live
  // lease. Returns false, and changes nothing, when it had already ended.
  bool End(Lease& lease, State state);

  // A heartbeat of `worker_id` reports `lease_id`: renews it until `expire` and returns true when
  // it is an active lease of that worker; else returns false (the worker should drop it).
  bool Renew(const std::string& lease_id, const std::string& worker_id, absl::Time expire);

  // What a result reported by `worker_id` on `lease_id` for attempt `attempt` gets.
  enum class Fence {
    kUnknownLease,  // Not a lease of this process (e.g. granted before a restart): refused.
    kNotHolder,     // Another worker's lease: a permission error.
    kWrongAttempt,  // An older attempt's result: refused.
    kDuplicate,     // Accepted before: accepted again, changing nothing.
    kEnded,         // Cancelled, lost or expired: refused, the result is discarded.
    kAccept,        // The live lease's result: accept it (End it as kCompleted).
  };
  Fence CheckResult(const std::string& lease_id, const std::string& worker_id, int attempt) const;

  // The active leases whose expiry is before `now`, in lease id order.
  std::vector<std::string> ExpiredBefore(absl::Time now) const;
  // Counts an expired lease that the caller ended (as kDead).
  void CountExpiry() { ++expiries_; }
  // Leases that expired since this process started (kept across Clear).
  int64_t expiries() const { return expiries_; }

  // Forgets every lease and attempt (memory rebuilt from the store).
  void Clear();

 private:
  std::map<std::string, Lease> leases_;
  std::set<std::string> active_;                    // Ids of the active leases.
  std::map<std::string, std::string> task_leases_;  // Task -> its live lease.
  std::map<std::string, int> task_attempts_;        // Task -> its latest attempt.
  int64_t expiries_ = 0;
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_LEASE_TABLE_H_
