// Copyright 2026 The kbisect Authors.
//
// IdMinter: the prefix, the salt and a counter shared by every prefix.
#include "coordinator/id_minter.h"

#include <set>
#include <string>

#include "gtest/gtest.h"

namespace kbisect {
namespace {

TEST(IdMinterTest, IdsCarryThePrefixTheSaltAndOneCounterOverEveryPrefix) {
  IdMinter ids("abc123");
  EXPECT_EQ(ids.Next("job-"), "job-abc123-1");
  EXPECT_EQ(ids.Next("lease-"), "lease-abc123-2");
  EXPECT_EQ(ids.Next("job-"), "job-abc123-3");
}

TEST(IdMinterTest, ARestartedCoordinatorCountsAgainUnderAnotherSalt) {
  IdMinter before("000001");
  IdMinter after("000002");
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    EXPECT_TRUE(seen.insert(before.Next("lease-")).second);
    EXPECT_TRUE(seen.insert(after.Next("lease-")).second);
  }
}

TEST(IdMinterTest, TheDrawnSaltIsSixHexDigits) {
  const std::string salt = IdMinter().salt();
  ASSERT_EQ(salt.size(), 6u);
  EXPECT_EQ(salt.find_first_not_of("0123456789abcdef"), std::string::npos) << salt;
}

}  // namespace
}  // namespace kbisect
