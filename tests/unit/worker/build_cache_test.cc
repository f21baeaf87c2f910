// Copyright 2026 The kbisect Authors.
//
// BuildCache on real repositories (GitFixture), real mirrors and checkouts, and real build
// processes: what it reuses, what it never caches, how it stays bounded, and two slots asking for
// one build at once.
#include "worker/build_cache.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/git_fixture.h"
#include "tests/testing/process.h"

namespace kbisect {
namespace {

namespace fs = std::filesystem;

using ::kbisect::testing::GitFixture;
using ::kbisect::testing::ReadFile;
using ::kbisect::testing::RunShell;
using ::kbisect::testing::ShellQuote;
using ::kbisect::testing::TempDir;
using ::kbisect::testing::WaitFor;
using ::testing::HasSubstr;

bool Alive(pid_t pid) { return ::kbisect::testing::ProcessRunning(pid); }

class BuildCacheTest : public ::testing::Test {
 protected:
  BuildCacheTest() : runner_(NewSubprocessRunner()), repo_(tmp_.Join("repo")) {
    repo_.Init();
    a_ = repo_.Commit("a", {{".gitignore", "build/\n"}, {"file.txt", "a\n"}, {"only-a.txt", "x"}});
    b_ = repo_.Commit("b", {{"file.txt", "b\n"}}, {"only-a.txt"});
    b_again_ = repo_.Commit("same tree as b");  // An empty commit: b's tree.
    c_ = repo_.Commit("c", {{"file.txt", "c\n"}});
    d_ = repo_.Commit("d", {{"file.txt", "d\n"}});
  }

  // A build that logs the commit it builds and copies file.txt to out.txt.
  std::string LoggingBuild() const {
    return absl::StrCat("echo \"$KBISECT_COMMIT\" >> ", ShellQuote(log_),
                        " && cp file.txt out.txt");
  }

  // LoggingBuild, long enough (1 s) for a build store to keep it.
  std::string StoredBuild() const { return LoggingBuild() + " && sleep 1"; }

  // Builds a_ with StoredBuild in host-a's cache with the store tmp_/store, which publishes it;
  // returns the store.
  std::string PublishFromHostA() {
    const std::string store = tmp_.Join("store");
    fs::create_directories(store);
    BuildCacheOptions options;
    options.build_store = store;
    BuildCache host_a(tmp_.Join("host-a"), options, runner_.get());
    EXPECT_EQ(host_a.Acquire(Request(a_, StoredBuild()), nullptr, nullptr).build_store, store);
    return store;
  }

  BuildCache::Request Request(const std::string& sha, const std::string& command,
                              std::map<std::string, std::string> key_env = {}) const {
    BuildCache::Request request;
    request.repository = repo_.path();
    request.sha = sha;
    request.build.shell_command = command;
    request.build.env = key_env;
    request.build.env["KBISECT_COMMIT"] = sha;
    request.build.timeout = absl::Seconds(60);
    request.key_env = std::move(key_env);
    return request;
  }

  // Runs `command` as the build of b_, c_ and d_ from three threads at once in a fresh cache
  // whose slots are sized from what its builds cost (nothing measured yet).
  void ThreeBuildsAtOnce(const std::string& command) {
    BuildCache cache(CacheDir(), BuildCacheOptions(), runner_.get());
    const std::vector<std::string> shas = {b_, c_, d_};
    std::vector<std::thread> slots;
    std::vector<BuildCache::Acquired> built(shas.size());
    for (size_t i = 0; i < shas.size(); ++i) {
      slots.emplace_back([&, i] {
        // One after the other into the wait, so that the first is the one that runs alone.
        std::this_thread::sleep_for(std::chrono::milliseconds(50 * i));
        built[i] = cache.Acquire(Request(shas[i], command), nullptr, nullptr);
      });
    }
    for (std::thread& slot : slots) slot.join();
    for (const BuildCache::Acquired& b : built) EXPECT_TRUE(b.step.ok()) << b.step.message;
  }

  // The commits built so far, in order.
  std::vector<std::string> Builds() const {
    return absl::StrSplit(ReadFile(log_), '\n', absl::SkipEmpty());
  }

  std::string CacheDir() const { return tmp_.Join("cache"); }

