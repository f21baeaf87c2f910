// Copyright 2026 The kbisect Authors.
//
// The result cache's contract, for the SQLite file (through reopened files in temp dirs, several
// connections and several processes) and for the memory cache: round trips, newest-wins
// replacement, lookup filters and order, prune, stats, and the errors of unusable files.
#include "coordinator/result_cache.h"

#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/rpc/proto_time.h"
#include "common/spec/action_digest.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::kbisect::testing::ReadFile;
using ::kbisect::testing::TempDir;
using ::kbisect::testing::WriteFile;
using ::testing::HasSubstr;

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

std::string Tree(int i) { return absl::StrCat("tree", i); }

v1::CachedResult Result(const std::string& tree, const std::string& worker, absl::Time measured,
                        double value, const std::string& hardware_class = "hc-h100") {
  v1::CachedResult result;
  result.set_commit_sha(absl::StrCat("commit-of-", tree));
  result.set_tree_sha(tree);
  result.set_worker(worker);
  result.set_hardware_class(hardware_class);
  for (int i = 0; i < 3; ++i) result.add_samples(value + 0.01 * i);
  *result.mutable_measure_time() = ToProto(measured);
  result.set_job_id("job-7");
  result.set_kind(v1::PROBE_KIND_BISECT);
  result.set_metric_name("latency");
  result.set_metric_unit("ms");
  return result;
}

// "tree/worker/first sample" of each result, in order.
std::vector<std::string> Summary(const std::vector<v1::CachedResult>& results) {
  std::vector<std::string> out;
  for (const v1::CachedResult& r : results) {
    out.push_back(absl::StrCat(r.tree_sha(), "/", r.worker(), "/", r.hardware_class(), "/",
                               r.samples_size() > 0 ? r.samples(0) : -1));
  }
  return out;
}

// Runs each behavioural test on the SQLite cache and on the memory cache.
class ResultCacheTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (sqlite()) {
      auto cache = OpenSqliteResultCache(path_);
      ASSERT_TRUE(cache.ok()) << cache.status();
      cache_ = *std::move(cache);
    } else {
      cache_ = NewMemoryResultCache();
    }
  }

  bool sqlite() const { return GetParam(); }

  // For SQLite, closes the file and opens it again (what a later `kbisect run` sees).
  void Reopen() {
    if (!sqlite()) return;
    cache_.reset();
    auto cache = OpenSqliteResultCache(path_);
    ASSERT_TRUE(cache.ok()) << cache.status();
    cache_ = *std::move(cache);
  }

  std::vector<v1::CachedResult> Lookup(const std::string& digest,
                                       const std::vector<std::string>& trees,
                                       absl::Time not_before = absl::InfinitePast()) {
    auto found = cache_->Lookup(digest, trees, not_before);
    EXPECT_TRUE(found.ok()) << found.status();
    return found.ok() ? *found : std::vector<v1::CachedResult>();
  }

  TempDir tmp_;
  const std::string path_ = DefaultResultCachePath(tmp_.Join("cache"));
  std::unique_ptr<ResultCache> cache_;
};

TEST_P(ResultCacheTest, RoundTripsEveryField) {
  const v1::CachedResult a = Result(Tree(1), "host/slot0", kT0, 1.5);
  v1::CachedResult b = Result(Tree(2), "host/slot1", kT0 + absl::Nanoseconds(123), 2.5);
  b.set_kind(v1::PROBE_KIND_BASELINE_GOOD);
  b.add_samples(-0.0);
  ASSERT_TRUE(cache_->Put("spec-a", a).ok());
  ASSERT_TRUE(cache_->Put("spec-a", b).ok());
  Reopen();
  const std::vector<v1::CachedResult> found = Lookup("spec-a", {Tree(2), Tree(1)});
  ASSERT_EQ(found.size(), 2u);
  EXPECT_TRUE(MessageDifferencer::Equals(found[0], a)) << found[0].DebugString();
  EXPECT_TRUE(MessageDifferencer::Equals(found[1], b)) << found[1].DebugString();
}

