// Copyright 2026 The kbisect Authors.
#include "bench/sim_workers.h"

#include <algorithm>
#include <deque>
#include <utility>

#include "absl/strings/str_cat.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"

namespace kbisect_bench {
namespace {

namespace v1 = ::kbisect::v1;

absl::Time FromTimestamp(const google::protobuf::Timestamp& t) {
  return absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
}

absl::Duration FromDuration(const google::protobuf::Duration& d) {
  return absl::Seconds(d.seconds()) + absl::Nanoseconds(d.nanos());
}

void SetDuration(absl::Duration d, google::protobuf::Duration* out) {
  const int64_t ns = absl::ToInt64Nanoseconds(d);
  out->set_seconds(ns / 1000000000);
  out->set_nanos(static_cast<int32_t>(ns % 1000000000));
}

double Ms(absl::Duration d) { return absl::ToDoubleMilliseconds(d); }

constexpr absl::Duration kRetryPause = absl::Milliseconds(20);
constexpr absl::Duration kRpcSlack = absl::Seconds(10);

}  // namespace

// One simulated worker: a chain of asynchronous calls, one in flight at a time, so its fields
// are touched by one callback after another and need no lock (except the context, which Stop
// cancels from another thread).
class SimulatedWorkers::Worker {
 public:
  enum class Step { kOpen, kSynchronize, kHeartbeat, kComplete };

  Worker(SimulatedWorkers* owner, int index, v1::WorkerService::Stub* stub)
      : owner_(owner), index_(index), stub_(stub) {}

  // Issues the call for `step`. The caller counted it in owner_->in_flight_.
  void Run(Step step) {
    switch (step) {
      case Step::kOpen:
        Open();
        break;
      case Step::kSynchronize:
        Synchronize();
        break;
      case Step::kHeartbeat:
        Heartbeat();
        break;
      case Step::kComplete:
        Complete();
        break;
    }
  }

  void Cancel() {
    kbisect::MutexLock lock(&mu_);
    if (context_ != nullptr) context_->TryCancel();
  }

  Step next() const { return next_; }
  Stats& stats() { return stats_; }

 private:
  // A fresh context for the next call, cancelled at once when the workers are stopping.
  grpc::ClientContext* NewContext(absl::Duration timeout) {
    kbisect::MutexLock lock(&mu_);
    context_ = std::make_unique<grpc::ClientContext>();
    context_->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
    if (owner_->stopping_.load()) context_->TryCancel();
    return context_.get();
  }

  void Open() {
    next_ = Step::kOpen;
    open_request_.Clear();
    open_request_.set_worker_name(absl::StrCat("sim-", index_));
    v1::RunnerIdentity* identity = open_request_.mutable_identity();
    identity->set_host(absl::StrCat("sim-host-", index_ / 8));
    identity->set_slot(absl::StrCat(index_ % 8));
    identity->set_hardware_class(owner_->options_.hardware_class);
    identity->set_hardware_class_label("simulated");
    open_response_.Clear();
    stub_->async()->OpenSession(NewContext(kRpcSlack), &open_request_, &open_response_,
                                [this](grpc::Status status) { OnOpen(status); });
  }

  void OnOpen(const grpc::Status& status) {
    if (!status.ok()) return Failed("OpenSession", status);
    session_id_ = open_response_.session_id();
    lease_duration_ = FromDuration(open_response_.lease_duration());
    ++stats_.sessions;
    Continue(Step::kSynchronize);
  }

  void Synchronize() {
    next_ = Step::kSynchronize;
    sync_request_.Clear();
    sync_request_.set_session_id(session_id_);
    sync_request_.set_ready_for_work(true);
    SetDuration(owner_->options_.idle_wait, sync_request_.mutable_wait());
    sync_response_.Clear();
    sent_ = absl::Now();
    stub_->async()->Synchronize(NewContext(owner_->options_.idle_wait + kRpcSlack), &sync_request_,
                                &sync_response_,
                                [this](grpc::Status status) { OnSynchronize(status); });
    if (!counted_poll_) {
      counted_poll_ = true;
      owner_->polling_.fetch_add(1);
    }
  }

