// Copyright 2026 The kbisect Authors.
//
// What the extraction modes (regex, JSON path, auto-detection) share: error messages that quote
// the tail of the benchmark's output, reading a finite number, and building a Metric from the
// label and unit it was found with.
//
// Internal to kbisect_metric: callers use metric.h.
#ifndef KBISECT_COMMON_METRIC_EXTRACTION_H_
#define KBISECT_COMMON_METRIC_EXTRACTION_H_

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/metric/metric.h"
#include "common/metric/units.h"
#include "re2/re2.h"

namespace kbisect {
namespace metric_internal {

// Debian's abseil keeps its own absl::string_view; the public API uses std::string_view.
inline absl::string_view ToAbsl(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}

// Returns the line of `text` that contains offset `pos`, without its line end.
absl::string_view LineAt(absl::string_view text, size_t pos);

// Returns `s` as the StringPiece RE2 takes.
inline re2::StringPiece Piece(absl::string_view s) { return re2::StringPiece(s.data(), s.size()); }

// Return NotFound or InvalidArgument with `message` followed by the last 5 non-blank lines of
// `output` (each truncated to 160 characters), or a note that the benchmark printed nothing.
absl::Status NotFoundWithTail(absl::string_view message, absl::string_view output);
absl::Status InvalidWithTail(absl::string_view message, absl::string_view output);

// Parses `text` as a number. Errors: InvalidArgument naming `what` and quoting the tail of
// `output` if it is not a number or not a finite one.
absl::StatusOr<double> ParseFinite(absl::string_view text, absl::string_view what,
                                   absl::string_view output);

// Builds a metric from a label (or key) and a value, with `text_unit` (the unit found after the
// value, if any) taking precedence over a unit in the label; the value is converted into the
// canonical unit. `fallback_name` names the metric when the label gives no name.
Metric MakeMetric(absl::string_view label, double value, const std::optional<UnitInfo>& text_unit,
                  absl::string_view fallback_name, std::string matched_text);

}  // namespace metric_internal
}  // namespace kbisect

#endif  // KBISECT_COMMON_METRIC_EXTRACTION_H_
