// Copyright 2026 The kbisect Authors.
//
// WorkerRegistry: the workers the coordinator knows (a WorkerEntry each, by worker id), their live
// sessions and those sessions' mailboxes. It starts and ends sessions (closing the old mailbox so
// that its long poll ends), finds a worker by session, says why a session is unknown (ended, or
// taken over by another process of the same name), tells the hardware class a job runs on, and
// lists the workers as ListWorkers shows them. The coordinator decides when; the registry keeps
// the sessions, the session index and the mailbox index consistent.
//
// Thread-compatible: the coordinator keeps it under its mutex. The SessionMailboxes it fills
// (given at construction, owned by the coordinator) has its own lock and is read without the
// coordinator's mutex by the Synchronize that changes nothing.
#ifndef KBISECT_COORDINATOR_WORKER_REGISTRY_H_
#define KBISECT_COORDINATOR_WORKER_REGISTRY_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "coordinator/lease_table.h"
#include "coordinator/worker_entry.h"
#include "coordinator/worker_mailbox.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

class WorkerRegistry {
 public:
  // `mailboxes` must outlive the registry.
  explicit WorkerRegistry(SessionMailboxes* mailboxes) : mailboxes_(mailboxes) {}

  WorkerRegistry(const WorkerRegistry&) = delete;
  WorkerRegistry& operator=(const WorkerRegistry&) = delete;

  // The worker `worker_id`, added with that id (no session, no name yet) when unknown.
  WorkerEntry& FindOrAdd(const std::string& worker_id);
  // The worker whose name is `name`, or null.
  WorkerEntry* FindByName(const std::string& name);
  // The worker `worker_id`, or null.
  WorkerEntry* Find(const std::string& worker_id);
  const WorkerEntry* Find(const std::string& worker_id) const;
  // The worker holding the live session `session_id`, or null.
  WorkerEntry* ForSession(const std::string& session_id);

  // The error for a call on `session_id`, which no worker holds: FailedPrecondition when another
  // process took over its worker's name (the caller should stop), else NotFound(`missing`).
  absl::Status UnknownSession(const std::string& session_id, const std::string& missing) const;

  // Gives `worker`, which has no session, the session `session_id` with a fresh mailbox
  // (`durable_batches`: the count of journal batches already durable, which must outlive it).
  void StartSession(WorkerEntry& worker, const std::string& session_id,
                    const std::atomic<uint64_t>* durable_batches);
  // Ends the worker's session, if any: its mailbox is closed (a poll waiting there ends) and
  // dropped from the lookups; the worker keeps its entry, without a session. `superseded`: a new
  // session of the same name replaces it, and it is remembered (the latest
  // WorkerEntry::kReplacedSessionsKept), so a process still calling on it learns that another
  // took over.
  void EndSession(WorkerEntry& worker, bool superseded);

  // The hardware class a job runs on: the spec's, or else that of the worker of its first probe
  // that names one; empty while any class may.
  std::string HardwareClassOf(const v1::JobStatus& job) const;

  // Every worker as ListWorkers shows it, with its first active lease and that lease's job.
  v1::ListWorkersResponse List(const LeaseTable& leases) const;

  // Every worker by id, for the coordinator's walks over them.
  std::map<std::string, WorkerEntry>& entries() { return workers_; }
  const std::map<std::string, WorkerEntry>& entries() const { return workers_; }
  bool empty() const { return workers_.empty(); }

  // Ends every session and forgets every worker (memory rebuilt from the store).
  void Clear();

 private:
  SessionMailboxes* const mailboxes_;
  std::map<std::string, WorkerEntry> workers_;
  std::map<std::string, std::string> sessions_;  // Live session -> worker id.
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_WORKER_REGISTRY_H_
