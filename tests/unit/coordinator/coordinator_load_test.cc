// Copyright 2026 The kbisect Authors.
//
// The Coordinator with many workers: a job capped by max_workers is asked only about the workers
// it can use, and it still finds its culprit; calls that finish while a journal commit is in
// flight are committed together (group commit), each answered only once its changes are durable,
// and a reader is shown nothing that is not.
#include <atomic>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/sync/mutex.h"
#include "coordinator/coordinator.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_repository_view.h"
#include "tests/unit/coordinator/recovery_testing.h"

namespace kbisect {
namespace {

using ::kbisect::testing::Spec;  // The job spec the coordinator tests share.

v1::TaskResult Measure(const v1::Task& task, int culprit) {
  v1::TaskResult result;
  result.set_outcome(v1::TASK_OUTCOME_SUCCEEDED);
  result.set_metric_unit("ms");
  if (task.kind() == v1::PROBE_KIND_CONFIRM) {
    // A confirmation (spec.confirm) measures the culprit and its last good commit in task.runs()
    // interleaved pairs: the culprit's values as samples, the last good one's as paired_samples.
    const double wiggle[] = {1.0, 1.01, 0.99};
    for (int i = 0; i < task.runs(); ++i) {
      result.add_samples(2.0 * wiggle[i % 3]);
      result.add_runs()->set_value(2.0 * wiggle[i % 3]);
      result.add_paired_samples(wiggle[i % 3]);
    }
    return result;
  }
  const double v = task.commit_index() >= culprit ? 2.0 : 1.0;
  for (int i = 0; i < 3; ++i) {
    result.add_samples(v);
    result.add_runs()->set_value(v);
  }
  return result;
}

// A MemoryJobStore that also keeps every journal entry committed, in order: a finished job is
// compacted (its journal dropped), and the test reads what dispatch journaled.
class RecordingJobStore : public JobStore {
 public:
  absl::StatusOr<StoredState> Load() override { return store_.Load(); }
  absl::Status Commit(const StoreChanges& changes) override {
    absl::Status committed = store_.Commit(changes);
    if (committed.ok()) {
      kbisect::MutexLock lock(&mu_);
      for (const auto& [job_id, entry] : changes.entries) entries_.push_back(entry);
    }
    return committed;
  }
  std::vector<JournalEntry> entries() {
    kbisect::MutexLock lock(&mu_);
    return entries_;
  }

 private:
  MemoryJobStore store_;
  kbisect::Mutex mu_;
  std::vector<JournalEntry> entries_ ABSL_GUARDED_BY(mu_);
};

class CoordinatorLoadTest : public ::testing::Test {
 protected:
  CoordinatorLoadTest() : repos_(64), coordinator_(Options(&store_), &repos_, &clock_) {}

  static CoordinatorOptions Options(JobStore* store) {
    CoordinatorOptions options;
    options.store = store;
    return options;
  }

  std::string Open(const std::string& name) {
    v1::OpenSessionRequest request;
    request.set_worker_name(name);
    request.mutable_identity()->set_hardware_class("hc-1");
    absl::StatusOr<v1::OpenSessionResponse> response = coordinator_.OpenSession(request);
    EXPECT_TRUE(response.ok()) << response.status();
    return response->session_id();
  }

  v1::SynchronizeResponse Sync(const std::string& session) {
    v1::SynchronizeRequest request;
    request.set_session_id(session);
    request.set_ready_for_work(true);
    absl::StatusOr<v1::SynchronizeResponse> response = coordinator_.Synchronize(request);
    EXPECT_TRUE(response.ok()) << response.status();
    return *response;
  }

  void Complete(const std::string& session, const v1::Lease& lease, int culprit) {
    v1::CompleteLeaseRequest request;
    request.set_session_id(session);
    request.set_lease_id(lease.lease_id());
    request.set_attempt(lease.attempt());
    *request.mutable_result() = Measure(lease.task(), culprit);
    EXPECT_TRUE(coordinator_.CompleteLease(request).ok());
  }

