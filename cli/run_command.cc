// Copyright 2026 The kbisect Authors.
#include "cli/run_command.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "cli/artifact_axis.h"
#include "cli/artifact_stages.h"
#include "cli/find_good.h"
#include "cli/job_log.h"
#include "cli/job_options.h"
#include "cli/job_progress.h"
#include "cli/local_cluster.h"
#include "cli/report/report.h"
#include "cli/report/status_json.h"
#include "cli/run_journal.h"
#include "common/exec/exec.h"
#include "common/exec/signals.h"
#include "common/flags/flag_checks.h"
#include "common/git/git_repo.h"
#include "common/identity/identity.h"
#include "common/status_macros.h"
#include "coordinator/job_pages.h"
#include "coordinator/metrics_http.h"
#include "coordinator/result_cache.h"
#include "grpcpp/create_channel.h"
#include "kbisect/v1/kbisect.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "worker/build_ahead.h"
#include "worker/build_layer.h"
#include "worker/device_binding.h"

namespace kbisect {
namespace {

constexpr char kRunHelpFooter[] = R"(
Usage: kbisect run GOOD [BAD] [options] -- BENCH_CMD [ARGS...]

Exit codes:
  0  culprit found (or a candidate range, when skipped commits border it)
  1  error: bad input, GOOD/BAD failing to build or bench, swapped endpoints, cancelled
  2  usage error
  3  no regression between GOOD and BAD
  4  inconclusive (failures or noise left no answer)
  130 interrupted (Ctrl-C): every worker process was stopped

The user's working tree is never touched: workers check commits out into their own
directories under the cache directory ($KBISECT_CACHE_DIR, default ~/.cache/kbisect); with
--build, built commits are kept under its builds/ (--build-cache-size) and not built again,
and while probes measure, the commits the next round will probe are built ahead (--build-ahead).
Worker i runs commands with CUDA_VISIBLE_DEVICES=i HIP_VISIBLE_DEVICES=i
ROCR_VISIBLE_DEVICES=i KBISECT_WORKER=i.

Example:
  kbisect run v1.2 HEAD --build 'make -j8' -- ./bench --batch 32
)";

// The host of --serve ADDR: 127.0.0.1 when ADDR names none (":8080", "8080").
std::string ServeHost(const std::string& address) {
  const size_t colon = address.rfind(':');
  const std::string host = colon == std::string::npos ? "" : address.substr(0, colon);
  return host.empty() ? "127.0.0.1" : host;
}

// The live pages of the embedded coordinator on ADDR; peers off loopback are answered only when
// ADDR names a host that is not a loopback one (the user asked for it).
absl::StatusOr<std::unique_ptr<MetricsHttpServer>> ServeJobPages(const std::string& address,
                                                                 const Coordinator* coordinator) {
  const size_t colon = address.rfind(':');
  const std::string port = colon == std::string::npos ? address : address.substr(colon + 1);
  const std::string host = ServeHost(address);
  const bool loopback = host == "127.0.0.1" || host == "localhost" || host == "[::1]";
  return MetricsHttpServer::Start(absl::StrCat(host, ":", port), nullptr,
                                  MakeJobPages(coordinator, "", /*remote=*/!loopback));
}

// The progress output's line on where builds install (worker/build_layer.h).
std::string BuildIsolationText(v1::BuildIsolation isolation,
                               const std::optional<PythonBase>& base) {
  switch (isolation) {
    case v1::BUILD_ISOLATION_NONE:
      return "Builds install wherever their commands say (--isolation none): builds of several "
             "commits at once can see each other's installs";
    case v1::BUILD_ISOLATION_PREFIX:
      return "Builds install into a prefix of their own ($KBISECT_PREFIX, on PATH and "
             "LD_LIBRARY_PATH)";
    default:
      break;
  }
  if (!base.has_value()) {
    return isolation == v1::BUILD_ISOLATION_PYTHON
               ? "Builds need a Python (--isolation python) and none was found: activate a "
                 "virtualenv or put python3 on PATH"
               : "Builds install into a prefix of their own ($KBISECT_PREFIX; no Python found "
                 "to layer over)";
  }
  return absl::StrCat("Builds install into per-build environments layered over ", base->description,
                      " (pip installs land there; $KBISECT_PREFIX for the rest)");
}

}  // namespace

