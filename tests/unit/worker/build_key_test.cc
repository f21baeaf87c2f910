// Copyright 2026 The kbisect Authors.
#include "worker/build_key.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

TEST(BuildKeyTest, EveryFieldCountsAndNoFieldCanImitateAnother) {
  const BuildKey key{"4b825dc642cb6eb9a060e54bf8d69288fbee4904", "make -j8", {{"OPT", "1"}}};
  BuildKey other_tree = key;
  other_tree.tree = "0000000000000000000000000000000000000000";
  BuildKey other_command = key;
  other_command.command = "make -j4";
  BuildKey other_value = key;
  other_value.env["OPT"] = "2";
  BuildKey no_env = key;
  no_env.env.clear();
  // The command swallowing what the environment said, byte for byte, is still another key.
  BuildKey imitation = no_env;
  imitation.command = key.command + "\n" + key.Text().substr(key.Text().find("env-name"));
  for (const BuildKey* changed : {&other_tree, &other_command, &other_value, &no_env, &imitation}) {
    EXPECT_NE(changed->Text(), key.Text());
    EXPECT_NE(changed->Digest(), key.Digest());
  }
  EXPECT_EQ((BuildKey{key.tree, key.command, {{"OPT", "1"}}}).Digest(), key.Digest());
  // A build made in a layer of its own is not one made without.
  BuildKey no_layer = key;
  no_layer.isolation = 3;
  EXPECT_NE(no_layer.Digest(), key.Digest());
}

TEST(BuildKeyTest, TheDigestIsStableAndFileNameSafe) {
  const BuildKey key{"4b825dc642cb6eb9a060e54bf8d69288fbee4904", "make", {}};
  EXPECT_THAT(key.Digest(), ::testing::MatchesRegex("[0-9a-f]{32}"));
  // Entries written by one build of kbisect are found by the next: the digest changes only with
  // the key's version (2: builds in layers of their own, the isolation in the key).
  EXPECT_EQ(key.Digest(), "2f79697909f9ed0728ba9e9fba3e08a9");
}

}  // namespace
}  // namespace kbisect
