// Copyright 2026 The kbisect Authors.
//
// GitRepo against the git CLI on real repositories built in temp dirs.

#include "common/git/git_repo.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace {

using ::kbisect::testing::GitFixture;
using ::kbisect::testing::TempDir;
using ::testing::HasSubstr;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    lines.emplace_back(line);
  }
  return lines;
}

// A history with merges, tags, a side branch with skewed (older) dates and a criss-cross:
//
//   main:  c0 - c1 - c2 ---------- m1 - c5 ------- m2 - c7 - m3
//                \    \           /               /         /
//   topic:        \    t1 ---- t2                /         /
//   side:          s1 - s2 (dated in the past) --         /
//   late:                                      l1 (from t1) merged at m3
//
// The history is built once for the whole suite; the tests only read it.
struct History {
  History() {
    repo.Init();
    c["c0"] = repo.Commit("c0", {{"a.txt", "one\ntwo\nthree\n"}, {"gone.txt", "bye\n"}});
    c["c1"] = repo.Commit("c1", {{"b.txt", "b\n"}});
    repo.Tag("v1");
    repo.Branch("side");
    c["c2"] = repo.Commit("c2", {{"a.txt", "one\nTWO\nthree\n"}});
    repo.Branch("topic");
    repo.Checkout("topic");
    c["t1"] = repo.Commit("t1", {{"t.txt", "t1\n"}});
    repo.Branch("late");
    c["t2"] = repo.Commit("t2", {{"t.txt", "t2\n"}});
    repo.Checkout("side");
    repo.SetNextTime(GitFixture::kBaseTime - 86400, "-0730");
    c["s1"] = repo.Commit("s1", {{"s.txt", "s1\n"}});
    c["s2"] = repo.Commit("s2", {{"s.txt", "s2\n"}});
    repo.SetNextTime(GitFixture::kBaseTime + 3600);
    repo.Checkout("main");
    c["m1"] = repo.Merge("topic", "Merge topic");
    repo.AnnotatedTag("v2", "release two");
    c["c5"] = repo.Commit("c5", {{"c.txt", "c5\n"}});
    c["m2"] = repo.Merge("side", "Merge side");
    c["c7"] = repo.Commit("c7: subject line\n\nThe body explains.\n\nSecond paragraph.\n",
                          {{"a.txt", "one\nTWO\nthree\nfour\n"}});
    repo.Checkout("late");
    c["l1"] = repo.Commit("l1", {{"l.txt", "l1\n"}});
    repo.Checkout("main");
    c["m3"] = repo.Merge("late", "Merge late");
  }

  TempDir tmp;
  GitFixture repo{tmp.Join("repo")};
  std::map<std::string, std::string> c;  // name -> sha
};

class GitRepoTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { history_ = new History(); }
  static void TearDownTestSuite() {
    delete history_;
    history_ = nullptr;
  }

  void SetUp() override {
    auto opened = GitRepo::Open(repo_.path());
    ASSERT_TRUE(opened.ok()) << opened.status();
    git_ = std::move(opened).value();
  }

  static History* history_;
  TempDir& tmp_ = history_->tmp;
  GitFixture& repo_ = history_->repo;
  std::map<std::string, std::string>& c_ = history_->c;
  std::unique_ptr<GitRepo> git_;
};

History* GitRepoTest::history_ = nullptr;

TEST_F(GitRepoTest, OpenReportsPaths) {
  EXPECT_EQ(git_->workdir(), repo_.path());
  EXPECT_EQ(git_->git_dir(), repo_.path() + "/.git");
  auto sub = GitRepo::Open(repo_.path() + "/.git");
  ASSERT_TRUE(sub.ok()) << sub.status();
  EXPECT_EQ((*sub)->git_dir(), repo_.path() + "/.git");
}

TEST_F(GitRepoTest, OpenDiscoversUpwardFromSubdirectory) {
  repo_.Write("deep/er/x.txt", "x\n");
  auto repo = GitRepo::Open(repo_.path() + "/deep/er");
  ASSERT_TRUE(repo.ok()) << repo.status();
  EXPECT_EQ((*repo)->workdir(), repo_.path());
}

TEST_F(GitRepoTest, OpenBareRepository) {
  GitFixture bare(tmp_.path());
  bare.Git({"clone", "-q", "--bare", repo_.path(), tmp_.Join("bare.git")});
  auto repo = GitRepo::Open(tmp_.Join("bare.git"));
  ASSERT_TRUE(repo.ok()) << repo.status();
  EXPECT_EQ((*repo)->workdir(), "");
  EXPECT_EQ((*repo)->git_dir(), tmp_.Join("bare.git"));
  EXPECT_EQ(*(*repo)->ResolveCommit("main"), c_["m3"]);
}

