// Copyright 2026 The kbisect Authors.
#include "cli/client_commands.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/artifact_axis.h"
#include "cli/artifact_stages.h"
#include "cli/find_good.h"
#include "cli/job_log.h"
#include "cli/job_options.h"
#include "cli/job_progress.h"
#include "cli/report/report.h"
#include "cli/report/status_json.h"
#include "cli/run_command.h"
#include "cli/try_change.h"
#include "common/exec/signals.h"
#include "common/flags/flag_checks.h"
#include "common/rpc/credentials.h"
#include "common/rpc/proto_time.h"
#include "common/status_macros.h"
#include "grpcpp/create_channel.h"
#include "kbisect/v1/kbisect.grpc.pb.h"
#include "worker/clock_lock.h"
#include "worker/worker_slot.h"

namespace kbisect {
namespace {

constexpr char kDefaultCoordinator[] = "127.0.0.1:7070";
constexpr absl::Duration kRpcTimeout = absl::Seconds(30);

constexpr char kConnectionFooter[] = R"(
Connection: --coordinator (or KBISECT_COORDINATOR) names the kbisect-coordinator, default
127.0.0.1:7070. With TLS give --tls-ca (KBISECT_TLS_CA), and either a bearer token
(KBISECT_TOKEN, --token-file) or a client certificate (--tls-cert/--tls-key).
)";

constexpr char kSubmitFooter[] = R"(
Usage: kbisect submit GOOD [BAD] --repo URL|PATH [options] -- BENCH_CMD [ARGS...]
       kbisect submit --artifact NAME (--find-links DIR | --index-url URL) GOOD BAD
                      [--ledger-dir DIR] [--wait [--repo SRC --build CMD]] -- BENCH_CMD ...

Submits a bisect job to the coordinator and prints its job id on stdout. --repo is fetched by
the coordinator and the workers themselves, so it must be a URL or a path they can reach (an
existing local path is made absolute). With --request-id, submitting the same id again returns
the job created the first time (safe retries from nightly CI). With --wait, follows the job and
exits like `kbisect run`: 0 culprit found, 1 error/cancelled, 3 no regression, 4 inconclusive,
130 interrupted (the job keeps running on the coordinator).

With --artifact the job bisects the versions an index lists (docs/cli.md, "Nightly artifacts"):
their ledger is written under --ledger-dir and the benchmark runs in the current directory, so
both, and a --find-links directory, must be paths every worker reaches (shared storage).
)";

struct ConnectionOptions {
  std::string address = kDefaultCoordinator;
  std::string token;
  std::string token_file;
  ClientCredentialOptions tls;
};

void AddConnectionOptions(CLI::App* app, ConnectionOptions* o) {
  app->add_option("--coordinator", o->address, "Coordinator address host:port")
      ->envname("KBISECT_COORDINATOR")
      ->capture_default_str();
  app->add_option("--token", o->token,
                  "Bearer token (prefer KBISECT_TOKEN or --token-file: command lines are "
                  "visible to other users)")
      ->envname("KBISECT_TOKEN");
  app->add_option("--token-file", o->token_file, "File holding the bearer token")
      ->envname("KBISECT_TOKEN_FILE");
  app->add_option("--tls-ca", o->tls.ca_file, "PEM CA that signs the coordinator's certificate")
      ->envname("KBISECT_TLS_CA");
  app->add_option("--tls-cert", o->tls.cert_file, "PEM client certificate (mutual TLS)")
      ->envname("KBISECT_TLS_CERT");
  app->add_option("--tls-key", o->tls.key_file, "PEM key of the client certificate")
      ->envname("KBISECT_TLS_KEY");
}

// Explains a failed call in terms of the coordinator's address and what to do.
std::string DescribeFailure(const grpc::Status& status, const std::string& address) {
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      return absl::StrCat("cannot reach the coordinator at ", address, " (", status.error_message(),
                          "). Is kbisect-coordinator running there? Point to it with "
                          "--coordinator or KBISECT_COORDINATOR.");
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return absl::StrCat("the coordinator at ", address, " did not answer within ",
                          absl::FormatDuration(kRpcTimeout));
    case grpc::StatusCode::UNAUTHENTICATED:
      return absl::StrCat("the coordinator at ", address, " refused the credentials (",
                          status.error_message(),
                          "): set KBISECT_TOKEN or --token-file, or a client certificate with "
                          "--tls-cert/--tls-key");
    case grpc::StatusCode::PERMISSION_DENIED:
      return absl::StrCat("the coordinator at ", address,
                          " denied the request: ", status.error_message());
    default:
      return status.error_message();
  }
}

