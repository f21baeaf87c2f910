// Copyright 2026 The kbisect Authors.
//
// WorkerSessions: OpenSession, the Synchronize long poll (heartbeat and pickup), CompleteLease
// (fenced results) and CloseSession, and the workers list.
#include "coordinator/worker_sessions.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/rpc/proto_time.h"
#include "coordinator/job/build_ahead.h"

namespace kbisect {
namespace {

std::string IdentityGpuUuids(const v1::RunnerIdentity& identity) {
  std::string uuids;
  for (const v1::GpuInfo& gpu : identity.gpus()) absl::StrAppend(&uuids, gpu.uuid(), ",");
  return uuids;
}

// A Synchronize's answer: what the poll was delivered added to `response` (a cancellation once,
// though the call under the lock may have named it too), and the leases' new expiry.
v1::SynchronizeResponse WithDelivery(v1::SynchronizeResponse response,
                                     WorkerMailbox::Delivery delivery, absl::Time lease_expire) {
  for (v1::Lease& lease : delivery.assignments) *response.add_assignments() = std::move(lease);
  for (v1::LeaseCancellation& cancel : delivery.cancellations) {
    const bool already = std::any_of(
        response.cancellations().begin(), response.cancellations().end(),
        [&](const v1::LeaseCancellation& c) { return c.lease_id() == cancel.lease_id(); });
    if (!already) *response.add_cancellations() = std::move(cancel);
  }
  *response.mutable_lease_expire_time() = ToProto(lease_expire);
  return response;
}

}  // namespace

WorkerSessions::WorkerSessions(Options options, kbisect::Mutex* mu, JournalWriter* journal,
                               IdMinter* ids, LeaseTable* leases, Clock* clock,
                               ResultCache* result_cache, MutatingReplies* replies,
                               JobSide job_side)
    : options_(options),
      mu_(mu),
      journal_(journal),
      ids_(ids),
      leases_(leases),
      clock_(clock),
      result_cache_(result_cache),
      replies_(replies),
      job_side_(std::move(job_side)),
      registry_(&mailboxes_),
      poll_scheduler_(std::make_unique<PollScheduler>(clock, kPollSchedulerThreads)),
      synchronize_calls_(std::make_unique<PollScheduler>(clock, kSynchronizeThreads)) {}

WorkerSessions::~WorkerSessions() { Stop(); }

void WorkerSessions::Stop() {
  synchronize_calls_.reset();  // The calls begun finish (their polls may wait).
  poll_scheduler_.reset();     // Every poll still waiting ends (its deadline is brought forward).
}

void WorkerSessions::Held(const kbisect::Mutex& mu) const {
  if (&mu != mu_) {
    std::cerr << "kbisect: WorkerSessions called with a mutex that is not the coordinator's\n"
              << std::flush;
    std::abort();
  }
  mu_->AssertHeld();
}

WorkerRegistry& WorkerSessions::registry(kbisect::Mutex& mu) {
  Held(mu);
  return registry_;
}

const WorkerRegistry& WorkerSessions::registry(kbisect::Mutex& mu) const {
  Held(mu);
  return registry_;
}

void WorkerSessions::Dispatched(kbisect::Mutex& mu, absl::Time now) {
  Held(mu);
  last_dispatch_ = now;
  last_dispatch_ns_.store(absl::ToUnixNanos(now));
}

void WorkerSessions::Shutdown(kbisect::Mutex& mu) {
  Held(mu);
  shutdown_ = true;
  // Each long poll waits on its session's mailbox: closed, it asks again and is refused.
  for (auto& [id, worker] : registry_.entries()) {
    if (worker.mailbox != nullptr) worker.mailbox->Close();
  }
}

// --- Sessions -----------------------------------------------------------------------------------

absl::StatusOr<v1::OpenSessionResponse> WorkerSessions::OpenSession(
    const v1::OpenSessionRequest& request) {
  ReplyPoint reply(*replies_);
  WriteLock lock(*mu_, *journal_);
  if (shutdown_) return absl::UnavailableError("the coordinator is shutting down");
  if (!journal_->writable(*mu_)) return journal_->Refusal(*mu_, true);
  const absl::Time now = clock_->Now();
  const std::string name =
      request.worker_name().empty() ? ids_->Next("anonymous-") : request.worker_name();
  WorkerEntry* worker = registry_.FindByName(name);
  if (worker == nullptr) {
    worker = &registry_.FindOrAdd(name);
    worker->name = name;
  } else {
    ReplaceSessionLocked(*worker, request, now);
  }
  if (!worker->identity.hardware_class().empty() &&
      (worker->identity.hardware_class() != request.identity().hardware_class() ||
       IdentityGpuUuids(worker->identity) != IdentityGpuUuids(request.identity()))) {
    job_side_.worker_left(*worker, JournalEntry::Kind::kForgetWorker,
                          "it reconnected with different hardware after a restart",
                          "it reconnected with a different GPU, driver or toolkit");
  }
  worker->identity = request.identity();
  worker->build_pool = BuildPool{request.build_pool(), request.build_pool_slots()};
  worker->build_store = request.build_store();
  worker->awaiting_reconnect = false;
  if (journal_->enabled()) {
    journal_->pending(*mu_).workers.push_back(
        StoredWorker{worker->worker_id, worker->name, worker->identity});
  }
  registry_.StartSession(*worker, ids_->Next("session-"), journal_->durable_batches());
  worker->state = v1::WORKER_STATE_IDLE;
  worker->ready = false;
  worker->draining = false;
  worker->last_seen = now;
  worker->connect_time = now;
  worker->StandingChanged();

  v1::OpenSessionResponse response;
  response.set_session_id(worker->session_id);
  response.set_worker_id(worker->worker_id);
  *response.mutable_heartbeat_interval() = ToProto(options_.heartbeat_interval);
  *response.mutable_lease_duration() = ToProto(options_.lease_duration);
  job_side_.dispatch();
  if (absl::Status flushed = journal_->Flush(*mu_); !flushed.ok()) {
    return journal_->Refusal(*mu_, true);
  }
  return response;
}

void WorkerSessions::ReplaceSessionLocked(WorkerEntry& worker,
                                          const v1::OpenSessionRequest& request, absl::Time now) {
  // A live session replaced: by another process of the same name (or a restarted one). Its poll
  // under the old session ends.
  registry_.EndSession(worker, /*superseded=*/true);
  // Leases of the previous session survive only if the worker still holds them. Over a copy:
  // losing a lease takes it off worker.leases.
  std::vector<std::string> keep;
  for (const std::string& lease_id : std::vector<std::string>(worker.leases)) {
    const bool held =
        std::any_of(request.held_leases().begin(), request.held_leases().end(),
                    [&](const v1::LeaseStatus& held) { return held.lease_id() == lease_id; });
    LeaseTable::Lease* lease = leases_->Find(lease_id);
    if (lease == nullptr || lease->state != LeaseTable::State::kActive) continue;
    if (held) {
      keep.push_back(lease_id);
      lease->expire = now + options_.lease_duration;
    } else {
      job_side_.lose_lease(*lease, "the worker reconnected without it");
    }
  }
  worker.leases = keep;
}

absl::Status WorkerSessions::CloseSession(const v1::CloseSessionRequest& request) {
  ReplyPoint reply(*replies_);
  WriteLock lock(*mu_, *journal_);
  WorkerEntry* worker = registry_.ForSession(request.session_id());
  if (worker == nullptr) return absl::OkStatus();
  for (const std::string& lease_id : std::vector<std::string>(worker->leases)) {
    job_side_.lose_lease(*leases_->Find(lease_id), "the worker closed its session");
  }
  registry_.EndSession(*worker, /*superseded=*/false);
  worker->ready = false;
  worker->state = v1::WORKER_STATE_LOST;
  job_side_.worker_left(*worker, JournalEntry::Kind::kWorkerGone, "it closed its session",
                        "it closed its session");
  job_side_.dispatch();
  if (absl::Status flushed = journal_->Flush(*mu_); !flushed.ok()) {
    return journal_->Refusal(*mu_, true);
  }
  return absl::OkStatus();
}

v1::ListWorkersResponse WorkerSessions::ListWorkers() const {
  kbisect::MutexLock lock(mu_);
  return registry_.List(*leases_);
}

// --- Synchronize --------------------------------------------------------------------------------

absl::StatusOr<v1::SynchronizeResponse> WorkerSessions::Synchronize(
    const v1::SynchronizeRequest& request) {
  kbisect::Mutex mu;
  kbisect::CondVar answered;
  std::optional<absl::StatusOr<v1::SynchronizeResponse>> reply;
  SynchronizeAsync(request, [&](absl::StatusOr<v1::SynchronizeResponse> answer) {
    kbisect::MutexLock lock(&mu);
    reply = std::move(answer);
    answered.SignalAll();
  });
  kbisect::MutexLock lock(&mu);
  while (!reply.has_value()) answered.Wait(&mu);
  return *std::move(reply);
}

void WorkerSessions::SynchronizeAsync(const v1::SynchronizeRequest& request, SynchronizeDone done) {
  const absl::Duration wait = request.has_wait()
                                  ? std::min(FromProto(request.wait()), options_.max_wait)
                                  : absl::ZeroDuration();
  // A poll that would change nothing here (no lease reported, ready, not draining, and by the
  // worker's standing in its mailbox no lease delivered) waits on the session's mailbox without
  // the coordinator's mutex, whose queue would otherwise be its whole latency under load. Its
  // heartbeat is recorded in the mailbox. It skips the dispatch that a heartbeat makes every
  // kRedispatchPeriod for what time alone changes, so it is taken only while some call
  // dispatched within that period.
  if (request.leases_size() == 0 && request.ready_for_work() && !request.draining() &&
      request.build_ahead_slots() == 0) {
    if (std::shared_ptr<WorkerMailbox> mailbox = mailboxes_.Find(request.session_id())) {
      const absl::Time now = clock_->Now();
      const absl::Time dispatched = absl::FromUnixNanos(last_dispatch_ns_.load());
      if (now - dispatched < kRedispatchPeriod) {
        if (const uint64_t sequence = mailbox->BeginPollWithoutChanges(now); sequence != 0) {
          AwaitSynchronize(request, v1::SynchronizeResponse(), mailbox, sequence,
                           wait > absl::ZeroDuration() ? now + wait : absl::InfinitePast(),
                           std::move(done));
          return;
        }
      }
    }
  }
  // The rest takes the coordinator's mutex, whose queue is long under load: it runs on a thread
  // of its own, not on gRPC's few callback threads, which would queue every poll behind it.
  synchronize_calls_->Run([this, request, done = std::move(done)]() mutable {
    ReplyPoint reply(*replies_);
    v1::SynchronizeResponse response;
    std::shared_ptr<WorkerMailbox> mailbox;
    uint64_t sequence = 0;
    absl::Time deadline;
    {
      // Its reply shows only what the mailbox holds, each item once its batch is durable, so a
      // poll that waits does not wait for the commit: the mailbox is told when it is done. One
      // that answers at once (no wait asked, or cancellations to carry) waits for its own
      // changes, so that its reply carries what it was handed.
      WriteLock lock(*mu_, *journal_, /*wait=*/false);
      if (absl::Status begun =
              BeginSynchronizeLocked(request, &response, &mailbox, &sequence, &deadline);
          !begun.ok()) {
        done(begun);
        return;
      }
      if (deadline == absl::InfinitePast()) (void)journal_->Flush(*mu_);
    }
    AwaitSynchronize(request, std::move(response), mailbox, sequence, deadline, std::move(done));
  });
}

void WorkerSessions::AwaitSynchronize(const v1::SynchronizeRequest& request,
                                      v1::SynchronizeResponse response,
                                      const std::shared_ptr<WorkerMailbox>& mailbox,
                                      uint64_t sequence, absl::Time deadline,
                                      SynchronizeDone done) {
  // A lease handed to the worker meanwhile is answered from the mailbox once durable; until then
  // the poll holds no thread.
  mailbox->AwaitAsync(
      sequence, deadline, poll_scheduler_.get(),
      [this, request, response = std::move(response), done = std::move(done)](
          WorkerMailbox::Outcome outcome, WorkerMailbox::Delivery delivery) mutable {
        done(AnswerSynchronize(request, std::move(response), outcome, std::move(delivery)));
      });
}

absl::StatusOr<v1::SynchronizeResponse> WorkerSessions::AnswerSynchronize(
    const v1::SynchronizeRequest& request, v1::SynchronizeResponse response,
    WorkerMailbox::Outcome outcome, WorkerMailbox::Delivery delivery) {
  if (outcome == WorkerMailbox::Outcome::kSuperseded) return response;
  if (outcome != WorkerMailbox::Outcome::kClosed && request.build_ahead_slots() == 0) {
    return WithDelivery(std::move(response), std::move(delivery),
                        clock_->Now() + options_.lease_duration);
  }
  ReplyPoint reply(*replies_);
  WriteLock lock(*mu_, *journal_);
  // A commit failed meanwhile (memory was rebuilt, the mailbox closed): what the poll may have
  // been handed was rolled back.
  if (!journal_->writable(*mu_)) return journal_->Refusal(*mu_, true);
  const std::string& session_id = request.session_id();
  WorkerEntry* worker = registry_.ForSession(session_id);
  if (worker == nullptr) {
    return registry_.UnknownSession(session_id, "the session ended while the call waited");
  }
  response = WithDelivery(std::move(response), std::move(delivery),
                          clock_->Now() + options_.lease_duration);
  // What the worker's host could build now, computed after the wait so it is fresh.
  for (v1::Task& task :
       job_side_.build_ahead(worker->identity.hardware_class(),
                             kBuildAheadHintsPerSlot * request.build_ahead_slots())) {
    *response.add_build_ahead() = std::move(task);
  }
  return response;
}

absl::Status WorkerSessions::BeginSynchronizeLocked(const v1::SynchronizeRequest& request,
                                                    v1::SynchronizeResponse* response,
                                                    std::shared_ptr<WorkerMailbox>* mailbox,
                                                    uint64_t* sequence, absl::Time* deadline) {
  if (shutdown_) return absl::UnavailableError("the coordinator is shutting down");
  if (!journal_->writable(*mu_)) return journal_->Refusal(*mu_, true);
  WorkerEntry* worker = registry_.ForSession(request.session_id());
  if (worker == nullptr) {
    return registry_.UnknownSession(request.session_id(),
                                    absl::StrCat("unknown session '", request.session_id(),
                                                 "' (the coordinator may have restarted); "
                                                 "open a new session"));
  }
  const absl::Time now = clock_->Now();
  const bool was_idle = worker->Idle();
  worker->last_seen = now;
  worker->draining = request.draining();
  *mailbox = worker->mailbox;
  *sequence = worker->mailbox->BeginPoll();  // A poll it left behind returns empty-handed.
  const bool lost = RenewLeasesLocked(*worker, request, now, response);
  worker->ready = request.ready_for_work() && !request.draining();
  // Its host measured a build: the jobs plan for the builds the host runs now (decision 190).
  const bool pool_changed = !worker->build_pool.name.empty() && request.build_pool_slots() > 0 &&
                            request.build_pool_slots() != worker->build_pool.slots;
  if (pool_changed) worker->build_pool.slots = request.build_pool_slots();
  worker->state = request.draining()       ? v1::WORKER_STATE_DRAINING
                  : worker->leases.empty() ? v1::WORKER_STATE_IDLE
                                           : v1::WORKER_STATE_BUSY;
  worker->StandingChanged();
  // Every other change dispatched when it was made, so a heartbeat that frees no worker and
  // loses no lease finds nothing new to hand out, except what time alone changed (a result
  // overdue, see PlanDispatch): that is looked at again every kRedispatchPeriod. A job that
  // declined the idle workers may take them now that their host's build slots changed.
  if (pool_changed) job_side_.pool_changed();
  if (lost || (!was_idle && worker->Idle()) || pool_changed ||
      now - last_dispatch_ >= kRedispatchPeriod) {
    job_side_.dispatch();
  }
  const absl::Duration wait = request.has_wait()
                                  ? std::min(FromProto(request.wait()), options_.max_wait)
                                  : absl::ZeroDuration();
  *deadline = response->cancellations_size() == 0 && wait > absl::ZeroDuration()
                  ? clock_->Now() + wait
                  : absl::InfinitePast();
  return absl::OkStatus();
}

bool WorkerSessions::RenewLeasesLocked(WorkerEntry& worker, const v1::SynchronizeRequest& request,
                                       absl::Time now, v1::SynchronizeResponse* response) {
  // Renew the leases the worker reports; tell it to drop the ones that are dead.
  for (const v1::LeaseStatus& status : request.leases()) {
    if (!leases_->Renew(status.lease_id(), worker.worker_id, now + options_.lease_duration)) {
      v1::LeaseCancellation* cancel = response->add_cancellations();
      cancel->set_lease_id(status.lease_id());
      cancel->set_reason("the lease is no longer valid");
    }
  }
  // Active leases the worker no longer reports, although it had them delivered, are lost.
  std::vector<std::string> lost;
  for (const std::string& lease_id : worker.leases) {
    const bool reported =
        std::any_of(request.leases().begin(), request.leases().end(),
                    [&](const v1::LeaseStatus& status) { return status.lease_id() == lease_id; });
    if (!reported && !worker.mailbox->Undelivered(lease_id)) lost.push_back(lease_id);
  }
  for (const std::string& lease_id : lost) {
    job_side_.lose_lease(*leases_->Find(lease_id), "the worker no longer holds it");
  }
  return !lost.empty();
}

// --- Results ------------------------------------------------------------------------------------

absl::StatusOr<v1::CompleteLeaseResponse> WorkerSessions::CompleteLease(
    const v1::CompleteLeaseRequest& request) {
  // The answer leaves only after the lock's release, i.e. after the result was committed.
  ReplyPoint reply(*replies_);
  std::optional<CacheWrite> cache_write;
  absl::StatusOr<v1::CompleteLeaseResponse> response;
  {
    WriteLock lock(*mu_, *journal_);
    response = CompleteLeaseLocked(request, &cache_write);
  }
  // The measurement joins the result cache after the lock's release, so that a SQLite write
  // holds up no other call; a failure costs a later reuse, not this bisect.
  if (cache_write.has_value() && result_cache_ != nullptr) {
    for (const v1::CachedResult& record : cache_write->records) {
      (void)result_cache_->Put(cache_write->spec_digest, record);
    }
  }
  return response;
}

absl::StatusOr<v1::CompleteLeaseResponse> WorkerSessions::CompleteLeaseLocked(
    const v1::CompleteLeaseRequest& request, std::optional<CacheWrite>* cache_write) {
  if (shutdown_) return absl::UnavailableError("the coordinator is shutting down");
  if (!journal_->writable(*mu_)) return journal_->Refusal(*mu_, true);
  v1::CompleteLeaseResponse response;
  WorkerEntry* worker = registry_.ForSession(request.session_id());
  if (worker == nullptr) {
    return registry_.UnknownSession(
        request.session_id(),
        absl::StrCat("unknown session '", request.session_id(), "'; open a new session"));
  }
  worker->last_seen = clock_->Now();
  switch (leases_->CheckResult(request.lease_id(), worker->worker_id, request.attempt())) {
    case LeaseTable::Fence::kUnknownLease:
      response.set_reason("unknown lease");
      return response;
    case LeaseTable::Fence::kNotHolder:
      return absl::PermissionDeniedError(
          absl::StrCat("lease ", request.lease_id(), " is not held by this worker"));
    case LeaseTable::Fence::kWrongAttempt:
      response.set_reason("attempt does not match the lease");
      return response;
    case LeaseTable::Fence::kDuplicate:
      response.set_accepted(true);
      response.set_duplicate(true);
      return response;
    case LeaseTable::Fence::kEnded:
      response.set_reason("the lease expired or was cancelled; the result is discarded");
      return response;
    case LeaseTable::Fence::kAccept:
      break;
  }
  ++worker->tasks_completed;
  response.set_accepted(true);
  // The measurement joins the result cache once the lock is released (CompleteLease).
  *cache_write = job_side_.lease_completed(*leases_->Find(request.lease_id()), request.result());
  job_side_.dispatch();
  // Accepted only once durable: after a failed commit the worker reports again later.
  if (absl::Status flushed = journal_->Flush(*mu_); !flushed.ok()) {
    return journal_->Refusal(*mu_, true);
  }
  return response;
}

}  // namespace kbisect
