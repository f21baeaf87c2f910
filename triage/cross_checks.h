// Copyright 2026 The kbisect Authors.
//
// Cross-checks at the split of a move: the same nightlies compared on other metrics (baselines,
// the independent timer), on runner identity and measurement attributes, and on other series
// (other kernels of the platform, other platforms of the kernel).
//
// Internal to kbisect_triage: callers use triage.h.
#ifndef KBISECT_TRIAGE_CROSS_CHECKS_H_
#define KBISECT_TRIAGE_CROSS_CHECKS_H_

#include <string>
#include <string_view>
#include <vector>

#include "common/metric/metric.h"
#include "triage/model.h"
#include "triage/prepared_series.h"
#include "triage/triage.h"

namespace kbisect {
namespace triage {
namespace internal {

// Returns `given` unless it is kUnknown; else infers the direction from `name`: speedups, geomeans
// and wins are higher-is-better (unless the name also says time or latency), otherwise as
// InferDirection(name, "") says.
Direction DirectionOf(const std::string& name, Direction given);

// Returns true if a relative change of `relative_change` is worse for a metric improving in
// `direction` (down for higher-is-better, up for lower-is-better); false for kUnknown.
bool Worse(Direction direction, double relative_change);

// Compares the samples of `metric` before and after a split. The result is present when both
// sides have at least 2 values; it moved when the Mann-Whitney p-value is at most
// request.cross_check_p, the relative change at least the detector's minimum and the level shift
// at least 2 sigmas.
MetricMove CompareSamples(const std::string& metric, const std::string& role, Direction direction,
                          const std::vector<double>& before, const std::vector<double>& after,
                          const TriageRequest& request);

// Compares the attributes chosen by `select` across the split at nightly `split` of `p`, looking
// at nightlies [from, to): appends one AttributeChange per attribute seen and sets `changed` to
// kYes if one changed at the split and the most common values on both sides confirm it, kNo if
// none did, and kUnknown if no such attribute is recorded.
void CompareAttributes(const Prepared& p, int split, int from, int to,
                       bool (*select)(std::string_view), std::vector<AttributeChange>* out,
                       Tri* changed);

// Tests series `other` on `metric` at the same dates: nightlies dated [from_date,
// last_good_date] against [first_bad_date, to_date], as CompareSamples does.
BreadthCheck CheckOther(const Series& other, const std::string& metric, Direction direction,
                        const std::string& from_date, const std::string& last_good_date,
                        const std::string& first_bad_date, const std::string& to_date,
                        const TriageRequest& request);

}  // namespace internal
}  // namespace triage
}  // namespace kbisect

#endif  // KBISECT_TRIAGE_CROSS_CHECKS_H_
