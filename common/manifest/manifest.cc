// Copyright 2026 The kbisect Authors.
#include "common/manifest/manifest.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/git/git_repo.h"
#include "common/git/object_hash.h"
#include "common/identity/identity.h"

namespace kbisect {
namespace {

constexpr size_t kMaxHarnessFiles = 10000;

std::vector<std::string> SplitList(const std::string& text, char sep) {
  std::vector<std::string> out;
  for (absl::string_view part : absl::StrSplit(text, sep, absl::SkipWhitespace())) {
    out.emplace_back(absl::StripAsciiWhitespace(part));
  }
  return out;
}

std::optional<std::string> ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string Short(const std::string& id) { return id.empty() ? "none" : id.substr(0, 7); }

bool MatchesEnvName(const std::string& pattern, const std::string& name) {
  if (!pattern.empty() && pattern.back() == '*') {
    return absl::StartsWith(name, pattern.substr(0, pattern.size() - 1));
  }
  return pattern == name;
}

}  // namespace

ManifestSpec ManifestSpec::Default() {
  ManifestSpec spec;
  spec.harness_globs = {"benchmarks/**", "bench/**", ".github/workflows/**"};
  return spec;
}

ManifestSpec ManifestSpecFromEnv(const std::map<std::string, std::string>& env) {
  ManifestSpec spec = ManifestSpec::Default();
  if (auto it = env.find(kManifestHarnessEnv); it != env.end()) {
    std::vector<std::string> globs = SplitList(it->second, ',');
    if (!globs.empty()) spec.harness_globs = std::move(globs);
  }
  if (auto it = env.find(kManifestEnvEnv); it != env.end()) {
    for (std::string& name : SplitList(it->second, ',')) spec.env_names.push_back(std::move(name));
  }
  if (auto it = env.find(kManifestToolsEnv); it != env.end()) {
    for (const std::string& entry : SplitList(it->second, ';')) {
      const size_t eq = entry.find('=');
      if (eq == std::string::npos || eq == 0) continue;
      spec.tool_commands[entry.substr(0, eq)] = entry.substr(eq + 1);
    }
  }
  return spec;
}

bool GlobMatch(std::string_view glob, std::string_view path) {
  if (glob.empty()) return path.empty();
  if (glob.size() >= 2 && glob[0] == '*' && glob[1] == '*') {
    std::string_view rest = glob.substr(2);
    for (size_t i = 0; i <= path.size(); ++i) {
      if (GlobMatch(rest, path.substr(i))) return true;
    }
    return false;
  }
  if (glob[0] == '*') {
    for (size_t i = 0; i <= path.size(); ++i) {
      if (GlobMatch(glob.substr(1), path.substr(i))) return true;
      if (i < path.size() && path[i] == '/') break;
    }
    return false;
  }
  if (path.empty()) return false;
  if (glob[0] == '?') return path[0] != '/' && GlobMatch(glob.substr(1), path.substr(1));
  return glob[0] == path[0] && GlobMatch(glob.substr(1), path.substr(1));
}

bool GlobCanMatchBelow(std::string_view glob, std::string_view dir) {
  std::string_view fixed = glob.substr(0, std::min(glob.find_first_of("*?"), glob.size()));
  const size_t slash = fixed.rfind('/');
  fixed = slash == std::string_view::npos ? std::string_view() : fixed.substr(0, slash + 1);
  const std::string below = std::string(dir) + "/";
  auto starts_with = [](std::string_view text, std::string_view prefix) {
    return text.substr(0, prefix.size()) == prefix;
  };
  return starts_with(fixed, below) || starts_with(below, fixed);
}

std::function<bool(const std::string&)> TrackedInCommit(const std::string& dir,
                                                        const std::string& rev) {
  absl::StatusOr<std::unique_ptr<GitRepo>> repo = GitRepo::Open(dir);
  if (!repo.ok()) return nullptr;
  // The tree is listed on the first question only: a task whose globs and command name no file
  // of the checkout (the common case) pays nothing for it.
  struct Lazy {
    std::shared_ptr<GitRepo> repo;
    std::string rev;
    std::optional<absl::StatusOr<GitRepo::TreePaths>> tree;
  };
  auto lazy = std::make_shared<Lazy>(Lazy{std::shared_ptr<GitRepo>(*std::move(repo)), rev, {}});
  return [lazy](const std::string& path) {
    if (!lazy->tree.has_value()) lazy->tree = lazy->repo->ListTree(lazy->rev);
    return !lazy->tree->ok() || (*lazy->tree)->Holds(path);  // Unreadable: every file counts.
  };
}

namespace {

// The harness files of a checkout: their relative paths ('/'-separated, at most
// kMaxHarnessFiles) and how many more the globs matched.
struct HarnessPaths {
  std::set<std::string> paths;
  size_t left_out = 0;
};

// Adds the files of the checkout at `root` (without .git) that a harness glob matches and
// `inputs.tracked` holds to `found`. The walk costs what the globs can match: a tree of thousands
// of files outside them (a 2,000-file checkout took 35 ms a probe with fs::relative and no
// pruning) is not visited, and paths are made relative lexically (fs::relative resolves every
// component with system calls).
void AddGlobbedFiles(const ManifestSpec& spec, const ManifestInputs& inputs,
                     const std::filesystem::path& root, HarnessPaths* found) {
  namespace fs = std::filesystem;
  std::error_code error;
  for (fs::recursive_directory_iterator
           it(root, fs::directory_options::skip_permission_denied, error),
       end;
       !error && it != end; it.increment(error)) {
    if (it->path().filename() == ".git") {
      it.disable_recursion_pending();
      continue;
    }
    const std::string rel = it->path().lexically_relative(root).generic_string();
    if (it->is_directory(error)) {
      const bool wanted =
          std::any_of(spec.harness_globs.begin(), spec.harness_globs.end(),
                      [&](const std::string& g) { return GlobCanMatchBelow(g, rel); });
      if (!wanted) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file(error)) continue;
    if (inputs.tracked && !inputs.tracked(rel)) continue;
    for (const std::string& g : spec.harness_globs) {
      if (GlobMatch(g, rel)) {
        if (found->paths.size() < kMaxHarnessFiles) {
          found->paths.insert(rel);
        } else {
          ++found->left_out;
        }
        break;
      }
    }
  }
}

// Adds the benchmark command's own files to `found`: each argument that names a regular file of
// the checkout at `root` (relative, not an option, not climbing out) that `inputs.tracked` holds.
void AddCommandFiles(const ManifestInputs& inputs, const std::filesystem::path& root,
                     HarnessPaths* found) {
  namespace fs = std::filesystem;
  std::error_code error;
  for (const std::string& a : inputs.bench_argv) {
    if (a.empty() || a[0] == '-' || a[0] == '/' || absl::StrContains(a, "..")) continue;
    const fs::path p = root / a;
    const std::string rel = fs::path(a).lexically_normal().generic_string();
    if (fs::is_regular_file(p, error) && (!inputs.tracked || inputs.tracked(rel))) {
      found->paths.insert(rel);
    }
  }
}

// Records the harness files of `found` that can be read, each with its git blob id, and the
// digest over them all (and the count left out) in `m`.
void AddHarnessFiles(const std::filesystem::path& root, const HarnessPaths& found,
                     v1::MeasurementManifest* m) {
  std::string digest_input;
  for (const std::string& rel : found.paths) {
    std::optional<std::string> text = ReadFile(root / rel);
    if (!text.has_value()) continue;
    v1::HarnessFile* f = m->add_harness_files();
    f->set_path(rel);
    f->set_blob_id(GitBlobId(*text));
    absl::StrAppend(&digest_input, f->blob_id(), " ", rel, "\n");
  }
  if (found.left_out > 0) absl::StrAppend(&digest_input, "... ", found.left_out, " more\n");
  m->set_harness_digest(GitBlobId(digest_input));
}

// Records the environment variables the spec names in `m`: the benchmark's own env first, then
// the inherited one.
void AddNamedEnvironment(const ManifestSpec& spec, const ManifestInputs& inputs,
                         v1::MeasurementManifest* m) {
  for (const std::string& pattern : spec.env_names) {
    for (const auto& [name, value] : inputs.env) {
      if (MatchesEnvName(pattern, name)) (*m->mutable_env())[name] = value;
    }
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      const std::string entry(*e);
      const size_t eq = entry.find('=');
      if (eq == std::string::npos) continue;
      const std::string name = entry.substr(0, eq);
      if (MatchesEnvName(pattern, name) && inputs.env.count(name) == 0) {
        (*m->mutable_env())[name] = entry.substr(eq + 1);
      }
    }
  }
}

// The version a tool's shell `command` prints: the first non-blank line of its output, run in the
// checkout with the benchmark's env; "unavailable (...)" with the reason when it cannot be run or
// fails, or when there is no command runner.
std::string ToolVersion(const std::string& command, const ManifestInputs& inputs) {
  if (inputs.runner == nullptr) return "unavailable (no command runner)";
  ExecRequest request;
  request.shell_command = command;
  request.cwd = inputs.dir;
  request.env = inputs.env;
  request.timeout = absl::Seconds(30);
  request.output_limit_bytes = 4096;
  absl::StatusOr<ExecResult> ran = inputs.runner->Run(request);
  if (!ran.ok()) return absl::StrCat("unavailable (", ran.status().message(), ")");
  if (!ran->ok()) return absl::StrCat("unavailable (", ran->Describe(), ")");
  for (absl::string_view line : absl::StrSplit(ran->output, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (!line.empty()) return std::string(line);
  }
  return "";
}

// Records the machine in `m`: the first GPU's model, uuid, clocks, power limit and settings, the
// driver and toolkit versions and the hardware class (from `inputs.identity`), and the GPU's
// state before the run.
void AddMachine(const ManifestInputs& inputs, v1::MeasurementManifest* m) {
  if (inputs.identity != nullptr) {
    const v1::RunnerIdentity& id = *inputs.identity;
    if (id.gpus_size() > 0) {
      m->set_gpu_model(id.gpus(0).model());
      m->set_gpu_uuid(id.gpus(0).uuid());
      m->set_max_sm_clock_mhz(id.gpus(0).max_sm_clock_mhz());
      m->set_power_limit_watts(id.gpus(0).power_limit_watts());
      m->set_gpu_settings(GpuSettingsKey(id.gpus(0)));
    }
    m->set_driver_version(id.driver_version());
    m->set_cuda_version(id.cuda_version());
    m->set_rocm_version(id.rocm_version());
    m->set_hardware_class(id.hardware_class());
  }
  if (inputs.gpu_state.has_value()) {
    m->set_sm_clock_mhz(inputs.gpu_state->sm_clock_mhz());
    m->set_throttled(inputs.gpu_state->throttled());
  }
}

}  // namespace

absl::StatusOr<v1::MeasurementManifest> CollectManifest(const ManifestSpec& spec,
                                                        const ManifestInputs& inputs) {
  std::error_code error;
  const std::filesystem::path root(inputs.dir);
  if (inputs.dir.empty() || !std::filesystem::is_directory(root, error)) {
    return absl::NotFoundError(
        absl::StrCat("measurement manifest: '", inputs.dir, "' is not a directory"));
  }
  v1::MeasurementManifest m;
  for (const std::string& g : spec.harness_globs) m.add_harness_globs(g);
  for (const std::string& a : inputs.bench_argv) m.add_bench_command(a);
  HarnessPaths found;
  AddGlobbedFiles(spec, inputs, root, &found);
  AddCommandFiles(inputs, root, &found);
  AddHarnessFiles(root, found, &m);
  AddNamedEnvironment(spec, inputs, &m);
  for (const auto& [name, command] : spec.tool_commands) {
    (*m.mutable_tool_versions())[name] = ToolVersion(command, inputs);
  }
  AddMachine(inputs, &m);
  return m;
}

bool ManifestChange::IsHardware() const {
  return kind == Kind::kGpu || kind == Kind::kDriver || kind == Kind::kClock;
}

const char* ManifestChangeKindName(ManifestChange::Kind kind) {
  switch (kind) {
    case ManifestChange::Kind::kHarnessFile:
      return "harness_file";
    case ManifestChange::Kind::kBenchCommand:
      return "bench_command";
    case ManifestChange::Kind::kEnv:
      return "env";
    case ManifestChange::Kind::kTool:
      return "tool";
    case ManifestChange::Kind::kPackage:
      return "package";
    case ManifestChange::Kind::kGpu:
      return "gpu";
    case ManifestChange::Kind::kDriver:
      return "driver";
    case ManifestChange::Kind::kClock:
      return "clock";
  }
  return "unknown";
}

std::string ManifestChange::Describe() const {
  if (kind == Kind::kHarnessFile) {
    if (before.empty()) return absl::StrCat(name, " added (", Short(after), ")");
    if (after.empty()) return absl::StrCat(name, " removed (was ", Short(before), ")");
    return absl::StrCat(name, " changed (", Short(before), " -> ", Short(after), ")");
  }
  auto show = [](const std::string& v) { return v.empty() ? std::string("(unset)") : v; };
  return absl::StrCat(name, ": ", show(before), " -> ", show(after));
}

std::vector<ManifestChange> DiffManifests(const v1::MeasurementManifest& before,
                                          const v1::MeasurementManifest& after) {
  using Kind = ManifestChange::Kind;
  std::vector<ManifestChange> out;
  auto add = [&](Kind kind, std::string name, std::string b, std::string a) {
    if (b != a) out.push_back({kind, std::move(name), std::move(b), std::move(a)});
  };
  // Harness files, by path. Not compared when either side recorded none at all (no digest).
  if (!before.harness_digest().empty() && !after.harness_digest().empty() &&
      before.harness_digest() != after.harness_digest()) {
    std::map<std::string, std::pair<std::string, std::string>> files;
    for (const v1::HarnessFile& f : before.harness_files()) files[f.path()].first = f.blob_id();
    for (const v1::HarnessFile& f : after.harness_files()) files[f.path()].second = f.blob_id();
    for (const auto& [path, ids] : files) add(Kind::kHarnessFile, path, ids.first, ids.second);
  }
  if (before.bench_command_size() > 0 && after.bench_command_size() > 0) {
    add(Kind::kBenchCommand, "bench command", absl::StrJoin(before.bench_command(), " "),
        absl::StrJoin(after.bench_command(), " "));
  }
  auto maps = [&](Kind kind, const google::protobuf::Map<std::string, std::string>& b,
                  const google::protobuf::Map<std::string, std::string>& a) {
    std::map<std::string, std::pair<std::string, std::string>> all;
    for (const auto& [k, v] : b) all[k].first = v;
    for (const auto& [k, v] : a) all[k].second = v;
    for (const auto& [k, v] : all) add(kind, k, v.first, v.second);
  };
  maps(Kind::kEnv, before.env(), after.env());
  // Tracked packages sit among the tools under their prefix; the rest are tools.
  auto split = [](const google::protobuf::Map<std::string, std::string>& versions, bool packages) {
    google::protobuf::Map<std::string, std::string> out;
    for (const auto& [name, version] : versions) {
      const bool package = absl::StartsWith(name, kTrackedPackagePrefix);
      if (package != packages) continue;
      out[package ? name.substr(sizeof(kTrackedPackagePrefix) - 1) : name] = version;
    }
    return out;
  };
  maps(Kind::kTool, split(before.tool_versions(), false), split(after.tool_versions(), false));
  maps(Kind::kPackage, split(before.tool_versions(), true), split(after.tool_versions(), true));
  auto both = [](const std::string& b, const std::string& a) { return !b.empty() && !a.empty(); };
  if (both(before.gpu_model(), after.gpu_model())) {
    add(Kind::kGpu, "GPU model", before.gpu_model(), after.gpu_model());
  }
  if (both(before.gpu_uuid(), after.gpu_uuid())) {
    add(Kind::kGpu, "GPU uuid", before.gpu_uuid(), after.gpu_uuid());
  }
  if (both(before.driver_version(), after.driver_version())) {
    add(Kind::kDriver, "driver", before.driver_version(), after.driver_version());
  }
  if (both(before.cuda_version(), after.cuda_version())) {
    add(Kind::kDriver, "CUDA", before.cuda_version(), after.cuda_version());
  }
  if (both(before.rocm_version(), after.rocm_version())) {
    add(Kind::kDriver, "ROCm", before.rocm_version(), after.rocm_version());
  }
  if (before.max_sm_clock_mhz() > 0 && after.max_sm_clock_mhz() > 0) {
    add(Kind::kClock, "max SM clock", absl::StrCat(before.max_sm_clock_mhz(), " MHz"),
        absl::StrCat(after.max_sm_clock_mhz(), " MHz"));
  }
  if (before.power_limit_watts() > 0 && after.power_limit_watts() > 0 &&
      std::fabs(before.power_limit_watts() - after.power_limit_watts()) >= 1) {
    add(Kind::kClock, "power limit", absl::StrCat(before.power_limit_watts(), " W"),
        absl::StrCat(after.power_limit_watts(), " W"));
  }
  if (both(before.gpu_settings(), after.gpu_settings())) {
    add(Kind::kClock, "GPU settings", before.gpu_settings(), after.gpu_settings());
  }
  if (before.throttled() != after.throttled()) {
    add(Kind::kClock, "throttled", before.throttled() ? "yes" : "no",
        after.throttled() ? "yes" : "no");
  }
  if (before.sm_clock_mhz() > 0 && after.sm_clock_mhz() > 0 &&
      std::abs(before.sm_clock_mhz() - after.sm_clock_mhz()) > before.sm_clock_mhz() / 10) {
    add(Kind::kClock, "SM clock", absl::StrCat(before.sm_clock_mhz(), " MHz"),
        absl::StrCat(after.sm_clock_mhz(), " MHz"));
  }
  std::stable_sort(out.begin(), out.end(), [](const ManifestChange& a, const ManifestChange& b) {
    return a.IsHardware() < b.IsHardware();
  });
  return out;
}

}  // namespace kbisect
