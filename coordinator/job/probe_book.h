// Copyright 2026 The kbisect Authors.
//
// ProbeBook is the task bookkeeping of one bisect job: every task created for it (TaskEntry),
// the queue of work ready to hand out (baselines, re-measurements, retries of lost tasks), and
// the probe table those tasks fill, one row per task (a task that adds runs to a probe shares
// its row). It decides nothing: BisectJob and its policies (dispatch, calibration, verdicts) say
// what to create, queue, hand out or drop; the book keeps tasks and rows consistent.
//
// The book owns the probe table; the job's status (JobStatus.probes, what clients see) is a copy
// of it made by the projection (job_status_projection.cc).
#ifndef KBISECT_COORDINATOR_JOB_PROBE_BOOK_H_
#define KBISECT_COORDINATOR_JOB_PROBE_BOOK_H_

#include <deque>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/search/bisect_search.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// The job's probe table (JobStatus.probes): one row per task, in creation order.
using ProbeRows = google::protobuf::RepeatedPtrField<v1::Probe>;

// True when the probe produced a measurement: an exit code in pass/fail mode, otherwise a
// successful run with at least one sample.
bool IsMeasured(const v1::Probe& probe, bool pass_fail);

// True when the probe's verdict came from comparing its samples with the baselines (GOOD, BAD
// or ambiguous), not from a failure (skip) or not yet.
bool JudgedAgainstBaselines(const v1::Probe& probe);

// Adds `add` to `total` phase by phase; the first result of a probe replaces it. The sum's
// build_reused holds only when it holds for every result.
void AddTimings(const v1::TaskTimings& add, v1::TaskTimings* total, bool first);

class ProbeBook {
 public:
  // One task: created by NewTask or Extend, handed out, then finished, lost or cancelled.
  struct TaskEntry {
    v1::Task task;
    int probe = -1;  // Row in the probe table.
    // Handed out, no result yet. Set by HandOut, cleared by Deactivate or CancelTask only (the
    // book keeps the set of active tasks).
    bool active = false;
    bool done = false;          // Finished, cancelled or given up.
    std::string pinned_worker;  // Only this worker may run it (calibrations, re-measurements).
  };

  // The book of job `job_id`, whose tasks are made from `spec` (the normalized spec) at
  // `commits`, which must outlive the book.
  ProbeBook(std::string job_id, v1::JobSpec spec, const std::vector<v1::CommitRef>* commits);

  ProbeBook(const ProbeBook&) = delete;
  ProbeBook& operator=(const ProbeBook&) = delete;

  // Creates a task of `kind` at commit `index` from the spec (its commands, metric, runs,
  // timeouts) and its row in the probe table (PENDING). Not queued. Returns its id,
  // "<job>/p<N>" with N counting from 0.
  std::string NewTask(v1::ProbeKind kind, int index, int round,
                      const std::string& pinned_worker = "");

  // Adds a finished bisect probe of `index` whose samples come from the result cache (measured
  // by `cached.worker()` in job `cached.job_id()`), with a done task entry so that it can be
  // extended like any probe. Returns its row.
  int AddCachedProbe(int index, int round, const v1::CachedResult& cached);

  // Creates a task that adds `runs` samples to the probe at `position` on the probe's worker,
  // sets the row PENDING again, and queues the task first. Its id is "<probe id>.<runs so far>".
  void Extend(int position, int runs);

  // The suite's lead metric, once the job knows it (its first result's): every later task of a
  // suite whose spec names no lead carries it.
  void SetLeadMetric(const std::string& name) { lead_metric_ = name; }

  // Queues a task at the front or the back of the ready queue.
  void QueueFront(const std::string& task_id) { queue_.push_front(task_id); }
  void QueueBack(const std::string& task_id) { queue_.push_back(task_id); }

  // Hands the task to `worker`: active, its row RUNNING on that worker. Removes it from the
  // queue when it was queued. Returns the task as sent.
  const v1::Task& HandOut(const std::string& task_id, const std::string& worker);

  // The task is no longer handed out (its result came, it was lost, or the job ended).
  void Deactivate(const std::string& task_id);

  // Drops queue entries whose tasks are done (cancelled), and clears the whole queue.
  void DropDoneFromQueue();
  void ClearQueue() { queue_.clear(); }

  // Marks the task done and not active, its row CANCELLED with `message` and the end time. When
  // it was running, its id is appended to `to_cancel` (its processes must be killed).
  void CancelTask(TaskEntry& entry, const std::string& task_id, const std::string& message,
                  absl::Time now, std::vector<std::string>* to_cancel);

  // The entry of `task_id`, or null.
  TaskEntry* Find(const std::string& task_id);
  const TaskEntry* Find(const std::string& task_id) const;
  const TaskEntry& at(const std::string& task_id) const { return tasks_.at(task_id); }
  TaskEntry& at(const std::string& task_id) { return tasks_.at(task_id); }

  // Every task by id, for policies that walk them.
  std::map<std::string, TaskEntry>& tasks() { return tasks_; }
  const std::map<std::string, TaskEntry>& tasks() const { return tasks_; }
  // Ready task ids in hand-out order (entries may be done until DropDoneFromQueue).
  const std::deque<std::string>& queue() const { return queue_; }

  // The probe table: every row, and one row to read or to change.
  const ProbeRows& rows() const { return rows_; }
  const v1::Probe& probe(int position) const { return rows_.Get(position); }
  v1::Probe& mutable_probe(int position) { return *rows_.Mutable(position); }
  v1::Probe& ProbeOf(const TaskEntry& entry) { return mutable_probe(entry.probe); }
  int probe_count() const { return rows_.size(); }

  // Rows of the probe table that `which` accepts, in table order.
  std::vector<int> ProbePositions(const std::function<bool(const v1::Probe&)>& which) const;

  // Tasks handed out and not yet finished, lost or cancelled: their ids in id order (that of
  // tasks()), and their count.
  const std::set<std::string>& active() const { return active_; }
  int InFlightCount() const { return static_cast<int>(active_.size()); }
  std::vector<std::string> ActiveTaskIds() const;

 private:
  const std::string job_id_;
  const v1::JobSpec spec_;
  const std::vector<v1::CommitRef>* commits_;
  std::string lead_metric_;  // SetLeadMetric's.
  ProbeRows rows_;           // The probe table, one row per task in creation order.
  std::map<std::string, TaskEntry> tasks_;
  std::set<std::string> active_;  // Ids of the tasks that are active.
  std::deque<std::string> queue_;
  int next_task_ = 0;
  std::string spec_digest_;  // SpecDigest of the job's spec, computed on first use.
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_PROBE_BOOK_H_
