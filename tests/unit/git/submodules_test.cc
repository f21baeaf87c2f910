// Copyright 2026 The kbisect Authors.
//
// Submodules: URL resolution, listing a commit's submodules, and recursive checkouts from mirrors
// of real repositories (a superproject, a dependency and a nested one, over paths and file://).

#include "common/git/submodules.h"

#include <filesystem>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/git/mirror.h"
#include "common/git/worktree.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/git_fixture.h"

namespace kbisect {

void PrintTo(const SubmoduleRef& ref, std::ostream* out) {
  *out << "{" << ref.name << ", " << ref.path << ", " << ref.url << ", " << ref.sha << "}";
}

namespace {

namespace fs = std::filesystem;

using ::kbisect::testing::GitFixture;
using ::kbisect::testing::ReadFile;
using ::kbisect::testing::RunShell;
using ::kbisect::testing::ShellQuote;
using ::kbisect::testing::TempDir;
using ::kbisect::testing::WriteFile;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(ResolveSubmoduleUrlTest, ResolvesAsGitSubmoduleInitDoes) {
  struct Case {
    const char* base;
    const char* url;
    const char* want;
  };
  const Case cases[] = {
      {"/srv/repos/super", "../dep.git", "/srv/repos/dep.git"},
      {"/srv/repos/super/", "../dep.git", "/srv/repos/dep.git"},
      {"/srv/repos/super.git", "./dep.git", "/srv/repos/super.git/dep.git"},
      {"/srv/repos/super", "../../other/dep", "/srv/other/dep"},
      {"/super", "../dep", "/dep"},
      {"file:///srv/repos/super.git", "../dep.git", "file:///srv/repos/dep.git"},
      {"file:///super.git", "../dep.git", "file:///dep.git"},
      {"https://git.example/org/super.git", "../dep.git", "https://git.example/org/dep.git"},
      {"https://git.example/org/super.git", "../../nvidia/cutlass.git",
       "https://git.example/nvidia/cutlass.git"},
      {"git@git.example:org/super.git", "../dep.git", "git@git.example:org/dep.git"},
      {"git@git.example:org/super.git", "../../dep.git", "git@git.example:dep.git"},
      {"git.example:super.git", "../dep.git", "git.example:dep.git"},
      // Absolute URLs and paths are taken as they are.
      {"/srv/repos/super", "https://github.com/NVIDIA/cutlass.git",
       "https://github.com/NVIDIA/cutlass.git"},
      {"/srv/repos/super", "file:///srv/dep", "file:///srv/dep"},
      {"/srv/repos/super", "/srv/dep", "/srv/dep"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::string> got = ResolveSubmoduleUrl(c.base, c.url);
    ASSERT_TRUE(got.ok()) << c.base << " + " << c.url << ": " << got.status();
    EXPECT_EQ(*got, c.want) << c.base << " + " << c.url;
  }
}

TEST(ResolveSubmoduleUrlTest, RefusesToClimbAboveTheRoot) {
  for (const auto& [base, url] : std::vector<std::pair<std::string, std::string>>{
           {"https://git.example/super.git", "../../dep.git"},
           {"file:///super.git", "../../dep.git"},
           {"git.example:super.git", "../../dep.git"},
           {"super", "../dep"}}) {
    absl::StatusOr<std::string> got = ResolveSubmoduleUrl(base, url);
    EXPECT_TRUE(absl::IsInvalidArgument(got.status())) << base << " + " << url;
    EXPECT_THAT(got.status().message(), HasSubstr(url)) << base;
  }
}

// A superproject with the dependency "third_party/dep" (a relative URL), which has the nested
// submodule "nested" (a file:// URL). Commits: kNoModules (none yet), kFirst (dep at its first
// commit), kBumped (dep bumped: its nested submodule bumped too), kRemoved (dep gone).
class SubmodulesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    leaf_.Init();
    leaf_a_ = leaf_.Commit("leaf A", {{"leaf.txt", "leaf A\n"}});
    leaf_b_ = leaf_.Commit("leaf B", {{"leaf.txt", "leaf B\n"}});

    dep_.Init();
    dep_.SetGitlink("nested", leaf_a_);
    dep_a_ = dep_.Commit("dep A", {{".gitignore", "build/\n"},
                                   {"dep.txt", "dep A\n"},
                                   {".gitmodules", Modules("nested", "nested", FileUrl(leaf_))}});
    dep_.SetGitlink("nested", leaf_b_);
    dep_b_ = dep_.Commit("dep B", {{"dep.txt", "dep B\n"}});

    super_.Init();
    no_modules_ = super_.Commit("no modules", {{"main.txt", "main\n"}});
    super_.SetGitlink("third_party/dep", dep_a_);
    first_ =
        super_.Commit("add dep", {{".gitmodules", Modules("dep", "third_party/dep", "../dep")}});
    super_.SetGitlink("third_party/dep", dep_b_);
    bumped_ = super_.Commit("bump dep");
    super_.Git({"rm", "-q", "--cached", "third_party/dep"});
    removed_ = super_.Commit("drop dep", {{".gitmodules", "\n"}});

    ASSERT_TRUE(EnsureMirror(super_.path(), MirrorOf(super_.path())).ok());
  }