// A connection to the coordinator.
class Client {
 public:
  // Returns null after printing the problem (a usage error) when the credentials are wrong.
  static std::unique_ptr<Client> Connect(const ConnectionOptions& options) {
    ClientCredentialOptions tls = options.tls;
    tls.token = options.token;
    if (!options.token_file.empty()) {
      absl::StatusOr<std::string> token = ReadTokenFile(options.token_file);
      if (!token.ok()) {
        std::cerr << "kbisect: " << token.status().message() << "\n";
        return nullptr;
      }
      tls.token = *std::move(token);
    }
    absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
        MakeChannelCredentials(tls);
    if (!credentials.ok()) {
      std::cerr << "kbisect: " << credentials.status().message() << "\n";
      return nullptr;
    }
    std::unique_ptr<Client> client(new Client());
    client->address_ = options.address;
    client->stub_ = v1::CoordinatorService::NewStub(
        grpc::CreateChannel(options.address, *std::move(credentials)));
    return client;
  }

  v1::CoordinatorService::Stub* stub() { return stub_.get(); }
  const std::string& address() const { return address_; }

  // A context with the unary-call deadline.
  static std::unique_ptr<grpc::ClientContext> Context() {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() +
                          std::chrono::milliseconds(absl::ToInt64Milliseconds(kRpcTimeout)));
    return context;
  }

  // Prints the failure and returns the exit code for it.
  int Fail(const grpc::Status& status) const {
    std::cerr << "kbisect: " << DescribeFailure(status, address_) << "\n";
    return kExitError;
  }

 private:
  Client() = default;
  std::string address_;
  std::unique_ptr<v1::CoordinatorService::Stub> stub_;
};

// Parses `args` (subcommand name first). Returns -1 to go on, otherwise the exit code.
int Parse(CLI::App* app, std::vector<std::string> args) {
  std::reverse(args.begin(), args.end());
  args.pop_back();  // The subcommand name.
  try {
    app->parse(args);
  } catch (const CLI::ParseError& e) {
    return ReportParseError(*app, e);
  }
  return -1;
}

std::string Age(const google::protobuf::Timestamp& t) {
  if (t.seconds() == 0 && t.nanos() == 0) return "never";
  const int64_t seconds = absl::ToInt64Seconds(absl::Now() - FromProto(t));
  if (seconds < 120) return absl::StrCat(std::max<int64_t>(0, seconds), "s ago");
  if (seconds < 7200) return absl::StrCat(seconds / 60, "m ago");
  if (seconds < 172800) return absl::StrCat(seconds / 3600, "h ago");
  return absl::StrCat(seconds / 86400, "d ago");
}

// Prints rows as left-aligned columns separated by two spaces; the first row is the header.
void PrintTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      absl::StrAppend(&line, row[i]);
      if (i + 1 < row.size()) line.append(widths[i] - row[i].size() + 2, ' ');
    }
    std::cout << line << "\n";
  }
  std::cout << std::flush;
}

// Workers that can take part in a job with `spec` right now (at least 1, for the header).
int EligibleWorkers(Client* client, const v1::JobSpec& spec) {
  v1::ListWorkersResponse response;
  auto context = Client::Context();
  if (!client->stub()->ListWorkers(context.get(), v1::ListWorkersRequest(), &response).ok()) {
    return 1;
  }
  int count = 0;
  for (const v1::Worker& worker : response.workers()) {
    if (worker.state() == v1::WORKER_STATE_LOST) continue;
    if (!spec.hardware_class().empty() &&
        worker.identity().hardware_class() != spec.hardware_class()) {
      continue;
    }
    ++count;
  }
  if (spec.max_workers() > 0) count = std::min(count, spec.max_workers());
  return std::max(1, count);
}

// A job followed to its end: its final status, or the exit code after saying on stderr why
// there is none (interrupted: 130, the job lost: 1).
struct FollowedJob {
  std::optional<v1::JobStatus> status;
  int code = 0;
};

