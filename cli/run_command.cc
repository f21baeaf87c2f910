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
#include "cli/try_change.h"
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
#include "worker/build_store.h"
#include "worker/compiler_cache_flags.h"
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

constexpr char kTryHelpFooter[] = R"(
Usage: kbisect try BASE (--revert SHA | --commit SHA | --patch FILE) [options] -- BENCH_CMD [ARGS...]

Measures BASE against BASE with the change, on the same workers: interleaved pairs (each pair's
order drawn at random), spread over the workers, as many as the noise needs to see a 2% change
(or --min-effect), at least --runs. The change is made into a commit in a scratch clone and kept
under refs/kbisect/try/ of the repository; the working tree, index and branches are untouched.

Exit codes:
  0  the change is significant (the report says which way, and by how much)
  1  error: the change does not apply (the files, hunk or later commits are named), BASE fails
  2  usage error
  3  no significant difference
  130 interrupted (Ctrl-C): every worker process was stopped

Example:
  kbisect try HEAD --revert b9006fb --build 'make -j8' -- ./bench --batch 32
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

// `kbisect run`'s flags, as given.
struct RunFlags {
  JobOptions options;
  std::string cache_dir = DefaultCacheDir();
  int build_cache_size = kDefaultBuildCacheSize;
  bool no_compiler_cache = false;
  CompilerCacheRemote compiler_cache_remote;  // --compiler-cache-remote, --compiler-cache-read-only
  std::string build_store;                    // --build-store; empty: none.
  int build_ahead = DefaultBuildAhead();
  bool quiet = false;
  bool fresh = false;
  ArtifactFlags artifact;
  std::string serve;
  std::string lock_clocks;  // --lock-clocks base|max|SM[,MEM].
  // `kbisect try`: the change tried on BASE.
  bool try_mode = false;
  TryFlags try_change;
};

// Registers `kbisect run`'s own flags (beyond the job's) on `app`.
void AddRunFlags(CLI::App* app, RunFlags* f) {
  app->add_option("--cache-dir", f->cache_dir, "Mirrors, worker checkouts and builds")
      ->capture_default_str();
  app->add_option("--build-cache-size", f->build_cache_size,
                  "Built checkouts kept under CACHE_DIR/builds for --build; a commit already "
                  "built is not built again, and a new build starts from the nearest one built "
                  "(taken over or copied), so builds stay incremental. 0 builds in each worker's "
                  "own checkout")
      ->capture_default_str()
      ->check(WholeNumberIn(0, 100000, "builds"));
  app->add_flag("--no-compiler-cache", f->no_compiler_cache,
                "Compile without the host's ccache (CACHE_DIR/compiler-cache), which builds use "
                "by default when ccache is installed");
  AddCompilerCacheRemoteFlags(app, &f->compiler_cache_remote);
  AddBuildStoreFlag(app, &f->build_store);
  app->add_option("--build-ahead", f->build_ahead,
                  "Builds (--build) prepared at once, at low priority, for the commits the next "
                  "round will probe whichever way the running probes come out; a probe then "
                  "finds its commit built. Default: half the cores, less one. 0 disables it")
      ->capture_default_str()
      ->check(WholeNumberIn(0, 1024, "builds"));
  app->add_flag("-q,--quiet", f->quiet, "Print only the final report");
  app->add_flag("--fresh", f->fresh,
                "Start over instead of resuming this bisect's interrupted run (a run killed, "
                "rebooted or stopped with Ctrl-C resumes when the same command runs again)");
  AddArtifactFlags(app, &f->artifact);
  app->add_option("--lock-clocks", f->lock_clocks,
                  "Lock each worker's GPU clocks for the run: base, max or SM[,MEM] in MHz "
                  "(nvidia-smi, as root); verified within 10 MHz and undone at the end, on Ctrl-C, "
                  "or by the next run after a kill; refused on MIG");
  app->add_option("--serve", f->serve,
                  "Serve the job's live page over HTTP on ADDR (host:port, port 0 picks one; "
                  "host defaults to 127.0.0.1) while it runs, and print its URL");
}

