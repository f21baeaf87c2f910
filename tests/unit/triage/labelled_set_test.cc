// Copyright 2026 The kbisect Authors.
//
// The labelled set (tests/testing/labelled_histories.h): every cause classified with precision
// and recall of at least 0.95. Prints the table docs/benchmarks.md quotes.
#include <iostream>
#include <set>

#include "gtest/gtest.h"
#include "tests/testing/labelled_histories.h"
#include "triage/triage.h"

namespace kbisect {
namespace {

TEST(LabelledSetTest, EveryCauseAtLeast95PercentPrecisionAndRecall) {
  const std::vector<testing::LabelledHistory> set = testing::MakeLabelledSet();
  ASSERT_GE(set.size(), 60u);
  std::set<std::string> families;
  for (const testing::LabelledHistory& h : set) families.insert(h.family);
  EXPECT_GE(families.size(), 12u);
  const testing::SetFigures figures = testing::Evaluate(set);
  std::cout << testing::FormatFigures(figures);
  for (const std::string& m : figures.mistakes) std::cout << "  mistake: " << m << "\n";
  for (const auto& [cause, c] : figures.by_class) {
    EXPECT_GE(c.support, 12) << triage::CauseName(cause);
    EXPECT_GE(c.precision(), 0.95) << triage::CauseName(cause);
    EXPECT_GE(c.recall(), 0.95) << triage::CauseName(cause);
  }
}

}  // namespace
}  // namespace kbisect
