// Copyright 2026 The kbisect Authors.
//
// The environment a build installs into. `pip install -e .`, `pip install .`, `make install` and
// `cmake --install` write into an environment, not only into their checkout; builds of several
// commits at once (and the user's own environment) must not see each other's installs. So each
// built checkout (a build-cache entry, or a slot's checkout when the cache is off) gets a layer of
// its own, `<dir>`, over the worker's environment:
//   - with Python (BUILD_ISOLATION_PYTHON, or automatic when the worker has a Python): a virtual
//     environment made with the worker's Python (the active virtualenv's or conda environment's,
//     else the python3 on PATH) that sees every package the worker's environment has (a .pth
//     file adds its site-packages, and the system's where that environment sees them), into
//     which pip, `python -m pip`, `setup.py develop` and uv install; its bin/ holds pip shims;
//   - always (but with BUILD_ISOLATION_NONE): `<dir>` is an install prefix, KBISECT_PREFIX, on
//     PATH, LD_LIBRARY_PATH, PKG_CONFIG_PATH and CMAKE_PREFIX_PATH.
// The build and every benchmark run of that checkout run with the layer's variables, so a reused
// build reuses its layer and a confirmation's A/B alternation measures A and B.
//
// Nothing needs a package index: the layer's pip builds without build isolation
// (PIP_NO_BUILD_ISOLATION=0, unless the environment sets it), with what the worker's environment
// has installed (setuptools, wheel, torch...), and does not check for a newer pip.
//
// A build can still escape (an absolute path to another environment's pip, a hard-coded
// prefix). The watched directories (the worker's environment's site-packages and the user's
// site-packages) are snapshotted around each build; EnvironmentSnapshot says what changed.
#ifndef KBISECT_WORKER_BUILD_LAYER_H_
#define KBISECT_WORKER_BUILD_LAYER_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/exec/exec.h"
#include "common/sync/mutex.h"
#include "kbisect/v1/kbisect.pb.h"
#include "worker/build_step.h"

namespace kbisect {

// The Python a worker's builds layer over, as it describes itself.
struct PythonBase {
  // The interpreter the layers are made with (e.g. /home/u/venv/bin/python).
  std::string python;
  // What it is: "virtualenv /home/u/venv", "conda environment /opt/conda/envs/x" or "python3
  // /usr/bin/python3 (no virtualenv)", for the progress line and the logs.
  std::string description;
  // Its site-packages directories (site.getsitepackages()): what a layer adds to its path, in
  // that order, and what the escape check watches.
  std::vector<std::string> site_packages;
  // True when it sees the system's site-packages (a virtualenv made with
  // --system-site-packages, or no virtualenv at all): its layers do too.
  bool system_site_packages = false;
  // The user's site-packages (~/.local/lib/pythonX.Y/site-packages), watched too.
  std::string user_site;
};

// The command line that makes `python` print what ParsePythonBase reads.
std::vector<std::string> PythonBaseQuery(const std::string& python);

// Parses the JSON that PythonBaseQuery's command printed for the Python at `python`, described
// as `kind` ("virtualenv", "conda environment" or "python3").
absl::StatusOr<PythonBase> ParsePythonBase(const std::string& python, const std::string& kind,
                                           const std::string& json);

// Which Python the worker's environment `env` names: VIRTUAL_ENV's, else CONDA_PREFIX's, else the
// first python3 on PATH; returns (interpreter, kind), or nullopt when there is none.
std::optional<std::pair<std::string, std::string>> FindBasePython(
    const std::map<std::string, std::string>& env);

// The variables a layer at `dir` sets for its build and benchmark runs, given the environment
// `env` they would otherwise see (the worker's, with the task's on top): KBISECT_PREFIX, PATH,
// LD_LIBRARY_PATH, PKG_CONFIG_PATH, CMAKE_PREFIX_PATH and, for a Python layer, VIRTUAL_ENV and
// pip's settings. Pure.
std::map<std::string, std::string> LayerVariables(const std::string& dir, bool python,
                                                  const std::map<std::string, std::string>& env);

// A layer made (or found) at a directory: the variables its commands run with.
struct BuildLayer {
  std::string dir;
  // The isolation it has: PYTHON, PREFIX or NONE (never UNSPECIFIED).
  v1::BuildIsolation isolation = v1::BUILD_ISOLATION_NONE;
  // Set on top of the command's environment (empty for NONE).
  std::map<std::string, std::string> variables;
};

// What a set of directories holds, one level deep: each entry's name, type, size and
// modification time, and the contents of .pth files. Cheap enough to take around every build.
class EnvironmentSnapshot {
 public:
  // Snapshots what `dirs` hold; a directory that does not exist holds nothing.
  static EnvironmentSnapshot Take(const std::vector<std::string>& dirs);

