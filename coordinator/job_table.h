// Copyright 2026 The kbisect Authors.
//
// JobTable: every job the coordinator holds (a JobEntry each, by id), their creation order and
// positions, and the request ids they were submitted with. It keeps those consistent as jobs are
// added, deleted (--retain) and renumbered (a restart), and lists them page by page for
// ListJobs. Thread-compatible: the coordinator keeps it under its mutex.
#ifndef KBISECT_COORDINATOR_JOB_TABLE_H_
#define KBISECT_COORDINATOR_JOB_TABLE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "coordinator/job_entry.h"
#include "coordinator/job_store.h"
#include "coordinator/worker_registry.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

class JobTable {
 public:
  // ListJobs' page sizes: the default, and the most a page holds whatever is asked.
  static constexpr int kDefaultListedJobs = 50;
  static constexpr int kMaxListedJobs = 1000;

  JobTable() = default;
  JobTable(const JobTable&) = delete;
  JobTable& operator=(const JobTable&) = delete;

  // Adds the job `job_id`, which must be new, last in creation order at the next position; it is
  // found by `request_id` when that is not empty. The caller fills in the rest of the entry.
  JobEntry& Add(const std::string& job_id, const std::string& request_id);

  // Adds a job to the table as it was stored and not compacted: its state machine made again from
  // its constructor's arguments (its journal is the caller's to apply), and its final status,
  // when it was stored with one, kept for the replay (JobEntry::stored_final).
  JobEntry& AddStored(StoredJob stored);
  // Adds a compacted job (its commit list and journal are gone): finished and complete, its
  // status frozen as stored, its events and follow-ups as they were.
  JobEntry& AddCompacted(StoredJob stored);

  // What Apply did: what the job's call returned (the tasks it handed out and those it made
  // useless) and, when the call leaves a trace in the job's journal, the entry to journal,
  // numbered next in the job's journal.
  struct Applied {
    BisectJob::Applied job;
    std::optional<JournalEntry> journal;
  };
  // Makes `call` on the entry's job (BisectJob::Apply), the one way a job changes, live and when
  // replaying its journal alike, and keeps the entry's own record of it: the job's journal
  // position and what the lease policy remembers (JobEntry::offers: the worker a TaskStarted
  // used, and that the job changed). A TakeTasks that hands out nothing leaves no trace in the
  // job (every worker it looks at already has its calibration task, or it stops for lack of
  // room), so it is not journaled: idle workers polling a job that has nothing for them would
  // otherwise grow the journal with every heartbeat; this relies on BisectJob::TakeTasks keeping
  // that property. `replaying`: `call` comes from the job's journal, whose position it keeps,
  // and nothing is to be journaled again. What follows from the change (events, report,
  // follow-ups) is the caller's.
  Applied Apply(JobEntry& entry, JournalEntry call, bool replaying);

  JobEntry* Find(const std::string& job_id);
  const JobEntry* Find(const std::string& job_id) const;
  // The job `job_id`, which must exist.
  JobEntry& at(const std::string& job_id) { return jobs_.at(job_id); }
  const JobEntry& at(const std::string& job_id) const { return jobs_.at(job_id); }
  bool contains(const std::string& job_id) const { return jobs_.count(job_id) > 0; }
  bool empty() const { return jobs_.empty(); }
  // The id of the job submitted with `request_id`, or null.
  const std::string* JobOfRequest(const std::string& request_id) const;

  // Job ids in creation order.
  const std::vector<std::string>& order() const { return order_; }
  // Every job by id.
  const std::map<std::string, JobEntry>& entries() const { return jobs_; }
  std::map<std::string, JobEntry>& entries() { return jobs_; }

  // Appends `event` to the job's stream (the next sequence number) and, but for its FINISHED
  // event, to the streams of its ancestors that are not complete, prefixed with what the job
  // follows up (its STARTED line as a progress line there), so `kbisect run` shows a follow-up's
  // progress. The ancestors' revisions follow their streams (the job's own is the caller's).
  void AppendEvent(JobEntry& entry, v1::JobEvent event);

  // The job `job_id` and, breadth first, its follow-ups (and theirs) that the table holds.
  std::vector<std::string> Family(const std::string& job_id) const;
  // The families (Family) of the top-level jobs that completed and finished (or, without a
  // finish time, were created) more than `retain` before `now`, oldest job first: what --retain
  // deletes.
  std::vector<std::string> ExpiredFamilies(absl::Time now, absl::Duration retain) const;

  // Puts the jobs in creation order again after a restart: first those named in `order` (known
  // ones, once each), then the others as they are now; numbers them from 1.
  void Renumber(const std::vector<std::string>& order);
  // Deletes the job and its request id; no later job takes its position.
  void Erase(const std::string& job_id);
  // Deletes what --retain expires at `now` (ExpiredFamilies) and returns their ids, oldest job
  // first.
  std::vector<std::string> EraseExpired(absl::Time now, absl::Duration retain);
  // Forgets every job (memory rebuilt from the store).
  void Clear();

  // A page of ListJobs: the jobs newest first, filtered by request.states, at most page_size
  // (default kDefaultListedJobs, at most kMaxListedJobs), and when more match a next_page_token,
  // "before:N", that continues below the page's last job whatever is added or deleted meanwhile.
  // A token that does not parse starts from the newest job. A page costs the jobs it lists or
  // skips by state, and a binary search.
  v1::ListJobsResponse List(const v1::ListJobsRequest& request) const;

 private:
  std::map<std::string, JobEntry> jobs_;
  std::vector<std::string> order_;  // Creation order: positions ascend.
  uint64_t last_position_ = 0;      // Of the newest job.
  std::map<std::string, std::string> request_ids_;
};

// The build-ahead hints for a worker of `hardware_class`: BisectJob::BuildAheadTasks of the
// running jobs it may serve (those on its class, by their spec or their first worker in
// `workers`, and those on none yet), in creation order, at most `limit` in all.
std::vector<v1::Task> BuildAheadHints(const JobTable& jobs, const WorkerRegistry& workers,
                                      const std::string& hardware_class, int limit);

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_TABLE_H_
