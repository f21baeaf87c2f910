// Copyright 2026 The kbisect Authors.
//
// Classification: the verdict on a move's evidence (Classify, whose rules docs/triage.md
// explains) and the honest value of the primary metric that follows from it.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "triage/triage.h"

namespace kbisect {
namespace triage {
namespace {

std::string Pct(double relative) { return absl::StrFormat("%+.1f%%", 100 * relative); }

double Clamp01(double x) { return std::clamp(x, 0.0, 1.0); }

TrueValue ComputeTrueValue(const KernelTriage& k) {
  TrueValue t;
  const Evidence& e = k.evidence;
  t.before = e.primary.before;
  t.after = e.primary.after;
  const std::string name = k.primary_metric;
  auto fmt = [](double v) { return absl::StrFormat("%.4g", v); };
  switch (k.diagnosis.cause) {
    case v1::CAUSE_REAL_REGRESSION:
      t.honest = "after";
      t.note = absl::StrCat("The kernel really changed: ", name, " is now ", fmt(t.after), " (was ",
                            fmt(t.before), "); ", fmt(t.before), " is what a fix should restore.");
      break;
    case v1::CAUSE_BENCHMARK_METHOD_CHANGE:
      if (e.timer.has_value() && e.timer->present && !e.timer->moved && e.primary.moved) {
        t.honest = "before";
        t.note = absl::StrCat(
            "The independent timer (", e.timer->metric,
            ") did not move, so the kernel's performance did not change; ", fmt(t.before),
            " is its speedup under the established method and ", fmt(t.after),
            " an artifact of the new measurement (if the new method is the intended one, it is "
            "the new baseline, not a regression).");
      } else if (e.timer.has_value() && e.timer->moved && !e.primary.moved) {
        t.honest = "unchanged";
        t.note = absl::StrCat(name, " did not move (", fmt(t.before), "); only ", e.timer->metric,
                              " changed, which points at the latency measurement.");
      } else {
        t.honest = "before";
        t.note = absl::StrCat("The measurement changed at the step; ", fmt(t.before),
                              " is the value under the old method, ", fmt(t.after),
                              " under the new one. Read the harness change before trusting "
                              "either.");
      }
      break;
    case v1::CAUSE_HARDWARE_ISSUE: {
      t.honest = "before";
      std::string rel;
      for (const MetricMove& b : e.baselines) {
        if (!b.present || b.before == 0 || b.after == 0) continue;
        // Both are speedups over the same reference on the same machine, so their ratio is
        // Helion's standing against that baseline (unlike speedup x latency, which mixes
        // timing modes and means nothing).
        rel = absl::StrCat(" Relative to ", b.metric, " it was ", fmt(t.before / b.before),
                           " before and ", fmt(t.after / b.after), " after.");
        break;
      }
      t.note = absl::StrCat("The environment changed, not Helion: ", fmt(t.before),
                            " is the value on the usual machine.", rel);
      break;
    }
    default:
      t.honest = "unchanged";
      t.note = absl::StrCat("Nothing persistent moved; ", name, " stays around ",
                            fmt(k.values.empty() ? 0 : t.before), ".");
      break;
  }
  return t;
}

// The verdict on a move that is not a step or a drift: no move, a spike or a reverted excursion
// is noise (an excursion with a runner change, a hardware issue). nullopt for a step or a drift.
std::optional<Diagnosis> ClassifyTransient(const Evidence& e) {
  Diagnosis v;
  auto add = [&](std::string reason) { v.reasons.push_back(std::move(reason)); };
  const std::string size = Pct(e.primary.relative_change);
  switch (e.shape) {
    case Shape::kNone:
      v.cause = v1::CAUSE_NOISE;
      v.confidence = 0.9;
      add("No persistent step: the series stays within its run-to-run noise.");
      return v;
    case Shape::kSpike:
      v.cause = v1::CAUSE_NOISE;
      v.confidence = e.reverted_at.has_value() ? 0.85 : 0.4;
      add(absl::StrCat("A single-nightly outlier (", size, ") ",
                       e.reverted_at.has_value()
                           ? absl::StrCat("that reverted on ", e.reverted_at->date, ".")
                           : "on the latest nightly; it may still turn into a step."));
      return v;
    case Shape::kExcursion:
      v.cause = v1::CAUSE_NOISE;
      v.confidence = 0.65;
      add(absl::StrCat("The level moved ", size, " for ", e.nightlies_after,
                       " nightlies and came back on ",
                       e.reverted_at.has_value() ? e.reverted_at->date : "a later nightly",
                       ": it did not persist."));
      if (e.runner_changed == Tri::kYes) {
        add("The runner identity changed with it: a temporary runner swap is the likely "
            "explanation.");
        v.cause = v1::CAUSE_HARDWARE_ISSUE;
        v.confidence = 0.75;
      }
      return v;
    case Shape::kStep:
    case Shape::kDrift:
      break;
  }
  return std::nullopt;
}

// Returns the first changed attribute of `changes` as "name 'before' -> 'after'" ("" if none).
std::string FirstChange(const std::vector<AttributeChange>& changes) {
  for (const AttributeChange& c : changes) {
    if (c.changed) return absl::StrCat(c.name, " '", c.before, "' -> '", c.after, "'");
  }
  return "";
}

// The verdict on a step shared with the baselines: a harness change when the window holds a
// harness-only commit, else a hardware issue (surer when the runner identity is known unchanged).
void ClassifySharedStep(const Evidence& e, Diagnosis* v) {
  auto add = [&](std::string reason) { v->reasons.push_back(std::move(reason)); };
  std::vector<std::string> moved;
  for (const MetricMove& b : e.baselines) {
    if (b.moved) moved.push_back(absl::StrCat(b.metric, " ", Pct(b.relative_change)));
  }
  add(absl::StrCat("The move is shared with the baselines (", absl::StrJoin(moved, ", "),
                   "): the environment or the reference changed, not Helion."));
  if (e.harness_only_commit == Tri::kYes) {
    v->cause = v1::CAUSE_BENCHMARK_METHOD_CHANGE;
    v->confidence = 0.65;
    add("The commit window holds a commit touching only the benchmark harness / CI: a "
        "harness change that moved every implementation's number.");
  } else {
    v->cause = v1::CAUSE_HARDWARE_ISSUE;
    v->confidence = e.runner_changed == Tri::kNo ? 0.65 : 0.75;
    if (e.runner_changed == Tri::kNo) {
      add("The recorded runner identity did not change, so suspect the driver, thermals or a "
          "shared dependency rather than a runner swap.");
    } else {
      add("No runner identity is recorded; compare the runners of the two nightlies.");
    }
  }
}

// The verdict on a step the independent timer disagrees with: a benchmark method change (surer
// with a harness-only commit in the window).
void ClassifyTimerDisagreement(const Evidence& e, Diagnosis* v) {
  auto add = [&](std::string reason) { v->reasons.push_back(std::move(reason)); };
  v->cause = v1::CAUSE_BENCHMARK_METHOD_CHANGE;
  v->confidence = e.harness_only_commit == Tri::kYes ? 0.9 : 0.8;
  if (e.timer.has_value() && !e.timer->moved) {
    add(absl::StrCat("The independent timer ", e.timer->metric, " did not move (",
                     Pct(e.timer->relative_change),
                     "): the kernel ran as fast as before, so how it is measured changed."));
  } else if (e.timer.has_value()) {
    add(absl::StrCat("The independent timer ", e.timer->metric, " moved ",
                     Pct(e.timer->relative_change),
                     ", the opposite way: the two timers disagree, so a measurement changed."));
  }
  if (e.harness_only_commit == Tri::kYes) {
    add("The commit window holds a commit touching only the benchmark harness / CI.");
  }
}

// The verdict on a step nothing else explains: a real regression, less sure without baselines or
// a timer to confirm it or a slice commit in the window, and unsure for a `drift`.
void ClassifyRealStep(const Evidence& e, bool drift, Diagnosis* v) {
  auto add = [&](std::string reason) { v->reasons.push_back(std::move(reason)); };
  v->cause = v1::CAUSE_REAL_REGRESSION;
  if (e.baselines_moved == Tri::kNo) {
    add("Helion-only: the baselines did not move.");
  } else {
    add("No baselines to compare with, so a shared (environment) move cannot be ruled out.");
  }
  if (e.timer_agrees == Tri::kYes) {
    add(absl::StrCat("The independent timer agrees: ", e.timer->metric, " moved ",
                     Pct(e.timer->relative_change), "."));
  } else {
    add("No independent timer to confirm the move.");
  }
  v->confidence = 0.9;
  if (e.baselines_moved != Tri::kNo) v->confidence -= 0.15;
  if (e.timer_agrees != Tri::kYes) v->confidence -= 0.1;
  if (e.slice_commit == Tri::kYes) {
    add("The commit window holds a commit matching the platform's slice.");
    v->confidence += 0.05;
  } else if (e.slice_commit == Tri::kNo) {
    add("No commit in the window matches the platform's slice; read every commit.");
    v->confidence -= 0.1;
  }
  if (drift) {
    add("The move is gradual, not a step between two nightlies: no single commit is to blame "
        "yet; bisect the whole span or look at the endpoints.");
    v->confidence = std::min(v->confidence, 0.45);
  }
}

// The cause of a step or a drift, by the first rule that applies: the runner identity changed
// (hardware), a measurement setting changed (method), the baselines moved too
// (ClassifySharedStep), the timer disagrees (ClassifyTimerDisagreement), else ClassifyRealStep.
void ClassifyStepCause(const Evidence& e, bool drift, Diagnosis* v) {
  auto add = [&](std::string reason) { v->reasons.push_back(std::move(reason)); };
  if (e.runner_changed == Tri::kYes) {
    v->cause = v1::CAUSE_HARDWARE_ISSUE;
    add(absl::StrCat("The runner identity changed at the step (", FirstChange(e.identity), ")."));
    v->confidence = e.baselines_moved == Tri::kYes ? 0.95 : 0.85;
    if (e.baselines_moved == Tri::kYes) add("The baselines moved with it.");
  } else if (e.method_changed == Tri::kYes) {
    v->cause = v1::CAUSE_BENCHMARK_METHOD_CHANGE;
    add(absl::StrCat("A measurement setting changed at the step (", FirstChange(e.method), ")."));
    v->confidence = 0.9;
  } else if (e.baselines_moved == Tri::kYes) {
    ClassifySharedStep(e, v);
  } else if (e.timer_agrees == Tri::kNo) {
    ClassifyTimerDisagreement(e, v);
  } else {
    ClassifyRealStep(e, drift, v);
  }
}

// Adds the reasons on the step's breadth (how many other kernels and platforms moved with it)
// and on its persistence (when under 80%).
void AddBreadthReasons(const Evidence& e, Diagnosis* v) {
  auto add = [&](std::string reason) { v->reasons.push_back(std::move(reason)); };
  size_t moved_kernels = 0;
  for (const BreadthCheck& b : e.other_kernels) moved_kernels += b.moved;
  size_t moved_platforms = 0;
  for (const BreadthCheck& b : e.other_platforms) moved_platforms += b.moved;
  if (!e.other_kernels.empty()) {
    add(absl::StrCat(moved_kernels, " of ", e.other_kernels.size(),
                     " other kernels on this platform moved at the same nightly",
                     moved_kernels == 0 ? " (kernel-specific)." : "."));
  }
  if (!e.other_platforms.empty()) {
    add(absl::StrCat(moved_platforms, " of ", e.other_platforms.size(),
                     " other platforms moved for this kernel",
                     moved_platforms == 0 ? " (platform-specific)." : "."));
  }
  if (e.persistence < 0.8) {
    add(absl::StrFormat("Only %.0f%% of the nightlies after the step stay at the new level.",
                        100 * e.persistence));
  }
}

}  // namespace

Diagnosis Classify(const Evidence& e) {
  if (std::optional<Diagnosis> transient = ClassifyTransient(e)) return *std::move(transient);
  Diagnosis v;
  const std::string size = Pct(e.primary.relative_change);
  const bool drift = e.shape == Shape::kDrift;
  v.reasons.push_back(absl::StrCat(drift ? "A gradual drift of " : "A persistent step of ", size,
                                   absl::StrFormat(" (permutation p = %.3g, ", e.p_value),
                                   e.nightlies_before, " nightlies before, ", e.nightlies_after,
                                   " after)."));
  double penalty = 0;
  if (e.p_value > 0.001) penalty += 0.05;
  if (e.persistence < 0.8) penalty += 0.1;
  if (e.nightlies_after < 5) penalty += 0.1;
  ClassifyStepCause(e, drift, &v);
  AddBreadthReasons(e, &v);
  v.confidence = Clamp01(v.confidence - penalty);
  return v;
}

void Reclassify(KernelTriage* kernel) {
  kernel->diagnosis = Classify(kernel->evidence);
  kernel->true_value = ComputeTrueValue(*kernel);
}

}  // namespace triage
}  // namespace kbisect
