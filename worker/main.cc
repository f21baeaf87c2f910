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
#include "worker/clock_lock.h"
#include "worker/compiler_cache_flags.h"
#include "worker/device_binding.h"
#include "worker/until_job.h"
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

--until-job JOB serves until that job has ended (done, cancelled or failed; not while its
follow-ups run), then drains as on SIGTERM and exits 0: the pods of `kbisect k8s-job`'s Indexed
Job, which then completes. A job the coordinator does not know exits 2 at once.
)";

// kbisect-worker's command line.
struct WorkerFlags {
  std::string coordinator = "127.0.0.1:7070";
  std::string cache_dir = DefaultCacheDir();
  int gpu = 0;
  bool gpu_given = false;  // Whether --gpu (or KBISECT_GPU) was given.
  std::string name;
  DaemonFlags daemon;
  ClientCredentialOptions tls;  // --tls-ca; the rest comes from `daemon` (LoadCredentials).
  double idle_poll_seconds = 5;
  int build_cache_size = kDefaultBuildCacheSize;
  bool no_compiler_cache = false;
  CompilerCacheRemote compiler_cache_remote;  // --compiler-cache-remote, --compiler-cache-read-only
  int build_ahead = DefaultBuildAhead();
  std::string class_keys;
  std::string lock_clocks;  // --lock-clocks base|max|SM[,MEM]; empty: not locked.
  std::string until_job;    // --until-job JOB; empty: serve until a signal.
};

// Parses kbisect-worker's command line into `f`. Returns the exit code when the process is to
// exit at once (--help, a usage error, said on stderr), else nullopt.
std::optional<int> ParseFlags(int argc, char** argv, WorkerFlags* f) {
  CLI::App app{"kbisect worker daemon: runs bisect probes for a coordinator on one GPU slot.",
               "kbisect-worker"};
  app.footer(kFooter);
  app.add_option("--coordinator", f->coordinator, "Coordinator address host:port")
      ->envname("KBISECT_COORDINATOR")
      ->capture_default_str();
  app.add_option("--cache-dir", f->cache_dir, "Repository mirrors and this slot's checkout")
      ->envname("KBISECT_CACHE_DIR")
      ->capture_default_str();
  app.add_option("--build-cache-size", f->build_cache_size,
                 "Built checkouts kept per host under CACHE_DIR/builds (least recently used ones "
                 "are evicted); a probe at a commit already built runs no checkout or build. 0 "
                 "builds in the slot's own checkout")
      ->envname("KBISECT_BUILD_CACHE_SIZE")
      ->capture_default_str()
      ->check(WholeNumberIn(0, 100000, "builds"));
  app.add_flag("--no-compiler-cache", f->no_compiler_cache,
               "Compile without the host's ccache (CACHE_DIR/compiler-cache), which builds use "
               "by default when ccache is installed");
  AddCompilerCacheRemoteFlags(&app, &f->compiler_cache_remote);
  app.add_option("--build-ahead", f->build_ahead,
                 "Builds this process prepares at once, at low priority, into the build cache for "
                 "the commits the coordinator expects to probe next (needs the build cache). "
                 "Default: half the cores, less one; with several worker processes on one host, "
                 "divide it among them. 0 disables it")
      ->envname("KBISECT_BUILD_AHEAD")
      ->capture_default_str()
      ->check(WholeNumberIn(0, 1024, "builds"));
  CLI::Option* gpu_option =
      app.add_option("--gpu", f->gpu,
                     "Device slot this worker is pinned to, unless the scheduler bound one "
                     "(CUDA_VISIBLE_DEVICES etc. already set)")
          ->envname("KBISECT_GPU")
          ->capture_default_str()
          ->check(WholeNumberIn(0, 1023));
  app.add_option("--name", f->name, "Stable worker name (default: HOST/slotGPU)")
      ->envname("KBISECT_WORKER_NAME");
  app.add_option("--tls-ca", f->tls.ca_file, "PEM CA that signs the coordinator's certificate")
      ->envname("KBISECT_TLS_CA");
  AddTlsCertificateFlags(&app, "PEM client certificate (mutual TLS)",
                         "PEM key of the client certificate", &f->daemon);
  AddTokenFileFlag(&app,
                   "Not for workers on their own: a token authorizes client commands only. Workers "
                   "authenticate with --tls-cert/--tls-key (OU=kbisect-worker); with them a token "
                   "is sent too but grants nothing more",
                   &f->daemon);
  app.add_option("--hardware-class-keys", f->class_keys,
                 "Comma-separated identity keys that define the hardware class (gpu_model, "
                 "gpu_count, driver, toolkit, vbios, cpu_model, kernel, host)")
      ->envname("KBISECT_HARDWARE_CLASS_KEYS");
  app.add_option("--lock-clocks", f->lock_clocks,
                 "Lock the GPU's clocks while the worker serves: base (its default application "
                 "clock), max, or SM[,MEM] in MHz; verified to read back within 10 MHz, undone "
                 "when the worker stops (or, after a kill, when it next starts); refused on MIG")
      ->envname("KBISECT_LOCK_CLOCKS");
  app.add_option("--until-job", f->until_job,
                 "Serve until this job has ended, then drain as on SIGTERM and exit 0 (one "
                 "Indexed Job's pods per bisect, `kbisect k8s-job`); exit 2 when the coordinator "
                 "does not know the job")
      ->envname("KBISECT_UNTIL_JOB");
  app.add_option("--idle-poll", f->idle_poll_seconds, "Seconds an idle worker's long poll lasts")
      ->capture_default_str()
      ->check(NumberIn(0.1, 60, "seconds"));
  AddLogFormatFlag(&app, "text or json (JSON lines, for log pipelines)", &f->daemon);
  if (std::optional<int> exit_code = ParseDaemonCommandLine(&app, argc, argv)) return exit_code;
  f->gpu_given = gpu_option->count() > 0;
  return std::nullopt;
}