TEST_P(ResultCacheTest, TheNewestMeasurementOfACommitOnAWorkerWins) {
  ASSERT_TRUE(cache_->Put("spec", Result(Tree(1), "w0", kT0, 1.0)).ok());
  ASSERT_TRUE(cache_->Put("spec", Result(Tree(1), "w0", kT0 + absl::Hours(1), 2.0)).ok());
  EXPECT_THAT(Summary(Lookup("spec", {Tree(1)})), ::testing::ElementsAre("tree1/w0/hc-h100/2"));
  // An older measurement arriving late does not replace the newer one.
  ASSERT_TRUE(cache_->Put("spec", Result(Tree(1), "w0", kT0 + absl::Minutes(30), 3.0)).ok());
  EXPECT_THAT(Summary(Lookup("spec", {Tree(1)})), ::testing::ElementsAre("tree1/w0/hc-h100/2"));
  // One measured at the same time does.
  ASSERT_TRUE(cache_->Put("spec", Result(Tree(1), "w0", kT0 + absl::Hours(1), 4.0)).ok());
  // Another worker, hardware class or spec is another key.
  ASSERT_TRUE(cache_->Put("spec", Result(Tree(1), "w1", kT0, 5.0)).ok());
  ASSERT_TRUE(cache_->Put("spec", Result(Tree(1), "w0", kT0, 6.0, "hc-b200")).ok());
  ASSERT_TRUE(cache_->Put("other", Result(Tree(1), "w0", kT0, 7.0)).ok());
  Reopen();
  EXPECT_THAT(
      Summary(Lookup("spec", {Tree(1)})),
      ::testing::ElementsAre("tree1/w0/hc-b200/6", "tree1/w0/hc-h100/4", "tree1/w1/hc-h100/5"));
  EXPECT_THAT(Summary(Lookup("other", {Tree(1)})), ::testing::ElementsAre("tree1/w0/hc-h100/7"));
  auto stats = cache_->GetStats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->results, 4);
}

TEST_P(ResultCacheTest, LookupFiltersByDigestTreesAndAgeInTreeThenWorkerOrder) {
  for (int tree = 0; tree < 5; ++tree) {
    for (const char* worker : {"w2", "w0", "w1"}) {
      ASSERT_TRUE(
          cache_->Put("spec", Result(Tree(tree), worker, kT0 + absl::Hours(tree), tree)).ok());
    }
  }
  ASSERT_TRUE(cache_->Put("other", Result(Tree(3), "w9", kT0 + absl::Hours(9), 9)).ok());
  Reopen();
  EXPECT_THAT(
      Summary(Lookup("spec", {Tree(3), Tree(1), Tree(3), "unknown"})),
      ::testing::ElementsAre("tree1/w0/hc-h100/1", "tree1/w1/hc-h100/1", "tree1/w2/hc-h100/1",
                             "tree3/w0/hc-h100/3", "tree3/w1/hc-h100/3", "tree3/w2/hc-h100/3"));
  // not_before is inclusive: tree 3 was measured at kT0 + 3h exactly.
  EXPECT_THAT(
      Summary(Lookup("spec", {Tree(1), Tree(3), Tree(4)}, kT0 + absl::Hours(3))),
      ::testing::ElementsAre("tree3/w0/hc-h100/3", "tree3/w1/hc-h100/3", "tree3/w2/hc-h100/3",
                             "tree4/w0/hc-h100/4", "tree4/w1/hc-h100/4", "tree4/w2/hc-h100/4"));
  EXPECT_TRUE(Lookup("spec", {Tree(1)}, kT0 + absl::Hours(2)).empty());
  EXPECT_THAT(Summary(Lookup("other", {Tree(1), Tree(3)})),
              ::testing::ElementsAre("tree3/w9/hc-h100/9"));
  EXPECT_TRUE(Lookup("unknown-spec", {Tree(1), Tree(3)}).empty());
  EXPECT_TRUE(Lookup("spec", {}).empty());
}

TEST_P(ResultCacheTest, PruneRemovesWhatWasMeasuredBeforeTheCutoff) {
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(cache_->Put("spec", Result(Tree(i), "w0", kT0 + absl::Hours(i), i)).ok());
  }
  auto removed = cache_->Prune(kT0 + absl::Hours(4));
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_EQ(*removed, 4);
  Reopen();
  std::vector<std::string> all;
  for (int i = 0; i < 10; ++i) all.push_back(Tree(i));
  const std::vector<v1::CachedResult> left = Lookup("spec", all);
  ASSERT_EQ(left.size(), 6u);
  EXPECT_EQ(left.front().tree_sha(), Tree(4));  // Measured exactly at the cutoff: kept.
  removed = cache_->Prune(kT0 + absl::Hours(4));
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_EQ(*removed, 0);
  removed = cache_->Prune(absl::InfiniteFuture());
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_EQ(*removed, 6);
  EXPECT_TRUE(Lookup("spec", all).empty());
}