  TempDir tmp_{"kbisect-build-cache"};
  std::unique_ptr<CommandRunner> runner_;
  GitFixture repo_;
  std::string a_, b_, b_again_, c_, d_;
  const std::string log_ = tmp_.Join("builds.log");
};

TEST_F(BuildCacheTest, ReusesABuildOnlyForTheSameTreeCommandAndEnvironment) {
  BuildCache cache(CacheDir(), 16, runner_.get());
  std::string dir;
  {
    BuildCache::Acquired first = cache.Acquire(Request(a_, LoggingBuild()), nullptr, nullptr);
    ASSERT_TRUE(first.step.ok()) << first.step.message;
    EXPECT_FALSE(first.reused);
    EXPECT_EQ(ReadFile(first.dir + "/out.txt"), "a\n") << "built in the directory it returns";
    EXPECT_TRUE(fs::path(first.dir).is_absolute());
    dir = first.dir;
  }
  BuildCache::Acquired hit = cache.Acquire(Request(a_, LoggingBuild()), nullptr, nullptr);
  ASSERT_TRUE(hit.step.ok()) << hit.step.message;
  EXPECT_TRUE(hit.reused);
  EXPECT_EQ(hit.dir, dir);
  EXPECT_EQ(hit.step.wall_time, absl::ZeroDuration()) << "no build ran";

  // Variables outside the key (the slot's device, KBISECT_COMMIT) do not matter.
  BuildCache::Request other_slot = Request(a_, LoggingBuild());
  other_slot.build.env["CUDA_VISIBLE_DEVICES"] = "5";
  EXPECT_TRUE(cache.Acquire(other_slot, nullptr, nullptr).reused);
  EXPECT_THAT(Builds(), ::testing::ElementsAre(a_));

  // Another command, another value of a job's variable, another tree: each a build of its own.
  EXPECT_FALSE(cache.Acquire(Request(a_, LoggingBuild() + " && true"), nullptr, nullptr).reused);
  EXPECT_FALSE(cache.Acquire(Request(a_, LoggingBuild(), {{"OPT", "1"}}), nullptr, nullptr).reused);
  EXPECT_FALSE(cache.Acquire(Request(a_, LoggingBuild(), {{"OPT", "2"}}), nullptr, nullptr).reused);
  EXPECT_TRUE(cache.Acquire(Request(a_, LoggingBuild(), {{"OPT", "2"}}), nullptr, nullptr).reused);
  BuildCache::Acquired b = cache.Acquire(Request(b_, LoggingBuild()), nullptr, nullptr);
  EXPECT_FALSE(b.reused);
  EXPECT_EQ(ReadFile(b.dir + "/out.txt"), "b\n");
  EXPECT_FALSE(fs::exists(b.dir + "/only-a.txt"));
  // A commit with the same tree is the same build.
  BuildCache::Acquired same_tree =
      cache.Acquire(Request(b_again_, LoggingBuild()), nullptr, nullptr);
  EXPECT_TRUE(same_tree.reused);
  EXPECT_EQ(same_tree.dir, b.dir);
  EXPECT_EQ(Builds().size(), 5u);

  // The cache outlives the process that made it: a new one (as after a restart) finds it.
  BuildCache restarted(CacheDir(), 16, runner_.get());
  EXPECT_TRUE(restarted.Acquire(Request(a_, LoggingBuild()), nullptr, nullptr).reused);
  EXPECT_EQ(Builds().size(), 5u);
}

TEST_F(BuildCacheTest, AFailedBuildIsNotCachedAndIsBuiltAgain) {
  BuildCache cache(CacheDir(), 16, runner_.get());
  const std::string ok = tmp_.Join("ok");
  const std::string command =
      absl::StrCat(LoggingBuild(), " && echo 'error: boom' >&2 && test -f ", ShellQuote(ok));
  BuildCache::Acquired failed = cache.Acquire(Request(a_, command), nullptr, nullptr);
  EXPECT_EQ(failed.step.failure, v1::TASK_OUTCOME_BUILD_FAILED);
  EXPECT_THAT(failed.step.message, HasSubstr(absl::StrCat("build at ", a_.substr(0, 7))));
  EXPECT_THAT(failed.step.message, HasSubstr("exited with code 1"));
  EXPECT_THAT(failed.step.log_tail, HasSubstr("error: boom"));
  EXPECT_TRUE(failed.dir.empty());
  EXPECT_EQ(failed.in_use, nullptr);

  testing::WriteFile(ok, "");
  BuildCache::Acquired rebuilt = cache.Acquire(Request(a_, command), nullptr, nullptr);
  ASSERT_TRUE(rebuilt.step.ok()) << rebuilt.step.message;
  EXPECT_FALSE(rebuilt.reused);
  EXPECT_TRUE(cache.Acquire(Request(a_, command), nullptr, nullptr).reused);
  EXPECT_EQ(Builds().size(), 2u);
}

TEST_F(BuildCacheTest, AnEntryWhoseBuildDidNotFinishIsNeverServed) {
  BuildCache cache(CacheDir(), 16, runner_.get());
  std::string entry;
  {
    BuildCache::Acquired built = cache.Acquire(Request(a_, LoggingBuild()), nullptr, nullptr);
    ASSERT_TRUE(built.step.ok()) << built.step.message;
    entry = fs::path(built.dir).parent_path().string();
  }
  // A worker killed after the build ran but before the build was recorded leaves no marker.
  ASSERT_TRUE(fs::remove(entry + "/built"));
  BuildCache::Acquired again = cache.Acquire(Request(a_, LoggingBuild()), nullptr, nullptr);
  ASSERT_TRUE(again.step.ok()) << again.step.message;
  EXPECT_FALSE(again.reused);
  EXPECT_EQ(Builds().size(), 2u);
  EXPECT_TRUE(fs::exists(entry + "/built"));

  // Nor is an entry whose checkout someone deleted.
  fs::remove_all(again.dir);
  again.in_use.reset();
  BuildCache::Acquired restored = cache.Acquire(Request(a_, LoggingBuild()), nullptr, nullptr);
  ASSERT_TRUE(restored.step.ok()) << restored.step.message;
  EXPECT_FALSE(restored.reused);
  EXPECT_EQ(ReadFile(restored.dir + "/out.txt"), "a\n");
  EXPECT_EQ(Builds().size(), 3u);
}

TEST_F(BuildCacheTest, ACancelledBuildIsKilledWithItsChildrenAndNotCached) {
  BuildCache cache(CacheDir(), 16, runner_.get());
  const std::string pid_file = tmp_.Join("child.pid");
  // The build leaves a child sleeping unless FAST is set (FAST is not part of the key).
  const std::string command =
      absl::StrCat(LoggingBuild(), " && if [ -z \"$FAST\" ]; then sleep 30 & echo $! > ",
                   ShellQuote(pid_file), "; wait; fi");
  Cancellation cancel;
  std::thread canceller([&] {
    WaitFor([&] { return fs::exists(pid_file) && !ReadFile(pid_file).empty(); },
            std::chrono::seconds(20));
    cancel.Cancel();
  });
  const absl::Time start = absl::Now();
  BuildCache::Acquired cancelled = cache.Acquire(Request(a_, command), &cancel, nullptr);
  canceller.join();
  EXPECT_EQ(cancelled.step.failure, v1::TASK_OUTCOME_CANCELLED);
  EXPECT_LT(absl::Now() - start, absl::Seconds(15));
  const pid_t child = std::stoi(ReadFile(pid_file));
  EXPECT_TRUE(WaitFor([&] { return !Alive(child); }, std::chrono::seconds(5)))
      << "the build's child " << child << " outlived the cancellation";

  BuildCache::Request fast = Request(a_, command);
  fast.build.env["FAST"] = "1";
  BuildCache::Acquired rebuilt = cache.Acquire(fast, nullptr, nullptr);
  ASSERT_TRUE(rebuilt.step.ok()) << rebuilt.step.message;
  EXPECT_FALSE(rebuilt.reused) << "the cancelled build was not recorded";
  EXPECT_EQ(Builds().size(), 2u);
}

TEST_F(BuildCacheTest, EvictionKeepsTheBoundAndNeverEvictsAnEntryInUse) {
  BuildCache cache(CacheDir(), 2, runner_.get());
  BuildCache::Acquired held = cache.Acquire(Request(a_, LoggingBuild()), nullptr, nullptr);
  ASSERT_TRUE(held.step.ok()) << held.step.message;
  for (const std::string& sha : {b_, c_, d_}) {
    BuildCache::Acquired other = cache.Acquire(Request(sha, LoggingBuild()), nullptr, nullptr);
    ASSERT_TRUE(other.step.ok()) << other.step.message;
    EXPECT_FALSE(other.reused);
    EXPECT_NE(other.dir, held.dir);
    EXPECT_LE(cache.EntryCount(), 2);
    // The entry in use still holds its commit, built.
    EXPECT_EQ(ReadFile(held.dir + "/file.txt"), "a\n");
    EXPECT_EQ(ReadFile(held.dir + "/out.txt"), "a\n");
  }
  held.in_use.reset();
  // Least recently used first: d, then a.
  EXPECT_TRUE(cache.Acquire(Request(d_, LoggingBuild()), nullptr, nullptr).reused);
  EXPECT_TRUE(cache.Acquire(Request(a_, LoggingBuild()), nullptr, nullptr).reused);
  EXPECT_FALSE(cache.Acquire(Request(b_, LoggingBuild()), nullptr, nullptr).reused);
  EXPECT_TRUE(cache.Acquire(Request(a_, LoggingBuild()), nullptr, nullptr).reused)
      << "the most recently used entry stayed";
  EXPECT_FALSE(cache.Acquire(Request(d_, LoggingBuild()), nullptr, nullptr).reused)
      << "the least recently used one went";
  EXPECT_EQ(Builds().size(), 6u);
  EXPECT_LE(cache.EntryCount(), 2);

  // In use, entries are kept beyond the bound; once idle, the next build trims them.
  BuildCache tiny(CacheDir(), 1, runner_.get());
  {
    BuildCache::Acquired a = tiny.Acquire(Request(a_, LoggingBuild()), nullptr, nullptr);
    BuildCache::Acquired c = tiny.Acquire(Request(c_, LoggingBuild()), nullptr, nullptr);
    ASSERT_TRUE(a.step.ok() && c.step.ok());
    EXPECT_EQ(ReadFile(a.dir + "/out.txt"), "a\n");
    EXPECT_EQ(ReadFile(c.dir + "/out.txt"), "c\n");
    EXPECT_EQ(tiny.EntryCount(), 2);
  }
  ASSERT_TRUE(tiny.Acquire(Request(d_, LoggingBuild()), nullptr, nullptr).step.ok());
  EXPECT_EQ(tiny.EntryCount(), 1);
}

TEST_F(BuildCacheTest, AnEntryMarkedUsedIsEvictedLast) {
  // A job's GOOD and the ends of its open interval are marked used at every task it hands out
  // (Task.keep_build_shas): the room a new build needs is taken from other entries.
  BuildCache cache(CacheDir(), 2, runner_.get());
  ASSERT_TRUE(cache.Acquire(Request(a_, LoggingBuild()), nullptr, nullptr).step.ok());
  ASSERT_TRUE(cache.Acquire(Request(b_, LoggingBuild()), nullptr, nullptr).step.ok());
  EXPECT_TRUE(cache.MarkUsed(Request(a_, LoggingBuild())));
  // Nothing to mark: a commit not built, a build of another command, another repository.
  EXPECT_FALSE(cache.MarkUsed(Request(c_, LoggingBuild())));
  EXPECT_FALSE(cache.MarkUsed(Request(a_, "true")));
  BuildCache::Request elsewhere = Request(a_, LoggingBuild());
  elsewhere.repository = tmp_.Join("no-such-repo");
  EXPECT_FALSE(cache.MarkUsed(elsewhere));
  EXPECT_EQ(cache.EntryCount(), 2) << "marking creates nothing";

  // c's build makes room: b goes, although a was built before it.
  ASSERT_TRUE(cache.Acquire(Request(c_, LoggingBuild()), nullptr, nullptr).step.ok());
  EXPECT_TRUE(cache.Acquire(Request(a_, LoggingBuild()), nullptr, nullptr).reused);
  EXPECT_FALSE(cache.Acquire(Request(b_, LoggingBuild()), nullptr, nullptr).reused);
  EXPECT_EQ(Builds(), (std::vector<std::string>{a_, b_, c_, b_}));
}

TEST_F(BuildCacheTest, AJobThatNamesItsBuildsTakesOverAnotherIdleEntryInACacheNotFull) {
  BuildCache cache(CacheDir(), 16, runner_.get());
  const std::string command = absl::StrCat(
      LoggingBuild(), " && mkdir -p build && echo \"$KBISECT_COMMIT\" >> build/history");
  ASSERT_TRUE(cache.Acquire(Request(a_, command), nullptr, nullptr).step.ok());
  ASSERT_TRUE(cache.Acquire(Request(b_, command), nullptr, nullptr).step.ok());
  EXPECT_EQ(cache.EntryCount(), 2);
  // c's task keeps a (its job's GOOD, say): b, which the job needs no more, moves to c.
  BuildCache::Request c = Request(c_, command);
  c.keep_shas = {a_};
  BuildCache::Acquired built = cache.Acquire(c, nullptr, nullptr);
  ASSERT_TRUE(built.step.ok()) << built.step.message;
  EXPECT_FALSE(built.reused);
  EXPECT_EQ(cache.EntryCount(), 2) << "no fresh checkout";
  EXPECT_EQ(ReadFile(built.dir + "/file.txt"), "c\n");
  EXPECT_EQ(ReadFile(built.dir + "/build/history"), absl::StrCat(a_, "\n", b_, "\n", c_, "\n"))
      << "an incremental build in b's checkout (itself a copy of a's)";
  EXPECT_EQ(built.started_from, b_) << "b is nearer to c than a is, and the job keeps a";
  built.in_use.reset();
  EXPECT_TRUE(cache.Acquire(Request(a_, command), nullptr, nullptr).reused) << "a was kept";
  EXPECT_FALSE(cache.Acquire(Request(b_, command), nullptr, nullptr).reused);
  // Without keep_shas, a cache that is not full grows.
  ASSERT_TRUE(cache.Acquire(Request(d_, command), nullptr, nullptr).step.ok());
  EXPECT_EQ(cache.EntryCount(), 4);
}

TEST_F(BuildCacheTest, AMissInAFullCacheTakesAnIdleEntryOverAndBuildsIncrementally) {
  BuildCache cache(CacheDir(), 1, runner_.get());
  const std::string command = absl::StrCat(
      LoggingBuild(), " && mkdir -p build && echo \"$KBISECT_COMMIT\" >> build/history");
  ASSERT_TRUE(cache.Acquire(Request(a_, command), nullptr, nullptr).step.ok());
  BuildCache::Acquired b = cache.Acquire(Request(b_, command), nullptr, nullptr);
  ASSERT_TRUE(b.step.ok()) << b.step.message;
  EXPECT_FALSE(b.reused);
  EXPECT_EQ(ReadFile(b.dir + "/file.txt"), "b\n");
  EXPECT_FALSE(fs::exists(b.dir + "/only-a.txt")) << "exactly b's files";
  EXPECT_EQ(ReadFile(b.dir + "/build/history"), absl::StrCat(a_, "\n", b_, "\n"))
      << "the ignored build outputs of a's build were there for b's";
  EXPECT_EQ(cache.EntryCount(), 1);
  EXPECT_FALSE(cache.Acquire(Request(a_, command), nullptr, nullptr).reused);
}

TEST_F(BuildCacheTest, AMissCopiesTheNearestBuildWithItsFileTimesAndRebuildsWhatChanged) {
  // A make-like build: out.txt is made again only when file.txt is newer (`test -nt`).
  BuildCache cache(CacheDir(), 16, runner_.get());
  const std::string command = absl::StrCat(
      "echo \"$KBISECT_COMMIT\" >> ", ShellQuote(log_),
      " && mkdir -p build && echo \"$KBISECT_COMMIT\" >> build/history"
      " && { test out.txt -nt file.txt || { cp file.txt out.txt && echo made >> build/made; }; }");
  BuildCache::Acquired a = cache.Acquire(Request(a_, command), nullptr, nullptr);
  ASSERT_TRUE(a.step.ok()) << a.step.message;
  EXPECT_EQ(a.started_from, "") << "nothing to start from: a fresh checkout";
  BuildCache::Acquired c = cache.Acquire(Request(c_, command), nullptr, nullptr);
  ASSERT_TRUE(c.step.ok()) << c.step.message;
  EXPECT_EQ(c.started_from, a_);
  EXPECT_NE(c.dir, a.dir) << "a is still held: copied, not taken";
  EXPECT_EQ(ReadFile(c.dir + "/build/history"), absl::StrCat(a_, "\n", c_, "\n"));
  EXPECT_EQ(ReadFile(c.dir + "/out.txt"), "c\n");
  EXPECT_FALSE(fs::exists(c.dir + "/only-a.txt"));
  EXPECT_EQ(fs::last_write_time(c.dir + "/.gitignore"), fs::last_write_time(a.dir + "/.gitignore"))
      << "an unchanged file keeps its time: make sees nothing to do for it";
  EXPECT_EQ(ReadFile(a.dir + "/out.txt"), "a\n") << "the copied entry is as it was";
  EXPECT_EQ(ReadFile(a.dir + "/build/history"), absl::StrCat(a_, "\n"));
  c.in_use.reset();

  // d is one path from c and two from a: it starts from c.
  BuildCache::Acquired d = cache.Acquire(Request(d_, command), nullptr, nullptr);
  ASSERT_TRUE(d.step.ok()) << d.step.message;
  EXPECT_EQ(d.started_from, c_);
  EXPECT_EQ(ReadFile(d.dir + "/build/history"), absl::StrCat(a_, "\n", c_, "\n", d_, "\n"));
  d.in_use.reset();
  a.in_use.reset();
  // b_again has b's tree; an entry of another command is no start for it.
  BuildCache::Acquired other = cache.Acquire(Request(b_, "true"), nullptr, nullptr);
  ASSERT_TRUE(other.step.ok()) << other.step.message;
  EXPECT_EQ(other.started_from, "");
}

TEST_F(BuildCacheTest, TheNearestBuildIsTheOneWhoseFilesTheBuildReadsDifferLeast) {
  if (!ReadWatch::Start(tmp_.path(), tmp_.Join("stamp")).on()) {
    GTEST_SKIP() << "this file system records no reads (noatime): every path counts";
  }
  // A build that reads lib/ only (lz4's `make -C lib`): a change of the documentation costs it
  // nothing, one of the library a compile.
  GitFixture repo(tmp_.Join("lib-repo"));
  repo.Init();
  const std::string v1 = repo.Commit(
      "v1", {{"lib/a.c", "1\n"}, {"doc/1.md", "1"}, {"doc/2.md", "1"}, {"doc/3.md", "1"}});
  const std::string docs =
      repo.Commit("docs", {{"doc/1.md", "2"}, {"doc/2.md", "2"}, {"doc/3.md", "2"}});
  const std::string lib = repo.Commit("lib", {{"lib/a.c", "2\n"}});
  // It also keeps a file of its own in the checkout, read by its later builds (as CMake reads
  // its build tree): not one of the commit's files, so not an input.
  const std::string command = absl::StrCat(
      "echo \"$KBISECT_COMMIT\" >> ", ShellQuote(log_),
      " && cat lib/a.c > built.txt && { test -e own.txt || echo x > own.txt; } && cat own.txt");
  auto request = [&](const std::string& sha) {
    BuildCache::Request r = Request(sha, command);
    r.repository = repo.path();
    return r;
  };
  BuildCache cache(CacheDir(), 16, runner_.get());
  BuildCache::Acquired first = cache.Acquire(request(v1), nullptr, nullptr);
  ASSERT_TRUE(first.step.ok()) << first.step.message;
  const std::string marker = ReadFile((fs::path(first.dir).parent_path() / "built").string());
  EXPECT_THAT(marker, HasSubstr("\"read\": [\n      \"lib/a.c\"\n    ]"))
      << "a fresh checkout's build read lib/a.c only (built.txt is its own output)";
  BuildCache::Acquired third = cache.Acquire(request(lib), nullptr, nullptr);
  ASSERT_TRUE(third.step.ok()) << third.step.message;
  EXPECT_EQ(third.started_from, v1);

  // `docs` is one path (lib/a.c) from `lib` and three (doc/) from v1: by paths `lib` is nearer,
  // by what the build reads v1 is (nothing to compile).
  BuildCache::Acquired second = cache.Acquire(request(docs), nullptr, nullptr);
  ASSERT_TRUE(second.step.ok()) << second.step.message;
  EXPECT_EQ(second.started_from, v1);
  EXPECT_EQ(ReadFile(second.dir + "/built.txt"), "1\n");
  const std::string second_marker =
      ReadFile((fs::path(second.dir).parent_path() / "built").string());
  EXPECT_THAT(second_marker, HasSubstr("\"lib/a.c\"")) << "what its start read is carried on";
  EXPECT_THAT(second_marker, HasSubstr("\"read\": [\n      \"lib/a.c\"\n    ]"))
      << "own.txt, read too, is not one of the commit's files";

  // A job that keeps v1 and `docs` (GOOD, the interval's end): `lib` is the only entry it lets
  // go, but a build from it compiles lib/a.c again; a copy of `docs` compiles nothing.
  first.in_use.reset();
  second.in_use.reset();
  third.in_use.reset();
  const std::string docs_again =
      repo.Commit("lib back, docs again", {{"lib/a.c", "1\n"}, {"doc/1.md", "3"}});
  BuildCache::Request keeping = request(docs_again);
  keeping.keep_shas = {v1, docs};
  BuildCache::Acquired fourth = cache.Acquire(keeping, nullptr, nullptr);
  ASSERT_TRUE(fourth.step.ok()) << fourth.step.message;
  EXPECT_EQ(fourth.started_from, docs) << "copied from the entry that differs in doc/1.md only";
  EXPECT_EQ(cache.EntryCount(), 4) << "nothing taken over";
  EXPECT_THAT(Builds(), ::testing::ElementsAre(v1, lib, docs, docs_again));
}

TEST_F(BuildCacheTest, ACopiedCMakeTreeMovesToItsOwnEntryAndRebuildsOnlyWhatChanged) {
  // A real CMake project with two sources: a copied build tree names the entry it came from
  // (built as it is, it would write there). Relocated, it rebuilds only the file the checkout
  // changed, as `git bisect` in one directory does. The compiler is wrapped by a launcher that
  // logs each compile.
  GitFixture project(tmp_.Join("cmake-project"));
  project.Init();
  const std::string log = tmp_.Join("compiles.log");
  const std::string launcher = tmp_.Join("log-compile.sh");
  testing::WriteFile(
      launcher, absl::StrCat("#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in *.c) echo \"$a\" >> ",
                             log, ";; esac; done\nexec \"$@\"\n"));
  fs::permissions(launcher, fs::perms::owner_all);
  const std::string one =
      project.Commit("one", {{".gitignore", "build/\n"},
                             {"CMakeLists.txt",
                              "cmake_minimum_required(VERSION 3.13)\nproject(p C)\n"
                              "add_executable(p main.c other.c)\n"},
                             {"main.c", "int other(void);\nint main(void) { return other(); }\n"},
                             {"other.c", "int other(void) { return 0; }\n"}});
  const std::string two = project.Commit(
      "two", {{"main.c", "int other(void);\nint main(void) { return other() + 2; }\n"}});
  BuildCache cache(CacheDir(), 16, runner_.get());
  auto request = [&](const std::string& sha) {
    BuildCache::Request r =
        Request(sha, absl::StrCat("cmake -S . -B build -DCMAKE_C_COMPILER_LAUNCHER=", launcher,
                                  " >/dev/null && cmake --build build"));
    r.repository = project.path();
    return r;
  };
  BuildCache::Acquired first = cache.Acquire(request(one), nullptr, nullptr);
  ASSERT_TRUE(first.step.ok()) << first.step.message << first.step.log_tail;
  EXPECT_EQ(ReadFile(log), absl::StrCat(first.dir, "/main.c\n", first.dir, "/other.c\n"))
      << "the first build compiles both";
  const auto first_binary_time = fs::last_write_time(first.dir + "/build/p");
  // Keep the first entry in use: the second is copied from it, not taken over.
  BuildCache::Acquired second = cache.Acquire(request(two), nullptr, nullptr);
  ASSERT_TRUE(second.step.ok()) << second.step.message << second.step.log_tail;
  EXPECT_EQ(second.started_from, one);
  ASSERT_NE(second.dir, first.dir);
  EXPECT_THAT(ReadFile(second.dir + "/build/CMakeCache.txt"),
              HasSubstr(absl::StrCat("CMAKE_CACHEFILE_DIR:INTERNAL=", second.dir, "/build\n")));
  EXPECT_THAT(ReadFile(second.dir + "/build/CMakeCache.txt"),
              ::testing::Not(HasSubstr(first.dir + "/")));
  EXPECT_EQ(ReadFile(log),
            absl::StrCat(first.dir, "/main.c\n", first.dir, "/other.c\n", second.dir, "/main.c\n"))
      << "only the changed file compiled again, in the second entry";
  EXPECT_TRUE(fs::exists(second.dir + "/build/p"));
  EXPECT_EQ(fs::last_write_time(first.dir + "/build/p"), first_binary_time)
      << "nothing was built into the first entry";
}

TEST_F(BuildCacheTest, BuildsWaitForTheHostsBuildSlots) {
  // One build slot: one build at a time, whatever the number of slots asking. (Sized, the
  // slots would let eight of these sleeping builds share a core: build_cost.h.)
  BuildCacheOptions options;
  options.fixed_build_slots = 1;
  BuildCache cache(CacheDir(), options, runner_.get());
  const std::string timeline = tmp_.Join("timeline");
  const std::string command = absl::StrCat("echo start >> ", ShellQuote(timeline),
                                           " && sleep 0.2 && echo end >> ", ShellQuote(timeline));
  std::vector<std::thread> slots;
  std::vector<BuildCache::Acquired> built(3);
  const std::vector<std::string> shas = {b_, c_, d_};
  for (int i = 0; i < 3; ++i) {
    slots.emplace_back(
        [&, i] { built[i] = cache.Acquire(Request(shas[i], command), nullptr, nullptr); });
  }
  for (std::thread& slot : slots) slot.join();
  for (const BuildCache::Acquired& b : built) ASSERT_TRUE(b.step.ok()) << b.step.message;
  EXPECT_EQ(ReadFile(timeline), "start\nend\nstart\nend\nstart\nend\n");
}

TEST_F(BuildCacheTest, BuildsThatLoadNoCoreDoNotWaitForTheFirstToEnd) {
  // Nothing measured yet. A build that sleeps (a download, a remote compile) is measured while it
  // runs: the builds behind it start before it ends (decision 220).
  const std::string timeline = tmp_.Join("timeline");
  const std::string sleeps = absl::StrCat("echo start >> ", ShellQuote(timeline),
                                          " && sleep 4 && echo end >> ", ShellQuote(timeline));
  ThreeBuildsAtOnce(sleeps);
  EXPECT_EQ(ReadFile(timeline), "start\nstart\nstart\nend\nend\nend\n");
}

TEST_F(BuildCacheTest, TheFirstBuildThatLoadsSeveralCoresRunsAlone) {
  // The same with a build that computes in two processes: the first is measured without sharing
  // the cores, and the two behind it see its cost.
  const std::string timeline = tmp_.Join("timeline");
  const std::string loop = "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done";
  const std::string computes =
      absl::StrCat("echo start >> ", ShellQuote(timeline), " && (", loop, ") & (", loop,
                   ") & wait; echo end >> ", ShellQuote(timeline));
  ThreeBuildsAtOnce(computes);
  EXPECT_THAT(ReadFile(timeline), ::testing::StartsWith("start\nend\n"));
}

TEST_F(BuildCacheTest, AOneProcessBuildRunsBesideTheFirstOnTwoCores) {
  // A compiler called once keeps one core busy, seen while it runs (one process asking for a
  // core, decision 226): on two cores a second build starts beside the first, before anything
  // was measured. Each build computes until the test has seen both start.
  const std::string timeline = tmp_.Join("timeline");
  const std::string stop = tmp_.Join("stop");
  const std::string computes =
      absl::StrCat("echo start >> ", ShellQuote(timeline), " && while [ ! -e ", ShellQuote(stop),
                   " ]; do :; done; echo end >> ", ShellQuote(timeline));
  BuildCacheOptions two_cores;
  two_cores.build_cores = 2;
  BuildCache cache(CacheDir(), two_cores, runner_.get());
  std::vector<BuildCache::Acquired> built(2);
  std::vector<std::thread> slots;
  for (size_t i = 0; i < built.size(); ++i) {
    slots.emplace_back([&, i] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50 * i));
      built[i] = cache.Acquire(Request(i == 0 ? b_ : c_, computes), nullptr, nullptr);
    });
  }
  const bool both_started = testing::WaitFor(
      [&] {
        std::ifstream in(timeline);  // Not there before the first build starts.
        const std::string lines((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
        return lines == "start\nstart\n";
      },
      std::chrono::seconds(60));
  std::ofstream(stop).close();
  for (std::thread& slot : slots) slot.join();
  EXPECT_TRUE(both_started) << "the second build waited for the first: " << ReadFile(timeline);
  for (const BuildCache::Acquired& b : built) EXPECT_TRUE(b.step.ok()) << b.step.message;
}

TEST_F(BuildCacheTest, BuildsCompileThroughTheHostsCompilerCache) {
  if (!CompilerCache::Find(tmp_.Join("probe"), {}).has_value()) {
    GTEST_SKIP() << "ccache is not installed";
  }
  // Each build compiles the same source in another entry: the second is served by ccache. The
  // compile writes its dependency file (-MD, as CMake's do), so it runs in depend mode: the third
  // commit changes only the header, which must be a miss, with a dependency file naming it.
  GitFixture project(tmp_.Join("c-project"));
  project.Init();
  const std::string one =
      project.Commit("one", {{"lib.c", "#include \"lib.h\"\nint scaled(int x) { return K * x; }\n"},
                             {"lib.h", "#define K 2\n"},
                             {"notes.txt", "1\n"}});
  const std::string two = project.Commit("two", {{"notes.txt", "2\n"}});
  const std::string three = project.Commit("three", {{"lib.h", "#define K 3\n"}});
  BuildCache cache(CacheDir(), 16, runner_.get());
  const std::string compile = "cc -MD -c lib.c -o lib.o";
  for (const std::string& sha : {one, two, three}) {
    BuildCache::Request r = Request(sha, compile);
    r.repository = project.path();
    BuildCache::Acquired built = cache.Acquire(r, nullptr, nullptr);
    ASSERT_TRUE(built.step.ok()) << built.step.message << built.step.log_tail;
    EXPECT_THAT(ReadFile(built.dir + "/lib.d"), ::testing::HasSubstr("lib.h")) << sha;
  }
  absl::StatusOr<CompilerCacheStats> stats = CompilerCache::Stats(CacheDir(), runner_.get());
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->misses, 2) << "one, and three's changed header";
  EXPECT_EQ(stats->hits, 1) << "two";
  EXPECT_GT(stats->size_bytes, 0);

  // Turned off: no compile goes through it.
  BuildCacheOptions off;
  off.compiler_cache = false;
  BuildCache uncached(tmp_.Join("cache-off"), off, runner_.get());
  BuildCache::Request r = Request(one, "cc -c lib.c -o lib.o");
  r.repository = project.path();
  ASSERT_TRUE(uncached.Acquire(r, nullptr, nullptr).step.ok());
  EXPECT_FALSE(CompilerCache::Stats(tmp_.Join("cache-off"), runner_.get()).ok());
}

