// Copyright 2026 The kbisect Authors.
//
// The journal of one `kbisect run` bisect: the coordinator's own job store (a SQLite file,
// coordinator/job_store.h) kept in the cache directory under a name derived from the job's spec,
// so that running the same command again after a crash, a reboot or Ctrl-C finds the job and
// resumes it from its journal instead of starting over. The file is deleted once the job ends.
//
//   const std::string path = RunJournalPath(cache_dir, spec);
//   if (fresh) RemoveRunJournal(path);
//   ASSIGN_OR_RETURN(std::unique_ptr<SqliteJobStore> store, OpenRunJournal(path));
#ifndef KBISECT_CLI_RUN_JOURNAL_H_
#define KBISECT_CLI_RUN_JOURNAL_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "coordinator/coordinator.h"
#include "coordinator/job_store.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// <cache_dir>/runs/<digest>.sqlite, where the digest (a git blob id) covers the whole spec but
// its origin (who and where): repository, range, commands, options and marks. Two commands that
// describe the same bisect share a journal; any other difference starts a new one.
std::string RunJournalPath(const std::string& cache_dir, const v1::JobSpec& spec);

// Opens (creating the runs/ directory and the file) the journal. FailedPrecondition, saying so,
// when another `kbisect run` of the same bisect has it open.
absl::StatusOr<std::unique_ptr<SqliteJobStore>> OpenRunJournal(const std::string& path);

// Deletes the journal file, SQLite's companions (-wal, -shm, -journal) and the store's lock
// file (.lock); missing ones are fine. Only while no store has it open.
void RemoveRunJournal(const std::string& path);

// The newest job of `coordinator` that has not finished and is not a follow-up (its parent
// waits for it): the interrupted bisect to resume.
std::optional<v1::JobStatus> InterruptedJob(const Coordinator& coordinator);

// "Resuming the interrupted bisect from 10:42 (job-…): 14 probes kept; --fresh starts over",
// with the job's creation time in local time (`zone`).
std::string ResumingText(const v1::JobStatus& job, absl::TimeZone zone);

}  // namespace kbisect

#endif  // KBISECT_CLI_RUN_JOURNAL_H_
