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

TEST(BuildInputsTest, APathIsAnInputWhenABuildReadItOrItAppearedBesideTheFilesRead) {
  const BuildInputs inputs = BuildInputs::Read(
      {"Makefile.inc", "lib/lz4.c", "lib/lz4.h", "third_party/cutlass/include/a.h"},
      {"README.md", "lib/README.md", "doc/manual.md", "third_party/x.txt"});
  EXPECT_TRUE(inputs.known());
  EXPECT_TRUE(inputs.IsInput("lib/lz4.c"));
  EXPECT_TRUE(inputs.IsInput("Makefile.inc")) << "read at the top";
  EXPECT_FALSE(inputs.IsInput("README.md")) << "seen beside it, never read";
  EXPECT_FALSE(inputs.IsInput("lib/README.md"));
  EXPECT_TRUE(inputs.IsInput("lib/new_file.c")) << "a file no build saw, beside the files read";
  EXPECT_TRUE(inputs.IsInput("NEWS")) << "so is one at the top";
  EXPECT_FALSE(inputs.IsInput("lib/dll/example.c")) << "a directory below is its own";
  EXPECT_FALSE(inputs.IsInput("tests/fuzz.c")) << "no file read in tests/";
  EXPECT_FALSE(inputs.IsInput("doc/manual.md"));
  EXPECT_TRUE(inputs.IsInput("third_party/cutlass")) << "a submodule's gitlink above a read file";
  EXPECT_FALSE(inputs.IsInput("third_party/other"));
  EXPECT_EQ(inputs.CountInputs({"lib/lz4.c", "doc/x.md", "programs/lz4cli.c", "lib/lz4.h"}), 2);
  EXPECT_THAT(inputs.unread(), ElementsAre("README.md", "lib/README.md"))
      << "only what lies beside the files read is kept";
  EXPECT_FALSE(BuildInputs::Read({}, {}).IsInput("lib/a.c")) << "known, and nothing read";
}

TEST(BuildInputsTest, MergingAddsWhatIsKnownAndAFileEitherReadIsRead) {
  BuildInputs inputs;
  inputs.Merge(BuildInputs());
  EXPECT_FALSE(inputs.known());
  // A fresh build read lib/a.c and lib/b.c; an incremental one after it only lib/b.c.
  inputs.Merge(BuildInputs::Read({"lib/a.c", "lib/b.c"}, {"lib/README"}));
  inputs.Merge(BuildInputs::Read({"lib/b.c"}, {"lib/a.c", "lib/README"}));
  inputs.Merge(BuildInputs());
  EXPECT_TRUE(inputs.known());
  EXPECT_THAT(inputs.read(), ElementsAre("lib/a.c", "lib/b.c"));
  EXPECT_THAT(inputs.unread(), ElementsAre("lib/README"));
  EXPECT_TRUE(inputs.IsInput("lib/a.c"));
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
  const std::optional<BuildInputs> reads = watch.Reads();
  ASSERT_TRUE(reads.has_value());
  EXPECT_THAT(reads->read(), ElementsAre("lib/lz4.c"))
      << ".git is git's; lib/lz4.o and out/ are the build's own outputs";
  EXPECT_THAT(reads->unread(), ElementsAre("lib/lz4.h")) << "doc/ and the top hold no file read";
  EXPECT_FALSE(ReadWatch().on()) << "a watch never started records nothing";
  EXPECT_FALSE(ReadWatch().Reads().has_value());
}

TEST(ReadWatchTest, IsOffWhereItsStampCannotBeWritten) {
  TempDir tmp("kbisect-read-watch");
  EXPECT_FALSE(ReadWatch::Start(tmp.path(), tmp.Join("no/such/dir/stamp")).on());
}

}  // namespace
}  // namespace kbisect
