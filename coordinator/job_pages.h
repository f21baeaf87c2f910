// Copyright 2026 The kbisect Authors.
//
// The coordinator's live job pages (GET /jobs and /jobs/ID on its HTTP listener,
// coordinator/metrics_http.h): the HTML pages of report/html rendered from the coordinator's
// current job status on each request, reloading themselves while a job runs.
#ifndef KBISECT_COORDINATOR_JOB_PAGES_H_
#define KBISECT_COORDINATOR_JOB_PAGES_H_

#include <string>

#include "coordinator/coordinator.h"
#include "coordinator/metrics_http.h"

namespace kbisect {

// The pages of `coordinator` (which must outlive the server), with `token` required when not
// empty and non-loopback peers answered when `remote`.
JobPages MakeJobPages(const Coordinator* coordinator, std::string token, bool remote);

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_PAGES_H_
