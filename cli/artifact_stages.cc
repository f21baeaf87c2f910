// Copyright 2026 The kbisect Authors.
#include "cli/artifact_stages.h"

#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "cli/job_outputs.h"
#include "cli/job_progress.h"
#include "cli/report/report.h"
#include "cli/report/status_json.h"
#include "cli/run_command.h"
#include "common/exec/exec.h"
#include "common/git/git_repo.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "worker/task_runner.h"

namespace kbisect {
namespace {

// Edits the --json result `file` (written by ReportFinalStatus) in place; nothing when there is
// none or it cannot be read.
void EditJsonResult(const std::string& file, const std::function<void(nlohmann::json*)>& edit) {
  if (file.empty()) return;
  std::ifstream in(file);
  nlohmann::json result = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (result.is_discarded()) return;
  edit(&result);
  std::ofstream(file) << result.dump(2) << "\n";
}

// One pairing of the isolation (ArtifactAxis::IsolateCompanions) bisected with the artifact
// job's `spec` on the same workers.
IsolationPairing IsolatePairing(const ArtifactAxis& axis, const ArtifactAxis::Step& step,
                                const std::vector<CompanionChange>& changes, bool reverse,
                                v1::JobSpec spec, const std::string& ledger_dir,
                                v1::CoordinatorService::StubInterface* stub, int workers,
                                bool quiet) {
  std::unique_ptr<CommandRunner> runner = NewSubprocessRunner();
  absl::StatusOr<ArtifactAxis> isolation = axis.IsolateCompanions(
      step.last_good, step.first_bad, changes, reverse, ledger_dir, runner.get());
  if (!isolation.ok()) return {std::nullopt, isolation.status()};
  isolation->ApplyTo(&spec, spec.env().at(kBenchDirEnv));
  const std::string what = reverse ? absl::StrCat("the companions of ", step.first_bad.version,
                                                  " with ", step.last_good.version)
                                   : absl::StrCat("the companions of ", step.first_bad.version);
  spec.set_description(absl::StrCat(what, " isolated"));
  absl::StatusOr<v1::JobStatus> status =
      SubmitAndFollow(stub, spec, workers, quiet,
                      absl::StrCat(reverse ? "Isolating the companions the other way: "
                                           : "Isolating the companions: ",
                                   isolation->Subject(1), ":"));
  return {*std::move(isolation), std::move(status)};
}

// --isolate-companions: when a companion pin moved between the last good and the first bad
// artifact of `artifacts` (a finished job over `axis`'s ledger), both pairings bisected with the
// artifact job's `spec` on the same workers. nullopt when no pin moved (said unless `quiet`).
std::optional<CompanionIsolation> IsolateCompanions(const ArtifactAxis& axis,
                                                    const v1::JobStatus& artifacts,
                                                    const v1::JobSpec& spec,
                                                    const std::string& ledger_dir,
                                                    v1::CoordinatorService::StubInterface* stub,
                                                    int workers, bool quiet) {
  const std::optional<ArtifactAxis::Step> step = axis.StepOf(artifacts);
  if (!step.has_value()) return std::nullopt;
  const std::vector<CompanionChange> changes =
      axis.CompanionsBetween(step->last_good.version, step->first_bad.version);
  if (changes.empty()) {
    if (!quiet) std::cout << "--isolate-companions: no companion pin moved, nothing to isolate\n";
    return std::nullopt;
  }
  CompanionIsolation isolation{
      IsolatePairing(axis, *step, changes, false, spec, ledger_dir, stub, workers, quiet),
      IsolatePairing(axis, *step, changes, true, spec, ledger_dir, stub, workers, quiet)};
  return isolation;
}

// One pairing's words on the terminal and its --json form.
nlohmann::json ReportPairing(const IsolationPairing& pairing) {
  nlohmann::json out = {{"verdict", pairing.Verdict()}};
  if (!pairing.status.ok()) {
    std::cerr << "kbisect: " << pairing.status.status().message() << "\n";
    out["error"] = std::string(pairing.status.status().message());
    return out;
  }
  std::cout << pairing.axis->IsolationText(*pairing.status);
  out["job"] = nlohmann::json::parse(StatusToJson(*pairing.status));
  return out;
}

// The isolation's words on the terminal and, in --json, `artifacts.isolation`.
void ReportIsolation(const CompanionIsolation& isolation, const std::string& name,
                     const JobOutputs& outputs) {
  const nlohmann::json forward = ReportPairing(isolation.forward);
  const nlohmann::json reverse = ReportPairing(isolation.reverse);
  const std::string verdict = isolation.Verdict();
  if (verdict == "both") {
    std::cout << "Companions isolated both ways: each pairing is partly slow: " << name
              << " and its companions each moved part of the step, or the step needs the two "
                 "together\n";
  }
  EditJsonResult(outputs.json_file, [&](nlohmann::json* result) {
    if (!result->contains("artifacts")) return;
    (*result)["artifacts"]["isolation"] = {
        {"verdict", verdict}, {"forward", forward}, {"reverse", reverse}};
  });
}

// The commit of `repository` an artifact's `commit` stands for: the main-branch commit a
// PyTorch nightly-branch commit names (NightlyReleaseCommit), when the repository holds both;
// else `commit` itself.
std::string MainlineCommit(const GitRepo& repository, const std::string& commit) {
  if (commit.empty()) return commit;
  absl::StatusOr<CommitInfo> info = repository.GetCommit(commit);
  if (!info.ok()) return commit;
  const std::optional<std::string> mainline = NightlyReleaseCommit(info->subject);
  if (!mainline.has_value() || !repository.GetCommit(*mainline).ok()) return commit;
  return *mainline;
}

// The commits between the last good and the first bad artifact of `artifacts` (a finished
// job over the ledger), bisected with `spec` over the artifacts' source on the cluster behind
// `stub`. Errors: the job named no artifact, an artifact's commit is unknown, the source does
// not hold it, or the coordinator's.
absl::StatusOr<v1::JobStatus> BisectCommitsBetween(const ArtifactAxis& axis,
                                                   const v1::JobStatus& artifacts, v1::JobSpec spec,
                                                   v1::CoordinatorService::StubInterface* stub,
                                                   int workers, bool quiet) {
  const std::optional<ArtifactAxis::Step> step = axis.StepOf(artifacts);
  if (!step.has_value()) {
    return absl::FailedPreconditionError(
        "no first bad artifact was named, so there are no commits to bisect");
  }
  const std::string& last_good = step->last_good.version;
  const std::string& first_bad = step->first_bad.version;
  ASSIGN_OR_RETURN(std::unique_ptr<GitRepo> source, GitRepo::Open(spec.repository()));
  spec.set_good(MainlineCommit(*source, axis.CommitOf(last_good)));
  spec.set_bad(MainlineCommit(*source, axis.CommitOf(first_bad)));
  if (spec.good().empty() || spec.bad().empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the commit of ", spec.good().empty() ? last_good : first_bad,
        " is not known (its module has no version.git_version, __git_version__ or __commit__ "
        "and its version no +g<sha> label): give --commit-of CMD"));
  }
  spec.set_description(absl::StrCat("the commits between ", last_good, " and ", first_bad));
  return SubmitAndFollow(
      stub, spec, workers, quiet,
      absl::StrCat("Going on into the commits between ", last_good, " and ", first_bad, ":"));
}