// Parses `kbisect run`'s command line into `f`. Returns -1 to go on, else the exit code.
int ParseRunFlags(int argc, char** argv, RunFlags* f) {
  std::vector<std::string> args = SplitAtDoubleDash(argc, argv, &f->options.bench_command);
  CLI::App app{f->try_mode
                   ? "Measure a change (a revert, a commit, a patch) on BASE against BASE."
                   : "Find the commit that made a benchmark slower, probing several commits at once.",
               f->try_mode ? "kbisect try" : "kbisect run"};
  app.footer(f->try_mode ? kTryHelpFooter : kRunHelpFooter);
  AddJobOptions(&app, &f->options);
  AddRunFlags(&app, f);
  if (f->try_mode) AddTryFlags(&app, &f->try_change);
  std::reverse(args.begin(), args.end());
  args.pop_back();  // The subcommand name.
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return ReportParseError(app, e);
  }
  return -1;
}

// The job a run asks for, resolved before anything starts (no cluster, no worker, no mirror).
struct RunPlan {
  v1::JobSpec spec;
  // --artifact: the ledger the job bisects, and the commit stage after it (--repo).
  std::optional<ArtifactAxis> axis;
  std::optional<v1::JobSpec> commit_stage;
  // --find-good: how many commits the lookback may go back.
  int max_lookback = 0;
};

// Checks the flags (a --metric that does not compile is a usage error), prepares the artifact
// ledger, resolves the repository and, with --find-good --since, how far back to look. Returns
// -1 to go on, else the exit code after saying what was wrong.
int PlanRun(const RunFlags& f, RunPlan* plan) {
  const JobOptions& options = f.options;
  std::string repo_path = options.repo.empty() ? "." : options.repo;
  absl::StatusOr<v1::JobSpec> spec = ToJobSpec(options, repo_path);
  if (!spec.ok()) {
    std::cerr << "kbisect run: " << spec.status().message() << "\n"
              << "Run `kbisect run --help` for usage.\n";
    return kExitUsage;
  }
  plan->spec = *std::move(spec);
  // --artifact: the revisions are an index's versions, written as a ledger the job bisects.
  if (f.artifact.enabled()) {
    std::error_code error;
    const ArtifactPlaces places{f.cache_dir, std::filesystem::current_path(error).string()};
    const int failed = PrepareArtifacts(f.artifact, options, places, &plan->spec, &plan->axis,
                                        &plan->commit_stage);
    if (failed != 0) return failed;
    repo_path = plan->axis->ledger();
  }
  absl::StatusOr<std::unique_ptr<GitRepo>> repo = GitRepo::Open(repo_path);
  if (!repo.ok()) {
    std::cerr << "kbisect: " << repo.status().message() << "\n";
    return kExitError;
  }
  const std::string repository =
      (*repo)->workdir().empty() ? (*repo)->git_dir() : (*repo)->workdir();
  plan->spec.set_repository(repository);
  if (f.try_mode) {
    if (int code = PrepareTry(f.try_change, repository, "kbisect try", &plan->spec); code >= 0) {
      return code;
    }
  }
  // --find-good --since DATE: how far back the lookback goes, from the commit dates.
  const std::string bad = plan->spec.bad().empty() ? "HEAD" : plan->spec.bad();
  const absl::StatusOr<int> max_lookback =
      LookbackReach(options.since, options.max_lookback, repository, bad);
  if (!max_lookback.ok()) {
    std::cerr << "kbisect: " << max_lookback.status().message() << "\n";
    return max_lookback.status().code() == absl::StatusCode::kInvalidArgument ? kExitUsage
                                                                              : kExitError;
  }
  if (options.find_good && *max_lookback == 0) {
    std::cerr << "kbisect: " << NothingSinceText(options.since, bad) << "\n";
    return kExitNoRegression;
  }
  plan->max_lookback = *max_lookback;
  return -1;
}

