// Copyright 2026 The kbisect Authors.
//
// SqliteJobStore round trips and open errors, and the Coordinator's crash recovery: a job run
// half way, the coordinator destroyed (as by kill -9: nothing is flushed that was not committed
// already), a new one recovered from the same database finishes it with the same culprit, with
// every accepted result counted exactly once, request ids and event logs intact.
#include "coordinator/job_store.h"

#include <sqlite3.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "coordinator/coordinator.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_repository_view.h"
#include "tests/testing/git_fixture.h"
#include "tests/unit/coordinator/recovery_testing.h"

namespace kbisect {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::kbisect::testing::kBranchCulprit;
using ::kbisect::testing::kCommits;
using ::kbisect::testing::kCulprit;
using ::kbisect::testing::Measure;
using ::kbisect::testing::RecoveryTest;
using ::kbisect::testing::Spec;
using ::kbisect::testing::TempDir;
using ::kbisect::testing::WriteFile;
using ::testing::HasSubstr;

// --- SqliteJobStore -----------------------------------------------------------------------------

// The journal record encodes its own arguments (LevelDB's VersionEdit does): every kind's name
// reads back, and a TakeTasks' workers, with or without a build pool, and a TaskFinished's result
// round-trip through the payload.
TEST(JournalEntryTest, TheRecordEncodesItsOwnArguments) {
  for (int k = 1; k <= 7; ++k) {
    const auto kind = static_cast<JournalEntry::Kind>(k);
    JournalEntry::Kind read = JournalEntry::Kind::kCancel;
    ASSERT_TRUE(JournalEntry::KindFromName(JournalEntry::KindName(kind), &read));
    EXPECT_EQ(read, kind);
  }
  JournalEntry::Kind unused;
  EXPECT_FALSE(JournalEntry::KindFromName("take_task", &unused));

  JournalEntry take;
  take.kind = JournalEntry::Kind::kTakeTasks;
  take.workers = {"node-a/gpu0", "node-b/gpu1"};
  take.pools["node-b/gpu1"] = BuildPool{"node-b:/cache", 3};
  JournalEntry take_read;
  take_read.kind = take.kind;
  ASSERT_TRUE(take_read.DecodePayload(take.EncodePayload()));
  EXPECT_EQ(take_read.workers, take.workers);
  ASSERT_EQ(take_read.pools.count("node-b/gpu1"), 1u);
  EXPECT_EQ(take_read.pools["node-b/gpu1"].slots, 3);
  EXPECT_EQ(take_read.pools.count("node-a/gpu0"), 0u);
  EXPECT_TRUE(take_read.built.empty());
  // Built commits, with or without a pool, read back; an entry without them as before.
  take.built["node-a/gpu0"] = {3, 17};
  take.built["node-b/gpu1"] = {5};
  JournalEntry built_read;
  built_read.kind = take.kind;
  ASSERT_TRUE(built_read.DecodePayload(take.EncodePayload()));
  EXPECT_EQ(built_read.workers, take.workers);
  EXPECT_EQ(built_read.built, take.built);
  EXPECT_EQ(built_read.pools.count("node-a/gpu0"), 0u) << "no pool is read from no pool";
  ASSERT_EQ(built_read.pools.count("node-b/gpu1"), 1u);
  EXPECT_EQ(built_read.pools["node-b/gpu1"].name, "node-b:/cache");

  JournalEntry finished;
  finished.kind = JournalEntry::Kind::kTaskFinished;
  finished.result.set_outcome(v1::TASK_OUTCOME_SUCCEEDED);
  finished.result.add_samples(1.5);
  JournalEntry finished_read;
  finished_read.kind = finished.kind;
  ASSERT_TRUE(finished_read.DecodePayload(finished.EncodePayload()));
  EXPECT_TRUE(MessageDifferencer::Equals(finished_read.result, finished.result));
  // A payload cut short does not parse.
  EXPECT_FALSE(take_read.DecodePayload(std::string("\0\0\0\x09node", 8)));
}

StoreChanges SomeChanges() {
  StoreChanges changes;
  StoredJob job;
  job.job_id = "job-1";
  job.request_id = "nightly-1";
  job.spec = Spec();
  job.commits.resize(3);
  for (int i = 0; i < 3; ++i) job.commits[i].set_sha(absl::StrCat("sha", i));
  job.create_time = absl::FromUnixNanos(1'800'000'000'123'456'789);
  changes.new_jobs.push_back(job);
  JournalEntry take;
  take.sequence = 1;
  take.kind = JournalEntry::Kind::kTakeTasks;
  take.time = job.create_time + absl::Seconds(1);
  take.workers = {"node/gpu0", "", "name with\nnewline", "node/gpu1"};
  // The build pools two of them announced (a worker without one is written as before).
  take.pools = {{"node/gpu0", {"node:/cache", 1}}, {"node/gpu1", {"node:/cache", 4}}};
  changes.entries.emplace_back("job-1", take);
  JournalEntry finished;
  finished.sequence = 2;
  finished.kind = JournalEntry::Kind::kTaskFinished;
  finished.time = job.create_time + absl::Seconds(2);
  finished.task_id = "job-1/p0";
  finished.result.set_outcome(v1::TASK_OUTCOME_SUCCEEDED);
  finished.result.add_samples(1.25);
  finished.result.set_log_tail(std::string("binary\0tail", 11));
  changes.entries.emplace_back("job-1", finished);
  JournalEntry started;
  started.sequence = 3;
  started.kind = JournalEntry::Kind::kTaskStarted;
  started.time = job.create_time + absl::Seconds(3);
  started.task_id = "job-1/p1";
  started.worker = "node/gpu0";
  started.attempt = 2;
  changes.entries.emplace_back("job-1", started);
  JournalEntry lost;
  lost.sequence = 4;
  lost.kind = JournalEntry::Kind::kTaskLost;
  lost.time = job.create_time + absl::Seconds(4);
  lost.task_id = "job-1/p1";
  lost.reason = "the coordinator restarted";
  changes.entries.emplace_back("job-1", lost);
  StoredWorker worker;
  worker.worker_id = "node/gpu0";
  worker.name = "node/gpu0";
  worker.identity.set_hardware_class("hc-1");
  changes.workers.push_back(worker);
  return changes;
}

TEST(SqliteJobStoreTest, RoundTripsJobsJournalsWorkersAndFinalStatuses) {
  TempDir tmp;
  const std::string path = tmp.Join("kbisect.db");
  const StoreChanges changes = SomeChanges();
  {
    absl::StatusOr<std::unique_ptr<SqliteJobStore>> store = SqliteJobStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->Commit(changes).ok());
    StoreChanges more;
    JournalEntry cancel;
    cancel.sequence = 5;
    cancel.kind = JournalEntry::Kind::kCancel;
    cancel.reason = "requested";
    more.entries.emplace_back("job-1", cancel);
    v1::JobStatus final_status;
    final_status.set_job_id("job-1");
    final_status.set_state(v1::JOB_STATE_CANCELLED);
    more.final_statuses.emplace_back("job-1", final_status);
    ASSERT_TRUE((*store)->Commit(more).ok());
  }
  absl::StatusOr<std::unique_ptr<SqliteJobStore>> store = SqliteJobStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<StoredState> state = (*store)->Load();
  ASSERT_TRUE(state.ok()) << state.status();
  ASSERT_EQ(state->jobs.size(), 1u);
  const StoredJob& job = state->jobs[0];
  EXPECT_EQ(job.job_id, "job-1");
  EXPECT_EQ(job.request_id, "nightly-1");
  EXPECT_TRUE(MessageDifferencer::Equals(job.spec, Spec()));
  ASSERT_EQ(job.commits.size(), 3u);
  EXPECT_EQ(job.commits[2].sha(), "sha2");
  EXPECT_EQ(job.create_time, changes.new_jobs[0].create_time);
  EXPECT_TRUE(job.has_final_status);
  EXPECT_EQ(job.final_status.state(), v1::JOB_STATE_CANCELLED);
  ASSERT_EQ(job.journal.size(), 5u);
  for (size_t i = 0; i < 4; ++i) {
    const JournalEntry& want = changes.entries[i].second;
    const JournalEntry& got = job.journal[i];
    EXPECT_EQ(got.sequence, want.sequence);
    EXPECT_EQ(got.kind, want.kind);
    EXPECT_EQ(got.time, want.time);
    EXPECT_EQ(got.workers, want.workers);
    ASSERT_EQ(got.pools.size(), want.pools.size());
    for (const auto& [worker, pool] : want.pools) {
      EXPECT_EQ(got.pools.at(worker).name, pool.name);
      EXPECT_EQ(got.pools.at(worker).slots, pool.slots);
    }
    EXPECT_EQ(got.task_id, want.task_id);
    EXPECT_EQ(got.worker, want.worker);
    EXPECT_EQ(got.attempt, want.attempt);
    EXPECT_EQ(got.reason, want.reason);
    EXPECT_TRUE(MessageDifferencer::Equals(got.result, want.result));
  }
  EXPECT_EQ(job.journal[4].kind, JournalEntry::Kind::kCancel);
  ASSERT_EQ(state->workers.size(), 1u);
  EXPECT_EQ(state->workers[0].identity.hardware_class(), "hc-1");
}

