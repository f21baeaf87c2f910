// Copyright 2026 The kbisect Authors.
//
// JobEntry: what the coordinator keeps of one job beside the job's own state machine: what it
// publishes with the job's status (report, follow-ups, revision, the frozen final status), the
// event stream WatchJob serves, its request id and cache key, its follow-ups and their
// completion, its live leases and what the lease policy remembers of it. Thread-compatible: the
// coordinator keeps its entries (in a JobTable) under its mutex.
#ifndef KBISECT_COORDINATOR_JOB_ENTRY_H_
#define KBISECT_COORDINATOR_JOB_ENTRY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "coordinator/job/bisect_job.h"
#include "coordinator/lease_policy.h"
#include "coordinator/published_status.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

struct JobEntry {
  std::unique_ptr<BisectJob> job;
  // What the coordinator adds to the job's own status (report, follow-ups, revision, the final
  // status once complete).
  PublishedStatus published;
  // The job's status as clients, events and the store see it.
  v1::JobStatus Status() const { return published.Build(job->status()); }
  // The frozen final status, else the job's own: the search's fields without a copy.
  const v1::JobStatus& Base() const { return published.Base(job->status()); }
  v1::JobState State() const { return published.State(job->status()); }
  std::vector<v1::JobEvent> events;  // Sequence i+1 at position i.
  // Its place in creation order, from 1 (ListJobs' page tokens): kept when older jobs are
  // deleted, renumbered by a restart. Set by JobTable.
  uint64_t position = 0;
  std::string request_id;        // Set by JobTable.
  std::string spec_digest;       // SpecDigest of the job's spec: its results' cache key.
  bool reported = false;         // Report details (diff, hints) attached.
  int64_t journal_sequence = 0;  // Of the last journaled call.
  // During recovery: the status stored when the job finished (report details included).
  bool has_stored_final = false;
  v1::JobStatus stored_final;
  // Follow-up jobs this job started (descend_merges, all_culprits), by id.
  std::vector<std::string> follow_ups;
  // Set once the job's own search finished and its follow-ups (if any) were decided.
  bool follow_ups_decided = false;
  // The job's FINISHED event, held back while its follow-ups run.
  std::unique_ptr<v1::JobEvent> held_finish;
  // The job and all its follow-ups finished: its FINISHED event was released.
  bool complete = false;
  // Leases of its tasks that are active now (the dispatch's cap check).
  int live_leases = 0;
  // What the lease policy remembers of it: the workers that worked in it (journaled
  // TaskStarted, replay included), those it was offered, its changes and its last decline.
  JobOffers offers;
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_ENTRY_H_
