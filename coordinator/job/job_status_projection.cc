// Copyright 2026 The kbisect Authors.
//
// The one place the job's wire status is written from its parts' state (issue 48): each part
// owns its fields as typed members, and BisectJob::status() projects them into the
// v1::JobStatus the coordinator publishes, journals and streams, when the job changed since the
// last projection.
#include "coordinator/job/bisect_job.h"

namespace kbisect {
namespace {

// Writes the search's answer (SearchResult) into `status`.
void ProjectAnswer(const SearchAnswer& answer, v1::JobStatus* status) {
  if (answer.last_good.has_value()) {
    *status->mutable_last_good() = *answer.last_good;
  } else {
    status->clear_last_good();
  }
  if (answer.culprit.has_value()) {
    *status->mutable_culprit() = *answer.culprit;
  } else {
    status->clear_culprit();
  }
  status->clear_candidates();
  for (const std::string& sha : answer.candidates) status->add_candidates(sha);
  status->set_cause(answer.cause);
  status->set_before(answer.before);
  status->set_after(answer.after);
  status->set_culprit_regression_pct(answer.culprit_regression_pct);
  status->clear_culprits();
  for (const v1::Culprit& step : answer.culprits) *status->add_culprits() = step;
  status->set_multiple_steps(answer.multiple_steps);
  status->clear_measurement_changes();
  for (const std::string& change : answer.measurement_changes) {
    status->add_measurement_changes(change);
  }
  status->set_culprit_probability(answer.culprit_probability);
  status->clear_culprit_posterior();
  for (const v1::PositionProbability& position : answer.culprit_posterior) {
    *status->add_culprit_posterior() = position;
  }
  status->set_good_fail_rate(answer.good_fail_rate);
  status->set_bad_fail_rate(answer.bad_fail_rate);
}

}  // namespace

const v1::JobStatus& BisectJob::status() const {
  if (!compacted_ && projected_revision_ != revision_) {
    Project();
    projected_revision_ = revision_;
  }
  return status_;
}

void BisectJob::Project() const {
  *status_.mutable_probes() = book_.rows();
  if (confirmation_.has_confirmation()) {
    *status_.mutable_confirmation() = confirmation_.confirmation();
  } else {
    status_.clear_confirmation();
  }
  ProjectAnswer(result_.answer(), &status_);
  status_.clear_suite();
  for (const v1::SuiteMetricResult& row : suite_.rows()) *status_.add_suite() = row;
}

}  // namespace kbisect