// The local cluster's shape: a scheduler's binding (CUDA_VISIBLE_DEVICES set by Slurm or a
// container runtime) decides which devices the slots get and, without --workers, how many there
// are; else --workers, else one per local GPU (at least one). Returns -1 to go on, else the exit
// code after saying what was wrong.
int PlanSlots(const RunFlags& f, LocalClusterOptions* cluster) {
  const std::map<std::string, std::string> environment = EnvironmentMap();
  absl::StatusOr<std::vector<std::string>> bound = LocalSlotDevices(environment, f.options.workers);
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
  int workers = f.options.workers;
  if (workers <= 0 && scheduler_bound) workers = static_cast<int>(bound->size());
  if (workers <= 0) {
    std::unique_ptr<CommandRunner> runner = NewSubprocessRunner();
    workers = std::max(1, CountLocalGpus(runner.get()));
  }
  cluster->workers = workers;
  if (scheduler_bound) {
    cluster->slot_devices = *bound;
    cluster->slot_devices.resize(workers);
  }
  if (!f.lock_clocks.empty()) {
    absl::StatusOr<ClockLockSpec> spec = ParseClockLockSpec(f.lock_clocks);
    if (!spec.ok()) {
      std::cerr << "kbisect run: " << spec.status().message() << "\n";
      return kExitUsage;
    }
    cluster->lock_clocks = *spec;
  }
  cluster->cache_dir = f.cache_dir;
  cluster->build_cache_size = f.build_cache_size;
  cluster->compiler_cache = !f.no_compiler_cache;
  cluster->compiler_cache_remote = f.compiler_cache_remote;
  if (std::optional<std::string> warning = CompilerCacheRemoteWarning(f.compiler_cache_remote)) {
    std::cerr << "kbisect: warning: " << *warning << "\n";
  }
  cluster->build_store = f.build_store;
  if (std::optional<std::string> warning = BuildStoreWarning(f.build_store)) {
    std::cerr << "kbisect: warning: " << *warning << "\n";
  }
  cluster->build_ahead = f.build_ahead;
  return -1;
}

// What a run keeps on disk: the result cache and the job's journal.
struct RunStores {
  // Measurements kept across runs in the cache dir and reused where the GPU that made them has
  // not drifted (coordinator/job/result_reuse.h); null with --no-cache or when it cannot be
  // opened (which costs the reuse, never the bisect).
  std::unique_ptr<ResultCache> result_cache;
  // The job's journal: the same command run again after a crash or Ctrl-C resumes from it.
  // Null with --find-good, which runs several jobs and is not journaled.
  std::unique_ptr<SqliteJobStore> journal;
  std::string journal_path;

  // Closes the journal and removes it: nothing is left to resume.
  void DropJournal() {
    if (journal == nullptr) return;
    journal.reset();
    RemoveRunJournal(journal_path);
  }
};

// Opens the stores for `spec` and points the cluster's coordinator at them. Returns -1 to go
// on, else the exit code after saying what was wrong.
int OpenRunStores(const RunFlags& f, const v1::JobSpec& spec, RunStores* stores,
                  LocalClusterOptions* cluster) {
  if (!spec.no_cache()) {
    absl::StatusOr<std::unique_ptr<ResultCache>> opened =
        OpenSqliteResultCache(DefaultResultCachePath(f.cache_dir));
    if (opened.ok()) {
      stores->result_cache = *std::move(opened);
      cluster->coordinator.result_cache = stores->result_cache.get();
    } else {
      std::cerr << "kbisect: warning: not reusing earlier results: " << opened.status().message()
                << "\n";
    }
  }
  stores->journal_path = RunJournalPath(f.cache_dir, spec);
  if (f.options.find_good) return -1;
  if (f.fresh) RemoveRunJournal(stores->journal_path);
  absl::StatusOr<std::unique_ptr<SqliteJobStore>> journal = OpenRunJournal(stores->journal_path);
  if (!journal.ok()) {
    std::cerr << "kbisect: " << journal.status().message() << "\n";
    return kExitError;
  }
  stores->journal = *std::move(journal);
  cluster->coordinator.store = stores->journal.get();
  cluster->coordinator.abort_on_store_failure = true;
  return -1;
}

// The embedded cluster of a run and the Ctrl-C that stops it: the watcher and the main thread
// both reach the cluster, under the lock.
class LocalRun {
 public:
  LocalRun()
      : interrupt_([this] {
          // The job stays in its journal: the same command resumes it.
          std::cerr << "\nkbisect: interrupted; stopping every worker. The bisect is kept: run "
                       "the same command again to resume it (--fresh starts over)\n";
          stop_requested_ = true;
          StopWorkers();
        }) {}