// Follows the job `initial` to its end as `kbisect run` shows it (its header and progress lines
// unless `quiet`).
FollowedJob FollowJob(Client* client, const v1::JobStatus& initial, bool quiet) {
  const int workers = EligibleWorkers(client, initial.spec());
  if (!quiet) PrintJobHeader(initial, workers, std::cout);
  ProgressLines lines(initial, workers);
  JobFollower follower(client->stub(), initial.job_id());
  absl::StatusOr<v1::JobStatus> final_status;
  bool interrupted = false;
  {
    TerminationWatcher stop([&follower] { follower.Stop(); });
    final_status = follower.Follow([&](const v1::JobEvent& e) {
      if (!quiet && IsProgressLine(e))
        std::cout << lines.Line(e, absl::Now()) << "\n" << std::flush;
    });
    interrupted = stop.signalled();
  }
  if (interrupted) {
    std::cerr << "\nkbisect: stopped following job " << initial.job_id()
              << "; it keeps running on the coordinator (follow it with `kbisect watch "
              << initial.job_id() << "`, stop it with `kbisect cancel " << initial.job_id()
              << "`)\n";
    return {std::nullopt, kExitInterrupted};
  }
  if (!final_status.ok()) {
    std::cerr << "kbisect: lost job " << initial.job_id() << " at " << client->address() << ": "
              << final_status.status().message() << "\n";
    return {std::nullopt, kExitError};
  }
  return {*std::move(final_status), 0};
}

// Follows `job_id` to its end as `kbisect run` shows it, then prints the report. Returns the
// exit code.
int FollowToEnd(Client* client, const v1::JobStatus& initial, bool quiet,
                const JobOutputs& outputs) {
  FollowedJob followed = FollowJob(client, initial, quiet);
  if (!followed.status.has_value()) return followed.code;
  return ReportFinalStatus(*followed.status, outputs);
}

// A local path that exists is made absolute (workers resolve it on their own filesystem); URLs
// and anything else go as given.
std::string RepositoryLocation(const std::string& repo) {
  if (repo.find("://") != std::string::npos) return repo;
  std::error_code error;
  if (!std::filesystem::exists(repo, error)) return repo;
  std::string path = std::filesystem::absolute(repo, error).lexically_normal().string();
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return error ? repo : path;
}

// `kbisect submit`'s flags, as given.
struct SubmitFlags {
  JobOptions options;
  ConnectionOptions connection;
  ArtifactFlags artifact;
  std::string ledger_dir = DefaultCacheDir();
  std::string request_id;
  bool wait = false;
  bool quiet = false;
  std::string origin = "user";
  std::string trigger;
  std::string lock_clocks;  // --lock-clocks: only workers locked so take part.
  // --try: GOOD is the base and the job measures the change on it (cli/try_change.h).
  bool try_mode = false;
  TryFlags try_change;
};

// Parses `kbisect submit`'s command line into `flags`. Returns -1 to go on, else the exit code
// (--help, a usage error).
int ParseSubmitFlags(int argc, char** argv, SubmitFlags* flags) {
  std::vector<std::string> args = SplitAtDoubleDash(argc, argv, &flags->options.bench_command);
  CLI::App app{"Submit a bisect job to a kbisect coordinator.", "kbisect submit"};
  app.footer(absl::StrCat(kSubmitFooter, kConnectionFooter));
  AddJobOptions(&app, &flags->options);
  AddConnectionOptions(&app, &flags->connection);
  AddArtifactFlags(&app, &flags->artifact);
  app.add_option("--ledger-dir", flags->ledger_dir,
                 "With --artifact: where the ledger of the index's versions and the installs' "
                 "notes are written; the coordinator and every worker must reach it (shared "
                 "storage)")
      ->capture_default_str();
  app.add_option("--request-id", flags->request_id,
                 "Idempotency key: the same id again returns the job created the first time");
  app.add_flag("--wait", flags->wait,
               "Follow the job to its end and exit with `kbisect run`'s codes");
  app.add_flag("-q,--quiet", flags->quiet, "With --wait, print only the final report");
  app.add_option("--origin", flags->origin, "Who asks: user, nightly or triage")
      ->check(CLI::IsMember({"user", "nightly", "triage"}))
      ->capture_default_str();
  app.add_option("--trigger", flags->trigger,
                 "Free text kept with the job: CI run id, dashboard URL");
  app.add_option("--lock-clocks", flags->lock_clocks,
                 "base|max|SM[,MEM]: run only on workers whose GPUs are locked so (started with "
                 "`kbisect-worker --lock-clocks`); the job is pinned to their hardware class")
      ->check([](const std::string& spec) {
        absl::StatusOr<ClockLockSpec> parsed = ParseClockLockSpec(spec);
        return parsed.ok() ? std::string() : std::string(parsed.status().message());
      });
  app.add_flag("--try", flags->try_mode,
               "Measure a change on GOOD (the base) against GOOD instead of bisecting: give "
               "--revert SHA, --commit SHA or --patch FILE; exits 0 when significant, 3 when not");
  AddTryFlags(&app, &flags->try_change);
  if (int code = Parse(&app, args); code >= 0) return code;
  flags->try_mode = flags->try_mode || flags->try_change.enabled();
  if (flags->options.repo.empty() && !flags->artifact.enabled()) {
    std::cerr << "kbisect: submit needs --repo URL|PATH, a repository location the coordinator "
                 "and the workers can reach\nRun `kbisect submit --help` for usage.\n";
    return kExitUsage;
  }
  if (flags->artifact.enabled() && !flags->wait &&
      (!flags->options.repo.empty() || flags->artifact.isolate_companions)) {
    std::cerr << "kbisect: submit --artifact with --repo or --isolate-companions needs --wait: "
                 "the client submits those stages once the artifact job has ended\n";
    return kExitUsage;
  }
  return -1;
}