// The commit stage's report; its JSON joins the artifact stage's as "commit_stage". Returns
// the exit code of the whole run: the commit stage's.
int ReportCommitStage(const absl::StatusOr<v1::JobStatus>& commits, const JobOutputs& outputs) {
  if (!commits.ok()) {
    std::cerr << "kbisect: " << commits.status().message() << "\n";
    return kExitError;
  }
  std::cout << FormatReport(*commits) << std::flush;
  if (commits->status() == v1::OUTCOME_ERROR && !commits->error().empty()) {
    std::cerr << "kbisect: " << commits->error() << "\n";
  }
  EditJsonResult(outputs.json_file, [&](nlohmann::json* result) {
    (*result)["commit_stage"] = nlohmann::json::parse(StatusToJson(*commits));
  });
  return ExitCodeForJob(*commits);
}

// After an artifact bisect: the two artifacts and their commits on the terminal and in --json,
// and, unless the commit stage follows (`going_on`), the command that goes on into the commits
// between them.
void ReportArtifacts(const ArtifactAxis& axis, const v1::JobStatus& status,
                     const JobOptions& options, bool going_on) {
  std::cout << axis.SummaryText(status);
  EditJsonResult(options.outputs.json_file, [&](nlohmann::json* result) {
    (*result)["artifacts"] = nlohmann::json::parse(axis.SummaryJson(status));
  });
  const std::optional<ArtifactAxis::Step> step = axis.StepOf(status);
  if (going_on || !step.has_value()) return;
  const std::string from = axis.CommitOf(step->last_good.version);
  const std::string to = axis.CommitOf(step->first_bad.version);
  if (!from.empty() && !to.empty()) {
    std::cout << "To go on into the commits between them: kbisect run " << from << " " << to
              << " --repo " << (options.repo.empty() ? "SOURCE" : options.repo) << " --build "
              << (options.build.empty() ? "BUILD" : absl::StrCat("'", options.build, "'")) << " -- "
              << absl::StrJoin(options.bench_command, " ") << "\n";
  }
}

}  // namespace