TEST(GitRepoOpenTest, ErrorsSayWhatIsWrong) {
  TempDir tmp;
  auto missing = GitRepo::Open(tmp.Join("nope"));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("does not exist"));

  auto not_repo = GitRepo::Open(tmp.path());
  EXPECT_EQ(not_repo.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(not_repo.status().message(),
              HasSubstr(absl::StrCat("'", tmp.path(), "' is not inside a git repository")));
  EXPECT_THAT(not_repo.status().message(), HasSubstr("git clone"));
}

TEST_F(GitRepoTest, ResolveCommitMatchesRevParse) {
  const std::vector<std::string> revs = {"HEAD",
                                         "main",
                                         "topic",
                                         "side",
                                         "v1",
                                         "v2",
                                         "HEAD~3",
                                         "HEAD^2",
                                         "HEAD~2^2",
                                         "main~2^2~1",
                                         "HEAD^2~1",
                                         "v2^{commit}",
                                         "refs/heads/late",
                                         c_["c1"],
                                         c_["c2"].substr(0, 7),
                                         c_["t1"].substr(0, 12)};
  for (const std::string& rev : revs) {
    auto sha = git_->ResolveCommit(rev);
    ASSERT_TRUE(sha.ok()) << rev << ": " << sha.status();
    EXPECT_EQ(*sha, repo_.Git({"rev-parse", rev + "^{commit}"})) << rev;
  }
  // The annotated tag itself is a tag object; it resolves to the commit.
  EXPECT_NE(repo_.Git({"rev-parse", "v2"}), c_["m1"]);
  EXPECT_EQ(*git_->ResolveCommit("v2"), c_["m1"]);
}

