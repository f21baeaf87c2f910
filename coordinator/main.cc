// Copyright 2026 The kbisect Authors.
//
// `kbisect-coordinator`: the cluster's coordinator daemon. It serves CoordinatorService (for
// `kbisect submit|status|watch|workers|cancel`), WorkerService (for `kbisect-worker`s), gRPC
// health checking (for "" and each service) and server reflection on one port, and keeps
// repository mirrors and the job database (`kbisect.db`, SQLite) under its state directory. At
// start it recovers every job from that database, so a crash or `kill -9` loses nothing that
// was acknowledged.
//
// Without TLS credentials it refuses to listen on anything but loopback unless --insecure says
// so. SIGTERM or SIGINT shuts it down gracefully: health goes NOT_SERVING (every name, both
// ports), blocked calls are released, in-flight RPCs get --drain-timeout to finish, then the
// process exits 0.
#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/clock/age.h"
#include "common/clock/clock.h"
#include "common/daemon/daemon_flags.h"
#include "common/exec/signals.h"
#include "common/flags/flag_checks.h"
#include "common/log/log.h"
#include "common/rpc/credentials.h"
#include "common/status_macros.h"
#include "common/text/count.h"
#include "coordinator/change_logger.h"
#include "coordinator/coordinator.h"
#include "coordinator/coordinator_server.h"
#include "coordinator/crash_points.h"
#include "coordinator/job_pages.h"
#include "coordinator/job_store.h"
#include "coordinator/metrics.h"
#include "coordinator/metrics_http.h"
#include "coordinator/repository_view.h"
#include "coordinator/result_cache.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"

namespace kbisect {
namespace {

constexpr char kFooter[] = R"(
Every flag can also be set through the environment variable in brackets.

Security: with --tls-cert/--tls-key the port speaks TLS only. --client-ca makes workers and
clients authenticate with client certificates signed by that CA (mutual TLS); the certificate's
subject names its role: OU=kbisect-worker (worker RPCs only) or OU=kbisect-client (client RPCs
only). --token-file (needs --client-ca) lets clients without a certificate authenticate with
"authorization: Bearer TOKEN" instead; a token cannot call worker RPCs. Without client
authentication (--client-ca) the coordinator only listens on loopback, unless --insecure is given.

Metrics: --metrics-listen serves Prometheus text metrics at http://ADDR/metrics (plain HTTP, no
secrets in them), and the live job pages at http://ADDR/jobs and /jobs/ID: read-only, to loopback
peers only unless --pages-remote, behind the bearer token when --token-file is set.

SIGTERM/SIGINT: health NOT_SERVING (every service, both ports), then in-flight RPCs get
--drain-timeout seconds, then exit 0.
)";

std::string DefaultStateDir() {
  if (const char* state = std::getenv("XDG_STATE_HOME"); state != nullptr && *state != '\0') {
    return absl::StrCat(state, "/kbisect");
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return absl::StrCat(home, "/.local/state/kbisect");
  }
  return "/tmp/kbisect-state";
}

// `kbisect-coordinator`'s flags.
struct CoordinatorFlags {
  std::string listen = "127.0.0.1:7070";
  std::string state_dir = DefaultStateDir();
  bool insecure = false;
  DaemonFlags daemon;
  ServerCredentialOptions tls;
  std::string port_file;
  std::string health_listen;
  double drain_seconds = 10;
  double lease_seconds = 10;
  int max_message_bytes = 16 << 20;
  std::string metrics_listen;
  bool pages_remote = false;
  std::string retain = "30d";
};