  static std::string Modules(const std::string& name, const std::string& path,
                             const std::string& url) {
    return absl::StrCat("[submodule \"", name, "\"]\n\tpath = ", path, "\n\turl = ", url, "\n");
  }
  static std::string FileUrl(const GitFixture& repo) { return "file://" + repo.path(); }
  std::string MirrorOf(const std::string& url) const {
    return absl::StrCat(mirrors_, "/", MirrorKey(url), ".git");
  }
  std::unique_ptr<Worktree> OpenTree(const std::string& name) {
    absl::StatusOr<std::unique_ptr<Worktree>> tree =
        Worktree::OpenOrCreate(MirrorOf(super_.path()), tmp_.Join(name));
    EXPECT_TRUE(tree.ok()) << tree.status();
    return tree.ok() ? *std::move(tree) : nullptr;
  }

  TempDir tmp_;
  const std::string mirrors_ = tmp_.Join("cache/mirrors");
  GitFixture leaf_{tmp_.Join("leaf")};
  GitFixture dep_{tmp_.Join("dep")};
  GitFixture super_{tmp_.Join("super")};
  std::string leaf_a_, leaf_b_, dep_a_, dep_b_;
  std::string no_modules_, first_, bumped_, removed_;
};

TEST_F(SubmodulesTest, ListsTheGitlinksThatGitmodulesNames) {
  absl::StatusOr<std::vector<SubmoduleRef>> none = ListSubmodules(super_.path(), no_modules_);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_THAT(*none, IsEmpty());

  absl::StatusOr<std::vector<SubmoduleRef>> first = ListSubmodules(MirrorOf(super_.path()), first_);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_THAT(*first, ElementsAre(SubmoduleRef{"dep", "third_party/dep", "../dep", dep_a_}));
  absl::StatusOr<std::vector<SubmoduleRef>> bumped = ListSubmodules(super_.path(), bumped_);
  ASSERT_TRUE(bumped.ok()) << bumped.status();
  EXPECT_THAT(*bumped, ElementsAre(SubmoduleRef{"dep", "third_party/dep", "../dep", dep_b_}));

  // A gitlink .gitmodules does not name, and a name without a gitlink, are no submodules.
  super_.Branch("odd", bumped_);
  super_.Checkout("odd");
  super_.SetGitlink("stray", leaf_a_);
  const std::string odd =
      super_.Commit("odd", {{".gitmodules", Modules("dep", "third_party/dep", "../dep") +
                                                Modules("ghost", "nowhere", "../ghost")}});
  absl::StatusOr<std::vector<SubmoduleRef>> listed = ListSubmodules(super_.path(), odd);
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_THAT(*listed, ElementsAre(SubmoduleRef{"dep", "third_party/dep", "../dep", dep_b_}));

  EXPECT_TRUE(absl::IsNotFound(
      ListSubmodules(super_.path(), "0123456789012345678901234567890123456789").status()));
}

TEST_F(SubmodulesTest, ChecksOutNestedSubmodulesAtTheRecordedCommits) {
  std::unique_ptr<Worktree> tree = OpenTree("slot");
  ASSERT_NE(tree, nullptr);
  SubmoduleCheckout submodules(mirrors_);
  const std::string root = tree->path();

  ASSERT_TRUE(submodules.CheckOut(*tree, super_.path(), first_).ok());
  EXPECT_EQ(ReadFile(root + "/main.txt"), "main\n");
  EXPECT_EQ(ReadFile(root + "/third_party/dep/dep.txt"), "dep A\n");
  EXPECT_EQ(ReadFile(root + "/third_party/dep/nested/leaf.txt"), "leaf A\n");
  // One mirror per URL, beside the superproject's: the relative URL resolved against the
  // superproject's path, the nested one's file:// URL as it is.
  EXPECT_TRUE(HasCommit(MirrorOf(dep_.path()), dep_a_));
  EXPECT_TRUE(HasCommit(MirrorOf(FileUrl(leaf_)), leaf_a_));
  int mirrors = 0;
  for (const auto& entry : fs::directory_iterator(mirrors_)) {
    mirrors += entry.path().extension() == ".git" ? 1 : 0;
  }
  EXPECT_EQ(mirrors, 3);

  // A build output (ignored) stays across a bump; an untracked file goes, as in the superproject.
  WriteFile(root + "/third_party/dep/build/out.o", "object\n");
  WriteFile(root + "/third_party/dep/stray.txt", "stray\n");
  ASSERT_TRUE(submodules.CheckOut(*tree, super_.path(), bumped_).ok());
  EXPECT_EQ(ReadFile(root + "/third_party/dep/dep.txt"), "dep B\n");
  EXPECT_EQ(ReadFile(root + "/third_party/dep/nested/leaf.txt"), "leaf B\n");
  EXPECT_TRUE(fs::exists(root + "/third_party/dep/build/out.o"));
  EXPECT_FALSE(fs::exists(root + "/third_party/dep/stray.txt"));

  // The submodule's own checkout is a real repository at the recorded commit.
  GitFixture checked_out(root + "/third_party/dep");
  EXPECT_EQ(checked_out.Git({"rev-parse", "HEAD"}), dep_b_);
  EXPECT_EQ(checked_out.Git({"status", "--porcelain"}), "");

  // Back and forth: a commit without the submodule removes it, a later one brings it back.
  ASSERT_TRUE(submodules.CheckOut(*tree, super_.path(), removed_).ok());
  EXPECT_FALSE(fs::exists(root + "/third_party/dep"));
  ASSERT_TRUE(submodules.CheckOut(*tree, super_.path(), first_).ok());
  EXPECT_EQ(ReadFile(root + "/third_party/dep/nested/leaf.txt"), "leaf A\n");
  ASSERT_TRUE(submodules.CheckOut(*tree, super_.path(), no_modules_).ok());
  EXPECT_FALSE(fs::exists(root + "/third_party"));
  EXPECT_EQ(ReadFile(root + "/main.txt"), "main\n");
}

// A dependency follow-up's probe: the superproject at a commit that records dep A, the
// submodule (and its nested one) checked out at other commits, named by their full paths.
TEST_F(SubmodulesTest, OverridesCheckSubmodulesOutAtOtherCommits) {
  std::unique_ptr<Worktree> tree = OpenTree("slot");
  ASSERT_NE(tree, nullptr);
  SubmoduleCheckout submodules(mirrors_);
  const std::string root = tree->path();
  SubmoduleCheckout::Overrides overrides;
  overrides["third_party/dep"] = {dep_.path(), dep_b_};
  ASSERT_TRUE(submodules.CheckOut(*tree, super_.path(), first_, overrides).ok());
  EXPECT_EQ(ReadFile(root + "/third_party/dep/dep.txt"), "dep B\n");
  // Its nested submodule as dep B records it.
  EXPECT_EQ(ReadFile(root + "/third_party/dep/nested/leaf.txt"), "leaf B\n");
  // A nested override too; a path that is no submodule is ignored.
  overrides["third_party/dep/nested"] = {FileUrl(leaf_), leaf_a_};
  overrides["elsewhere"] = {dep_.path(), dep_a_};
  ASSERT_TRUE(submodules.CheckOut(*tree, super_.path(), first_, overrides).ok());
  EXPECT_EQ(ReadFile(root + "/third_party/dep/dep.txt"), "dep B\n");
  EXPECT_EQ(ReadFile(root + "/third_party/dep/nested/leaf.txt"), "leaf A\n");
  EXPECT_FALSE(fs::exists(root + "/elsewhere"));
  // Without overrides, the recorded commits again.
  ASSERT_TRUE(submodules.CheckOut(*tree, super_.path(), first_).ok());
  EXPECT_EQ(ReadFile(root + "/third_party/dep/dep.txt"), "dep A\n");
  EXPECT_EQ(ReadFile(root + "/third_party/dep/nested/leaf.txt"), "leaf A\n");
  // An overriding commit nobody has is the commit's fault, named.
  overrides.erase("third_party/dep/nested");
  overrides["third_party/dep"].sha = "0123456789012345678901234567890123456789";
  const absl::Status status = submodules.CheckOut(*tree, super_.path(), first_, overrides);
  EXPECT_TRUE(IsUnfetchableSubmodule(status)) << status;
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("submodule 'third_party/dep' at commit 012345678901"));
}

