// Copyright 2026 The kbisect Authors.

#include "tests/testing/git_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace testing {
namespace {

namespace fs = std::filesystem;

// Returns the directory temporary directories go under.
std::string TempRoot() {
  for (const char* var : {"TEST_TMPDIR", "TMPDIR"}) {
    const char* value = std::getenv(var);
    if (value != nullptr && value[0] != '\0') return value;
  }
  return "/tmp";
}

}  // namespace

TempDir::TempDir(std::string_view prefix) {
  std::string pattern = absl::StrCat(TempRoot(), "/", std::string(prefix), "-XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) {
    perror("mkdtemp");
    std::abort();
  }
  std::error_code ec;
  fs::path canonical = fs::canonical(pattern, ec);
  path_ = ec ? pattern : canonical.string();
}

TempDir::~TempDir() {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  if (std::getenv("KBISECT_KEEP_TEST_DIRS") != nullptr && test != nullptr &&
      test->result()->Failed()) {
    std::fprintf(stderr, "kept %s (KBISECT_KEEP_TEST_DIRS)\n", path_.c_str());
    return;
  }
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string TempDir::Join(std::string_view relative) const {
  return absl::StrCat(path_, "/", std::string(relative));
}

CommandResult RunCommandInProcess(int (*command)(int argc, char** argv),
                                  std::vector<std::string> words) {
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  CommandResult result;
  result.exit_code = command(static_cast<int>(argv.size()), argv.data());
  result.out = ::testing::internal::GetCapturedStdout();
  result.err = ::testing::internal::GetCapturedStderr();
  return result;
}

CommandResult RunShell(const std::string& command) {
  CommandResult result;
  std::string err_path = absl::StrCat(TempRoot(), "/kbisect-stderr-XXXXXX");
  int err_fd = mkstemp(err_path.data());
  if (err_fd < 0) {
    result.err = "mkstemp failed";
    return result;
  }
  close(err_fd);
  const std::string full = absl::StrCat("( ", command, " ) 2>", ShellQuote(err_path));
  FILE* pipe = popen(full.c_str(), "r");
  if (pipe == nullptr) {
    unlink(err_path.c_str());
    result.err = "popen failed";
    return result;
  }
  char buffer[65536];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.out.append(buffer, n);
  const int status = pclose(pipe);
  result.exit_code = (status != -1 && WIFEXITED(status)) ? WEXITSTATUS(status) : -1;
  std::ifstream err_in(err_path, std::ios::binary);
  std::stringstream err;
  err << err_in.rdbuf();
  result.err = err.str();
  unlink(err_path.c_str());
  return result;
}

std::string ShellQuote(std::string_view arg) {
  std::string quoted = "'";
  for (char c : arg) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  quoted += "'";
  return quoted;
}

void WriteFile(const std::string& path, std::string_view contents) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  if (!out.good()) ADD_FAILURE() << "cannot write " << path;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in.good()) {
    ADD_FAILURE() << "cannot read " << path;
    return "";
  }
  std::stringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

GitFixture::GitFixture(std::string path) : path_(std::move(path)) {}

void GitFixture::Init(std::string_view initial_branch) {
  std::error_code ec;
  fs::create_directories(path_, ec);
  Git({"init", "-q", absl::StrCat("--initial-branch=", std::string(initial_branch))});
}

void GitFixture::Write(const std::string& relative, std::string_view contents) {
  WriteFile(absl::StrCat(path_, "/", relative), contents);
}

void GitFixture::Remove(const std::string& relative) {
  std::error_code ec;
  if (!fs::remove(absl::StrCat(path_, "/", relative), ec)) {
    ADD_FAILURE() << "cannot remove " << relative << " in " << path_;
  }
}

std::string GitFixture::Commit(std::string_view message,
                               const std::map<std::string, std::string>& files,
                               const std::vector<std::string>& deletions) {
  for (const auto& [relative, contents] : files) Write(relative, contents);
  for (const std::string& relative : deletions) Remove(relative);
  Git({"add", "-A"});
  GitDated({"commit", "-q", "--allow-empty", "-m", std::string(message)});
  return Head();
}

void GitFixture::SetGitlink(const std::string& relative, const std::string& sha) {
  std::error_code ec;
  fs::create_directories(absl::StrCat(path_, "/", relative), ec);
  Git({"update-index", "--add", "--cacheinfo", absl::StrCat("160000,", sha, ",", relative)});
}

void GitFixture::Branch(const std::string& name, const std::string& start) {
  Git({"branch", name, start});
}

void GitFixture::Checkout(const std::string& rev) { Git({"checkout", "-q", rev}); }

std::string GitFixture::Merge(const std::string& rev, std::string_view message) {
  GitDated({"merge", "-q", "--no-ff", "-m", std::string(message), rev});
  return Head();
}

void GitFixture::Tag(const std::string& name, const std::string& rev) { Git({"tag", name, rev}); }

void GitFixture::AnnotatedTag(const std::string& name, std::string_view message,
                              const std::string& rev) {
  GitDated({"tag", "-a", name, "-m", std::string(message), rev});
}

std::string GitFixture::Head() { return Git({"rev-parse", "HEAD"}); }

std::string GitFixture::EnvPrefix() const {
  const std::string date = absl::StrCat("@", next_time_, " ", tz_);
  return absl::StrCat(
      "env -u GIT_DIR -u GIT_WORK_TREE -u GIT_INDEX_FILE -u GIT_OBJECT_DIRECTORY "
      "GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_TERMINAL_PROMPT=0 "
      "GIT_AUTHOR_NAME='Test Author' GIT_AUTHOR_EMAIL=author@example.com "
      "GIT_COMMITTER_NAME='Test Committer' GIT_COMMITTER_EMAIL=committer@example.com "
      "GIT_AUTHOR_DATE=",
      ShellQuote(date), " GIT_COMMITTER_DATE=", ShellQuote(date), " ");
}

CommandResult GitFixture::TryGit(const std::vector<std::string>& args) {
  std::string command = absl::StrCat(EnvPrefix(), "git -C ", ShellQuote(path_));
  for (const std::string& arg : args) absl::StrAppend(&command, " ", ShellQuote(arg));
  return RunShell(command);
}

std::string GitFixture::Git(const std::vector<std::string>& args) {
  CommandResult result = TryGit(args);
  if (result.exit_code != 0) {
    ADD_FAILURE() << "git " << absl::StrJoin(args, " ") << " in " << path_ << " exited "
                  << result.exit_code << ": " << result.err;
  }
  return std::string(absl::StripTrailingAsciiWhitespace(result.out));
}

std::string GitFixture::GitDated(const std::vector<std::string>& args) {
  std::string out = Git(args);
  next_time_ += 60;
  return out;
}

void GitFixture::SetNextTime(int64_t unix_time, std::string tz) {
  next_time_ = unix_time;
  tz_ = std::move(tz);
}

}  // namespace testing
}  // namespace kbisect