// Registers `kbisect-coordinator`'s flags on `app`.
void AddCoordinatorFlags(CLI::App* app, CoordinatorFlags* f) {
  app->add_option("--listen", f->listen, "host:port to serve on (port 0 picks a free one)")
      ->envname("KBISECT_LISTEN")
      ->capture_default_str();
  app->add_option("--state-dir", f->state_dir, "Directory for repository mirrors and job state")
      ->envname("KBISECT_STATE_DIR")
      ->capture_default_str();
  app->add_flag("--insecure", f->insecure,
                "Allow plaintext on a non-loopback address (only inside a trusted network)")
      ->envname("KBISECT_INSECURE");
  AddTlsCertificateFlags(app, "PEM server certificate chain", "PEM server private key", &f->daemon);
  app->add_option("--client-ca", f->tls.client_ca_file,
                  "PEM CA that signs worker/client certificates (mutual TLS)")
      ->envname("KBISECT_CLIENT_CA");
  AddTokenFileFlag(app, "File holding the bearer token clients may use", &f->daemon);
  app->add_option("--port-file", f->port_file, "Write the bound port to FILE once serving")
      ->envname("KBISECT_PORT_FILE");
  app->add_option("--health-listen", f->health_listen,
                  "Also serve only gRPC health, in plaintext, on this host:port (for Kubernetes "
                  "grpc probes, which cannot speak TLS)")
      ->envname("KBISECT_HEALTH_LISTEN");
  app->add_option("--drain-timeout", f->drain_seconds, "Seconds in-flight RPCs get at shutdown")
      ->envname("KBISECT_DRAIN_TIMEOUT")
      ->capture_default_str()
      ->check(NonNegative("seconds"));
  app->add_option("--lease-duration", f->lease_seconds,
                  "Seconds without a heartbeat after which a worker's probe is re-dispatched")
      ->envname("KBISECT_LEASE_DURATION")
      ->capture_default_str()
      ->check(NumberIn(1, 3600, "seconds"));
  app->add_option("--max-message-bytes", f->max_message_bytes, "Largest request accepted")
      ->envname("KBISECT_MAX_MESSAGE_BYTES")
      ->capture_default_str()
      ->check(WholeNumberIn(4096, 1 << 30, "bytes"));
  app->add_option("--metrics-listen", f->metrics_listen,
                  "Serve Prometheus metrics over HTTP at http://host:port/metrics (off by default)")
      ->envname("KBISECT_METRICS_LISTEN");
  app->add_option("--retain", f->retain,
                  "How long finished jobs are kept after they finished (30d, 12h, 1d12h, ...; "
                  "'forever' keeps them)")
      ->envname("KBISECT_RETAIN")
      ->capture_default_str();
  app->add_flag("--pages-remote", f->pages_remote,
                "Also answer the live job pages (/jobs, /jobs/ID on --metrics-listen) to peers "
                "that are not on loopback (behind the bearer token when one is set)")
      ->envname("KBISECT_PAGES_REMOTE");
  AddLogFormatFlag(app,
                   "text (one readable line per event) or json (JSON lines with time, level, "
                   "component, msg and the event's fields, for log pipelines)",
                   &f->daemon);
}

// Parses the command line into `f`. Returns the exit code when the daemon should exit at once
// (--help, a bad command line: ParseDaemonCommandLine); nullopt when it should go on.
std::optional<int> ParseCoordinatorFlags(int argc, char** argv, CoordinatorFlags* f) {
  CLI::App app{"kbisect coordinator daemon: owns bisect jobs and hands probes to workers.",
               "kbisect-coordinator"};
  app.footer(kFooter);
  AddCoordinatorFlags(&app, f);
  return ParseDaemonCommandLine(&app, argc, argv);
}

// Logs `status`'s message as an error and returns `exit_code`.
int Fail(const Logger& log, const absl::Status& status, int exit_code) {
  log.Error(std::string(status.message()));
  return exit_code;
}

// How long finished jobs are kept (--retain): an age, or forever (an infinite duration).
absl::StatusOr<absl::Duration> RetainFor(const std::string& retain) {
  if (retain == "forever") return absl::InfiniteDuration();
  absl::StatusOr<absl::Duration> parsed = ParseAge(retain);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--retain: ", parsed.status().message(), ", or forever"));
  }
  return *parsed;
}