TEST_F(GitRepoTest, ResolveCommitErrors) {
  auto unknown = git_->ResolveCommit("no-such-branch");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(unknown.status().message(), HasSubstr("unknown revision 'no-such-branch' in "));
  EXPECT_THAT(unknown.status().message(), HasSubstr(repo_.path()));
  EXPECT_THAT(unknown.status().message(), HasSubstr("git log"));

  auto missing_sha = git_->ResolveCommit(std::string(40, 'e'));
  EXPECT_EQ(missing_sha.status().code(), absl::StatusCode::kNotFound);

  auto too_far = git_->ResolveCommit("HEAD~100");
  EXPECT_EQ(too_far.status().code(), absl::StatusCode::kNotFound);

  auto tree = git_->ResolveCommit("HEAD^{tree}");
  EXPECT_EQ(tree.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(tree.status().message(), HasSubstr("not a commit"));

  auto blob = git_->ResolveCommit("HEAD:a.txt");
  EXPECT_EQ(blob.status().code(), absl::StatusCode::kInvalidArgument);

  EXPECT_EQ(git_->ResolveCommit("").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(GitRepoTest, IsAncestorMatchesRevList) {
  for (const auto& [d_name, d] : c_) {
    const std::vector<std::string> reachable = Lines(repo_.Git({"rev-list", d}));
    for (const auto& [a_name, a] : c_) {
      auto got = git_->IsAncestor(a, d);
      ASSERT_TRUE(got.ok()) << got.status();
      const bool want = std::find(reachable.begin(), reachable.end(), a) != reachable.end();
      EXPECT_EQ(*got, want) << a_name << " ancestor of " << d_name;
    }
  }
  EXPECT_TRUE(*git_->IsAncestor("HEAD", "HEAD"));
  EXPECT_TRUE(*git_->IsAncestor("v1", "late"));
  EXPECT_FALSE(*git_->IsAncestor("side", "topic"));
  EXPECT_EQ(git_->IsAncestor("nope", "HEAD").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(GitRepoTest, MergeBaseMatchesGitMergeBase) {
  int pairs = 0;
  for (const auto& [a_name, a] : c_) {
    for (const auto& [b_name, b] : c_) {
      auto got = git_->MergeBase(a, b);
      ASSERT_TRUE(got.ok()) << a_name << " " << b_name << ": " << got.status();
      EXPECT_EQ(*got, repo_.Git({"merge-base", a, b})) << a_name << " " << b_name;
      ++pairs;
    }
  }
  EXPECT_GT(pairs, 4);
  EXPECT_EQ(git_->MergeBase("nope", "HEAD").status().code(), absl::StatusCode::kNotFound);
}

// Every ordered pair (good, bad) with good a proper ancestor of bad, compared with git rev-list in
// both modes.
TEST_F(GitRepoTest, CommitRangeMatchesRevListForAllPairs) {
  int first_parent_pairs = 0;
  int all_pairs = 0;
  for (const auto& [b_name, bad] : c_) {
    const std::vector<std::string> chain = Lines(repo_.Git({"rev-list", "--first-parent", bad}));
    for (const auto& [g_name, good] : c_) {
      if (good == bad || !*git_->IsAncestor(good, bad)) continue;
      const std::string label = g_name + ".." + b_name;

      std::vector<std::string> want = {good};
      for (const std::string& sha :
           Lines(repo_.Git({"rev-list", "--topo-order", "--reverse", good + ".." + bad}))) {
        want.push_back(sha);
      }
      auto all = git_->CommitRange(good, bad, /*first_parent=*/false);
      ASSERT_TRUE(all.ok()) << label << ": " << all.status();
      EXPECT_EQ(*all, want) << label;
      ++all_pairs;

      const bool on_chain = std::find(chain.begin(), chain.end(), good) != chain.end();
      auto fp = git_->CommitRange(good, bad, /*first_parent=*/true);
      if (!on_chain) {
        EXPECT_EQ(fp.status().code(), absl::StatusCode::kFailedPrecondition) << label;
        EXPECT_THAT(fp.status().message(), HasSubstr("first-parent chain")) << label;
        EXPECT_THAT(fp.status().message(), HasSubstr("--no-first-parent")) << label;
        continue;
      }
      std::vector<std::string> want_fp = {good};
      for (const std::string& sha :
           Lines(repo_.Git({"rev-list", "--first-parent", "--reverse", good + ".." + bad}))) {
        want_fp.push_back(sha);
      }
      ASSERT_TRUE(fp.ok()) << label << ": " << fp.status();
      EXPECT_EQ(*fp, want_fp) << label;
      ++first_parent_pairs;
    }
  }
  EXPECT_GT(first_parent_pairs, 20);
  EXPECT_GT(all_pairs, first_parent_pairs);
}

TEST_F(GitRepoTest, CommitRangeOnMainline) {
  auto range = git_->CommitRange("v1", "HEAD", /*first_parent=*/true);
  ASSERT_TRUE(range.ok()) << range.status();
  EXPECT_EQ(*range, (std::vector<std::string>{c_["c1"], c_["c2"], c_["m1"], c_["c5"], c_["m2"],
                                              c_["c7"], c_["m3"]}));
  auto all = git_->CommitRange("v1", "HEAD", /*first_parent=*/false);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->size(), 12u);  // c1 plus the 11 commits not reachable from it.
  EXPECT_EQ(all->front(), c_["c1"]);
  EXPECT_EQ(all->back(), c_["m3"]);
}

TEST_F(GitRepoTest, CommitRangeErrors) {
  auto same = git_->CommitRange("HEAD", "main", true);
  EXPECT_EQ(same.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(same.status().message(), HasSubstr("same commit"));

  auto swapped = git_->CommitRange(c_["c7"], c_["c0"], true);
  EXPECT_EQ(swapped.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(swapped.status().message(), HasSubstr("swap"));

  auto unrelated = git_->CommitRange(c_["t2"], c_["s2"], false);
  EXPECT_EQ(unrelated.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(unrelated.status().message(), HasSubstr("not an ancestor"));
  EXPECT_THAT(unrelated.status().message(), HasSubstr(c_["c1"]));  // The merge base.

  auto side = git_->CommitRange(c_["t1"], c_["c7"], true);
  EXPECT_EQ(side.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(side.status().message(), HasSubstr("--no-first-parent"));
  EXPECT_TRUE(git_->CommitRange(c_["t1"], c_["c7"], false).ok());

  EXPECT_EQ(git_->CommitRange("nope", "HEAD", true).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(GitRepoTest, GetCommitMatchesGitLog) {
  for (const auto& [name, sha] : c_) {
    auto info = git_->GetCommit(sha);
    ASSERT_TRUE(info.ok()) << info.status();
    // One git call per commit: the fields separated by NUL bytes.
    const std::string out = repo_
                                .TryGit({"log", "-1",
                                         "--format=%H%x00%P%x00%an%x00%ae%x00%at%x00"
                                         "%ai%x00%cn%x00%ct%x00%s%x00%T%x00%b",
                                         sha})
                                .out;
    std::vector<std::string> f = absl::StrSplit(out, '\0');
    ASSERT_EQ(f.size(), 11u) << out;
    f[10] = std::string(absl::StripTrailingAsciiWhitespace(f[10]));
    EXPECT_EQ(info->sha, f[0]) << name;
    EXPECT_EQ(absl::StrJoin(info->parents, " "), f[1]) << name;
    EXPECT_EQ(info->author_name, f[2]) << name;
    EXPECT_EQ(info->author_email, f[3]) << name;
    EXPECT_EQ(absl::StrCat(info->author_time), f[4]) << name;
    EXPECT_EQ(info->author_date, f[5]) << name;
    EXPECT_EQ(info->committer_name, f[6]) << name;
    EXPECT_EQ(absl::StrCat(info->commit_time), f[7]) << name;
    EXPECT_EQ(info->subject, f[8]) << name;
    EXPECT_EQ(info->tree_sha, f[9]) << name;
    EXPECT_EQ(info->body, f[10]) << name;
  }
  auto c7 = *git_->GetCommit(c_["c7"]);
  EXPECT_EQ(c7.subject, "c7: subject line");
  EXPECT_EQ(c7.body, "The body explains.\n\nSecond paragraph.");
  auto s1 = *git_->GetCommit(c_["s1"]);
  EXPECT_EQ(s1.author_tz_offset_minutes, -450);
  EXPECT_EQ(s1.author_date, "2025-12-30 16:30:00 -0730");
  EXPECT_EQ(git_->GetCommit(c_["m1"])->parents.size(), 2u);
  EXPECT_TRUE(git_->GetCommit(c_["c0"])->parents.empty());
}

class DiffTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_.Init();
    std::string long_text;
    for (int i = 0; i < 40; ++i) absl::StrAppend(&long_text, "line ", i, " of the moved file\n");
    from_ = repo_.Commit("base", {{"keep.txt", "a\nb\nc\nd\ne\nf\ng\n"},
                                  {"old/name.txt", long_text},
                                  {"doomed.txt", "x\ny\n"},
                                  {"img.bin", std::string("\x00\x01\x02\x03", 4)}});
    long_text.replace(0, 4, "LINE");
    repo_.Remove("old/name.txt");
    to_ = repo_.Commit("change",
                       {{"keep.txt", "a\nb\nC\nd\ne\nf\ng\nh\n"},
                        {"new/name.txt", long_text},
                        {"added.txt", "1\n2\n3\n"},
                        {"img.bin", std::string("\x00\x09\x02\x03", 4)}},
                       {"doomed.txt"});
    git_ = std::move(GitRepo::Open(repo_.path())).value();
  }

  TempDir tmp_;
  GitFixture repo_{tmp_.Join("repo")};
  std::string from_;
  std::string to_;
  std::unique_ptr<GitRepo> git_;
};

TEST_F(DiffTest, DiffStatMatchesNumstat) {
  auto stat = git_->DiffStat(from_, to_);
  ASSERT_TRUE(stat.ok()) << stat.status();

  // `git diff --numstat -z -M`: "adds\tdels\tpath\0" or, for renames, "adds\tdels\t\0old\0new\0".
  const std::string numstat = repo_.TryGit({"diff", "--numstat", "-z", "-M", from_, to_}).out;
  std::vector<std::string> fields = absl::StrSplit(numstat, '\0');
  std::map<std::string, std::string> want;  // path -> "adds dels old_path"
  for (size_t i = 0; i + 1 < fields.size(); ++i) {
    std::vector<std::string> parts = absl::StrSplit(fields[i], '\t');
    ASSERT_EQ(parts.size(), 3u) << fields[i];
    std::string old_path;
    std::string path = parts[2];
    if (path.empty()) {
      old_path = fields[++i];
      path = fields[++i];
    }
    want[path] = absl::StrCat(parts[0], " ", parts[1], " ", old_path);
  }
  std::map<std::string, char> want_status;
  for (const std::string& line : Lines(repo_.Git({"diff", "--name-status", "-M", from_, to_}))) {
    std::vector<std::string> parts = absl::StrSplit(line, '\t');
    want_status[parts.back()] = parts[0][0];
  }

  std::map<std::string, std::string> got;
  std::vector<std::string> order;
  for (const FileChange& change : *stat) {
    got[change.path] =
        change.binary ? absl::StrCat("- - ", change.old_path)
                      : absl::StrCat(change.additions, " ", change.deletions, " ", change.old_path);
    EXPECT_EQ(change.status, want_status[change.path]) << change.path;
    order.push_back(change.path);
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(order, Lines(repo_.Git({"diff", "--name-only", "-M", from_, to_})));

  std::map<std::string, FileChange> by_path;
  for (const FileChange& change : *stat) by_path[change.path] = change;
  EXPECT_EQ(by_path["new/name.txt"].status, 'R');
  EXPECT_EQ(by_path["new/name.txt"].old_path, "old/name.txt");
  EXPECT_EQ(by_path["doomed.txt"].status, 'D');
  EXPECT_EQ(by_path["doomed.txt"].deletions, 2);
  EXPECT_EQ(by_path["added.txt"].status, 'A');
  EXPECT_EQ(by_path["added.txt"].old_path, "");
  EXPECT_TRUE(by_path["img.bin"].binary);
  EXPECT_EQ(by_path["keep.txt"].additions, 2);
  EXPECT_EQ(by_path["keep.txt"].deletions, 1);

  EXPECT_TRUE(git_->DiffStat(to_, to_)->empty());
}

TEST_F(DiffTest, ChangedPathsMatchGitWithoutRenames) {
  const std::vector<std::string> names =
      Lines(repo_.Git({"diff", "--name-only", "--no-renames", from_, to_}));
  EXPECT_EQ(*git_->ChangedPaths(from_, to_), names);
  EXPECT_EQ(names.size(), 6u) << "the rename gives both of its paths";
  EXPECT_EQ(git_->ChangedPaths(to_, from_)->size(), 6u);
  EXPECT_TRUE(git_->ChangedPaths(to_, to_)->empty());
  EXPECT_FALSE(git_->ChangedPaths(to_, "0123456789abcdef0123456789abcdef01234567").ok());
}

TEST_F(DiffTest, ListTreeMatchesGitLsTree) {
  absl::StatusOr<GitRepo::TreePaths> paths = git_->ListTree(to_);
  ASSERT_TRUE(paths.ok()) << paths.status();
  EXPECT_EQ(paths->files, Lines(repo_.Git({"ls-tree", "-r", "--name-only", to_})));
  EXPECT_TRUE(paths->submodules.empty());
  EXPECT_TRUE(std::is_sorted(paths->files.begin(), paths->files.end()))
      << "Holds looks files up by binary search";
  for (const std::string& file : paths->files) EXPECT_TRUE(paths->Holds(file)) << file;
  EXPECT_FALSE(paths->Holds("build/not-tracked.o"));
  EXPECT_FALSE(git_->ListTree("0123456789abcdef0123456789abcdef01234567").ok());

  GitRepo::TreePaths with_submodule;
  with_submodule.files = {"a.c", "a/b.c"};
  with_submodule.submodules = {"third_party/cutlass"};
  EXPECT_TRUE(with_submodule.Holds("third_party/cutlass/include/gemm.h"));
  EXPECT_FALSE(with_submodule.Holds("third_party/cutlass"));
  EXPECT_FALSE(with_submodule.Holds("third_party/cutlass-extra/x.h"));
  EXPECT_TRUE(with_submodule.Holds("a/b.c"));
}

TEST_F(DiffTest, DiffPatchMatchesGitDiff) {
  auto patch = git_->DiffPatch(from_, to_);
  ASSERT_TRUE(patch.ok()) << patch.status();
  EXPECT_THAT(*patch, HasSubstr("diff --git a/keep.txt b/keep.txt"));
  EXPECT_THAT(*patch, HasSubstr("@@ -1,7 +1,8 @@\n a\n b\n-c\n+C\n d\n"));
  EXPECT_THAT(*patch, HasSubstr("rename from old/name.txt\nrename to new/name.txt"));
  EXPECT_THAT(*patch, HasSubstr("deleted file mode 100644"));
  EXPECT_THAT(*patch, HasSubstr("Binary files a/img.bin and b/img.bin differ"));
  // Byte for byte like the CLI (same abbreviation length and headers in a small repository).
  EXPECT_EQ(*patch, repo_.TryGit({"diff", "-M", "--no-color", from_, to_}).out);
  EXPECT_EQ(*git_->DiffPatch(to_, to_), "");
}

TEST_F(DiffTest, ReadFileReadsAFileOfACommit) {
  EXPECT_EQ(*git_->ReadFile(from_, "keep.txt"), "a\nb\nc\nd\ne\nf\ng\n");
  EXPECT_EQ(*git_->ReadFile(to_, "keep.txt"), "a\nb\nC\nd\ne\nf\ng\nh\n");
  EXPECT_EQ(*git_->ReadFile(to_, "added.txt"), "1\n2\n3\n");
  EXPECT_EQ(git_->ReadFile(from_, "added.txt").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(git_->ReadFile(to_, "new").status().code(), absl::StatusCode::kNotFound);  // A tree.
  EXPECT_FALSE(git_->ReadFile("0123456789abcdef0123456789abcdef01234567", "keep.txt").ok());
}

}  // namespace
}  // namespace kbisect
