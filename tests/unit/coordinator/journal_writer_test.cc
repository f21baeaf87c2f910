// Copyright 2026 The kbisect Authors.
//
// JournalWriter alone, on a store whose commits the test holds open or fails: what a batch holds,
// that the committer needs no owner's mutex, what a failed commit refuses and rolls back, and when
// writes resume. The threads that wait are made to wait deterministically (the test sees their
// batches sealed, or their commit entered, before it lets the store go on).
#include "coordinator/journal_writer.h"

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
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
  uint64_t BatchOfChanges() {
    kbisect::MutexLock lock(&mu_);
    return writer_.BatchOfChanges(mu_);
  }
  // Waits until `n` batches were sealed (changes made by other threads, which then wait in Flush
  // with the mutex released).
  void AwaitSealed(uint64_t n) {
    while (BatchOfChanges() < n) std::this_thread::yield();
  }
  void AwaitDurable(uint64_t n) {
    while (writer_.durable_batches()->load() < n) std::this_thread::yield();
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

TEST_F(JournalWriterTest, BatchesSealedDuringACommitShareTheNextOne) {
  store_.Hold(true);
  absl::Status first, second, third;
  std::thread a = ChangeAndFlush("a", &first);
  store_.AwaitEntered(1);  // "a" commits, held.
  std::thread b = ChangeAndFlush("b", &second);
  std::thread c = ChangeAndFlush("c", &third);
  AwaitSealed(3);  // Both sealed their batch and wait in Flush for it.
  EXPECT_EQ(writer_.durable_batches()->load(), 0u);
  store_.Hold(false);
  a.join();
  b.join();
  c.join();
  EXPECT_TRUE(first.ok());
  EXPECT_TRUE(second.ok());
  EXPECT_TRUE(third.ok());
  const std::vector<std::vector<std::string>> commits = store_.commits();
  ASSERT_EQ(commits.size(), 2u);
  EXPECT_THAT(commits[0], ElementsAre("a"));
  // One transaction, in the order the calls sealed.
  EXPECT_THAT(commits[1], testing::UnorderedElementsAre("b", "c"));
  EXPECT_EQ(writer_.durable_batches()->load(), 3u);
}

TEST_F(JournalWriterTest, ACommitNeedsNoOwnersMutex) {
  // The owner's mutex stays held by this thread: the committer commits anyway, batch after
  // batch, and marks them durable (decision 185).
  kbisect::MutexLock lock(&mu_);
  Change("a");
  writer_.Kick(mu_);  // Returns at once, its batch sealed.
  EXPECT_EQ(writer_.BatchOfChanges(mu_), 1u);
  EXPECT_TRUE(writer_.pending(mu_).empty());
  AwaitDurable(1);
  Change("b");
  EXPECT_EQ(writer_.BatchOfChanges(mu_), 2u);
  writer_.Kick(mu_);
  AwaitDurable(2);
  EXPECT_THAT(store_.commits(), ElementsAre(ElementsAre("a"), ElementsAre("b")));
}

TEST_F(JournalWriterTest, AKickDuringACommitIsCommittedAfterIt) {
  store_.Hold(true);
  absl::Status first;
  std::thread leader = ChangeAndFlush("a", &first);
  store_.AwaitEntered(1);
  {
    kbisect::MutexLock lock(&mu_);
    Change("polled");
    writer_.Kick(mu_);  // Returns at once: a commit is in flight.
    EXPECT_TRUE(writer_.pending(mu_).empty());
    EXPECT_EQ(writer_.BatchOfChanges(mu_), 2u);
  }
  store_.Hold(false);
  leader.join();
  EXPECT_TRUE(first.ok());
  AwaitDurable(2);
  EXPECT_THAT(store_.commits(), ElementsAre(ElementsAre("a"), ElementsAre("polled")));
}

TEST_F(JournalWriterTest, AMailboxIsNotifiedOnceItsBatchIsDurable) {
  store_.Hold(true);
  auto mailbox = std::make_shared<WorkerMailbox>(writer_.durable_batches());
  const uint64_t sequence = mailbox->BeginPoll();
  {
    kbisect::MutexLock lock(&mu_);
    Change("leased");
    const uint64_t batch = writer_.BatchOfChanges(mu_);
    v1::Lease lease;
    lease.set_lease_id("lease-1");
    mailbox->Deposit(lease, batch);
    writer_.NotifyWhenDurable(mu_, mailbox, batch);
    writer_.Kick(mu_);
  }
  store_.AwaitEntered(1);
  WorkerMailbox::Delivery early;
  EXPECT_EQ(mailbox->Await(sequence, &clock_, clock_.Now(), &early),
            WorkerMailbox::Outcome::kTimedOut);  // Not durable: not delivered.
  store_.Hold(false);
  WorkerMailbox::Delivery delivery;
  EXPECT_EQ(mailbox->Await(sequence, &clock_, absl::InfiniteFuture(), &delivery),
            WorkerMailbox::Outcome::kDelivered);
  ASSERT_EQ(delivery.assignments.size(), 1u);
  EXPECT_EQ(delivery.assignments[0].lease_id(), "lease-1");
}

TEST_F(JournalWriterTest, StopCommitsWhatIsSealedAndThenRefuses) {
  store_.Hold(true);
  {
    kbisect::MutexLock lock(&mu_);
    Change("a");
    writer_.Kick(mu_);
  }
  store_.AwaitEntered(1);
  std::thread stop([this] { writer_.Stop(); });
  store_.Hold(false);
  stop.join();
  EXPECT_THAT(store_.commits(), ElementsAre(ElementsAre("a")));
  kbisect::MutexLock lock(&mu_);
  Change("late");
  EXPECT_EQ(writer_.Flush(mu_).code(), absl::StatusCode::kUnavailable);
}

// Many threads change, flush and kick at once against a store that commits at once: every
// flush returns with its own change durable, and the store holds every change once, each
// thread's in the order it made them (the journal's order is the order of the calls).
TEST(JournalWriterStressTest, ConcurrentCallsLoseNothingAndKeepTheirOrder) {
  MemoryJobStore store;
  FakeClock clock;
  kbisect::Mutex mu;
  JournalWriter writer(&store, &mu, &clock, JournalWriter::Options{}, [] {});
  constexpr int kThreads = 8;
  constexpr int kCalls = 200;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        kbisect::MutexLock lock(&mu);
        const std::string id = absl::StrCat("t", t, "-", i);
        writer.pending(mu).workers.push_back(StoredWorker{id, id, {}});
        if (i % 3 == 0) {
          writer.Kick(mu);  // A Synchronize's: no wait.
          continue;
        }
        const uint64_t batch = writer.BatchOfChanges(mu);
        if (!writer.Flush(mu).ok() || writer.durable_batches()->load() < batch) ++failures;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  writer.Stop();  // What the last kicks sealed is committed.
  EXPECT_EQ(failures.load(), 0);
  absl::StatusOr<StoredState> stored = store.Load();
  ASSERT_TRUE(stored.ok()) << stored.status();
  ASSERT_EQ(stored->workers.size(), static_cast<size_t>(kThreads * kCalls));
  std::map<std::string, int> next;  // Thread -> the call it should show next.
  for (const StoredWorker& worker : stored->workers) {
    const std::vector<std::string> parts = absl::StrSplit(worker.worker_id, '-');
    ASSERT_EQ(parts.size(), 2u);
    EXPECT_EQ(std::to_string(next[parts[0]]++), parts[1]) << worker.worker_id;
  }
}

TEST_F(JournalWriterTest, AFailedCommitRefusesEveryCallThatWaitedOnItAndRollsBackOnce) {
  store_.Hold(true);
  store_.Fail(absl::ResourceExhaustedError("disk full"));
  absl::Status first, second;
  std::thread leader = ChangeAndFlush("a", &first);
  store_.AwaitEntered(1);
  std::thread waiter = ChangeAndFlush("b", &second);
  AwaitSealed(2);
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
