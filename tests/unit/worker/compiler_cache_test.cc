// Copyright 2026 The kbisect Authors.
//
// The host's compiler cache: the symlinks it puts first on a build's PATH, the variables that
// make its hashes independent of the entry's directory, and `ccache --print-stats` parsed.
#include "worker/compiler_cache.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
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

TEST(CompilerCacheTest, ParsesTheLocalAndRemoteStoragesHits) {
  const CompilerCacheStats stats = ParseCompilerCacheStats(
      "direct_cache_hit\t4\nlocal_storage_hit\t1\nremote_storage_hit\t3\n"
      "remote_storage_error\t2\nremote_storage_timeout\t1\ncache_miss\t1\n");
  EXPECT_EQ(stats.hits, 4);
  EXPECT_EQ(stats.local_hits, 1);
  EXPECT_EQ(stats.remote_hits, 3);
  EXPECT_EQ(stats.remote_errors, 3);
}

TEST(CompilerCacheTest, ARemoteIsCheckedAndPassedToCcache) {
  EXPECT_TRUE(CheckCompilerCacheRemoteUrl("redis://cache.example.com:6379").ok());
  EXPECT_TRUE(CheckCompilerCacheRemoteUrl("redis://cache").ok());
  EXPECT_TRUE(CheckCompilerCacheRemoteUrl("http://cache:8080/ccache").ok());
  EXPECT_TRUE(CheckCompilerCacheRemoteUrl("file:///shared/ccache").ok());
  const absl::Status bad = CheckCompilerCacheRemoteUrl("cache:6379");
  EXPECT_THAT(bad.message(), ::testing::HasSubstr("takes redis://HOST[:PORT]"));
  EXPECT_FALSE(CheckCompilerCacheRemoteUrl("redis://").ok());
  EXPECT_FALSE(CheckCompilerCacheRemoteUrl("s3://bucket").ok());

  CompilerCacheRemote remote{"redis://cache:6379", false};
  EXPECT_EQ(remote.StorageValue(), "redis://cache:6379|connect-timeout=500");
  remote.read_only = true;
  EXPECT_EQ(remote.StorageValue(), "redis://cache:6379|connect-timeout=500|read-only=true");

  testing::TempDir tmp("kbisect-compiler-cache");
  const std::string tools = tmp.Join("tools");
  fs::create_directories(tools);
  std::ofstream(tools + "/ccache") << "#!/bin/sh\n";
  fs::permissions(tools + "/ccache", fs::perms::owner_all);
  const std::map<std::string, std::string> env = {{"PATH", tools}};
  std::optional<CompilerCache> cache = CompilerCache::Find(tmp.Join("cache"), env, remote);
  ASSERT_TRUE(cache.has_value());
  EXPECT_EQ(cache->Variables("/src", env)["CCACHE_REMOTE_STORAGE"], remote.StorageValue());
  std::map<std::string, std::string> own = env;
  own["CCACHE_REMOTE_STORAGE"] = "redis://mine";
  EXPECT_EQ(cache->Variables("/src", own).count("CCACHE_REMOTE_STORAGE"), 0u);
  EXPECT_EQ(CompilerCache::Find(tmp.Join("cache"), env)->Variables("/src", env).count(
                "CCACHE_REMOTE_STORAGE"),
            0u);
}

TEST(CompilerCacheTest, AnUnreachableRemoteIsAWarningNamingIt) {
  // A port nothing listens on: bound, then closed.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  const int port = ntohs(address.sin_port);
  // Listening: reached.
  ASSERT_EQ(listen(fd, 1), 0);
  const CompilerCacheRemote open{absl::StrCat("redis://127.0.0.1:", port), false};
  EXPECT_TRUE(ReachCompilerCacheRemote(open, absl::Seconds(1)).ok());
  EXPECT_FALSE(CompilerCacheRemoteWarning(open).has_value());
  close(fd);
  const std::optional<std::string> warning = CompilerCacheRemoteWarning(open);
  ASSERT_TRUE(warning.has_value());
  EXPECT_THAT(*warning, ::testing::HasSubstr(absl::StrCat("127.0.0.1:", port)));
  EXPECT_THAT(*warning, ::testing::HasSubstr("builds compile with the local store only"));
  testing::TempDir tmp("kbisect-compiler-cache");
  EXPECT_TRUE(ReachCompilerCacheRemote({"file://" + tmp.path(), false}, absl::Seconds(1)).ok());
  EXPECT_FALSE(ReachCompilerCacheRemote({"file:///no/such/dir", false}, absl::Seconds(1)).ok());
  EXPECT_FALSE(CompilerCacheRemoteWarning({}).has_value()) << "no remote, no warning";
}

}  // namespace
}  // namespace kbisect