// The job `flags` ask for, its repository at `repository`, with who asked. InvalidArgument for
// options that do not fit.
absl::StatusOr<v1::JobSpec> SubmitSpec(const SubmitFlags& flags, const std::string& repository) {
  ASSIGN_OR_RETURN(v1::JobSpec spec, ToJobSpec(flags.options, repository));
  v1::JobOrigin* job_origin = spec.mutable_origin();
  job_origin->set_kind(flags.origin == "nightly"  ? v1::ORIGIN_KIND_NIGHTLY
                       : flags.origin == "triage" ? v1::ORIGIN_KIND_TRIAGE
                                                  : v1::ORIGIN_KIND_USER);
  job_origin->set_trigger(flags.trigger);
  return spec;
}

// --lock-clocks: pins `spec` to the hardware class of the live workers whose GPUs are locked as
// `lock` asks (a lock is the worker's: decision 202). FailedPrecondition when none is, or when
// they span several classes and `spec` names none of them.
absl::Status PinToLockedWorkers(Client* client, const std::string& lock, v1::JobSpec* spec) {
  const ClockLockSpec wanted = *ParseClockLockSpec(lock);  // Checked when parsed.
  v1::ListWorkersResponse response;
  auto context = Client::Context();
  grpc::Status listed =
      client->stub()->ListWorkers(context.get(), v1::ListWorkersRequest(), &response);
  if (!listed.ok()) {
    return absl::UnavailableError(absl::StrCat("cannot list the workers: ", listed.error_message()));
  }
  std::set<std::string> classes;
  for (const v1::Worker& worker : response.workers()) {
    if (worker.state() == v1::WORKER_STATE_LOST || !LockedAs(worker.identity(), wanted)) continue;
    classes.insert(worker.identity().hardware_class());
  }
  if (!spec->hardware_class().empty()) {
    if (classes.count(spec->hardware_class()) > 0) return absl::OkStatus();
    return absl::FailedPreconditionError(
        absl::StrCat("no live worker of hardware class ", spec->hardware_class(),
                     " has its GPUs locked at --lock-clocks ", lock));
  }
  if (classes.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no live worker has its GPUs locked at --lock-clocks ", lock,
        ": start workers with `kbisect-worker --lock-clocks ", lock,
        "` (a lock is the worker's, for as long as it serves; see `kbisect workers`)"));
  }
  if (classes.size() > 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the workers locked at --lock-clocks ", lock, " span ", classes.size(),
        " hardware classes (", absl::StrJoin(classes, ", "), "): choose one with --hardware-class"));
  }
  spec->set_hardware_class(*classes.begin());
  return absl::OkStatus();
}

// Prints the submitted job's id (and that an earlier submission is that job), then follows it
// with --wait or writes --json. Returns the exit code.
int FollowSubmitted(Client* client, const v1::SubmitJobResponse& response,
                    const SubmitFlags& flags) {
  std::cout << response.job_id() << "\n" << std::flush;
  if (response.existing()) {
    std::cerr << "kbisect: request id " << flags.request_id << " was submitted before; job "
              << response.job_id() << " is that submission\n";
  }
  const JobOutputs& outputs = flags.options.outputs;
  if (flags.wait) return FollowToEnd(client, response.job(), flags.quiet, outputs);
  if (!outputs.json_file.empty()) {
    std::ofstream out(outputs.json_file);
    out << StatusToJson(response.job()) << "\n";
    if (!out) {
      std::cerr << "kbisect: cannot write " << outputs.json_file << "\n";
      return kExitError;
    }
  }
  return 0;
}

