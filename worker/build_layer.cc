// Copyright 2026 The kbisect Authors.
#include "worker/build_layer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

extern char** environ;

namespace kbisect {
namespace {

namespace fs = std::filesystem;

// What the worker's Python says of itself: its site-packages, the user's, and whether it sees
// the system's (a virtualenv's pyvenv.cfg include-system-site-packages; always outside one).
constexpr char kQueryScript[] = R"py(import json, os, site, sys
venv = sys.prefix != sys.base_prefix
system = not venv
if venv:
    try:
        for line in open(os.path.join(sys.prefix, "pyvenv.cfg")):
            key, _, value = line.partition("=")
            if key.strip() == "include-system-site-packages":
                system = value.strip().lower() == "true"
    except OSError:
        pass
print(json.dumps({"site": site.getsitepackages(), "user_site": site.getusersitepackages(),
                  "system": system, "version": "%d.%d" % sys.version_info[:2]}))
)py";

// The layer's .pth file: adds the worker's environment's site-packages (processing their own
// .pth files, as the environment itself would) after the layer's own.
constexpr char kBasePth[] = "_kbisect_base.pth";

// Marks a layer whose virtual environment is complete.
constexpr char kPythonMarker[] = ".kbisect-python-layer";

// What a Python layer held when it was made (LayerListing): a later build of the entry reuses
// the layer when it holds exactly that (its build installed nothing), instead of making it again.
constexpr char kPristineListing[] = ".kbisect-pristine";

// Every path under `dir` but kPristineListing, with its type, size and modification time, one
// per line in a stable order; symbolic links are listed, not followed.
std::string LayerListing(const fs::path& dir) {
  std::vector<std::string> lines;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path path = it->path();
    if (path.filename() == kPristineListing) continue;
    struct stat st;
    if (lstat(path.c_str(), &st) != 0) continue;
    lines.push_back(absl::StrCat(fs::relative(path, dir, ec).string(), " ", st.st_mode, " ",
                                 st.st_size, " ", st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec));
  }
  if (ec) return "";
  std::sort(lines.begin(), lines.end());
  return absl::StrJoin(lines, "\n");
}

// True when `dir` is a complete Python layer over the Python `description` names, unchanged
// since it was made.
bool PristinePythonLayer(const fs::path& dir, const std::string& description) {
  std::ifstream marker(dir / kPythonMarker);
  std::stringstream marked;
  marked << marker.rdbuf();
  if (!marker || marked.str() != description + "\n") return false;
  std::ifstream listing(dir / kPristineListing);
  std::stringstream listed;
  listed << listing.rdbuf();
  if (!listing) return false;
  const std::string now = LayerListing(dir);
  return !now.empty() && listed.str() == now;
}

std::string Prepend(const std::string& first, const std::map<std::string, std::string>& env,
                    const std::string& name) {
  auto it = env.find(name);
  if (it == env.end() || it->second.empty()) return first;
  return absl::StrCat(first, ":", it->second);
}

// Replaces `from` by `to` in the text files (up to 1 MiB, links excluded) under `dir`; false when
// one cannot be rewritten.
bool RewritePaths(const fs::path& dir, const std::string& from, const std::string& to) {
  constexpr uintmax_t kLargestText = 1 << 20;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec) || it->is_symlink(ec) || it->file_size(ec) > kLargestText) {
      continue;
    }
    std::ifstream in(it->path(), std::ios::binary);
    std::stringstream contents;
    contents << in.rdbuf();
    std::string text = contents.str();
    if (text.find(from) == std::string::npos) continue;
    text = absl::StrReplaceAll(text, {{from, to}});
    std::ofstream out(it->path(), std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) return false;
  }
  return !ec;
}

