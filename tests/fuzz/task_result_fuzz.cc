// Copyright 2026 The kbisect Authors.
//
// Fuzzes the results a BisectJob accepts: the coordinator hands a worker's TaskResult to the job
// as it came off the wire (CompleteLease), so any bytes that parse as one must leave the job
// consistent. Each task's report is drawn from the input: a TaskResult parsed from bytes, a
// synthetic success with fuzzed sample values (NaN, infinities and extremes included), or a lost
// lease.

#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/job/bisect_job.h"
#include "google/protobuf/stubs/logging.h"
#include "tests/fuzz/job_driver.h"

// Invalid UTF-8 in a string field is refused with a log line: keep the fuzzer's output readable.
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider input(data, size);
  kbisect::v1::JobSpec spec;
  spec.set_repository("/repo");
  spec.set_good("v1");
  spec.add_bench_command("./bench.sh");
  spec.set_direction(input.ConsumeBool() ? kbisect::v1::DIRECTION_LOWER_IS_BETTER
                                         : kbisect::v1::DIRECTION_UNSPECIFIED);
  spec.set_runs_per_commit(input.ConsumeIntegralInRange(0, 5));
  spec.set_confirm(input.ConsumeBool());
  const int commits = input.ConsumeIntegralInRange(1, 64);
  kbisect::BisectJob job("job-fuzz", spec, kbisect::fuzz::MakeCommits(commits),
                         kbisect::fuzz::kStart);
  kbisect::fuzz::Drive(
      &job, 400, [&input](const kbisect::v1::Task& task) -> std::optional<kbisect::v1::TaskResult> {
        switch (input.ConsumeIntegralInRange(0, 3)) {
          case 0: {
            kbisect::v1::TaskResult result;
            const std::string bytes = input.ConsumeRandomLengthString(512);
            if (!result.ParseFromString(bytes)) result.Clear();
            return result;
          }
          case 1: {
            std::vector<double> values(input.ConsumeIntegralInRange(0, 6));
            for (double& v : values) v = input.ConsumeFloatingPoint<double>();
            return kbisect::fuzz::Samples(values);
          }
          case 2:
            return std::nullopt;
          default: {
            // Well-behaved: a 20% step at the middle, so the search makes progress.
            const double base = task.commit_index() * 2 >= 64 ? 12.0 : 10.0;
            return kbisect::fuzz::Samples({base, base * 1.001, base * 0.999});
          }
        }
      });
  return 0;
}