// --find-good: GOOD is found by looking back from BAD, one lookback job per eligible worker at
// once; the job kept bisects from it (cli/find_good.h). Returns the exit code.
int SubmitFindingGood(Client* client, const v1::JobSpec& spec, int max_lookback,
                      const SubmitFlags& flags) {
  const std::string bad = spec.bad().empty() ? "HEAD" : spec.bad();
  absl::StatusOr<FindGoodResult> found =
      FindGood(client->stub(), spec, max_lookback, EligibleWorkers(client, spec),
               flags.quiet ? nullptr : &std::cerr);
  if (!found.ok()) {
    std::cerr << "kbisect: " << found.status().message() << "\n";
    return kExitError;
  }
  if (found->job_id.empty()) {
    std::cerr << "kbisect: " << NothingBetterText(*found, bad, flags.options.since) << "\n";
    return kExitNoRegression;
  }
  if (!flags.quiet) std::cerr << FoundGoodText(*found, bad) << "\n";
  v1::GetJobRequest get;
  get.set_job_id(found->job_id);
  v1::GetJobResponse job;
  auto context = Client::Context();
  grpc::Status status = client->stub()->GetJob(context.get(), get, &job);
  if (!status.ok()) return client->Fail(status);
  v1::SubmitJobResponse response;
  *response.mutable_job() = std::move(*job.mutable_job());
  response.set_job_id(found->job_id);
  return FollowSubmitted(client, response, flags);
}

// Submits `spec` with --request-id into `response`.
grpc::Status SubmitSpecTo(Client* client, v1::JobSpec spec, const SubmitFlags& flags,
                          v1::SubmitJobResponse* response) {
  v1::SubmitJobRequest request;
  *request.mutable_spec() = std::move(spec);
  request.set_request_id(flags.request_id);
  auto context = Client::Context();
  return client->stub()->SubmitJob(context.get(), request, response);
}

// Submits `spec` as it is. Returns the exit code.
int SubmitOne(Client* client, v1::JobSpec spec, const SubmitFlags& flags) {
  v1::SubmitJobResponse response;
  grpc::Status status = SubmitSpecTo(client, std::move(spec), flags, &response);
  if (!status.ok()) return client->Fail(status);
  return FollowSubmitted(client, response, flags);
}

// --artifact: the index's versions are written as a ledger under --ledger-dir and the job
// bisects it, the benchmark running in this directory (both must be reachable by every worker).
// With --wait, the companions and the commits between the two artifacts follow, as in `kbisect
// run --artifact` (cli/artifact_stages.h). Returns the exit code.
int SubmitArtifacts(const SubmitFlags& flags) {
  std::error_code error;
  const ArtifactPlaces places{
      std::filesystem::absolute(flags.ledger_dir, error).lexically_normal().string(),
      std::filesystem::current_path(error).string()};
  absl::StatusOr<v1::JobSpec> spec = SubmitSpec(flags, "");
  if (!spec.ok()) {
    std::cerr << "kbisect submit: " << spec.status().message() << "\n";
    return kExitUsage;
  }
  std::optional<ArtifactAxis> axis;
  std::optional<v1::JobSpec> commit_stage;
  JobOptions options = flags.options;
  options.repo = options.repo.empty() ? "" : RepositoryLocation(options.repo);
  if (int failed = PrepareArtifacts(flags.artifact, options, places, &*spec, &axis, &commit_stage);
      failed != 0) {
    return failed;
  }
  spec->set_repository(axis->ledger());
  if (flags.wait) BlockTerminationSignals();  // Before gRPC starts its threads.
  std::unique_ptr<Client> client = Client::Connect(flags.connection);
  if (client == nullptr) return kExitUsage;
  if (!flags.wait) return SubmitOne(client.get(), *spec, flags);
  v1::SubmitJobResponse response;
  grpc::Status status = SubmitSpecTo(client.get(), *spec, flags, &response);
  if (!status.ok()) return client->Fail(status);
  std::cout << response.job_id() << "\n" << std::flush;
  FollowedJob followed = FollowJob(client.get(), response.job(), flags.quiet);
  if (!followed.status.has_value()) return followed.code;
  const int workers = EligibleWorkers(client.get(), *spec);
  const ArtifactStages stages = RunArtifactStages(
      *axis, *followed.status, *spec, commit_stage, flags.artifact.isolate_companions,
      places.ledger_dir, client->stub(), workers, flags.quiet);
  const int code = ReportFinalStatus(*followed.status, options.outputs);
  return ReportArtifactStages(*axis, *followed.status, stages, options, code);
}

