// Copyright 2026 The kbisect Authors.
//
// ListJobs over 10,000 stored jobs: pages of the asked size, and a walk over the page tokens that
// lists each job exactly once, newest first, with a state filter and with jobs submitted while
// it walks, and with jobs deleted (--retain) while it walks.
#include <functional>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "common/log/log.h"
#include "coordinator/change_logger.h"
#include "coordinator/coordinator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_repository_view.h"
#include "tests/unit/coordinator/recovery_testing.h"

namespace kbisect {
namespace {

constexpr int kJobs = 10000;

using ::kbisect::testing::Spec;
using ::testing::HasSubstr;  // The job spec the coordinator tests share.

std::string JobId(int i) { return absl::StrFormat("job-stored-%05d", i); }

// A store that loads a prepared state and accepts every commit.
class PreparedJobStore : public JobStore {
 public:
  explicit PreparedJobStore(StoredState state) : state_(std::move(state)) {}
  absl::StatusOr<StoredState> Load() override { return state_; }
  absl::Status Commit(const StoreChanges&) override { return absl::OkStatus(); }

 private:
  StoredState state_;
};

// kJobs jobs in creation order; every third one was cancelled (its journal says so).
StoredState TenThousandJobs(FakeRepositoryView* repos) {
  const std::vector<v1::CommitRef> commits = *repos->ResolveRange(Spec());
  StoredState state;
  for (int i = 0; i < kJobs; ++i) {
    StoredJob& job = state.jobs.emplace_back();
    job.job_id = JobId(i);
    job.spec = Spec();
    job.commits = commits;
    job.create_time = absl::FromUnixSeconds(1700000000 + i);
    if (i % 3 == 0) {
      JournalEntry cancel;
      cancel.sequence = 1;
      cancel.kind = JournalEntry::Kind::kCancel;
      cancel.time = job.create_time + absl::Seconds(1);
      cancel.reason = "test";
      job.journal.push_back(cancel);
      // Replay follows the commit order across jobs (StoredState::order).
      state.order.emplace_back(job.job_id, 1);
    }
  }
  return state;
}

class ListJobsTest : public ::testing::Test {
 protected:
  ListJobsTest()
      : repos_(8),
        store_(TenThousandJobs(&repos_)),
        coordinator_(Options(&store_), &repos_, &clock_) {}

  static CoordinatorOptions Options(JobStore* store) {
    CoordinatorOptions options;
    options.store = store;
    return options;
  }

  void SetUp() override {
    absl::StatusOr<RecoveryReport> recovered = coordinator_.Recover();
    ASSERT_TRUE(recovered.ok()) << recovered.status();
    ASSERT_EQ(recovered->jobs, kJobs);
  }

  // Walks every page of `request` (page sizes appended to `sizes`), calling `between` after each
  // page; returns the listed job ids in order.
  std::vector<std::string> Walk(v1::ListJobsRequest request, std::vector<int>* sizes,
                                const std::function<void()>& between = nullptr) {
    std::vector<std::string> ids;
    for (int guard = 0; guard <= kJobs; ++guard) {
      const v1::ListJobsResponse page = coordinator_.ListJobs(request);
      sizes->push_back(page.jobs_size());
      for (const v1::JobSummary& job : page.jobs()) ids.push_back(job.job_id());
      if (page.next_page_token().empty()) break;
      request.set_page_token(page.next_page_token());
      if (between) between();
    }
    return ids;
  }

  FakeClock clock_;
  FakeRepositoryView repos_;
  PreparedJobStore store_;
  Coordinator coordinator_;
};

TEST_F(ListJobsTest, PagesVisitEveryStoredJobOnceNewestFirst) {
  v1::ListJobsRequest request;
  request.set_page_size(300);
  std::vector<int> sizes;
  const std::vector<std::string> ids = Walk(request, &sizes);

  // 33 full pages and the rest; no empty page at the end.
  ASSERT_EQ(sizes.size(), 34u);
  for (size_t i = 0; i + 1 < sizes.size(); ++i) EXPECT_EQ(sizes[i], 300) << "page " << i;
  EXPECT_EQ(sizes.back(), kJobs - 33 * 300);
  ASSERT_EQ(ids.size(), static_cast<size_t>(kJobs));
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), static_cast<size_t>(kJobs));
  for (int i = 0; i < kJobs; ++i) EXPECT_EQ(ids[i], JobId(kJobs - 1 - i));
}

TEST_F(ListJobsTest, DefaultAndLargestPageSizes) {
  v1::ListJobsRequest request;
  EXPECT_EQ(coordinator_.ListJobs(request).jobs_size(), Coordinator::kDefaultListedJobs);
  request.set_page_size(kJobs);  // More than a page may hold: a page, not everything.
  const v1::ListJobsResponse page = coordinator_.ListJobs(request);
  EXPECT_EQ(page.jobs_size(), Coordinator::kMaxListedJobs);
  EXPECT_FALSE(page.next_page_token().empty());
  std::vector<int> sizes;
  EXPECT_EQ(Walk(request, &sizes).size(), static_cast<size_t>(kJobs));
  EXPECT_EQ(sizes.size(), static_cast<size_t>(kJobs / Coordinator::kMaxListedJobs));
}