TEST(SqliteJobStoreTest, AFollowUpStoredWithItsKindAsAStringKeepsItsKind) {
  TempDir tmp;
  const std::string path = tmp.Join("kbisect.db");
  {
    absl::StatusOr<std::unique_ptr<SqliteJobStore>> store = SqliteJobStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->Commit(SomeChanges()).ok());
  }
  // As a coordinator before decision 184 stored a follow-up: JobSpec.follow_up a string in field
  // 26 (tag 0xd2 0x01, length-delimited), in the spec and in the spec of its final status
  // (JobStatus.spec, field 2).
  const std::string old_kind("\xd2\x01\x0dmerged_branch", 16);
  const std::string spec = Spec().SerializeAsString() + old_kind;
  v1::JobStatus final_status;
  final_status.set_job_id("job-1");
  final_status.set_state(v1::JOB_STATE_DONE);
  const std::string status = final_status.SerializeAsString() + "\x12\x10" + old_kind;
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* update = nullptr;
  ASSERT_EQ(
      sqlite3_prepare_v2(db, "UPDATE jobs SET spec = ?, final_status = ? WHERE job_id = 'job-1'",
                         -1, &update, nullptr),
      SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_bind_blob(update, 1, spec.data(), static_cast<int>(spec.size()), SQLITE_TRANSIENT);
  sqlite3_bind_blob(update, 2, status.data(), static_cast<int>(status.size()), SQLITE_TRANSIENT);
  ASSERT_EQ(sqlite3_step(update), SQLITE_DONE) << sqlite3_errmsg(db);
  sqlite3_finalize(update);
  sqlite3_close(db);

  absl::StatusOr<std::unique_ptr<SqliteJobStore>> store = SqliteJobStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<StoredState> state = (*store)->Load();
  ASSERT_TRUE(state.ok()) << state.status();
  ASSERT_EQ(state->jobs.size(), 1u);
  const StoredJob& job = state->jobs[0];
  EXPECT_EQ(job.spec.follow_up(), v1::FOLLOW_UP_KIND_MERGED_BRANCH);
  EXPECT_TRUE(job.spec.GetReflection()->GetUnknownFields(job.spec).empty());
  ASSERT_TRUE(job.has_final_status);
  EXPECT_EQ(job.final_status.state(), v1::JOB_STATE_DONE);
  EXPECT_EQ(job.final_status.spec().follow_up(), v1::FOLLOW_UP_KIND_MERGED_BRANCH);
  // The rest of the spec is as it was.
  v1::JobSpec without = job.spec;
  without.clear_follow_up();
  EXPECT_TRUE(MessageDifferencer::Equals(without, Spec()));
}