TEST_P(ResultCacheTest, StatsCountResultsSpecsWorkersTreesAndTimes) {
  auto empty = cache_->GetStats();
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->results, 0);
  EXPECT_EQ(empty->specs, 0);
  EXPECT_EQ(empty->workers, 0);
  EXPECT_EQ(empty->trees, 0);
  EXPECT_EQ(empty->oldest, absl::InfinitePast());
  EXPECT_EQ(empty->newest, absl::InfinitePast());
  ASSERT_TRUE(cache_->Put("a", Result(Tree(1), "w0", kT0 + absl::Hours(2), 1)).ok());
  ASSERT_TRUE(cache_->Put("a", Result(Tree(2), "w1", kT0 + absl::Nanoseconds(5), 1)).ok());
  ASSERT_TRUE(cache_->Put("b", Result(Tree(1), "w1", kT0 + absl::Hours(7), 1)).ok());
  ASSERT_TRUE(cache_->Put("b", Result(Tree(1), "w2", kT0 + absl::Hours(3), 1, "hc-2")).ok());
  Reopen();
  auto stats = cache_->GetStats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->results, 4);
  EXPECT_EQ(stats->specs, 2);
  EXPECT_EQ(stats->workers, 3);
  EXPECT_EQ(stats->trees, 2);
  EXPECT_EQ(stats->oldest, kT0 + absl::Nanoseconds(5));
  EXPECT_EQ(stats->newest, kT0 + absl::Hours(7));
  EXPECT_GT(stats->bytes, 0);
  if (sqlite()) {
    struct stat st;
    ASSERT_EQ(stat(path_.c_str(), &st), 0);
    EXPECT_GE(stats->bytes, static_cast<int64_t>(st.st_size));
  }
}

TEST_P(ResultCacheTest, RejectsResultsThatCannotBeKeyed) {
  EXPECT_EQ(cache_->Put("", Result(Tree(1), "w0", kT0, 1)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cache_->Put("spec", Result("", "w0", kT0, 1)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cache_->Put("spec", Result(Tree(1), "", kT0, 1)).code(),
            absl::StatusCode::kInvalidArgument);
  auto stats = cache_->GetStats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->results, 0);
}

INSTANTIATE_TEST_SUITE_P(SqliteAndMemory, ResultCacheTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Sqlite" : "Memory";
                         });

// --- SQLite only --------------------------------------------------------------------------------

constexpr int kWritesPerWriter = 300;

// Writes kWritesPerWriter results of worker `worker` (one per tree), plus one result every
// writer writes (the same key). Returns the number of failed writes.
int WriteMany(ResultCache* cache, const std::string& worker) {
  int failures = 0;
  for (int i = 0; i < kWritesPerWriter; ++i) {
    if (!cache->Put("spec", Result(Tree(i), worker, kT0 + absl::Seconds(i), i)).ok()) ++failures;
    if (!cache->Put("spec", Result("shared", "w-shared", kT0 + absl::Seconds(i), i)).ok()) {
      ++failures;
    }
  }
  return failures;
}

void ExpectAllWrites(const std::string& path, const std::vector<std::string>& workers) {
  auto cache = OpenSqliteResultCache(path);
  ASSERT_TRUE(cache.ok()) << cache.status();
  std::vector<std::string> trees;
  for (int i = 0; i < kWritesPerWriter; ++i) trees.push_back(Tree(i));
  auto found = (*cache)->Lookup("spec", trees, absl::InfinitePast());
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->size(), workers.size() * kWritesPerWriter);
  for (const std::string& worker : workers) {
    int count = 0;
    for (const v1::CachedResult& r : *found) count += r.worker() == worker ? 1 : 0;
    EXPECT_EQ(count, kWritesPerWriter) << worker;
  }
  auto shared = (*cache)->Lookup("spec", {"shared"}, absl::InfinitePast());
  ASSERT_TRUE(shared.ok()) << shared.status();
  ASSERT_EQ(shared->size(), 1u);
  EXPECT_EQ(shared->front().samples(0), kWritesPerWriter - 1);  // The newest one.
}

