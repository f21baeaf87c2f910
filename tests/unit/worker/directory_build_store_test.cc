// Copyright 2026 The kbisect Authors.
//
// DirectoryBuildStore on real directories with the real `tar`: a build published by one entry
// and fetched into another keeps its files' times; two publishers of one key leave one build; a
// partial or corrupt archive is a miss that leaves nothing behind; and the key, the transfer
// rule, the startup warning, the toolchain's identity and the host's counters.
#include "worker/build_store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/git_fixture.h"
#include "tests/testing/process.h"
#include "worker/build_key.h"

namespace kbisect {
namespace {

namespace fs = std::filesystem;

using ::kbisect::testing::ReadFile;
using ::kbisect::testing::TempDir;
using ::kbisect::testing::WriteFile;
using ::testing::HasSubstr;

class BuildStoreTest : public ::testing::Test {
 protected:
  BuildStoreTest() : runner_(NewSubprocessRunner()) { fs::create_directories(StoreDir()); }

  std::string StoreDir() const { return tmp_.Join("store"); }

  // Makes an entry at `dir`: a checkout (src/ with a .git and a source) whose build output is
  // newer than its source, and a layer; returns the entry's directory.
  std::string MakeEntry(const std::string& name) const {
    const std::string entry = tmp_.Join(name);
    fs::create_directories(entry + "/src/.git");
    fs::create_directories(entry + "/src/build");
    fs::create_directories(entry + "/layer/bin");
    WriteFile(entry + "/src/.git/HEAD", "0123\n");
    WriteFile(entry + "/src/main.c", "int main() { return 0; }\n");
    WriteFile(entry + "/src/build/main.o", "object of " + entry + "\n");
    WriteFile(entry + "/layer/bin/activate", "VIRTUAL_ENV=" + entry + "/layer\n");
    const auto old = fs::file_time_type::clock::now() - std::chrono::hours(2);
    fs::last_write_time(entry + "/src/main.c", old);
    fs::last_write_time(entry + "/src/build/main.o", old + std::chrono::minutes(1));
    return entry;
  }

  static BuildStoreKey Key(const std::string& command, const std::string& hardware_class = "h1") {
    BuildKey build{"tree0", command, {}, 0};
    return BuildStoreKey{build.Text(), hardware_class, "cc /usr/bin/gcc 1 2\n"};
  }

  static StoredBuild Facts(const std::string& entry) {
    StoredBuild build;
    build.commit = "c0ffee";
    build.repository = "/repo";
    build.build_wall = absl::Seconds(30);
    build.build_cpu = absl::Seconds(50);
    build.entry_dir = entry;
    build.inputs = BuildInputs::Read({"main.c"}, {"README"});
    return build;
  }

  // The directory the store keeps `key`'s build in.
  std::string KeyDir(const BuildStoreKey& key) const {
    return absl::StrCat(StoreDir(), "/", key.Digest().substr(0, 2), "/", key.Digest());
  }

  // The names in the store's top directory that start with ".tmp-".
  std::vector<std::string> Leftovers() const {
    std::vector<std::string> names;
    for (const auto& it : fs::directory_iterator(StoreDir())) {
      if (it.path().filename().string().rfind(".tmp-", 0) == 0) {
        names.push_back(it.path().filename().string());
      }
    }
    return names;
  }

