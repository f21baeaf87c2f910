// Copyright 2026 The kbisect Authors.
#include "common/text/count.h"

#include "gtest/gtest.h"

namespace kbisect {
namespace {

TEST(CountTest, OneIsSingularEverythingElsePlural) {
  EXPECT_EQ(Count(3, "probe"), "3 probes");
  EXPECT_EQ(Count(1, "probe"), "1 probe");
  EXPECT_EQ(Count(0, "probe"), "0 probes");
  EXPECT_EQ(Count(-1, "probe"), "-1 probes");
  EXPECT_EQ(Count(1, "bench run"), "1 bench run");
  EXPECT_EQ(Count(2, "bench run"), "2 bench runs");
}

TEST(CountTest, IrregularPluralsAreGiven) {
  EXPECT_EQ(Count(1, "nightly", "nightlies"), "1 nightly");
  EXPECT_EQ(Count(4, "nightly", "nightlies"), "4 nightlies");
  EXPECT_EQ(Noun(2, "was", "were"), "were");
  EXPECT_EQ(Noun(1, "probe"), "probe");
}

}  // namespace
}  // namespace kbisect
