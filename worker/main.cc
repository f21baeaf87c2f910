// Copyright 2026 The kbisect Authors.
//
// `kbisect-worker`: one GPU slot of a cluster node. It dials the coordinator, registers its
// runner identity and runs leased probes (checkout -> build -> bench) in its own checkout under
// the cache directory, or with a build command in the host's build cache there, with its
// commands pinned to the slot's device.
//
// SIGTERM or SIGINT drains: no new work is taken, the current probe finishes and is reported,
// then the process exits 0. A second signal stops at once: the running probe is killed and its
// lease handed back to the coordinator, which re-dispatches it.
#include <signal.h>

#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "common/daemon/daemon_flags.h"
#include "common/exec/exec.h"
#include "common/exec/signals.h"
#include "common/flags/flag_checks.h"
#include "common/identity/identity.h"
#include "common/log/log.h"
#include "common/rpc/credentials.h"
#include "common/sync/notification.h"
#include "common/text/count.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/support/channel_arguments.h"
#include "worker/build_ahead.h"
#include "worker/build_cache.h"
#include "worker/build_layer.h"
#include "worker/device_binding.h"
#include "worker/worker_slot.h"

namespace kbisect {
namespace {

constexpr char kFooter[] = R"(
Every flag can also be set through the environment variable in brackets.

The slot's commands run with CUDA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES
and KBISECT_WORKER set to the --gpu index. In a container that sees one GPU, keep --gpu 0.

A scheduler's device binding wins: when CUDA_VISIBLE_DEVICES (else ROCR_VISIBLE_DEVICES, else
HIP_VISIBLE_DEVICES) is already set, as srun --gpus-per-task sets it, the commands get that value
(--gpu, if given, picks one entry of a longer list). Under Slurm, SLURM_LOCALID is the slot, the
default name is NODE/jobJOBID/slotLOCALID, and the job id, node, step and local id are recorded
in the runner identity (`kbisect workers --json`, "placement"). See deploy/slurm/.

Signals: SIGTERM/SIGINT drain (finish and report the current probe, then exit 0); a second one
stops at once (the probe is killed and handed back to the coordinator).
)";

