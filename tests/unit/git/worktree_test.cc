// Copyright 2026 The kbisect Authors.
//
// Worktrees backed by a mirror: exact checkouts, ignored files kept, the user's repo untouched.

#include "common/git/worktree.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/git/mirror.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace {

namespace fs = std::filesystem;

using ::kbisect::testing::GitFixture;
using ::kbisect::testing::ReadFile;
using ::kbisect::testing::TempDir;
using ::kbisect::testing::WriteFile;
using ::testing::HasSubstr;

// Returns every file under `root` (relative paths), skipping the top-level ".git".
std::set<std::string> FilesUnder(const std::string& root) {
  std::set<std::string> files;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator();
       ++it) {
    const std::string rel = it->path().lexically_relative(root).string();
    if (rel == ".git") {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file()) files.insert(rel);
  }
  return files;
}

// Returns "path -> mtime size" for everything under `dir` (a .git directory).
std::map<std::string, std::string> Snapshot(const std::string& dir) {
  std::map<std::string, std::string> snapshot;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    struct stat st;
    if (lstat(entry.path().c_str(), &st) != 0) {
      ADD_FAILURE() << "cannot stat " << entry.path();
      continue;
    }
    snapshot[entry.path().string()] =
        absl::StrCat(st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec, " ", st.st_size);
  }
  return snapshot;
}

class WorktreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    source_.Init();
    a_ = source_.Commit("A", {{".gitignore", "build/\n*.log\n"},
                              {"a.txt", "a from A\n"},
                              {"b.txt", "b\n"},
                              {"dir/c.txt", "c\n"},
                              {"same.txt", "unchanged\n"}});
    b_ = source_.Commit("B", {{"a.txt", "a from B\n"}, {"d.txt", "d\n"}, {"dir2/e.txt", "e\n"}},
                        {"b.txt", "dir/c.txt"});
    // Leave the user's checkout with uncommitted work, which must survive untouched.
    source_.Write("a.txt", "user's uncommitted edit\n");
    source_.Write("scratch.txt", "user's untracked file\n");
    auto mirror = EnsureMirror(source_.path(), tmp_.Join("cache/mirror.git"));
    ASSERT_TRUE(mirror.ok()) << mirror.status();
    mirror_ = *mirror;
  }

  std::unique_ptr<Worktree> Open(const std::string& dir) {
    auto tree = Worktree::OpenOrCreate(mirror_, dir);
    EXPECT_TRUE(tree.ok()) << tree.status();
    return tree.ok() ? std::move(tree).value() : nullptr;
  }

  // Expects the worktree's tracked files to be exactly those of `sha`, with the same contents.
  void ExpectMatchesCommit(const Worktree& tree, const std::string& sha) {
    std::vector<std::string> tracked =
        absl::StrSplit(source_.Git({"ls-tree", "-r", "--name-only", sha}), '\n');
    for (const std::string& path : tracked) {
      EXPECT_EQ(ReadFile(tree.path() + "/" + path), source_.TryGit({"show", sha + ":" + path}).out)
          << path;
    }
    EXPECT_EQ(tree.head(), sha);
    GitFixture cli(tree.path());
    EXPECT_EQ(cli.Git({"status", "--porcelain"}), "");
    EXPECT_EQ(cli.Git({"rev-parse", "HEAD"}), sha);
  }

  TempDir tmp_;
  GitFixture source_{tmp_.Join("user-repo")};
  std::string a_;
  std::string b_;
  std::string mirror_;
};

