// Copyright 2026 The kbisect Authors.
//
// Triage of a dashboard move (seed 002): find the move in a (kernel, platform) nightly series,
// gather cross-checks as evidence, and classify it as a real regression, a benchmark method
// change, a hardware issue or noise. Pure: a Dataset in, a TriageResult out; no I/O.
//
// The procedure, in order:
//   1. Take the platform's series (one kernel, or every kernel of the platform), nightlies only,
//      at most TriageRequest::max_nightlies around --date.
//   2. Run the change-point detector on the primary metric; pick the move the user asks about
//      (the change point nearest --date, else the latest one; a spike when there is no step).
//   3. Cross-check at the same split: the baselines (triton_*, torch_compile_*), the independent
//      timer (helion_latency_avg_ms is do_bench-timed, the speedup cudagraph-timed), runner
//      identity and measurement attributes, the other kernels of the platform and the other
//      platforms of the kernel. Speedup and latency are compared only as two separate series,
//      never multiplied.
//   4. Classify (Classify below) with a confidence and one sentence per reason.
//
//   TriageRequest request;
//   request.platform = "b200_cute";
//   request.kernel = "layer_norm";
//   ASSIGN_OR_RETURN(TriageResult result, Triage(dataset, request));
//   if (result.kernels[0].diagnosis.cause == v1::CAUSE_REAL_REGRESSION) ...
#ifndef KBISECT_TRIAGE_TRIAGE_H_
#define KBISECT_TRIAGE_TRIAGE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/metric/metric.h"
#include "kbisect/v1/kbisect.pb.h"
#include "triage/change_point.h"
#include "triage/model.h"

