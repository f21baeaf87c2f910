// Copyright 2026 The kbisect Authors.
//
// Crash consistency of the Coordinator over a SQLite store, deterministically (FakeClock, workers
// driven by hand; the real daemons are swept in tests/integration/crash_sweep_test):
//   * a follow-up job's events keep their place and number in its parent's stream across a
//     restart (replay in commit order, the follow-up loaded where it was created);
//   * a finished job is compacted to its final status and its events, and comes back the same;
//   * --retain deletes finished jobs once they are older, with their follow-ups;
//   * a duplicated CompleteLease is counted once, a report on a lease that expired is rejected
//     before and after a restart, and a second process that takes over a worker's name leaves
//     the first one's lease and session dead (its reports are rejected, counted never);
//   * a store that cannot be written (disk full, read-only) makes the coordinator refuse
//     changes with what to do, serve reads, acknowledge nothing it did not persist and lose
//     nothing it did, and take writes again once the store does.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/sync/mutex.h"
#include "coordinator/coordinator.h"
#include "coordinator/job_store.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/unit/coordinator/recovery_testing.h"

namespace kbisect {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::kbisect::testing::kBranchCulprit;
using ::kbisect::testing::kCulprit;
using ::kbisect::testing::Measure;
using ::kbisect::testing::RecoveryTest;
using ::testing::HasSubstr;

// A MemoryJobStore whose writes fail, as a full or read-only disk's do, while `failure` is set.
class FailingJobStore : public JobStore {
 public:
  absl::StatusOr<StoredState> Load() override { return store_.Load(); }
  absl::Status Commit(const StoreChanges& changes) override {
    if (absl::Status failure = failure_status(); !failure.ok()) return failure;
    return store_.Commit(changes);
  }
  absl::Status CheckWritable() override { return failure_status(); }

  void set_failure(absl::Status failure) {
    kbisect::MutexLock lock(&mu_);
    failure_ = std::move(failure);
  }

 private:
  absl::Status failure_status() const {
    kbisect::MutexLock lock(&mu_);
    return failure_;
  }

  MemoryJobStore store_;
  mutable kbisect::Mutex mu_;
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
};

class CrashConsistencyTest : public RecoveryTest {
 protected:
  // Every event of `job_id` up to its revision.
  std::vector<v1::JobEvent> EventsOf(const std::string& job_id) {
    const int64_t revision = coordinator_->GetJob(job_id)->revision();
    std::vector<v1::JobEvent> events;
    if (revision == 0) return events;
    (void)coordinator_->WatchJob(job_id, 0, [&](const v1::JobEvent& event) {
      events.push_back(event);
      return event.sequence() < revision;
    });
    return events;
  }

  // `before` is a prefix of `after`, event for event.
  static void ExpectPrefix(const std::vector<v1::JobEvent>& before,
                           const std::vector<v1::JobEvent>& after) {
    ASSERT_LE(before.size(), after.size());
    for (size_t i = 0; i < before.size(); ++i) {
      EXPECT_TRUE(MessageDifferencer::Equals(before[i], after[i]))
          << "event " << i + 1 << ":\n"
          << before[i].DebugString() << "\nbecame\n"
          << after[i].DebugString();
    }
  }

  // The lease a worker holds, picking one up first.
  v1::Lease TakeLease(const std::string& name) {
    Pickup();
    EXPECT_FALSE(held_[name].empty()) << name << " got nothing";
    return held_[name].empty() ? v1::Lease() : held_[name].front();
  }

  v1::CompleteLeaseRequest ReportOf(const std::string& session, const v1::Lease& lease) {
    v1::CompleteLeaseRequest request;
    request.set_session_id(session);
    request.set_lease_id(lease.lease_id());
    request.set_attempt(lease.attempt());
    *request.mutable_result() = Measure(lease.task());
    return request;
  }