TEST_F(WorktreeTest, CheckoutBackAndForth) {
  std::unique_ptr<Worktree> tree = Open(tmp_.Join("cache/slots/0"));
  ASSERT_NE(tree, nullptr);
  EXPECT_EQ(tree->path(), tmp_.Join("cache/slots/0"));
  EXPECT_EQ(tree->head(), "");

  ASSERT_TRUE(tree->Checkout(a_).ok());
  ExpectMatchesCommit(*tree, a_);
  EXPECT_EQ(FilesUnder(tree->path()),
            (std::set<std::string>{".gitignore", "a.txt", "b.txt", "dir/c.txt", "same.txt"}));

  // A build leaves ignored outputs; someone edits tracked files and drops untracked ones.
  WriteFile(tree->path() + "/build/obj/main.o", "object code");
  WriteFile(tree->path() + "/run.log", "log");
  WriteFile(tree->path() + "/untracked.txt", "stray");
  WriteFile(tree->path() + "/newdir/stray.txt", "stray");
  WriteFile(tree->path() + "/mixed/stray.txt", "stray");
  WriteFile(tree->path() + "/mixed/keep.log", "ignored, inside an untracked directory");
  WriteFile(tree->path() + "/a.txt", "local edit");
  WriteFile(tree->path() + "/same.txt", "local edit of a file A and B share");

  absl::Status status = tree->Checkout(b_);
  ASSERT_TRUE(status.ok()) << status;
  ExpectMatchesCommit(*tree, b_);
  EXPECT_EQ(FilesUnder(tree->path()),
            (std::set<std::string>{".gitignore", "a.txt", "d.txt", "dir2/e.txt", "same.txt",
                                   "build/obj/main.o", "run.log", "mixed/keep.log"}));
  EXPECT_FALSE(fs::exists(tree->path() + "/dir"));
  EXPECT_FALSE(fs::exists(tree->path() + "/newdir"));
  EXPECT_EQ(ReadFile(tree->path() + "/build/obj/main.o"), "object code");

  ASSERT_TRUE(tree->Checkout(a_.substr(0, 10)).ok());
  ExpectMatchesCommit(*tree, a_);
  EXPECT_EQ(FilesUnder(tree->path()),
            (std::set<std::string>{".gitignore", "a.txt", "b.txt", "dir/c.txt", "same.txt",
                                   "build/obj/main.o", "run.log", "mixed/keep.log"}));
  EXPECT_FALSE(fs::exists(tree->path() + "/dir2"));

  // Reopening finds the same checkout.
  tree.reset();
  std::unique_ptr<Worktree> reopened = Open(tmp_.Join("cache/slots/0"));
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(reopened->head(), a_);
  ASSERT_TRUE(reopened->Checkout(b_).ok());
  ExpectMatchesCommit(*reopened, b_);
}

TEST_F(WorktreeTest, SlotsAreIndependent) {
  std::unique_ptr<Worktree> zero = Open(tmp_.Join("slots/0"));
  std::unique_ptr<Worktree> one = Open(tmp_.Join("slots/1"));
  ASSERT_TRUE(zero->Checkout(a_).ok());
  ASSERT_TRUE(one->Checkout(b_).ok());
  ExpectMatchesCommit(*zero, a_);
  ExpectMatchesCommit(*one, b_);
  // Nothing was written into the mirror: no worktree admin dirs, no new refs.
  EXPECT_FALSE(fs::exists(mirror_ + "/worktrees"));
  EXPECT_EQ(GitFixture(mirror_).Git({"for-each-ref", "--format=%(refname)"}), "refs/heads/main");
}

TEST_F(WorktreeTest, UserRepositoryIsNeverModified) {
  // A commit on another branch, made with plumbing so the user's index and files stay as they are.
  const std::string c = source_.Git({"commit-tree", b_ + "^{tree}", "-p", b_, "-m", "C"});
  source_.Git({"update-ref", "refs/heads/other", c});
  // Settle the index first: the git CLI itself may rewrite it to refresh stat data.
  source_.Git({"update-index", "-q", "--refresh"});
  const std::string status_before = source_.Git({"status", "--porcelain"});
  const std::string head_before = source_.Head();
  const std::map<std::string, std::string> before = Snapshot(source_.path() + "/.git");
  ASSERT_FALSE(before.empty());

  ASSERT_TRUE(EnsureCommitInMirror(source_.path(), mirror_, c).ok());
  ASSERT_TRUE(FetchIntoMirror(source_.path(), mirror_).ok());
  auto fresh = EnsureMirror(source_.path(), tmp_.Join("cache2/mirror.git"));
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  std::unique_ptr<Worktree> tree = Open(tmp_.Join("slot"));
  ASSERT_TRUE(tree->Checkout(a_).ok());
  ASSERT_TRUE(tree->Checkout(c).ok());
  ASSERT_TRUE(tree->Checkout(b_).ok());
  auto fresh_tree = Worktree::OpenOrCreate(*fresh, tmp_.Join("slot-fresh"));
  ASSERT_TRUE(fresh_tree.ok()) << fresh_tree.status();
  ASSERT_TRUE((*fresh_tree)->Checkout(c).ok());

  EXPECT_EQ(Snapshot(source_.path() + "/.git"), before);
  EXPECT_EQ(source_.Head(), head_before);
  EXPECT_EQ(source_.Git({"status", "--porcelain"}), status_before);
  EXPECT_EQ(status_before, " M a.txt\n?? scratch.txt");
  EXPECT_EQ(ReadFile(source_.path() + "/a.txt"), "user's uncommitted edit\n");
  EXPECT_EQ(ReadFile(source_.path() + "/scratch.txt"), "user's untracked file\n");
}

