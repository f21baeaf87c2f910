// Copyright 2026 The kbisect Authors.
//
// Drives the Coordinator as workers would, deterministically: a FakeClock, zero-wait
// Synchronize calls, and a fake RepositoryView.
#include "coordinator/coordinator.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "coordinator/job/build_ahead.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/time_util.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_repository_view.h"
#include "tests/unit/coordinator/recovery_testing.h"

namespace kbisect {
namespace {

using ::testing::HasSubstr;

using ::kbisect::testing::Spec;  // The job spec the coordinator tests share.

v1::TaskResult Measure(const v1::Task& task, int culprit) {
  v1::TaskResult result;
  result.set_outcome(v1::TASK_OUTCOME_SUCCEEDED);
  const double v = task.commit_index() >= culprit ? 2.0 : 1.0;
  for (int i = 0; i < 3; ++i) {
    result.add_samples(v);
    result.add_runs()->set_value(v);
  }
  result.set_metric_unit("ms");
  return result;
}

class CoordinatorTest : public ::testing::Test {
 protected:
  CoordinatorTest() : repos_(64), coordinator_(Options(), &repos_, &clock_) {}

  static CoordinatorOptions Options() {
    CoordinatorOptions options;
    options.lease_duration = absl::Seconds(10);
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

  v1::SynchronizeResponse Sync(const std::string& session, bool ready,
                               const std::vector<v1::Lease>& held = {}) {
    v1::SynchronizeRequest request;
    request.set_session_id(session);
    request.set_ready_for_work(ready);
    for (const v1::Lease& lease : held) {
      request.add_leases()->set_lease_id(lease.lease_id());
    }
    absl::StatusOr<v1::SynchronizeResponse> response = coordinator_.Synchronize(request);
    EXPECT_TRUE(response.ok()) << response.status();
    return *response;
  }

  v1::CompleteLeaseResponse Complete(const std::string& session, const v1::Lease& lease,
                                     const v1::TaskResult& result) {
    v1::CompleteLeaseRequest request;
    request.set_session_id(session);
    request.set_lease_id(lease.lease_id());
    request.set_attempt(lease.attempt());
    *request.mutable_result() = result;
    absl::StatusOr<v1::CompleteLeaseResponse> response = coordinator_.CompleteLease(request);
    EXPECT_TRUE(response.ok()) << response.status();
    return *response;
  }

  std::string Submit(const std::string& request_id = "") {
    v1::SubmitJobRequest request;
    *request.mutable_spec() = Spec();
    request.set_request_id(request_id);
    absl::StatusOr<v1::SubmitJobResponse> response = coordinator_.SubmitJob(request);
    EXPECT_TRUE(response.ok()) << response.status();
    return response->job_id();
  }

  FakeClock clock_;
  FakeRepositoryView repos_;
  Coordinator coordinator_;
};

TEST_F(CoordinatorTest, ThreeWorkersFindTheCulpritOverLeases) {
  std::vector<std::string> sessions = {Open("w0"), Open("w1"), Open("w2")};
  for (const std::string& s : sessions) Sync(s, /*ready=*/true);
  const std::string job_id = Submit();
  for (int guard = 0; guard < 200; ++guard) {
    absl::StatusOr<v1::JobStatus> job = coordinator_.GetJob(job_id);
    ASSERT_TRUE(job.ok());
    if (job->state() == v1::JOB_STATE_DONE) break;
    for (const std::string& s : sessions) {
      v1::SynchronizeResponse response = Sync(s, /*ready=*/true);
      for (const v1::Lease& lease : response.assignments()) {
        EXPECT_EQ(lease.attempt(), 1);
        v1::CompleteLeaseResponse done = Complete(s, lease, Measure(lease.task(), 41));
        // Probes cancelled before their result came back are rejected by fencing.
        if (!done.accepted()) {
          EXPECT_THAT(done.reason(), HasSubstr("cancelled"));
        }
      }
    }
  }
  absl::StatusOr<v1::JobStatus> job = coordinator_.GetJob(job_id);
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->status(), v1::OUTCOME_CULPRIT_FOUND) << job->error();
  EXPECT_EQ(job->culprit().index(), 41);
  // The report carries the culprit's diff and the root-cause hint from it.
  ASSERT_EQ(job->files_changed_size(), 1);
  EXPECT_EQ(job->files_changed(0).path(), "kernels/attention.py");
  ASSERT_GE(job->root_cause_hints_size(), 1);
  EXPECT_THAT(job->root_cause_hints(0).pattern(), HasSubstr("tile"));
  EXPECT_EQ(job->workers_size(), 3);
  // Every probe names its worker.
  for (const v1::Probe& probe : job->probes()) {
    if (probe.state() == v1::PROBE_STATE_FINISHED) {
      EXPECT_FALSE(probe.worker().empty());
    }
  }
}

// Values for a history with a merged branch: the regression is branch commit 7, so the
// mainline sees it at the merge (mainline index `merge`).
v1::TaskResult MeasureWithBranch(const v1::Task& task, int merge) {
  v1::TaskResult result = Measure(task, merge);
  const std::string& sha = task.commit_sha();
  if (!sha.empty() && sha[0] == 'b') {
    const double v = std::stoi(sha.substr(1)) >= 7 ? 2.0 : 1.0;
    for (int i = 0; i < result.samples_size(); ++i) {
      result.set_samples(i, v);
      result.mutable_runs(i)->set_value(v);
    }
  }
  return result;
}

TEST_F(CoordinatorTest, AMergeCulpritIsFollowedIntoItsBranch) {
  repos_.AddMergedBranch(37, 31, 12);
  std::vector<std::string> sessions = {Open("w0"), Open("w1")};
  v1::SubmitJobRequest request;
  *request.mutable_spec() = Spec();
  request.mutable_spec()->set_descend_merges(true);
  absl::StatusOr<v1::SubmitJobResponse> submitted = coordinator_.SubmitJob(request);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  const std::string job_id = submitted->job_id();
  bool saw_following_up = false;
  for (int guard = 0; guard < 300; ++guard) {
    absl::StatusOr<v1::JobStatus> job = coordinator_.GetJob(job_id);
    ASSERT_TRUE(job.ok());
    if (job->state() == v1::JOB_STATE_DONE) break;
    saw_following_up |= job->state() == v1::JOB_STATE_FOLLOWING_UP;
    for (const std::string& s : sessions) {
      const v1::SynchronizeResponse response = Sync(s, /*ready=*/true);
      for (const v1::Lease& lease : response.assignments()) {
        Complete(s, lease, MeasureWithBranch(lease.task(), 37));
      }
    }
  }
  absl::StatusOr<v1::JobStatus> job = coordinator_.GetJob(job_id);
  ASSERT_TRUE(job.ok());
  EXPECT_TRUE(saw_following_up);
  EXPECT_EQ(job->state(), v1::JOB_STATE_DONE);
  EXPECT_EQ(job->status(), v1::OUTCOME_CULPRIT_FOUND) << job->error();
  EXPECT_EQ(job->culprit().sha(), FakeRepositoryView::MainSha(37));
  EXPECT_EQ(job->merged_culprit().sha(), FakeRepositoryView::BranchSha(7));
  ASSERT_EQ(job->follow_up_job_ids_size(), 1);
  absl::StatusOr<v1::JobStatus> branch = coordinator_.GetJob(job->follow_up_job_ids(0));
  ASSERT_TRUE(branch.ok());
  EXPECT_EQ(branch->spec().parent_job_id(), job_id);
  EXPECT_EQ(branch->spec().follow_up(), v1::FOLLOW_UP_KIND_MERGED_BRANCH);
  EXPECT_EQ(branch->spec().good(), FakeRepositoryView::MainSha(31));
  EXPECT_EQ(branch->spec().bad(), FakeRepositoryView::BranchSha(12));
  EXPECT_EQ(branch->culprit().sha(), FakeRepositoryView::BranchSha(7));
  EXPECT_GT(job->bench_runs(), branch->bench_runs()) << "the parent's count includes its branch";
  // The parent's stream shows the branch's progress and ends with one FINISHED event.
  std::vector<v1::JobEvent> events;
  ASSERT_TRUE(coordinator_
                  .WatchJob(job_id, 0,
                            [&](const v1::JobEvent& event) {
                              events.push_back(event);
                              return true;
                            })
                  .ok());
  int finished = 0;
  int branch_lines = 0;
  for (const v1::JobEvent& event : events) {
    finished += event.kind() == v1::JOB_EVENT_KIND_FINISHED;
    branch_lines += absl::StartsWith(event.message(), "[merged branch] ");
  }
  EXPECT_EQ(finished, 1);
  EXPECT_GT(branch_lines, 3);
  EXPECT_EQ(events.back().kind(), v1::JOB_EVENT_KIND_FINISHED);
  EXPECT_EQ(events.back().job().merged_culprit().sha(), FakeRepositoryView::BranchSha(7));
}

TEST_F(CoordinatorTest, CancellingAJobCancelsItsFollowUps) {
  repos_.AddMergedBranch(37, 31, 12);
  const std::string w = Open("w0");
  v1::SubmitJobRequest request;
  *request.mutable_spec() = Spec();
  request.mutable_spec()->set_descend_merges(true);
  const std::string job_id = coordinator_.SubmitJob(request)->job_id();
  for (int guard = 0; guard < 300; ++guard) {
    if (coordinator_.GetJob(job_id)->state() == v1::JOB_STATE_FOLLOWING_UP) break;
    const v1::SynchronizeResponse response = Sync(w, true);
    for (const v1::Lease& lease : response.assignments()) {
      Complete(w, lease, MeasureWithBranch(lease.task(), 37));
    }
  }
  ASSERT_EQ(coordinator_.GetJob(job_id)->state(), v1::JOB_STATE_FOLLOWING_UP);
  const std::string branch_id = coordinator_.GetJob(job_id)->follow_up_job_ids(0);
  absl::StatusOr<v1::JobStatus> cancelled = coordinator_.CancelJob(job_id, "enough");
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(coordinator_.GetJob(branch_id)->state(), v1::JOB_STATE_CANCELLED);
  const v1::JobStatus parent = *coordinator_.GetJob(job_id);
  EXPECT_EQ(parent.state(), v1::JOB_STATE_DONE) << "complete, with the mainline's culprit";
  EXPECT_EQ(parent.culprit().sha(), FakeRepositoryView::MainSha(37));
  EXPECT_FALSE(parent.has_merged_culprit());
  EXPECT_THAT(parent.warnings(), ::testing::Contains(HasSubstr("gave no culprit")));
}

TEST_F(CoordinatorTest, ExpiredLeaseIsRedispatchedAndItsLateResultRejected) {
  const std::string a = Open("a");
  Sync(a, true);
  Submit();
  v1::SynchronizeResponse first = Sync(a, true);
  ASSERT_EQ(first.assignments_size(), 1);
  const v1::Lease stale = first.assignments(0);

  // Worker a goes silent; its lease expires; b arrives and gets the task as attempt 2.
  clock_.Advance(absl::Seconds(11));
  coordinator_.ExpireLeases();
  const std::string b = Open("b");
  v1::SynchronizeResponse second = Sync(b, true);
  ASSERT_GE(second.assignments_size(), 1);
  const v1::Lease& moved = second.assignments(0);
  EXPECT_EQ(moved.task().task_id(), stale.task().task_id());
  EXPECT_EQ(moved.attempt(), 2);
  EXPECT_NE(moved.lease_id(), stale.lease_id());

  // a wakes up and reports on its dead lease: fenced off.
  v1::CompleteLeaseResponse late = Complete(a, stale, Measure(stale.task(), 10));
  EXPECT_FALSE(late.accepted());
  EXPECT_THAT(late.reason(), HasSubstr("expired"));
  // b reports twice: the second report is an accepted duplicate with no effect.
  EXPECT_TRUE(Complete(b, moved, Measure(moved.task(), 10)).accepted());
  v1::CompleteLeaseResponse again = Complete(b, moved, Measure(moved.task(), 10));
  EXPECT_TRUE(again.accepted());
  EXPECT_TRUE(again.duplicate());
  absl::StatusOr<v1::JobStatus> job =
      coordinator_.GetJob(coordinator_.ListJobs({}).jobs(0).job_id());
  int finished = 0;
  for (const v1::Probe& probe : job->probes()) {
    finished += probe.state() == v1::PROBE_STATE_FINISHED ? 1 : 0;
  }
  EXPECT_EQ(finished, 1);
}

TEST_F(CoordinatorTest, HeartbeatsKeepALeaseAlive) {
  const std::string a = Open("a");
  Sync(a, true);
  Submit();
  v1::SynchronizeResponse first = Sync(a, true);
  ASSERT_EQ(first.assignments_size(), 1);
  for (int i = 0; i < 5; ++i) {
    clock_.Advance(absl::Seconds(6));
    v1::SynchronizeResponse beat = Sync(a, false, {first.assignments(0)});
    EXPECT_EQ(beat.cancellations_size(), 0);
    coordinator_.ExpireLeases();
  }
  EXPECT_TRUE(
      Complete(a, first.assignments(0), Measure(first.assignments(0).task(), 5)).accepted());
}

TEST_F(CoordinatorTest, WorkerThatForgetsItsLeaseLosesIt) {
  const std::string a = Open("a");
  Sync(a, true);
  Submit();
  v1::SynchronizeResponse first = Sync(a, true);
  ASSERT_EQ(first.assignments_size(), 1);
  // Next sync without the lease and ready for work: the lease is lost, the task re-queued and
  // handed out again as attempt 2.
  v1::SynchronizeResponse second = Sync(a, true);
  ASSERT_EQ(second.assignments_size(), 1);
  EXPECT_EQ(second.assignments(0).task().task_id(), first.assignments(0).task().task_id());
  EXPECT_EQ(second.assignments(0).attempt(), 2);
}

// "A worker may only report on leases it holds": another worker can neither report on a lease
// nor keep it alive by listing it in its heartbeats.
TEST_F(CoordinatorTest, OnlyTheHolderMayReportOrRenewALease) {
  const std::string a = Open("a");
  const std::string b = Open("b");
  Sync(a, true);
  Submit();
  v1::SynchronizeResponse first = Sync(a, true);
  ASSERT_EQ(first.assignments_size(), 1);
  const v1::Lease lease = first.assignments(0);

  v1::CompleteLeaseRequest forged;
  forged.set_session_id(b);
  forged.set_lease_id(lease.lease_id());
  forged.set_attempt(lease.attempt());
  *forged.mutable_result() = Measure(lease.task(), 10);
  EXPECT_EQ(coordinator_.CompleteLease(forged).status().code(),
            absl::StatusCode::kPermissionDenied);

  clock_.Advance(absl::Seconds(6));
  v1::SynchronizeResponse beat = Sync(b, false, {lease});
  ASSERT_EQ(beat.cancellations_size(), 1);
  EXPECT_EQ(beat.cancellations(0).lease_id(), lease.lease_id());
  clock_.Advance(absl::Seconds(5));
  coordinator_.ExpireLeases();
  EXPECT_EQ(coordinator_.Metrics().lease_expiries, 1) << "b's heartbeat did not renew it";
  EXPECT_FALSE(Complete(a, lease, Measure(lease.task(), 10)).accepted());
}

TEST_F(CoordinatorTest, MetricsCountJobsProbesRunsAndWorkers) {
  MetricsSnapshot empty = coordinator_.Metrics();
  EXPECT_EQ(empty.jobs_by_state, (std::map<std::string, int64_t>{{"queued", 0},
                                                                 {"baselines", 0},
                                                                 {"bisecting", 0},
                                                                 {"confirming", 0},
                                                                 {"following_up", 0},
                                                                 {"done", 0},
                                                                 {"cancelled", 0},
                                                                 {"failed", 0},
                                                                 {"suite_search", 0}}));
  EXPECT_EQ(empty.probes_by_verdict, (std::map<std::string, int64_t>{
                                         {"good", 0}, {"bad", 0}, {"skip", 0}, {"ambiguous", 0}}));
  EXPECT_TRUE(empty.workers.empty());

  std::vector<std::string> sessions = {Open("w0"), Open("w1")};
  for (const std::string& s : sessions) Sync(s, /*ready=*/true);
  const std::string job_id = Submit();
  const std::string cancelled = Submit();
  for (int guard = 0; guard < 200; ++guard) {
    if (coordinator_.GetJob(job_id)->state() == v1::JOB_STATE_DONE) break;
    for (const std::string& s : sessions) {
      const v1::SynchronizeResponse response = Sync(s, /*ready=*/true);
      for (const v1::Lease& lease : response.assignments()) {
        Complete(s, lease, Measure(lease.task(), 41));
      }
    }
  }
  ASSERT_TRUE(coordinator_.CancelJob(cancelled, "test").ok());
  absl::StatusOr<v1::JobStatus> job = coordinator_.GetJob(job_id);
  ASSERT_EQ(job->state(), v1::JOB_STATE_DONE);
  std::map<std::string, int64_t> verdicts = {
      {"good", 0}, {"bad", 0}, {"skip", 0}, {"ambiguous", 0}};
  int64_t bench_runs = job->bench_runs() + coordinator_.GetJob(cancelled)->bench_runs();
  for (const std::string& id : {job_id, cancelled}) {
    const absl::StatusOr<v1::JobStatus> status = coordinator_.GetJob(id);
    ASSERT_TRUE(status.ok());
    for (const v1::Probe& probe : status->probes()) {
      if (probe.verdict() == v1::VERDICT_GOOD) ++verdicts["good"];
      if (probe.verdict() == v1::VERDICT_BAD) ++verdicts["bad"];
    }
  }
  ASSERT_GT(verdicts["good"] + verdicts["bad"], 0);

  MetricsSnapshot metrics = coordinator_.Metrics();
  EXPECT_EQ(metrics.jobs_by_state["done"], 1);
  EXPECT_EQ(metrics.jobs_by_state["cancelled"], 1);
  EXPECT_EQ(metrics.jobs_by_state["queued"] + metrics.jobs_by_state["baselines"] +
                metrics.jobs_by_state["bisecting"] + metrics.jobs_by_state["confirming"] +
                metrics.jobs_by_state["failed"],
            0);
  EXPECT_EQ(metrics.probes_by_verdict, verdicts);
  EXPECT_GT(metrics.bench_runs, 0);
  EXPECT_EQ(metrics.bench_runs, bench_runs);
  EXPECT_EQ(metrics.drift_events, 0);
  EXPECT_EQ(metrics.quarantines, 0);
  EXPECT_EQ(metrics.lease_expiries, 0);
  EXPECT_EQ(metrics.workers,
            (std::map<std::pair<std::string, std::string>, int64_t>{{{"hc-1", "idle"}, 2}}));
}

TEST_F(CoordinatorTest, RequestIdMakesSubmissionIdempotent) {
  const std::string first = Submit("nightly-2026-11-30");
  const std::string second = Submit("nightly-2026-11-30");
  EXPECT_EQ(first, second);
  EXPECT_EQ(repos_.resolves, 1);
  EXPECT_NE(Submit("other"), first);
  EXPECT_EQ(coordinator_.ListJobs({}).jobs_size(), 2);
}

TEST_F(CoordinatorTest, BadSubmissionsAreRejectedWithTheReason) {
  v1::SubmitJobRequest request;
  *request.mutable_spec() = Spec();
  request.mutable_spec()->set_good("nope");
  absl::StatusOr<v1::SubmitJobResponse> unknown = coordinator_.SubmitJob(request);
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(unknown.status().message(), HasSubstr("unknown revision 'nope'"));
  request.mutable_spec()->set_good("v1");
  request.mutable_spec()->clear_bench_command();
  absl::StatusOr<v1::SubmitJobResponse> no_bench = coordinator_.SubmitJob(request);
  EXPECT_EQ(no_bench.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(no_bench.status().message(), HasSubstr("benchmark command"));
}

TEST_F(CoordinatorTest, UnknownSessionIsNotFound) {
  v1::SynchronizeRequest request;
  request.set_session_id("session-from-before-a-restart");
  EXPECT_EQ(coordinator_.Synchronize(request).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(CoordinatorTest, CancelJobCancelsRunningLeases) {
  const std::string a = Open("a");
  Sync(a, true);
  const std::string job_id = Submit();
  v1::SynchronizeResponse first = Sync(a, true);
  ASSERT_EQ(first.assignments_size(), 1);
  absl::StatusOr<v1::JobStatus> cancelled = coordinator_.CancelJob(job_id, "changed my mind");
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(cancelled->state(), v1::JOB_STATE_CANCELLED);
  v1::SynchronizeResponse next = Sync(a, false, {first.assignments(0)});
  ASSERT_EQ(next.cancellations_size(), 1);
  EXPECT_EQ(next.cancellations(0).lease_id(), first.assignments(0).lease_id());
}

// A worker hears of a cancellation in a heartbeat while its task still winds down, and takes no
// lease then: one handed to it at the cancellation would be lost (and a probe's attempt with
// it). It gets its next lease when it asks for work again.
TEST_F(CoordinatorTest, AWorkerWhoseLeaseIsCancelledGetsNewWorkOnlyWhenItAsks) {
  const std::string a = Open("a");
  Sync(a, true);
  const std::string first_job = Submit("first");
  v1::SynchronizeResponse first = Sync(a, true);
  ASSERT_EQ(first.assignments_size(), 1);
  const std::string second_job = Submit("second");
  ASSERT_TRUE(coordinator_.CancelJob(first_job, "changed my mind").ok());
  v1::SynchronizeResponse beat = Sync(a, false, {first.assignments(0)});
  ASSERT_EQ(beat.cancellations_size(), 1);
  EXPECT_EQ(beat.assignments_size(), 0) << "a lease reached a worker still stopping its task";
  v1::SynchronizeResponse ready = Sync(a, true);
  ASSERT_EQ(ready.assignments_size(), 1);
  EXPECT_EQ(ready.assignments(0).attempt(), 1);
  EXPECT_EQ(ready.assignments(0).task().job_id(), second_job);
}

TEST_F(CoordinatorTest, WatchDeliversEveryEventThroughFinished) {
  const std::string a = Open("a");
  Sync(a, true);
  const std::string job_id = Submit();
  for (int guard = 0; guard < 100; ++guard) {
    v1::SynchronizeResponse response = Sync(a, true);
    for (const v1::Lease& lease : response.assignments()) {
      Complete(a, lease, Measure(lease.task(), 7));
    }
    if (coordinator_.GetJob(job_id)->state() == v1::JOB_STATE_DONE) break;
  }
  std::vector<v1::JobEvent> events;
  absl::Status status = coordinator_.WatchJob(job_id, 0, [&](const v1::JobEvent& event) {
    events.push_back(event);
    return true;
  });
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.front().kind(), v1::JOB_EVENT_KIND_STARTED);
  EXPECT_EQ(events.back().kind(), v1::JOB_EVENT_KIND_FINISHED);
  EXPECT_EQ(events.back().job().culprit().index(), 7);
  for (size_t i = 0; i < events.size(); ++i) EXPECT_EQ(events[i].sequence(), int64_t(i + 1));
  // Resuming after an event skips what was seen.
  std::vector<v1::JobEvent> tail;
  ASSERT_TRUE(coordinator_
                  .WatchJob(job_id, events.size() - 1,
                            [&](const v1::JobEvent& e) {
                              tail.push_back(e);
                              return true;
                            })
                  .ok());
  ASSERT_EQ(tail.size(), 1u);
  EXPECT_EQ(tail[0].kind(), v1::JOB_EVENT_KIND_FINISHED);
}

TEST_F(CoordinatorTest, HardwareClassConstraintIsRespected) {
  v1::OpenSessionRequest other;
  other.set_worker_name("odd");
  other.mutable_identity()->set_hardware_class("hc-2");
  const std::string odd = coordinator_.OpenSession(other)->session_id();
  Sync(odd, true);
  v1::SubmitJobRequest request;
  *request.mutable_spec() = Spec();
  request.mutable_spec()->set_hardware_class("hc-1");
  ASSERT_TRUE(coordinator_.SubmitJob(request).ok());
  EXPECT_EQ(Sync(odd, true).assignments_size(), 0);
  const std::string good = Open("good");
  EXPECT_EQ(Sync(good, true).assignments_size(), 1);
}

TEST_F(CoordinatorTest, AJobStaysOnTheHardwareClassOfItsFirstWorker) {
  const std::string first = Open("first");  // hc-1
  Sync(first, true);
  Submit();
  ASSERT_EQ(Sync(first, true).assignments_size(), 1);
  v1::OpenSessionRequest other;
  other.set_worker_name("other-gpu");
  other.mutable_identity()->set_hardware_class("hc-2");
  const std::string odd = coordinator_.OpenSession(other)->session_id();
  EXPECT_EQ(Sync(odd, true).assignments_size(), 0) << "a second class never joins the job";
  const std::string same = Open("same");  // hc-1
  EXPECT_EQ(Sync(same, true).assignments_size(), 1);
}

}  // namespace
}  // namespace kbisect

namespace kbisect {
namespace {

TEST_F(CoordinatorTest, SynchronizeHintsTheNextRoundsBuildsToWorkersThatCanBuildAhead) {
  v1::SubmitJobRequest submit;
  *submit.mutable_spec() = Spec();
  submit.mutable_spec()->set_build_command("make -j8");
  ASSERT_TRUE(coordinator_.SubmitJob(submit).ok());
  const std::string builder = Open("w0");
  const std::string plain = Open("w1");
  // w0 takes the BAD baseline; while it runs, GOOD's build (index 0) is hinted first.
  v1::SynchronizeRequest request;
  request.set_session_id(builder);
  request.set_ready_for_work(true);
  request.set_build_ahead_slots(1);
  absl::StatusOr<v1::SynchronizeResponse> first = coordinator_.Synchronize(request);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->assignments_size(), 1);
  ASSERT_EQ(first->assignments(0).task().kind(), v1::PROBE_KIND_BASELINE_BAD);
  // w1 probes; the next sync of w0 (holding its lease) carries hints.
  Sync(plain, /*ready=*/true);
  request.set_ready_for_work(false);
  request.add_leases()->set_lease_id(first->assignments(0).lease_id());
  absl::StatusOr<v1::SynchronizeResponse> second = coordinator_.Synchronize(request);
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_GE(second->build_ahead_size(), 1);
  EXPECT_LE(second->build_ahead_size(), kBuildAheadHintsPerSlot);
  EXPECT_EQ(second->build_ahead(0).commit_index(), 0) << "GOOD is built first, while BAD runs";
  for (const v1::Task& hint : second->build_ahead()) {
    EXPECT_EQ(hint.kind(), v1::PROBE_KIND_BUILD);
    EXPECT_EQ(hint.build_command(), "make -j8");
    EXPECT_TRUE(hint.task_id().empty()) << "a hint is no task";
    EXPECT_FALSE(hint.commit_sha().empty());
  }
  // A worker that announces no build slots gets none.
  v1::SynchronizeRequest none;
  none.set_session_id(plain);
  EXPECT_EQ(coordinator_.Synchronize(none)->build_ahead_size(), 0);
}

TEST_F(CoordinatorTest, WorkersOfOneSmallHostGetTheFirstWaveItCanBuildUntilItBuildsMore) {
  v1::SubmitJobRequest submit;
  *submit.mutable_spec() = Spec();
  submit.mutable_spec()->set_build_command("make -j2");
  ASSERT_TRUE(coordinator_.SubmitJob(submit).ok());
  // Four workers announce one host's build slots, one build at a time (nothing measured yet).
  std::vector<std::string> sessions;
  for (int i = 0; i < 4; ++i) {
    v1::OpenSessionRequest open;
    open.set_worker_name(absl::StrCat("w", i));
    open.mutable_identity()->set_hardware_class("hc-1");
    open.set_build_pool("host:/cache");
    open.set_build_pool_slots(1);
    absl::StatusOr<v1::OpenSessionResponse> opened = coordinator_.OpenSession(open);
    ASSERT_TRUE(opened.ok()) << opened.status();
    sessions.push_back(opened->session_id());
  }
  std::vector<v1::Lease> leases;
  for (const std::string& session : sessions) {
    const v1::SynchronizeResponse response = Sync(session, /*ready=*/true);
    leases.insert(leases.end(), response.assignments().begin(), response.assignments().end());
  }
  ASSERT_EQ(leases.size(), 2u) << "BAD and GOOD: the builds the host runs first";
  // BAD's build was measured and the host now runs 8 builds at once: its worker says so while
  // it benchmarks, and the idle workers get points at once.
  v1::SynchronizeRequest grown;
  grown.set_session_id(sessions[0]);
  grown.add_leases()->set_lease_id(leases[0].lease_id());
  grown.set_build_pool_slots(8);
  ASSERT_TRUE(coordinator_.Synchronize(grown).ok());
  int more = 0;
  for (size_t i = 2; i < sessions.size(); ++i) more += Sync(sessions[i], true).assignments_size();
  EXPECT_EQ(more, 2) << "the two idle workers probe";
}

// A worker of a host with a build cache and, optionally, a shared build store.
struct BuildingWorker {
  std::string name;
  std::string pool;
  std::string store;
  std::string session;
};

// Runs job `job_id` to its end on `workers`, each result saying it was built in the worker's
// pool (and store); returns the commit indices of its bisect probes, in hand-out order.
std::vector<int> RunBuildingJob(Coordinator& coordinator, const std::string& job_id,
                                std::vector<BuildingWorker>& workers) {
  std::vector<int> probed;
  for (int guard = 0; guard < 300; ++guard) {
    absl::StatusOr<v1::JobStatus> job = coordinator.GetJob(job_id);
    if (!job.ok() || job->state() == v1::JOB_STATE_DONE) break;
    for (BuildingWorker& worker : workers) {
      v1::SynchronizeRequest sync;
      sync.set_session_id(worker.session);
      sync.set_ready_for_work(true);
      absl::StatusOr<v1::SynchronizeResponse> response = coordinator.Synchronize(sync);
      if (!response.ok()) continue;
      for (const v1::Lease& lease : response->assignments()) {
        if (lease.task().kind() == v1::PROBE_KIND_BISECT) {
          probed.push_back(lease.task().commit_index());
        }
        v1::CompleteLeaseRequest complete;
        complete.set_session_id(worker.session);
        complete.set_lease_id(lease.lease_id());
        complete.set_attempt(lease.attempt());
        *complete.mutable_result() = Measure(lease.task(), 41);
        complete.mutable_result()->mutable_timings()->set_build_pool(worker.pool);
        complete.mutable_result()->mutable_timings()->set_build_pool_slots(4);
        complete.mutable_result()->mutable_timings()->set_build_store(worker.store);
        (void)coordinator.CompleteLease(complete);
      }
    }
  }
  return probed;
}

TEST_F(CoordinatorTest, ASecondJobProbesCommitsAlreadyBuiltInAStoreItsWorkersRead) {
  v1::JobSpec spec = Spec();
  spec.set_build_command("make -j4");
  auto open = [&](BuildingWorker* worker) {
    v1::OpenSessionRequest request;
    request.set_worker_name(worker->name);
    request.mutable_identity()->set_hardware_class("hc-1");
    request.set_build_pool(worker->pool);
    request.set_build_pool_slots(4);
    request.set_build_store(worker->store);
    absl::StatusOr<v1::OpenSessionResponse> opened = coordinator_.OpenSession(request);
    ASSERT_TRUE(opened.ok()) << opened.status();
    worker->session = opened->session_id();
  };
  auto submit = [&](const std::string& bench) {
    v1::SubmitJobRequest request;
    *request.mutable_spec() = spec;
    request.mutable_spec()->set_bench_command(0, bench);
    absl::StatusOr<v1::SubmitJobResponse> submitted = coordinator_.SubmitJob(request);
    EXPECT_TRUE(submitted.ok()) << submitted.status();
    return submitted.ok() ? submitted->job_id() : "";
  };
  // Host A, one worker, builds the first job's binary search and publishes to the store.
  std::vector<BuildingWorker> host_a = {{"a0", "host-a:/cache", "/shared/store", ""}};
  open(&host_a[0]);
  const std::vector<int> first = RunBuildingJob(coordinator_, submit("./bench.sh"), host_a);
  ASSERT_FALSE(first.empty());
  std::set<int> built(first.begin(), first.end());
  // A host leaves once its job is done: the next job's tasks go to the next host.
  auto leave = [&](const std::vector<BuildingWorker>& host) {
    for (const BuildingWorker& worker : host) {
      v1::CloseSessionRequest close;
      close.set_session_id(worker.session);
      ASSERT_TRUE(coordinator_.CloseSession(close).ok());
    }
  };
  leave(host_a);
  // Host C reads no store: its job, another benchmark of the same build, splits in quarters.
  // With four workers each, B and C probe the same commits: none of their points is close
  // enough to one of A's builds to move. (This test used to run four, and passed because C
  // probed commit 16 three times, the duplicate probes of in-flight commits that
  // PlanDispatchTest.ABuiltCommitInFlightIsNotMeasuredAgain now rules out.)
  std::vector<BuildingWorker> host_c;
  for (int i = 0; i < 3; ++i) host_c.push_back({absl::StrCat("c", i), "host-c:/cache", "", ""});
  for (BuildingWorker& worker : host_c) open(&worker);
  const std::vector<int> apart = RunBuildingJob(coordinator_, submit("./other.sh"), host_c);
  leave(host_c);
  // Host B reads the store: the same job moves its points onto commits host A built, when they
  // split about as well.
  std::vector<BuildingWorker> host_b;
  for (int i = 0; i < 3; ++i) {
    host_b.push_back({absl::StrCat("b", i), "host-b:/cache", "/shared/store", ""});
  }
  for (BuildingWorker& worker : host_b) open(&worker);
  const std::vector<int> shared = RunBuildingJob(coordinator_, submit("./third.sh"), host_b);
  auto count_built = [&](const std::vector<int>& probed) {
    return std::count_if(probed.begin(), probed.end(),
                         [&](int index) { return built.count(index) > 0; });
  };
  ASSERT_FALSE(apart.empty());
  ASSERT_FALSE(shared.empty());
  EXPECT_GT(count_built(shared), count_built(apart))
      << "host A built " << absl::StrJoin(built, ",") << "; host C probed "
      << absl::StrJoin(apart, ",") << "; host B probed " << absl::StrJoin(shared, ",");
  // Every job found the culprit.
  const v1::ListJobsResponse jobs = coordinator_.ListJobs({});
  ASSERT_EQ(jobs.jobs_size(), 3);
  for (const auto& listed : jobs.jobs()) {
    absl::StatusOr<v1::JobStatus> job = coordinator_.GetJob(listed.job_id());
    ASSERT_TRUE(job.ok());
    EXPECT_EQ(job->culprit().index(), 41)
        << listed.job_id() << " " << v1::JobState_Name(job->state()) << " " << job->error();
  }
}

TEST_F(CoordinatorTest, NoBuildCommandMeansNoBuildAhead) {
  ASSERT_FALSE(Submit().empty());
  const std::string worker = Open("w0");
  v1::SynchronizeRequest request;
  request.set_session_id(worker);
  request.set_ready_for_work(true);
  request.set_build_ahead_slots(4);
  absl::StatusOr<v1::SynchronizeResponse> response = coordinator_.Synchronize(request);
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(response->build_ahead_size(), 0);
}

}  // namespace
}  // namespace kbisect
