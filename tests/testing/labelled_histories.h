// Copyright 2026 The kbisect Authors.
//
// A labelled set of synthetic nightly histories for measuring `kbisect nightly` / `kbisect
// triage` classification: real regressions (steps, drifts, with missing nights), benchmark
// method changes (a harness file or an autotune flag changed in the manifest; Helion's speedup
// moving while its independent timer stays flat), hardware issues (runner swaps, driver changes,
// thermal throttling, baselines moving too) and noise (spikes, bimodal scatter, plain scatter,
// schema drift). Half are plain JSON-lines nightlies with manifests, the rest shaped like the
// Helion dashboard (speedup, baselines, latency). Deterministic: the same set every time.
#ifndef KBISECT_TESTS_TESTING_LABELLED_HISTORIES_H_
#define KBISECT_TESTS_TESTING_LABELLED_HISTORIES_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kbisect/v1/kbisect.pb.h"
#include "triage/model.h"
#include "triage/nightly.h"

namespace kbisect {
namespace testing {

struct LabelledHistory {
  std::string name;    // "harness_change/3".
  std::string family;  // "harness_change".
  v1::Cause label = v1::CAUSE_UNSPECIFIED;
  // One of the two: a nightly history (benchmark "bench", hardware class "gpu"), or a
  // Helion-shaped dataset (platform "b200_cute", kernel "k").
  std::optional<triage::History> history;
  std::optional<triage::Dataset> dashboard;
};

// A plain nightly history of `values` (benchmark "bench", hardware class "gpu", metric
// "latency" in ms, one night a value, no manifest), as the labelled set's histories are made.
triage::History PlainNightlies(const std::vector<double>& values);

// Returns the set (at least 60 histories, every cause at least 12 times).
std::vector<LabelledHistory> MakeLabelledSet();

// A harder set, outside the targets (bench/nightly_accuracy_bench.cc prints it): steps of 2-3%
// under 1% scatter, harness changes in histories written before manifests (the series alone must
// tell them), wide bimodal scatter (8% modes), throttling for only two nights, and a harness
// change in the same night as a kernel regression.
std::vector<LabelledHistory> MakeHardSet();

// Classifies one history the way the product does: DecideNightly for a nightly history, Triage
// for a dashboard. Returns the cause (noise when nothing moved).
v1::Cause ClassifyLabelled(const LabelledHistory& h);

// Per-class figures over the set.
struct ClassFigures {
  int support = 0;  // Histories labelled with the class.
  int predicted = 0;
  int correct = 0;
  double precision() const { return predicted == 0 ? 1.0 : double(correct) / predicted; }
  double recall() const { return support == 0 ? 1.0 : double(correct) / support; }
};
struct SetFigures {
  std::map<v1::Cause, ClassFigures> by_class;
  std::vector<std::string> mistakes;  // "name: labelled X, classified Y".
};
SetFigures Evaluate(const std::vector<LabelledHistory>& set);

// The figures as a markdown table (class | histories | precision | recall).
std::string FormatFigures(const SetFigures& figures);

}  // namespace testing
}  // namespace kbisect

#endif  // KBISECT_TESTS_TESTING_LABELLED_HISTORIES_H_