namespace kbisect {
namespace triage {

// A yes/no answer that may be unknown because the data does not say.
enum class Tri { kUnknown, kNo, kYes };

// Returns "unknown", "no" or "yes".
const char* TriName(Tri value);

// The shape of the move being explained.
enum class Shape {
  kNone,       // No step and no spike: nothing moved beyond the noise.
  kStep,       // A persistent level shift between two consecutive nightlies.
  kDrift,      // A gradual move over many nightlies: no single nightly to blame.
  kSpike,      // One or two nightlies off their neighbours that came back.
  kExcursion,  // A level shift of a few nightlies that later reverted.
};

// Returns "none", "step", "drift", "spike" or "excursion".
const char* ShapeName(Shape shape);

// Returns "real_regression", "benchmark_method_change", "hardware_issue", "noise" or
// "unspecified".
const char* CauseName(v1::Cause cause);

// Which metrics play which part. Empty fields take the format's defaults (see DefaultRoles).
struct MetricRoles {
  // The metric whose move is explained (Helion: helion_speedup_geomean).
  std::string primary;
  // Metrics measured on the same machine by other implementations (Helion:
  // triton_speedup_geomean, torch_compile_speedup_geomean). A move shared with them is the
  // environment's, not the code's.
  std::vector<std::string> baselines;
  // The same implementation measured by an independent timer (Helion: helion_latency_avg_ms).
  std::string timer;
  // Which way `primary` improves; kUnknown infers it from the name (speedups, geomeans and wins
  // are higher-is-better).
  Direction primary_direction = Direction::kUnknown;
  // Which way `timer` improves; kUnknown infers it from the name.
  Direction timer_direction = Direction::kUnknown;
};

// Returns the default roles of a dataset: Helion dashboards as above; pretuned dashboards
// "geomean" with every "baselines.NAME.geomean" as a baseline and no timer; generic input the
// Helion names when its columns have them, else its first metric by name with no baselines or
// timer.
MetricRoles DefaultRoles(const Dataset& data);

// What the user asks about.
struct TriageRequest {
  // The platform_short to triage ("b200_cute"). Required when the dataset has several platforms.
  std::string platform;
  // The kernel; "" triages every kernel of the platform and puts the most significant move first.
  std::string kernel;
  // The date (YYYY-MM-DD) the move was seen around; "" means the latest move.
  std::string date;
  // The metric roles; empty fields take DefaultRoles.
  MetricRoles roles;
  // Include runs marked is_nightly: false.
  bool include_non_nightly = false;
  // The most nightlies analysed: centred on `date` when given, else the latest ones.
  int max_nightlies = 120;
  // How many nightlies from `date` a change point may be and still be "the move at that date".
  int date_tolerance = 3;
  // The detector's thresholds.
  ChangePointOptions change_point;
  // The largest Mann-Whitney p-value at which a cross-checked metric counts as having moved.
  double cross_check_p = 0.01;
  // The most nightlies on each side of the split used for the cross-checks.
  int cross_check_window = 10;
};

// One nightly, as the report names it.
struct NightlyRef {
  int index = 0;  // Index into KernelTriage::nightlies.
  std::string date;
  std::string sha;
  std::string full_sha;
  int64_t run_id = 0;
};

// One metric compared across the split of the move.
struct MetricMove {
  std::string metric;
  // "primary", "baseline" or "timer".
  std::string role;
  // False when the metric has fewer than 2 values on a side (then nothing else is meaningful).
  bool present = false;
  Direction direction = Direction::kUnknown;
  double before = 0;  // Median before the split.
  double after = 0;   // Median after the split.
  double relative_change = 0;
  double mann_whitney_p = 1;
  // True if the metric moved significantly (p <= cross_check_p, |relative_change| at least the
  // detector's minimum, and at least 2 sigmas).
  bool moved = false;
  // True if it moved the worse way for its direction (down for higher-is-better).
  bool worse = false;
};

// An attribute (runner identity, measurement setting) compared across the split.
struct AttributeChange {
  std::string name;
  std::string before;  // Value at the last good nightly ("" when absent).
  std::string after;   // Value at the first bad nightly ("" when absent).
  bool changed = false;
};

// One other series checked at the same nightly.
struct BreadthCheck {
  std::string label;  // "kernel@platform".
  bool tested = false;
  bool moved = false;
  double relative_change = 0;
};

// Everything the classification looks at.
struct Evidence {
  Shape shape = Shape::kNone;
  // The primary metric across the split (absent for kNone).
  MetricMove primary;
  // The change point's permutation p-value, sharpness and persistence (steps, drifts, excursions).
  double p_value = 1;
  double sharpness = 0;
  double persistence = 0;
  // Nightlies on each side of the split within the level segments.
  int nightlies_before = 0;
  int nightlies_after = 0;
  // True if the level came back later (an excursion), with the nightly where it did.
  bool reverted = false;
  std::optional<NightlyRef> reverted_at;
  // Baselines and whether any moved.
  std::vector<MetricMove> baselines;
  Tri baselines_moved = Tri::kUnknown;
  // The independent timer and whether it agrees (both moved the same way).
  std::optional<MetricMove> timer;
  Tri timer_agrees = Tri::kUnknown;
  // Runner identity attributes at the split.
  std::vector<AttributeChange> identity;
  Tri runner_changed = Tri::kUnknown;
  // Measurement attributes (cudagraph, compile-time aggregate, ...) at the split.
  std::vector<AttributeChange> method;
  Tri method_changed = Tri::kUnknown;
  // Other kernels of the platform and other platforms of the kernel, at the same dates.
  std::vector<BreadthCheck> other_kernels;
  std::vector<BreadthCheck> other_platforms;
  // From the commit window, when a repository was given: does it hold a commit touching only
  // benchmark-harness / CI paths, and one matching the platform's slice?
  Tri harness_only_commit = Tri::kUnknown;
  Tri slice_commit = Tri::kUnknown;
};

// The answer: why the number moved.
struct Diagnosis {
  v1::Cause cause = v1::CAUSE_UNSPECIFIED;
  // In [0, 1].
  double confidence = 0;
  // One sentence per piece of evidence that decided it, most important first.
  std::vector<std::string> reasons;
};

// Classifies `evidence` (pure; the rules are in docs/triage.md):
//   no step, a spike or a reverted excursion   -> noise
//   runner identity changed at the step        -> hardware issue
//   a measurement attribute changed at it      -> benchmark method change
//   baselines moved too                        -> hardware issue (a harness-only commit in the
//                                                 window makes it a method change)
//   the independent timer disagrees            -> benchmark method change
//   otherwise (Helion-only, timers agree)      -> real regression (a drift: low confidence)
Diagnosis Classify(const Evidence& evidence);

// The honest value of the primary metric.
struct TrueValue {
  double before = 0;
  double after = 0;
  // "before", "after" or "unchanged": which value reflects the kernel's real performance.
  std::string honest;
  // One or two sentences explaining the choice.
  std::string note;
};

// Another metric of the analysed nightlies (a baseline or the timer), for the triage page's
// plots: one value per entry of KernelTriage::nightlies, nullopt where that nightly has none.
struct CompanionSeries {
  std::string metric;
  // "baseline" or "timer".
  std::string role;
  Direction direction = Direction::kUnknown;
  std::vector<std::optional<double>> values;
};

// The triage of one kernel on one platform.
struct KernelTriage {
  std::string kernel;
  std::string platform;
  std::string platform_short;
  std::string primary_metric;
  Direction direction = Direction::kUnknown;
  // The nightlies analysed (after filtering), oldest first; indices below refer to this list.
  std::vector<NightlyRef> nightlies;
  std::vector<double> values;
  // The baselines and the timer over the same nightlies (those with at least one value).
  std::vector<CompanionSeries> companions;
  // The detector's output on `values`.
  SeriesAnalysis analysis;
  // The move explained: the index of the change point or spike in `analysis`, or -1.
  int focus_change_point = -1;
  int focus_spike = -1;
  // The nightlies around the move (absent when there is none).
  std::optional<NightlyRef> last_good;
  std::optional<NightlyRef> first_bad;
  Evidence evidence;
  Diagnosis diagnosis;
  TrueValue true_value;
  // Sentences about the data (too few nightlies, a move too recent to judge, ...).
  std::vector<std::string> notes;

  // Returns true if the move is a regression (the primary metric got worse).
  bool IsRegression() const;
};

// The result of Triage.
struct TriageResult {
  std::string source;
  InputFormat format = InputFormat::kAuto;
  std::string platform;
  std::string date;
  MetricRoles roles;
  // One entry per kernel triaged; the headline (the kernel asked about, or the most significant
  // move) first.
  std::vector<KernelTriage> kernels;
  // Dataset notes plus notes of the triage itself.
  std::vector<std::string> notes;
};

// Triages `data` as `request` asks. Errors: InvalidArgument naming what is missing when the
// platform or kernel is not in the data (listing those that are), when the platform is not
// given but the data has several, when the primary metric is not in the series (listing the
// metrics that are), or when the date is malformed.
absl::StatusOr<TriageResult> Triage(const Dataset& data, const TriageRequest& request);

// Re-classifies `kernel` after its commit-window evidence (harness_only_commit, slice_commit)
// was filled in, updating verdict and true_value.
void Reclassify(KernelTriage* kernel);

}  // namespace triage
}  // namespace kbisect

#endif  // KBISECT_TRIAGE_TRIAGE_H_
