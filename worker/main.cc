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
//
// With --slurm-per-probe it is instead a launcher on a login node that runs each leased task as
// a Slurm job of its own (worker/slurm_launcher.h); the job runs this binary with the hidden
// --slurm-probe-job DIR on its node (worker/probe_job.h).
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
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
#include "worker/build_store.h"
#include "worker/clock_lock.h"
#include "worker/compiler_cache_flags.h"
#include "worker/device_binding.h"
#include "worker/probe_job.h"
#include "worker/slurm_launcher.h"
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
Per-probe Slurm mode (--slurm-per-probe): on a login node, the process leases tasks for
--slurm-max-jobs slots and runs each as `sbatch --wait --gres=gpu:1` job of its own, after one
identity job that tells it the probes' hardware. SIGTERM/SIGINT scancel its running jobs, hand
their probes back and exit 0.
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
  std::string build_store;                    // --build-store; empty: none.
  int build_ahead = DefaultBuildAhead();
  std::string class_keys;
  std::string lock_clocks;  // --lock-clocks base|max|SM[,MEM]; empty: not locked.
  std::string until_job;    // --until-job JOB; empty: serve until a signal.
  // --slurm-per-probe: a launcher that runs each task as a Slurm job (worker/slurm_launcher.h).
  bool slurm_per_probe = false;
  int slurm_max_jobs = 4;
  std::string slurm_gres = "gpu:1";
  std::vector<std::string> slurm_options;  // --slurm-option, each passed to sbatch as it is.
  bool slurm_pin_node = false;
  std::string slurm_jobs_dir;        // Empty: CACHE_DIR/slurm-jobs.
  std::string slurm_node_cache_dir;  // Empty: node-local scratch (SlurmProbeOptions).
  // Hidden: the probe job's side on the node (worker/probe_job.h), and its launcher slot.
  std::string slurm_probe_job;
  int slurm_probe_slot = 0;
};

// Registers the per-probe Slurm mode's flags on `app`, into `f`.
void AddSlurmFlags(CLI::App* app, WorkerFlags* f) {
  app->add_flag("--slurm-per-probe", f->slurm_per_probe,
                "Run on a login node as a launcher: lease tasks like --slurm-max-jobs workers, "
                "but run each one as a Slurm job of its own (sbatch --wait --gres=gpu:1) on a "
                "node with a GPU; see docs/operations.md, Slurm");
  app->add_option("--slurm-max-jobs", f->slurm_max_jobs,
                  "Slurm jobs a --slurm-per-probe launcher runs at once (one lease each)")
      ->capture_default_str()
      ->check(WholeNumberIn(1, 256, "jobs"));
  app->add_option("--slurm-gres", f->slurm_gres,
                  "What each probe job asks for with sbatch --gres; empty asks for none")
      ->capture_default_str();
  app->add_option("--slurm-option", f->slurm_options,
                  "An sbatch option for every probe job, as it is (--slurm-option=--partition=gpu "
                  "--slurm-option=--time=30); repeat it")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app->add_flag("--slurm-pin-node", f->slurm_pin_node,
                "Send every probe job to the node the first one ran on (--nodelist), whose "
                "node-local build cache holds the builds");
  app->add_option("--slurm-jobs-dir", f->slurm_jobs_dir,
                  "Where each probe job gets its directory (task, result, exit code, output): "
                  "a path every node sees (default: CACHE_DIR/slurm-jobs)");
  app->add_option("--slurm-node-cache-dir", f->slurm_node_cache_dir,
                  "The probe jobs' cache directory on the node (default: "
                  "${SLURM_TMPDIR:-${TMPDIR:-/tmp}}/kbisect-$USER there)");
  app->add_option("--slurm-probe-job", f->slurm_probe_job)->group("");
  app->add_option("--slurm-probe-slot", f->slurm_probe_slot)->group("");
}

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
  AddBuildStoreFlag(&app, &f->build_store);
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
  AddSlurmFlags(&app, f);
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
  options.build_store = f.build_store;
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