bool IsExecutable(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

absl::Status WriteText(const fs::path& path, const std::string& text, bool executable) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path.string()));
  if (executable) {
    std::error_code ec;
    fs::permissions(path,
                    fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                        fs::perms::others_read | fs::perms::others_exec,
                    ec);
    if (ec) return absl::InternalError(absl::StrCat("cannot chmod ", path.string()));
  }
  return absl::OkStatus();
}

// A Python string literal of `s` (JSON's escaping is a subset of Python's).
std::string PythonLiteral(const std::string& s) { return nlohmann::json(s).dump(); }

}  // namespace

std::vector<std::string> PythonBaseQuery(const std::string& python) {
  return {python, "-c", kQueryScript};
}

absl::StatusOr<PythonBase> ParsePythonBase(const std::string& python, const std::string& kind,
                                           const std::string& json) {
  // The last line that parses: a sitecustomize may print before it.
  std::vector<std::string> lines = absl::StrSplit(json, '\n', absl::SkipWhitespace());
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    nlohmann::json parsed = nlohmann::json::parse(*it, nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_object() || !parsed.contains("site") || !parsed["site"].is_array()) continue;
    PythonBase base;
    base.python = python;
    for (const auto& dir : parsed["site"]) {
      if (dir.is_string()) base.site_packages.push_back(dir.get<std::string>());
    }
    if (parsed.contains("user_site") && parsed["user_site"].is_string()) {
      base.user_site = parsed["user_site"].get<std::string>();
    }
    base.system_site_packages = parsed.value("system", false);
    const std::string version = parsed.value("version", "");
    if (kind == "python3") {
      base.description = absl::StrCat(python, " (Python ", version, ", no virtualenv)");
    } else {
      // The environment's directory: two levels above bin/python.
      base.description =
          absl::StrCat(kind, " ", fs::path(python).parent_path().parent_path().string());
    }
    return base;
  }
  return absl::FailedPreconditionError(
      absl::StrCat(python, " did not describe itself (expected a JSON line, got '", json, "')"));
}

std::optional<std::pair<std::string, std::string>> FindBasePython(
    const std::map<std::string, std::string>& env) {
  auto get = [&](const char* name) {
    auto it = env.find(name);
    return it == env.end() ? std::string() : it->second;
  };
  for (const auto& [variable, kind] :
       {std::pair<const char*, const char*>{"VIRTUAL_ENV", "virtualenv"},
        {"CONDA_PREFIX", "conda environment"}}) {
    const std::string prefix = get(variable);
    if (prefix.empty()) continue;
    for (const char* name : {"/bin/python", "/bin/python3"}) {
      const std::string python = prefix + name;
      if (IsExecutable(python)) return std::make_pair(python, std::string(kind));
    }
  }
  for (absl::string_view dir : absl::StrSplit(get("PATH"), ':', absl::SkipEmpty())) {
    const std::string python = absl::StrCat(dir, "/python3");
    if (IsExecutable(python)) return std::make_pair(python, std::string("python3"));
  }
  return std::nullopt;
}

std::map<std::string, std::string> LayerVariables(const std::string& dir, bool python,
                                                  const std::map<std::string, std::string>& env) {
  std::map<std::string, std::string> vars;
  vars["KBISECT_PREFIX"] = dir;
  vars["PATH"] = Prepend(dir + "/bin", env, "PATH");
  vars["LD_LIBRARY_PATH"] = Prepend(dir + "/lib", env, "LD_LIBRARY_PATH");
  vars["PKG_CONFIG_PATH"] = Prepend(absl::StrCat(dir, "/lib/pkgconfig:", dir, "/share/pkgconfig"),
                                    env, "PKG_CONFIG_PATH");
  vars["CMAKE_PREFIX_PATH"] = Prepend(dir, env, "CMAKE_PREFIX_PATH");
  if (python) {
    vars["VIRTUAL_ENV"] = dir;
    // Offline: build with what the environment has, and ask no index about pip itself.
    if (env.count("PIP_NO_BUILD_ISOLATION") == 0) vars["PIP_NO_BUILD_ISOLATION"] = "0";
    vars["PIP_DISABLE_PIP_VERSION_CHECK"] = "1";
  }
  return vars;
}