// A job's lookup: by its spec's digest, within its cache_max_age, one result per commit of a
// tree (a revert's tree stands for both commits), nothing with --no-cache.
TEST(CachedResultsOfRangeTest, FindsTheSpecsResultsAtTheRangesTreesWithinTheMaxAge) {
  std::unique_ptr<ResultCache> cache = NewMemoryResultCache();
  v1::JobSpec spec;
  spec.set_repository("/repo");
  spec.add_bench_command("./bench.sh");
  v1::JobSpec other = spec;
  other.add_bench_command("--other");
  ASSERT_TRUE(cache->Put(SpecDigest(spec), Result(Tree(1), "w0", kT0, 1.0)).ok());
  ASSERT_TRUE(
      cache->Put(SpecDigest(spec), Result(Tree(2), "w0", kT0 - absl::Hours(24 * 8), 2.0)).ok());
  ASSERT_TRUE(cache->Put(SpecDigest(other), Result(Tree(3), "w0", kT0, 3.0)).ok());
  std::vector<v1::CommitRef> commits(4);
  const int trees[4] = {0, 1, 2, 1};  // c3 reverts c2 to c1's tree.
  for (int i = 0; i < 4; ++i) {
    commits[i].set_sha(absl::StrCat("c", i));
    commits[i].set_tree_sha(Tree(trees[i]));
  }
  const std::vector<v1::CachedResult> found =
      CachedResultsOfRange(*cache, spec, commits, kT0 + absl::Hours(1));
  ASSERT_EQ(found.size(), 2u)
      << "tree 2 is older than the default 7 days; tree 3 is another spec's";
  EXPECT_EQ(found[0].commit_sha(), "c1");
  EXPECT_EQ(found[1].commit_sha(), "c3");
  EXPECT_EQ(found[1].tree_sha(), Tree(1));

  spec.mutable_cache_max_age()->set_seconds(9 * 24 * 3600);
  EXPECT_EQ(CachedResultsOfRange(*cache, spec, commits, kT0 + absl::Hours(1)).size(), 3u);
  spec.set_no_cache(true);
  EXPECT_TRUE(CachedResultsOfRange(*cache, spec, commits, kT0 + absl::Hours(1)).empty());
}

TEST(SqliteResultCacheTest, TwoConnectionsWritingAtOnceLoseNothing) {
  TempDir tmp;
  const std::string path = tmp.Join("results.sqlite");
  auto first = OpenSqliteResultCache(path);
  auto second = OpenSqliteResultCache(path);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();
  int failures[2] = {0, 0};
  std::thread a([&] { failures[0] = WriteMany(first->get(), "w-a"); });
  std::thread b([&] { failures[1] = WriteMany(second->get(), "w-b"); });
  a.join();
  b.join();
  EXPECT_EQ(failures[0], 0);
  EXPECT_EQ(failures[1], 0);
  first->reset();
  second->reset();
  ExpectAllWrites(path, {"w-a", "w-b"});
}

TEST(SqliteResultCacheTest, TwoProcessesWritingAtOnceLoseNothing) {
  TempDir tmp;
  // The processes create the file (and its directory) themselves, at the same time.
  const std::string path = tmp.Join("new/dir/results.sqlite");
  std::vector<pid_t> children;
  for (const char* worker : {"w-a", "w-b", "w-c"}) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto cache = OpenSqliteResultCache(path);
      if (!cache.ok()) {
        std::fprintf(stderr, "%s: %s\n", worker, cache.status().ToString().c_str());
        _exit(100);
      }
      _exit(WriteMany(cache->get(), worker) == 0 ? 0 : 101);
    }
    children.push_back(pid);
  }
  for (const pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "100: open failed, 101: a write failed";
  }
  ExpectAllWrites(path, {"w-a", "w-b", "w-c"});
}

// Eight processes held at a pipe until all are forked, then opening one new file at once: the
// switch to the write-ahead log needs the file to itself and SQLite does not wait for it, so
// without OpenSqliteResultCache's retries some of them failed ("database is locked": 2 of 8
// repeats of this test on a loaded machine, 2026-12-07; one of three processes of the test
// above in an ASan run of the suite).
TEST(SqliteResultCacheTest, ProcessesOpeningANewFileTogetherAllOpenIt) {
  TempDir tmp;
  for (int round = 0; round < 10; ++round) {
    const std::string path = tmp.Join(absl::StrCat("round", round, "/results.sqlite"));
    int gate[2];
    ASSERT_EQ(pipe(gate), 0);
    std::vector<pid_t> children;
    for (int i = 0; i < 8; ++i) {
      const pid_t pid = fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        close(gate[1]);
        char byte;
        (void)!read(gate[0], &byte, 1);  // Returns at the parent's close: every child at once.
        auto cache = OpenSqliteResultCache(path);
        if (!cache.ok()) {
          std::fprintf(stderr, "round %d, process %d: %s\n", round, i,
                       cache.status().ToString().c_str());
          _exit(100);
        }
        _exit((*cache)->Put("spec", Result(Tree(i), "w", kT0, i)).ok() ? 0 : 101);
      }
      children.push_back(pid);
    }
    close(gate[0]);
    close(gate[1]);
    for (const pid_t pid : children) {
      int status = 0;
      ASSERT_EQ(waitpid(pid, &status, 0), pid);
      ASSERT_TRUE(WIFEXITED(status));
      EXPECT_EQ(WEXITSTATUS(status), 0)
          << "round " << round << "; 100: open failed, 101: a write failed";
    }
  }
}