// Whether the worker talks to the coordinator over TLS.
bool OverTls(const WorkerFlags& f) {
  return !f.tls.ca_file.empty() || !f.daemon.tls_cert_file.empty();
}

// The credentials the worker dials the coordinator with: TLS (mutual with --tls-cert and
// --tls-key) and the --token-file's token. Errors say what is wrong with the flags or files.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> LoadCredentials(const WorkerFlags& f) {
  ClientCredentialOptions tls = f.tls;
  tls.cert_file = f.daemon.tls_cert_file;
  tls.key_file = f.daemon.tls_key_file;
  if (!f.daemon.token_file.empty() && tls.cert_file.empty()) {
    return absl::InvalidArgumentError(
        "--token-file cannot authenticate a worker: the coordinator only lets certificates "
        "with OU=kbisect-worker call worker RPCs. Give the worker --tls-cert and --tls-key (see "
        "docs/operations.md, Certificates).");
  }
  absl::StatusOr<std::string> token = LoadToken(f.daemon);
  if (!token.ok()) return token.status();
  tls.token = *std::move(token);
  return MakeChannelCredentials(tls);
}

// The slot's options: the flags', the device `binding`'s and the hardware class `keys`; named
// after `host` unless --name.
WorkerSlotOptions SlotOptions(const WorkerFlags& f, std::vector<std::string> keys,
                              const DeviceBinding& binding, const std::string& host) {
  WorkerSlotOptions options;
  options.hardware_class_keys = std::move(keys);
  options.cache_dir = f.cache_dir;
  options.build_cache_size = f.build_cache_size;
  options.compiler_cache = !f.no_compiler_cache;
  options.compiler_cache_remote = f.compiler_cache_remote;
  options.slot = binding.slot;
  options.visible_devices = binding.visible_devices;
  options.probe_device = binding.probe_device;
  options.placement = binding.placement;
  options.name = f.name.empty() ? DefaultBoundWorkerName(host, binding) : f.name;
  options.idle_poll = absl::Seconds(f.idle_poll_seconds);
  return options;
}

// This process's builds ahead (--build-ahead) and the handle on the host's build cache they build
// into; both null when there are none (--build-ahead 0, or no build cache).
struct BuildsAhead {
  std::unique_ptr<BuildCache> cache;
  std::unique_ptr<BuildAhead> builds;
};

// Starts the builds ahead the flags ask for, running their builds through `runner`.
BuildsAhead StartBuildsAhead(const WorkerFlags& f, CommandRunner* runner) {
  BuildsAhead ahead;
  if (f.build_ahead > 0 && f.build_cache_size > 0) {
    BuildCacheOptions cache_options;
    cache_options.max_entries = f.build_cache_size;
    cache_options.compiler_cache = !f.no_compiler_cache;
    cache_options.compiler_cache_remote = f.compiler_cache_remote;
    ahead.cache = std::make_unique<BuildCache>(f.cache_dir, cache_options, runner);
    ahead.builds = std::make_unique<BuildAhead>(ahead.cache.get(), f.build_ahead);
  }
  return ahead;
}

// A channel to the coordinator at `address` that reconnects within a second of its return.
std::shared_ptr<grpc::Channel> CoordinatorChannel(
    const std::string& address, const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
  // gRPC waits 1 s, then up to 120 s, between connection attempts by default: after a
  // coordinator restart the worker would stay away for seconds. 100 ms growing to 5 s (the
  // agent's own backoff bound) reconnects within a second of the coordinator's return.
  grpc::ChannelArguments channel_arguments;
  channel_arguments.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  channel_arguments.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
  return grpc::CreateCustomChannel(address, credentials, channel_arguments);
}