// Loads the bearer token and the TLS files into `f->tls` and returns the server credentials
// (null: plaintext). Refuses a listen address other than loopback without client
// authentication, unless --insecure.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> LoadServerCredentials(
    CoordinatorFlags* f) {
  absl::StatusOr<std::string> token = LoadToken(f->daemon);
  if (!token.ok()) return token.status();
  f->tls.cert_file = f->daemon.tls_cert_file;
  f->tls.key_file = f->daemon.tls_key_file;
  f->tls.token = *std::move(token);
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      MakeServerCredentials(f->tls);
  if (!credentials.ok()) return credentials.status();
  if (f->tls.client_ca_file.empty() && !f->insecure && !IsLoopbackAddress(f->listen)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "refusing to listen on ", f->listen,
        *credentials == nullptr ? " without TLS" : " without client authentication",
        ": anyone who can reach it could submit jobs that run commands on your "
        "workers. Give --tls-cert, --tls-key and --client-ca (and --token-file for "
        "people and CI jobs), listen on 127.0.0.1, or pass --insecure inside a trusted "
        "network."));
  }
  return credentials;
}

// What the coordinator keeps under its state directory. The members go in reverse order.
struct CoordinatorState {
  std::string database;  // The job database's path.
  std::unique_ptr<SqliteJobStore> store;
  std::unique_ptr<RepositoryView> repositories;
  std::unique_ptr<ResultCache> result_cache;  // Null: results are not reused across jobs.
};

// Creates `state_dir` and opens the job store, the repository mirrors and the result cache in
// it into `state`. A result cache that cannot be opened is warned about and left out.
absl::Status OpenState(const std::string& state_dir, const Logger& log, CoordinatorState* state) {
  std::error_code error;
  const std::string cache_dir = state_dir + "/repositories";
  std::filesystem::create_directories(cache_dir, error);
  if (error) {
    return absl::InternalError(absl::StrCat("cannot create the state directory ", state_dir, ": ",
                                            error.message(), "; pick another with --state-dir"));
  }
  state->database = state_dir + "/kbisect.db";
  absl::StatusOr<std::unique_ptr<SqliteJobStore>> store = SqliteJobStore::Open(state->database);
  if (!store.ok()) return store.status();
  state->store = *std::move(store);
  state->repositories = NewGitRepositoryView(cache_dir);
  // Measurements kept across jobs (docs/operations.md, "The result cache"); without it every job
  // measures everything, which is slower but never wrong.
  const std::string results = DefaultResultCachePath(state_dir);
  absl::StatusOr<std::unique_ptr<ResultCache>> result_cache = OpenSqliteResultCache(results);
  if (result_cache.ok()) {
    state->result_cache = *std::move(result_cache);
  } else {
    log.Warning(absl::StrCat("not reusing results across jobs: ", result_cache.status().message()));
  }
  return absl::OkStatus();
}

// The coordinator's options: the flags', `state`'s store and result cache, and the test-only
// crash points of the environment (warned about when armed; an error when malformed).
absl::StatusOr<CoordinatorOptions> CoordinatorOptionsFor(const CoordinatorFlags& f,
                                                         absl::Duration retain_for,
                                                         const CoordinatorState& state,
                                                         const Logger& log) {
  CoordinatorOptions options;
  options.lease_duration = absl::Seconds(f.lease_seconds);
  options.retain = retain_for;
  options.store = state.store.get();
  options.result_cache = state.result_cache.get();
  // Test-only (coordinator/crash_points.h): no deployment sets these variables.
  absl::StatusOr<CrashPoints> crash_points = CrashPointsFromEnvironment();
  if (!crash_points.ok()) return crash_points.status();
  options.crash_points = *crash_points;
  if (crash_points->armed()) {
    log.Warning(absl::StrCat("test-only crash points armed: after journal commit ",
                             crash_points->after_commit, ", before the reply of mutating RPC ",
                             crash_points->before_reply));
  }
  return options;
}

