// Copyright 2026 The kbisect Authors.
//
// JobTable on its own: creation order and positions, request ids, deletion, the renumbering of a
// restart, ListJobs' pages with their tokens and state filter, and Apply (what a call journals).
#include "coordinator/job_table.h"

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/rpc/proto_time.h"
#include "gtest/gtest.h"
#include "tests/unit/coordinator/bisect_job_testing.h"

namespace kbisect {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

// Adds a finished job `job_id` whose frozen status says `state`; a follow-up of `parent` when
// that is not empty.
JobEntry& AddJob(JobTable& table, const std::string& job_id, v1::JobState state,
                 const std::string& request_id = "", const std::string& parent = "") {
  JobEntry& entry = table.Add(job_id, request_id);
  v1::JobSpec spec;
  spec.set_parent_job_id(parent);
  if (!parent.empty()) spec.set_follow_up(v1::FOLLOW_UP_KIND_MERGED_BRANCH);
  spec.set_repository("/repo");
  spec.set_good("v1");
  spec.set_bad("v2");
  v1::JobStatus status;
  status.set_job_id(job_id);
  status.set_state(state);
  *status.mutable_spec() = spec;
  entry.job = BisectJob::Finished(job_id, spec, status, kNow);
  entry.published.Freeze(status);
  return entry;
}

std::vector<std::string> Ids(const v1::ListJobsResponse& page) {
  std::vector<std::string> ids;
  for (const v1::JobSummary& job : page.jobs()) ids.push_back(job.job_id());
  return ids;
}

TEST(JobTableTest, JobsAreNumberedInCreationOrderAndFoundByTheirRequestId) {
  JobTable table;
  EXPECT_TRUE(table.empty());
  EXPECT_EQ(AddJob(table, "job-b", v1::JOB_STATE_DONE, "req-1").position, 1u);
  EXPECT_EQ(AddJob(table, "job-a", v1::JOB_STATE_DONE).position, 2u);
  EXPECT_EQ(table.order(), (std::vector<std::string>{"job-b", "job-a"}));
  ASSERT_NE(table.JobOfRequest("req-1"), nullptr);
  EXPECT_EQ(*table.JobOfRequest("req-1"), "job-b");
  EXPECT_EQ(table.JobOfRequest("req-2"), nullptr);
  EXPECT_TRUE(table.contains("job-a"));
  EXPECT_EQ(table.Find("job-c"), nullptr);
}

TEST(JobTableTest, ADeletedJobTakesItsRequestIdAlongAndItsPositionIsNotReused) {
  JobTable table;
  AddJob(table, "job-1", v1::JOB_STATE_DONE, "req-1");
  AddJob(table, "job-2", v1::JOB_STATE_DONE);
  table.Erase("job-1");
  table.Erase("job-9");  // Unknown: nothing happens.
  EXPECT_EQ(table.JobOfRequest("req-1"), nullptr);
  EXPECT_EQ(table.order(), (std::vector<std::string>{"job-2"}));
  EXPECT_EQ(AddJob(table, "job-3", v1::JOB_STATE_DONE).position, 3u);
}

TEST(JobTableTest, RenumberPutsTheStoredOrderFirstThenTheRestAndCountsFromOne) {
  JobTable table;
  AddJob(table, "job-c", v1::JOB_STATE_DONE);
  AddJob(table, "job-a", v1::JOB_STATE_DONE);
  AddJob(table, "job-b", v1::JOB_STATE_DONE);
  table.Renumber({"job-b", "job-gone", "job-c", "job-b"});
  EXPECT_EQ(table.order(), (std::vector<std::string>{"job-b", "job-c", "job-a"}));
  EXPECT_EQ(table.at("job-b").position, 1u);
  EXPECT_EQ(table.at("job-c").position, 2u);
  EXPECT_EQ(table.at("job-a").position, 3u);
  EXPECT_EQ(AddJob(table, "job-d", v1::JOB_STATE_DONE).position, 4u);
}

TEST(JobTableTest, PagesWalkNewestFirstWithoutRepeatsOrGapsWhileJobsComeAndGo) {
  JobTable table;
  for (int i = 1; i <= 5; ++i) AddJob(table, "job-" + std::to_string(i), v1::JOB_STATE_DONE);
  v1::ListJobsRequest request;
  request.set_page_size(2);
  v1::ListJobsResponse page = table.List(request);
  EXPECT_EQ(Ids(page), (std::vector<std::string>{"job-5", "job-4"}));
  EXPECT_EQ(page.next_page_token(), "before:3");
  // Between pages, a job is submitted and one of the next page's is deleted.
  AddJob(table, "job-6", v1::JOB_STATE_DONE);
  table.Erase("job-3");
  request.set_page_token(page.next_page_token());
  page = table.List(request);
  EXPECT_EQ(Ids(page), (std::vector<std::string>{"job-2", "job-1"}));
  EXPECT_TRUE(page.next_page_token().empty());
  // A token that does not parse starts from the newest.
  request.set_page_token("after:2");
  EXPECT_EQ(Ids(table.List(request)), (std::vector<std::string>{"job-6", "job-5"}));
}

TEST(JobTableTest, TheStateFilterAndThePageSizeBounds) {
  JobTable table;
  AddJob(table, "job-1", v1::JOB_STATE_DONE);
  AddJob(table, "job-2", v1::JOB_STATE_CANCELLED);
  AddJob(table, "job-3", v1::JOB_STATE_DONE);
  v1::ListJobsRequest request;
  request.add_states(v1::JOB_STATE_CANCELLED);
  const v1::ListJobsResponse cancelled = table.List(request);
  EXPECT_EQ(Ids(cancelled), (std::vector<std::string>{"job-2"}));
  EXPECT_EQ(cancelled.jobs(0).state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(cancelled.jobs(0).repository(), "/repo");
  EXPECT_EQ(cancelled.jobs(0).good(), "v1");

  JobTable many;
  for (int i = 0; i < JobTable::kMaxListedJobs + 1; ++i) {
    AddJob(many, "job-" + std::to_string(i), v1::JOB_STATE_DONE);
  }
  EXPECT_EQ(many.List(v1::ListJobsRequest()).jobs_size(), JobTable::kDefaultListedJobs);
  v1::ListJobsRequest huge;
  huge.set_page_size(1'000'000);
  EXPECT_EQ(many.List(huge).jobs_size(), JobTable::kMaxListedJobs);
}

v1::JobEvent Event(v1::JobEventKind kind, const std::string& message) {
  v1::JobEvent event;
  event.set_kind(kind);
  event.set_message(message);
  return event;
}

TEST(JobTableTest, AFollowUpsEventsAlsoReachItsAncestorsStreamsPrefixedButNotItsEnd) {
  JobTable table;
  JobEntry& root = AddJob(table, "job-1", v1::JOB_STATE_BISECTING);
  JobEntry& child = AddJob(table, "job-2", v1::JOB_STATE_BISECTING, "", "job-1");
  JobEntry& grandchild = AddJob(table, "job-3", v1::JOB_STATE_BISECTING, "", "job-2");
  table.AppendEvent(root, Event(v1::JOB_EVENT_KIND_STARTED, "bisecting"));
  table.AppendEvent(grandchild, Event(v1::JOB_EVENT_KIND_STARTED, "started"));
  table.AppendEvent(child, Event(v1::JOB_EVENT_KIND_PROBE_FINISHED, "step 1"));
  table.AppendEvent(child, Event(v1::JOB_EVENT_KIND_FINISHED, "done"));

  ASSERT_EQ(grandchild.events.size(), 1u);
  EXPECT_EQ(grandchild.events[0].sequence(), 1);
  ASSERT_EQ(child.events.size(), 3u);
  EXPECT_EQ(child.events[0].message(), "[merged branch] started");
  EXPECT_EQ(child.events[0].kind(), v1::JOB_EVENT_KIND_WARNING) << "a progress line there";
  EXPECT_EQ(child.events[2].kind(), v1::JOB_EVENT_KIND_FINISHED);
  EXPECT_EQ(child.events[2].sequence(), 3);
  ASSERT_EQ(root.events.size(), 3u) << "the child's FINISHED stays in its own stream";
  EXPECT_EQ(root.events[1].message(), "[merged branch] [merged branch] started");
  EXPECT_EQ(root.events[2].message(), "[merged branch] step 1");
  EXPECT_EQ(root.events[2].sequence(), 3);
  EXPECT_EQ(root.published.Build(root.job->status()).revision(), 3);

  // A complete parent's stream is closed: its FINISHED was the last event.
  root.complete = true;
  table.AppendEvent(child, Event(v1::JOB_EVENT_KIND_WARNING, "late"));
  EXPECT_EQ(root.events.size(), 3u);
  EXPECT_EQ(child.events.size(), 4u);
}

TEST(JobTableTest, AFamilyIsTheJobThenItsFollowUpsBreadthFirst) {
  JobTable table;
  JobEntry& root = AddJob(table, "job-1", v1::JOB_STATE_DONE);
  JobEntry& merged = AddJob(table, "job-2", v1::JOB_STATE_DONE, "", "job-1");
  AddJob(table, "job-3", v1::JOB_STATE_DONE, "", "job-1");
  AddJob(table, "job-4", v1::JOB_STATE_DONE, "", "job-2");
  root.follow_ups = {"job-2", "job-3", "job-gone"};
  merged.follow_ups = {"job-4"};
  EXPECT_EQ(table.Family("job-1"), (std::vector<std::string>{"job-1", "job-2", "job-3", "job-4"}));
  EXPECT_EQ(table.Family("job-2"), (std::vector<std::string>{"job-2", "job-4"}));
  EXPECT_TRUE(table.Family("job-9").empty());
}

TEST(JobTableTest, RetainExpiresCompleteTopLevelJobsWithTheirFollowUps) {
  const absl::Duration retain = absl::Hours(1);
  JobTable table;
  // Finished two hours ago, with a follow-up: both expire.
  JobEntry& old = AddJob(table, "job-old", v1::JOB_STATE_DONE);
  v1::JobStatus finished = *old.published.frozen();
  *finished.mutable_finish_time() = ToProto(kNow - absl::Hours(2));
  old.published.Freeze(finished);
  old.complete = true;
  old.follow_ups = {"job-old-branch"};
  AddJob(table, "job-old-branch", v1::JOB_STATE_DONE, "", "job-old").complete = true;
  // Finished ten minutes ago: kept.
  JobEntry& recent = AddJob(table, "job-recent", v1::JOB_STATE_DONE);
  finished = *recent.published.frozen();
  *finished.mutable_finish_time() = ToProto(kNow - absl::Minutes(10));
  recent.published.Freeze(finished);
  recent.complete = true;
  // Not complete (a follow-up of it still runs): kept, however old.
  AddJob(table, "job-waiting", v1::JOB_STATE_DONE);
  EXPECT_EQ(table.ExpiredFamilies(kNow + absl::Hours(1), retain).size(), 3u)
      << "an hour later the recent one expires too";
  EXPECT_EQ(table.ExpiredFamilies(kNow, retain),
            (std::vector<std::string>{"job-old", "job-old-branch"}));

  EXPECT_TRUE(table.EraseExpired(kNow, absl::InfiniteDuration()).empty()) << "kept forever";
  EXPECT_EQ(table.EraseExpired(kNow, retain),
            (std::vector<std::string>{"job-old", "job-old-branch"}));
  EXPECT_EQ(table.order(), (std::vector<std::string>{"job-recent", "job-waiting"}));
  EXPECT_TRUE(table.EraseExpired(kNow, retain).empty()) << "gone already";
}

TEST(JobTableTest, StoredJobsComeBackRunningOrCompacted) {
  JobTable table;
  // A job stored while it ran: its state machine starts again from its arguments, and the final
  // status it was stored with waits for its replay.
  StoredJob running;
  running.job_id = "job-running";
  running.request_id = "request-1";
  running.spec = bisect_job_testing::MakeSpec();
  running.commits = bisect_job_testing::MakeCommits(16);
  running.create_time = kNow;
  running.has_final_status = true;
  running.final_status.set_job_id("job-running");
  JobEntry& replayed = table.AddStored(running);
  EXPECT_FALSE(replayed.job->finished());
  EXPECT_EQ(replayed.job->status().job_id(), "job-running");
  EXPECT_TRUE(replayed.has_stored_final);
  EXPECT_FALSE(replayed.spec_digest.empty());
  EXPECT_FALSE(replayed.complete);
  ASSERT_NE(table.JobOfRequest("request-1"), nullptr);
  EXPECT_EQ(*table.JobOfRequest("request-1"), "job-running");

  // A compacted job: its final status and events as stored, complete, its follow-ups known.
  StoredJob compacted;
  compacted.job_id = "job-compacted";
  compacted.spec = bisect_job_testing::MakeSpec();
  compacted.compacted = true;
  compacted.create_time = kNow;
  compacted.final_status.set_job_id("job-compacted");
  compacted.final_status.set_state(v1::JOB_STATE_DONE);
  compacted.final_status.add_follow_up_job_ids("job-child");
  compacted.events.resize(3);
  JobEntry& restored = table.AddCompacted(compacted);
  EXPECT_TRUE(restored.job->finished());
  EXPECT_TRUE(restored.complete);
  EXPECT_TRUE(restored.reported);
  EXPECT_EQ(restored.State(), v1::JOB_STATE_DONE);
  EXPECT_EQ(restored.events.size(), 3u);
  EXPECT_EQ(restored.Status().revision(), 3);
  EXPECT_EQ(restored.follow_ups, (std::vector<std::string>{"job-child"}));
  EXPECT_EQ(table.order(), (std::vector<std::string>{"job-running", "job-compacted"}));
}

// A running job `job_id` over 16 commits that builds with `make`, on `hardware_class` ("": any).
JobEntry& AddRunningJob(JobTable& table, const std::string& job_id,
                        const std::string& hardware_class) {
  JobEntry& entry = table.Add(job_id, "");
  v1::JobSpec spec = bisect_job_testing::MakeSpec();
  spec.set_build_command("make");
  spec.set_hardware_class(hardware_class);
  entry.job = std::make_unique<BisectJob>(job_id, spec, bisect_job_testing::MakeCommits(16), kNow);
  return entry;
}

std::set<std::string> JobsOf(const std::vector<v1::Task>& hints) {
  std::set<std::string> jobs;
  for (const v1::Task& task : hints) {
    EXPECT_EQ(task.kind(), v1::PROBE_KIND_BUILD);
    EXPECT_EQ(task.build_command(), "make");
    jobs.insert(task.job_id());
  }
  return jobs;
}

TEST(JobTableTest, BuildAheadHintsComeFromTheRunningJobsOfTheWorkersClass) {
  SessionMailboxes mailboxes;
  WorkerRegistry workers(&mailboxes);
  JobTable table;
  AddRunningJob(table, "job-b200", "b200");
  AddRunningJob(table, "job-any", "");
  AddRunningJob(table, "job-cancelled", "").job->Cancel("by a test", kNow);
  EXPECT_EQ(JobsOf(BuildAheadHints(table, workers, "h100", 100)),
            (std::set<std::string>{"job-any"}));
  EXPECT_EQ(JobsOf(BuildAheadHints(table, workers, "b200", 100)),
            (std::set<std::string>{"job-b200", "job-any"}));
  // At most `limit`, the older job first.
  const std::vector<v1::Task> one = BuildAheadHints(table, workers, "b200", 1);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].job_id(), "job-b200");
  EXPECT_TRUE(BuildAheadHints(table, workers, "b200", 0).empty());
}

