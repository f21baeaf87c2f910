// Copyright 2026 The kbisect Authors.
//
// Fuzzes a SubmitJobRequest from bytes through what Coordinator::SubmitJob does before any I/O:
// ValidateSpec and ResolveMarks over a synthetic 40-commit range; a spec that passes must make a
// BisectJob that runs (bounded) on synthetic latencies without crashing.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "common/spec/job_spec.h"
#include "coordinator/job/bisect_job.h"
#include "coordinator/job/marks.h"
#include "google/protobuf/stubs/logging.h"
#include "tests/fuzz/job_driver.h"

// Invalid UTF-8 in a string field is refused with a log line: keep the fuzzer's output readable.
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kbisect::v1::SubmitJobRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  if (!kbisect::ValidateSpec(request.spec()).ok()) return 0;
  const std::vector<kbisect::v1::CommitRef> commits = kbisect::fuzz::MakeCommits(40);
  if (!kbisect::ResolveMarks(request.spec(), commits).ok()) return 0;
  kbisect::BisectJob job("job-fuzz", request.spec(), commits, kbisect::fuzz::kStart);
  // A step at commit 23: GOOD-like below, BAD-like from it on.
  kbisect::fuzz::Drive(&job, 300, [](const kbisect::v1::Task& task) {
    const double base = task.commit_index() >= 23 ? 12.0 : 10.0;
    return std::optional<kbisect::v1::TaskResult>(
        kbisect::fuzz::Samples({base, base + 0.01, base - 0.01}));
  });
  return 0;
}
