// Copyright 2026 The kbisect Authors.
//
// Prints the per-class precision and recall of `kbisect nightly` / `kbisect triage` over the
// labelled set of synthetic histories (tests/testing/labelled_histories.h), every mistake, and
// the figures per family. docs/benchmarks.md quotes the table.
#include <iostream>
#include <map>
#include <utility>

#include "absl/strings/str_format.h"
#include "tests/testing/labelled_histories.h"
#include "triage/triage.h"

int main() {
  using kbisect::testing::LabelledHistory;
  const std::vector<LabelledHistory> set = kbisect::testing::MakeLabelledSet();
  const kbisect::testing::SetFigures figures = kbisect::testing::Evaluate(set);
  std::cout << set.size() << " labelled histories\n\n" << kbisect::testing::FormatFigures(figures);
  std::map<std::string, std::pair<int, int>> families;  // family -> (correct, total)
  for (const LabelledHistory& h : set) {
    auto& f = families[h.family];
    ++f.second;
    if (kbisect::testing::ClassifyLabelled(h) == h.label) ++f.first;
  }
  std::cout << "\n| family | label | correct |\n|---|---|---|\n";
  for (const auto& [family, f] : families) {
    for (const LabelledHistory& h : set) {
      if (h.family != family) continue;
      std::cout << absl::StrFormat("| %s | %s | %d/%d |\n", family,
                                   kbisect::triage::CauseName(h.label), f.first, f.second);
      break;
    }
  }
  for (const std::string& m : figures.mistakes) std::cout << "mistake: " << m << "\n";

  const std::vector<LabelledHistory> hard = kbisect::testing::MakeHardSet();
  const kbisect::testing::SetFigures hard_figures = kbisect::testing::Evaluate(hard);
  std::cout << "\nHarder set (outside the targets): " << hard.size() << " histories\n\n"
            << kbisect::testing::FormatFigures(hard_figures);
  for (const std::string& m : hard_figures.mistakes) std::cout << "mistake: " << m << "\n";
  return 0;
}