  // What differs in `after` from this snapshot, one line each ("added
  // /venv/lib/python3.11/site-packages/__editable__.kern-0.1.pth", "changed ...", "removed
  // ..."), at most `limit` lines (then "... and N more"). Empty when nothing changed.
  std::vector<std::string> ChangesIn(const EnvironmentSnapshot& after, int limit = 8) const;

 private:
  // Path -> a fingerprint of the entry (type, size, mtime; contents of a .pth file).
  std::map<std::string, std::string> entries_;
};

// The message of a build at `sha` that changed the worker's environment (`changes`, from
// EnvironmentSnapshot::ChangesIn) although it had a layer of its own: what changed, in which
// environment, and how to install into the layer instead.
std::string EscapedBuildMessage(const std::string& sha, const std::optional<PythonBase>& base,
                                const std::vector<std::string>& changes);

// The host's layers: finds the worker's Python once (lazily, through `runner`), and makes and
// opens layers. Thread-safe.
class BuildLayers {
 public:
  // `env` is the worker's environment (its own process's by default, see ProcessEnvironment).
  // `runner` must outlive this object.
  BuildLayers(CommandRunner* runner, std::map<std::string, std::string> env);

  BuildLayers(const BuildLayers&) = delete;
  BuildLayers& operator=(const BuildLayers&) = delete;

  // Makes a fresh layer at `dir` (removing whatever was there; a Python layer that holds exactly
  // what it held when it was made, over the same Python, is kept as it is) with `isolation`, for
  // commands
  // whose own environment (on top of the worker's) is `command_env`. UNSPECIFIED means PYTHON
  // when the worker has a Python, else PREFIX. Fails (FailedPrecondition) when PYTHON is asked
  // for and there is no Python, or when the virtual environment cannot be made.
  absl::StatusOr<BuildLayer> Create(const std::string& dir, v1::BuildIsolation isolation,
                                    const std::map<std::string, std::string>& command_env);

  // Makes the layer at `to` a copy of the Python layer at `from` when that one holds what it held
  // when it was made (its builds installed nothing): the paths of `from` in its files become
  // `to`, so Create then keeps it instead of making a virtual environment again (0.1-0.35 s), as
  // for a new build-cache entry copied from another one. Returns false, leaving no `to`, when
  // `from` is no such layer or the copy fails.
  bool CopyPristine(const std::string& from, const std::string& to);

  // Moves the layer at `dir`, unpacked from another host's entry (build_store.h), to where it
  // now is: `from_prefix` (the publisher's entry directory, ending in '/') becomes `to_prefix`
  // (this entry's) in its text files, as CopyPristine does for a copy; a layer as it was made
  // stays so. True when there is no layer; false when a file cannot be rewritten.
  bool Relocate(const std::string& dir, const std::string& from_prefix,
                const std::string& to_prefix);

  // The layer that Create made at `dir` with `isolation`, for a build that is reused: its
  // variables, without touching the directory.
  BuildLayer Open(const std::string& dir, v1::BuildIsolation isolation,
                  const std::map<std::string, std::string>& command_env);

  // Runs `build` in `dir`, the checkout of commit `sha`, in a fresh layer at `layer_dir` made with
  // `isolation` (RunBuild, with the layer's variables on top of the build's environment). The
  // step fails with INFRA_ERROR when the layer cannot be made, and with BUILD_FAILED, naming
  // what changed (EscapedBuildMessage), when the build changed what WatchedDirs holds. On
  // success `*layer_env` holds the layer's variables, for the benchmark runs in `dir`.
  BuildStep BuildInLayer(const BuildCommand& build, const std::string& dir,
                         const std::string& layer_dir, v1::BuildIsolation isolation,
                         const std::string& sha, const Cancellation* cancel,
                         std::map<std::string, std::string>* layer_env);

  // The directories an escaping build would change: the worker's Python's site-packages and the
  // user's site-packages. Empty without a Python.
  std::vector<std::string> WatchedDirs();

  // The worker's Python, if it has one (found on first use).
  std::optional<PythonBase> Base();

  // The environment variables of this process.
  static std::map<std::string, std::string> ProcessEnvironment();

 private:
  v1::BuildIsolation Resolve(v1::BuildIsolation isolation);

  CommandRunner* const runner_;
  const std::map<std::string, std::string> env_;
  kbisect::Mutex mu_;
  bool probed_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<PythonBase> base_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kbisect

#endif  // KBISECT_WORKER_BUILD_LAYER_H_