  // A copy: `job` is often a temporary.
  static std::optional<v1::Probe> ProbeOf(const v1::JobStatus& job, const std::string& task_id) {
    for (const v1::Probe& probe : job.probes()) {
      if (probe.probe_id() == task_id) return probe;
    }
    return std::nullopt;
  }
};

TEST_F(CrashConsistencyTest, AFollowUpsEventsKeepTheirNumbersInItsParentsStreamAcrossRestarts) {
  repos_.AddMergedBranch(kCulprit, kCulprit - 6, 12);
  Start();
  job_id_ = Submit(/*descend_merges=*/true);
  for (int guard = 0; guard < 200 && Job().state() != v1::JOB_STATE_FOLLOWING_UP; ++guard) {
    Pickup();
    Report();
  }
  ASSERT_EQ(Job().state(), v1::JOB_STATE_FOLLOWING_UP);
  // The branch job under way: its STARTED line and its first events are in the parent's stream.
  Pickup();
  Report();
  Pickup();
  const std::vector<v1::JobEvent> running = Events();
  Start();
  ExpectPrefix(running, Events());

  RunToTheEnd();
  ASSERT_EQ(Job().state(), v1::JOB_STATE_DONE);
  const std::vector<v1::JobEvent> done = Events();
  const std::vector<v1::JobEvent> branch = EventsOf(Job().follow_up_job_ids(0));
  ExpectPrefix(running, done);
  Start();
  const std::vector<v1::JobEvent> restored = Events();
  ASSERT_EQ(restored.size(), done.size());
  ExpectPrefix(done, restored);
  const std::vector<v1::JobEvent> branch_restored = EventsOf(Job().follow_up_job_ids(0));
  ASSERT_EQ(branch_restored.size(), branch.size());
  ExpectPrefix(branch, branch_restored);
  EXPECT_EQ(restored.back().job().merged_culprit().sha(),
            FakeRepositoryView::BranchSha(kBranchCulprit));
}

TEST_F(CrashConsistencyTest, AFinishedJobIsCompactedToItsStatusAndEvents) {
  Start();
  job_id_ = Submit();
  Pickup();
  Report();
  absl::StatusOr<StoredState> running = store_->Load();
  ASSERT_TRUE(running.ok());
  ASSERT_FALSE(running->jobs[0].compacted);
  EXPECT_GT(running->jobs[0].journal.size(), 3u);
  RunToTheEnd();
  const v1::JobStatus done = Job();
  ASSERT_EQ(done.status(), v1::OUTCOME_CULPRIT_FOUND);
  const std::vector<v1::JobEvent> events = Events();

  absl::StatusOr<StoredState> stored = store_->Load();
  ASSERT_TRUE(stored.ok());
  ASSERT_EQ(stored->jobs.size(), 1u);
  EXPECT_TRUE(stored->jobs[0].compacted);
  EXPECT_TRUE(stored->jobs[0].journal.empty());
  EXPECT_TRUE(stored->jobs[0].commits.empty());
  EXPECT_TRUE(stored->order.empty());
  EXPECT_EQ(stored->jobs[0].events.size(), events.size());

  Start();
  EXPECT_EQ(recovered_.jobs, 1);
  EXPECT_EQ(recovered_.unfinished, 0);
  EXPECT_TRUE(MessageDifferencer::Equals(Job(), done)) << Job().DebugString() << "\nvs\n"
                                                       << done.DebugString();
  const std::vector<v1::JobEvent> restored = Events();
  ASSERT_EQ(restored.size(), events.size());
  ExpectPrefix(events, restored);
  EXPECT_EQ(Submit(), job_id_) << "the request id still names it";
  v1::ListJobsRequest list;
  EXPECT_EQ(coordinator_->ListJobs(list).jobs(0).culprit_sha(), done.culprit().sha());
}

TEST_F(CrashConsistencyTest, RetainDeletesFinishedJobsOnceOlderWithTheirFollowUps) {
  repos_.AddMergedBranch(kCulprit, kCulprit - 6, 12);
  options_.retain = absl::Hours(1);
  Start();
  job_id_ = Submit(/*descend_merges=*/true);
  RunToTheEnd();
  ASSERT_EQ(Job().state(), v1::JOB_STATE_DONE);
  const std::string branch = Job().follow_up_job_ids(0);
  // A second job, still running, is kept whatever its age.
  v1::SubmitJobRequest second;
  *second.mutable_spec() = ::kbisect::testing::Spec();
  const std::string running = coordinator_->SubmitJob(second)->job_id();

  clock_.Advance(absl::Minutes(59));
  coordinator_->ExpireLeases();
  EXPECT_TRUE(coordinator_->GetJob(job_id_).ok()) << "kept for an hour";
  clock_.Advance(absl::Minutes(2));
  coordinator_->ExpireLeases();
  EXPECT_EQ(coordinator_->GetJob(job_id_).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(coordinator_->GetJob(branch).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(coordinator_->GetJob(running).ok());
  absl::StatusOr<StoredState> stored = store_->Load();
  ASSERT_TRUE(stored.ok());
  ASSERT_EQ(stored->jobs.size(), 1u);
  EXPECT_EQ(stored->jobs[0].job_id, running);
  // Forgotten with it: the request id starts a new job.
  EXPECT_NE(Submit(), job_id_);
}

TEST_F(CrashConsistencyTest, ADuplicatedCompleteLeaseIsCountedOnce) {
  Start();
  job_id_ = Submit();
  const std::string worker = "w0";
  const v1::Lease lease = TakeLease(worker);
  ASSERT_FALSE(lease.lease_id().empty());
  const v1::CompleteLeaseRequest request = ReportOf(sessions_.at(worker), lease);
  absl::StatusOr<v1::CompleteLeaseResponse> first = coordinator_->CompleteLease(request);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->accepted());
  EXPECT_FALSE(first->duplicate());
  const v1::JobStatus once = Job();
  // The same report again (its reply was lost): accepted as a duplicate, nothing added.
  absl::StatusOr<v1::CompleteLeaseResponse> again = coordinator_->CompleteLease(request);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->accepted());
  EXPECT_TRUE(again->duplicate());
  const v1::JobStatus twice = Job();
  EXPECT_EQ(twice.bench_runs(), once.bench_runs());
  ASSERT_TRUE(ProbeOf(twice, lease.task().task_id()).has_value());
  EXPECT_EQ(ProbeOf(twice, lease.task().task_id()).value().samples_size(), 3);
  // And after a restart (the worker retries on a new session): rejected, still counted once.
  Start();
  v1::CompleteLeaseRequest retried = request;
  retried.set_session_id(sessions_.at(worker));
  absl::StatusOr<v1::CompleteLeaseResponse> late = coordinator_->CompleteLease(retried);
  ASSERT_TRUE(late.ok()) << late.status();
  EXPECT_FALSE(late->accepted());
  EXPECT_THAT(late->reason(), HasSubstr("unknown lease"));
  EXPECT_EQ(Job().bench_runs(), once.bench_runs());
  EXPECT_EQ(ProbeOf(Job(), lease.task().task_id()).value().samples_size(), 3);
}

TEST_F(CrashConsistencyTest, AReportOnAnExpiredLeaseIsRejectedBeforeAndAfterARestart) {
  options_.lease_duration = absl::Seconds(10);
  Start();
  job_id_ = Submit();
  const std::string worker = "w0";
  const v1::Lease lease = TakeLease(worker);
  ASSERT_FALSE(lease.lease_id().empty());
  // Its worker goes silent past the lease; the others keep heartbeating.
  clock_.Advance(absl::Seconds(11));
  for (const char* other : {"w1", "w2"}) {
    v1::SynchronizeRequest beat;
    beat.set_session_id(sessions_.at(other));
    ASSERT_TRUE(coordinator_->Synchronize(beat).ok());
  }
  coordinator_->ExpireLeases();
  const v1::JobStatus expired = Job();
  v1::CompleteLeaseRequest request = ReportOf(sessions_.at(worker), lease);
  absl::StatusOr<v1::CompleteLeaseResponse> late = coordinator_->CompleteLease(request);
  ASSERT_TRUE(late.ok()) << late.status();
  EXPECT_FALSE(late->accepted());
  EXPECT_THAT(late->reason(), HasSubstr("expired"));
  EXPECT_EQ(Job().bench_runs(), expired.bench_runs());

  Start();
  request.set_session_id(sessions_.at(worker));
  late = coordinator_->CompleteLease(request);
  ASSERT_TRUE(late.ok()) << late.status();
  EXPECT_FALSE(late->accepted());
  EXPECT_THAT(late->reason(), HasSubstr("unknown lease"));
  EXPECT_EQ(Job().bench_runs(), expired.bench_runs());
  const std::optional<v1::Probe> probe = ProbeOf(Job(), lease.task().task_id());
  ASSERT_TRUE(probe.has_value());
  EXPECT_EQ(probe->samples_size(), 0) << "the late result is not in the probe";
}

TEST_F(CrashConsistencyTest, ASecondProcessWithTheSameNameLeavesTheFirstOnesLeaseDead) {
  Start();
  job_id_ = Submit();
  const std::string worker = "w0";
  const std::string first_session = sessions_.at(worker);
  const v1::Lease lease = TakeLease(worker);
  ASSERT_FALSE(lease.lease_id().empty());

  // Another process opens a session under the same name, holding nothing.
  v1::OpenSessionRequest open;
  open.set_worker_name(worker);
  open.mutable_identity()->set_hardware_class("hc-1");
  absl::StatusOr<v1::OpenSessionResponse> second = coordinator_->OpenSession(open);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_NE(second->session_id(), first_session);

  // The first process is told its name was taken over (it stops, rather than taking it back),
  // and its report is rejected: the probe is measured again under a new lease.
  v1::SynchronizeRequest beat;
  beat.set_session_id(first_session);
  beat.add_leases()->set_lease_id(lease.lease_id());
  absl::StatusOr<v1::SynchronizeResponse> stale = coordinator_->Synchronize(beat);
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kFailedPrecondition) << stale.status();
  EXPECT_THAT(stale.status().message(), HasSubstr("another process"));
  absl::StatusOr<v1::CompleteLeaseResponse> report =
      coordinator_->CompleteLease(ReportOf(first_session, lease));
  EXPECT_EQ(report.status().code(), absl::StatusCode::kFailedPrecondition) << report.status();
  const std::optional<v1::Probe> probe = ProbeOf(Job(), lease.task().task_id());
  ASSERT_TRUE(probe.has_value());
  EXPECT_EQ(probe->samples_size(), 0);
  // Reported on the new session, the old lease is dead too.
  absl::StatusOr<v1::CompleteLeaseResponse> on_new =
      coordinator_->CompleteLease(ReportOf(second->session_id(), lease));
  ASSERT_TRUE(on_new.ok()) << on_new.status();
  EXPECT_FALSE(on_new->accepted());
  EXPECT_EQ(ProbeOf(Job(), lease.task().task_id()).value().samples_size(), 0);
  sessions_[worker] = second->session_id();
  held_[worker].clear();
  RunToTheEnd();
  const v1::JobStatus done = Job();
  EXPECT_EQ(done.culprit().index(), kCulprit);
  int runs = 0;
  for (const v1::Probe& probe : done.probes()) runs += probe.runs_size();
  EXPECT_EQ(done.bench_runs(), runs);
}

