// Copyright 2026 The kbisect Authors.
//
// VerdictLedger on its own: a probe table and a calibration, no job. Verdicts narrow the search,
// a contradiction stands as a skip until a verdict is taken back, taking verdicts back rebuilds
// the search and the status' interval, and waiting probes are kept in flight or dropped.
#include "coordinator/job/verdict_ledger.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/coordinator/bisect_job_testing.h"

namespace kbisect {
namespace {

using ::kbisect::bisect_job_testing::FinishWithSamples;
using ::kbisect::bisect_job_testing::kNow;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

constexpr int kCommits = 8;

class VerdictLedgerTest : public ::testing::Test, protected bisect_job_testing::JobPartsFixture {
 protected:
  VerdictLedgerTest() : JobPartsFixture(kCommits) {}

  // A bisect probe of commit `index` measured on `worker`; returns its row.
  int Measured(int index, const std::string& worker = "w0") {
    return FinishWithSamples(&book_, book_.NewTask(v1::PROBE_KIND_BISECT, index, 1), worker,
                             {100, 101, 99});
  }

  // Measured, then judged `verdict` as BisectJob does: recorded, a skip on contradiction.
  int Judged(int index, v1::Verdict verdict, const std::string& worker = "w0") {
    const int row = Measured(index, worker);
    if (!ledger_.Record(row, verdict)) {
      verdict = v1::VERDICT_SKIP;
      ledger_.CountSkip();
    }
    book_.mutable_probe(row).set_verdict(verdict);
    return row;
  }
};

TEST_F(VerdictLedgerTest, VerdictsNarrowTheSearchAndAContradictionStandsAsASkip) {
  Judged(2, v1::VERDICT_GOOD);
  Judged(6, v1::VERDICT_BAD);
  EXPECT_EQ(ledger_.search().last_good(), 2);
  EXPECT_EQ(ledger_.search().first_bad(), 6);
  // BAD below a GOOD commit cannot be: the commit is untestable, the interval stays.
  const int row = Measured(1);
  EXPECT_FALSE(ledger_.Record(row, v1::VERDICT_BAD));
  EXPECT_EQ(ledger_.search().last_good(), 2);
  EXPECT_EQ(ledger_.search().first_bad(), 6);
}

TEST_F(VerdictLedgerTest, TakingAVerdictBackRebuildsTheSearchAndTheStatusInterval) {
  const int good = Judged(2, v1::VERDICT_GOOD);
  const int bad = Judged(6, v1::VERDICT_BAD);
  ledger_.Retract({bad}, /*probe_again=*/false, "", kNow);
  EXPECT_EQ(book_.probe(bad).verdict(), v1::VERDICT_UNSPECIFIED);
  EXPECT_EQ(book_.probe(good).verdict(), v1::VERDICT_GOOD);
  EXPECT_THAT(ledger_.awaiting(), ElementsAre(bad)) << "its samples are judged again";
  EXPECT_EQ(ledger_.search().last_good(), 2);
  EXPECT_EQ(ledger_.search().first_bad(), kCommits);
  EXPECT_EQ(ledger_.shown_last_good(), 2);
  EXPECT_EQ(ledger_.shown_first_bad(), kCommits);
  EXPECT_THAT(ledger_.search().InFlight(), ElementsAre(6)) << "waiting for its verdict again";
}

TEST_F(VerdictLedgerTest, ContradictedVerdictsAreJudgedAgainWithTheOnesTakenBack) {
  const int good = Judged(4, v1::VERDICT_GOOD);
  const int contradicted = Judged(3, v1::VERDICT_BAD);
  EXPECT_EQ(book_.probe(contradicted).verdict(), v1::VERDICT_SKIP);
  EXPECT_EQ(ledger_.progress().skips(), 1);
  ledger_.Retract({good}, /*probe_again=*/false, "", kNow);
  EXPECT_EQ(book_.probe(contradicted).verdict(), v1::VERDICT_UNSPECIFIED);
  EXPECT_EQ(book_.probe(good).verdict(), v1::VERDICT_UNSPECIFIED);
  EXPECT_THAT(ledger_.awaiting(), UnorderedElementsAre(good, contradicted));
  EXPECT_EQ(ledger_.progress().skips(), 0) << "the skip it stood as is taken back";
  EXPECT_EQ(ledger_.search().last_good(), 0);
  // Nothing to take back: the contradiction stands.
  const int again = Judged(2, v1::VERDICT_GOOD);
  EXPECT_FALSE(ledger_.Record(Measured(1), v1::VERDICT_BAD));
  ledger_.Retract({}, /*probe_again=*/false, "", kNow);
  EXPECT_EQ(book_.probe(again).verdict(), v1::VERDICT_GOOD);
}

TEST_F(VerdictLedgerTest, VerdictsProbedAgainOrOfAQuarantinedWorkerAreDiscarded) {
  const int again = Judged(2, v1::VERDICT_GOOD, "w0");
  const int quarantined = Judged(6, v1::VERDICT_BAD, "w1");
  calibration_.worker("w1").quarantined = true;
  ledger_.Retract({again}, /*probe_again=*/true, "its worker left", kNow);
  EXPECT_EQ(book_.probe(again).state(), v1::PROBE_STATE_CANCELLED);
  EXPECT_EQ(book_.probe(again).message(), "discarded: its worker left");
  ledger_.Retract({quarantined}, /*probe_again=*/false, "", kNow);
  EXPECT_EQ(book_.probe(quarantined).state(), v1::PROBE_STATE_CANCELLED);
  EXPECT_EQ(book_.probe(quarantined).message(), "discarded: its worker was quarantined");
  EXPECT_THAT(ledger_.awaiting(), IsEmpty());
  EXPECT_EQ(ledger_.search().last_good(), 0);
  EXPECT_EQ(ledger_.search().first_bad(), kCommits);
}

TEST_F(VerdictLedgerTest, RetractAllTakesBackEveryJudgedVerdictButNotFailures) {
  const int good = Judged(2, v1::VERDICT_GOOD);
  const int failed = Judged(4, v1::VERDICT_SKIP);  // A build failure: not judged.
  const int ambiguous = Judged(5, v1::VERDICT_AMBIGUOUS);
  ledger_.CountSkip();  // The failure and the AMBIGUOUS verdict.
  ledger_.CountSkip();
  ledger_.RetractAll(kNow);
  EXPECT_EQ(book_.probe(good).verdict(), v1::VERDICT_UNSPECIFIED);
  EXPECT_EQ(book_.probe(failed).verdict(), v1::VERDICT_SKIP);
  EXPECT_EQ(book_.probe(ambiguous).verdict(), v1::VERDICT_UNSPECIFIED);
  EXPECT_EQ(ledger_.progress().skips(), 1);
  EXPECT_THAT(ledger_.awaiting(), UnorderedElementsAre(good, ambiguous));
}

TEST_F(VerdictLedgerTest, RebuildKeepsMarksRunningTasksAndWaitingRowsInTheSearch) {
  v1::CommitMark* mark = frame_.marks.Add();
  mark->set_index(1);
  mark->set_verdict(v1::VERDICT_GOOD);
  book_.HandOut(book_.NewTask(v1::PROBE_KIND_BISECT, 5, 1), "w0");  // Running.
  const int waiting = Measured(3);
  ledger_.Await(waiting);
  ledger_.Rebuild();
  EXPECT_EQ(ledger_.search().last_good(), 1) << "the user's mark";
  EXPECT_THAT(ledger_.search().InFlight(), UnorderedElementsAre(3, 5));
  EXPECT_EQ(ledger_.shown_last_good(), 1);

  // Once GOOD is recorded above it, the waiting row is no longer needed.
  Judged(4, v1::VERDICT_GOOD);
  ledger_.DropAwaitingOutsideInterval();
  EXPECT_THAT(ledger_.awaiting(), IsEmpty());
  EXPECT_THAT(ledger_.TakeAwaiting(), IsEmpty());
}

TEST_F(VerdictLedgerTest, StepsAndTheLatestRoundAreCounted) {
  EXPECT_EQ(ledger_.steps(), 0);
  ledger_.CountStep(2);
  ledger_.CountStep(1);
  EXPECT_EQ(ledger_.steps(), 2);
  EXPECT_EQ(ledger_.max_round(), 2);
  ledger_.Await(Measured(3, "w0"));
  ledger_.Await(Measured(4, "w1"));
  ledger_.DropAwaiting([&](int row) { return book_.probe(row).worker() == "w0"; });
  ASSERT_EQ(ledger_.awaiting().size(), 1u);
  EXPECT_EQ(book_.probe(ledger_.awaiting()[0]).worker(), "w1");
  EXPECT_THAT(ledger_.TakeAwaiting(), testing::SizeIs(1));
  EXPECT_THAT(ledger_.awaiting(), IsEmpty());
}

TEST_F(VerdictLedgerTest, FreshAwaitingCountsAWorkersOwnMeasurementsNotCachedOnes) {
  ledger_.Await(Measured(2, "w0"));
  ledger_.Await(Measured(3, "w0"));
  const int cached = Measured(4, "w0");
  book_.mutable_probe(cached).set_cached(true);
  ledger_.Await(cached);
  ledger_.Await(Measured(5, "w1"));
  EXPECT_EQ(ledger_.FreshAwaitingOf("w0"), 2);
  EXPECT_EQ(ledger_.FreshAwaitingOf("w1"), 1);
  EXPECT_EQ(ledger_.FreshAwaitingOf("w2"), 0);
}

}  // namespace
}  // namespace kbisect