TEST_F(BuildCacheTest, TwoHostsShareCompilesThroughARemoteRedisAndAnUnreachableOneCostsNoBuild) {
  if (!CompilerCache::Find(tmp_.Join("probe"), {}).has_value() ||
      RunShell("command -v redis-server").exit_code != 0) {
    GTEST_SKIP() << "ccache or redis-server is not installed (scripts/install-deps.sh)";
  }
  // A real redis, as deploy/ starts next to the coordinator.
  const int port = testing::FreeLoopbackPort();
  testing::Process redis(
      absl::StrCat("redis-server --port ", port, " --bind 127.0.0.1 --save '' --appendonly no"),
      tmp_.Join("redis.log"));
  CompilerCacheRemote remote{absl::StrCat("redis://127.0.0.1:", port), false};
  ASSERT_TRUE(testing::WaitFor(
      [&] { return ReachCompilerCacheRemote(remote, absl::Milliseconds(200)).ok(); },
      std::chrono::seconds(10)))
      << redis.log();
  GitFixture project(tmp_.Join("c-project"));
  project.Init();
  const std::string one =
      project.Commit("one", {{"lib.c", "int scaled(int x) { return 2 * x; }\n"}});
  const std::string compile = "cc -MD -c lib.c -o lib.o";
  // Two hosts: two cache directories, each with its own local store, one remote.
  auto build_on = [&](const std::string& host, const CompilerCacheRemote& shared) {
    BuildCacheOptions options;
    options.compiler_cache_remote = shared;
    BuildCache cache(tmp_.Join(host), options, runner_.get());
    BuildCache::Request r = Request(one, compile);
    r.repository = project.path();
    const BuildCache::Acquired built = cache.Acquire(r, nullptr, nullptr);
    EXPECT_TRUE(built.step.ok()) << built.step.message << built.step.log_tail;
    absl::StatusOr<CompilerCacheStats> stats = CompilerCache::Stats(tmp_.Join(host), runner_.get());
    EXPECT_TRUE(stats.ok()) << stats.status();
    return stats.ok() ? *stats : CompilerCacheStats{};
  };
  const CompilerCacheStats first = build_on("host-a", remote);
  EXPECT_EQ(first.misses, 1);
  const CompilerCacheStats second = build_on("host-b", remote);
  EXPECT_EQ(second.hits, 1) << "compiled on host-a, served to host-b";
  EXPECT_EQ(second.remote_hits, 1);
  EXPECT_EQ(second.misses, 0);

  // A read-only host reads, never writes: a compile it makes is not there for the next.
  GitFixture other(tmp_.Join("other-project"));
  other.Init();
  const std::string two =
      other.Commit("two", {{"lib.c", "int tripled(int x) { return 3 * x; }\n"}});
  auto build_other = [&](const std::string& host, const CompilerCacheRemote& shared) {
    BuildCacheOptions options;
    options.compiler_cache_remote = shared;
    BuildCache cache(tmp_.Join(host), options, runner_.get());
    BuildCache::Request r = Request(two, compile);
    r.repository = other.path();
    EXPECT_TRUE(cache.Acquire(r, nullptr, nullptr).step.ok());
    return *CompilerCache::Stats(tmp_.Join(host), runner_.get());
  };
  CompilerCacheRemote read_only = remote;
  read_only.read_only = true;
  EXPECT_EQ(build_other("host-c", read_only).misses, 1);
  EXPECT_EQ(build_other("host-d", remote).remote_hits, 0) << "host-c wrote nothing";

  // The remote gone: builds still succeed, and the failed reads are counted.
  redis.Signal(SIGKILL);
  redis.Wait(std::chrono::seconds(5));
  const CompilerCacheStats unreachable = build_other("host-e", remote);
  EXPECT_EQ(unreachable.misses, 1);
  EXPECT_GE(unreachable.remote_errors, 1);
}