EnvironmentSnapshot EnvironmentSnapshot::Take(const std::vector<std::string>& dirs) {
  EnvironmentSnapshot snapshot;
  for (const std::string& dir : dirs) {
    // A directory that is missing, or made empty (as Python may make the user's site-packages),
    // holds nothing: only what is in it counts.
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    if (ec) continue;
    for (; it != fs::directory_iterator(); it.increment(ec)) {
      if (ec) break;
      const fs::path path = it->path();
      // Python writes bytecode there whenever a module of the environment is first imported.
      if (path.filename() == "__pycache__") continue;
      struct stat st;
      if (lstat(path.c_str(), &st) != 0) continue;
      std::string fingerprint = absl::StrCat(st.st_mode, " ", st.st_size, " ", st.st_mtim.tv_sec,
                                             ".", st.st_mtim.tv_nsec, " ", st.st_ino);
      if (path.extension() == ".pth" && S_ISREG(st.st_mode)) {
        std::ifstream in(path);
        std::stringstream contents;
        contents << in.rdbuf();
        absl::StrAppend(&fingerprint, " ", contents.str());
      }
      snapshot.entries_[path.string()] = std::move(fingerprint);
    }
  }
  return snapshot;
}

std::vector<std::string> EnvironmentSnapshot::ChangesIn(const EnvironmentSnapshot& after,
                                                        int limit) const {
  std::vector<std::string> changes;
  int total = 0;
  auto note = [&](std::string line) {
    if (total++ < limit) changes.push_back(std::move(line));
  };
  for (const auto& [path, fingerprint] : after.entries_) {
    auto it = entries_.find(path);
    if (it == entries_.end()) {
      note(absl::StrCat("added ", path));
    } else if (it->second != fingerprint) {
      note(absl::StrCat("changed ", path));
    }
  }
  for (const auto& [path, fingerprint] : entries_) {
    if (after.entries_.count(path) == 0) note(absl::StrCat("removed ", path));
  }
  if (total > limit) changes.push_back(absl::StrCat("... and ", total - limit, " more"));
  return changes;
}

std::string EscapedBuildMessage(const std::string& sha, const std::optional<PythonBase>& base,
                                const std::vector<std::string>& changes) {
  return absl::StrCat(
      "the build at ", sha.substr(0, 7), " changed an environment it must leave alone",
      base.has_value() ? absl::StrCat(" (", base->description, ")") : "", ": ",
      absl::StrJoin(changes, "; "),
      ". Its measurements would not be its own, so it is not used. Each build has a layer of its "
      "own: install with `pip` or `python -m pip` as found on PATH (not an absolute path to "
      "another environment's pip, not --user) and put other installs under $KBISECT_PREFIX; or "
      "run with --isolation none to take the risk. Undo the change by hand (e.g. pip uninstall)");
}

BuildLayers::BuildLayers(CommandRunner* runner, std::map<std::string, std::string> env)
    : runner_(runner), env_(std::move(env)) {}

std::map<std::string, std::string> BuildLayers::ProcessEnvironment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry = *e;
    const size_t eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return env;
}

std::optional<PythonBase> BuildLayers::Base() {
  kbisect::MutexLock lock(&mu_);
  if (probed_) return base_;
  probed_ = true;
  const auto found = FindBasePython(env_);
  if (!found.has_value()) return base_;
  ExecRequest query;
  query.argv = PythonBaseQuery(found->first);
  query.timeout = absl::Seconds(60);
  absl::StatusOr<ExecResult> ran = runner_->Run(query, nullptr);
  if (!ran.ok() || !ran->ok()) return base_;
  absl::StatusOr<PythonBase> parsed = ParsePythonBase(found->first, found->second, ran->output);
  if (parsed.ok()) base_ = *std::move(parsed);
  return base_;
}