  TempDir tmp_{"kbisect-build-store"};
  std::unique_ptr<CommandRunner> runner_;
};

TEST_F(BuildStoreTest, AFetchedBuildHasThePublishedFilesWithTheirTimes) {
  DirectoryBuildStore store(StoreDir(), runner_.get());
  ASSERT_TRUE(store.Check().ok());
  const std::string from = MakeEntry("e0");
  const BuildStoreKey key = Key("make");
  EXPECT_TRUE(absl::IsNotFound(store.Look(key).status())) << "nothing published yet";
  ASSERT_TRUE(store.Publish(key, from, Facts(from)).ok());
  EXPECT_TRUE(Leftovers().empty());

  const std::string to = tmp_.Join("other-host/e3");
  fs::create_directories(to + "/src");
  WriteFile(to + "/src/stale.txt", "from an earlier build of the entry");
  absl::StatusOr<StoredBuild> fetched = store.Fetch(key, to);
  ASSERT_TRUE(fetched.ok()) << fetched.status();
  EXPECT_EQ(fetched->key_text, key.Text());
  EXPECT_EQ(fetched->commit, "c0ffee");
  EXPECT_EQ(fetched->repository, "/repo");
  EXPECT_EQ(fetched->build_wall, absl::Seconds(30));
  EXPECT_EQ(fetched->build_cpu, absl::Seconds(50));
  EXPECT_EQ(fetched->entry_dir, from);
  EXPECT_FALSE(fetched->host.empty());
  EXPECT_GT(fetched->archive_bytes, 0);
  EXPECT_EQ(fetched->inputs.read(), std::set<std::string>{"main.c"});
  EXPECT_FALSE(fs::exists(to + "/src/stale.txt")) << "the entry's checkout is replaced";
  EXPECT_EQ(ReadFile(to + "/src/build/main.o"), "object of " + from + "\n")
      << "paths are the publisher's until the cache relocates them";
  EXPECT_EQ(ReadFile(to + "/layer/bin/activate"), ReadFile(from + "/layer/bin/activate"));
  EXPECT_TRUE(fs::exists(to + "/src/.git/HEAD"));
  for (const char* file : {"/src/main.c", "/src/build/main.o"}) {
    EXPECT_EQ(fs::last_write_time(to + file), fs::last_write_time(from + file)) << file;
  }
  EXPECT_GT(fs::last_write_time(to + "/src/build/main.o"), fs::last_write_time(to + "/src/main.c"))
      << "make sees the output newer than its source";
  EXPECT_GT(store.Throughput(), 0) << "measured by the transfers";
}

TEST_F(BuildStoreTest, OfTwoPublishersOfOneKeyOneWinsAndTheOtherLosesHarmlessly) {
  DirectoryBuildStore store(StoreDir(), runner_.get());
  const std::string a = MakeEntry("host-a-e0");
  const std::string b = MakeEntry("host-b-e5");
  const BuildStoreKey key = Key("make");
  absl::Status published_a, published_b;
  std::thread first([&] { published_a = store.Publish(key, a, Facts(a)); });
  std::thread second([&] { published_b = store.Publish(key, b, Facts(b)); });
  first.join();
  second.join();
  EXPECT_NE(published_a.ok(), published_b.ok()) << published_a << " / " << published_b;
  const absl::Status& lost = published_a.ok() ? published_b : published_a;
  EXPECT_TRUE(absl::IsAlreadyExists(lost)) << lost;
  EXPECT_TRUE(Leftovers().empty()) << "the loser's temporary directory is gone";
  absl::StatusOr<StoredBuild> stored = store.Look(key);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->entry_dir, published_a.ok() ? a : b) << "the winner's build, whole";
  EXPECT_TRUE(absl::IsAlreadyExists(store.Publish(key, a, Facts(a))));
}

TEST_F(BuildStoreTest, APartialOrCorruptArchiveIsAMissThatLeavesNothing) {
  DirectoryBuildStore store(StoreDir(), runner_.get());
  const std::string from = MakeEntry("e0");
  const BuildStoreKey key = Key("make");
  ASSERT_TRUE(store.Publish(key, from, Facts(from)).ok());
  const std::string archive = KeyDir(key) + "/build.tar";
  const uintmax_t size = fs::file_size(archive);
  const std::string to = tmp_.Join("e1");

  fs::resize_file(archive, size / 2);  // A copy cut short.
  absl::StatusOr<StoredBuild> partial = store.Fetch(key, to);
  EXPECT_TRUE(absl::IsDataLoss(partial.status())) << partial.status();

  WriteFile(archive, std::string(size, 'x'));  // The right size, but not an archive.
  absl::StatusOr<StoredBuild> corrupt = store.Fetch(key, to);
  EXPECT_TRUE(absl::IsDataLoss(corrupt.status())) << corrupt.status();
  EXPECT_FALSE(fs::exists(to + "/src"));
  EXPECT_FALSE(fs::exists(to + "/layer"));

  // A manifest that names another key (a digest collision) is a miss.
  const BuildStoreKey other = Key("make -j2");
  fs::create_directories(KeyDir(other));
  fs::copy_file(KeyDir(key) + "/manifest.json", KeyDir(other) + "/manifest.json");
  EXPECT_TRUE(absl::IsNotFound(store.Look(other).status()));
}

TEST_F(BuildStoreTest, TheKeyChangesWithTheHardwareClassTheCommandAndTheToolchain) {
  const BuildStoreKey key = Key("make");
  EXPECT_EQ(key.Digest(), Key("make").Digest());
  EXPECT_EQ(key.Digest().size(), 32u);
  EXPECT_NE(key.Digest(), Key("make", "h2").Digest()) << "another hardware class";
  EXPECT_NE(key.Digest(), Key("make -j2").Digest()) << "another command";
  BuildStoreKey other_compiler = key;
  other_compiler.toolchain = "cc /usr/bin/gcc 1 3\n";
  EXPECT_NE(key.Digest(), other_compiler.Digest());
  // Fields cannot imitate each other's split.
  EXPECT_NE((BuildStoreKey{"ab", "c", ""}).Text(), (BuildStoreKey{"a", "bc", ""}).Text());
}

TEST_F(BuildStoreTest, TheToolchainIsTheCompilersOnThePathWithTheirSizesAndTimes) {
  const std::string bin = tmp_.Join("bin");
  fs::create_directories(bin);
  WriteFile(bin + "/gcc", "#!/bin/sh\n");
  fs::permissions(bin + "/gcc", fs::perms::owner_all);
  fs::create_symlink(bin + "/gcc", bin + "/cc");
  const std::map<std::string, std::string> env = {{"PATH", bin}};
  const std::string identity = ToolchainIdentity(env);
  EXPECT_THAT(identity, HasSubstr(absl::StrCat("cc ", bin, "/gcc 10 ")))
      << "cc resolved through its link";
  EXPECT_THAT(identity, HasSubstr("nvcc -\n")) << "none on the PATH";
  EXPECT_EQ(ToolchainIdentity(env), identity);
  WriteFile(bin + "/gcc", "#!/bin/sh\n# upgraded\n");
  EXPECT_NE(ToolchainIdentity(env), identity);
}

TEST(BuildStoreTransferPaysTest, OnlyBuildsThatCostMoreThanTwiceTheirTransferOverASecond) {
  constexpr double kMiBps = 1 << 20;
  EXPECT_FALSE(BuildStoreTransferPays(absl::Milliseconds(900), 1, 100 * kMiBps)) << "the floor";
  EXPECT_TRUE(BuildStoreTransferPays(absl::Seconds(1), 1 << 20, 100 * kMiBps));
  // 200 MiB at 100 MiB/s: 2 s to move, so the build must take 4 s.
  EXPECT_FALSE(BuildStoreTransferPays(absl::Seconds(3), 200 << 20, 100 * kMiBps));
  EXPECT_TRUE(BuildStoreTransferPays(absl::Seconds(4), 200 << 20, 100 * kMiBps));
  EXPECT_FALSE(BuildStoreTransferPays(absl::Hours(1), 1, 0)) << "a store that cannot be used";
}

TEST_F(BuildStoreTest, AMissingOrReadOnlyStoreIsAWarningAndAMiss) {
  EXPECT_FALSE(BuildStoreWarning("").has_value()) << "no store, no warning";
  EXPECT_FALSE(BuildStoreWarning(StoreDir()).has_value());
  const std::string missing = tmp_.Join("not-mounted");
  const std::optional<std::string> warning = BuildStoreWarning(missing);
  ASSERT_TRUE(warning.has_value());
  EXPECT_THAT(*warning, HasSubstr(absl::StrCat("the build store ", missing, " does not exist")));
  EXPECT_THAT(*warning, HasSubstr("builds go on without it"));
  DirectoryBuildStore store(missing, runner_.get());
  EXPECT_TRUE(absl::IsNotFound(store.Look(Key("make")).status()));
  const std::string entry = MakeEntry("e0");
  EXPECT_FALSE(store.Publish(Key("make"), entry, Facts(entry)).ok());
  EXPECT_EQ(store.Throughput(), 0);
  if (geteuid() != 0) {  // root writes anywhere
    fs::permissions(StoreDir(), fs::perms::owner_read | fs::perms::owner_exec);
    EXPECT_THAT(BuildStoreWarning(StoreDir()).value_or(""), HasSubstr("cannot be written"));
    fs::permissions(StoreDir(), fs::perms::owner_all);
  }
}

TEST_F(BuildStoreTest, TheHostsCountersAddUp) {
  const std::string cache = tmp_.Join("cache");
  EXPECT_EQ(BuildStoreCounters::Read(cache).fetches, 0);
  BuildStoreCounters fetch;
  fetch.fetches = 1;
  fetch.fetched_bytes = 100;
  BuildStoreCounters::Add(cache, fetch);
  BuildStoreCounters::Add(cache, fetch);
  BuildStoreCounters publish;
  publish.publishes = 1;
  publish.published_bytes = 7;
  BuildStoreCounters::Add(cache, publish);
  const BuildStoreCounters counted = BuildStoreCounters::Read(cache);
  EXPECT_EQ(counted.fetches, 2);
  EXPECT_EQ(counted.fetched_bytes, 200);
  EXPECT_EQ(counted.publishes, 1);
  EXPECT_EQ(counted.published_bytes, 7);
}

}  // namespace
}  // namespace kbisect
