// Copyright 2026 The kbisect Authors.
//
// Test helpers that build real git repositories in temporary directories with the `git` CLI.
//
//   kbisect::testing::TempDir tmp;
//   kbisect::testing::GitFixture repo(tmp.Join("repo"));
//   repo.Init();
//   std::string a = repo.Commit("add a", {{"a.txt", "hello\n"}});
//   repo.Branch("topic");
//   repo.Checkout("topic");
//   std::string b = repo.Commit("edit a", {{"a.txt", "bye\n"}});
//   repo.Checkout("main");
//   std::string m = repo.Merge("topic", "merge topic");
//   EXPECT_EQ(repo.Git({"rev-parse", "HEAD"}), m);
//
// Every git command runs with a hermetic environment: no system or global config, a fixed author
// and committer ("Test Author <author@example.com>"), and deterministic dates: the n-th commit,
// merge or annotated tag of a fixture is dated kBaseTime + 60 * n seconds in time zone +0100
// (override with SetNextTime). Repositories built from the same calls therefore have the same
// commit ids on every run. Failures of git commands are reported as non-fatal GoogleTest failures
// (ADD_FAILURE) that include git's stderr.
#ifndef KBISECT_TESTS_TESTING_GIT_FIXTURE_H_
#define KBISECT_TESTS_TESTING_GIT_FIXTURE_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kbisect {
namespace testing {

// A fresh, empty directory under $TEST_TMPDIR (else $TMPDIR, else /tmp), removed with everything
// in it when the object is destroyed, unless $KBISECT_KEEP_TEST_DIRS is set and the current test
// failed: then it stays, and its path goes to stderr (a failed integration test's coordinator
// state, journal included, can then be read and replayed). Not copyable.
class TempDir {
 public:
  // Creates the directory; its name starts with `prefix`. Aborts the test binary if it cannot.
  explicit TempDir(std::string_view prefix = "kbisect-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // Returns the absolute path of the directory (no trailing slash).
  const std::string& path() const { return path_; }

  // Returns path() + "/" + relative.
  std::string Join(std::string_view relative) const;

 private:
  std::string path_;
};

// The outcome of a shell command.
struct CommandResult {
  int exit_code = -1;  // The exit status, or -1 if the command could not be run or was killed.
  std::string out;     // Everything written to stdout.
  std::string err;     // Everything written to stderr.
};

// Runs `command` with /bin/sh and captures its stdout and stderr. Never fails the test by itself.
CommandResult RunShell(const std::string& command);

// Calls a command's entry point (`kbisect`'s CacheCommand, MetricsCommand, ...) in this process
// with argv `words` (words[0] the subcommand's name) and captures what it prints.
CommandResult RunCommandInProcess(int (*command)(int argc, char** argv),
                                  std::vector<std::string> words);

// Quotes `arg` for /bin/sh so that it is passed as one literal word.
std::string ShellQuote(std::string_view arg);

// Writes `contents` to `path`, creating missing parent directories and replacing any existing
// file. Reports a test failure if it cannot.
void WriteFile(const std::string& path, std::string_view contents);

// Returns the contents of `path`, or "" (and a test failure) if it cannot be read.
std::string ReadFile(const std::string& path);

// A git repository with a working tree at a fixed path, driven through the `git` CLI.
class GitFixture {
 public:
  // 2026-01-01 00:00:00 UTC: the date of the first commit unless SetNextTime says otherwise.
  static constexpr int64_t kBaseTime = 1767225600;

  // Makes a fixture for the repository at `path` (which Init creates, or which already exists).
  explicit GitFixture(std::string path);

  // Returns the working-tree path given to the constructor.
  const std::string& path() const { return path_; }

  // Creates the directory if needed and runs `git init` with the given initial branch.
  void Init(std::string_view initial_branch = "main");

  // Writes a file (path relative to the working tree), creating parent directories. Not staged.
  void Write(const std::string& relative, std::string_view contents);

  // Deletes a file from the working tree. Not staged.
  void Remove(const std::string& relative);

  // Writes `files` (relative path -> contents), deletes `deletions`, stages everything
  // (`git add -A`, so files written with Write are included too) and commits with `message`.
  // Returns the new commit's full id. Allows empty commits.
  std::string Commit(std::string_view message, const std::map<std::string, std::string>& files = {},
                     const std::vector<std::string>& deletions = {});

  // Records a gitlink (a submodule's recorded commit `sha`) at `relative` in the index, so the
  // next Commit includes it, and makes an empty directory there (an unpopulated submodule, which
  // Commit leaves as it is). The .gitmodules that names it is the caller's to write.
  void SetGitlink(const std::string& relative, const std::string& sha);

  // Creates branch `name` at `start` without switching to it.
  void Branch(const std::string& name, const std::string& start = "HEAD");

  // Switches the working tree to `rev` (a branch, or any revision for a detached HEAD).
  void Checkout(const std::string& rev);

  // Merges `rev` into the current branch with a merge commit even when a fast-forward is possible
  // (`git merge --no-ff`). Returns the merge commit's full id. The merge must not conflict.
  std::string Merge(const std::string& rev, std::string_view message);

  // Creates a lightweight tag.
  void Tag(const std::string& name, const std::string& rev = "HEAD");

  // Creates an annotated tag (a tag object) with `message`.
  void AnnotatedTag(const std::string& name, std::string_view message,
                    const std::string& rev = "HEAD");

  // Returns the full id of HEAD.
  std::string Head();

  // Runs `git -C path() ARGS...` (each element one argument) in the hermetic environment and
  // returns its stdout with trailing whitespace removed. Reports a test failure with git's stderr
  // if git exits non-zero.
  std::string Git(const std::vector<std::string>& args);

  // Like Git, but never reports a failure: returns the exit code and raw (untrimmed) output.
  CommandResult TryGit(const std::vector<std::string>& args);

  // Makes the next commit, merge or annotated tag use `unix_time` in time zone `tz` (e.g. "-0700");
  // later ones continue at one-minute steps from there.
  void SetNextTime(int64_t unix_time, std::string tz = "+0100");

 private:
  // Returns the shell prefix that sets the hermetic environment and dates to the current time.
  std::string EnvPrefix() const;
  // Runs a git command that creates an object with a date, then advances the clock.
  std::string GitDated(const std::vector<std::string>& args);

  std::string path_;
  int64_t next_time_ = kBaseTime;
  std::string tz_ = "+0100";
};

}  // namespace testing
}  // namespace kbisect

#endif  // KBISECT_TESTS_TESTING_GIT_FIXTURE_H_