int RunCommand(int argc, char** argv) {
  JobOptions options;
  std::vector<std::string> args = SplitAtDoubleDash(argc, argv, &options.bench_command);
  CLI::App app{"Find the commit that made a benchmark slower, probing several commits at once.",
               "kbisect run"};
  app.footer(kRunHelpFooter);
  AddJobOptions(&app, &options);
  std::string cache_dir = DefaultCacheDir();
  app.add_option("--cache-dir", cache_dir, "Mirrors, worker checkouts and builds")
      ->capture_default_str();
  int build_cache_size = kDefaultBuildCacheSize;
  app.add_option("--build-cache-size", build_cache_size,
                 "Built checkouts kept under CACHE_DIR/builds for --build; a commit already "
                 "built is not built again, and a new build starts from the nearest one built "
                 "(taken over or copied), so builds stay incremental. 0 builds in each worker's "
                 "own checkout")
      ->capture_default_str()
      ->check(WholeNumberIn(0, 100000, "builds"));
  bool no_compiler_cache = false;
  app.add_flag("--no-compiler-cache", no_compiler_cache,
               "Compile without the host's ccache (CACHE_DIR/compiler-cache), which builds use "
               "by default when ccache is installed");
  int build_ahead = DefaultBuildAhead();
  app.add_option("--build-ahead", build_ahead,
                 "Builds (--build) prepared at once, at low priority, for the commits the next "
                 "round will probe whichever way the running probes come out; a probe then finds "
                 "its commit built. Default: half the cores, less one. 0 disables it")
      ->capture_default_str()
      ->check(WholeNumberIn(0, 1024, "builds"));
  bool quiet = false;
  app.add_flag("-q,--quiet", quiet, "Print only the final report");
  bool fresh = false;
  app.add_flag("--fresh", fresh,
               "Start over instead of resuming this bisect's interrupted run (a run killed, "
               "rebooted or stopped with Ctrl-C resumes when the same command runs again)");
  ArtifactFlags artifact;
  AddArtifactFlags(&app, &artifact);
  std::string serve;
  app.add_option("--serve", serve,
                 "Serve the job's live page over HTTP on ADDR (host:port, port 0 picks one; "
                 "host defaults to 127.0.0.1) while it runs, and print its URL");
  std::reverse(args.begin(), args.end());
  args.pop_back();  // The subcommand name.
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return ReportParseError(app, e);
  }

  // The flags are checked first (a --metric that does not compile is a usage error), then the
  // repository is resolved: both before anything starts (no cluster, no worker, no mirror).
  std::string repo_path = options.repo.empty() ? "." : options.repo;
  absl::StatusOr<v1::JobSpec> spec = ToJobSpec(options, repo_path);
  if (!spec.ok()) {
    std::cerr << "kbisect run: " << spec.status().message() << "\n"
              << "Run `kbisect run --help` for usage.\n";
    return kExitUsage;
  }
  // --artifact: the revisions are an index's versions, written as a ledger the job bisects.
  std::optional<ArtifactAxis> axis;
  std::optional<v1::JobSpec> commit_stage;
  if (artifact.enabled()) {
    std::error_code error;
    const ArtifactPlaces places{cache_dir, std::filesystem::current_path(error).string()};
    const int failed = PrepareArtifacts(artifact, options, places, &*spec, &axis, &commit_stage);
    if (failed != 0) return failed;
    repo_path = axis->ledger();
  }
  absl::StatusOr<std::unique_ptr<GitRepo>> repo = GitRepo::Open(repo_path);
  if (!repo.ok()) {
    std::cerr << "kbisect: " << repo.status().message() << "\n";
    return kExitError;
  }
  const std::string repository =
      (*repo)->workdir().empty() ? (*repo)->git_dir() : (*repo)->workdir();
  spec->set_repository(repository);
  // --find-good --since DATE: how far back the lookback goes, from the commit dates.
  const absl::StatusOr<int> max_lookback = LookbackReach(
      options.since, options.max_lookback, repository, spec->bad().empty() ? "HEAD" : spec->bad());
  if (!max_lookback.ok()) {
    std::cerr << "kbisect: " << max_lookback.status().message() << "\n";
    return max_lookback.status().code() == absl::StatusCode::kInvalidArgument ? kExitUsage
                                                                              : kExitError;
  }
  if (options.find_good && *max_lookback == 0) {
    std::cerr << "kbisect: "
              << NothingSinceText(options.since, spec->bad().empty() ? "HEAD" : spec->bad())
              << "\n";
    return kExitNoRegression;
  }
  // A scheduler's binding (CUDA_VISIBLE_DEVICES set by Slurm or a container runtime) decides
  // which devices the slots get and, without --workers, how many there are.
  const std::map<std::string, std::string> environment = EnvironmentMap();
  absl::StatusOr<std::vector<std::string>> bound = LocalSlotDevices(environment, options.workers);
  if (!bound.ok()) {
    std::cerr << "kbisect: " << bound.status().message() << "\n";
    return kExitUsage;
  }
  const bool scheduler_bound =
      std::any_of(std::begin(kSchedulerDeviceVariables), std::end(kSchedulerDeviceVariables),
                  [&](const char* name) {
                    auto it = environment.find(name);
                    return it != environment.end() && !it->second.empty();
                  });
  int workers = options.workers;
  if (workers <= 0 && scheduler_bound) workers = static_cast<int>(bound->size());
  if (workers <= 0) {
    std::unique_ptr<CommandRunner> runner = NewSubprocessRunner();
    workers = std::max(1, CountLocalGpus(runner.get()));
  }
  spec->set_max_workers(0);

  LocalClusterOptions cluster_options;
  cluster_options.workers = workers;
  if (scheduler_bound) {
    cluster_options.slot_devices = *bound;
    cluster_options.slot_devices.resize(workers);
  }
  cluster_options.cache_dir = cache_dir;
  cluster_options.build_cache_size = build_cache_size;
  cluster_options.compiler_cache = !no_compiler_cache;
  cluster_options.build_ahead = build_ahead;
  // Measurements are kept across runs in the cache dir and reused where the GPU that made them
  // has not drifted (coordinator/job/result_reuse.h). A cache that cannot be opened costs the
  // reuse, never the bisect.
  std::unique_ptr<ResultCache> result_cache;
  if (!spec->no_cache()) {
    absl::StatusOr<std::unique_ptr<ResultCache>> opened =
        OpenSqliteResultCache(DefaultResultCachePath(cache_dir));
    if (opened.ok()) {
      result_cache = *std::move(opened);
      cluster_options.coordinator.result_cache = result_cache.get();
    } else {
      std::cerr << "kbisect: warning: not reusing earlier results: " << opened.status().message()
                << "\n";
    }
  }
  // The job's journal: the same command run again after a crash or Ctrl-C resumes from it.
  // (--find-good runs several jobs and is not journaled.)
  const std::string journal_path = RunJournalPath(cache_dir, *spec);
  absl::StatusOr<std::unique_ptr<SqliteJobStore>> journal = std::unique_ptr<SqliteJobStore>();
  if (!options.find_good) {
    if (fresh) RemoveRunJournal(journal_path);
    journal = OpenRunJournal(journal_path);
    if (!journal.ok()) {
      std::cerr << "kbisect: " << journal.status().message() << "\n";
      return kExitError;
    }
    cluster_options.coordinator.store = journal->get();
    cluster_options.coordinator.abort_on_store_failure = true;
  }
  std::unique_ptr<LocalCluster> cluster;
  std::atomic<bool> stop_requested{false};
  std::string job_id;
  kbisect::Mutex job_mu;
  TerminationWatcher interrupt([&] {
    // The job stays in its journal: the same command resumes it.
    std::cerr << "\nkbisect: interrupted; stopping every worker. The bisect is kept: run the "
                 "same command again to resume it (--fresh starts over)\n";
    stop_requested = true;
    kbisect::MutexLock lock(&job_mu);
    if (cluster != nullptr) cluster->StopWorkers();
  });
  {
    absl::StatusOr<std::unique_ptr<LocalCluster>> started = LocalCluster::Start(cluster_options);
    if (!started.ok()) {
      std::cerr << "kbisect: cannot start the local coordinator: " << started.status().message()
                << "\n";
      return kExitError;
    }
    kbisect::MutexLock lock(&job_mu);
    cluster = *std::move(started);
  }

  // From here on the CLI is a plain gRPC client of the coordinator, as in cluster mode.
  auto channel = grpc::CreateChannel(cluster->address(), grpc::InsecureChannelCredentials());
  auto stub = v1::CoordinatorService::NewStub(channel);
  v1::SubmitJobResponse submitted;
  if (options.find_good) {
    // GOOD is found by looking back; the job kept bisects from it.
    absl::StatusOr<FindGoodResult> found =
        FindGood(stub.get(), *spec, *max_lookback, workers, quiet ? nullptr : &std::cout);
    const std::string bad = spec->bad().empty() ? "HEAD" : spec->bad();
    if (!found.ok() || found->job_id.empty()) {
      if (found.ok()) {
        std::cerr << "kbisect: " << NothingBetterText(*found, bad, options.since) << "\n";
      }
      if (!found.ok()) std::cerr << "kbisect: " << found.status().message() << "\n";
      kbisect::MutexLock lock(&job_mu);
      cluster->StopWorkers();
      return found.ok() ? kExitNoRegression : kExitError;
    }
    if (!quiet) std::cout << FoundGoodText(*found, bad) << "\n";
    absl::StatusOr<v1::JobStatus> job = cluster->coordinator()->GetJob(found->job_id);
    if (!job.ok()) {
      std::cerr << "kbisect: " << job.status().message() << "\n";
      return kExitError;
    }
    submitted.set_job_id(found->job_id);
    *submitted.mutable_job() = *std::move(job);
  } else if (std::optional<v1::JobStatus> interrupted = InterruptedJob(*cluster->coordinator())) {
    if (!quiet) std::cout << ResumingText(*interrupted, absl::LocalTimeZone()) << "\n";
    submitted.set_job_id(interrupted->job_id());
    submitted.set_existing(true);
    *submitted.mutable_job() = *std::move(interrupted);
  } else {
    v1::SubmitJobRequest submit;
    *submit.mutable_spec() = *spec;
    grpc::ClientContext context;
    grpc::Status status = stub->SubmitJob(&context, submit, &submitted);
    if (!status.ok()) {
      std::cerr << "kbisect: " << status.error_message() << "\n";
      kbisect::MutexLock lock(&job_mu);
      cluster.reset();
      if (*journal != nullptr) {
        journal->reset();
        RemoveRunJournal(journal_path);
      }
      return kExitError;
    }
  }
  {
    kbisect::MutexLock lock(&job_mu);
    job_id = submitted.job_id();
  }
  if (!quiet) PrintJobHeader(submitted.job(), workers, std::cout);
  if (!quiet && !spec->build_command().empty()) {
    std::unique_ptr<CommandRunner> runner = NewSubprocessRunner();
    BuildLayers layers(runner.get(), BuildLayers::ProcessEnvironment());
    std::cout << BuildIsolationText(spec->build_isolation(), layers.Base()) << "\n";
  }
  std::unique_ptr<MetricsHttpServer> pages;
  if (!serve.empty()) {
    absl::StatusOr<std::unique_ptr<MetricsHttpServer>> started =
        ServeJobPages(serve, cluster->coordinator());
    if (!started.ok()) {
      std::cerr << "kbisect: " << started.status().message() << "\n";
      kbisect::MutexLock lock(&job_mu);
      (void)cluster->coordinator()->CancelJob(submitted.job_id(), "--serve failed");
      cluster->StopWorkers();
      return kExitUsage;
    }
    pages = *std::move(started);
    std::cout << "Job page: http://" << ServeHost(serve) << ":" << pages->port() << "/jobs/"
              << submitted.job_id() << "\n"
              << std::flush;
  }

  v1::JobStatus final_status;
  JobFollower follower(stub.get(), submitted.job_id());
  ProgressLines lines(submitted.job(), workers);
  absl::StatusOr<v1::JobStatus> followed = follower.Follow([&](const v1::JobEvent& e) {
    if (!quiet && IsProgressLine(e)) std::cout << lines.Line(e, absl::Now()) << "\n" << std::flush;
  });
  const bool finished = followed.ok();
  if (finished) final_status = *std::move(followed);
  if (!finished) {
    absl::StatusOr<v1::JobStatus> status = cluster->coordinator()->GetJob(submitted.job_id());
    if (status.ok()) final_status = *status;
  }
  ArtifactStages stages;
  if (finished && axis.has_value() && !stop_requested) {
    stages = RunArtifactStages(*axis, final_status, *spec, commit_stage,
                               artifact.isolate_companions, cache_dir, stub.get(), workers, quiet);
  }
  {
    kbisect::MutexLock lock(&job_mu);
    cluster->StopWorkers();
  }

  int code = ReportFinalStatus(final_status, options.outputs);
  if (axis.has_value()) code = ReportArtifactStages(*axis, final_status, stages, options, code);
  if (finished) {
    // `kbisect log` prints it; `--replay` starts from it.
    std::error_code ec;
    std::filesystem::create_directories(
        std::filesystem::path(LastRunLogPath(cache_dir)).parent_path(), ec);
    std::ofstream log(LastRunLogPath(cache_dir));
    log << FormatJobLog(final_status);
  }
  if (interrupt.signalled() || stop_requested) return kExitInterrupted;
  if (finished) {
    // Nothing is left to resume.
    kbisect::MutexLock lock(&job_mu);
    cluster.reset();
    if (*journal != nullptr) {
      journal->reset();
      RemoveRunJournal(journal_path);
    }
  }
  return code;
}

}  // namespace kbisect