  void OnSynchronize(const grpc::Status& status) {
    if (status.error_code() == grpc::StatusCode::NOT_FOUND) {
      // The coordinator does not know the session (it restarted): open a new one.
      return Continue(Step::kOpen);
    }
    if (!status.ok()) return Failed("Synchronize", status);
    const absl::Time received = absl::Now();
    stats_.cancellations += sync_response_.cancellations_size();
    for (v1::Lease& lease : *sync_response_.mutable_assignments()) {
      const absl::Time created = FromTimestamp(lease.expire_time()) - lease_duration_;
      stats_.dispatch_ms.push_back(Ms(received - std::max(sent_, created)));
      ++stats_.leases;
      todo_.push_back(std::move(lease));
    }
    Continue(todo_.empty() ? Step::kSynchronize : StartTask());
  }

  // The step that follows handing the next task of todo_ to the (simulated) GPU.
  Step StartTask() {
    if (owner_->options_.task_time <= absl::ZeroDuration()) return Step::kComplete;
    task_end_ = absl::Now() + owner_->options_.task_time;
    return Step::kHeartbeat;
  }

  void Heartbeat() {
    next_ = Step::kHeartbeat;
    const absl::Duration left = task_end_ - absl::Now();
    if (left <= absl::ZeroDuration()) return Complete();
    const v1::Lease& lease = todo_.front();
    sync_request_.Clear();
    sync_request_.set_session_id(session_id_);
    v1::LeaseStatus* status = sync_request_.add_leases();
    status->set_lease_id(lease.lease_id());
    status->set_attempt(lease.attempt());
    status->set_phase(v1::TASK_PHASE_BENCH);
    SetDuration(std::min(left, absl::Seconds(1)), sync_request_.mutable_wait());
    sync_response_.Clear();
    ++stats_.heartbeats;
    stub_->async()->Synchronize(NewContext(absl::Seconds(1) + kRpcSlack), &sync_request_,
                                &sync_response_,
                                [this](grpc::Status status) { OnHeartbeat(status); });
  }

  void OnHeartbeat(const grpc::Status& status) {
    if (status.error_code() == grpc::StatusCode::NOT_FOUND) {
      todo_.clear();
      return Continue(Step::kOpen);
    }
    if (!status.ok()) return Failed("Synchronize", status);
    stats_.cancellations += sync_response_.cancellations_size();
    for (const v1::LeaseCancellation& cancel : sync_response_.cancellations()) {
      if (!todo_.empty() && cancel.lease_id() == todo_.front().lease_id()) {
        ++stats_.dropped;
        todo_.pop_front();
        return Continue(todo_.empty() ? Step::kSynchronize : StartTask());
      }
    }
    Continue(absl::Now() >= task_end_ ? Step::kComplete : Step::kHeartbeat);
  }

  void Complete() {
    next_ = Step::kComplete;
    const v1::Lease& lease = todo_.front();
    complete_request_.Clear();
    complete_request_.set_session_id(session_id_);
    complete_request_.set_lease_id(lease.lease_id());
    complete_request_.set_attempt(lease.attempt());
    *complete_request_.mutable_result() = owner_->options_.measure(lease.task());
    complete_response_.Clear();
    sent_ = absl::Now();
    stub_->async()->CompleteLease(NewContext(kRpcSlack), &complete_request_, &complete_response_,
                                  [this](grpc::Status status) { OnComplete(status); });
  }

  void OnComplete(const grpc::Status& status) {
    if (status.error_code() == grpc::StatusCode::NOT_FOUND) {
      todo_.clear();  // A new session holds no lease: the coordinator gives them to others.
      return Continue(Step::kOpen);
    }
    if (!status.ok()) return Failed("CompleteLease", status);
    stats_.complete_ms.push_back(Ms(absl::Now() - sent_));
    ++(complete_response_.accepted() ? stats_.accepted : stats_.rejected);
    todo_.pop_front();
    Continue(todo_.empty() ? Step::kSynchronize : StartTask());
  }

  // Ends the call that just finished: issues `step` next unless the workers are stopping.
  void Continue(Step step) {
    if (!owner_->stopping_.load()) {
      owner_->in_flight_.fetch_add(1);
      Run(step);
    }
    owner_->in_flight_.fetch_sub(1);
  }

  // The call failed: try the same step again shortly (the count moves to the retry queue).
  void Failed(const char* rpc, const grpc::Status& status) {
    if (owner_->stopping_.load()) {
      owner_->in_flight_.fetch_sub(1);
      return;
    }
    ++stats_.errors;
    ++stats_.error_kinds[absl::StrCat(rpc, ": ", status.error_code(), " ",
                                      status.error_message().substr(0, 60))];
    owner_->Retry(this);
  }