  // Runs `job_id` to its end with every session answering at once; false if it does not end.
  bool RunToEnd(const std::string& job_id, const std::vector<std::string>& sessions, int culprit) {
    for (int guard = 0; guard < 500; ++guard) {
      absl::StatusOr<v1::JobStatus> job = coordinator_.GetJob(job_id);
      if (!job.ok()) return false;
      if (job->state() == v1::JOB_STATE_DONE) return true;
      for (const std::string& s : sessions) {
        const v1::SynchronizeResponse response = Sync(s);
        for (const v1::Lease& lease : response.assignments()) Complete(s, lease, culprit);
      }
    }
    return false;
  }

  FakeClock clock_;
  FakeRepositoryView repos_;
  RecordingJobStore store_;
  Coordinator coordinator_;
};

TEST_F(CoordinatorLoadTest, ACappedJobIsAskedAboutItsOwnWorkersAndAsManyOthersAsItHasRoomFor) {
  std::vector<std::string> sessions;
  for (int i = 0; i < 30; ++i) sessions.push_back(Open(absl::StrCat("w", i)));
  for (const std::string& s : sessions) Sync(s);
  v1::SubmitJobRequest submit;
  *submit.mutable_spec() = Spec();
  submit.mutable_spec()->set_max_workers(3);
  submit.mutable_spec()->set_confirm(true);
  absl::StatusOr<v1::SubmitJobResponse> submitted = coordinator_.SubmitJob(submit);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  ASSERT_TRUE(RunToEnd(submitted->job_id(), sessions, 41));
  absl::StatusOr<v1::JobStatus> job = coordinator_.GetJob(submitted->job_id());
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->status(), v1::OUTCOME_CULPRIT_FOUND) << job->error();
  EXPECT_EQ(job->culprit().index(), 41);

  // Each journaled TakeTasks names the job's own workers (those that started one of its tasks
  // before) and at most 3 others: never the 30 idle workers.
  std::set<std::string> used;
  int takes = 0;
  for (const JournalEntry& entry : store_.entries()) {
    if (entry.kind == JournalEntry::Kind::kTaskStarted) used.insert(entry.worker);
    if (entry.kind != JournalEntry::Kind::kTakeTasks) continue;
    ++takes;
    int others = 0;
    for (const std::string& worker : entry.workers) others += used.count(worker) == 0 ? 1 : 0;
    EXPECT_LE(others, 3) << "take_tasks entry " << entry.sequence;
  }
  EXPECT_GT(takes, 0);
  EXPECT_LE(used.size(), 30u);
}

TEST_F(CoordinatorLoadTest, AJobWithoutACapIsAskedAboutEveryIdleWorker) {
  std::vector<std::string> sessions;
  for (int i = 0; i < 6; ++i) sessions.push_back(Open(absl::StrCat("w", i)));
  for (const std::string& s : sessions) Sync(s);
  v1::SubmitJobRequest submit;
  *submit.mutable_spec() = Spec();
  absl::StatusOr<v1::SubmitJobResponse> submitted = coordinator_.SubmitJob(submit);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  absl::StatusOr<StoredState> stored = store_.Load();
  ASSERT_TRUE(stored.ok());
  ASSERT_FALSE(stored->jobs[0].journal.empty());
  const JournalEntry& first = stored->jobs[0].journal[0];
  ASSERT_EQ(first.kind, JournalEntry::Kind::kTakeTasks);
  EXPECT_EQ(first.workers.size(), 6u);
  EXPECT_TRUE(RunToEnd(submitted->job_id(), sessions, 17));
}

TEST_F(CoordinatorLoadTest, ALongPollEndsWhenItsWorkerIsHandedATask) {
  const std::string idle = Open("idle");
  const std::string busy = Open("busy");
  Sync(idle);
  std::atomic<int> assignments{-1};
  std::thread poll([&] {
    v1::SynchronizeRequest request;
    request.set_session_id(busy);
    request.set_ready_for_work(true);
    request.mutable_wait()->set_seconds(10);  // On the FakeClock, which nobody advances.
    absl::StatusOr<v1::SynchronizeResponse> response = coordinator_.Synchronize(request);
    assignments = response.ok() ? response->assignments_size() : -2;
  });
  // Both workers get a baseline; the one blocked in its poll is woken with its own.
  absl::SleepFor(absl::Milliseconds(100));  // Let the poll reach its wait.
  v1::SubmitJobRequest submit;
  *submit.mutable_spec() = Spec();
  ASSERT_TRUE(coordinator_.SubmitJob(submit).ok());
  poll.join();
  EXPECT_EQ(assignments.load(), 1);
}

// A MemoryJobStore whose commits wait while the test holds the gate closed.
class GatedJobStore : public JobStore {
 public:
  absl::StatusOr<StoredState> Load() override {
    {
      kbisect::MutexLock lock(&mu_);
      ++loads_;
    }
    return store_.Load();
  }
  int loads() {
    kbisect::MutexLock lock(&mu_);
    return loads_;
  }
  absl::Status Commit(const StoreChanges& changes) override {
    {
      kbisect::MutexLock lock(&mu_);
      ++entered_;
      mu_.Await(kbisect::Condition(&open_));
    }
    {
      kbisect::MutexLock lock(&mu_);
      if (fail_) return absl::ResourceExhaustedError("database or disk is full");
    }
    return store_.Commit(changes);
  }
  absl::Status CheckWritable() override {
    kbisect::MutexLock lock(&mu_);
    return fail_ ? absl::ResourceExhaustedError("database or disk is full") : absl::OkStatus();
  }
  // Every commit from now on fails, as on a full volume.
  void Fail() {
    kbisect::MutexLock lock(&mu_);
    fail_ = true;
  }
  void Close() {
    kbisect::MutexLock lock(&mu_);
    open_ = false;
  }
  void Open() {
    kbisect::MutexLock lock(&mu_);
    open_ = true;
  }
  // Blocks until `n` commits have started.
  void AwaitEntered(int n) {
    kbisect::MutexLock lock(&mu_);
    auto entered = [&] {
      mu_.AssertHeld();
      return entered_ >= n;
    };
    mu_.Await(kbisect::Condition(&entered));
  }
  int commits() const { return store_.commits(); }
  bool HasWorker(const std::string& name) {
    absl::StatusOr<StoredState> state = store_.Load();
    if (!state.ok()) return false;
    for (const StoredWorker& worker : state->workers) {
      if (worker.name == name) return true;
    }
    return false;
  }

