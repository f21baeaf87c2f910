// Copyright 2026 The kbisect Authors.
//
// Prints the per-class precision and recall of `kbisect nightly` / `kbisect triage` over the
// labelled set of synthetic histories (tests/testing/labelled_histories.h), every mistake, and
// the figures per family. docs/benchmarks.md quotes the table.
#include <iostream>
#include <map>
#include <random>
#include <utility>

#include "absl/strings/str_format.h"
#include "tests/testing/labelled_histories.h"
#include "triage/nightly.h"
#include "triage/triage.h"

namespace {

using kbisect::triage::History;
using kbisect::triage::NightlyAction;
using kbisect::triage::NightlyDecision;

// What replaying one series night by night did: the night of its first submission (-1: none)
// and whether that submission's window held the step.
struct Replay {
  int submitted_on = -1;
  bool right_window = false;
};

// Replays `values` (one per night, the step at night `step`) through DecideNightly night by
// night, the way a CI job calls `kbisect nightly`, until the first submission.
Replay ReplayNights(const std::vector<double>& values, int step) {
  const History all = kbisect::testing::PlainNightlies(values);
  History h;
  Replay replay;
  for (int night = 0; night < static_cast<int>(all.nightlies.size()); ++night) {
    kbisect::triage::AddNightly(&h, all.nightlies[night]);
    absl::StatusOr<NightlyDecision> d = kbisect::triage::DecideNightly(h, "bench", "gpu", {},
                                                                       nullptr, {});
    if (!d.ok() || d->action != NightlyAction::kSubmitBisect) continue;
    replay.submitted_on = night;
    replay.right_window = d->triage.last_good->index == step - 1 && d->triage.first_bad->index == step;
    break;
  }
  return replay;
}

// Night-by-night replays of regression steps (10-30% under 0.1-1% uniform scatter, at night
// 8-40 of 48): how many were submitted, how many of those named a window without the step, and
// how many nights after the step the submission came.
void PrintNightByNightReplay() {
  std::mt19937_64 rng(20261206);
  std::uniform_real_distribution<double> unit(0, 1);
  int series = 0, submitted = 0, wrong = 0;
  std::map<int, int> delays;  // nights after the step -> submissions
  for (int i = 0; i < 400; ++i) {
    const int step = 8 + static_cast<int>(unit(rng) * 33);
    const double factor = 1.10 + 0.20 * unit(rng);
    const double noise = 0.001 + 0.009 * unit(rng);
    std::vector<double> values;
    for (int night = 0; night < 48; ++night) {
      values.push_back(2.0 * (night >= step ? factor : 1.0) * (1 + (2 * unit(rng) - 1) * noise));
    }
    const Replay r = ReplayNights(values, step);
    ++series;
    if (r.submitted_on < 0) continue;
    ++submitted;
    if (!r.right_window) ++wrong;
    ++delays[r.submitted_on - step];
  }
  std::cout << absl::StrFormat(
      "\nNight by night: %d steps of 10-30%% under 0.1-1%% scatter, replayed one night at a time\n"
      "submitted %d, wrong window %d\n| nights after the step | submissions |\n|---|---|\n",
      series, submitted, wrong);
  for (const auto& [delay, count] : delays) {
    std::cout << absl::StrFormat("| %d | %d |\n", delay, count);
  }
}

}  // namespace

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
  PrintNightByNightReplay();
  return 0;
}
