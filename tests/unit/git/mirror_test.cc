// Copyright 2026 The kbisect Authors.
//
// Bare mirrors of local repositories: creation, refresh, pruning, concurrency, errors.

#include "common/git/mirror.h"

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace {

using ::kbisect::testing::GitFixture;
using ::kbisect::testing::TempDir;
using ::kbisect::testing::WriteFile;
using ::testing::HasSubstr;

class MirrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    source_.Init();
    first_ = source_.Commit("first", {{"a.txt", "a\n"}});
    source_.AnnotatedTag("v1", "one");
    source_.Branch("feature");
    // Like a user's clone: a symbolic remote-tracking HEAD (mirrored as a plain ref).
    source_.Git({"update-ref", "refs/remotes/origin/main", first_});
    source_.Git({"symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main"});
  }

  // Returns the refs of the repository at `dir` as "sha refname" lines.
  std::string Refs(const std::string& dir) {
    return GitFixture(dir).Git({"for-each-ref", "--format=%(objectname) %(refname)"});
  }

  TempDir tmp_;
  GitFixture source_{tmp_.Join("source")};
  std::string first_;
  const std::string mirror_dir_ = tmp_.Join("cache/mirrors/source.git");
};

TEST_F(MirrorTest, EnsureMirrorClonesAllRefs) {
  auto dir = EnsureMirror(source_.path(), mirror_dir_);
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ(*dir, mirror_dir_);
  EXPECT_TRUE(HasCommit(*dir, first_));
  EXPECT_EQ(Refs(*dir), Refs(source_.path()));
  GitFixture mirror(*dir);
  EXPECT_EQ(mirror.Git({"rev-parse", "--is-bare-repository"}), "true");
  EXPECT_EQ(mirror.Git({"rev-parse", "HEAD"}), first_);
  EXPECT_EQ(mirror.Git({"config", "gc.auto"}), "0");
  EXPECT_EQ(mirror.Git({"fsck", "--no-progress"}), "");

  // A second call finds it and does not fetch.
  std::string second = source_.Commit("second");
  auto again = EnsureMirror(source_.path() + "/", mirror_dir_ + "/");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, mirror_dir_);
  EXPECT_FALSE(HasCommit(*again, second));
}

TEST_F(MirrorTest, FetchMakesNewCommitsVisibleAndPrunes) {
  ASSERT_TRUE(EnsureMirror(source_.path(), mirror_dir_).ok());
  std::string second = source_.Commit("second", {{"b.txt", "b\n"}});
  source_.Git({"branch", "-D", "feature"});
  source_.Branch("newbranch");
  EXPECT_FALSE(HasCommit(mirror_dir_, second));

  absl::Status fetched = FetchIntoMirror(source_.path(), mirror_dir_);
  ASSERT_TRUE(fetched.ok()) << fetched;
  EXPECT_TRUE(HasCommit(mirror_dir_, second));
  EXPECT_TRUE(HasCommit(mirror_dir_, first_));
  EXPECT_EQ(Refs(mirror_dir_), Refs(source_.path()));

  // Commits that vanish from the source stay in the mirror.
  source_.Git({"reset", "-q", "--hard", first_});
  ASSERT_TRUE(FetchIntoMirror(source_.path(), mirror_dir_).ok());
  EXPECT_TRUE(HasCommit(mirror_dir_, second));
  EXPECT_EQ(GitFixture(mirror_dir_).Git({"rev-parse", "main"}), first_);
}

// The mirror records its source as `origin`, as `git clone --mirror` does, and a fetch honours
// the longest matching url.<base>.insteadOf, as git does; both without libgit2 1.5's remote
// lookup, whose insteadOf glob leaks PCRE2 memory (docs/decisions.md 80; LeakSanitizer checks it
// under scripts/test.sh --sanitize).
TEST_F(MirrorTest, RecordsOriginAndHonoursInsteadOf) {
  ASSERT_TRUE(EnsureMirror(source_.path(), mirror_dir_).ok());
  GitFixture mirror(mirror_dir_);
  const std::filesystem::path source = std::filesystem::canonical(source_.path());
  EXPECT_EQ(mirror.Git({"config", "remote.origin.url"}), source.string());
  EXPECT_EQ(mirror.Git({"config", "remote.origin.fetch"}), "+refs/*:refs/*");

  mirror.Git({"config", "url." + source.parent_path().string() + "/.insteadOf", "alias:"});
  mirror.Git({"config", "url./nonexistent/.insteadOf", "ali"});  // Shorter: loses.
  const std::string second = source_.Commit("second", {{"b.txt", "b\n"}});
  absl::Status fetched = FetchIntoMirror("alias:" + source.filename().string(), mirror_dir_);
  ASSERT_TRUE(fetched.ok()) << fetched;
  EXPECT_TRUE(HasCommit(mirror_dir_, second));
  EXPECT_EQ(mirror.Git({"config", "remote.origin.url"}), "alias:" + source.filename().string());
}

