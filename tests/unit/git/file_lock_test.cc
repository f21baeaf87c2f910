// Copyright 2026 The kbisect Authors.
//
// FileLock's exclusive and shared modes between holders of one process (each holder its own file
// description, exactly as between processes).
#include "common/git/file_lock.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace {

using ::kbisect::testing::TempDir;
using ::testing::HasSubstr;

TEST(FileLockTest, SharedHoldersCoexistAndExcludeAnExclusiveOne) {
  TempDir tmp("kbisect-file-lock");
  const std::string path = tmp.Join("entry.lock");
  auto first = FileLock::TryAcquireShared(path, "a reader");
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = FileLock::TryAcquireShared(path, "a reader");
  ASSERT_TRUE(second.ok()) << second.status();
  auto exclusive = FileLock::TryAcquire(path, "a reader");
  EXPECT_EQ(exclusive.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(exclusive.status().message(), HasSubstr("locked by a reader"));
  first->reset();
  EXPECT_FALSE(FileLock::TryAcquire(path, "a reader").ok()) << "one reader is left";
  second->reset();
  EXPECT_TRUE(FileLock::TryAcquire(path, "a reader").ok()) << "no reader is left";
}

TEST(FileLockTest, AnExclusiveHolderExcludesSharedOnesUntilItDowngrades) {
  TempDir tmp("kbisect-file-lock");
  const std::string path = tmp.Join("entry.lock");
  auto writer = FileLock::TryAcquire(path, "a builder");
  ASSERT_TRUE(writer.ok()) << writer.status();
  EXPECT_EQ(FileLock::TryAcquireShared(path, "a builder").status().code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE((*writer)->Downgrade().ok());
  EXPECT_TRUE(FileLock::TryAcquireShared(path, "a builder").ok()) << "readers may join";
  EXPECT_FALSE(FileLock::TryAcquire(path, "a builder").ok()) << "the downgraded lock is held";
}

}  // namespace
}  // namespace kbisect
