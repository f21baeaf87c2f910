// Copyright 2026 The kbisect Authors.
//
// GitBlobId against the git CLI: the same bytes give the id `git hash-object` prints.
#include "common/git/object_hash.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace {

using ::kbisect::testing::RunShell;
using ::kbisect::testing::ShellQuote;
using ::kbisect::testing::TempDir;
using ::kbisect::testing::WriteFile;

TEST(GitBlobIdTest, MatchesGitHashObject) {
  TempDir tmp;
  const std::vector<std::string> inputs = {"", "hello\n", std::string("nul\0inside", 10),
                                           std::string(100000, 'x'), "4:bash,2:-c,"};
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string file = tmp.Join("blob" + std::to_string(i));
    WriteFile(file, inputs[i]);
    const auto git = RunShell("git hash-object --no-filters " + ShellQuote(file));
    ASSERT_EQ(git.exit_code, 0) << git.err;
    EXPECT_EQ(GitBlobId(inputs[i]) + "\n", git.out) << "input " << i;
  }
  EXPECT_EQ(GitBlobId("hello\n"), "ce013625030ba8dba906f756967f9e9ca394464a");
  EXPECT_EQ(GitBlobId(""), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
}

}  // namespace
}  // namespace kbisect
