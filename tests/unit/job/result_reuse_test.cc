// Copyright 2026 The kbisect Authors.
#include "coordinator/job/result_reuse.h"

#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "common/rpc/proto_time.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

std::vector<v1::CommitRef> Commits(int first, int n) {
  std::vector<v1::CommitRef> commits;
  for (int i = 0; i <= n; ++i) {
    v1::CommitRef ref;
    ref.set_sha(absl::StrFormat("%040d", first + i));
    ref.set_index(i);
    commits.push_back(ref);
  }
  return commits;
}

v1::CachedResult Cached(int global, const std::string& worker, std::vector<double> samples,
                        int64_t seconds = 1000) {
  v1::CachedResult result;
  result.set_commit_sha(absl::StrFormat("%040d", global));
  result.set_worker(worker);
  result.set_job_id("job-1");
  for (double v : samples) result.add_samples(v);
  *result.mutable_measure_time() = ToProto(absl::FromUnixSeconds(seconds));
  return result;
}

TEST(ResultReuseTest, CachedResultsWaitUntilTheirWorkerAgreesWithOneOfThem) {
  // Commits 100..200; w0 has 120 and 150 cached.
  ResultReuse reuse({Cached(120, "w0", {100, 100.5, 99.5}), Cached(150, "w0", {125, 125, 125}),
                     Cached(50, "w0", {100, 100, 100})},  // Outside the range: dropped.
                    Commits(100, 100));
  EXPECT_EQ(reuse.standing("w0"), ResultReuse::Standing::kUnverified);
  EXPECT_EQ(reuse.Anchors("w0"), (std::vector<int>{20, 50}));
  EXPECT_TRUE(reuse.IsAnchor("w0", 50));
  EXPECT_FALSE(reuse.IsAnchor("w1", 50));
  EXPECT_TRUE(reuse.Usable(0, 100).empty()) << "nothing is used before it is verified";
  // A commit it has no cached result for says nothing.
  EXPECT_FALSE(reuse.OnMeasured("w0", 30, {100}).has_value());
  const std::optional<ResultReuse::Check> check = reuse.OnMeasured("w0", 50, {125.2});
  ASSERT_TRUE(check.has_value());
  EXPECT_TRUE(check->agreed);
  EXPECT_EQ(check->cached_job_id, "job-1");
  EXPECT_EQ(reuse.standing("w0"), ResultReuse::Standing::kVerified);
  // The commit it just measured is its own probe; the other cached one is usable inside the
  // interval only.
  std::vector<ResultReuse::Entry*> usable = reuse.Usable(0, 100);
  ASSERT_EQ(usable.size(), 1u);
  EXPECT_EQ(usable[0]->index, 20);
  EXPECT_TRUE(reuse.Usable(25, 100).empty());
}

TEST(ResultReuseTest, ADriftedGpuIsRefusedWithAllItsCachedResults) {
  ResultReuse reuse({Cached(120, "w0", {100, 100.5, 99.5}), Cached(150, "w0", {125, 125, 125})},
                    Commits(100, 100));
  // 20% slower than when it measured that commit.
  const std::optional<ResultReuse::Check> check = reuse.OnMeasured("w0", 50, {150, 150.2, 149.9});
  ASSERT_TRUE(check.has_value());
  EXPECT_FALSE(check->agreed);
  EXPECT_EQ(reuse.standing("w0"), ResultReuse::Standing::kRefused);
  EXPECT_TRUE(reuse.Usable(0, 100).empty());
  EXPECT_TRUE(reuse.Anchors("w0").empty());
  // Checked once: a later agreeing measurement does not bring them back.
  EXPECT_FALSE(reuse.OnMeasured("w0", 20, {100}).has_value());
}

TEST(ResultReuseTest, NoiseWithinTheToleranceAgrees) {
  ResultReuse reuse({Cached(150, "w0", {125, 126, 124})}, Commits(100, 100));
  EXPECT_TRUE(reuse.OnMeasured("w0", 50, {125.8, 124.6, 126.1})->agreed);
}

TEST(ResultReuseTest, TheNewestResultOfACommitOnAWorkerWins) {
  ResultReuse reuse({Cached(150, "w0", {100}, 1000), Cached(150, "w0", {200}, 2000),
                     Cached(150, "w0", {300}, 1500)},
                    Commits(100, 100));
  const std::optional<ResultReuse::Check> check = reuse.OnMeasured("w0", 50, {200});
  ASSERT_TRUE(check.has_value());
  EXPECT_DOUBLE_EQ(check->cached_median, 200);
}