// Adds a running job of 16 commits, `job_id`.
JobEntry& AddRunningJob(JobTable& table, const std::string& job_id) {
  JobEntry& entry = table.Add(job_id, "");
  entry.job = std::make_unique<BisectJob>(job_id, bisect_job_testing::MakeSpec(),
                                          bisect_job_testing::MakeCommits(16), kNow);
  return entry;
}

JournalEntry TakeTasks(std::vector<std::string> workers) {
  JournalEntry take;
  take.kind = JournalEntry::Kind::kTakeTasks;
  take.time = kNow;
  take.workers = std::move(workers);
  return take;
}

TEST(JobTableTest, ApplyJournalsEachCallThatChangesTheJobNumberedInTheJobsJournal) {
  JobTable table;
  JobEntry& entry = AddRunningJob(table, "job-1");
  JobTable::Applied taken = table.Apply(entry, TakeTasks({"w1"}), /*replaying=*/false);
  ASSERT_FALSE(taken.job.assignments.empty());
  ASSERT_TRUE(taken.journal.has_value());
  EXPECT_EQ(taken.journal->kind, JournalEntry::Kind::kTakeTasks);
  EXPECT_EQ(taken.journal->sequence, 1);

  JournalEntry started;
  started.kind = JournalEntry::Kind::kTaskStarted;
  started.time = kNow;
  started.task_id = taken.job.assignments.front().task.task_id();
  started.worker = "w1";
  started.attempt = 1;
  JobTable::Applied applied = table.Apply(entry, started, /*replaying=*/false);
  ASSERT_TRUE(applied.journal.has_value());
  EXPECT_EQ(applied.journal->sequence, 2);
  EXPECT_EQ(applied.journal->task_id, started.task_id);
  EXPECT_EQ(entry.journal_sequence, 2);
  // The lease policy remembers the worker the job used.
  EXPECT_EQ(entry.offers.used(), (std::vector<std::string>{"w1"}));
}