// Says what the slot serves: its devices, its hardware class, the coordinator, the caches and
// the builds ahead (`builds_ahead`, null when none), then where its builds install.
void LogStart(const Logger& log, const WorkerSlot& slot, const DeviceBinding& binding,
              const WorkerFlags& f, const BuildAhead* builds_ahead, CommandRunner* runner) {
  log.Info(absl::StrCat(slot.name(), " on devices ", binding.visible_devices,
                        binding.placement.device_variable().empty()
                            ? std::string(" (--gpu)")
                            : absl::StrCat(" (", binding.placement.device_variable(), ")"),
                        " (", slot.identity().hardware_class_label(), ", class ",
                        slot.identity().hardware_class(), ") serving coordinator ", f.coordinator,
                        OverTls(f) ? " over TLS" : "", "; cache ", f.cache_dir,
                        f.build_cache_size > 0
                            ? absl::StrCat(" (", Count(f.build_cache_size, "build"), " kept)")
                            : std::string(" (no build cache)"),
                        builds_ahead != nullptr
                            ? absl::StrCat("; builds ahead: ", builds_ahead->max_builds())
                            : std::string("; no builds ahead")),
           {{"worker", slot.name()},
            {"hardware_class", slot.identity().hardware_class()},
            {"coordinator", f.coordinator},
            {"tls", OverTls(f) ? "true" : "false"}});
  if (std::optional<std::string> warning = CompilerCacheRemoteWarning(f.compiler_cache_remote)) {
    log.Warning(*warning, {{"worker", slot.name()}});
  }
  // Where builds install by default (worker/build_layer.h): over this process's Python.
  BuildLayers layers(runner, BuildLayers::ProcessEnvironment());
  const std::optional<PythonBase> base = layers.Base();
  log.Info(base.has_value()
               ? absl::StrCat("builds install into layers of their own over ", base->description)
               : std::string("builds install into prefixes of their own (no Python found)"),
           {{"worker", slot.name()}});
}

// The end of serving that --until-job's watch found, handed from its thread to Serve's.
struct UntilJobEnd {
  kbisect::Notification found;
  UntilJobStep step;  // Written before `found` is notified.
};

// Starts the watch of --until-job `job_id` over `channel` (null without --until-job); `end`
// receives what ends the serving.
std::unique_ptr<UntilJobWatch> WatchUntilJob(const std::string& job_id,
                                             std::shared_ptr<grpc::Channel> channel,
                                             UntilJobEnd* end) {
  if (job_id.empty()) return nullptr;
  return std::make_unique<UntilJobWatch>(UntilJobWatch::Options{.job_id = job_id},
                                         std::move(channel), [end](const UntilJobStep& step) {
                                           end->step = step;
                                           end->found.Notify();
                                         });
}

// Runs the slot's agent until it stops: the first SIGTERM or SIGINT drains it, a second stops it
// at once; with --until-job (`until_job`), the job's end drains it, and a job the coordinator
// cannot follow stops it. Returns the process's exit code: the --until-job failure's, 1 when the
// agent stopped on an error, else 0.
int Serve(WorkerSlot* slot, const Logger& log, const std::string& until_job,
          std::shared_ptr<grpc::Channel> channel) {
  kbisect::Notification done;
  std::thread agent_thread([&] {
    slot->agent()->Run();
    done.Notify();
  });
  UntilJobEnd until_job_end;
  std::unique_ptr<UntilJobWatch> watch =
      WatchUntilJob(until_job, std::move(channel), &until_job_end);
  bool until_job_seen = false;
  int signals = 0;
  while (!done.HasBeenNotified()) {
    if (!until_job_seen && until_job_end.found.HasBeenNotified()) {
      until_job_seen = true;
      if (until_job_end.step.action == UntilJobStep::Action::kDrain) {
        log.Info(until_job_end.step.message, {{"worker", slot->name()}, {"job", until_job}});
        slot->agent()->Drain();
      } else {
        log.Error(until_job_end.step.message, {{"worker", slot->name()}, {"job", until_job}});
        slot->agent()->Stop();
      }
    }
    const int sig = WaitForTerminationSignal(absl::Milliseconds(200));
    if (sig == 0) continue;
    if (++signals == 1) {
      log.Info(absl::StrCat(sig == SIGTERM ? "SIGTERM" : "SIGINT",
                            ": draining (finishing the current probe; signal again to stop now)"));
      slot->agent()->Drain();
    } else {
      log.Info("stopping now; the current probe is handed back");
      slot->agent()->Stop();
    }
  }
  agent_thread.join();
  if (until_job_seen && until_job_end.step.action == UntilJobStep::Action::kFail) {
    return until_job_end.step.exit_code;
  }
  if (const absl::Status reason = slot->agent()->stop_reason(); !reason.ok()) {
    log.Error(absl::StrCat(slot->name(), ": ", reason.message()), {{"worker", slot->name()}});
    return 1;
  }
  log.Info(absl::StrCat(slot->name(), " exiting after ", slot->agent()->tasks_reported(),
                        " reported probe(s)"),
           {{"worker", slot->name()},
            {"probes_reported", absl::StrCat(slot->agent()->tasks_reported())}});
  return 0;
}

