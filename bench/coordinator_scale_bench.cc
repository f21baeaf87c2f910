// Copyright 2026 The kbisect Authors.
//
// coordinator_scale_bench: the real `kbisect-coordinator` daemon (a subprocess, on loopback, with
// its SQLite state in a scratch directory) under N simulated workers (bench/sim_workers.h: real
// gRPC, the real worker protocol, instant synthetic results) and M concurrent jobs over a real
// git repository of C commits (scripts/make-demo-repo.sh, built once per run). Each job plants
// its own culprit in its bench command ("--culprit K"), which the simulated workers measure as a
// one-step metric, so every job runs the whole search, calibrations and confirmation.
//
//   build/bin/coordinator_scale_bench                      # 1,000 workers, 100 jobs, 1,000 commits
//   build/bin/coordinator_scale_bench --workers 100 --jobs 10 --commits 200
//
// It prints one line per figure (dispatch latency p50/p99, results per second, the daemon's RSS,
// the state's size, the recovery time after kill -9, ...) and asserts nothing; docs/benchmarks.md
// ("Coordinator at scale") quotes them. After the jobs finish it kills the daemon with SIGKILL,
// starts a new one on the same state directory and times it from exec to serving with every job
// listed (ListJobs, paged).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/bench_util.h"
#include "bench/sim_workers.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "kbisect/v1/kbisect.grpc.pb.h"

extern char** environ;

namespace kbisect_bench {
namespace {

namespace v1 = ::kbisect::v1;

struct Flags {
  int workers = 1000;
  int jobs = 100;
  int commits = 1000;
  int channels = 0;             // 0: one per 100 workers.
  int max_workers_per_job = 0;  // 0: workers / jobs.
  int runs = 3;
  double task_ms = 0;  // How long each task runs on its simulated GPU.
  int seed = 1;
  double timeout_s = 1200;
  std::string state_dir;  // Empty: a scratch directory, removed at the end.
  std::string coordinator = std::string(KBISECT_BIN_DIR) + "/kbisect-coordinator";
  bool keep = false;
};

// --- The daemon ---------------------------------------------------------------------------------

// A daemon process, killed (SIGKILL) when the bench leaves early.
struct Daemon {
  pid_t pid = -1;
  std::string address;

  Daemon() = default;
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;
  Daemon& operator=(Daemon&& other) {
    std::swap(pid, other.pid);
    std::swap(address, other.address);
    return *this;
  }
  ~Daemon() { Kill(SIGKILL); }
  void Kill(int sig) {
    if (pid <= 0) return;
    kill(pid, sig);
    waitpid(pid, nullptr, 0);
    pid = -1;
  }
};

pid_t Spawn(const std::vector<std::string>& argv, const std::string& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

// Starts kbisect-coordinator on `state_dir` and waits until it wrote its port file (it does so
// once it recovered its jobs and serves). Returns the pid (-1 on failure) and the address.
void StartDaemon(const std::string& binary, const std::string& state_dir, const std::string& log,
                 absl::Duration timeout, Daemon* daemon) {
  const std::string port_file = state_dir + "/port";
  std::filesystem::remove(port_file);
  daemon->pid = Spawn(
      {binary, "--listen", "127.0.0.1:0", "--state-dir", state_dir, "--port-file", port_file}, log);
  if (daemon->pid < 0) return;
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    int port = 0;
    if (absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadFile(port_file)), &port) && port > 0) {
      daemon->address = absl::StrCat("127.0.0.1:", port);
      return;
    }
    int status = 0;
    if (waitpid(daemon->pid, &status, WNOHANG) == daemon->pid) {
      daemon->pid = -1;
      return;
    }
    absl::SleepFor(absl::Milliseconds(1));
  }
  daemon->Kill(SIGKILL);
}

// A /proc/PID/status field in kB (VmRSS, VmHWM) or a count (Threads); -1 when missing.
int64_t ProcStatus(pid_t pid, const std::string& field) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) != 0) continue;
    int64_t value = -1;
    std::istringstream rest(line.substr(field.size() + 1));
    rest >> value;
    return value;
  }
  return -1;
}