TEST_F(BuildCacheTest, TwoSlotsAskingForTheSameBuildAtOnceBuildItOnce) {
  // Two cache objects on one directory, as two slots or two worker processes of a host.
  BuildCache first(CacheDir(), 16, runner_.get());
  BuildCache second(CacheDir(), 16, runner_.get());
  const std::string command = LoggingBuild() + " && sleep 0.5";
  BuildCache::Acquired results[2];
  std::thread slots[2];
  BuildCache* caches[2] = {&first, &second};
  for (int i = 0; i < 2; ++i) {
    slots[i] = std::thread(
        [&, i] { results[i] = caches[i]->Acquire(Request(a_, command), nullptr, nullptr); });
  }
  for (std::thread& slot : slots) slot.join();
  ASSERT_TRUE(results[0].step.ok()) << results[0].step.message;
  ASSERT_TRUE(results[1].step.ok()) << results[1].step.message;
  EXPECT_EQ(results[0].dir, results[1].dir);
  EXPECT_NE(results[0].reused, results[1].reused) << "one built, the other reused its build";
  EXPECT_THAT(Builds(), ::testing::ElementsAre(a_));
  EXPECT_EQ(ReadFile(results[0].dir + "/out.txt"), "a\n");
}

TEST_F(BuildCacheTest, AHostFetchesABuildAnotherPublishedAndBuildsOnItIncrementally) {
  // A make project whose every output takes 0.6 s: a fresh build of both (1.2 s) is worth
  // publishing, and make records which sources it compiled.
  GitFixture project(tmp_.Join("make-project"));
  project.Init();
  const std::string one =
      project.Commit("one", {{".gitignore", "build/\n"},
                             {"Makefile",
                              "all: build/one.out build/two.out\n"
                              "build/%.out: %.txt\n\t@mkdir -p build\n\t@sleep 0.6\n\t@cp $< $@\n"
                              "\t@echo $< >> build/compiled\n"},
                             {"one.txt", "1\n"},
                             {"two.txt", "2\n"}});
  const std::string two = project.Commit("two", {{"two.txt", "2 changed\n"}});
  auto request = [&](const std::string& sha) {
    BuildCache::Request r =
        Request(sha, absl::StrCat("echo \"$KBISECT_COMMIT\" >> ", ShellQuote(log_), " && make"));
    r.repository = project.path();
    return r;
  };
  const std::string store = tmp_.Join("store");
  fs::create_directories(store);
  auto with_store = [&](const std::string& hardware_class) {
    BuildCacheOptions options;
    options.build_store = store;
    options.hardware_class = hardware_class;
    return options;
  };
  BuildCache host_a(tmp_.Join("host-a"), with_store("class-1"), runner_.get());
  BuildCache::Acquired built = host_a.Acquire(request(one), nullptr, nullptr);
  ASSERT_TRUE(built.step.ok()) << built.step.message << built.step.log_tail;
  EXPECT_FALSE(built.fetched);
  EXPECT_EQ(built.build_store, store) << "published";
  EXPECT_EQ(BuildStoreCounters::Read(tmp_.Join("host-a")).publishes, 1);
  EXPECT_EQ(host_a.StoreName(), store);

  BuildCache host_b(tmp_.Join("host-b"), with_store("class-1"), runner_.get());
  BuildCache::Acquired fetched = host_b.Acquire(request(one), nullptr, nullptr);
  ASSERT_TRUE(fetched.step.ok()) << fetched.step.message;
  EXPECT_TRUE(fetched.fetched);
  EXPECT_FALSE(fetched.reused);
  EXPECT_EQ(fetched.build_store, store);
  EXPECT_EQ(fetched.step.wall_time, absl::ZeroDuration()) << "no build ran on host b";
  EXPECT_THAT(fetched.dir, ::testing::StartsWith(tmp_.Join("host-b") + "/builds/"));
  EXPECT_EQ(ReadFile(fetched.dir + "/build/compiled"), "one.txt\ntwo.txt\n");
  EXPECT_EQ(fs::last_write_time(fetched.dir + "/build/one.out"),
            fs::last_write_time(built.dir + "/build/one.out"));
  const std::string marker = ReadFile((fs::path(fetched.dir).parent_path() / "built").string());
  EXPECT_THAT(marker, HasSubstr(absl::StrCat("\"fetched_from\": \"", store, "\"")));
  EXPECT_THAT(Builds(), ::testing::ElementsAre(one));
  EXPECT_EQ(BuildStoreCounters::Read(tmp_.Join("host-b")).fetches, 1);
  EXPECT_THAT(ReadFile(fetched.dir + "/.git/objects/info/alternates"),
              HasSubstr(tmp_.Join("host-b") + "/mirrors/"))
      << "its .git borrows this host's mirror";
  // Now the fetched build is host b's own: served from its cache, and the start of the next.
  EXPECT_TRUE(host_b.Acquire(request(one), nullptr, nullptr).reused);
  BuildCache::Acquired next = host_b.Acquire(request(two), nullptr, nullptr);
  ASSERT_TRUE(next.step.ok()) << next.step.message << next.step.log_tail;
  EXPECT_FALSE(next.fetched);
  EXPECT_EQ(next.started_from, one);
  EXPECT_EQ(ReadFile(next.dir + "/build/compiled"), "one.txt\ntwo.txt\ntwo.txt\n")
      << "only the changed source was made again";
  EXPECT_EQ(ReadFile(next.dir + "/build/two.out"), "2 changed\n");
  EXPECT_THAT(Builds(), ::testing::ElementsAre(one, two));

  // A host of another hardware class builds its own.
  BuildCache host_c(tmp_.Join("host-c"), with_store("class-2"), runner_.get());
  BuildCache::Acquired other_class = host_c.Acquire(request(one), nullptr, nullptr);
  ASSERT_TRUE(other_class.step.ok()) << other_class.step.message;
  EXPECT_FALSE(other_class.fetched);
  EXPECT_THAT(Builds(), ::testing::ElementsAre(one, two, one));
}

