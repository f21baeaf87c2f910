// Copyright 2026 The kbisect Authors.
//
// Evidence: picking the move of a series that the user asks about and gathering everything the
// classification looks at (steps 2 and 3 of the procedure in triage.h).
//
// Internal to kbisect_triage: callers use triage.h.
#ifndef KBISECT_TRIAGE_EVIDENCE_H_
#define KBISECT_TRIAGE_EVIDENCE_H_

#include "triage/model.h"
#include "triage/prepared_series.h"
#include "triage/triage.h"

namespace kbisect {
namespace triage {
namespace internal {

// Picks the move of `k` to explain and gathers its evidence. `k` must already hold the kernel,
// platform, primary metric, direction, nightlies, values and the detector's analysis of `p` (the
// prepared series of `data` it was built from). The move is the change point nearest
// request.date (within request.date_tolerance nightlies), else the latest one -- unless that only
// brings the level back, when the move it ends is taken; without a change point, a spike chosen
// the same way. Fills k->focus_change_point, k->focus_spike, k->last_good, k->first_bad and
// k->evidence: the shape, the primary metric across the split and, for a change point, whether it
// reverted and the cross-checks (baselines, timer, runner identity, measurement attributes, other
// kernels and platforms) over at most request.cross_check_window nightlies on each side. May add
// notes to k->notes. Does not classify: call Reclassify(k) for the verdict.
void GatherEvidence(KernelTriage* k, const Dataset& data, const TriageRequest& request,
                    const Prepared& p);

}  // namespace internal
}  // namespace triage
}  // namespace kbisect

#endif  // KBISECT_TRIAGE_EVIDENCE_H_
