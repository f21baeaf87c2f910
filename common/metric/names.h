// Copyright 2026 The kbisect Authors.
//
// Metric names and polarity: turning the label a benchmark prints before a number (or a JSON key)
// into a metric name and an optional unit, and deciding from the unit and the name's words which
// way the metric improves.
//
// Internal to kbisect_metric: callers use metric.h.
#ifndef KBISECT_COMMON_METRIC_NAMES_H_
#define KBISECT_COMMON_METRIC_NAMES_H_

#include <cstddef>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "common/metric/metric.h"
#include "common/metric/units.h"

namespace kbisect {
namespace metric_internal {

// What a label or key says about a metric.
struct NameInfo {
  std::string name;              // lower_snake_case without a unit suffix; may be empty.
  std::optional<UnitInfo> unit;  // From a "(unit)" part or a unit suffix ("_us", "_gb_s").
  bool per_second = false;       // "tokens/s", "tokens_per_sec": a rate.
};

// Returns the words of `label` that name the metric: the text after the last ". " (a sentence
// end), and of its space-separated words the trailing ones without '.' or '/' (so a path or file
// name printed before the label is dropped), or else the last word. A trailing "(unit)" stays.
absl::string_view CleanLabel(absl::string_view label);

// Returns the label written just before position `pos` of `line`: the trailing run of word
// characters once separators (":", "=", spaces) are stripped, cleaned by CleanLabel.
absl::string_view LabelBefore(absl::string_view line, size_t pos);

// Analyses a label or JSON key: a trailing "(unit)" or "[unit]" and a unit suffix ("_us",
// "_gb_s", "ms") give the unit, "/s" and "per second" make it a rate, and the remaining words
// (camelCase and separators split, numbers dropped, the last three kept) make the lower_snake_case
// name. A label that is only a unit is named after its kind ("time", "bandwidth", "flops").
NameInfo AnalyzeName(absl::string_view raw);

// Returns which way a metric in `unit` improves: times lower, bandwidths, flop rates, rates and
// ratios higher; kUnknown for percentages.
Direction DirectionOfUnit(const UnitInfo& unit);

// Returns which way the metric described by `info` improves: its unit decides when it says
// anything, then a per-second rate is higher-is-better, then the name's words (see
// InferDirection in metric.h). kUnknown when nothing decides.
Direction DirectionOfName(const NameInfo& info);

}  // namespace metric_internal
}  // namespace kbisect

#endif  // KBISECT_COMMON_METRIC_NAMES_H_
