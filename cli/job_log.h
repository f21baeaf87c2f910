// Copyright 2026 The kbisect Authors.
//
// A job's log as text: one line per decided commit, "VERDICT SHA [SAMPLES]  # where it came
// from", that `kbisect log` prints and `kbisect run --replay FILE` starts from. Its verdict
// lines replay as marks (coordinator/job/marks.h): edit a verdict to correct it, delete a line
// to measure that commit again. Baselines and undecided probes are comments: the ends of a range
// are always measured.
//
//   std::cout << FormatJobLog(job);
//   ASSIGN_OR_RETURN(std::vector<v1::CommitMark> marks, ParseJobLog(text));
#ifndef KBISECT_CLI_JOB_LOG_H_
#define KBISECT_CLI_JOB_LOG_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// The log of `job`: a header (comments), then its marks, baselines (as comments) and every
// bisect probe with a good, bad or skip verdict, in range order, with samples, round and worker.
std::string FormatJobLog(const v1::JobStatus& job);

// The marks a log replays: one per line "good|bad|skip SHA ..." (after '#' a line is a comment;
// blank lines are ignored). InvalidArgument naming the line for anything else.
absl::StatusOr<std::vector<v1::CommitMark>> ParseJobLog(const std::string& text);

// Reads the log at `path` and appends its marks to `spec`. NotFound when it cannot be read.
absl::Status AddReplayMarks(const std::string& path, v1::JobSpec* spec);

// Where `kbisect run` keeps the log of its last finished job: <cache_dir>/runs/last.log.
std::string LastRunLogPath(const std::string& cache_dir);

}  // namespace kbisect

#endif  // KBISECT_CLI_JOB_LOG_H_