int Submit(int argc, char** argv) {
  SubmitFlags flags;
  if (int code = ParseSubmitFlags(argc, argv, &flags); code >= 0) return code;
  if (flags.artifact.enabled()) return SubmitArtifacts(flags);
  const JobOptions& options = flags.options;
  absl::StatusOr<v1::JobSpec> spec = SubmitSpec(flags, RepositoryLocation(options.repo));
  if (!spec.ok()) {
    std::cerr << "kbisect submit: " << spec.status().message() << "\n"
              << "Run `kbisect submit --help` for usage.\n";
    return kExitUsage;
  }
  if (flags.try_mode) {
    if (int code = PrepareTry(flags.try_change, spec->repository(), "kbisect submit --try",
                              &*spec);
        code >= 0) {
      return code;
    }
  }
  // --find-good --since DATE: how far back the lookback goes, from the commit dates.
  const std::string bad = spec->bad().empty() ? "HEAD" : spec->bad();
  const absl::StatusOr<int> max_lookback = LookbackReach(
      options.find_good ? options.since : "", options.max_lookback, spec->repository(), bad);
  if (!max_lookback.ok()) {
    std::cerr << "kbisect: " << max_lookback.status().message() << "\n";
    return max_lookback.status().code() == absl::StatusCode::kInvalidArgument ? kExitUsage
                                                                              : kExitError;
  }
  if (options.find_good && *max_lookback == 0) {
    std::cerr << "kbisect: " << NothingSinceText(options.since, bad) << "\n";
    return kExitNoRegression;
  }
  if (flags.wait) BlockTerminationSignals();  // Before gRPC starts its threads.
  std::unique_ptr<Client> client = Client::Connect(flags.connection);
  if (client == nullptr) return kExitUsage;
  if (!flags.lock_clocks.empty()) {
    if (absl::Status pinned = PinToLockedWorkers(client.get(), flags.lock_clocks, &*spec);
        !pinned.ok()) {
      std::cerr << "kbisect submit: " << pinned.message() << "\n";
      return kExitError;
    }
  }
  if (options.find_good) return SubmitFindingGood(client.get(), *spec, *max_lookback, flags);
  return SubmitOne(client.get(), *std::move(spec), flags);
}

// A job's age as kubectl shows it: "45s ago", "5m ago", "3h ago", "2d ago".
std::string Age(absl::Duration age) {
  const int64_t s = std::max<int64_t>(0, absl::ToInt64Seconds(age));
  if (s < 60) return absl::StrCat(s, "s ago");
  if (s < 3600) return absl::StrCat(s / 60, "m ago");
  if (s < 86400) return absl::StrCat(s / 3600, "h ago");
  return absl::StrCat(s / 86400, "d ago");
}