TEST(SqliteJobStoreTest, ACommitIsAllOrNothing) {
  TempDir tmp;
  absl::StatusOr<std::unique_ptr<SqliteJobStore>> store =
      SqliteJobStore::Open(tmp.Join("kbisect.db"));
  ASSERT_TRUE(store.ok()) << store.status();
  StoreChanges changes = SomeChanges();
  changes.entries[2].second.sequence = 7;  // A gap: the whole commit is refused.
  EXPECT_FALSE((*store)->Commit(changes).ok());
  EXPECT_TRUE((*store)->Load()->jobs.empty());
  EXPECT_TRUE((*store)->Load()->workers.empty());
  ASSERT_TRUE((*store)->Commit(SomeChanges()).ok());
  // The same entries again: already stored.
  StoreChanges again;
  again.entries = SomeChanges().entries;
  EXPECT_FALSE((*store)->Commit(again).ok());
  StoreChanges unknown;
  unknown.entries.emplace_back("job-404", SomeChanges().entries[0].second);
  EXPECT_EQ((*store)->Commit(unknown).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ((*store)->Load()->jobs[0].journal.size(), 4u);
}

TEST(SqliteJobStoreTest, OpenErrorsNameThePath) {
  TempDir tmp;
  WriteFile(tmp.Join("not-a-dir"), "a file");
  const std::string unreachable = tmp.Join("not-a-dir/kbisect.db");
  absl::StatusOr<std::unique_ptr<SqliteJobStore>> no_dir = SqliteJobStore::Open(unreachable);
  ASSERT_FALSE(no_dir.ok());
  EXPECT_THAT(no_dir.status().message(), HasSubstr(unreachable));

  const std::string corrupt = tmp.Join("corrupt.db");
  WriteFile(corrupt, std::string(8192, 'x'));
  absl::StatusOr<std::unique_ptr<SqliteJobStore>> bad = SqliteJobStore::Open(corrupt);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss) << bad.status();
  EXPECT_THAT(bad.status().message(), HasSubstr(corrupt));

  const std::string path = tmp.Join("kbisect.db");
  absl::StatusOr<std::unique_ptr<SqliteJobStore>> first = SqliteJobStore::Open(path);
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<std::unique_ptr<SqliteJobStore>> second = SqliteJobStore::Open(path);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.status().message(), HasSubstr("in use by another process"));
  EXPECT_THAT(second.status().message(), HasSubstr(path));
}