// Undoes a lock a worker of this slot left when it died, then, with --lock-clocks, locks the
// slot's GPU and records the clocks in `identity` (a hardware-class key). Returns -1 to go on,
// else the exit code after saying what was wrong.
int LockClocks(const WorkerFlags& f, const WorkerSlotOptions& options, CommandRunner* runner,
               const Logger& log, v1::RunnerIdentity* identity, std::unique_ptr<ClockLock>* lock) {
  std::optional<ClockLockSpec> spec;
  if (!f.lock_clocks.empty()) {
    absl::StatusOr<ClockLockSpec> parsed = ParseClockLockSpec(f.lock_clocks);
    if (!parsed.ok()) {
      log.Error(std::string(parsed.status().message()));
      return 2;
    }
    spec = *parsed;
  }
  const std::string device = options.ProbedDevice();
  std::string warning;
  absl::StatusOr<std::unique_ptr<ClockLock>> locked =
      LockSlotClocks(runner, f.cache_dir, options.slot, device, spec, identity, &warning);
  if (!warning.empty()) log.Warning(warning);
  if (!locked.ok()) {
    log.Error(std::string(locked.status().message()));
    return 1;
  }
  *lock = *std::move(locked);
  if (*lock != nullptr) {
    log.Info(absl::StrCat("clocks locked: SM ", (*lock)->clocks().sm_mhz, " MHz",
                          (*lock)->clocks().memory_mhz > 0
                              ? absl::StrCat(", memory ", (*lock)->clocks().memory_mhz, " MHz")
                              : ""));
  }
  return -1;
}

int Main(int argc, char** argv) {
  BlockTerminationSignals();
  WorkerFlags flags;
  if (std::optional<int> exit_code = ParseFlags(argc, argv, &flags)) return *exit_code;
  absl::StatusOr<LogFormat> format = LoadLogFormat(flags.daemon);
  if (!format.ok()) {
    std::cerr << "kbisect-worker: " << format.status().message() << "\n";
    return 2;
  }
  const Logger log("kbisect-worker", *format, &std::cerr);
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials = LoadCredentials(flags);
  if (!credentials.ok()) {
    log.Error(std::string(credentials.status().message()));
    return 2;
  }
  absl::StatusOr<std::vector<std::string>> keys = ParseHardwareClassKeys(flags.class_keys);
  if (!keys.ok()) {
    log.Error(absl::StrCat("--hardware-class-keys: ", keys.status().message()));
    return 2;
  }
  absl::StatusOr<DeviceBinding> binding = ResolveDeviceBinding(
      EnvironmentMap(), flags.gpu_given ? std::optional<int>(flags.gpu) : std::nullopt);
  if (!binding.ok()) {
    log.Error(absl::StrCat("device binding: ", binding.status().message()));
    return 2;
  }
  if (!binding->note.empty()) log.Info(binding->note);

  std::unique_ptr<CommandRunner> runner = NewSubprocessRunner();
  v1::RunnerIdentity host_identity = ProbeRunnerIdentity(runner.get(), "");
  WorkerSlotOptions options = SlotOptions(flags, *keys, *binding, host_identity.host());
  std::unique_ptr<ClockLock> clock_lock;  // Undone when Main returns.
  if (int code = LockClocks(flags, options, runner.get(), log, &host_identity, &clock_lock);
      code >= 0) {
    return code;
  }
  BuildsAhead ahead = StartBuildsAhead(flags, runner.get());
  options.build_ahead = ahead.builds.get();
  std::shared_ptr<grpc::Channel> channel = CoordinatorChannel(flags.coordinator, *credentials);
  WorkerSlot slot(options, runner.get(), host_identity, channel);
  LogStart(log, slot, *binding, flags, ahead.builds.get(), runner.get());
  if (!flags.until_job.empty()) {
    log.Info(absl::StrCat(slot.name(), " serves until job ", flags.until_job, " has ended"),
             {{"worker", slot.name()}, {"job", flags.until_job}});
  }
  return Serve(&slot, log, flags.until_job, std::move(channel));
}

}  // namespace
}  // namespace kbisect

int main(int argc, char** argv) { return kbisect::Main(argc, argv); }
