// Copyright 2026 The kbisect Authors.
//
// Whether the culprit changed how the benchmark measures rather than what it measures (seed 002's
// "benchmark method change"), from the measurement manifests the workers recorded with each probe
// (common/manifest/manifest.h): a harness file, the bench command line, a recorded environment
// variable or a tool version that differs between the last good commit and the culprit. Machine
// differences are left out: the two commits may have been measured on different workers, whose
// offsets the calibration handles. Pure.
#ifndef KBISECT_COORDINATOR_JOB_MEASUREMENT_CHANGES_H_
#define KBISECT_COORDINATOR_JOB_MEASUREMENT_CHANGES_H_

#include <vector>

#include "common/manifest/manifest.h"
#include "coordinator/job/probe_book.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// The method changes between the manifests of the finished probes at `last_good` and at
// `first_bad` among `probes` (the latest of each that has a manifest; none when either has none).
std::vector<ManifestChange> MethodChangesAt(const ProbeRows& probes, int last_good, int first_bad);

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_MEASUREMENT_CHANGES_H_
