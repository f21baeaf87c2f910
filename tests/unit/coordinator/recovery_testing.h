// Copyright 2026 The kbisect Authors.
//
// What the coordinator's recovery tests share: a job spec over a FakeRepositoryView of kCommits
// commits whose step is at kCulprit (kBranchCulprit on a merged branch), deterministic
// measurements, and RecoveryTest, a coordinator on a SQLite database that a test can "kill"
// (destroy without any goodbye) and restart, with three workers driven by hand.
#ifndef KBISECT_TESTS_UNIT_COORDINATOR_RECOVERY_TESTING_H_
#define KBISECT_TESTS_UNIT_COORDINATOR_RECOVERY_TESTING_H_

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/coordinator.h"
#include "coordinator/job_store.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_repository_view.h"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace testing {

constexpr int kCommits = 64;
constexpr int kCulprit = 41;
// With a merged branch at kCulprit: the branch commit that regressed.
constexpr int kBranchCulprit = 7;

inline v1::JobSpec Spec() {
  v1::JobSpec spec;
  spec.set_repository("/repo");
  spec.set_good("v1");
  spec.add_bench_command("./bench.sh");
  spec.set_direction(v1::DIRECTION_LOWER_IS_BETTER);
  return spec;
}

inline v1::TaskResult Measure(const v1::Task& task) {
  v1::TaskResult result;
  result.set_outcome(v1::TASK_OUTCOME_SUCCEEDED);
  const std::string& sha = task.commit_sha();
  const bool on_branch = !sha.empty() && sha[0] == 'b';
  const double v = on_branch ? (std::stoi(sha.substr(1)) >= kBranchCulprit ? 2.0 : 1.0)
                             : (task.commit_index() >= kCulprit ? 2.0 : 1.0);
  for (int i = 0; i < 3; ++i) {
    result.add_samples(v);
    result.add_runs()->set_value(v);
  }
  result.set_metric_unit("ms");
  return result;
}

// A coordinator on a SQLite database that the test can "kill" and restart, and three workers
// driven deterministically (zero-wait Synchronize, a FakeClock that does not move).
class RecoveryTest : public ::testing::Test {
 protected:
  void Start() {
    coordinator_.reset();
    store_.reset();
    CoordinatorOptions options = options_;
    if (options.store == nullptr) {
      absl::StatusOr<std::unique_ptr<SqliteJobStore>> store =
          SqliteJobStore::Open(tmp_.Join("kbisect.db"));
      ASSERT_TRUE(store.ok()) << store.status();
      store_ = *std::move(store);
      options.store = store_.get();
    }
    coordinator_ = std::make_unique<Coordinator>(options, &repos_, &clock_);
    absl::StatusOr<RecoveryReport> recovered = coordinator_->Recover();
    ASSERT_TRUE(recovered.ok()) << recovered.status();
    recovered_ = *recovered;
    sessions_.clear();
    for (const char* name : {"w0", "w1", "w2"}) {
      v1::OpenSessionRequest request;
      request.set_worker_name(name);
      request.mutable_identity()->set_hardware_class("hc-1");
      sessions_[name] = coordinator_->OpenSession(request)->session_id();
      held_[name].clear();  // A restarted coordinator's workers drop what they held.
    }
  }

  // Every worker synchronizes (ready when it holds nothing) and picks up its assignments.
  void Pickup() {
    for (const auto& [name, session] : sessions_) {
      v1::SynchronizeRequest request;
      request.set_session_id(session);
      request.set_ready_for_work(held_[name].empty());
      for (const v1::Lease& lease : held_[name])
        request.add_leases()->set_lease_id(lease.lease_id());
      absl::StatusOr<v1::SynchronizeResponse> response = coordinator_->Synchronize(request);
      ASSERT_TRUE(response.ok()) << response.status();
      for (const v1::LeaseCancellation& cancel : response->cancellations()) {
        std::vector<v1::Lease>& held = held_[name];
        held.erase(
            std::remove_if(held.begin(), held.end(),
                           [&](const v1::Lease& l) { return l.lease_id() == cancel.lease_id(); }),
            held.end());
      }
      for (const v1::Lease& lease : response->assignments()) held_[name].push_back(lease);
    }
  }

  // Every worker reports the results of what it holds.
  void Report() {
    for (const auto& [name, session] : sessions_) {
      for (const v1::Lease& lease : std::exchange(held_[name], {})) {
        v1::CompleteLeaseRequest request;
        request.set_session_id(session);
        request.set_lease_id(lease.lease_id());
        request.set_attempt(lease.attempt());
        *request.mutable_result() = Measure(lease.task());
        absl::StatusOr<v1::CompleteLeaseResponse> response = coordinator_->CompleteLease(request);
        ASSERT_TRUE(response.ok()) << response.status();
        if (response->accepted() && !response->duplicate()) ++accepted_[lease.task().task_id()];
      }
    }
  }

  v1::JobStatus Job() {
    absl::StatusOr<v1::JobStatus> job = coordinator_->GetJob(job_id_);
    EXPECT_TRUE(job.ok()) << job.status();
    return job.ok() ? *job : v1::JobStatus();
  }

  std::string Submit(bool descend_merges = false) {
    v1::SubmitJobRequest request;
    *request.mutable_spec() = Spec();
    request.mutable_spec()->set_descend_merges(descend_merges);
    request.set_request_id("nightly-7");
    absl::StatusOr<v1::SubmitJobResponse> response = coordinator_->SubmitJob(request);
    EXPECT_TRUE(response.ok()) << response.status();
    return response.ok() ? response->job_id() : "";
  }

  // The events of the job up to its current revision.
  std::vector<v1::JobEvent> Events() {
    const int64_t revision = Job().revision();
    std::vector<v1::JobEvent> events;
    if (revision == 0) return events;
    absl::Status watched = coordinator_->WatchJob(job_id_, 0, [&](const v1::JobEvent& event) {
      events.push_back(event);
      return event.sequence() < revision;
    });
    return events;
  }

  void RunToTheEnd() {
    for (int guard = 0; guard < 200 && Job().state() != v1::JOB_STATE_DONE; ++guard) {
      Pickup();
      Report();
    }
  }

  TempDir tmp_;
  // Start() uses these, with store_ (a SQLite database in tmp_) unless they name a store.
  CoordinatorOptions options_;
  FakeClock clock_;
  FakeRepositoryView repos_{kCommits};
  std::unique_ptr<SqliteJobStore> store_;
  std::unique_ptr<Coordinator> coordinator_;
  RecoveryReport recovered_;
  std::map<std::string, std::string> sessions_;
  std::map<std::string, std::vector<v1::Lease>> held_;
  std::map<std::string, int> accepted_;  // Task id -> accepted results.
  std::string job_id_;
};

}  // namespace testing
}  // namespace kbisect

#endif  // KBISECT_TESTS_UNIT_COORDINATOR_RECOVERY_TESTING_H_
