// Copyright 2026 The kbisect Authors.
//
// The host's compiler cache: the symlinks it puts first on a build's PATH, the variables that
// make its hashes independent of the entry's directory, and `ccache --print-stats` parsed.
#include "worker/compiler_cache.h"

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace {

namespace fs = std::filesystem;

TEST(CompilerCacheTest, LinksTheCompilersOnPathAndSetsItsVariables) {
  testing::TempDir tmp("kbisect-compiler-cache");
  // A PATH of our own: a ccache and one compiler, gcc.
  const std::string tools = tmp.Join("tools");
  fs::create_directories(tools);
  for (const char* name : {"ccache", "gcc"}) {
    const std::string path = tools + "/" + name;
    std::ofstream(path) << "#!/bin/sh\n";
    fs::permissions(path, fs::perms::owner_all);
  }
  const std::map<std::string, std::string> env = {{"PATH", tools}};
  std::optional<CompilerCache> cache = CompilerCache::Find(tmp.Join("cache"), env);
  ASSERT_TRUE(cache.has_value());
  const std::string bin = tmp.Join("cache") + "/compiler-cache/bin";
  EXPECT_EQ(fs::read_symlink(bin + "/gcc"), fs::path(tools + "/ccache"));
  EXPECT_FALSE(fs::exists(fs::symlink_status(bin + "/clang"))) << "no clang on PATH";
  EXPECT_TRUE(fs::exists(tmp.Join("cache") + "/compiler-cache/store/ccache.conf"));

  std::map<std::string, std::string> vars = cache->Variables("/builds/e3/src", env);
  EXPECT_EQ(vars["PATH"], bin + ":" + tools);
  EXPECT_EQ(vars["CCACHE_DIR"], tmp.Join("cache") + "/compiler-cache/store");
  EXPECT_EQ(vars["CCACHE_BASEDIR"], "/builds/e3/src");
  EXPECT_EQ(vars["CCACHE_NOHASHDIR"], "1");
  EXPECT_EQ(vars["CCACHE_DEPEND"], "1");
  std::map<std::string, std::string> own = env;
  own["CCACHE_DIR"] = "/mine";
  EXPECT_EQ(cache->Variables("/x", own).count("CCACHE_DIR"), 0u) << "the user's store is kept";

  // A second look (another slot) finds the links in place; a compiler gone loses its link.
  fs::remove(tools + "/gcc");
  ASSERT_TRUE(CompilerCache::Find(tmp.Join("cache"), env).has_value());
  EXPECT_FALSE(fs::exists(fs::symlink_status(bin + "/gcc")));
}

TEST(CompilerCacheTest, WithoutCcacheThereIsNone) {
  testing::TempDir tmp("kbisect-compiler-cache");
  EXPECT_FALSE(CompilerCache::Find(tmp.Join("cache"), {{"PATH", tmp.Join("empty")}}).has_value());
}

TEST(CompilerCacheTest, ParsesPrintStats) {
  const CompilerCacheStats stats = ParseCompilerCacheStats(
      "cache_miss\t3\ncache_size_kibibyte\t12\ndirect_cache_hit\t5\n"
      "files_in_cache\t7\npreprocessed_cache_hit\t2\nnot a stat line\n");
  EXPECT_EQ(stats.hits, 7);
  EXPECT_EQ(stats.misses, 3);
  EXPECT_EQ(stats.size_bytes, 12 * 1024);
  EXPECT_EQ(stats.files, 7);
  EXPECT_DOUBLE_EQ(stats.HitRate(), 0.7);
  EXPECT_DOUBLE_EQ(CompilerCacheStats().HitRate(), 0.0);
}

}  // namespace
}  // namespace kbisect