// Recovers every job from `database` into `coordinator` and logs what was recovered.
absl::Status RecoverJobs(Coordinator* coordinator, const std::string& database, const Logger& log) {
  absl::StatusOr<RecoveryReport> recovered = coordinator->Recover();
  if (!recovered.ok()) {
    return absl::InternalError(absl::StrCat("cannot recover the jobs from ", database, ": ",
                                            recovered.status().message()));
  }
  log.Info(absl::StrCat("recovered ", Count(recovered->jobs, "job"), " (", recovered->unfinished,
                        " unfinished, ", Count(recovered->orphaned_probes, "probe"),
                        " that were running will run again) from ", database),
           {{"jobs", absl::StrCat(recovered->jobs)},
            {"unfinished", absl::StrCat(recovered->unfinished)},
            {"orphaned_probes", absl::StrCat(recovered->orphaned_probes)}});
  return absl::OkStatus();
}

// The servers the coordinator answers on. The members stop in reverse order.
struct Servers {
  std::unique_ptr<CoordinatorServer> rpc;
  std::unique_ptr<HealthServer> health;        // Null without --health-listen.
  std::unique_ptr<MetricsHttpServer> metrics;  // Null without --metrics-listen.
};

// Starts the gRPC server, then the plaintext health server (--health-listen) and the metrics
// and job pages server (--metrics-listen) when asked for, into `servers`; logs the latter two's
// ports.
absl::Status StartServers(const CoordinatorFlags& f,
                          std::shared_ptr<grpc::ServerCredentials> credentials,
                          Coordinator* coordinator, const Logger& log, Servers* servers) {
  CoordinatorServerOptions server_options;
  server_options.listen_address = f.listen;
  server_options.credentials = std::move(credentials);
  server_options.max_receive_message_bytes = f.max_message_bytes;
  ASSIGN_OR_RETURN(servers->rpc, CoordinatorServer::Start(coordinator, server_options));
  if (!f.health_listen.empty()) {
    // Health statuses reveal nothing, so plaintext is fine here.
    ASSIGN_OR_RETURN(servers->health, HealthServer::Start(f.health_listen));
    log.Info(
        absl::StrCat("health checks on ", f.health_listen.substr(0, f.health_listen.rfind(':')),
                     ":", servers->health->port(), " (plaintext, health only)"),
        {{"port", absl::StrCat(servers->health->port())}});
  }
  if (!f.metrics_listen.empty()) {
    absl::StatusOr<std::unique_ptr<MetricsHttpServer>> started = MetricsHttpServer::Start(
        f.metrics_listen, [coordinator] { return RenderPrometheusText(coordinator->Metrics()); },
        MakeJobPages(coordinator, f.tls.token, f.pages_remote));
    if (!started.ok()) return started.status();
    servers->metrics = *std::move(started);
    log.Info(
        absl::StrCat("metrics on http://", f.metrics_listen.substr(0, f.metrics_listen.rfind(':')),
                     ":", servers->metrics->port(), "/metrics; job pages at /jobs",
                     f.pages_remote ? "" : " (loopback peers only)"),
        {{"port", absl::StrCat(servers->metrics->port())}});
  }
  return absl::OkStatus();
}

// Logs where the coordinator listens (`port`), how it is secured (`tls`: it has credentials)
// and where its state is.
void LogListening(const CoordinatorFlags& f, bool tls, int port, const Logger& log) {
  const std::string host = f.listen.substr(0, f.listen.rfind(':'));
  log.Info(
      absl::StrCat("listening on ", host, ":", port, tls ? " (TLS)" : " (plaintext)",
                   f.tls.client_ca_file.empty() ? "" : ", client certificates verified",
                   f.tls.token.empty() ? "" : ", bearer token accepted", "; state in ",
                   f.state_dir),
      {{"port", absl::StrCat(port)}, {"tls", tls ? "true" : "false"}, {"state_dir", f.state_dir}});
}