int Status(int argc, char** argv) {
  CLI::App app{"Show one job's report, or list the coordinator's jobs.", "kbisect status"};
  app.footer(kConnectionFooter);
  ConnectionOptions connection;
  AddConnectionOptions(&app, &connection);
  std::string job_id;
  bool json = false;
  int limit = 50;
  app.add_option("JOB", job_id, "Job id (default: list jobs, newest first)");
  app.add_flag("--json", json, "Print JSON (the `run --json` schema for one job)");
  JobOutputs outputs;
  AddJobOutputFlags(&app, &outputs, /*notify=*/false);
  bool wide = false;
  app.add_flag("--wide", wide, "In the list, CREATED as RFC 3339 with the zone, not an age");
  app.add_option("--limit", limit, "Most jobs listed")
      ->capture_default_str()
      ->check(WholeNumberIn(1, 10000, "jobs"));
  if (int code = Parse(&app, std::vector<std::string>(argv, argv + argc)); code >= 0) {
    return code;
  }
  std::unique_ptr<Client> client = Client::Connect(connection);
  if (client == nullptr) return kExitUsage;
  auto context = Client::Context();
  if (!job_id.empty()) {
    v1::GetJobRequest request;
    request.set_job_id(job_id);
    v1::GetJobResponse response;
    grpc::Status status = client->stub()->GetJob(context.get(), request, &response);
    if (!status.ok()) return client->Fail(status);
    std::cout << (json ? StatusToJson(response.job()) + "\n" : FormatReport(response.job()))
              << std::flush;
    if (absl::Status written = WriteJobOutputs(response.job(), outputs); !written.ok()) {
      std::cerr << "kbisect: " << written.message() << "\n";
      return kExitError;
    }
    return 0;
  }
  v1::ListJobsRequest request;
  request.set_page_size(limit);
  v1::ListJobsResponse response;
  grpc::Status status = client->stub()->ListJobs(context.get(), request, &response);
  if (!status.ok()) return client->Fail(status);
  if (!outputs.html_file.empty() || !outputs.markdown_file.empty()) {
    std::cerr << "kbisect: --html and --markdown need a JOB\n";
    return kExitUsage;
  }
  if (json) {
    std::cout << MessageToJson(response) << "\n";
    return 0;
  }
  if (response.jobs().empty()) {
    std::cout << "No jobs on " << client->address() << ".\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {
      {"JOB", "STATE", "OUTCOME", "LEFT", "CULPRIT", "CREATED", "RANGE", "REPOSITORY"}};
  const absl::Time now = absl::Now();
  for (const v1::JobSummary& job : response.jobs()) {
    const bool finished = job.state() == v1::JOB_STATE_DONE ||
                          job.state() == v1::JOB_STATE_CANCELLED ||
                          job.state() == v1::JOB_STATE_FAILED;
    rows.push_back({job.job_id(), JobStateName(job.state()), OutcomeName(job.status()),
                    finished ? "-" : absl::StrCat(job.progress().remaining_commits()),
                    job.culprit_sha().empty() ? "-" : job.culprit_sha().substr(0, 12),
                    wide ? absl::FormatTime("%Y-%m-%dT%H:%M:%S%Ez", FromProto(job.create_time()),
                                            absl::LocalTimeZone())
                         : Age(now - FromProto(job.create_time())),
                    absl::StrCat(job.good(), "..", job.bad().empty() ? "HEAD" : job.bad()),
                    job.repository()});
  }
  PrintTable(rows);
  return 0;
}

int Watch(int argc, char** argv) {
  CLI::App app{"Follow a job's progress live, then print its report.", "kbisect watch"};
  app.footer(absl::StrCat(
      "\nExits like `kbisect run` once the job ends; Ctrl-C stops watching (not the job).\n",
      kConnectionFooter));
  ConnectionOptions connection;
  AddConnectionOptions(&app, &connection);
  std::string job_id;
  bool quiet = false;
  JobOutputs outputs;
  app.add_option("JOB", job_id, "Job id")->required();
  app.add_flag("-q,--quiet", quiet, "Print only the final report");
  app.add_option("--json", outputs.json_file, "Write the final result as JSON to FILE");
  AddJobOutputFlags(&app, &outputs, /*notify=*/true);
  if (int code = Parse(&app, std::vector<std::string>(argv, argv + argc)); code >= 0) {
    return code;
  }
  BlockTerminationSignals();  // Before gRPC starts its threads.
  std::unique_ptr<Client> client = Client::Connect(connection);
  if (client == nullptr) return kExitUsage;
  v1::GetJobRequest request;
  request.set_job_id(job_id);
  v1::GetJobResponse response;
  auto context = Client::Context();
  grpc::Status status = client->stub()->GetJob(context.get(), request, &response);
  if (!status.ok()) return client->Fail(status);
  return FollowToEnd(client.get(), response.job(), quiet, outputs);
}

int Workers(int argc, char** argv) {
  CLI::App app{"List the workers the coordinator knows.", "kbisect workers"};
  app.footer(kConnectionFooter);
  ConnectionOptions connection;
  AddConnectionOptions(&app, &connection);
  bool json = false;
  app.add_flag("--json", json, "Print JSON");
  if (int code = Parse(&app, std::vector<std::string>(argv, argv + argc)); code >= 0) {
    return code;
  }
  std::unique_ptr<Client> client = Client::Connect(connection);
  if (client == nullptr) return kExitUsage;
  v1::ListWorkersResponse response;
  auto context = Client::Context();
  grpc::Status status =
      client->stub()->ListWorkers(context.get(), v1::ListWorkersRequest(), &response);
  if (!status.ok()) return client->Fail(status);
  if (json) {
    std::cout << MessageToJson(response) << "\n";
    return 0;
  }
  if (response.workers().empty()) {
    std::cout << "No workers have connected to " << client->address() << ".\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {
      {"WORKER", "STATE", "HARDWARE CLASS", "JOB", "LAST SEEN", "PROBES"}};
  for (const v1::Worker& worker : response.workers()) {
    rows.push_back({worker.worker_id(), EnumLabel(worker.state()),
                    worker.identity().hardware_class_label(),
                    worker.current_job_id().empty() ? "-" : worker.current_job_id(),
                    Age(worker.last_seen()), absl::StrCat(worker.tasks_completed())});
  }
  PrintTable(rows);
  return 0;
}

