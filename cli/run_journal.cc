// Copyright 2026 The kbisect Authors.
#include "cli/run_journal.h"

#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "common/git/object_hash.h"
#include "common/rpc/proto_time.h"
#include "common/text/count.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace kbisect {

std::string RunJournalPath(const std::string& cache_dir, const v1::JobSpec& spec) {
  v1::JobSpec key = spec;
  key.clear_origin();
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);  // The env map in a fixed order.
    key.SerializeToCodedStream(&coded);
  }
  return absl::StrCat(cache_dir, "/runs/", GitBlobId(bytes), ".sqlite");
}

absl::StatusOr<std::unique_ptr<SqliteJobStore>> OpenRunJournal(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create the directory of '", path, "': ", ec.message()));
  }
  absl::StatusOr<std::unique_ptr<SqliteJobStore>> store = SqliteJobStore::Open(path);
  if (!store.ok() && store.status().code() == absl::StatusCode::kFailedPrecondition) {
    return absl::FailedPreconditionError(
        absl::StrCat("another `kbisect run` of this bisect is running (its journal ", path,
                     " is in use): wait for it, or give this one its own --cache-dir"));
  }
  return store;
}

void RemoveRunJournal(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal", ".lock"}) {
    std::error_code ec;
    std::filesystem::remove(path + suffix, ec);
  }
}

std::optional<v1::JobStatus> InterruptedJob(const Coordinator& coordinator) {
  const v1::ListJobsResponse jobs = coordinator.ListJobs(v1::ListJobsRequest());
  for (const v1::JobSummary& job : jobs.jobs()) {  // Newest first.
    if (job.state() == v1::JOB_STATE_DONE || job.state() == v1::JOB_STATE_FAILED ||
        job.state() == v1::JOB_STATE_CANCELLED) {
      continue;
    }
    absl::StatusOr<v1::JobStatus> status = coordinator.GetJob(job.job_id());
    // A follow-up is resumed with the job that started it (which waits for it).
    if (status.ok() && status->spec().parent_job_id().empty()) return *std::move(status);
  }
  return std::nullopt;
}

std::string ResumingText(const v1::JobStatus& job, absl::TimeZone zone) {
  int kept = 0;
  for (const v1::Probe& probe : job.probes()) {
    kept += probe.state() == v1::PROBE_STATE_FINISHED && probe.kind() != v1::PROBE_KIND_CONFIRM;
  }
  return absl::StrCat("Resuming the interrupted bisect from ",
                      absl::FormatTime("%H:%M", FromProto(job.create_time()), zone), " (",
                      job.job_id(), "): ", Count(kept, "probe"), " kept; --fresh starts over");
}

}  // namespace kbisect