// --- Coordinator recovery -----------------------------------------------------------------------

TEST_F(RecoveryTest, AKilledCoordinatorResumesTheJobWithNothingLostOrCountedTwice) {
  Start();
  job_id_ = Submit();
  // Half way: baselines and a few rounds done, then every worker picks up a probe and the
  // coordinator dies while they run.
  for (int round = 0; round < 2; ++round) {
    Pickup();
    clock_.Advance(absl::Seconds(1));
    Report();
  }
  Pickup();
  const v1::JobStatus before = Job();
  ASSERT_EQ(before.state(), v1::JOB_STATE_BISECTING);
  const std::vector<v1::JobEvent> events_before = Events();
  ASSERT_GT(events_before.size(), 3u);
  std::map<std::string, v1::Lease> stale;  // Worker -> a lease of the old coordinator.
  int running = 0;
  for (const auto& [name, held] : held_) {
    running += static_cast<int>(held.size());
    if (!held.empty()) stale[name] = held[0];
  }
  ASSERT_GT(running, 0);
  const std::map<std::string, std::string> old_sessions = sessions_;

  Start();  // The old coordinator is gone without any goodbye; a new one recovers.
  EXPECT_EQ(recovered_.jobs, 1);
  EXPECT_EQ(recovered_.unfinished, 1);
  EXPECT_EQ(recovered_.orphaned_probes, running);
  EXPECT_EQ(recovered_.workers, 3);
  // Every probe finished before the crash is still finished, with the same samples.
  std::map<std::string, v1::Probe> after_restart;
  const v1::JobStatus restarted = Job();
  for (const v1::Probe& probe : restarted.probes()) after_restart[probe.probe_id()] = probe;
  for (const v1::Probe& probe : before.probes()) {
    if (probe.state() != v1::PROBE_STATE_FINISHED) continue;
    EXPECT_EQ(after_restart[probe.probe_id()].state(), v1::PROBE_STATE_FINISHED)
        << probe.probe_id();
    EXPECT_EQ(after_restart[probe.probe_id()].samples_size(), probe.samples_size());
  }

  // Old sessions and leases are unknown: a late result is rejected, never counted.
  for (const auto& [name, lease] : stale) {
    v1::CompleteLeaseRequest request;
    request.set_session_id(old_sessions.at(name));
    request.set_lease_id(lease.lease_id());
    request.set_attempt(lease.attempt());
    *request.mutable_result() = Measure(lease.task());
    EXPECT_EQ(coordinator_->CompleteLease(request).status().code(), absl::StatusCode::kNotFound);
    request.set_session_id(sessions_.at(name));
    absl::StatusOr<v1::CompleteLeaseResponse> late = coordinator_->CompleteLease(request);
    ASSERT_TRUE(late.ok()) << late.status();
    EXPECT_FALSE(late->accepted());
    EXPECT_THAT(late->reason(), HasSubstr("unknown lease"));
  }

  // The request id still finds the job; nothing was resolved again.
  EXPECT_EQ(Submit(), job_id_);
  EXPECT_EQ(repos_.resolves, 1);

  // A second crash in the middle of the rest, then the end.
  Pickup();
  Report();
  Pickup();
  int running_again = 0;
  for (const auto& [name, held] : held_) running_again += static_cast<int>(held.size());
  ASSERT_EQ(Job().state(), v1::JOB_STATE_BISECTING);
  Start();
  EXPECT_EQ(recovered_.orphaned_probes, running_again);
  EXPECT_GT(running_again, 0);
  RunToTheEnd();

  const v1::JobStatus after = Job();
  ASSERT_EQ(after.status(), v1::OUTCOME_CULPRIT_FOUND) << after.error();
  EXPECT_EQ(after.culprit().index(), kCulprit);
  EXPECT_EQ(after.job_id(), job_id_);
  // Every finished probe is backed by exactly one accepted result and vice versa (0 lost, 0
  // duplicated); re-dispatched probes show their next attempt.
  std::map<std::string, int> finished;
  bool saw_retry = false;
  for (const v1::Probe& probe : after.probes()) {
    if (probe.state() == v1::PROBE_STATE_FINISHED) ++finished[probe.probe_id()];
    saw_retry |= probe.attempt() >= 2;
  }
  EXPECT_EQ(finished, accepted_);
  EXPECT_TRUE(saw_retry);
  EXPECT_EQ(after.progress().probes_finished(), static_cast<int>(accepted_.size()));
  EXPECT_EQ(after.files_changed_size(), 1);

  // WatchJob from the start replays every event: those seen before the crash unchanged, then
  // the rest, numbered 1..N without gaps, ending with FINISHED.
  const std::vector<v1::JobEvent> events = Events();
  ASSERT_GE(events.size(), events_before.size());
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].sequence(), static_cast<int64_t>(i) + 1);
    if (i < events_before.size()) {
      EXPECT_TRUE(MessageDifferencer::Equals(events[i], events_before[i]))
          << events[i].DebugString() << "\nvs\n"
          << events_before[i].DebugString();
    }
  }
  EXPECT_EQ(events.back().kind(), v1::JOB_EVENT_KIND_FINISHED);
  EXPECT_EQ(events.back().job().culprit().index(), kCulprit);
}