TEST_F(MirrorTest, RefLocksLeftByAKilledFetchDoNotFailTheNextOne) {
  ASSERT_TRUE(EnsureMirror(source_.path(), mirror_dir_).ok());
  const std::string second = source_.Commit("second", {{"b.txt", "b\n"}});
  // What a fetch killed while updating refs leaves behind.
  WriteFile(mirror_dir_ + "/packed-refs.lock", "");
  WriteFile(mirror_dir_ + "/refs/heads/main.lock", "");
  ASSERT_TRUE(EnsureCommitInMirror(source_.path(), mirror_dir_, second).ok());
  EXPECT_TRUE(HasCommit(mirror_dir_, second));
  EXPECT_FALSE(std::filesystem::exists(mirror_dir_ + "/packed-refs.lock"));
  EXPECT_FALSE(std::filesystem::exists(mirror_dir_ + "/refs/heads/main.lock"));
  EXPECT_EQ(Refs(mirror_dir_), Refs(source_.path()));
}

TEST_F(MirrorTest, FetchCreatesMissingMirror) {
  ASSERT_TRUE(FetchIntoMirror(source_.path(), mirror_dir_).ok());
  EXPECT_TRUE(HasCommit(mirror_dir_, first_));
}

TEST_F(MirrorTest, EnsureCommitInMirrorFetchesOnDemand) {
  ASSERT_TRUE(EnsureMirror(source_.path(), mirror_dir_).ok());
  std::string second = source_.Commit("second");
  absl::Status status = EnsureCommitInMirror(source_.path(), mirror_dir_, second);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_TRUE(HasCommit(mirror_dir_, second));

  absl::Status missing = EnsureCommitInMirror(source_.path(), mirror_dir_, std::string(40, 'a'));
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.message(), HasSubstr("even after a fetch"));
  EXPECT_EQ(EnsureCommitInMirror(source_.path(), mirror_dir_, "abc").code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(MirrorTest, HasCommitRejectsNonCommits) {
  ASSERT_TRUE(EnsureMirror(source_.path(), mirror_dir_).ok());
  EXPECT_FALSE(HasCommit(mirror_dir_, source_.Git({"rev-parse", "HEAD^{tree}"})));
  EXPECT_FALSE(HasCommit(mirror_dir_, first_.substr(0, 10)));
  EXPECT_FALSE(HasCommit(tmp_.Join("nowhere"), first_));
}

TEST_F(MirrorTest, ConcurrentEnsureAndFetch) {
  std::string second = source_.Commit("second");
  std::vector<absl::Status> results(8);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      results[i] = i % 2 == 0 ? EnsureMirror(source_.path(), mirror_dir_).status()
                              : FetchIntoMirror(source_.path(), mirror_dir_);
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const absl::Status& status : results) EXPECT_TRUE(status.ok()) << status;
  EXPECT_TRUE(HasCommit(mirror_dir_, second));
  EXPECT_EQ(GitFixture(mirror_dir_).Git({"fsck", "--no-progress"}), "");
}

TEST_F(MirrorTest, Errors) {
  auto missing = EnsureMirror(tmp_.Join("no-such-source"), mirror_dir_);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("does not exist"));

  WriteFile(tmp_.Join("junk/file"), "x");
  auto junk = EnsureMirror(source_.path(), tmp_.Join("junk"));
  EXPECT_EQ(junk.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(junk.status().message(), HasSubstr("not a bare git repository"));

  auto not_repo = EnsureMirror(tmp_.path() + "/junk", tmp_.Join("m2"));
  EXPECT_FALSE(not_repo.ok());
  EXPECT_FALSE(std::filesystem::exists(tmp_.Join("m2")));  // No half-made mirror left behind.
}

}  // namespace
}  // namespace kbisect
