// Copyright 2026 The kbisect Authors.
//
// RelocateCMakeTrees on real CMake build trees (Ninja and Makefiles generators), copied with
// `cp -a` as the build cache copies an entry.
#include "worker/cmake_relocation.h"

#include <cstdlib>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace {

namespace fs = std::filesystem;
using ::kbisect::testing::ReadFile;
using ::kbisect::testing::TempDir;
using ::kbisect::testing::WriteFile;
using ::testing::HasSubstr;
using ::testing::Not;

int Shell(const std::string& command) { return std::system(command.c_str()); }

class CMakeRelocationTest : public ::testing::Test {
 protected:
  // A configured and built project at `root`/src, its tree in src/build.
  void BuildProject(const std::string& root, const std::string& generator) {
    const std::string src = root + "/src";
    fs::create_directories(src);
    WriteFile(src + "/CMakeLists.txt",
              "cmake_minimum_required(VERSION 3.13)\nproject(p C)\n"
              "add_executable(p main.c other.c)\n");
    WriteFile(src + "/main.c", "int other(void);\nint main(void) { return other(); }\n");
    WriteFile(src + "/other.c", "int other(void) { return 0; }\n");
    ASSERT_EQ(Shell(absl::StrCat("cd ", src, " && cmake -G '", generator,
                                 "' -S . -B build >/dev/null && cmake --build build >/dev/null")),
              0);
  }
  // Copies `from`/src to `to`/src as the build cache does.
  void Copy(const std::string& from, const std::string& to) {
    fs::create_directories(to);
    ASSERT_EQ(Shell(absl::StrCat("cp -a ", from, "/src ", to, "/src")), 0);
  }
  // Builds at `from`, copies to `to` and moves the copy's trees there.
  CMakeRelocation BuildCopyAndMove(const std::string& from, const std::string& to,
                                   const std::string& generator) {
    BuildProject(from, generator);
    Copy(from, to);
    return RelocateCMakeTrees(to + "/src", from + "/", to + "/");
  }
  // What a dry run of the build would do (the generator's own words).
  std::string DryRun(const std::string& root, const std::string& generator) {
    const std::string out = tmp_.Join("dry-run.txt");
    const std::string tool = generator == "Ninja" ? "ninja -n -C build" : "make -n -C build";
    Shell(absl::StrCat("cd ", root, "/src && ", tool, " > ", out, " 2>&1"));
    return ReadFile(out);
  }

  TempDir tmp_;
};

TEST_F(CMakeRelocationTest, AMakefileTreeMovedToAPathOfTheSameLengthHasNothingToRebuild) {
  const std::string a = tmp_.Join("builds/e1");
  const std::string b = tmp_.Join("builds/e2");
  const CMakeRelocation moved = BuildCopyAndMove(a, b, "Unix Makefiles");
  EXPECT_EQ(moved.relocated, 1);
  EXPECT_EQ(moved.removed, 0);
  EXPECT_THAT(ReadFile(b + "/src/build/CMakeCache.txt"),
              HasSubstr(absl::StrCat("CMAKE_CACHEFILE_DIR:INTERNAL=", b, "/src/build\n")));
  EXPECT_THAT(ReadFile(b + "/src/build/Makefile"), Not(HasSubstr(a + "/")));
  const std::string plan = DryRun(b, "Unix Makefiles");
  EXPECT_THAT(plan, Not(HasSubstr("main.c")));
  EXPECT_THAT(plan, Not(HasSubstr("other.c")));
  EXPECT_THAT(plan, Not(HasSubstr(a + "/")));
}

TEST_F(CMakeRelocationTest, ANinjaTreeMovedToAPathOfTheSameLengthBuildsInItsNewPlace) {
  const std::string a = tmp_.Join("builds/e1");
  const std::string b = tmp_.Join("builds/e2");
  EXPECT_EQ(BuildCopyAndMove(a, b, "Ninja").relocated, 1);
  EXPECT_THAT(ReadFile(b + "/src/build/build.ninja"), Not(HasSubstr(a + "/")));
  // Ninja's log keeps a hash of each command, which names the old path: it compiles both files
  // again (through the compiler cache), but in the new tree, without configuring again.
  EXPECT_THAT(DryRun(b, "Ninja"), Not(HasSubstr(a + "/")));
  ASSERT_EQ(Shell(absl::StrCat("cd ", b, "/src && cmake --build build >/dev/null")), 0);
  EXPECT_THAT(DryRun(b, "Ninja"), HasSubstr("no work to do"));
}

TEST_F(CMakeRelocationTest, AMakefileTreeMovedToALongerPathRebuildsOnlyWhatChanged) {
  const std::string a = tmp_.Join("builds/e1");
  const std::string b = tmp_.Join("builds/e10");
  const CMakeRelocation moved = BuildCopyAndMove(a, b, "Unix Makefiles");
  EXPECT_EQ(moved.relocated, 1);
  WriteFile(b + "/src/main.c", "int other(void);\nint main(void) { return other() + 1; }\n");
  const std::string plan = DryRun(b, "Unix Makefiles");
  EXPECT_THAT(plan, HasSubstr("main.c"));
  EXPECT_THAT(plan, Not(HasSubstr("other.c")));
  EXPECT_THAT(plan, Not(HasSubstr(a + "/")));
  ASSERT_EQ(Shell(absl::StrCat("cd ", b, "/src && cmake --build build >/dev/null")), 0);
  EXPECT_TRUE(fs::exists(b + "/src/build/p"));
}

TEST_F(CMakeRelocationTest, ANinjaTreeMovedToALongerPathLosesItsDepsLogOnly) {
  const std::string a = tmp_.Join("builds/e1");
  const std::string b = tmp_.Join("builds/e10");
  EXPECT_EQ(BuildCopyAndMove(a, b, "Ninja").relocated, 1);
  EXPECT_FALSE(fs::exists(b + "/src/build/.ninja_deps"));
  ASSERT_EQ(Shell(absl::StrCat("cd ", b, "/src && cmake --build build >/dev/null")), 0);
  EXPECT_THAT(ReadFile(b + "/src/build/CMakeCache.txt"), Not(HasSubstr(a + "/")));
}

TEST_F(CMakeRelocationTest, ATreeConfiguredOutsideTheOldEntryIsRemoved) {
  const std::string a = tmp_.Join("elsewhere/e1");
  const std::string b = tmp_.Join("builds/e2");
  BuildProject(a, "Ninja");
  Copy(a, b);
  const CMakeRelocation moved =
      RelocateCMakeTrees(b + "/src", tmp_.Join("builds/e1") + "/", b + "/");
  EXPECT_EQ(moved.relocated, 0);
  EXPECT_EQ(moved.removed, 1);
  EXPECT_FALSE(fs::exists(b + "/src/build"));
  EXPECT_TRUE(fs::exists(a + "/src/build/CMakeCache.txt")) << "the original is untouched";
}

}  // namespace
}  // namespace kbisect
