// Copyright 2026 The kbisect Authors.
//
// JournalWriter alone, on a store whose commits the test holds open or fails: what a batch holds,
// who leads it, what a failed commit refuses and rolls back, and when writes resume. The threads
// that wait are made to wait deterministically (the test sees their changes pending, or their
// commit entered, before it lets the store go on).
#include "coordinator/journal_writer.h"

#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "common/clock/clock.h"
#include "common/sync/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Records each commit's worker rows; holds a commit open while `hold` is set, fails it while
// `failure` is not OK.
class HeldStore : public JobStore {
 public:
  absl::StatusOr<StoredState> Load() override { return StoredState(); }

  absl::Status Commit(const StoreChanges& changes) override {
    kbisect::MutexLock lock(&mu_);
    ++entered_;
    mu_.Await(kbisect::Condition(
        +[](bool* hold) { return !*hold; }, &hold_));
    if (!failure_.ok()) return failure_;
    std::vector<std::string> rows;
    for (const StoredWorker& worker : changes.workers) rows.push_back(worker.worker_id);
    commits_.push_back(rows);
    return absl::OkStatus();
  }

  absl::Status CheckWritable() override {
    kbisect::MutexLock lock(&mu_);
    return failure_;
  }

  void Hold(bool hold) {
    kbisect::MutexLock lock(&mu_);
    hold_ = hold;
  }
  void Fail(absl::Status failure) {
    kbisect::MutexLock lock(&mu_);
    failure_ = std::move(failure);
  }
  // Waits until `n` commits were entered (held or not).
  void AwaitEntered(int n) {
    kbisect::MutexLock lock(&mu_);
    struct Arg {
      int* entered;
      int n;
    } arg{&entered_, n};
    mu_.Await(kbisect::Condition(
        +[](Arg* a) { return *a->entered >= a->n; }, &arg));
  }
  std::vector<std::vector<std::string>> commits() {
    kbisect::MutexLock lock(&mu_);
    return commits_;
  }

 private:
  kbisect::Mutex mu_;
  bool hold_ ABSL_GUARDED_BY(mu_) = false;
  int entered_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  std::vector<std::vector<std::string>> commits_ ABSL_GUARDED_BY(mu_);
};

class JournalWriterTest : public ::testing::Test {
 protected:
  // Adds a worker row to the pending batch.
  void Change(const std::string& id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    writer_.pending(mu_).workers.push_back(StoredWorker{id, id, {}});
  }
  size_t PendingRows() {
    kbisect::MutexLock lock(&mu_);
    return writer_.pending(mu_).workers.size();
  }
  // Waits until the pending batch holds `n` rows (changes made by other threads, which then wait
  // in Flush with the mutex released).
  void AwaitPending(size_t n) {
    while (PendingRows() < n) std::this_thread::yield();
  }
  // A thread that makes a change and flushes it; its result lands in `*result`.
  std::thread ChangeAndFlush(const std::string& id, absl::Status* result) {
    return std::thread([this, id, result] {
      kbisect::MutexLock lock(&mu_);
      Change(id);
      *result = writer_.Flush(mu_);
    });
  }

  HeldStore store_;
  FakeClock clock_;
  kbisect::Mutex mu_;
  int roll_backs_ = 0;
  JournalWriter writer_{&store_, &mu_, &clock_, JournalWriter::Options{}, [this] {
                          ++roll_backs_;
                          // What the owner journals while rebuilding stays pending.
                          mu_.AssertHeld();
                          Change("rebuilt");
                        }};
};

TEST_F(JournalWriterTest, WithoutAStoreNothingWaits) {
  kbisect::Mutex mu;
  FakeClock clock;
  JournalWriter writer(nullptr, &mu, &clock, JournalWriter::Options{}, [] {});
  kbisect::MutexLock lock(&mu);
  EXPECT_FALSE(writer.enabled());
  EXPECT_TRUE(writer.Flush(mu).ok());
  EXPECT_TRUE(writer.AwaitDurable(mu).ok());
  EXPECT_EQ(writer.BatchOfChanges(mu), 0u);
  EXPECT_TRUE(writer.writable(mu));
}

TEST_F(JournalWriterTest, AFlushCommitsThePendingBatchAndNumbersIt) {
  kbisect::MutexLock lock(&mu_);
  EXPECT_EQ(writer_.BatchOfChanges(mu_), 0u);
  Change("a");
  Change("b");
  EXPECT_EQ(writer_.BatchOfChanges(mu_), 1u);
  ASSERT_TRUE(writer_.Flush(mu_).ok());
  EXPECT_EQ(writer_.durable_batches()->load(), 1u);
  EXPECT_EQ(writer_.BatchOfChanges(mu_), 1u);  // Nothing pending: the last one taken.
  EXPECT_THAT(store_.commits(), ElementsAre(ElementsAre("a", "b")));
  // Nothing pending: a flush commits nothing.
  ASSERT_TRUE(writer_.Flush(mu_).ok());
  EXPECT_EQ(store_.commits().size(), 1u);
}