// Writes `port` to `port_file` (--port-file; nothing when empty), through a temporary name
// renamed into place so that a reader never sees a partial number.
absl::Status WritePortFile(const std::string& port_file, int port) {
  if (port_file.empty()) return absl::OkStatus();
  std::error_code error;
  const std::string temporary = port_file + ".tmp";
  std::ofstream(temporary) << port << "\n";
  std::filesystem::rename(temporary, port_file, error);
  if (error) {
    return absl::InternalError(
        absl::StrCat("cannot write --port-file ", port_file, ": ", error.message()));
  }
  return absl::OkStatus();
}

// Logs the changes of the jobs every second until SIGTERM or SIGINT; returns the signal.
int ServeUntilSignal(ChangeLogger* changes) {
  int sig = 0;
  while (sig == 0) {
    changes->Poll();
    sig = WaitForTerminationSignal(absl::Seconds(1));
  }
  return sig;
}

// Shuts down gracefully after signal `sig`: health goes NOT_SERVING, in-flight calls get
// --drain-timeout, then the servers stop and the last changes are logged.
void ShutDown(int sig, const CoordinatorFlags& f, Servers* servers, ChangeLogger* changes,
              const Logger& log) {
  log.Info(absl::StrCat(sig == SIGTERM ? "SIGTERM" : "SIGINT",
                        ": not serving; draining in-flight calls for up to ", f.drain_seconds,
                        "s"));
  if (servers->health != nullptr) servers->health->SetServing(false);
  servers->rpc->Shutdown(absl::Seconds(f.drain_seconds));
  servers->rpc->Wait();
  if (servers->health != nullptr) servers->health->Shutdown();
  servers->metrics.reset();
  changes->Poll();
  log.Info("stopped");
}

int Main(int argc, char** argv) {
  BlockTerminationSignals();
  CoordinatorFlags f;
  if (std::optional<int> exit_code = ParseCoordinatorFlags(argc, argv, &f)) return *exit_code;
  absl::StatusOr<LogFormat> format = LoadLogFormat(f.daemon);
  if (!format.ok()) {
    std::cerr << "kbisect-coordinator: " << format.status().message() << "\n";
    return 2;
  }
  const Logger log("kbisect-coordinator", *format, &std::cerr);
  absl::StatusOr<absl::Duration> retain_for = RetainFor(f.retain);
  if (!retain_for.ok()) return Fail(log, retain_for.status(), 2);
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials = LoadServerCredentials(&f);
  if (!credentials.ok()) return Fail(log, credentials.status(), 2);

  CoordinatorState state;
  if (absl::Status opened = OpenState(f.state_dir, log, &state); !opened.ok()) {
    return Fail(log, opened, 1);
  }
  absl::StatusOr<CoordinatorOptions> options = CoordinatorOptionsFor(f, *retain_for, state, log);
  if (!options.ok()) return Fail(log, options.status(), 2);
  Coordinator coordinator(*options, state.repositories.get(), Clock::Real());
  if (absl::Status recovered = RecoverJobs(&coordinator, state.database, log); !recovered.ok()) {
    return Fail(log, recovered, 1);
  }
  ChangeLogger changes(&coordinator, &log);
  changes.Prime();
  coordinator.StartHousekeeping(absl::Milliseconds(250));

  Servers servers;
  if (absl::Status started = StartServers(f, *credentials, &coordinator, log, &servers);
      !started.ok()) {
    return Fail(log, started, 1);
  }
  LogListening(f, *credentials != nullptr, servers.rpc->port(), log);
  if (absl::Status written = WritePortFile(f.port_file, servers.rpc->port()); !written.ok()) {
    return Fail(log, written, 1);
  }
  ShutDown(ServeUntilSignal(&changes), f, &servers, &changes, log);
  return 0;
}

}  // namespace
}  // namespace kbisect

int main(int argc, char** argv) { return kbisect::Main(argc, argv); }
