// Copyright 2026 The kbisect Authors.
//
// The measurement manifest (v1::MeasurementManifest): what a benchmark result depends on besides
// the kernel's code. A result is only comparable with another taken under the same manifest; when
// a nightly series steps and the manifest changed across the step, the difference names the file,
// flag or clock responsible (seed 002's "benchmark method change" and "hardware issue").
//
// Collected by the worker before a task's first benchmark run (worker/task_runner.cc) and by
// `kbisect nightly` for tonight's run:
//
//   ManifestInputs in;
//   in.dir = checkout;  in.bench_argv = {"./bench.sh"};  in.env = env;  in.runner = runner;
//   ASSIGN_OR_RETURN(v1::MeasurementManifest m, CollectManifest(ManifestSpec::Default(), in));
//   for (const ManifestChange& c : DiffManifests(last_good, first_bad)) std::cout << c.Describe();
#ifndef KBISECT_COMMON_MANIFEST_MANIFEST_H_
#define KBISECT_COMMON_MANIFEST_MANIFEST_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/exec/exec.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// What a manifest records.
struct ManifestSpec {
  // Files of the checkout that make up the harness (globs: `**` any characters, `*` any but '/',
  // `?` one character but '/'). The bench command's own script files are always added. Only
  // files the commit holds count when ManifestInputs::tracked is set.
  std::vector<std::string> harness_globs;
  // Environment variables to record: exact names, or prefixes ending in '*' (HELION_AUTOTUNE_*).
  std::vector<std::string> env_names;
  // Tool versions: name -> shell command printing the version on its first line.
  std::map<std::string, std::string> tool_commands;

  // benchmarks/**, bench/** and .github/workflows/**, no environment variables, no tools.
  static ManifestSpec Default();
};

// A tracked package's entry in MeasurementManifest.tool_versions: "package:<name>" ->
// "<version>" or "<version> (commit <sha>)". DiffManifests reports it as kPackage: a dependency
// the project installs as a built artifact (a torch or triton nightly), whose move is a
// dependency change rather than a change of method.
inline constexpr char kTrackedPackagePrefix[] = "package:";

// The variables a task's environment may carry to shape its manifest (the worker reads them from
// the job's --env, so `kbisect run/submit --env KBISECT_MANIFEST_ENV=HELION_*` works everywhere):
inline constexpr char kManifestHarnessEnv[] = "KBISECT_MANIFEST_HARNESS";  // "glob,glob"
inline constexpr char kManifestEnvEnv[] = "KBISECT_MANIFEST_ENV";          // "NAME,PREFIX_*"
inline constexpr char kManifestToolsEnv[] = "KBISECT_MANIFEST_TOOLS";      // "name=cmd;name=cmd"

// Returns ManifestSpec::Default() changed by the variables above when `env` has them: a
// non-empty harness list replaces the default globs; names and tools are added.
ManifestSpec ManifestSpecFromEnv(const std::map<std::string, std::string>& env);

// Returns true if `path` ('/'-separated, relative) matches `glob` (see ManifestSpec).
bool GlobMatch(std::string_view glob, std::string_view path);

// Whether some path below the directory `dir` (relative, without a trailing '/') could match
// `glob`: false only when the glob's fixed leading directories (those before its first '*' or
// '?') lead elsewhere, e.g. "benchmarks/**" below "src". CollectManifest does not descend into
// directories no glob can match below.
bool GlobCanMatchBelow(std::string_view glob, std::string_view dir);

// Where and how the benchmark runs.
struct ManifestInputs {
  // The checkout the benchmark runs in. Required.
  std::string dir;
  // The benchmark's argv; arguments naming a file inside `dir` are hashed as harness files.
  std::vector<std::string> bench_argv;
  // Whether a path of `dir` ('/'-separated, relative) is one the commit holds. When set, only
  // such paths are harness files: a benchmark executable, an extension module or anything else
  // a build wrote is an output of the kernel's code, so its hash says nothing about the method
  // (a compiled benchmark changes whenever the kernel it links does). Unset: every file counts.
  std::function<bool(const std::string&)> tracked;
  // The variables set for the benchmark on top of the process environment (they win).
  std::map<std::string, std::string> env;
  // Runs the tool commands; null records no tool versions.
  CommandRunner* runner = nullptr;
  // The machine (GPU model, uuid, driver, clocks, power limit); null leaves them empty.
  const v1::RunnerIdentity* identity = nullptr;
  // The GPU's state just before the run, when it could be read.
  std::optional<v1::GpuState> gpu_state;
};

// A ManifestInputs::tracked for the checkout `dir`: the paths commit `rev` (a sha, or "HEAD") of
// the repository there holds (GitRepo::TreePaths::Holds), the tree listed on the first call.
// Null when there is no repository at `dir`; a tree that cannot be read (an unknown commit)
// counts every file, as no predicate does.
std::function<bool(const std::string&)> TrackedInCommit(const std::string& dir,
                                                        const std::string& rev);

// Collects the manifest. Errors: NotFound when `dir` is not a directory. A tool command that
// fails is recorded as "unavailable (...)", not an error. At most 10,000 harness files are hashed
// (the rest are left out and counted in a "..." entry).
absl::StatusOr<v1::MeasurementManifest> CollectManifest(const ManifestSpec& spec,
                                                        const ManifestInputs& inputs);

// One difference between two manifests.
struct ManifestChange {
  enum class Kind {
    kHarnessFile,   // A harness file was added, removed or changed: a method change.
    kBenchCommand,  // The command line changed: a method change.
    kEnv,           // A recorded environment variable changed: a method change.
    kTool,          // A tool version changed (Python package, compiler): a method change.
    kPackage,       // A tracked package (`kbisect nightly --track-package`) moved: a dependency.
    kGpu,           // Another GPU model or card (uuid): a hardware issue.
    kDriver,        // Another driver / CUDA / ROCm: a hardware issue.
    kClock,         // Max clock, power limit, throttling or a >10% clock drop: a hardware issue.
  };
  Kind kind = Kind::kHarnessFile;
  std::string name;    // The path, variable, tool or GPU field.
  std::string before;  // "" when absent.
  std::string after;   // "" when absent.

  // True for kGpu, kDriver and kClock.
  bool IsHardware() const;
  // "benchmarks/run.py changed (1a2b3c4 -> 5d6e7f8)", "HELION_AUTOTUNE_EFFORT: none -> quick",
  // "GPU clock: throttled (1410 MHz, was 1980 MHz)".
  std::string Describe() const;
};

// Returns "harness_file", "bench_command", "env", "tool", "package", "gpu", "driver" or "clock".
const char* ManifestChangeKindName(ManifestChange::Kind kind);

// Returns what changed from `before` to `after`, method changes first, each group in name order.
// Fields empty on either side (an older manifest that did not record them) are not compared.
std::vector<ManifestChange> DiffManifests(const v1::MeasurementManifest& before,
                                          const v1::MeasurementManifest& after);

}  // namespace kbisect

#endif  // KBISECT_COMMON_MANIFEST_MANIFEST_H_