  // Starts the cluster. Errors: LocalCluster::Start's.
  absl::Status Start(const LocalClusterOptions& options) {
    ASSIGN_OR_RETURN(std::unique_ptr<LocalCluster> started, LocalCluster::Start(options));
    kbisect::MutexLock lock(&mu_);
    cluster_ = std::move(started);
    return absl::OkStatus();
  }
  void StopWorkers() {
    kbisect::MutexLock lock(&mu_);
    if (cluster_ != nullptr) cluster_->StopWorkers();
  }
  // Stops and drops the cluster.
  void Reset() {
    kbisect::MutexLock lock(&mu_);
    cluster_.reset();
  }
  // The cluster, once started; only the main thread calls this.
  LocalCluster* cluster() {
    kbisect::MutexLock lock(&mu_);
    return cluster_.get();
  }
  bool interrupted() const { return interrupt_.signalled() || stop_requested_; }

 private:
  kbisect::Mutex mu_;
  std::unique_ptr<LocalCluster> cluster_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> stop_requested_{false};
  TerminationWatcher interrupt_;
};

// The job the run follows: --find-good's kept job, the interrupted job this command resumes, or
// a new one. Returns -1 to go on (with `submitted` set), else the exit code after saying why.
int StartRunJob(const RunFlags& f, const RunPlan& plan, int workers, LocalRun* run,
                v1::CoordinatorService::StubInterface* stub, RunStores* stores,
                v1::SubmitJobResponse* submitted) {
  Coordinator* coordinator = run->cluster()->coordinator();
  if (f.options.find_good) {
    // GOOD is found by looking back; the job kept bisects from it.
    absl::StatusOr<FindGoodResult> found =
        FindGood(stub, plan.spec, plan.max_lookback, workers, f.quiet ? nullptr : &std::cout);
    const std::string bad = plan.spec.bad().empty() ? "HEAD" : plan.spec.bad();
    if (!found.ok() || found->job_id.empty()) {
      if (found.ok()) {
        std::cerr << "kbisect: " << NothingBetterText(*found, bad, f.options.since) << "\n";
      }
      if (!found.ok()) std::cerr << "kbisect: " << found.status().message() << "\n";
      run->StopWorkers();
      return found.ok() ? kExitNoRegression : kExitError;
    }
    if (!f.quiet) std::cout << FoundGoodText(*found, bad) << "\n";
    absl::StatusOr<v1::JobStatus> job = coordinator->GetJob(found->job_id);
    if (!job.ok()) {
      std::cerr << "kbisect: " << job.status().message() << "\n";
      return kExitError;
    }
    submitted->set_job_id(found->job_id);
    *submitted->mutable_job() = *std::move(job);
    return -1;
  }
  if (std::optional<v1::JobStatus> interrupted = InterruptedJob(*coordinator)) {
    if (!f.quiet) std::cout << ResumingText(*interrupted, absl::LocalTimeZone()) << "\n";
    submitted->set_job_id(interrupted->job_id());
    submitted->set_existing(true);
    *submitted->mutable_job() = *std::move(interrupted);
    return -1;
  }
  v1::SubmitJobRequest submit;
  *submit.mutable_spec() = plan.spec;
  grpc::ClientContext context;
  grpc::Status status = stub->SubmitJob(&context, submit, submitted);
  if (!status.ok()) {
    std::cerr << "kbisect: " << status.error_message() << "\n";
    run->Reset();
    stores->DropJournal();
    return kExitError;
  }
  return -1;
}

// The job's header, where builds install and, with --serve, the live page (returned: it serves
// while it lives). Returns -1 to go on, else the exit code after saying what was wrong.
int AnnounceRunJob(const RunFlags& f, const v1::JobSpec& spec,
                   const v1::SubmitJobResponse& submitted, int workers, LocalRun* run,
                   std::unique_ptr<MetricsHttpServer>* pages) {
  if (!f.quiet) PrintJobHeader(submitted.job(), workers, std::cout);
  if (!f.quiet && !spec.build_command().empty()) {
    std::unique_ptr<CommandRunner> runner = NewSubprocessRunner();
    BuildLayers layers(runner.get(), BuildLayers::ProcessEnvironment());
    std::cout << BuildIsolationText(spec.build_isolation(), layers.Base()) << "\n";
  }
  if (f.serve.empty()) return -1;
  Coordinator* coordinator = run->cluster()->coordinator();
  absl::StatusOr<std::unique_ptr<MetricsHttpServer>> started = ServeJobPages(f.serve, coordinator);
  if (!started.ok()) {
    std::cerr << "kbisect: " << started.status().message() << "\n";
    (void)coordinator->CancelJob(submitted.job_id(), "--serve failed");
    run->StopWorkers();
    return kExitUsage;
  }
  *pages = *std::move(started);
  std::cout << "Job page: http://" << ServeHost(f.serve) << ":" << (*pages)->port() << "/jobs/"
            << submitted.job_id() << "\n"
            << std::flush;
  return -1;
}