TEST_F(WorktreeTest, SetExcludesKeepsUntrackedPaths) {
  std::unique_ptr<Worktree> tree = Open(tmp_.Join("slot"));
  ASSERT_TRUE(tree->SetExcludes({"/out/", "*.cache"}).ok());
  ASSERT_TRUE(tree->Checkout(a_).ok());
  WriteFile(tree->path() + "/out/bin", "binary");
  WriteFile(tree->path() + "/x.cache", "cache");
  WriteFile(tree->path() + "/gone.txt", "gone");
  ASSERT_TRUE(tree->Checkout(b_).ok());
  EXPECT_TRUE(fs::exists(tree->path() + "/out/bin"));
  EXPECT_TRUE(fs::exists(tree->path() + "/x.cache"));
  EXPECT_FALSE(fs::exists(tree->path() + "/gone.txt"));
}

TEST_F(WorktreeTest, AnIndexLockLeftByAKilledWorkerIsRemoved) {
  const std::string dir = tmp_.Join("slot-killed");
  {
    std::unique_ptr<Worktree> tree = Open(dir);
    ASSERT_NE(tree, nullptr);
    ASSERT_TRUE(tree->Checkout(a_).ok());
  }
  // What a worker killed in the middle of a checkout leaves behind.
  WriteFile(dir + "/.git/index.lock", "");
  WriteFile(dir + "/.git/HEAD.lock", "");
  std::unique_ptr<Worktree> tree = Open(dir);
  ASSERT_NE(tree, nullptr);
  EXPECT_FALSE(fs::exists(dir + "/.git/index.lock"));
  EXPECT_FALSE(fs::exists(dir + "/.git/HEAD.lock"));
  absl::Status checkout = tree->Checkout(b_);
  ASSERT_TRUE(checkout.ok()) << checkout;
  ExpectMatchesCommit(*tree, b_);
}

TEST_F(WorktreeTest, ASlotIsUsedByOneWorktreeAtATime) {
  const std::string dir = tmp_.Join("slot-shared");
  std::unique_ptr<Worktree> first = Open(dir);
  ASSERT_NE(first, nullptr);
  auto second = Worktree::OpenOrCreate(mirror_, dir);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.status().message(), HasSubstr("another kbisect worker"));
  first.reset();
  EXPECT_TRUE(Worktree::OpenOrCreate(mirror_, dir).ok()) << "the lock goes with its holder";
}