BuildStep BuildLayers::BuildInLayer(const BuildCommand& build, const std::string& dir,
                                    const std::string& layer_dir, v1::BuildIsolation isolation,
                                    const std::string& sha, const Cancellation* cancel,
                                    std::map<std::string, std::string>* layer_env) {
  absl::StatusOr<BuildLayer> layer = Create(layer_dir, isolation, build.env);
  if (!layer.ok()) {
    return FailedStep(v1::TASK_OUTCOME_INFRA_ERROR,
                      absl::StrCat("the build environment of ", sha.substr(0, 7),
                                   " failed: ", layer.status().message()));
  }
  BuildCommand in_layer = build;
  for (const auto& [name, value] : layer->variables) in_layer.env[name] = value;
  // Without a layer nothing is promised, so nothing is watched.
  const bool watch = layer->isolation != v1::BUILD_ISOLATION_NONE;
  const std::vector<std::string> watched = watch ? WatchedDirs() : std::vector<std::string>();
  const EnvironmentSnapshot before = EnvironmentSnapshot::Take(watched);
  BuildStep step = RunBuild(runner_, in_layer, dir, sha, cancel);
  if (!step.ok()) return step;
  if (watch) {
    const std::vector<std::string> changes = before.ChangesIn(EnvironmentSnapshot::Take(watched));
    if (!changes.empty()) {
      step.failure = v1::TASK_OUTCOME_BUILD_FAILED;
      step.message = EscapedBuildMessage(sha, Base(), changes);
      return step;
    }
  }
  *layer_env = std::move(layer->variables);
  return step;
}

std::vector<std::string> BuildLayers::WatchedDirs() {
  std::optional<PythonBase> base = Base();
  if (!base.has_value()) return {};
  std::vector<std::string> dirs = base->site_packages;
  if (!base->user_site.empty()) dirs.push_back(base->user_site);
  return dirs;
}

v1::BuildIsolation BuildLayers::Resolve(v1::BuildIsolation isolation) {
  if (isolation != v1::BUILD_ISOLATION_UNSPECIFIED) return isolation;
  return Base().has_value() ? v1::BUILD_ISOLATION_PYTHON : v1::BUILD_ISOLATION_PREFIX;
}

BuildLayer BuildLayers::Open(const std::string& dir, v1::BuildIsolation isolation,
                             const std::map<std::string, std::string>& command_env) {
  BuildLayer layer;
  layer.dir = dir;
  layer.isolation = Resolve(isolation);
  if (layer.isolation == v1::BUILD_ISOLATION_NONE) return layer;
  std::map<std::string, std::string> env = env_;
  for (const auto& [name, value] : command_env) env[name] = value;
  layer.variables = LayerVariables(dir, layer.isolation == v1::BUILD_ISOLATION_PYTHON, env);
  return layer;
}

bool BuildLayers::CopyPristine(const std::string& from, const std::string& to) {
  const std::optional<PythonBase> base = Base();
  if (!base.has_value() || !PristinePythonLayer(from, base->description)) return false;
  std::error_code ec;
  fs::remove_all(to, ec);
  auto give_up = [&] {
    fs::remove_all(to, ec);
    return false;
  };
  fs::create_directories(fs::path(to).parent_path(), ec);
  if (!ec) fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
  if (ec) return give_up();
  // The activation scripts, pyvenv.cfg and the pip shims name the layer's directory.
  if (!RewritePaths(to, from, to)) return give_up();
  if (!WriteText(fs::path(to) / kPristineListing, LayerListing(to), false).ok()) return give_up();
  return true;
}

bool BuildLayers::Relocate(const std::string& dir, const std::string& from_prefix,
                           const std::string& to_prefix) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return true;
  const std::optional<PythonBase> base = Base();
  const bool pristine = base.has_value() && PristinePythonLayer(dir, base->description);
  if (!RewritePaths(dir, from_prefix, to_prefix)) return false;
  // Still as it was made: its next build keeps it rather than making it again.
  return !pristine || WriteText(fs::path(dir) / kPristineListing, LayerListing(dir), false).ok();
}