TEST_F(SubmodulesTest, ResolvesRelativeUrlsAgainstTheCloneOfTheUsersOrigin) {
  // The user bisects in a clone made from a file:// URL: "../dep" is next to that URL, not to
  // the clone (where no dep exists).
  const std::string clone = tmp_.Join("work/clone");
  ASSERT_EQ(RunShell(absl::StrCat("git -c protocol.file.allow=always clone -q ",
                                  ShellQuote(FileUrl(super_)), " ", ShellQuote(clone)))
                .exit_code,
            0);
  EXPECT_EQ(SubmoduleBaseUrl(clone), FileUrl(super_));
  EXPECT_EQ(SubmoduleBaseUrl(super_.path()), super_.path());  // No origin: itself.
  ASSERT_TRUE(EnsureMirror(clone, MirrorOf(clone)).ok());
  absl::StatusOr<std::unique_ptr<Worktree>> tree =
      Worktree::OpenOrCreate(MirrorOf(clone), tmp_.Join("clone-slot"));
  ASSERT_TRUE(tree.ok()) << tree.status();
  ASSERT_TRUE(SubmoduleCheckout(mirrors_).CheckOut(**tree, clone, bumped_).ok());
  EXPECT_EQ(ReadFile((*tree)->path() + "/third_party/dep/dep.txt"), "dep B\n");
  EXPECT_TRUE(HasCommit(MirrorOf(FileUrl(dep_)), dep_b_));
}

