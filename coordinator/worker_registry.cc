// Copyright 2026 The kbisect Authors.
#include "coordinator/worker_registry.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/rpc/proto_time.h"

namespace kbisect {

WorkerEntry& WorkerRegistry::FindOrAdd(const std::string& worker_id) {
  WorkerEntry& worker = workers_[worker_id];
  worker.worker_id = worker_id;
  return worker;
}

WorkerEntry* WorkerRegistry::FindByName(const std::string& name) {
  WorkerEntry* found = nullptr;
  for (auto& [id, worker] : workers_) {
    if (worker.name == name) found = &worker;
  }
  return found;
}

WorkerEntry* WorkerRegistry::Find(const std::string& worker_id) {
  auto it = workers_.find(worker_id);
  return it == workers_.end() ? nullptr : &it->second;
}

const WorkerEntry* WorkerRegistry::Find(const std::string& worker_id) const {
  auto it = workers_.find(worker_id);
  return it == workers_.end() ? nullptr : &it->second;
}

WorkerEntry* WorkerRegistry::ForSession(const std::string& session_id) {
  auto it = sessions_.find(session_id);
  return it == sessions_.end() ? nullptr : &workers_.at(it->second);
}

absl::Status WorkerRegistry::UnknownSession(const std::string& session_id,
                                            const std::string& missing) const {
  for (const auto& [id, worker] : workers_) {
    if (std::find(worker.replaced_sessions.begin(), worker.replaced_sessions.end(), session_id) !=
        worker.replaced_sessions.end()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "another process took over the worker name '", worker.name, "' (session ", session_id,
          " was replaced by a newer one); this one must stop: give each worker its own --name"));
    }
  }
  return absl::NotFoundError(missing);
}

void WorkerRegistry::StartSession(WorkerEntry& worker, const std::string& session_id,
                                  const std::atomic<uint64_t>* durable_batches) {
  worker.session_id = session_id;
  sessions_[session_id] = worker.worker_id;
  worker.mailbox = std::make_shared<WorkerMailbox>(durable_batches);
  mailboxes_->Add(session_id, worker.mailbox);
}

void WorkerRegistry::EndSession(WorkerEntry& worker, bool superseded) {
  if (superseded && !worker.session_id.empty()) {
    worker.replaced_sessions.push_back(worker.session_id);
    if (worker.replaced_sessions.size() > WorkerEntry::kReplacedSessionsKept) {
      worker.replaced_sessions.erase(worker.replaced_sessions.begin());
    }
  }
  sessions_.erase(worker.session_id);
  if (worker.mailbox != nullptr) {
    worker.mailbox->Close();
    mailboxes_->Remove(worker.session_id);
    worker.mailbox = nullptr;
  }
  worker.session_id.clear();
}

std::string WorkerRegistry::HardwareClassOf(const v1::JobStatus& job) const {
  if (!job.spec().hardware_class().empty()) return job.spec().hardware_class();
  for (const v1::Probe& probe : job.probes()) {
    if (probe.worker().empty()) continue;
    const WorkerEntry* first = Find(probe.worker());
    return first == nullptr ? "" : first->identity.hardware_class();
  }
  return "";
}

v1::ListWorkersResponse WorkerRegistry::List(const LeaseTable& leases) const {
  v1::ListWorkersResponse response;
  for (const auto& [id, entry] : workers_) {
    v1::Worker* worker = response.add_workers();
    worker->set_worker_id(id);
    *worker->mutable_identity() = entry.identity;
    worker->set_state(entry.state);
    if (!entry.leases.empty()) {
      worker->set_current_lease_id(entry.leases.front());
      if (const LeaseTable::Lease* lease = leases.Find(entry.leases.front())) {
        worker->set_current_job_id(lease->job_id);
      }
    }
    *worker->mutable_last_seen() = ToProto(entry.LastSeen());
    *worker->mutable_connect_time() = ToProto(entry.connect_time);
    worker->set_tasks_completed(entry.tasks_completed);
  }
  return response;
}

void WorkerRegistry::Clear() {
  for (auto& [id, worker] : workers_) EndSession(worker, /*superseded=*/false);
  workers_.clear();
  sessions_.clear();
}

}  // namespace kbisect