// User + system CPU seconds of process `pid` so far.
double ProcCpuSeconds(pid_t pid) {
  const std::string stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::vector<std::string> fields = absl::StrSplit(stat.substr(close + 2), ' ');
  if (fields.size() < 13) return 0;
  double utime = 0, stime = 0;
  if (!absl::SimpleAtod(fields[11], &utime) || !absl::SimpleAtod(fields[12], &stime)) return 0;
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// --- Jobs ---------------------------------------------------------------------------------------

// Every job's summary, walking ListJobs' pages; false on an RPC error.
bool ListAllJobs(v1::CoordinatorService::Stub* stub, std::vector<v1::JobSummary>* jobs) {
  jobs->clear();
  std::string token;
  do {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    v1::ListJobsRequest request;
    request.set_page_size(100);
    request.set_page_token(token);
    v1::ListJobsResponse response;
    if (!stub->ListJobs(&context, request, &response).ok()) return false;
    jobs->insert(jobs->end(), response.jobs().begin(), response.jobs().end());
    token = response.next_page_token();
  } while (!token.empty());
  return true;
}

bool Finished(v1::JobState state) {
  return state == v1::JOB_STATE_DONE || state == v1::JOB_STATE_FAILED ||
         state == v1::JOB_STATE_CANCELLED;
}

// The culprit a job's bench command plants ("--culprit K"), or -1.
int PlantedCulprit(const google::protobuf::RepeatedPtrField<std::string>& argv) {
  for (int i = 0; i + 1 < argv.size(); ++i) {
    int culprit = 0;
    if (argv[i] == "--culprit" && absl::SimpleAtoi(argv[i + 1], &culprit)) return culprit;
  }
  return -1;
}

// The one-step metric: 1.0 ms before the planted culprit, 2.0 ms from it on, +-0.5% noise.
v1::TaskResult Measure(const v1::Task& task, const std::map<std::string, int>& index_of) {
  thread_local std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<double> noise(-0.005, 0.005);
  const int culprit = PlantedCulprit(task.bench_command());
  auto value = [&](int index) { return (index >= culprit ? 2.0 : 1.0) * (1 + noise(rng)); };
  v1::TaskResult result;
  result.set_outcome(v1::TASK_OUTCOME_SUCCEEDED);
  result.set_metric_name("latency");
  result.set_metric_unit("ms");
  int paired = -1;
  if (!task.paired_commit_sha().empty()) {
    auto it = index_of.find(task.paired_commit_sha());
    paired = it == index_of.end() ? 0 : it->second;
  }
  for (int r = 0; r < std::max(1, task.runs()); ++r) {
    if (paired >= 0) {
      const double v = value(paired);
      result.add_paired_samples(v);
      result.add_runs()->set_value(v);
    }
    const double v = value(task.commit_index());
    result.add_samples(v);
    result.add_runs()->set_value(v);
  }
  return result;
}

// --- Figures ------------------------------------------------------------------------------------

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(p / 100.0 * static_cast<double>(v.size()));
  return v[std::min(rank, v.size() - 1)];
}

double Mb(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

int64_t FileSize(const std::string& path) {
  std::error_code error;
  const auto size = std::filesystem::file_size(path, error);
  return error ? 0 : static_cast<int64_t>(size);
}

// The journal's rows and payload bytes per entry kind, read-only (no checkpoint).
void PrintJournal(const std::string& database) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(database.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    std::printf("journal: cannot open %s\n", database.c_str());
    sqlite3_close(db);
    return;
  }
  sqlite3_stmt* query = nullptr;
  const char* sql =
      "SELECT kind, COUNT(*), SUM(LENGTH(payload) + LENGTH(task_id) + LENGTH(worker) + "
      "LENGTH(reason) + LENGTH(job_id)) FROM journal GROUP BY kind ORDER BY 3 DESC";
  if (sqlite3_prepare_v2(db, sql, -1, &query, nullptr) == SQLITE_OK) {
    while (sqlite3_step(query) == SQLITE_ROW) {
      std::printf("journal %s: %lld entries, %.2f MB of fields\n",
                  reinterpret_cast<const char*>(sqlite3_column_text(query, 0)),
                  static_cast<long long>(sqlite3_column_int64(query, 1)),
                  Mb(sqlite3_column_int64(query, 2)));
    }
  }
  sqlite3_finalize(query);
  query = nullptr;
  const char* jobs_sql =
      "SELECT COUNT(*), SUM(LENGTH(commits)), SUM(LENGTH(spec)), SUM(LENGTH(final_status)) FROM "
      "jobs";
  if (sqlite3_prepare_v2(db, jobs_sql, -1, &query, nullptr) == SQLITE_OK &&
      sqlite3_step(query) == SQLITE_ROW) {
    std::printf(
        "journal jobs: %lld rows, commit lists %.2f MB, specs %.2f MB, final statuses "
        "%.2f MB\n",
        static_cast<long long>(sqlite3_column_int64(query, 0)), Mb(sqlite3_column_int64(query, 1)),
        Mb(sqlite3_column_int64(query, 2)), Mb(sqlite3_column_int64(query, 3)));
  }
  sqlite3_finalize(query);
  sqlite3_close(db);
}