 private:
  MemoryJobStore store_;
  kbisect::Mutex mu_;
  bool open_ ABSL_GUARDED_BY(mu_) = true;
  bool fail_ ABSL_GUARDED_BY(mu_) = false;
  int entered_ ABSL_GUARDED_BY(mu_) = 0;
  int loads_ ABSL_GUARDED_BY(mu_) = 0;
};

v1::OpenSessionRequest OpenRequest(const std::string& name) {
  v1::OpenSessionRequest request;
  request.set_worker_name(name);
  request.mutable_identity()->set_hardware_class("hc-1");
  return request;
}

// A coordinator over a GatedJobStore, whose commits a test holds and releases.
class GroupCommitTest : public ::testing::Test {
 protected:
  GroupCommitTest() : repos(16), coordinator(Options(&store), &repos, &clock) {}

  static CoordinatorOptions Options(JobStore* store) {
    CoordinatorOptions options;
    options.store = store;
    return options;
  }

  FakeClock clock;
  FakeRepositoryView repos;
  GatedJobStore store;
  Coordinator coordinator;
};

TEST_F(GroupCommitTest, CallsFinishingDuringACommitShareTheNextAndAnswerOnceDurable) {
  store.Close();
  std::atomic<int> answered{0};
  std::atomic<int> durable_when_answered{0};
  auto open = [&](const std::string& name) {
    ASSERT_TRUE(coordinator.OpenSession(OpenRequest(name)).ok());
    if (store.HasWorker(name)) ++durable_when_answered;
    ++answered;
  };
  // The first call leads a commit, which the gate holds; 15 more finish meanwhile.
  std::vector<std::thread> threads;
  threads.emplace_back(open, "w0");
  store.AwaitEntered(1);
  for (int i = 1; i < 16; ++i) threads.emplace_back(open, absl::StrCat("w", i));
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(answered.load(), 0) << "no call is answered before its changes are durable";
  store.Open();
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(answered.load(), 16);
  EXPECT_EQ(durable_when_answered.load(), 16);
  // The 15 that waited were committed together (unless this machine delayed some past it).
  EXPECT_LT(store.commits(), 16);
  EXPECT_GE(store.commits(), 2);
}

TEST_F(GroupCommitTest, AReaderIsShownOnlyWhatIsDurable) {
  store.Close();
  std::thread submit([&] {
    v1::SubmitJobRequest request;
    *request.mutable_spec() = Spec();
    ASSERT_TRUE(coordinator.SubmitJob(request).ok());
  });
  store.AwaitEntered(1);  // The job exists in memory; its commit is held.
  std::atomic<bool> listed{false};
  int jobs = -1;
  std::thread list([&] {
    jobs = coordinator.ListJobs(v1::ListJobsRequest()).jobs_size();
    listed = true;
  });
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_FALSE(listed.load()) << "ListJobs showed a job whose creation is not durable";
  store.Open();
  list.join();
  submit.join();
  EXPECT_EQ(jobs, 1);
  absl::StatusOr<StoredState> stored = store.Load();
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->jobs.size(), 1u);
}