std::string IsolationPairing::Verdict() const {
  return status.ok() && axis.has_value() ? axis->IsolationVerdict(*status) : "error";
}

std::string CompanionIsolation::Verdict() const {
  return CombineIsolationVerdicts(forward.Verdict(), reverse.Verdict());
}

int PrepareArtifacts(const ArtifactFlags& flags, const JobOptions& options,
                     const ArtifactPlaces& places, v1::JobSpec* spec,
                     std::optional<ArtifactAxis>* axis, std::optional<v1::JobSpec>* commit_stage) {
  if (options.find_good) {
    std::cerr << "kbisect: --artifact takes GOOD and BAD; --find-good is for commits\n";
    return kExitUsage;
  }
  if (!options.repo.empty()) {
    absl::StatusOr<std::unique_ptr<GitRepo>> source = GitRepo::Open(options.repo);
    if (!source.ok()) {
      std::cerr << "kbisect: --repo " << options.repo << " (the artifact's source, for the "
                << "commits between two artifacts): " << source.status().message() << "\n";
      return kExitError;
    }
    *commit_stage = *spec;
    (*commit_stage)
        ->set_repository((*source)->workdir().empty() ? (*source)->git_dir()
                                                      : (*source)->workdir());
  }
  std::unique_ptr<CommandRunner> runner = NewSubprocessRunner();
  absl::StatusOr<ArtifactAxis> prepared =
      ArtifactAxis::Prepare(flags, options.good, options.bad, places.ledger_dir, runner.get());
  if (!prepared.ok()) {
    std::cerr << "kbisect: " << prepared.status().message() << "\n";
    return prepared.status().code() == absl::StatusCode::kInvalidArgument ? kExitUsage : kExitError;
  }
  prepared->ApplyTo(spec, places.bench_dir);
  // Both stages run the benchmark in the same directory, against what the probe installed.
  if (commit_stage->has_value()) (*(*commit_stage)->mutable_env())[kBenchDirEnv] = places.bench_dir;
  *axis = *std::move(prepared);
  return 0;
}

absl::StatusOr<v1::JobStatus> SubmitAndFollow(v1::CoordinatorService::StubInterface* stub,
                                              const v1::JobSpec& spec, int workers, bool quiet,
                                              const std::string& heading) {
  v1::SubmitJobRequest request;
  *request.mutable_spec() = spec;
  v1::SubmitJobResponse submitted;
  grpc::ClientContext context;
  const grpc::Status status = stub->SubmitJob(&context, request, &submitted);
  if (!status.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                        absl::StrCat(spec.description(), " (", spec.good(), "..", spec.bad(),
                                     " in ", spec.repository(), "): ", status.error_message()));
  }
  if (!quiet) {
    std::cout << heading << "\n";
    PrintJobHeader(submitted.job(), workers, std::cout);
  }
  JobFollower follower(stub, submitted.job_id());
  ProgressLines lines(submitted.job(), workers);
  return follower.Follow([&](const v1::JobEvent& e) {
    if (!quiet && IsProgressLine(e)) std::cout << lines.Line(e, absl::Now()) << "\n" << std::flush;
  });
}

ArtifactStages RunArtifactStages(const ArtifactAxis& axis, const v1::JobStatus& artifacts,
                                 const v1::JobSpec& artifact_spec,
                                 const std::optional<v1::JobSpec>& commit_stage, bool isolate,
                                 const std::string& ledger_dir,
                                 v1::CoordinatorService::StubInterface* stub, int workers,
                                 bool quiet) {
  ArtifactStages stages;
  if (isolate) {
    stages.isolation =
        IsolateCompanions(axis, artifacts, artifact_spec, ledger_dir, stub, workers, quiet);
  }
  const bool companions_moved_it =
      stages.isolation.has_value() && stages.isolation->Verdict() == "companions";
  if (commit_stage.has_value() && !companions_moved_it) {
    stages.commits = BisectCommitsBetween(axis, artifacts, *commit_stage, stub, workers, quiet);
  }
  return stages;
}

int ReportArtifactStages(const ArtifactAxis& axis, const v1::JobStatus& artifacts,
                         const ArtifactStages& stages, const JobOptions& options, int code) {
  ReportArtifacts(axis, artifacts, options, stages.commits.has_value());
  if (stages.isolation.has_value()) {
    ReportIsolation(*stages.isolation, axis.name(), options.outputs);
  }
  if (stages.commits.has_value()) return ReportCommitStage(*stages.commits, options.outputs);
  return code;
}

}  // namespace kbisect