TEST(SqliteResultCacheTest, PruneShrinksTheFile) {
  TempDir tmp;
  const std::string path = tmp.Join("results.sqlite");
  auto cache = OpenSqliteResultCache(path);
  ASSERT_TRUE(cache.ok()) << cache.status();
  for (int i = 0; i < 2000; ++i) {
    v1::CachedResult result = Result(Tree(i), "w0", kT0, i);
    for (int j = 0; j < 60; ++j) result.add_samples(j);
    ASSERT_TRUE((*cache)->Put("spec", result).ok());
  }
  auto full = (*cache)->GetStats();
  ASSERT_TRUE(full.ok()) << full.status();
  auto removed = (*cache)->Prune(absl::InfiniteFuture());
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_EQ(*removed, 2000);
  auto pruned = (*cache)->GetStats();
  ASSERT_TRUE(pruned.ok()) << pruned.status();
  EXPECT_EQ(pruned->results, 0);
  EXPECT_GT(full->bytes, 1'000'000);
  EXPECT_LT(pruned->bytes, full->bytes / 4) << full->bytes << " -> " << pruned->bytes;
}

TEST(SqliteResultCacheTest, AGarbageFileIsDataLossSayingWhatToDo) {
  TempDir tmp;
  const std::string path = tmp.Join("results.sqlite");
  std::string garbage;
  for (int i = 0; i < 200; ++i) absl::StrAppend(&garbage, "this is not a database ", i, "\n");
  WriteFile(path, garbage);
  auto cache = OpenSqliteResultCache(path);
  ASSERT_FALSE(cache.ok());
  EXPECT_EQ(cache.status().code(), absl::StatusCode::kDataLoss) << cache.status();
  EXPECT_THAT(std::string(cache.status().message()), HasSubstr(path));
  EXPECT_THAT(std::string(cache.status().message()), HasSubstr("delete it"));
  // The file was left alone for the user to look at.
  EXPECT_EQ(ReadFile(path), garbage);
}

TEST(SqliteResultCacheTest, AnotherSqliteDatabaseIsNotTakenForACache) {
  TempDir tmp;
  const std::string path = tmp.Join("kbisect.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE jobs(job_id TEXT)", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto cache = OpenSqliteResultCache(path);
  ASSERT_FALSE(cache.ok());
  EXPECT_EQ(cache.status().code(), absl::StatusCode::kFailedPrecondition) << cache.status();
  EXPECT_THAT(std::string(cache.status().message()), HasSubstr("not a kbisect result cache"));
  EXPECT_THAT(std::string(cache.status().message()), HasSubstr(path));
}

TEST(SqliteResultCacheTest, ANewerSchemaIsRefused) {
  TempDir tmp;
  const std::string path = tmp.Join("results.sqlite");
  {
    auto cache = OpenSqliteResultCache(path);
    ASSERT_TRUE(cache.ok()) << cache.status();
    ASSERT_TRUE((*cache)->Put("spec", Result(Tree(1), "w0", kT0, 1)).ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version=2", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  auto cache = OpenSqliteResultCache(path);
  ASSERT_FALSE(cache.ok());
  EXPECT_EQ(cache.status().code(), absl::StatusCode::kFailedPrecondition) << cache.status();
  EXPECT_THAT(std::string(cache.status().message()), HasSubstr("newer"));
}

TEST(SqliteResultCacheTest, AnUnopenablePathIsAnErrorNamingIt) {
  TempDir tmp;
  const std::string dir = tmp.Join("a-directory");
  WriteFile(dir + "/inside", "x");
  auto cache = OpenSqliteResultCache(dir);
  ASSERT_FALSE(cache.ok());
  EXPECT_THAT(std::string(cache.status().message()), HasSubstr(dir));
  // A file where the directory should be.
  auto under_file = OpenSqliteResultCache(dir + "/inside/results.sqlite");
  ASSERT_FALSE(under_file.ok());
  EXPECT_THAT(std::string(under_file.status().message()), HasSubstr(dir + "/inside"));
}

TEST(DefaultResultCachePathTest, IsResultsSqliteInTheCacheDir) {
  EXPECT_EQ(DefaultResultCachePath("/home/u/.cache/kbisect"),
            "/home/u/.cache/kbisect/results.sqlite");
  EXPECT_EQ(DefaultResultCachePath("/srv/cache/"), "/srv/cache/results.sqlite");
  EXPECT_EQ(DefaultResultCachePath("rel"), "rel/results.sqlite");
}

}  // namespace
}  // namespace kbisect