TEST_F(CrashConsistencyTest, AStoreThatCannotBeWrittenRefusesChangesServesReadsAndLosesNothing) {
  FailingJobStore store;
  options_.store = &store;
  Start();
  job_id_ = Submit();
  for (int round = 0; round < 2; ++round) {
    Pickup();
    Report();
  }
  Pickup();
  const v1::JobStatus acknowledged = Job();
  const std::vector<v1::JobEvent> events = Events();
  ASSERT_EQ(acknowledged.state(), v1::JOB_STATE_BISECTING);

  // The disk fills up: the result reported now is not acknowledged (the worker keeps it and
  // reports again), and the job shows nothing that is not on disk.
  store.set_failure(
      absl::ResourceExhaustedError("job database kbisect.db: database or disk is full"));
  std::string worker;
  v1::Lease lease;
  for (const auto& [name, held] : held_) {
    if (!held.empty()) std::tie(worker, lease) = std::make_pair(name, held.front());
  }
  ASSERT_FALSE(worker.empty());
  absl::StatusOr<v1::CompleteLeaseResponse> report =
      coordinator_->CompleteLease(ReportOf(sessions_.at(worker), lease));
  EXPECT_EQ(report.status().code(), absl::StatusCode::kUnavailable) << report.status();
  EXPECT_TRUE(MessageDifferencer::Equals(Job(), acknowledged)) << Job().DebugString();

  // New jobs and cancellations are refused with what to do; worker calls are to be retried.
  v1::SubmitJobRequest another;
  *another.mutable_spec() = ::kbisect::testing::Spec();
  absl::StatusOr<v1::SubmitJobResponse> submitted = coordinator_->SubmitJob(another);
  EXPECT_EQ(submitted.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(submitted.status().message(), HasSubstr("database or disk is full"));
  EXPECT_THAT(submitted.status().message(), HasSubstr("Free space on the volume of --state-dir"));
  EXPECT_EQ(coordinator_->CancelJob(job_id_, "").status().code(),
            absl::StatusCode::kResourceExhausted);
  v1::OpenSessionRequest open;
  open.set_worker_name("w9");
  EXPECT_EQ(coordinator_->OpenSession(open).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(coordinator_->StoreHealth().ok());
  EXPECT_FALSE(coordinator_->Metrics().state_writable);
  // Reads go on.
  EXPECT_TRUE(MessageDifferencer::Equals(Job(), acknowledged));
  v1::ListJobsRequest list;
  EXPECT_EQ(coordinator_->ListJobs(list).jobs_size(), 1);
  ExpectPrefix(events, Events());
  EXPECT_EQ(Events().size(), events.size());

  // Read-only is refused the same way, as a precondition.
  store.set_failure(absl::PermissionDeniedError("job database kbisect.db: readonly database"));
  clock_.Advance(Coordinator::kWriteCheckPeriod);
  coordinator_->ExpireLeases();
  submitted = coordinator_->SubmitJob(another);
  EXPECT_EQ(submitted.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(submitted.status().message(), HasSubstr("Make --state-dir writable again"));

  // A coordinator restarted meanwhile finds everything acknowledged.
  {
    Coordinator restarted(options_, &repos_, &clock_);
    ASSERT_TRUE(restarted.Recover().ok());
    EXPECT_TRUE(MessageDifferencer::Equals(*restarted.GetJob(job_id_), acknowledged));
  }

  // Space again: within kWriteCheckPeriod the coordinator takes changes, and the job ends.
  store.set_failure(absl::OkStatus());
  clock_.Advance(Coordinator::kWriteCheckPeriod);
  coordinator_->ExpireLeases();
  EXPECT_TRUE(coordinator_->StoreHealth().ok()) << coordinator_->StoreHealth();
  EXPECT_TRUE(coordinator_->Metrics().state_writable);
  Start();
  RunToTheEnd();
  const v1::JobStatus done = Job();
  EXPECT_EQ(done.culprit().index(), kCulprit);
  std::map<std::string, const v1::Probe*> finished;
  for (const v1::Probe& probe : done.probes()) finished[probe.probe_id()] = &probe;
  for (const v1::Probe& probe : acknowledged.probes()) {
    if (probe.state() != v1::PROBE_STATE_FINISHED) continue;
    ASSERT_EQ(finished.count(probe.probe_id()), 1u) << probe.probe_id();
    EXPECT_EQ(finished[probe.probe_id()]->samples_size(), probe.samples_size());
  }
  EXPECT_TRUE(coordinator_->SubmitJob(another).ok());
}

TEST_F(CrashConsistencyTest, AStoreThatFailsMidRunRecoversWithoutARestart) {
  FailingJobStore store;
  options_.store = &store;
  Start();
  job_id_ = Submit();
  Pickup();
  Report();
  const v1::JobStatus acknowledged = Job();
  Pickup();
  store.set_failure(absl::InternalError("job database kbisect.db: disk I/O error"));
  // The results of what the workers hold cannot be persisted: none is acknowledged.
  for (auto& [name, held] : held_) {
    for (const v1::Lease& lease : std::exchange(held, {})) {
      EXPECT_EQ(coordinator_->CompleteLease(ReportOf(sessions_.at(name), lease)).status().code(),
                absl::StatusCode::kUnavailable);
    }
  }
  EXPECT_EQ(Job().progress().probes_finished(), acknowledged.progress().probes_finished());
  store.set_failure(absl::OkStatus());
  clock_.Advance(Coordinator::kWriteCheckPeriod);
  coordinator_->ExpireLeases();
  ASSERT_TRUE(coordinator_->StoreHealth().ok());
  // The workers' sessions ended with the rebuild: they open new ones and carry on.
  for (auto& [name, session] : sessions_) {
    v1::OpenSessionRequest open;
    open.set_worker_name(name);
    open.mutable_identity()->set_hardware_class("hc-1");
    absl::StatusOr<v1::OpenSessionResponse> reopened = coordinator_->OpenSession(open);
    ASSERT_TRUE(reopened.ok()) << reopened.status();
    session = reopened->session_id();
  }
  RunToTheEnd();
  EXPECT_EQ(Job().culprit().index(), kCulprit);
}

}  // namespace
}  // namespace kbisect