int Main(int argc, char** argv) {
  BlockTerminationSignals();
  CLI::App app{"kbisect worker daemon: runs bisect probes for a coordinator on one GPU slot.",
               "kbisect-worker"};
  app.footer(kFooter);
  std::string coordinator = "127.0.0.1:7070";
  std::string cache_dir = DefaultCacheDir();
  int gpu = 0;
  std::string name;
  DaemonFlags daemon;
  ClientCredentialOptions tls;
  double idle_poll_seconds = 5;
  int build_cache_size = kDefaultBuildCacheSize;
  app.add_option("--coordinator", coordinator, "Coordinator address host:port")
      ->envname("KBISECT_COORDINATOR")
      ->capture_default_str();
  app.add_option("--cache-dir", cache_dir, "Repository mirrors and this slot's checkout")
      ->envname("KBISECT_CACHE_DIR")
      ->capture_default_str();
  app.add_option("--build-cache-size", build_cache_size,
                 "Built checkouts kept per host under CACHE_DIR/builds (least recently used ones "
                 "are evicted); a probe at a commit already built runs no checkout or build. 0 "
                 "builds in the slot's own checkout")
      ->envname("KBISECT_BUILD_CACHE_SIZE")
      ->capture_default_str()
      ->check(WholeNumberIn(0, 100000, "builds"));
  bool no_compiler_cache = false;
  app.add_flag("--no-compiler-cache", no_compiler_cache,
               "Compile without the host's ccache (CACHE_DIR/compiler-cache), which builds use "
               "by default when ccache is installed");
  int build_ahead = DefaultBuildAhead();
  app.add_option("--build-ahead", build_ahead,
                 "Builds this process prepares at once, at low priority, into the build cache for "
                 "the commits the coordinator expects to probe next (needs the build cache). "
                 "Default: half the cores, less one; with several worker processes on one host, "
                 "divide it among them. 0 disables it")
      ->envname("KBISECT_BUILD_AHEAD")
      ->capture_default_str()
      ->check(WholeNumberIn(0, 1024, "builds"));
  CLI::Option* gpu_option =
      app.add_option("--gpu", gpu,
                     "Device slot this worker is pinned to, unless the scheduler bound one "
                     "(CUDA_VISIBLE_DEVICES etc. already set)")
          ->envname("KBISECT_GPU")
          ->capture_default_str()
          ->check(WholeNumberIn(0, 1023));
  app.add_option("--name", name, "Stable worker name (default: HOST/slotGPU)")
      ->envname("KBISECT_WORKER_NAME");
  app.add_option("--tls-ca", tls.ca_file, "PEM CA that signs the coordinator's certificate")
      ->envname("KBISECT_TLS_CA");
  AddTlsCertificateFlags(&app, "PEM client certificate (mutual TLS)",
                         "PEM key of the client certificate", &daemon);
  AddTokenFileFlag(&app,
                   "Not for workers on their own: a token authorizes client commands only. Workers "
                   "authenticate with --tls-cert/--tls-key (OU=kbisect-worker); with them a token "
                   "is sent too but grants nothing more",
                   &daemon);
  std::string class_keys;
  app.add_option("--hardware-class-keys", class_keys,
                 "Comma-separated identity keys that define the hardware class (gpu_model, "
                 "gpu_count, driver, toolkit, vbios, cpu_model, kernel, host)")
      ->envname("KBISECT_HARDWARE_CLASS_KEYS");
  app.add_option("--idle-poll", idle_poll_seconds, "Seconds an idle worker's long poll lasts")
      ->capture_default_str()
      ->check(NumberIn(0.1, 60, "seconds"));
  AddLogFormatFlag(&app, "text or json (JSON lines, for log pipelines)", &daemon);
  if (std::optional<int> exit_code = ParseDaemonCommandLine(&app, argc, argv)) return *exit_code;
  absl::StatusOr<LogFormat> format = LoadLogFormat(daemon);
  if (!format.ok()) {
    std::cerr << "kbisect-worker: " << format.status().message() << "\n";
    return 2;
  }
  const Logger log("kbisect-worker", *format, &std::cerr);
  tls.cert_file = daemon.tls_cert_file;
  tls.key_file = daemon.tls_key_file;
  if (!daemon.token_file.empty() && tls.cert_file.empty()) {
    log.Error(
        "--token-file cannot authenticate a worker: the coordinator only lets certificates "
        "with OU=kbisect-worker call worker RPCs. Give the worker --tls-cert and --tls-key (see "
        "docs/operations.md, Certificates).");
    return 2;
  }
  absl::StatusOr<std::string> token = LoadToken(daemon);
  if (!token.ok()) {
    log.Error(std::string(token.status().message()));
    return 2;
  }
  tls.token = *std::move(token);
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      MakeChannelCredentials(tls);
  if (!credentials.ok()) {
    log.Error(std::string(credentials.status().message()));
    return 2;
  }

  absl::StatusOr<std::vector<std::string>> keys = ParseHardwareClassKeys(class_keys);
  if (!keys.ok()) {
    log.Error(absl::StrCat("--hardware-class-keys: ", keys.status().message()));
    return 2;
  }
  absl::StatusOr<DeviceBinding> binding = ResolveDeviceBinding(
      EnvironmentMap(), gpu_option->count() > 0 ? std::optional<int>(gpu) : std::nullopt);
  if (!binding.ok()) {
    log.Error(absl::StrCat("device binding: ", binding.status().message()));
    return 2;
  }
  if (!binding->note.empty()) log.Info(binding->note);
  std::unique_ptr<CommandRunner> runner = NewSubprocessRunner();
  const v1::RunnerIdentity host_identity = ProbeRunnerIdentity(runner.get(), "");
  WorkerSlotOptions options;
  options.hardware_class_keys = *keys;
  options.cache_dir = cache_dir;
  options.build_cache_size = build_cache_size;
  options.compiler_cache = !no_compiler_cache;
  options.slot = binding->slot;
  options.visible_devices = binding->visible_devices;
  options.probe_device = binding->probe_device;
  options.placement = binding->placement;
  options.name = name.empty() ? DefaultBoundWorkerName(host_identity.host(), *binding) : name;
  options.idle_poll = absl::Seconds(idle_poll_seconds);
  std::unique_ptr<BuildCache> build_ahead_cache;
  std::unique_ptr<BuildAhead> builds_ahead;
  if (build_ahead > 0 && build_cache_size > 0) {
    BuildCacheOptions cache_options;
    cache_options.max_entries = build_cache_size;
    cache_options.compiler_cache = !no_compiler_cache;
    build_ahead_cache = std::make_unique<BuildCache>(cache_dir, cache_options, runner.get());
    builds_ahead = std::make_unique<BuildAhead>(build_ahead_cache.get(), build_ahead);
    options.build_ahead = builds_ahead.get();
  }
  // gRPC waits 1 s, then up to 120 s, between connection attempts by default: after a
  // coordinator restart the worker would stay away for seconds. 100 ms growing to 5 s (the
  // agent's own backoff bound) reconnects within a second of the coordinator's return.
  grpc::ChannelArguments channel_arguments;
  channel_arguments.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  channel_arguments.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
  WorkerSlot slot(options, runner.get(), host_identity,
                  grpc::CreateCustomChannel(coordinator, *credentials, channel_arguments));
  const bool over_tls = !tls.ca_file.empty() || !tls.cert_file.empty();
  log.Info(absl::StrCat(slot.name(), " on devices ", binding->visible_devices,
                        binding->placement.device_variable().empty()
                            ? std::string(" (--gpu)")
                            : absl::StrCat(" (", binding->placement.device_variable(), ")"),
                        " (", slot.identity().hardware_class_label(), ", class ",
                        slot.identity().hardware_class(), ") serving coordinator ", coordinator,
                        over_tls ? " over TLS" : "", "; cache ", cache_dir,
                        build_cache_size > 0
                            ? absl::StrCat(" (", Count(build_cache_size, "build"), " kept)")
                            : std::string(" (no build cache)"),
                        builds_ahead != nullptr
                            ? absl::StrCat("; builds ahead: ", builds_ahead->max_builds())
                            : std::string("; no builds ahead")),
           {{"worker", slot.name()},
            {"hardware_class", slot.identity().hardware_class()},
            {"coordinator", coordinator},
            {"tls", over_tls ? "true" : "false"}});
  {
    // Where builds install by default (worker/build_layer.h): over this process's Python.
    BuildLayers layers(runner.get(), BuildLayers::ProcessEnvironment());
    const std::optional<PythonBase> base = layers.Base();
    log.Info(base.has_value()
                 ? absl::StrCat("builds install into layers of their own over ", base->description)
                 : std::string("builds install into prefixes of their own (no Python found)"),
             {{"worker", slot.name()}});
  }

  kbisect::Notification done;
  std::thread agent_thread([&] {
    slot.agent()->Run();
    done.Notify();
  });
  int signals = 0;
  while (!done.HasBeenNotified()) {
    const int sig = WaitForTerminationSignal(absl::Milliseconds(200));
    if (sig == 0) continue;
    if (++signals == 1) {
      log.Info(absl::StrCat(sig == SIGTERM ? "SIGTERM" : "SIGINT",
                            ": draining (finishing the current probe; signal again to stop now)"));
      slot.agent()->Drain();
    } else {
      log.Info("stopping now; the current probe is handed back");
      slot.agent()->Stop();
    }
  }
  agent_thread.join();
  if (const absl::Status reason = slot.agent()->stop_reason(); !reason.ok()) {
    log.Error(absl::StrCat(slot.name(), ": ", reason.message()), {{"worker", slot.name()}});
    return 1;
  }
  log.Info(
      absl::StrCat(slot.name(), " exiting after ", slot.agent()->tasks_reported(),
                   " reported probe(s)"),
      {{"worker", slot.name()}, {"probes_reported", absl::StrCat(slot.agent()->tasks_reported())}});
  return 0;
}

}  // namespace
}  // namespace kbisect

int main(int argc, char** argv) { return kbisect::Main(argc, argv); }