TEST(ResultReuseTest, ACacheRecordIsOneCommitMeasuredOnOneWorkerAConfirmationGivesTwo) {
  v1::CommitRef commit;
  commit.set_sha("abc");
  commit.set_tree_sha("def");
  v1::Probe probe;
  probe.set_kind(v1::PROBE_KIND_BISECT);
  probe.set_state(v1::PROBE_STATE_FINISHED);
  probe.set_outcome(v1::TASK_OUTCOME_SUCCEEDED);
  probe.set_worker("w0");
  probe.set_worker_hardware_class("hc-1");
  probe.add_samples(1.5);
  const std::optional<v1::CachedResult> result = ToCachedResult(probe, commit, "job-9");
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->tree_sha(), "def");
  EXPECT_EQ(result->hardware_class(), "hc-1");
  EXPECT_EQ(result->job_id(), "job-9");
  // A confirmation task measured its commit and its paired one interleaved on one worker: a
  // record of each.
  v1::Probe confirm = probe;
  confirm.set_kind(v1::PROBE_KIND_CONFIRM);
  v1::CommitRef parent;
  parent.set_sha("a0");
  parent.set_tree_sha("d0");
  const std::vector<v1::CachedResult> pair =
      ToCachedResults(confirm, commit, &parent, {1.0, 1.1}, "job-9");
  ASSERT_EQ(pair.size(), 2u);
  EXPECT_EQ(pair[0].tree_sha(), "def");
  EXPECT_EQ(pair[0].samples_size(), 1);
  EXPECT_EQ(pair[1].commit_sha(), "a0");
  EXPECT_EQ(pair[1].tree_sha(), "d0");
  EXPECT_EQ(pair[1].samples_size(), 2);
  EXPECT_EQ(pair[1].worker(), "w0");
  EXPECT_EQ(pair[1].kind(), v1::PROBE_KIND_CONFIRM);
  // A probe of one commit gives one record, whatever is passed as its pair.
  EXPECT_EQ(ToCachedResults(probe, commit, &parent, {1.0}, "j").size(), 1u);
  EXPECT_EQ(ToCachedResults(confirm, commit, nullptr, {1.0}, "j").size(), 1u);
  v1::Probe cached = probe;
  cached.set_cached(true);
  EXPECT_FALSE(ToCachedResult(cached, commit, "j").has_value());
  v1::Probe failed = probe;
  failed.set_outcome(v1::TASK_OUTCOME_BUILD_FAILED);
  EXPECT_FALSE(ToCachedResult(failed, commit, "j").has_value());
  EXPECT_TRUE(ToCachedResults(failed, commit, &parent, {1.0}, "j").empty());
}

TEST(ResultReuseTest, AVerifiedWorkersCachedPairOfTwoCommitsFromOneJobIsOffered) {
  // Commits 100..200. w0 measured 160 and 161 in job-1 (its confirmation); w1 measured both too
  // but is never verified; w2 measured them in two different jobs.
  v1::CachedResult w2_late = Cached(161, "w2", {125}, 3000);
  w2_late.set_job_id("job-2");
  ResultReuse reuse(
      {Cached(120, "w0", {100}), Cached(160, "w0", {100, 101}), Cached(161, "w0", {125, 126}),
       Cached(160, "w1", {100}), Cached(161, "w1", {125}), Cached(120, "w2", {100}),
       Cached(160, "w2", {100}), w2_late},
      Commits(100, 100));
  EXPECT_TRUE(reuse.PairsAt(60, 61).empty()) << "nothing is offered before a worker is verified";
  ASSERT_TRUE(reuse.OnMeasured("w0", 20, {100.1})->agreed);
  ASSERT_TRUE(reuse.OnMeasured("w2", 20, {100.1})->agreed);
  const std::vector<ResultReuse::CachedPair> pairs = reuse.PairsAt(60, 61);
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].worker, "w0");
  EXPECT_EQ(pairs[0].job_id, "job-1");
  EXPECT_EQ(pairs[0].last_good, (std::vector<double>{100, 101}));
  EXPECT_EQ(pairs[0].culprit, (std::vector<double>{125, 126}));
  // Used entries (turned into probe rows) are offered too: the confirmation counts each worker's
  // set once, from its rows or from the cache.
  for (ResultReuse::Entry* entry : reuse.Usable(0, 100)) entry->used = true;
  EXPECT_EQ(reuse.PairsAt(60, 61).size(), 1u);
  EXPECT_TRUE(reuse.PairsAt(59, 60).empty());
}

}  // namespace
}  // namespace kbisect