TEST_F(BuildCacheTest, ACorruptStoredBuildIsBuiltHereAndAMissingStoreCostsNoBuild) {
  const std::string store = PublishFromHostA();
  BuildCacheOptions options;
  options.build_store = store;
  const std::string command = StoredBuild();
  // Every archive in the store cut short.
  ASSERT_EQ(RunShell(absl::StrCat("find ", ShellQuote(store),
                                  " -name build.tar -exec truncate -s 100 {} +"))
                .exit_code,
            0);
  BuildCache host_b(tmp_.Join("host-b"), options, runner_.get());
  BuildCache::Acquired built = host_b.Acquire(Request(a_, command), nullptr, nullptr);
  ASSERT_TRUE(built.step.ok()) << built.step.message;
  EXPECT_FALSE(built.fetched);
  EXPECT_EQ(ReadFile(built.dir + "/out.txt"), "a\n");
  EXPECT_THAT(Builds(), ::testing::ElementsAre(a_, a_));

  options.build_store = tmp_.Join("not-mounted");
  BuildCache host_c(tmp_.Join("host-c"), options, runner_.get());
  BuildCache::Acquired without = host_c.Acquire(Request(a_, command), nullptr, nullptr);
  ASSERT_TRUE(without.step.ok()) << without.step.message;
  EXPECT_EQ(without.build_store, "");
  EXPECT_THAT(Builds(), ::testing::ElementsAre(a_, a_, a_));
}

