// Copyright 2026 The kbisect Authors.
//
// The one place the job's wire status is written (issue 48): the frame (job_frame.h) and the
// tally are the job's own typed state, each part owns its fields as typed members, and
// BisectJob::status() projects them all into the v1::JobStatus the coordinator publishes,
// journals and streams, when the job changed since the last projection. A compacted job
// (BisectJob::Finished) keeps the final status it was restored with.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/rpc/proto_time.h"
#include "coordinator/job/bisect_job.h"
#include "report/event_words.h"

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

// Writes the job's frame (job_frame.h) into `status`.
void ProjectFrame(const JobFrame& frame, v1::JobStatus* status) {
  status->set_job_id(frame.job_id);
  *status->mutable_spec() = frame.spec;
  *status->mutable_create_time() = ToProto(frame.create_time);
  status->set_good_sha(frame.good_sha);
  status->set_bad_sha(frame.bad_sha);
  status->set_commit_count(frame.commit_count);
  *status->mutable_marks() = frame.marks;
  status->set_state(frame.state);
  status->set_status(frame.outcome);
  status->set_error(frame.error);
  status->set_metric_name(frame.metric_name);
  status->set_metric_unit(frame.metric_unit);
  status->set_direction(frame.direction);
  const v1::Baselines& baselines = frame.recorded.baselines;
  if (baselines.has_good() || baselines.has_bad()) {
    *status->mutable_baseline() = baselines;
  } else {
    status->clear_baseline();
  }
  status->set_regression_pct(frame.recorded.regression_pct);
}

// Writes what the job counted and kept along the way into `status`; each warning as its fact and
// as its words.
void ProjectTally(const JobTally& tally, v1::JobStatus* status) {
  status->set_bench_runs(tally.bench_runs);
  status->set_cached_probes(tally.cached_probes);
  status->mutable_cache_refused_workers()->Assign(tally.cache_refused_workers.begin(),
                                                  tally.cache_refused_workers.end());
  status->mutable_drift_events()->Assign(tally.drift_events.begin(), tally.drift_events.end());
  status->clear_warnings();
  for (const v1::JobWarning& warning : tally.warnings) status->add_warnings(WarningWords(warning));
  status->mutable_warning_facts()->Assign(tally.warnings.begin(), tally.warnings.end());
  status->mutable_workers()->Assign(tally.worker_report.begin(), tally.worker_report.end());
  if (tally.finish_time.has_value()) {
    *status->mutable_finish_time() = ToProto(*tally.finish_time);
  } else {
    status->clear_finish_time();
  }
  status->set_wall_seconds(tally.wall_seconds);
}

}  // namespace

const v1::JobStatus& BisectJob::status() const {
  if (!compacted_ && projected_revision_ != revision_) {
    Project();
    projected_revision_ = revision_;
  }
  return projection_;
}

std::unique_ptr<BisectJob> BisectJob::Finished(std::string job_id, v1::JobSpec spec,
                                               v1::JobStatus final_status, absl::Time create_time) {
  std::vector<v1::CommitRef> ends(2);
  ends[0].set_sha(final_status.good_sha());
  ends[1].set_sha(final_status.bad_sha());
  auto job =
      std::make_unique<BisectJob>(std::move(job_id), std::move(spec), std::move(ends), create_time);
  job->events_.Take();  // Its STARTED event: a compacted job emits none.
  job->frame_.state = final_status.state();
  job->frame_.outcome = final_status.status();
  job->projection_ = std::move(final_status);
  job->compacted_ = true;
  return job;
}

void BisectJob::Project() const {
  ProjectFrame(frame_, &projection_);
  ProjectTally(tally_, &projection_);
  projection_.set_last_good_index(ledger_.shown_last_good());
  projection_.set_first_bad_index(ledger_.shown_first_bad());
  projection_.set_rounds(ledger_.max_round());
  *projection_.mutable_progress() = ledger_.progress();
  *projection_.mutable_probes() = book_.rows();
  if (confirmation_.has_confirmation()) {
    *projection_.mutable_confirmation() = confirmation_.confirmation();
  } else {
    projection_.clear_confirmation();
  }
  ProjectAnswer(result_.answer(), &projection_);
  projection_.clear_suite();
  for (const v1::SuiteMetricResult& row : suite_.rows()) *projection_.add_suite() = row;
}

}  // namespace kbisect
