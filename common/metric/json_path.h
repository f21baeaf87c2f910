// Copyright 2026 The kbisect Authors.
//
// JSON in benchmark output: finding the last complete top-level JSON object among log lines, and
// the kJsonPath extraction mode, which follows a dotted path ("results.0.latency_ms") into it.
//
// Internal to kbisect_metric: callers use metric.h.
#ifndef KBISECT_COMMON_METRIC_JSON_PATH_H_
#define KBISECT_COMMON_METRIC_JSON_PATH_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/metric/metric.h"
#include "common/metric/units.h"
#include "nlohmann/json.hpp"

namespace kbisect {
namespace metric_internal {

// A JSON object found in an output, with its place there.
struct JsonObject {
  size_t begin = 0;  // Offset of its '{'.
  size_t end = 0;    // Offset just after its '}'.
  nlohmann::json value;
};

// Returns the last complete top-level JSON object of `output` (the one that ends last), or
// nullopt. One pass finds every brace-balanced "{...}" (respecting JSON strings; a raw newline in
// a string or a mismatched bracket abandons the open ones), then candidates are parsed from the
// last-ending one backwards; an enclosing object always ends after what it encloses.
std::optional<JsonObject> FindLastJsonObject(absl::string_view output);

// What `j` is, in the words of an error message ("null", "boolean", "string", "array", "object",
// "number"); for nlohmann::json and nlohmann::ordered_json alike.
template <typename JsonValue>
const char* JsonTypeName(const JsonValue& j) {
  if (j.is_null()) return "null";
  if (j.is_boolean()) return "boolean";
  if (j.is_string()) return "string";
  if (j.is_array()) return "array";
  if (j.is_object()) return "object";
  return "number";
}

// Returns the unit named by a "unit" member of `object`, if any.
// For nlohmann::json and nlohmann::ordered_json alike.
template <typename JsonValue>
std::optional<UnitInfo> SiblingUnit(const JsonValue& object) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find("unit");
  if (it == object.end() || !it->is_string()) return std::nullopt;
  return LookupUnit(it->template get<std::string>());
}

// Splits a JSON path into its components: an optional leading "$." (or "$") is dropped, the rest
// is split at '.'. Errors: InvalidArgument naming the path if it is empty or has an empty
// component.
absl::StatusOr<std::vector<std::string>> SplitJsonPath(absl::string_view path);

// Extracts the metric at `path` in the last JSON object of `output` (see ExtractMetric in
// metric.h): the value must be a finite number or a string holding one; the metric is named after
// the last key, and a "unit" member next to the value gives the unit when the key has none.
// Errors: InvalidArgument for an invalid path, a step into a non-container, a non-numeric array
// index, or a value that is not a finite number; NotFound for no JSON object, a missing key or an
// index out of range. Every message quotes the tail of `output`.
absl::StatusOr<Metric> ExtractWithJsonPath(absl::string_view path, absl::string_view output);

}  // namespace metric_internal
}  // namespace kbisect

#endif  // KBISECT_COMMON_METRIC_JSON_PATH_H_