TEST_F(BuildCacheTest, AFetchedBuildKeepsOutputsTheCommitsGitignoreDoesNotCover) {
  // out.txt, the build's output, is untracked and not ignored (lz4's old commits leave their
  // liblz4.a so): the fetched checkout keeps it, as the publisher's build left it.
  const std::string store = PublishFromHostA();
  BuildCacheOptions options;
  options.build_store = store;
  const std::string command = StoredBuild();
  BuildCache host_b(tmp_.Join("host-b"), options, runner_.get());
  BuildCache::Acquired fetched = host_b.Acquire(Request(a_, command), nullptr, nullptr);
  ASSERT_TRUE(fetched.step.ok()) << fetched.step.message;
  EXPECT_TRUE(fetched.fetched);
  EXPECT_EQ(ReadFile(fetched.dir + "/out.txt"), "a\n");
  EXPECT_THAT(Builds(), ::testing::ElementsAre(a_)) << "host b built nothing";
}

TEST_F(BuildCacheTest, ACommitMissingFromTheRepositoryIsAnInfrastructureError) {
  BuildCache cache(CacheDir(), 16, runner_.get());
  BuildCache::Acquired missing = cache.Acquire(
      Request("0123456789abcdef0123456789abcdef01234567", LoggingBuild()), nullptr, nullptr);
  EXPECT_EQ(missing.step.failure, v1::TASK_OUTCOME_INFRA_ERROR);
  EXPECT_THAT(missing.step.message, HasSubstr("checkout of 0123456 failed"));
  EXPECT_FALSE(fs::exists(log_)) << "nothing was built";
}

}  // namespace
}  // namespace kbisect