// Follows the job to its end, printing its progress lines unless --quiet. Returns its final
// status and whether it finished (false: interrupted or lost, the status as it stands).
std::pair<v1::JobStatus, bool> FollowRunJob(const RunFlags& f,
                                            const v1::SubmitJobResponse& submitted, int workers,
                                            LocalRun* run,
                                            v1::CoordinatorService::StubInterface* stub) {
  JobFollower follower(stub, submitted.job_id());
  ProgressLines lines(submitted.job(), workers);
  absl::StatusOr<v1::JobStatus> followed = follower.Follow([&](const v1::JobEvent& e) {
    if (!f.quiet && IsProgressLine(e)) {
      std::cout << lines.Line(e, absl::Now()) << "\n" << std::flush;
    }
  });
  if (followed.ok()) return {*std::move(followed), true};
  absl::StatusOr<v1::JobStatus> status = run->cluster()->coordinator()->GetJob(submitted.job_id());
  return {status.ok() ? *std::move(status) : v1::JobStatus(), false};
}

// Keeps the finished job's log where `kbisect log` prints it and `--replay` starts from it.
void KeepLastRunLog(const std::string& cache_dir, const v1::JobStatus& status) {
  std::error_code ec;
  std::filesystem::create_directories(
      std::filesystem::path(LastRunLogPath(cache_dir)).parent_path(), ec);
  std::ofstream log(LastRunLogPath(cache_dir));
  log << FormatJobLog(status);
}

}  // namespace

int RunCommand(int argc, char** argv) {
  RunFlags f;
  f.try_mode = argc > 0 && std::string(argv[0]) == "try";
  if (int code = ParseRunFlags(argc, argv, &f); code >= 0) return code;
  RunPlan plan;
  if (int code = PlanRun(f, &plan); code >= 0) return code;
  LocalClusterOptions cluster_options;
  if (int code = PlanSlots(f, &cluster_options); code >= 0) return code;
  const int workers = cluster_options.workers;
  plan.spec.set_max_workers(0);
  RunStores stores;
  if (int code = OpenRunStores(f, plan.spec, &stores, &cluster_options); code >= 0) return code;

  LocalRun run;
  if (absl::Status started = run.Start(cluster_options); !started.ok()) {
    std::cerr << "kbisect: cannot start the local coordinator: " << started.message() << "\n";
    return kExitError;
  }
  // From here on the CLI is a plain gRPC client of the coordinator, as in cluster mode.
  auto channel = grpc::CreateChannel(run.cluster()->address(), grpc::InsecureChannelCredentials());
  auto stub = v1::CoordinatorService::NewStub(channel);
  v1::SubmitJobResponse submitted;
  if (int code = StartRunJob(f, plan, workers, &run, stub.get(), &stores, &submitted); code >= 0) {
    return code;
  }
  std::unique_ptr<MetricsHttpServer> pages;
  if (int code = AnnounceRunJob(f, plan.spec, submitted, workers, &run, &pages); code >= 0) {
    return code;
  }
  const auto [final_status, finished] = FollowRunJob(f, submitted, workers, &run, stub.get());
  ArtifactStages stages;
  if (finished && plan.axis.has_value() && !run.interrupted()) {
    stages =
        RunArtifactStages(*plan.axis, final_status, plan.spec, plan.commit_stage,
                          f.artifact.isolate_companions, f.cache_dir, stub.get(), workers, f.quiet);
  }
  run.StopWorkers();

  int code = ReportFinalStatus(final_status, f.options.outputs);
  if (plan.axis.has_value()) {
    code = ReportArtifactStages(*plan.axis, final_status, stages, f.options, code);
  }
  if (finished) KeepLastRunLog(f.cache_dir, final_status);
  if (run.interrupted()) return kExitInterrupted;
  if (finished) {
    // Nothing is left to resume.
    run.Reset();
    stores.DropJournal();
  }
  return code;
}

}  // namespace kbisect