absl::StatusOr<BuildLayer> BuildLayers::Create(
    const std::string& dir, v1::BuildIsolation isolation,
    const std::map<std::string, std::string>& command_env) {
  BuildLayer layer = Open(dir, isolation, command_env);
  if (layer.isolation == v1::BUILD_ISOLATION_NONE) return layer;
  if (layer.isolation == v1::BUILD_ISOLATION_PYTHON) {
    // An entry's earlier build that installed nothing left the layer as it was made: making it
    // again (`python -m venv`, about 0.35 s) would give the same directory.
    const std::optional<PythonBase> base = Base();
    if (base.has_value() && PristinePythonLayer(dir, base->description)) return layer;
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot remove the old build layer ", dir, ": ", ec.message()));
  }
  if (layer.isolation == v1::BUILD_ISOLATION_PREFIX) {
    fs::create_directories(fs::path(dir) / "bin", ec);
    if (!ec) fs::create_directories(fs::path(dir) / "lib", ec);
    if (ec) {
      return absl::InternalError(
          absl::StrCat("cannot create the build layer ", dir, ": ", ec.message()));
    }
    return layer;
  }
  const std::optional<PythonBase> base = Base();
  if (!base.has_value()) {
    return absl::FailedPreconditionError(
        "--isolation python needs a Python on the worker: activate a virtualenv or conda "
        "environment, or put python3 on PATH (or use --isolation prefix)");
  }
  ExecRequest make;
  make.argv = {base->python, "-m", "venv", "--without-pip", dir};
  make.timeout = absl::Seconds(120);
  absl::StatusOr<ExecResult> made = runner_->Run(make, nullptr);
  if (!made.ok() || !made->ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot make a virtual environment with ", base->python, " (`", base->python,
        " -m venv --without-pip ", dir, "`): ",
        made.ok() ? absl::StrCat(made->Describe(), ": ", made->Tail(5)) : made.status().message(),
        ". On Debian, install python3-venv"));
  }
  // Its site-packages: the one directory under lib/ that venv made.
  std::string site_packages;
  for (const auto& lib : fs::directory_iterator(fs::path(dir) / "lib", ec)) {
    const fs::path candidate = lib.path() / "site-packages";
    if (fs::is_directory(candidate, ec)) site_packages = candidate.string();
  }
  if (site_packages.empty()) {
    return absl::InternalError(
        absl::StrCat("the virtual environment ", dir, " has no lib/pythonX.Y/site-packages"));
  }
  // One line (a .pth file runs a line that starts with `import`, statement by statement).
  std::string pth = "import site";
  for (const std::string& base_dir : base->site_packages) {
    absl::StrAppend(&pth, "; site.addsitedir(", PythonLiteral(base_dir), ")");
  }
  pth += "\n";
  RETURN_IF_ERROR(WriteText(fs::path(site_packages) / kBasePth, pth, /*executable=*/false));
  // `pip` and `pip3` run the layer's Python, whose pip (the environment's, found through the
  // .pth file) installs into the layer.
  const std::string shim =
      absl::StrCat("#!/bin/sh\nexec ", PythonLiteral(dir + "/bin/python"), " -m pip \"$@\"\n");
  for (const char* name : {"pip", "pip3"}) {
    RETURN_IF_ERROR(WriteText(fs::path(dir) / "bin" / name, shim, /*executable=*/true));
  }
  RETURN_IF_ERROR(WriteText(fs::path(dir) / kPythonMarker, base->description + "\n", false));
  RETURN_IF_ERROR(WriteText(fs::path(dir) / kPristineListing, LayerListing(dir), false));
  return layer;
}

}  // namespace kbisect