TEST_F(JournalWriterTest, CallsThatFlushDuringACommitShareTheNextOne) {
  store_.Hold(true);
  absl::Status first, second, third;
  std::thread leader = ChangeAndFlush("a", &first);
  store_.AwaitEntered(1);  // "a" commits, held; the mutex is free.
  std::thread b = ChangeAndFlush("b", &second);
  std::thread c = ChangeAndFlush("c", &third);
  AwaitPending(2);  // Both wait in Flush for the commit in flight.
  {
    kbisect::MutexLock lock(&mu_);
    EXPECT_EQ(writer_.BatchOfChanges(mu_), 2u);
    EXPECT_EQ(writer_.durable_batches()->load(), 0u);
  }
  store_.Hold(false);
  leader.join();
  b.join();
  c.join();
  EXPECT_TRUE(first.ok());
  EXPECT_TRUE(second.ok());
  EXPECT_TRUE(third.ok());
  const std::vector<std::vector<std::string>> commits = store_.commits();
  ASSERT_EQ(commits.size(), 2u);
  EXPECT_THAT(commits[0], ElementsAre("a"));
  EXPECT_THAT(commits[1], testing::UnorderedElementsAre("b", "c"));
  EXPECT_EQ(writer_.durable_batches()->load(), 2u);
}

TEST_F(JournalWriterTest, AKickDuringACommitLeavesItsChangesToTheLeader) {
  store_.Hold(true);
  absl::Status first;
  std::thread leader = ChangeAndFlush("a", &first);
  store_.AwaitEntered(1);
  {
    kbisect::MutexLock lock(&mu_);
    Change("polled");
    writer_.Kick(mu_);  // Returns at once: a commit is in flight.
    EXPECT_EQ(writer_.pending(mu_).workers.size(), 1u);
  }
  store_.Hold(false);
  leader.join();  // The leader commits its batch, then the one Kick left.
  EXPECT_TRUE(first.ok());
  EXPECT_THAT(store_.commits(), ElementsAre(ElementsAre("a"), ElementsAre("polled")));
  EXPECT_EQ(PendingRows(), 0u);
}

TEST_F(JournalWriterTest, AFailedCommitRefusesEveryCallThatWaitedOnItAndRollsBackOnce) {
  store_.Hold(true);
  store_.Fail(absl::ResourceExhaustedError("disk full"));
  absl::Status first, second;
  std::thread leader = ChangeAndFlush("a", &first);
  store_.AwaitEntered(1);
  std::thread waiter = ChangeAndFlush("b", &second);
  AwaitPending(1);
  store_.Hold(false);
  leader.join();
  waiter.join();
  EXPECT_EQ(first.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(first.message(), HasSubstr("disk full"));
  EXPECT_THAT(first.message(), HasSubstr("Free space on the volume of --state-dir"));
  EXPECT_EQ(second.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(roll_backs_, 1);
  EXPECT_TRUE(store_.commits().empty());
  kbisect::MutexLock lock(&mu_);
  EXPECT_FALSE(writer_.writable(mu_));
  EXPECT_EQ(writer_.Refusal(mu_, /*worker_call=*/true).code(), absl::StatusCode::kUnavailable);
  // What the roll-back journaled stays pending: a flush refuses rather than commit it.
  EXPECT_THAT(writer_.pending(mu_).workers, testing::SizeIs(1));
  EXPECT_EQ(writer_.Flush(mu_).code(), absl::StatusCode::kResourceExhausted);
  // Reads are served from what the store has.
  EXPECT_TRUE(writer_.AwaitDurable(mu_).ok());
}

TEST_F(JournalWriterTest, WritesResumeOnceTheStoreTakesThemAgain) {
  store_.Fail(absl::InternalError("I/O error"));
  kbisect::MutexLock lock(&mu_);
  Change("a");
  const absl::Status refused = writer_.Flush(mu_);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.message(), HasSubstr("Make --state-dir writable again"));
  ASSERT_EQ(roll_backs_, 1);
  store_.Fail(absl::OkStatus());
  // Not before the period.
  writer_.TryWritingAgain(mu_, clock_.Now());
  EXPECT_FALSE(writer_.writable(mu_));
  clock_.Advance(JournalWriter::kWriteCheckPeriod);
  writer_.TryWritingAgain(mu_, clock_.Now());
  EXPECT_TRUE(writer_.writable(mu_));
  // The roll-back's pending change went along; "a" was rolled back and never committed.
  EXPECT_THAT(store_.commits(), ElementsAre(ElementsAre("rebuilt")));
  Change("b");
  EXPECT_TRUE(writer_.Flush(mu_).ok());
  EXPECT_EQ(store_.commits().size(), 2u);
}

TEST_F(JournalWriterTest, ACallThatWokeAfterWritesResumedIsToldToRetry) {
  kbisect::MutexLock lock(&mu_);
  store_.Fail(absl::InternalError("I/O error"));
  Change("a");
  ASSERT_FALSE(writer_.Flush(mu_).ok());
  store_.Fail(absl::OkStatus());
  clock_.Advance(JournalWriter::kWriteCheckPeriod);
  writer_.TryWritingAgain(mu_, clock_.Now());
  ASSERT_TRUE(writer_.writable(mu_));
  EXPECT_EQ(writer_.Refusal(mu_, false).code(), absl::StatusCode::kAborted);
  EXPECT_EQ(writer_.Refusal(mu_, true).code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(writer_.Refusal(mu_, false).message(), HasSubstr("retry"));
}

}  // namespace
}  // namespace kbisect