TEST_F(RecoveryTest, ReplayReproducesAFinishedJobExactly) {
  Start();
  job_id_ = Submit();
  RunToTheEnd();
  const v1::JobStatus done = Job();
  ASSERT_EQ(done.status(), v1::OUTCOME_CULPRIT_FOUND);
  const std::vector<v1::JobEvent> events = Events();
  const int diffs = repos_.diffs;

  Start();
  EXPECT_EQ(recovered_.jobs, 1);
  EXPECT_EQ(recovered_.unfinished, 0);
  EXPECT_EQ(recovered_.orphaned_probes, 0);
  EXPECT_TRUE(MessageDifferencer::Equals(Job(), done)) << Job().DebugString() << "\nvs\n"
                                                       << done.DebugString();
  const std::vector<v1::JobEvent> replayed = Events();
  ASSERT_EQ(replayed.size(), events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_TRUE(MessageDifferencer::Equals(replayed[i], events[i])) << i;
  }
  EXPECT_EQ(repos_.diffs, diffs) << "the report was restored, not recomputed";
  // Nothing new is journaled by recovering a finished job.
  absl::StatusOr<StoredState> state = store_->Load();
  ASSERT_TRUE(state.ok());
  const size_t journal = state->jobs[0].journal.size();
  Start();
  EXPECT_EQ(store_->Load()->jobs[0].journal.size(), journal);
}

