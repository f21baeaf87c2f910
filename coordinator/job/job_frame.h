// Copyright 2026 The kbisect Authors.
//
// JobFrame: what every part of a bisect job reads and none of them decides alone (issue 48).
// It is the job's identity and normalised spec, its range and marks, its stage and outcome, the
// metric as the measurements named it, and the baselines the endpoint verdict recorded.
//
// BisectJob owns the one frame and is its only writer: it applies what the parts' steps return
// (EndpointStep's baselines and direction, the next stage, the end). The parts hold it const,
// the way LevelDB's parts hold the database's Options. The wire status is built from it, with
// every part's own state, in one place (job_status_projection.cc).
#ifndef KBISECT_COORDINATOR_JOB_JOB_FRAME_H_
#define KBISECT_COORDINATOR_JOB_JOB_FRAME_H_

#include <string>

#include "absl/time/time.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// The reference GOOD and BAD (in the reference's frame) as the endpoint verdict judged them,
// and the regression it found between them.
struct RecordedBaselines {
  v1::Baselines baselines;
  double regression_pct = 0;  // Of BAD versus GOOD, in the worse direction.
};

struct JobFrame {
  std::string job_id;
  v1::JobSpec spec;  // With its defaults filled in (NormalizeSpec).
  absl::Time create_time;
  std::string good_sha;
  std::string bad_sha;
  int commit_count = 0;  // BAD's index: the commits after GOOD.
  // The user's marks that resolved in the range (ResolveMarks); they stand in for measurements.
  google::protobuf::RepeatedPtrField<v1::CommitMark> marks;

  v1::JobState state = v1::JOB_STATE_BASELINES;
  v1::Outcome outcome = v1::OUTCOME_RUNNING;
  std::string error;  // With OUTCOME_ERROR (and others that explain): what to do.

  // The metric as its first measurement named it; the direction is the spec's until a result
  // or the endpoint verdict fixes it.
  std::string metric_name;
  std::string metric_unit;
  v1::Direction direction = v1::DIRECTION_UNSPECIFIED;

  RecordedBaselines recorded;

  bool bisecting() const { return state == v1::JOB_STATE_BISECTING; }
  bool finished() const {
    return state == v1::JOB_STATE_DONE || state == v1::JOB_STATE_FAILED ||
           state == v1::JOB_STATE_CANCELLED;
  }
  const v1::Baseline& good_baseline() const { return recorded.baselines.good(); }
  const v1::Baseline& bad_baseline() const { return recorded.baselines.bad(); }
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_JOB_FRAME_H_
