// Copyright 2026 The kbisect Authors.
//
// The one place the job's wire status is written from its parts' state (issue 48): each part
// owns its fields as typed members, and BisectJob::status() projects them into the
// v1::JobStatus the coordinator publishes, journals and streams, when the job changed since the
// last projection.
#include "coordinator/job/bisect_job.h"

namespace kbisect {

const v1::JobStatus& BisectJob::status() const {
  if (!compacted_ && projected_revision_ != revision_) {
    Project();
    projected_revision_ = revision_;
  }
  return status_;
}

void BisectJob::Project() const {
  if (confirmation_.has_confirmation()) {
    *status_.mutable_confirmation() = confirmation_.confirmation();
  } else {
    status_.clear_confirmation();
  }
  status_.clear_suite();
  for (const v1::SuiteMetricResult& row : suite_.rows()) *status_.add_suite() = row;
}

}  // namespace kbisect