TEST_F(RecoveryTest, AWorkerThatDoesNotComeBackLeavesTheJob) {
  Start();
  job_id_ = Submit();
  for (int round = 0; round < 2; ++round) {
    Pickup();
    Report();
  }
  // Restart, and only w0 and w1 come back.
  coordinator_.reset();
  store_.reset();
  absl::StatusOr<std::unique_ptr<SqliteJobStore>> store =
      SqliteJobStore::Open(tmp_.Join("kbisect.db"));
  ASSERT_TRUE(store.ok());
  store_ = *std::move(store);
  CoordinatorOptions options;
  options.store = store_.get();
  options.lease_duration = absl::Seconds(10);
  options.reconnect_grace = absl::Seconds(10);
  coordinator_ = std::make_unique<Coordinator>(options, &repos_, &clock_);
  ASSERT_TRUE(coordinator_->Recover().ok());
  v1::ListWorkersResponse workers = coordinator_->ListWorkers();
  ASSERT_EQ(workers.workers_size(), 3);
  for (const v1::Worker& worker : workers.workers()) {
    EXPECT_EQ(worker.state(), v1::WORKER_STATE_LOST);
    EXPECT_EQ(worker.identity().hardware_class(), "hc-1");
  }
  sessions_.clear();
  held_.clear();
  for (const char* name : {"w0", "w1"}) {
    v1::OpenSessionRequest request;
    request.set_worker_name(name);
    request.mutable_identity()->set_hardware_class("hc-1");
    sessions_[name] = coordinator_->OpenSession(request)->session_id();
  }
  clock_.Advance(absl::Seconds(11));
  coordinator_->ExpireLeases();
  RunToTheEnd();
  const v1::JobStatus after = Job();
  ASSERT_EQ(after.status(), v1::OUTCOME_CULPRIT_FOUND) << after.error();
  EXPECT_EQ(after.culprit().index(), kCulprit);
}

TEST_F(RecoveryTest, AFollowUpJobSurvivesACoordinatorRestart) {
  repos_.AddMergedBranch(kCulprit, kCulprit - 6, 12);
  Start();
  job_id_ = Submit(/*descend_merges=*/true);
  for (int guard = 0; guard < 200 && Job().state() != v1::JOB_STATE_FOLLOWING_UP; ++guard) {
    Pickup();
    Report();
  }
  ASSERT_EQ(Job().state(), v1::JOB_STATE_FOLLOWING_UP);
  ASSERT_EQ(Job().culprit().sha(), FakeRepositoryView::MainSha(kCulprit));
  ASSERT_EQ(Job().follow_up_job_ids_size(), 1);
  const std::string branch_job = Job().follow_up_job_ids(0);
  // The branch job is under way (baselines measured, probes leased) when the coordinator dies.
  Pickup();
  Report();
  Pickup();
  Start();
  EXPECT_EQ(recovered_.jobs, 2);
  EXPECT_EQ(Job().state(), v1::JOB_STATE_FOLLOWING_UP);
  ASSERT_EQ(Job().follow_up_job_ids_size(), 1);
  EXPECT_EQ(Job().follow_up_job_ids(0), branch_job) << "found again by its request id";
  RunToTheEnd();
  const v1::JobStatus done = Job();
  EXPECT_EQ(done.status(), v1::OUTCOME_CULPRIT_FOUND) << done.error();
  EXPECT_EQ(done.merged_culprit().sha(), FakeRepositoryView::BranchSha(kBranchCulprit));
  v1::ListJobsRequest list;
  EXPECT_EQ(coordinator_->ListJobs(list).jobs_size(), 2) << "no follow-up was started twice";
  // One FINISHED event, the last one, carrying the merged result.
  const std::vector<v1::JobEvent> events = Events();
  int finished = 0;
  for (const v1::JobEvent& event : events) finished += event.kind() == v1::JOB_EVENT_KIND_FINISHED;
  EXPECT_EQ(finished, 1);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().kind(), v1::JOB_EVENT_KIND_FINISHED);
  EXPECT_EQ(events.back().job().merged_culprit().sha(),
            FakeRepositoryView::BranchSha(kBranchCulprit));
  // Once complete, a restart restores the merged result as stored.
  Start();
  EXPECT_EQ(Job().state(), v1::JOB_STATE_DONE);
  EXPECT_EQ(Job().merged_culprit().sha(), FakeRepositoryView::BranchSha(kBranchCulprit));
  EXPECT_EQ(coordinator_->ListJobs(list).jobs_size(), 2);
}