TEST(JobTableTest, ATakeTasksThatHandsOutNothingIsNotJournaled) {
  JobTable table;
  JobEntry& entry = AddRunningJob(table, "job-1");
  JobTable::Applied nothing = table.Apply(entry, TakeTasks({}), /*replaying=*/false);
  EXPECT_TRUE(nothing.job.assignments.empty());
  EXPECT_FALSE(nothing.journal.has_value());
  EXPECT_EQ(entry.journal_sequence, 0);
}

TEST(JobTableTest, AReplayedCallKeepsItsJournalPositionAndIsNotJournaledAgain) {
  JobTable table;
  JobEntry& entry = AddRunningJob(table, "job-1");
  JournalEntry take = TakeTasks({"w1", "w2"});
  take.sequence = 7;
  JobTable::Applied replayed = table.Apply(entry, take, /*replaying=*/true);
  EXPECT_FALSE(replayed.job.assignments.empty());
  EXPECT_FALSE(replayed.journal.has_value());
  EXPECT_EQ(entry.journal_sequence, 7);
  // Live calls after the replay continue the journal.
  JournalEntry cancel;
  cancel.kind = JournalEntry::Kind::kCancel;
  cancel.time = kNow;
  cancel.reason = "test";
  JobTable::Applied cancelled = table.Apply(entry, cancel, /*replaying=*/false);
  ASSERT_TRUE(cancelled.journal.has_value());
  EXPECT_EQ(cancelled.journal->sequence, 8);
  EXPECT_TRUE(entry.job->finished());
}

}  // namespace
}  // namespace kbisect
