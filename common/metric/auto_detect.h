// Copyright 2026 The kbisect Authors.
//
// Auto-detection (MetricSpec::Kind::kAuto): the candidates of the common forms a benchmark
// prints its result in, their tiers, and the choice among them (see ExtractMetric in metric.h).
//
// Internal to kbisect_metric: callers use metric.h.
#ifndef KBISECT_COMMON_METRIC_AUTO_DETECT_H_
#define KBISECT_COMMON_METRIC_AUTO_DETECT_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/metric/metric.h"

namespace kbisect {
namespace metric_internal {

// Extracts the metric of `output` by auto-detection: the best tier of candidates ("label: number
// [unit]" lines and the last JSON object's qualifying members; then pytest --durations "call"
// lines; then the pytest summary line) must name a single metric, whose last occurrence wins.
// Errors: NotFound when nothing qualifies; InvalidArgument when the tier names several metrics or
// the chosen value is not a finite number. Every message quotes the tail of `output`.
absl::StatusOr<Metric> ExtractAuto(absl::string_view output);

}  // namespace metric_internal
}  // namespace kbisect

#endif  // KBISECT_COMMON_METRIC_AUTO_DETECT_H_
