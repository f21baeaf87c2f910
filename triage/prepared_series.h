// Copyright 2026 The kbisect Authors.
//
// The nightlies of one series that a triage analyses: those with a value of the primary metric
// (nightlies only, unless asked otherwise), windowed around the date asked about.
//
// Internal to kbisect_triage: callers use triage.h.
#ifndef KBISECT_TRIAGE_PREPARED_SERIES_H_
#define KBISECT_TRIAGE_PREPARED_SERIES_H_

#include <string>
#include <vector>

#include "triage/model.h"
#include "triage/triage.h"

namespace kbisect {
namespace triage {
namespace internal {

// The analysed nightlies of one series with its primary values (parallel vectors, oldest first).
// The pointers point into `series`, which must outlive this.
struct Prepared {
  const Series* series = nullptr;
  std::vector<const Nightly*> nightlies;
  std::vector<double> values;
};

// Returns the nightlies of `series` that have a value of `metric`, skipping runs that are not
// nightlies unless `include_non_nightly` is set.
Prepared Prepare(const Series& series, const std::string& metric, bool include_non_nightly);

// Keeps at most `max` nightlies of `p`: centred on `date` (YYYY-MM-DD) when given, else the
// latest ones.
void Window(Prepared* p, const std::string& date, int max);

// Returns the values of `metric` over nightlies [from, to) of `p` (clamped to the nightlies), in
// order, skipping nightlies without one.
std::vector<double> ValuesOf(const Prepared& p, const std::string& metric, int from, int to);

// Returns how the report names nightly `n`, the `index`-th of the analysed nightlies.
NightlyRef Ref(const Nightly& n, int index);

}  // namespace internal
}  // namespace triage
}  // namespace kbisect

#endif  // KBISECT_TRIAGE_PREPARED_SERIES_H_