TEST_F(ListJobsTest, AStateFilterPagesOverTheMatchingJobsOnly) {
  v1::ListJobsRequest request;
  request.set_page_size(500);
  request.add_states(v1::JOB_STATE_CANCELLED);
  std::vector<int> sizes;
  const std::vector<std::string> ids = Walk(request, &sizes);
  const int cancelled = (kJobs + 2) / 3;  // Jobs 0, 3, 6, ...
  ASSERT_EQ(ids.size(), static_cast<size_t>(cancelled));
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), ids.size());
  for (size_t i = 0; i + 1 < sizes.size(); ++i) EXPECT_EQ(sizes[i], 500);
  EXPECT_EQ(sizes.back(), cancelled - 500 * (static_cast<int>(sizes.size()) - 1));
  EXPECT_EQ(ids.front(), JobId(9999));
  EXPECT_EQ(ids.back(), JobId(0));
}

TEST_F(ListJobsTest, JobsSubmittedDuringAWalkNeitherRepeatNorHideStoredOnes) {
  v1::ListJobsRequest request;
  request.set_page_size(1000);
  std::vector<int> sizes;
  int submitted = 0;
  const std::vector<std::string> ids = Walk(request, &sizes, [&] {
    v1::SubmitJobRequest submit;
    *submit.mutable_spec() = Spec();
    ASSERT_TRUE(coordinator_.SubmitJob(submit).ok());
    ++submitted;
  });
  EXPECT_EQ(submitted, 9);
  // Exactly the stored jobs: the new ones are newer than the walk's first page.
  ASSERT_EQ(ids.size(), static_cast<size_t>(kJobs));
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), static_cast<size_t>(kJobs));
  EXPECT_EQ(ids.back(), JobId(0));
  // A new walk starts with them.
  EXPECT_NE(coordinator_.ListJobs(v1::ListJobsRequest()).jobs(0).job_id(), JobId(kJobs - 1));
}

// The daemon's change log over the 10,000 stored jobs (decision 45): a job far below the newest
// page that ends is logged, a new job is logged once with its range, and nothing is logged twice.
TEST_F(ListJobsTest, TheChangeLogSeesAJobEndFarBelowTheNewestPage) {
  std::ostringstream out;
  const Logger log("kbisect-coordinator", LogFormat::kText, &out);
  ChangeLogger changes(&coordinator_, &log);
  changes.Prime();
  EXPECT_EQ(out.str(), "");  // Recovered jobs are recorded, not logged.
  // Job 1 is queued (not cancelled: i % 3 != 0) and 9,998 jobs are newer.
  ASSERT_TRUE(coordinator_.CancelJob(JobId(1), "test").ok());
  v1::SubmitJobRequest submit;
  *submit.mutable_spec() = Spec();
  absl::StatusOr<v1::SubmitJobResponse> submitted = coordinator_.SubmitJob(submit);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  changes.Poll();
  const std::string first = out.str();
  EXPECT_THAT(first, HasSubstr(absl::StrCat("job ", JobId(1), " cancelled")));
  EXPECT_THAT(first,
              HasSubstr(absl::StrCat("job ", submitted->job_id(), " baselines (/repo v1..HEAD)")));
  changes.Poll();
  EXPECT_EQ(out.str(), first);  // Nothing changed: nothing logged.
  // A job submitted and cancelled between two polls is logged too (the newest page).
  submitted = coordinator_.SubmitJob(submit);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  ASSERT_TRUE(coordinator_.CancelJob(submitted->job_id(), "test").ok());
  changes.Poll();
  EXPECT_THAT(out.str().substr(first.size()),
              HasSubstr(absl::StrCat("job ", submitted->job_id(), " cancelled (/repo v1..HEAD)")));
}

TEST_F(ListJobsTest, AnUnreadableTokenStartsFromTheNewestJob) {
  v1::ListJobsRequest request;
  request.set_page_size(2);
  request.set_page_token("garbage");
  const v1::ListJobsResponse page = coordinator_.ListJobs(request);
  ASSERT_EQ(page.jobs_size(), 2);
  EXPECT_EQ(page.jobs(0).job_id(), JobId(kJobs - 1));
}

TEST(ListJobsRetainTest, JobsDeletedDuringAWalkShiftNoPage) {
  FakeClock clock;
  FakeRepositoryView repos(8);
  MemoryJobStore store;
  CoordinatorOptions options;
  options.store = &store;
  options.retain = absl::Hours(1);
  Coordinator coordinator(options, &repos, &clock);
  std::vector<std::string> ids;
  for (int i = 0; i < 10; ++i) {
    v1::SubmitJobRequest submit;
    *submit.mutable_spec() = Spec();
    absl::StatusOr<v1::SubmitJobResponse> submitted = coordinator.SubmitJob(submit);
    ASSERT_TRUE(submitted.ok()) << submitted.status();
    ids.push_back(submitted->job_id());
  }
  // The 5 oldest finish; once they are older than --retain, housekeeping deletes them.
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(coordinator.CancelJob(ids[i], "test").ok());
  v1::ListJobsRequest request;
  request.set_page_size(3);
  v1::ListJobsResponse page = coordinator.ListJobs(request);
  ASSERT_EQ(page.jobs_size(), 3);
  EXPECT_EQ(page.jobs(2).job_id(), ids[7]);
  clock.Advance(absl::Hours(2));
  coordinator.ExpireLeases();
  ASSERT_EQ(coordinator.ListJobs(v1::ListJobsRequest()).jobs_size(), 5);
  // The walk goes on below the jobs it listed, neither repeating them nor skipping one.
  request.set_page_token(page.next_page_token());
  page = coordinator.ListJobs(request);
  ASSERT_EQ(page.jobs_size(), 2);
  EXPECT_EQ(page.jobs(0).job_id(), ids[6]);
  EXPECT_EQ(page.jobs(1).job_id(), ids[5]);
  EXPECT_TRUE(page.next_page_token().empty());
}

}  // namespace
}  // namespace kbisect