// --descend-pin: the culprit changes the pinned commit, the coordinator reads the pin at
// last-good and at the culprit and starts a dependency follow-up over the pinned repository,
// whose tasks carry the superproject's commit; it is found again after a restart, and its
// culprit is folded into the parent's dependency_culprits.
TEST_F(RecoveryTest, ADependencyFollowUpSurvivesACoordinatorRestart) {
  const std::string old_pin = FakeRepositoryView::DependencySha(0);
  const std::string new_pin = FakeRepositoryView::DependencySha(kCommits);
  repos_.SetFile(FakeRepositoryView::MainSha(kCulprit - 1), "cmake/llvm-hash.txt", old_pin + "\n");
  repos_.SetFile(FakeRepositoryView::MainSha(kCulprit), "cmake/llvm-hash.txt", new_pin + "\n");
  Start();
  v1::SubmitJobRequest request;
  *request.mutable_spec() = Spec();
  v1::DependencyPin* pin = request.mutable_spec()->add_descend_pins();
  pin->set_file("cmake/llvm-hash.txt");
  pin->set_repository("https://example.com/llvm.git");
  request.set_request_id("nightly-8");
  absl::StatusOr<v1::SubmitJobResponse> submitted = coordinator_->SubmitJob(request);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  job_id_ = submitted->job_id();
  for (int guard = 0; guard < 200 && Job().state() != v1::JOB_STATE_FOLLOWING_UP; ++guard) {
    Pickup();
    Report();
  }
  ASSERT_EQ(Job().state(), v1::JOB_STATE_FOLLOWING_UP) << Job().error();
  ASSERT_EQ(Job().follow_up_job_ids_size(), 1);
  const std::string dependency_job = Job().follow_up_job_ids(0);
  absl::StatusOr<v1::JobStatus> child = coordinator_->GetJob(dependency_job);
  ASSERT_TRUE(child.ok()) << child.status();
  EXPECT_EQ(child->spec().follow_up(), v1::FOLLOW_UP_KIND_DEPENDENCY);
  EXPECT_EQ(child->spec().repository(), "https://example.com/llvm.git");
  EXPECT_EQ(child->spec().good(), old_pin);
  EXPECT_EQ(child->spec().bad(), new_pin);
  EXPECT_EQ(child->spec().dependency().kind(), v1::DEPENDENCY_KIND_PIN_FILE);
  EXPECT_EQ(child->spec().dependency().superproject(), "/repo");
  EXPECT_EQ(child->spec().dependency().superproject_sha(), FakeRepositoryView::MainSha(kCulprit));
  // Its tasks carry the descent, for the worker to check the superproject out first.
  Pickup();
  int dependency_tasks = 0;
  for (const auto& [worker, leases] : held_) {
    for (const v1::Lease& lease : leases) {
      if (lease.task().job_id() != dependency_job) continue;
      ++dependency_tasks;
      EXPECT_EQ(lease.task().dependency().superproject_sha(),
                FakeRepositoryView::MainSha(kCulprit));
      EXPECT_EQ(lease.task().repository(), "https://example.com/llvm.git");
    }
  }
  EXPECT_GT(dependency_tasks, 0);
  Report();
  Pickup();
  Start();
  EXPECT_EQ(recovered_.jobs, 2);
  ASSERT_EQ(Job().follow_up_job_ids_size(), 1);
  EXPECT_EQ(Job().follow_up_job_ids(0), dependency_job) << "found again by its request id";
  RunToTheEnd();
  const v1::JobStatus done = Job();
  EXPECT_EQ(done.status(), v1::OUTCOME_CULPRIT_FOUND) << done.error();
  EXPECT_EQ(done.culprit().sha(), FakeRepositoryView::MainSha(kCulprit));
  ASSERT_EQ(done.dependency_culprits_size(), 1);
  EXPECT_EQ(done.dependency_culprits(0).commit().sha(),
            FakeRepositoryView::DependencySha(kCulprit));
  EXPECT_EQ(done.dependency_culprits(0).path(), "cmake/llvm-hash.txt");
  EXPECT_EQ(done.dependency_culprits(0).old_sha(), old_pin);
  EXPECT_EQ(done.dependency_culprits(0).new_sha(), new_pin);
  EXPECT_EQ(done.dependency_culprits(0).job_id(), dependency_job);
  v1::ListJobsRequest list;
  EXPECT_EQ(coordinator_->ListJobs(list).jobs_size(), 2) << "no follow-up was started twice";
  // Once complete, a restart restores the dependency's culprit as stored.
  Start();
  EXPECT_EQ(Job().state(), v1::JOB_STATE_DONE);
  ASSERT_EQ(Job().dependency_culprits_size(), 1);
  EXPECT_EQ(Job().dependency_culprits(0).commit().sha(),
            FakeRepositoryView::DependencySha(kCulprit));
}

