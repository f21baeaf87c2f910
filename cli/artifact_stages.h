// Copyright 2026 The kbisect Authors.
//
// The stages of an artifact bisect (`kbisect run --artifact` and `kbisect submit --artifact
// --wait`, issue 47): the ledger prepared before the job, then, once the job over it ended, the
// companions isolated (--isolate-companions) and the commits between the two artifacts bisected
// (--repo), each a job of its own on the same coordinator; then the report of all of them. `run`
// drives them against its embedded coordinator, `submit --wait` against a cluster's.
#ifndef KBISECT_CLI_ARTIFACT_STAGES_H_
#define KBISECT_CLI_ARTIFACT_STAGES_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "cli/artifact_axis.h"
#include "cli/job_options.h"
#include "kbisect/v1/kbisect.grpc.pb.h"

namespace kbisect {

// Where an artifact bisect keeps its files: the ledger and the installs' notes under
// `ledger_dir`/artifacts, the benchmark run in `bench_dir`. On a cluster both must be paths
// every worker reaches (shared storage).
struct ArtifactPlaces {
  std::string ledger_dir;
  std::string bench_dir;
};

// --artifact: lists the index, resolves GOOD and BAD and makes `spec` bisect the ledger. With
// --repo SRC, `commit_stage` is `spec` as it was, over SRC: the commits between the last good and
// the first bad artifact's are bisected next (GOOD and BAD are set then). Returns 0, or the exit
// code after saying on stderr what was wrong.
int PrepareArtifacts(const ArtifactFlags& flags, const JobOptions& options,
                     const ArtifactPlaces& places, v1::JobSpec* spec,
                     std::optional<ArtifactAxis>* axis, std::optional<v1::JobSpec>* commit_stage);

// Submits `spec` to the coordinator behind `stub` and follows it to its end, printing `heading`,
// the job's header and its progress lines unless `quiet`.
absl::StatusOr<v1::JobStatus> SubmitAndFollow(v1::CoordinatorService::StubInterface* stub,
                                              const v1::JobSpec& spec, int workers, bool quiet,
                                              const std::string& heading);

// One pairing of --isolate-companions: its ledger (none when it could not be written) and its
// job's end.
struct IsolationPairing {
  std::optional<ArtifactAxis> axis;
  absl::StatusOr<v1::JobStatus> status;

  // ArtifactAxis::IsolationVerdict of the job, or "error".
  std::string Verdict() const;
};

// --isolate-companions: the first bad artifact with the last good one's companions (forward)
// and the last good artifact with the first bad one's (reverse).
struct CompanionIsolation {
  IsolationPairing forward;
  IsolationPairing reverse;

  // CombineIsolationVerdicts of the two.
  std::string Verdict() const;
};

// What followed an artifact bisect on the same workers: the companions isolated and the commits
// between the two artifacts.
struct ArtifactStages {
  std::optional<CompanionIsolation> isolation;
  std::optional<absl::StatusOr<v1::JobStatus>> commits;
};

// Runs the stages that follow the artifact job `artifacts` over `axis` (whose spec was
// `artifact_spec`): the isolation when `isolate`, then the commit stage with `commit_stage`
// unless the isolation found that the companions moved the metric (the artifact's own commits
// did not). The isolation's ledger goes under `ledger_dir`.
ArtifactStages RunArtifactStages(const ArtifactAxis& axis, const v1::JobStatus& artifacts,
                                 const v1::JobSpec& artifact_spec,
                                 const std::optional<v1::JobSpec>& commit_stage, bool isolate,
                                 const std::string& ledger_dir,
                                 v1::CoordinatorService::StubInterface* stub, int workers,
                                 bool quiet);

// Reports the artifact job's artifacts and the stages after it (terminal and --json); returns
// the exit code of the whole: the commit stage's when it ran, else `code` (the artifact job's).
int ReportArtifactStages(const ArtifactAxis& axis, const v1::JobStatus& artifacts,
                         const ArtifactStages& stages, const JobOptions& options, int code);

}  // namespace kbisect

#endif  // KBISECT_CLI_ARTIFACT_STAGES_H_
