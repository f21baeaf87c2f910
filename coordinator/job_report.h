// Copyright 2026 The kbisect Authors.
//
// The report details of a finished job that the job itself cannot know: the identity of each
// worker that took part (the coordinator's WorkerRegistry), and for a culprit its files changed,
// its submodule bumps and its root-cause hints (read from the repository: a little I/O on a
// finished job, done once).
#ifndef KBISECT_COORDINATOR_JOB_REPORT_H_
#define KBISECT_COORDINATOR_JOB_REPORT_H_

#include "coordinator/published_status.h"
#include "coordinator/repository_view.h"
#include "coordinator/worker_registry.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// The details of the finished job `status`. What cannot be read from `repositories` is a warning
// of the details, never an error: the job's result stands without it.
ReportDetails GatherReportDetails(const v1::JobStatus& status, const WorkerRegistry& workers,
                                  RepositoryView* repositories);

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_REPORT_H_