TEST_F(RecoveryTest, AVersion1DatabaseIsUpgradedInPlace) {
  Start();
  job_id_ = Submit();
  for (int round = 0; round < 2; ++round) {
    Pickup();
    Report();
  }
  const v1::JobStatus before = Job();
  coordinator_.reset();
  store_.reset();
  // As kbisect 1ed1c4f left it: no event logs, no order across jobs, user_version 1.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(tmp_.Join("kbisect.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "ALTER TABLE jobs DROP COLUMN events; "
                         "ALTER TABLE journal DROP COLUMN global_seq; PRAGMA user_version=1",
                         nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);

  Start();
  EXPECT_EQ(recovered_.jobs, 1);
  EXPECT_EQ(Job().progress().probes_finished(), before.progress().probes_finished());
  RunToTheEnd();
  EXPECT_EQ(Job().culprit().index(), kCulprit);
  absl::StatusOr<StoredState> stored = store_->Load();
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_TRUE(stored->jobs[0].compacted);
}

TEST(MemoryJobStoreTest, RecoversLikeSqlite) {
  MemoryJobStore store;
  FakeClock clock;
  FakeRepositoryView repos(kCommits);
  CoordinatorOptions options;
  options.store = &store;
  std::string job_id;
  {
    Coordinator coordinator(options, &repos, &clock);
    ASSERT_TRUE(coordinator.Recover().ok());
    v1::SubmitJobRequest request;
    *request.mutable_spec() = Spec();
    job_id = coordinator.SubmitJob(request)->job_id();
    EXPECT_EQ(store.commits(), 1);
  }
  Coordinator coordinator(options, &repos, &clock);
  absl::StatusOr<RecoveryReport> recovered = coordinator.Recover();
  ASSERT_TRUE(recovered.ok());
  EXPECT_EQ(recovered->jobs, 1);
  EXPECT_EQ(coordinator.GetJob(job_id)->state(), v1::JOB_STATE_BASELINES);
}

}  // namespace
}  // namespace kbisect