int Cancel(int argc, char** argv) {
  CLI::App app{"Cancel a job: its running probes are stopped on their workers.", "kbisect cancel"};
  app.footer(kConnectionFooter);
  ConnectionOptions connection;
  AddConnectionOptions(&app, &connection);
  std::string job_id;
  std::string reason = "cancelled by the user";
  app.add_option("JOB", job_id, "Job id")->required();
  app.add_option("--reason", reason, "Recorded with the job")->capture_default_str();
  if (int code = Parse(&app, std::vector<std::string>(argv, argv + argc)); code >= 0) {
    return code;
  }
  std::unique_ptr<Client> client = Client::Connect(connection);
  if (client == nullptr) return kExitUsage;
  v1::CancelJobRequest request;
  request.set_job_id(job_id);
  request.set_reason(reason);
  v1::CancelJobResponse response;
  auto context = Client::Context();
  grpc::Status status = client->stub()->CancelJob(context.get(), request, &response);
  if (!status.ok()) return client->Fail(status);
  if (response.job().status() == v1::OUTCOME_CANCELLED) {
    std::cout << "Job " << job_id << " cancelled.\n";
  } else {
    std::cout << "Job " << job_id
              << " had already finished: " << OutcomeName(response.job().status()) << ".\n";
  }
  return 0;
}

}  // namespace

// `kbisect log [JOB]`: a coordinator job's log, or without JOB the last `kbisect run`'s.
int Log(int argc, char** argv) {
  CLI::App app{"Print a job's log: one line per decided commit, which `run --replay` accepts.",
               "kbisect log"};
  app.footer(kConnectionFooter);
  ConnectionOptions connection;
  AddConnectionOptions(&app, &connection);
  std::string job_id;
  std::string cache_dir = DefaultCacheDir();
  app.add_option("JOB", job_id, "Job id on the coordinator (default: the last `kbisect run`)");
  app.add_option("--cache-dir", cache_dir, "Where `kbisect run` keeps its last log")
      ->capture_default_str();
  if (int code = Parse(&app, std::vector<std::string>(argv, argv + argc)); code >= 0) {
    return code;
  }
  if (job_id.empty()) {
    std::ifstream in(LastRunLogPath(cache_dir));
    if (!in) {
      std::cerr << "kbisect: no log of a finished `kbisect run` in " << cache_dir << " (kept at "
                << LastRunLogPath(cache_dir)
                << "); give a coordinator's JOB id to print that job's\n";
      return kExitError;
    }
    std::cout << in.rdbuf() << std::flush;
    return 0;
  }
  std::unique_ptr<Client> client = Client::Connect(connection);
  if (client == nullptr) return kExitUsage;
  auto context = Client::Context();
  v1::GetJobRequest request;
  request.set_job_id(job_id);
  v1::GetJobResponse response;
  grpc::Status status = client->stub()->GetJob(context.get(), request, &response);
  if (!status.ok()) return client->Fail(status);
  std::cout << FormatJobLog(response.job()) << std::flush;
  return 0;
}

bool IsClientCommand(const std::string& name) {
  return name == "submit" || name == "status" || name == "watch" || name == "workers" ||
         name == "cancel" || name == "log";
}

int ClientCommand(int argc, char** argv) {
  const std::string name = argv[0];
  if (name == "submit") return Submit(argc, argv);
  if (name == "status") return Status(argc, argv);
  if (name == "watch") return Watch(argc, argv);
  if (name == "workers") return Workers(argc, argv);
  if (name == "cancel") return Cancel(argc, argv);
  if (name == "log") return Log(argc, argv);
  std::cerr << "kbisect: unknown command '" << name << "'\n";
  return kExitUsage;
}

}  // namespace kbisect