// Starts the builds ahead the flags ask for, running their builds through `runner`; what they
// publish to the build store is keyed by `hardware_class`, the slot's.
BuildsAhead StartBuildsAhead(const WorkerFlags& f, CommandRunner* runner,
                             const std::string& hardware_class) {
  BuildsAhead ahead;
  if (f.build_ahead > 0 && f.build_cache_size > 0) {
    BuildCacheOptions cache_options;
    cache_options.max_entries = f.build_cache_size;
    cache_options.compiler_cache = !f.no_compiler_cache;
    cache_options.compiler_cache_remote = f.compiler_cache_remote;
    cache_options.build_store = f.build_store;
    cache_options.hardware_class = hardware_class;
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
  if (std::optional<std::string> warning = BuildStoreWarning(f.build_store)) {
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

// The probe job's side on the node (`--slurm-probe-job DIR`, worker/probe_job.h): one slot bound
// to the device Slurm gave the job, named by the launcher's slot, runs DIR's task. Returns the
// exit code.
int ProbeJobMain(const WorkerFlags& flags, const std::vector<std::string>& keys,
                 const Logger& log) {
  absl::StatusOr<DeviceBinding> binding = ResolveDeviceBinding(EnvironmentMap(), std::nullopt);
  if (!binding.ok()) {
    log.Error(absl::StrCat("device binding: ", binding.status().message()));
    return 2;
  }
  std::unique_ptr<CommandRunner> runner = NewSubprocessRunner();
  const v1::RunnerIdentity host_identity = ProbeRunnerIdentity(runner.get(), "");
  WorkerSlotOptions options = SlotOptions(flags, keys, *binding, host_identity.host());
  // The launcher's slot names the checkouts: its jobs may share a node, one job each at a time.
  options.slot = flags.slurm_probe_slot;
  WorkerSlot slot(options, runner.get(), host_identity, nullptr);
  return RunProbeJob(flags.slurm_probe_job, slot.identity(), slot.task_runner(), log);
}

// The launcher of `--slurm-per-probe` (worker/slurm_launcher.h), dialing the coordinator with
// `credentials`. Returns the exit code.
int LauncherMain(const WorkerFlags& flags,
                 const std::shared_ptr<grpc::ChannelCredentials>& credentials, const Logger& log) {
  if (!flags.lock_clocks.empty()) {
    log.Error(
        "--lock-clocks cannot be used with --slurm-per-probe: the probes run on nodes "
        "Slurm chooses, one job at a time");
    return 2;
  }
  SlurmLauncherOptions options;
  std::error_code error;
  options.probe.worker_binary = std::filesystem::read_symlink("/proc/self/exe", error).string();
  if (options.probe.worker_binary.empty()) {
    log.Error("--slurm-per-probe: cannot tell where this kbisect-worker is (/proc/self/exe)");
    return 1;
  }
  options.probe.jobs_dir =
      flags.slurm_jobs_dir.empty() ? flags.cache_dir + "/slurm-jobs" : flags.slurm_jobs_dir;
  options.probe.node_cache_dir = flags.slurm_node_cache_dir;
  options.probe.gres = flags.slurm_gres;
  options.probe.sbatch_options = flags.slurm_options;
  std::vector<std::string>& probe_flags = options.probe.probe_flags;
  probe_flags = {"--build-cache-size", absl::StrCat(flags.build_cache_size)};
  if (flags.no_compiler_cache) probe_flags.push_back("--no-compiler-cache");
  if (flags.compiler_cache_remote.read_only) probe_flags.push_back("--compiler-cache-read-only");
  if (!flags.build_store.empty()) {
    probe_flags.insert(probe_flags.end(), {"--build-store", flags.build_store});
  }
  if (!flags.class_keys.empty()) {
    probe_flags.insert(probe_flags.end(), {"--hardware-class-keys", flags.class_keys});
  }
  // The remote's URL holds its password: it reaches the jobs through the environment sbatch
  // exports (--export=ALL, its default), never through a command line or the job's script.
  if (flags.compiler_cache_remote.enabled()) {
    setenv("KBISECT_COMPILER_CACHE_REMOTE", flags.compiler_cache_remote.url.c_str(), 1);
  }
  options.max_jobs = flags.slurm_max_jobs;
  options.pin_node = flags.slurm_pin_node;
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  options.name_prefix = flags.name.empty() ? std::string(host) : flags.name;
  options.idle_poll = absl::Seconds(flags.idle_poll_seconds);
  log.Info(absl::StrCat("--slurm-per-probe: serving coordinator ", flags.coordinator,
                        OverTls(flags) ? " over TLS" : "", " with up to ", options.max_jobs,
                        " Slurm job(s) at once"));
  std::unique_ptr<CommandRunner> runner = NewSubprocessRunner();
  return RunSlurmLauncher(options, CoordinatorChannel(flags.coordinator, credentials), runner.get(),
                          log);
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
  if (!flags.slurm_probe_job.empty()) return ProbeJobMain(flags, *keys, log);
  if (flags.slurm_per_probe) return LauncherMain(flags, *credentials, log);
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
  BuildsAhead ahead =
      StartBuildsAhead(flags, runner.get(),
                       SlotIdentity(host_identity, options.slot, options.hardware_class_keys,
                                    options.probe_device, options.visible_devices)
                           .hardware_class());
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