  SimulatedWorkers* const owner_;
  const int index_;
  v1::WorkerService::Stub* const stub_;
  kbisect::Mutex mu_;
  std::unique_ptr<grpc::ClientContext> context_ ABSL_GUARDED_BY(mu_);

  Step next_ = Step::kOpen;
  std::string session_id_;
  absl::Duration lease_duration_ = absl::Seconds(10);
  absl::Time sent_;
  absl::Time task_end_;
  bool counted_poll_ = false;
  std::deque<v1::Lease> todo_;
  Stats stats_;
  v1::OpenSessionRequest open_request_;
  v1::OpenSessionResponse open_response_;
  v1::SynchronizeRequest sync_request_;
  v1::SynchronizeResponse sync_response_;
  v1::CompleteLeaseRequest complete_request_;
  v1::CompleteLeaseResponse complete_response_;
};

SimulatedWorkers::SimulatedWorkers(Options options) : options_(std::move(options)) {
  const int channels = std::max(1, std::min(options_.channels, options_.workers));
  for (int i = 0; i < channels; ++i) {
    grpc::ChannelArguments args;
    // Distinct arguments and a local subchannel pool: one TCP connection per channel.
    args.SetInt("kbisect.sim_channel", i);
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    channels_.push_back(
        grpc::CreateCustomChannel(options_.address, grpc::InsecureChannelCredentials(), args));
    stubs_.push_back(kbisect::v1::WorkerService::NewStub(channels_.back()));
  }
  for (int i = 0; i < options_.workers; ++i) {
    workers_.push_back(std::make_unique<Worker>(this, i, stubs_[i % channels].get()));
  }
  retry_thread_ = std::thread([this] { RetryLoop(); });
}

SimulatedWorkers::~SimulatedWorkers() {
  Stop(absl::Seconds(30));
  {
    kbisect::MutexLock lock(&retry_mu_);
    retry_stop_ = true;
  }
  retry_thread_.join();
}

bool SimulatedWorkers::Start(absl::Duration timeout) {
  for (std::unique_ptr<Worker>& worker : workers_) {
    in_flight_.fetch_add(1);
    worker->Run(Worker::Step::kOpen);
  }
  const absl::Time deadline = absl::Now() + timeout;
  while (polling_.load() < options_.workers) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

void SimulatedWorkers::Stop(absl::Duration timeout) {
  stopping_.store(true);
  for (std::unique_ptr<Worker>& worker : workers_) worker->Cancel();
  {
    kbisect::MutexLock lock(&retry_mu_);
    in_flight_.fetch_sub(static_cast<int64_t>(retries_.size()));
    retries_.clear();
  }
  const absl::Time deadline = absl::Now() + timeout;
  while (in_flight_.load() > 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
}

SimulatedWorkers::Stats SimulatedWorkers::stats() const {
  Stats all;
  for (const std::unique_ptr<Worker>& worker : workers_) {
    const Stats& one = worker->stats();
    all.dispatch_ms.insert(all.dispatch_ms.end(), one.dispatch_ms.begin(), one.dispatch_ms.end());
    all.complete_ms.insert(all.complete_ms.end(), one.complete_ms.begin(), one.complete_ms.end());
    all.leases += one.leases;
    all.accepted += one.accepted;
    all.rejected += one.rejected;
    all.cancellations += one.cancellations;
    all.dropped += one.dropped;
    all.heartbeats += one.heartbeats;
    all.sessions += one.sessions;
    all.errors += one.errors;
    for (const auto& [kind, count] : one.error_kinds) all.error_kinds[kind] += count;
  }
  return all;
}

void SimulatedWorkers::Retry(Worker* worker) {
  kbisect::MutexLock lock(&retry_mu_);
  if (stopping_.load()) {
    in_flight_.fetch_sub(1);
    return;
  }
  retries_.emplace_back(absl::Now() + kRetryPause, worker);
}

void SimulatedWorkers::RetryLoop() {
  while (true) {
    std::vector<Worker*> due;
    {
      kbisect::MutexLock lock(&retry_mu_);
      if (retry_stop_) return;
      const absl::Time now = absl::Now();
      auto first_later = std::stable_partition(
          retries_.begin(), retries_.end(),
          [now](const std::pair<absl::Time, Worker*>& r) { return r.first <= now; });
      for (auto it = retries_.begin(); it != first_later; ++it) due.push_back(it->second);
      retries_.erase(retries_.begin(), first_later);
    }
    for (Worker* worker : due) {
      // The count carried over from the failed call stays with the reissued one.
      worker->Run(worker->next());
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
}

}  // namespace kbisect_bench