TEST_F(WorktreeTest, Errors) {
  std::unique_ptr<Worktree> tree = Open(tmp_.Join("slot"));
  absl::Status missing = tree->Checkout(std::string(40, 'b'));
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.message(), HasSubstr("not in the mirror"));
  EXPECT_EQ(tree->Checkout("main").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tree->Checkout("").code(), absl::StatusCode::kInvalidArgument);

  auto bad_mirror = Worktree::OpenOrCreate(source_.path(), tmp_.Join("slot2"));
  EXPECT_EQ(bad_mirror.status().code(), absl::StatusCode::kFailedPrecondition);
  auto bare_dir = Worktree::OpenOrCreate(mirror_, mirror_);
  EXPECT_EQ(bare_dir.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(WorktreeTest, ARewrittenFileIsANewInodeSoOtherHardLinksKeepTheirContents) {
  std::unique_ptr<Worktree> tree = Open(tmp_.Join("slot"));
  ASSERT_TRUE(tree->Checkout(a_).ok());
  // A build cache (ccache, cp -al) may hard-link a checked-out file elsewhere.
  const std::string link = tmp_.Join("hardlink-to-a.txt");
  ASSERT_EQ(::link((tree->path() + "/a.txt").c_str(), link.c_str()), 0) << strerror(errno);
  ASSERT_TRUE(tree->Checkout(b_).ok());
  EXPECT_EQ(ReadFile(tree->path() + "/a.txt"), "a from B\n");
  EXPECT_EQ(ReadFile(link), "a from A\n") << "the checkout wrote through the old inode";
  ExpectMatchesCommit(*tree, b_);
  ASSERT_TRUE(tree->Checkout(a_).ok());
  ExpectMatchesCommit(*tree, a_);
}

TEST_F(WorktreeTest, CommitFetchedLaterBecomesVisible) {
  std::unique_ptr<Worktree> tree = Open(tmp_.Join("slot"));
  ASSERT_TRUE(tree->Checkout(a_).ok());
  std::string c = source_.Commit("C", {{"c.txt", "c\n"}});
  EXPECT_EQ(tree->Checkout(c).code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(EnsureCommitInMirror(source_.path(), mirror_, c).ok());
  absl::Status status = tree->Checkout(c);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(ReadFile(tree->path() + "/c.txt"), "c\n");
}

// Prints (does not assert) the cost of moving a worktree between nearby commits of a 2,000-file
// tree, next to `git checkout -f` on the same trees.
TEST(WorktreeTimingTest, NearbyCheckoutOf2000FileTree) {
  TempDir tmp;
  GitFixture source(tmp.Join("big"));
  source.Init();
  std::map<std::string, std::string> files;
  for (int i = 0; i < 2000; ++i) {
    files[absl::StrCat("src/dir", i % 40, "/file", i, ".cc")] =
        absl::StrCat("// file ", i, "\nint f", i, "() { return ", i, "; }\n");
  }
  files[".gitignore"] = "build/\n";
  const std::string base = source.Commit("base", files);
  std::map<std::string, std::string> changes;
  for (int i = 0; i < 10; ++i) {
    changes[absl::StrCat("src/dir", i % 40, "/file", i, ".cc")] = absl::StrCat("// changed ", i);
  }
  changes["src/new/added.cc"] = "// added\n";
  const std::string next = source.Commit("nearby", changes, {"src/dir20/file20.cc"});

  auto mirror = EnsureMirror(source.path(), tmp.Join("mirror.git"));
  ASSERT_TRUE(mirror.ok()) << mirror.status();
  auto tree = Worktree::OpenOrCreate(*mirror, tmp.Join("slot"));
  ASSERT_TRUE(tree.ok()) << tree.status();
  for (int i = 0; i < 200; ++i) WriteFile(tmp.Join(absl::StrCat("slot/build/o", i, ".o")), "o");

  auto time_ms = [](auto&& fn) {
    auto start = std::chrono::steady_clock::now();
    fn();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
  };
  const double initial = time_ms([&] { ASSERT_TRUE((*tree)->Checkout(base).ok()); });
  constexpr int kRounds = 10;
  double total = 0;
  for (int i = 0; i < kRounds; ++i) {
    total += time_ms([&] { ASSERT_TRUE((*tree)->Checkout(i % 2 == 0 ? next : base).ok()); });
  }
  EXPECT_EQ(FilesUnder((*tree)->path()).size(), 2001u + 200u);

  double cli_total = 0;
  for (int i = 0; i < kRounds; ++i) {
    cli_total += time_ms([&] { source.Git({"checkout", "-q", "-f", i % 2 == 0 ? base : next}); });
  }
  std::printf(
      "[timing] 2,000-file tree: initial checkout %.1f ms; nearby checkout (12 files changed) "
      "%.2f ms avg over %d; `git checkout -f` CLI %.2f ms avg\n",
      initial, total / kRounds, kRounds, cli_total / kRounds);
}

}  // namespace
}  // namespace kbisect
