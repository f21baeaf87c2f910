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

int Main(int argc, char** argv) {
  BlockTerminationSignals();
  CLI::App app{"kbisect coordinator daemon: owns bisect jobs and hands probes to workers.",
               "kbisect-coordinator"};
  app.footer(kFooter);
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
  app.add_option("--listen", listen, "host:port to serve on (port 0 picks a free one)")
      ->envname("KBISECT_LISTEN")
      ->capture_default_str();
  app.add_option("--state-dir", state_dir, "Directory for repository mirrors and job state")
      ->envname("KBISECT_STATE_DIR")
      ->capture_default_str();
  app.add_flag("--insecure", insecure,
               "Allow plaintext on a non-loopback address (only inside a trusted network)")
      ->envname("KBISECT_INSECURE");
  AddTlsCertificateFlags(&app, "PEM server certificate chain", "PEM server private key", &daemon);
  app.add_option("--client-ca", tls.client_ca_file,
                 "PEM CA that signs worker/client certificates (mutual TLS)")
      ->envname("KBISECT_CLIENT_CA");
  AddTokenFileFlag(&app, "File holding the bearer token clients may use", &daemon);
  app.add_option("--port-file", port_file, "Write the bound port to FILE once serving")
      ->envname("KBISECT_PORT_FILE");
  app.add_option("--health-listen", health_listen,
                 "Also serve only gRPC health, in plaintext, on this host:port (for Kubernetes "
                 "grpc probes, which cannot speak TLS)")
      ->envname("KBISECT_HEALTH_LISTEN");
  app.add_option("--drain-timeout", drain_seconds, "Seconds in-flight RPCs get at shutdown")
      ->envname("KBISECT_DRAIN_TIMEOUT")
      ->capture_default_str()
      ->check(NonNegative("seconds"));
  app.add_option("--lease-duration", lease_seconds,
                 "Seconds without a heartbeat after which a worker's probe is re-dispatched")
      ->envname("KBISECT_LEASE_DURATION")
      ->capture_default_str()
      ->check(NumberIn(1, 3600, "seconds"));
  app.add_option("--max-message-bytes", max_message_bytes, "Largest request accepted")
      ->envname("KBISECT_MAX_MESSAGE_BYTES")
      ->capture_default_str()
      ->check(WholeNumberIn(4096, 1 << 30, "bytes"));
  app.add_option("--metrics-listen", metrics_listen,
                 "Serve Prometheus metrics over HTTP at http://host:port/metrics (off by default)")
      ->envname("KBISECT_METRICS_LISTEN");
  app.add_option("--retain", retain,
                 "How long finished jobs are kept after they finished (30d, 12h, 1d12h, ...; "
                 "'forever' keeps them)")
      ->envname("KBISECT_RETAIN")
      ->capture_default_str();
  app.add_flag("--pages-remote", pages_remote,
               "Also answer the live job pages (/jobs, /jobs/ID on --metrics-listen) to peers "
               "that are not on loopback (behind the bearer token when one is set)")
      ->envname("KBISECT_PAGES_REMOTE");
  AddLogFormatFlag(&app,
                   "text (one readable line per event) or json (JSON lines with time, level, "
                   "component, msg and the event's fields, for log pipelines)",
                   &daemon);
  if (std::optional<int> exit_code = ParseDaemonCommandLine(&app, argc, argv)) return *exit_code;
  absl::StatusOr<LogFormat> format = LoadLogFormat(daemon);
  if (!format.ok()) {
    std::cerr << "kbisect-coordinator: " << format.status().message() << "\n";
    return 2;
  }
  const Logger log("kbisect-coordinator", *format, &std::cerr);
  absl::Duration retain_for = absl::InfiniteDuration();
  if (retain != "forever") {
    absl::StatusOr<absl::Duration> parsed = ParseAge(retain);
    if (!parsed.ok()) {
      log.Error(absl::StrCat("--retain: ", parsed.status().message(), ", or forever"));
      return 2;
    }
    retain_for = *parsed;
  }

  absl::StatusOr<std::string> token = LoadToken(daemon);
  if (!token.ok()) {
    log.Error(std::string(token.status().message()));
    return 2;
  }
  tls.cert_file = daemon.tls_cert_file;
  tls.key_file = daemon.tls_key_file;
  tls.token = *std::move(token);
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials = MakeServerCredentials(tls);
  if (!credentials.ok()) {
    log.Error(std::string(credentials.status().message()));
    return 2;
  }
  if (tls.client_ca_file.empty() && !insecure && !IsLoopbackAddress(listen)) {
    log.Error(absl::StrCat(
        "refusing to listen on ", listen,
        *credentials == nullptr ? " without TLS" : " without client authentication",
        ": anyone who can reach it could submit jobs that run commands on your "
        "workers. Give --tls-cert, --tls-key and --client-ca (and --token-file for "
        "people and CI jobs), listen on 127.0.0.1, or pass --insecure inside a trusted "
        "network."));
    return 2;
  }
  std::error_code error;
  const std::string cache_dir = state_dir + "/repositories";
  std::filesystem::create_directories(cache_dir, error);
  if (error) {
    log.Error(absl::StrCat("cannot create the state directory ", state_dir, ": ", error.message(),
                           "; pick another with --state-dir"));
    return 1;
  }

  const std::string database = state_dir + "/kbisect.db";
  absl::StatusOr<std::unique_ptr<SqliteJobStore>> store = SqliteJobStore::Open(database);
  if (!store.ok()) {
    log.Error(std::string(store.status().message()));
    return 1;
  }
  std::unique_ptr<RepositoryView> repositories = NewGitRepositoryView(cache_dir);
  CoordinatorOptions coordinator_options;
  coordinator_options.lease_duration = absl::Seconds(lease_seconds);
  coordinator_options.retain = retain_for;
  coordinator_options.store = store->get();
  // Measurements kept across jobs (docs/operations.md, "The result cache"); without it every job
  // measures everything, which is slower but never wrong.
  const std::string results = DefaultResultCachePath(state_dir);
  absl::StatusOr<std::unique_ptr<ResultCache>> result_cache = OpenSqliteResultCache(results);
  if (result_cache.ok()) {
    coordinator_options.result_cache = result_cache->get();
  } else {
    log.Warning(absl::StrCat("not reusing results across jobs: ", result_cache.status().message()));
  }
  // Test-only (coordinator/crash_points.h): no deployment sets these variables.
  absl::StatusOr<CrashPoints> crash_points = CrashPointsFromEnvironment();
  if (!crash_points.ok()) {
    log.Error(std::string(crash_points.status().message()));
    return 2;
  }
  coordinator_options.crash_points = *crash_points;
  if (crash_points->armed()) {
    log.Warning(absl::StrCat("test-only crash points armed: after journal commit ",
                             crash_points->after_commit, ", before the reply of mutating RPC ",
                             crash_points->before_reply));
  }
  Coordinator coordinator(coordinator_options, repositories.get(), Clock::Real());
  absl::StatusOr<RecoveryReport> recovered = coordinator.Recover();
  if (!recovered.ok()) {
    log.Error(absl::StrCat("cannot recover the jobs from ", database, ": ",
                           recovered.status().message()));
    return 1;
  }
  log.Info(absl::StrCat("recovered ", Count(recovered->jobs, "job"), " (", recovered->unfinished,
                        " unfinished, ", Count(recovered->orphaned_probes, "probe"),
                        " that were running will run again) from ", database),
           {{"jobs", absl::StrCat(recovered->jobs)},
            {"unfinished", absl::StrCat(recovered->unfinished)},
            {"orphaned_probes", absl::StrCat(recovered->orphaned_probes)}});
  ChangeLogger changes(&coordinator, &log);
  changes.Prime();
  coordinator.StartHousekeeping(absl::Milliseconds(250));
  CoordinatorServerOptions server_options;
  server_options.listen_address = listen;
  server_options.credentials = *credentials;
  server_options.max_receive_message_bytes = max_message_bytes;
  absl::StatusOr<std::unique_ptr<CoordinatorServer>> server =
      CoordinatorServer::Start(&coordinator, server_options);
  if (!server.ok()) {
    log.Error(std::string(server.status().message()));
    return 1;
  }
  std::unique_ptr<HealthServer> health_server;
  if (!health_listen.empty()) {
    // Health statuses reveal nothing, so plaintext is fine here.
    absl::StatusOr<std::unique_ptr<HealthServer>> started = HealthServer::Start(health_listen);
    if (!started.ok()) {
      log.Error(std::string(started.status().message()));
      return 1;
    }
    health_server = *std::move(started);
    log.Info(absl::StrCat("health checks on ", health_listen.substr(0, health_listen.rfind(':')),
                          ":", health_server->port(), " (plaintext, health only)"),
             {{"port", absl::StrCat(health_server->port())}});
  }
  std::unique_ptr<MetricsHttpServer> metrics;
  if (!metrics_listen.empty()) {
    absl::StatusOr<std::unique_ptr<MetricsHttpServer>> started = MetricsHttpServer::Start(
        metrics_listen, [&coordinator] { return RenderPrometheusText(coordinator.Metrics()); },
        MakeJobPages(&coordinator, tls.token, pages_remote));
    if (!started.ok()) {
      log.Error(std::string(started.status().message()));
      return 1;
    }
    metrics = *std::move(started);
    log.Info(absl::StrCat("metrics on http://", metrics_listen.substr(0, metrics_listen.rfind(':')),
                          ":", metrics->port(), "/metrics; job pages at /jobs",
                          pages_remote ? "" : " (loopback peers only)"),
             {{"port", absl::StrCat(metrics->port())}});
  }
  const std::string host = listen.substr(0, listen.rfind(':'));
  log.Info(
      absl::StrCat("listening on ", host, ":", (*server)->port(),
                   *credentials == nullptr ? " (plaintext)" : " (TLS)",
                   tls.client_ca_file.empty() ? "" : ", client certificates verified",
                   tls.token.empty() ? "" : ", bearer token accepted", "; state in ", state_dir),
      {{"port", absl::StrCat((*server)->port())},
       {"tls", *credentials == nullptr ? "false" : "true"},
       {"state_dir", state_dir}});
  if (!port_file.empty()) {
    // Written to a temporary name and renamed, so a reader never sees a partial number.
    const std::string temporary = port_file + ".tmp";
    std::ofstream(temporary) << (*server)->port() << "\n";
    std::filesystem::rename(temporary, port_file, error);
    if (error) {
      log.Error(absl::StrCat("cannot write --port-file ", port_file, ": ", error.message()));
      return 1;
    }
  }

  int sig = 0;
  while (sig == 0) {
    changes.Poll();
    sig = WaitForTerminationSignal(absl::Seconds(1));
  }
  log.Info(absl::StrCat(sig == SIGTERM ? "SIGTERM" : "SIGINT",
                        ": not serving; draining in-flight calls for up to ", drain_seconds, "s"));
  if (health_server != nullptr) health_server->SetServing(false);
  (*server)->Shutdown(absl::Seconds(drain_seconds));
  (*server)->Wait();
  if (health_server != nullptr) health_server->Shutdown();
  metrics.reset();
  changes.Poll();
  log.Info("stopped");
  return 0;
}

}  // namespace
}  // namespace kbisect

int main(int argc, char** argv) { return kbisect::Main(argc, argv); }
