// Copyright 2026 The kbisect Authors.
//
// BuildInputs (which changed paths a build reads) and ReadWatch (the files read under a real
// directory, seen in their access times).
#include "worker/build_inputs.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace {

namespace fs = std::filesystem;

using ::kbisect::testing::TempDir;
using ::testing::ElementsAre;

TEST(BuildInputsTest, NothingKnownMakesEveryPathAnInput) {
  const BuildInputs unknown;
  EXPECT_FALSE(unknown.known());
  EXPECT_TRUE(unknown.IsInput("doc/README.md"));
  EXPECT_EQ(unknown.CountInputs({"a", "b/c"}), 2);
}

TEST(BuildInputsTest, APathIsAnInputWhenItsDirectoryHoldsAFileTheBuildRead) {
  const BuildInputs inputs = BuildInputs::Read({"lib", "third_party/cutlass/include"});
  EXPECT_TRUE(inputs.known());
  EXPECT_TRUE(inputs.IsInput("lib/lz4.c"));
  EXPECT_TRUE(inputs.IsInput("lib/new_file.c")) << "a file added beside the ones read";
  EXPECT_FALSE(inputs.IsInput("lib/dll/example.c")) << "a directory below is its own";
  EXPECT_FALSE(inputs.IsInput("libx/a.c"));
  EXPECT_FALSE(inputs.IsInput("README.md")) << "nothing at the top was read";
  EXPECT_FALSE(inputs.IsInput("tests/fuzz.c"));
  EXPECT_TRUE(inputs.IsInput("third_party/cutlass")) << "a submodule's gitlink above a read file";
  EXPECT_FALSE(inputs.IsInput("third_party/other"));
  EXPECT_EQ(inputs.CountInputs({"lib/a.c", "doc/x.md", "programs/lz4cli.c", "lib/b.h"}), 2);
  EXPECT_TRUE(BuildInputs::Read({""}).IsInput("Makefile")) << "\"\" is the top";
  EXPECT_FALSE(BuildInputs::Read({}).IsInput("lib/a.c")) << "known, and nothing read";
}

TEST(BuildInputsTest, MergingAddsWhatIsKnown) {
  BuildInputs inputs;
  inputs.Merge(BuildInputs());
  EXPECT_FALSE(inputs.known());
  inputs.Merge(BuildInputs::Read({"src"}));
  inputs.Merge(BuildInputs::Read({"include"}));
  inputs.Merge(BuildInputs());
  EXPECT_TRUE(inputs.known());
  EXPECT_THAT(inputs.dirs(), ElementsAre("include", "src"));
}

void Write(const fs::path& path, const std::string& contents) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << contents;
}

void Read(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
}

TEST(ReadWatchTest, SeesTheFilesReadSinceItStartedButNotTheOnesWritten) {
  TempDir tmp("kbisect-read-watch");
  const fs::path top = tmp.Join("checkout");
  Write(top / "lib/lz4.c", "int x;\n");
  Write(top / "lib/lz4.h", "int x;\n");
  Write(top / "doc/README.md", "hello\n");
  Write(top / ".git/config", "[core]\n");
  Write(top / "Makefile", "all:\n");
  Read(top / "lib/lz4.c");  // Read once already, as a checkout's status reads what it wrote.
  // Written just before the watch starts (in the same tick of the file system's clock), as a
  // checkout writes them before the build: read after it started, they count.
  const ReadWatch watch = ReadWatch::Start(top.string(), tmp.Join("stamp"));
  if (!watch.on()) GTEST_SKIP() << "this file system records no reads (noatime)";
  Read(top / "lib/lz4.c");
  Read(top / ".git/config");
  Write(top / "lib/lz4.o", "object");
  Read(top / "lib/lz4.o");
  Write(top / "out/liblz4.a", "archive");
  Read(top / "out/liblz4.a");
  const std::optional<std::set<std::string>> read = watch.DirsRead();
  ASSERT_TRUE(read.has_value());
  EXPECT_THAT(*read, ElementsAre("lib"))
      << "lib/lz4.c was read; .git is git's; out/ holds the build's own outputs";
  EXPECT_FALSE(ReadWatch().on()) << "a watch never started records nothing";
  EXPECT_FALSE(ReadWatch().DirsRead().has_value());
}

TEST(ReadWatchTest, IsOffWhereItsStampCannotBeWritten) {
  TempDir tmp("kbisect-read-watch");
  EXPECT_FALSE(ReadWatch::Start(tmp.path(), tmp.Join("no/such/dir/stamp")).on());
}

}  // namespace
}  // namespace kbisect
