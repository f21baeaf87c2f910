// Copyright 2026 The kbisect Authors.
//
// The one rounding of a percentage that a person reads, in every kbisect report, page and
// summary (docs/protocol.md, "Times, durations and percentages"): one decimal. JSON carries the
// unrounded numbers.
//
//   FormatPercent(0.4512)          == "0.5%"
//   FormatSignedPercent(-18.04)    == "-18.0%"
#ifndef KBISECT_COMMON_METRIC_PERCENT_H_
#define KBISECT_COMMON_METRIC_PERCENT_H_

#include <string>

namespace kbisect {

// `pct` percent points with one decimal: "12.3%", "0.5%", "-2.0%".
std::string FormatPercent(double pct);

// The same with its sign always shown: "+4.0%", "-18.0%".
std::string FormatSignedPercent(double pct);

}  // namespace kbisect

#endif  // KBISECT_COMMON_METRIC_PERCENT_H_