int Run(const Flags& flags) {
  const int channels = flags.channels > 0 ? flags.channels : (flags.workers + 99) / 100;
  const int per_job = flags.max_workers_per_job > 0 ? flags.max_workers_per_job
                                                    : std::max(1, flags.workers / flags.jobs);
  std::printf(
      "coordinator_scale_bench: %d workers over %d channels, %d jobs x %d commits, at most %d "
      "workers a job, %d runs a probe, tasks of %.0f ms; %s\n",
      flags.workers, channels, flags.jobs, flags.commits, per_job, flags.runs, flags.task_ms,
      absl::FormatTime("%Y-%m-%d %H:%M", absl::Now(), absl::LocalTimeZone()).c_str());
  std::fflush(stdout);

  const std::string scratch = MakeTempDir("kbisect-scale");
  const std::string state_dir = flags.state_dir.empty() ? scratch + "/state" : flags.state_dir;
  std::filesystem::create_directories(state_dir);
  const std::string repo = scratch + "/repo";
  const std::string log = scratch + "/coordinator.log";

  // The repository, and each commit's index (GOOD = v1.0 = 0).
  absl::Time t = absl::Now();
  if (RunShell(
          absl::StrCat(ShellQuote(std::string(KBISECT_SOURCE_DIR) + "/scripts/make-demo-repo.sh"),
                       " ", ShellQuote(repo), " --commits ", flags.commits, " >/dev/null"))
          .exit_code != 0) {
    std::fprintf(stderr, "coordinator_scale_bench: cannot make the repository\n");
    return 1;
  }
  std::vector<std::string> shas = absl::StrSplit(
      RunShell(absl::StrCat("git -C ", ShellQuote(repo), " rev-parse v1.0 && git -C ",
                            ShellQuote(repo), " rev-list --reverse --first-parent v1.0..HEAD"))
          .out,
      '\n', absl::SkipEmpty());
  std::map<std::string, int> index_of;
  for (int i = 0; i < static_cast<int>(shas.size()); ++i) index_of[shas[i]] = i;
  std::printf("repository: %d commits in %.1f s\n", static_cast<int>(shas.size()) - 1,
              absl::ToDoubleSeconds(absl::Now() - t));

  Daemon daemon;
  StartDaemon(flags.coordinator, state_dir, log, absl::Seconds(60), &daemon);
  if (daemon.pid < 0) {
    std::fprintf(stderr, "coordinator_scale_bench: kbisect-coordinator did not start; see %s\n",
                 log.c_str());
    return 1;
  }
  std::shared_ptr<grpc::Channel> client_channel =
      grpc::CreateChannel(daemon.address, grpc::InsecureChannelCredentials());
  std::unique_ptr<v1::CoordinatorService::Stub> client =
      v1::CoordinatorService::NewStub(client_channel);

  // Submit every job first, each with its own culprit, so that all of them run at once.
  std::mt19937 rng(flags.seed);
  std::uniform_int_distribution<int> position(1, flags.commits);
  std::map<std::string, int> planted;  // Job id -> culprit index.
  std::vector<double> submit_ms;
  const absl::Time submit_start = absl::Now();
  for (int j = 0; j < flags.jobs; ++j) {
    const int culprit = position(rng);
    v1::SubmitJobRequest request;
    request.set_request_id(absl::StrCat("scale-", j));
    v1::JobSpec* spec = request.mutable_spec();
    spec->set_repository(repo);
    spec->set_good("v1.0");
    for (const std::string& arg : {std::string("./bench.sh"), std::string("--job"), absl::StrCat(j),
                                   std::string("--culprit"), absl::StrCat(culprit)}) {
      spec->add_bench_command(arg);
    }
    spec->set_direction(v1::DIRECTION_LOWER_IS_BETTER);
    spec->set_runs_per_commit(flags.runs);
    spec->set_max_workers(per_job);
    spec->set_confirm(true);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(submit_start + absl::Seconds(flags.timeout_s)));
    v1::SubmitJobResponse response;
    const absl::Time sent = absl::Now();
    const grpc::Status status = client->SubmitJob(&context, request, &response);
    if (!status.ok()) {
      std::printf("SubmitJob of job %d failed after %.1f s: %s; %d jobs submitted\n", j,
                  absl::ToDoubleSeconds(absl::Now() - sent), status.error_message().c_str(), j);
      break;
    }
    submit_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - sent));
    planted[response.job_id()] = culprit;
  }
  const absl::Time submitted = absl::Now();
  const int submitted_jobs = static_cast<int>(planted.size());

  // The workers connect: the load starts.
  SimulatedWorkers::Options worker_options;
  worker_options.address = daemon.address;
  worker_options.workers = flags.workers;
  worker_options.channels = channels;
  worker_options.task_time = absl::Milliseconds(flags.task_ms);
  worker_options.measure = [&index_of](const v1::Task& task) { return Measure(task, index_of); };
  auto workers = std::make_unique<SimulatedWorkers>(worker_options);
  const double cpu_before = ProcCpuSeconds(daemon.pid);
  const absl::Time start = absl::Now();
  if (!workers->Start(absl::Seconds(120))) {
    std::fprintf(stderr, "coordinator_scale_bench: the workers did not all connect\n");
  }
  std::printf("sessions: %d open and polling in %.1f s\n", flags.workers,
              absl::ToDoubleSeconds(absl::Now() - start));

  // Wait for every job to finish.
  std::vector<v1::JobSummary> jobs;
  int finished = 0;
  absl::Time last_finish = submitted;
  const absl::Time deadline = start + absl::Seconds(flags.timeout_s);
  while (absl::Now() < deadline) {
    if (ListAllJobs(client.get(), &jobs)) {
      const int now_finished =
          static_cast<int>(std::count_if(jobs.begin(), jobs.end(), [](const v1::JobSummary& job) {
            return Finished(job.state());
          }));
      if (now_finished > finished) last_finish = absl::Now();
      finished = now_finished;
      if (finished >= submitted_jobs) break;
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  // The load's span: until the last job finished, or until the timeout.
  const double wall =
      absl::ToDoubleSeconds((finished >= submitted_jobs ? last_finish : absl::Now()) - start);
  const double cpu = ProcCpuSeconds(daemon.pid) - cpu_before;
  const int64_t rss_kb = ProcStatus(daemon.pid, "VmRSS");
  const int64_t hwm_kb = ProcStatus(daemon.pid, "VmHWM");
  const int64_t threads = ProcStatus(daemon.pid, "Threads");

  // Crash it with the long polls outstanding.
  workers->StopIssuing();
  daemon.Kill(SIGKILL);
  workers->Stop(absl::Seconds(30));
  const SimulatedWorkers::Stats stats = workers->stats();
  workers.reset();

  int right = 0;
  for (const v1::JobSummary& job : jobs) {
    auto it = planted.find(job.job_id());
    if (it != planted.end() && job.culprit_sha() == shas[it->second]) ++right;
  }
  std::printf(
      "jobs: %d/%d finished in %.1f s from the workers' start (%d submitted before, in %.1f s, "
      "submit p50 %.1f ms), %d found their planted culprit\n",
      finished, flags.jobs, wall, submitted_jobs, absl::ToDoubleSeconds(submitted - submit_start),
      Percentile(submit_ms, 50), right);
  std::printf("dispatch p50: %.2f ms\n", Percentile(stats.dispatch_ms, 50));
  std::printf("dispatch p99: %.2f ms\n", Percentile(stats.dispatch_ms, 99));
  std::printf("dispatch max: %.2f ms\n", Percentile(stats.dispatch_ms, 100));
  std::printf("complete p50: %.2f ms\n", Percentile(stats.complete_ms, 50));
  std::printf("complete p99: %.2f ms\n", Percentile(stats.complete_ms, 99));
  std::printf("results per second: %.0f\n",
              wall > 0 ? static_cast<double>(stats.accepted) / wall : 0);
  std::printf(
      "leases: %lld (%.1f a job), results accepted %lld, fenced %lld, cancellations %lld, "
      "call errors %lld, heartbeats %lld, tasks dropped %lld\n",
      static_cast<long long>(stats.leases),
      static_cast<double>(stats.leases) / std::max(1, flags.jobs),
      static_cast<long long>(stats.accepted), static_cast<long long>(stats.rejected),
      static_cast<long long>(stats.cancellations), static_cast<long long>(stats.errors),
      static_cast<long long>(stats.heartbeats), static_cast<long long>(stats.dropped));
  for (const auto& [kind, count] : stats.error_kinds) {
    std::printf("  call error %s: %lld\n", kind.c_str(), static_cast<long long>(count));
  }
  std::printf("coordinator RSS: %.0f MB (peak %.0f MB), %lld threads\n",
              static_cast<double>(rss_kb) / 1024, static_cast<double>(hwm_kb) / 1024,
              static_cast<long long>(threads));
  std::printf("coordinator CPU: %.1f s in %.1f s (%.0f%% of one core)\n", cpu, wall,
              wall > 0 ? 100 * cpu / wall : 0);
  const std::string database = state_dir + "/kbisect.db";
  const int64_t db_bytes = FileSize(database) + FileSize(database + "-wal");
  int64_t other_bytes = 0;
  for (const auto& entry : std::filesystem::directory_iterator(state_dir)) {
    if (entry.is_regular_file()) other_bytes += static_cast<int64_t>(entry.file_size());
  }
  other_bytes -= db_bytes + FileSize(database + "-shm");
  std::printf("journal size: %.1f MB (kbisect.db + wal; result cache and other files %.1f MB)\n",
              Mb(db_bytes), Mb(other_bytes));
  std::fflush(stdout);

  // Recovery: a new daemon on the same state, timed until it serves every job.
  const absl::Time restart = absl::Now();
  StartDaemon(flags.coordinator, state_dir, log, absl::Seconds(120), &daemon);
  const absl::Time serving = absl::Now();
  if (daemon.pid < 0) {
    std::fprintf(stderr, "coordinator_scale_bench: the restarted coordinator did not serve\n");
    return 1;
  }
  client = v1::CoordinatorService::NewStub(
      grpc::CreateChannel(daemon.address, grpc::InsecureChannelCredentials()));
  std::vector<v1::JobSummary> recovered;
  while (absl::Now() - restart < absl::Seconds(120)) {
    if (ListAllJobs(client.get(), &recovered) &&
        static_cast<int>(recovered.size()) >= submitted_jobs) {
      break;
    }
    absl::SleepFor(absl::Milliseconds(1));
  }
  const absl::Time listed = absl::Now();
  int recovered_finished = 0;
  for (const v1::JobSummary& job : recovered) recovered_finished += Finished(job.state()) ? 1 : 0;
  std::printf(
      "recovery: %.2f s (kill -9 -> serving %.2f s, all %d jobs listed %.2f s; %d "
      "finished)\n",
      absl::ToDoubleSeconds(listed - restart), absl::ToDoubleSeconds(serving - restart),
      static_cast<int>(recovered.size()), absl::ToDoubleSeconds(listed - restart),
      recovered_finished);
  std::printf("recovered coordinator RSS: %.0f MB\n",
              static_cast<double>(ProcStatus(daemon.pid, "VmRSS")) / 1024);
  daemon.Kill(SIGKILL);
  PrintJournal(database);

  if (flags.keep) {
    std::printf("kept: %s (state %s, log %s)\n", scratch.c_str(), state_dir.c_str(), log.c_str());
  } else {
    std::filesystem::remove_all(scratch);
    if (!flags.state_dir.empty()) std::filesystem::remove_all(flags.state_dir);
  }
  return 0;
}

}  // namespace
}  // namespace kbisect_bench

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  kbisect_bench::Flags flags;
  CLI::App app{"kbisect-coordinator under simulated workers and concurrent jobs"};
  app.add_option("--workers", flags.workers, "Simulated workers (sessions)");
  app.add_option("--jobs", flags.jobs, "Concurrent jobs");
  app.add_option("--commits", flags.commits, "Commits in each job's range");
  app.add_option("--channels", flags.channels,
                 "gRPC channels (TCP connections) the workers share; 0 = one per 100 workers");
  app.add_option("--max-workers-per-job", flags.max_workers_per_job,
                 "Each job's max_workers; 0 = workers / jobs");
  app.add_option("--runs", flags.runs, "Benchmark runs per probe");
  app.add_option("--task-ms", flags.task_ms,
                 "How long each task runs (0: results at once); meanwhile the worker heartbeats");
  app.add_option("--seed", flags.seed, "Seed of the planted culprits");
  app.add_option("--timeout", flags.timeout_s, "Seconds the jobs may take in all");
  app.add_option("--state-dir", flags.state_dir,
                 "The coordinator's state directory (default: scratch)");
  app.add_option("--coordinator", flags.coordinator,
                 "The kbisect-coordinator binary (another build's, for a before/after)");
  app.add_flag("--keep", flags.keep, "Keep the scratch directory (state, repository, log)");
  CLI11_PARSE(app, argc, argv);
  if (flags.workers < 1 || flags.jobs < 1 || flags.commits < 2) {
    std::fprintf(stderr, "coordinator_scale_bench: --workers, --jobs >= 1, --commits >= 2\n");
    return 2;
  }
  return kbisect_bench::Run(flags);
}