TEST_F(GroupCommitTest, AWaitingPollIsHandedItsLeaseOnlyOnceTheLeaseIsDurable) {
  // The session's first poll makes its worker ready; there is no job yet, so it waits.
  absl::StatusOr<v1::OpenSessionResponse> opened = coordinator.OpenSession(OpenRequest("w1"));
  ASSERT_TRUE(opened.ok());
  std::atomic<int> assignments{-1};
  std::thread poll([&] {
    v1::SynchronizeRequest request;
    request.set_session_id(opened->session_id());
    request.set_ready_for_work(true);
    request.mutable_wait()->set_seconds(10);  // On the FakeClock, which nobody advances.
    absl::StatusOr<v1::SynchronizeResponse> response = coordinator.Synchronize(request);
    assignments = response.ok() ? response->assignments_size() : -2;
  });
  ASSERT_TRUE(clock.BlockUntilWaiters(1));  // The poll waits on its mailbox.
  store.Close();
  std::thread submit([&] {
    v1::SubmitJobRequest request;
    *request.mutable_spec() = Spec();
    ASSERT_TRUE(coordinator.SubmitJob(request).ok());
  });
  store.AwaitEntered(2);  // The job and w1's lease are in memory; their commit is held.
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(assignments.load(), -1) << "a lease was shown before its TaskStarted was durable";
  store.Open();
  poll.join();
  submit.join();
  EXPECT_EQ(assignments.load(), 1);
}

TEST_F(GroupCommitTest, AFailedBatchRefusesEveryCallWaitingOnItAndReloadsOnce) {
  v1::SubmitJobRequest submit;
  *submit.mutable_spec() = Spec();
  absl::StatusOr<v1::SubmitJobResponse> submitted = coordinator.SubmitJob(submit);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  const std::string job_id = submitted->job_id();

  store.Close();
  store.Fail();
  // A worker's call leads a commit, which the gate holds; a cancellation and a reader that sees
  // it wait for the next batch, which is lost with the first.
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    absl::Status opened = coordinator.OpenSession(OpenRequest("w0")).status();
    if (absl::IsUnavailable(opened)) ++refused;
  });
  store.AwaitEntered(1);
  threads.emplace_back([&] {
    absl::Status cancelled = coordinator.CancelJob(job_id, "test").status();
    if (absl::IsResourceExhausted(cancelled)) ++refused;
  });
  absl::SleepFor(absl::Milliseconds(200));  // Let the cancellation reach its wait.
  threads.emplace_back([&] {
    absl::StatusOr<v1::JobStatus> job = coordinator.GetJob(job_id);
    if (!job.ok() && absl::IsResourceExhausted(job.status())) ++refused;
  });
  absl::SleepFor(absl::Milliseconds(200));
  const int loads_before = store.loads();
  store.Open();
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(refused.load(), 3) << "every call waiting on the failed batch is refused";
  EXPECT_EQ(store.loads(), loads_before + 1) << "memory is rebuilt from the store once";
  // Reads only: what is shown is what the store has, the cancellation rolled back.
  absl::StatusOr<v1::JobStatus> job = coordinator.GetJob(job_id);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_NE(job->state(), v1::JOB_STATE_CANCELLED);
  EXPECT_TRUE(absl::IsResourceExhausted(coordinator.SubmitJob(submit).status()));
}

}  // namespace
}  // namespace kbisect
