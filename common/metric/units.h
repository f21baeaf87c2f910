// Copyright 2026 The kbisect Authors.
//
// Units of benchmark metrics: recognising a unit as a benchmark prints it ("ms", "µs", "GiB/sec",
// "TFLOP/s", "tokens/s", "x", "%"), its kind, and the factor into the canonical unit of that kind
// (see metric.h).
//
// Internal to kbisect_metric: callers use metric.h.
#ifndef KBISECT_COMMON_METRIC_UNITS_H_
#define KBISECT_COMMON_METRIC_UNITS_H_

#include <cstddef>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace kbisect {
namespace metric_internal {

// What a unit measures.
enum class UnitKind { kTime, kBandwidth, kFlops, kRate, kRatio, kPercent };

// A recognised unit.
struct UnitInfo {
  UnitKind kind;
  double factor;          // Multiplies a value in this unit into `canonical`.
  std::string canonical;  // The canonical unit of the kind ("ms", "GB/s", ...).
};

// Returns `s` with the micro signs U+00B5 and U+03BC replaced by 'u'.
std::string ReplaceMicro(absl::string_view s);

// Looks up a unit as written in an output ("ms", "µs", "GB/s", "GiB/sec", "TFLOP/s", "tokens/s",
// "x", "%"); any "<letters>/s" is a rate kept under its own lower-case name. Bit rates with an
// upper-case prefix ("Gb/s", "Mbps") are not units. Returns nullopt for anything not recognised.
std::optional<UnitInfo> LookupUnit(absl::string_view token);

// Reads the unit token right after a number at offset `pos` of `text`: optional spaces, then
// letters, '/', '%' and non-ASCII bytes. Returns the recognised unit, if any; a time per something
// ("ms/iter") is that time, and a bare "x" counts only when attached ("1.5x").
std::optional<UnitInfo> ReadUnitAfter(absl::string_view text, size_t pos);

}  // namespace metric_internal
}  // namespace kbisect

#endif  // KBISECT_COMMON_METRIC_UNITS_H_