TEST_F(SubmodulesTest, ACommitItsRepositoryLacksIsUnfetchableAndNamed) {
  // A dependency commit that was never pushed: made in a clone of dep, recorded by super.
  GitFixture unpushed(tmp_.Join("dep-clone"));
  ASSERT_EQ(RunShell(absl::StrCat("git clone -q ", ShellQuote(dep_.path()), " ",
                                  ShellQuote(unpushed.path())))
                .exit_code,
            0);
  const std::string lost = unpushed.Commit("never pushed", {{"dep.txt", "lost\n"}});
  super_.Branch("broken", bumped_);
  super_.Checkout("broken");
  super_.SetGitlink("third_party/dep", lost);
  const std::string broken = super_.Commit("bump dep to a lost commit");

  std::unique_ptr<Worktree> tree = OpenTree("slot");
  ASSERT_NE(tree, nullptr);
  ASSERT_TRUE(EnsureCommitInMirror(super_.path(), MirrorOf(super_.path()), broken).ok());
  absl::Status status = SubmoduleCheckout(mirrors_).CheckOut(*tree, super_.path(), broken);
  ASSERT_FALSE(status.ok());
  EXPECT_TRUE(IsUnfetchableSubmodule(status)) << status;
  EXPECT_TRUE(absl::IsNotFound(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("submodule 'third_party/dep'"));
  EXPECT_THAT(status.message(), HasSubstr(lost.substr(0, 12)));
  EXPECT_THAT(status.message(), HasSubstr(dep_.path()));

  // A URL that names no repository is the commit's too; a nested one is named by its full path.
  const std::string gone = tmp_.Join("gone");
  const std::string dep_gone =
      dep_.Commit("nested moves", {{".gitmodules", Modules("nested", "nested", gone)}});
  super_.SetGitlink("third_party/dep", dep_gone);
  const std::string nested_gone = super_.Commit("bump dep to a moved nested");
  ASSERT_TRUE(EnsureCommitInMirror(super_.path(), MirrorOf(super_.path()), nested_gone).ok());
  status = SubmoduleCheckout(mirrors_).CheckOut(*tree, super_.path(), nested_gone);
  EXPECT_TRUE(IsUnfetchableSubmodule(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("submodule 'third_party/dep/nested'"));
  EXPECT_THAT(status.message(), HasSubstr(gone));

  EXPECT_FALSE(IsUnfetchableSubmodule(absl::NotFoundError("plain")));
  EXPECT_FALSE(IsUnfetchableSubmodule(absl::OkStatus()));
}

TEST_F(SubmodulesTest, AGitlinkWithoutAUrlStaysAnEmptyDirectory) {
  super_.Branch("no-url", first_);
  super_.Checkout("no-url");
  super_.SetGitlink("vendor/nowhere", leaf_a_);
  const std::string commit = super_.Commit(
      "a submodule without a URL",
      {{".gitmodules", Modules("dep", "third_party/dep", "../dep") + "[submodule \"nowhere\"]\n"
                                                                     "\tpath = vendor/nowhere\n"}});
  ASSERT_TRUE(EnsureCommitInMirror(super_.path(), MirrorOf(super_.path()), commit).ok());
  std::unique_ptr<Worktree> tree = OpenTree("slot");
  ASSERT_NE(tree, nullptr);
  absl::Status status = SubmoduleCheckout(mirrors_).CheckOut(*tree, super_.path(), commit);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(ReadFile(tree->path() + "/third_party/dep/dep.txt"), "dep A\n");
  EXPECT_TRUE(fs::is_empty(tree->path() + "/vendor/nowhere"));
}

}  // namespace
}  // namespace kbisect
