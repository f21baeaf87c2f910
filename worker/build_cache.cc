// Copyright 2026 The kbisect Authors.
#include "worker/build_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <system_error>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/exec/process_group_sampler.h"
#include "common/git/git_repo.h"
#include "common/git/mirror.h"
#include "common/git/submodules.h"
#include "common/git/worktree.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "worker/build_entry_layout.h"
#include "worker/build_inputs.h"
#include "worker/build_key.h"
#include "worker/cmake_relocation.h"
#include "worker/workspace.h"

namespace kbisect {
namespace {

namespace fs = std::filesystem;

constexpr char kCacheLock[] = "lock";
constexpr char kEntryLock[] = "lock";
constexpr char kMarker[] = "built";
constexpr char kClaim[] = "claim";
constexpr char kEntryPrefix[] = "e";
constexpr const char* kSource = kEntrySource;
constexpr const char* kLayer = kEntryLayer;
constexpr char kReadStamp[] = "read-stamp";
constexpr char kTrashPrefix[] = ".trash-";
constexpr char kLockHolder[] = "another kbisect worker using this build";
// How often a slot waiting for another slot's build of the same key looks again.
constexpr absl::Duration kOtherBuildPoll = absl::Milliseconds(50);

// What an entry's marker says, when it has a readable one.
struct Marker {
  std::string key;
  std::string repository;
  std::string command;
  std::string sha;  // The commit built (empty in markers written before it was recorded).
  std::string tree;
  BuildCost cost;
  // What the builds of this entry's lineage read (unknown in markers written before it was
  // recorded, or where the file system records no reads).
  BuildInputs inputs;
};

std::optional<Marker> ReadMarker(const fs::path& entry) {
  std::ifstream in(entry / kMarker);
  if (!in) return std::nullopt;
  std::stringstream contents;
  contents << in.rdbuf();
  nlohmann::json json = nlohmann::json::parse(contents.str(), nullptr, /*allow_exceptions=*/false);
  if (!json.is_object() || !json["key"].is_string() || !json["repository"].is_string() ||
      !json["command"].is_string()) {
    return std::nullopt;
  }
  Marker marker{json["key"].get<std::string>(),
                json["repository"].get<std::string>(),
                json["command"].get<std::string>(),
                json["sha"].is_string() ? json["sha"].get<std::string>() : "",
                json["tree"].is_string() ? json["tree"].get<std::string>() : "",
                BuildCost{},
                BuildInputs()};
  if (const nlohmann::json& inputs = json["inputs"];
      inputs.is_object() && inputs["read"].is_array() && inputs["unread"].is_array()) {
    auto paths = [](const nlohmann::json& list) {
      std::set<std::string> out;
      for (const nlohmann::json& path : list) {
        if (path.is_string()) out.insert(path.get<std::string>());
      }
      return out;
    };
    marker.inputs = BuildInputs::Read(paths(inputs["read"]), paths(inputs["unread"]));
  }
  if (json["build_seconds"].is_number() && json["cpu_seconds"].is_number()) {
    marker.cost.wall = absl::Seconds(json["build_seconds"].get<double>());
    marker.cost.cpu = absl::Seconds(json["cpu_seconds"].get<double>());
    if (json["overlapping_builds"].is_number_integer()) {
      marker.cost.overlapping = json["overlapping_builds"].get<int>();
    }
    if (json["runnable_processes"].is_number()) {
      marker.cost.runnable = json["runnable_processes"].get<double>();
    }
    std::map<std::string, std::string> env;
    if (json["env"].is_object()) {
      for (const auto& [name, value] : json["env"].items()) {
        if (value.is_string()) env[name] = value.get<std::string>();
      }
    }
    marker.cost.requested_jobs = RequestedBuildJobs(marker.command, env);
  }
  return marker;
}

std::string ReadClaim(const fs::path& entry) {
  std::ifstream in(entry / kClaim);
  std::stringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

// Writes `contents` to `path` so that a reader (or a crash) sees either nothing or all of it.
absl::Status WriteFileDurably(const fs::path& path, const std::string& contents) {
  const std::string tmp = path.string() + ".tmp";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("cannot write '", tmp, "': ", std::strerror(errno)));
  }
  size_t written = 0;
  while (written < contents.size()) {
    const ssize_t n = write(fd, contents.data() + written, contents.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  const bool ok = written == contents.size() && fsync(fd) == 0;
  close(fd);
  std::error_code ec;
  if (ok) fs::rename(tmp, path, ec);
  if (!ok || ec) {
    fs::remove(tmp, ec);
    return absl::InternalError(absl::StrCat("cannot write '", path.string(), "'"));
  }
  return absl::OkStatus();
}

// Sets the modification time of `path` to `when`: the entry's last use.
void SetLastUsed(const fs::path& path, absl::Time when) {
  const timespec time = absl::ToTimespec(when);
  const timespec times[2] = {time, time};
  (void)utimensat(AT_FDCWD, path.c_str(), times, 0);
}

// One entry directory as the cache lock's holder sees it.
struct EntryState {
  std::string name;
  std::optional<Marker> marker;
  std::string claim;  // The key its build was claimed for ("" when none was recorded).
  absl::Time last_used;
};

// Lists the entry directories under `builds_dir`, least recently used first, unbuilt ones (no
// marker) before every built one.
std::vector<EntryState> ListEntries(const fs::path& builds_dir) {
  std::vector<EntryState> entries;
  std::error_code ec;
  for (fs::directory_iterator it(builds_dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (absl::StartsWith(name, ".") || !it->is_directory(ec)) continue;
    EntryState entry;
    entry.name = name;
    entry.marker = ReadMarker(it->path());
    if (!entry.marker.has_value()) entry.claim = ReadClaim(it->path());
    struct stat st;
    const fs::path stamp = entry.marker.has_value() ? it->path() / kMarker : it->path();
    entry.last_used =
        stat(stamp.c_str(), &st) == 0 ? absl::TimeFromTimespec(st.st_mtim) : absl::InfinitePast();
    entries.push_back(std::move(entry));
  }
  std::sort(entries.begin(), entries.end(), [](const EntryState& a, const EntryState& b) {
    const bool a_built = a.marker.has_value();
    const bool b_built = b.marker.has_value();
    if (a_built != b_built) return !a_built;
    if (a.last_used != b.last_used) return a.last_used < b.last_used;
    return a.name < b.name;
  });
  return entries;
}

// Takes the exclusive lock of entry `dir` if nobody uses or builds it.
std::unique_ptr<FileLock> TryLockIdle(const fs::path& dir) {
  absl::StatusOr<std::unique_ptr<FileLock>> lock =
      FileLock::TryAcquire((dir / kEntryLock).string(), kLockHolder);
  return lock.ok() ? *std::move(lock) : nullptr;
}

// Checks commit `sha` of `repository` out into `dir` from the mirror at `mirror_dir`, with its
// submodules: a forced checkout of an existing worktree (ignored build outputs stay) or a fresh
// one.
absl::Status CheckOutInto(const std::string& mirror_dir, const fs::path& dir,
                          const std::string& repository, const std::string& sha,
                          bool keep_untracked = false) {
  absl::StatusOr<std::unique_ptr<Worktree>> tree = Worktree::OpenOrCreate(mirror_dir, dir);
  if (!tree.ok() && !absl::IsFailedPrecondition(tree.status())) {
    // Whatever is there cannot be opened (a half-created repository): start afresh.
    std::error_code ec;
    fs::remove_all(dir, ec);
    tree = Worktree::OpenOrCreate(mirror_dir, dir);
  }
  if (!tree.ok()) return tree.status();
  (*tree)->KeepUntracked(keep_untracked);
  const std::string mirrors = fs::path(mirror_dir).parent_path().string();
  return SubmoduleCheckout(mirrors).CheckOut(**tree, repository, sha);
}

// The key of `request`'s build: its commit's tree (read from the mirror at `mirror_dir`), its
// command and the environment that identifies it.
absl::StatusOr<BuildKey> KeyOf(const std::string& mirror_dir, const BuildCache::Request& request) {
  ASSIGN_OR_RETURN(std::unique_ptr<GitRepo> repo, GitRepo::Open(mirror_dir));
  ASSIGN_OR_RETURN(CommitInfo commit, repo->GetCommit(request.sha));
  return BuildKey{commit.tree_sha, request.build.shell_command, request.key_env,
                  static_cast<int>(request.isolation)};
}

// A process-unique suffix for trash directories.
std::string TrashSuffix() {
  static std::atomic<uint64_t> counter{0};
  return absl::StrCat(getpid(), "-", counter.fetch_add(1));
}

void DeleteTrash(const std::vector<std::string>& trash) {
  for (const std::string& dir : trash) {
    std::error_code ec;
    fs::remove_all(dir, ec);  // Best effort: a later eviction retries leftovers.
  }
}

// Copies checkout `from` to `to` (which must not exist) with file times, modes and links kept,
// as a reflink copy where the file system supports it.
absl::Status CopyCheckout(CommandRunner* runner, const fs::path& from, const fs::path& to) {
  ExecRequest request;
  request.argv = {"cp", "-a", "--reflink=auto", from.string(), to.string()};
  request.timeout = absl::Hours(1);
  absl::StatusOr<ExecResult> copied = runner->Run(request);
  if (!copied.ok()) return copied.status();
  if (!copied->ok()) {
    return absl::InternalError(
        absl::StrCat("cp -a ", from.string(), " ", copied->Describe(), ": ", copied->Tail(3)));
  }
  return absl::OkStatus();
}

// The build costs recorded in the markers of the `count` most recently built entries.
std::vector<BuildCost> RecentBuildCosts(const fs::path& builds_dir, size_t count) {
  std::vector<EntryState> entries = ListEntries(builds_dir);
  std::vector<BuildCost> costs;
  for (auto it = entries.rbegin(); it != entries.rend() && costs.size() < count; ++it) {
    if (it->marker.has_value() && it->marker->cost.wall > absl::ZeroDuration()) {
      costs.push_back(it->marker->cost);
    }
  }
  return costs;
}

// What a build of commit `sha` read (`reads`), of the commit's own files and its submodules':
// a diff names nothing else, and a CMake build also reads thousands of files of its own tree.
// nullopt when the watch was off or the commit's tree cannot be read from `mirror_dir`.
std::optional<BuildInputs> CommitFilesRead(const ReadWatch& reads, const std::string& mirror_dir,
                                           const std::string& sha) {
  if (!reads.on()) return std::nullopt;
  absl::StatusOr<std::unique_ptr<GitRepo>> repo = GitRepo::Open(mirror_dir);
  if (!repo.ok()) return std::nullopt;
  absl::StatusOr<GitRepo::TreePaths> tree = (*repo)->ListTree(sha);
  if (!tree.ok()) return std::nullopt;
  const std::set<std::string> files(tree->files.begin(), tree->files.end());
  return reads.Reads([&](const std::string& path) {
    if (files.count(path) > 0) return true;
    return std::any_of(
        tree->submodules.begin(), tree->submodules.end(),
        [&](const std::string& submodule) { return absl::StartsWith(path, submodule + "/"); });
  });
}

// A built entry of the same build as a request (same repository, command, environment and
// isolation), and how far its commit is from the requested one: the changed paths that the
// builds read, and all the changed paths.
struct NearBuild {
  const EntryState* entry;
  int inputs_changed;
  int paths_changed;
};

// The built entries of `entries` (most recently used first) that hold the build of `key` at
// another commit of `request`'s repository, nearest first: fewest changed paths that the builds
// read (build_inputs.h: every path while nothing is known), then fewest changed paths, between
// their commit and the requested one (as the mirror at `mirror_dir` has them). What those builds
// read, together, is merged into `inputs`. Ties go to the most recently used.
std::vector<NearBuild> NearestBuilds(const std::vector<EntryState>& entries, const BuildKey& key,
                                     const BuildCache::Request& request,
                                     const std::string& mirror_dir, BuildInputs* inputs) {
  std::unique_ptr<GitRepo> repo;
  if (absl::StatusOr<std::unique_ptr<GitRepo>> opened = GitRepo::Open(mirror_dir); opened.ok()) {
    repo = *std::move(opened);
  }
  std::vector<const EntryState*> same_build;
  // Most recently used first, so that the stable sort gives ties to the most recently used.
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    const EntryState& entry = *it;
    if (repo == nullptr || !entry.marker.has_value() || entry.marker->sha.empty() ||
        entry.marker->repository != request.repository) {
      continue;
    }
    BuildKey same = key;
    same.tree = entry.marker->tree;
    if (entry.marker->key != same.Text()) continue;
    same_build.push_back(&entry);
    inputs->Merge(entry.marker->inputs);
  }
  std::vector<NearBuild> near;
  for (const EntryState* entry : same_build) {
    absl::StatusOr<std::vector<std::string>> changed =
        repo->ChangedPaths(entry->marker->sha, request.sha);
    if (!changed.ok()) continue;
    near.push_back({entry, inputs->CountInputs(*changed), static_cast<int>(changed->size())});
  }
  std::stable_sort(near.begin(), near.end(), [](const NearBuild& a, const NearBuild& b) {
    return std::make_pair(a.inputs_changed, a.paths_changed) <
           std::make_pair(b.inputs_changed, b.paths_changed);
  });
  return near;
}

// A near build (NearestBuilds) a new build starts from, with the lock that holds it; both null
// when there is none.
struct LockedNearBuild {
  const NearBuild* near = nullptr;
  std::unique_ptr<FileLock> lock;
};

// The entry of `near` to take over in place, its exclusive lock taken: the nearest idle one
// whose commit is not among `keep_shas`, unless it differs in more of what the builds read
// (`inputs`, when known) than a nearer entry (one the job keeps, or in use), which is better
// copied: a copy costs less than a compile. While nothing is known of what the builds read, an
// entry is taken over rather than copied: a copy of every file costs more than a few paths.
LockedNearBuild EntryToTakeOver(const std::vector<NearBuild>& near, const BuildInputs& inputs,
                                const std::vector<std::string>& keep_shas,
                                const fs::path& builds_dir) {
  const int fewest_inputs_changed = near.empty() ? 0 : near.front().inputs_changed;
  for (const NearBuild& candidate : near) {
    if (inputs.known() && candidate.inputs_changed > fewest_inputs_changed) break;
    const Marker& marker = *candidate.entry->marker;
    if (!keep_shas.empty() &&
        std::find(keep_shas.begin(), keep_shas.end(), marker.sha) != keep_shas.end()) {
      continue;
    }
    std::unique_ptr<FileLock> lock = TryLockIdle(builds_dir / candidate.entry->name);
    if (lock == nullptr) continue;
    return {&candidate, std::move(lock)};
  }
  return {};
}

// The entry of `near` a new entry is copied from, held shared (so that no eviction or take-over
// touches it while it is copied): the nearest one that can be read.
LockedNearBuild EntryToCopy(const std::vector<NearBuild>& near, const fs::path& builds_dir) {
  for (const NearBuild& candidate : near) {
    absl::StatusOr<std::unique_ptr<FileLock>> shared = FileLock::TryAcquireShared(
        (builds_dir / candidate.entry->name / kEntryLock).string(), kLockHolder);
    if (shared.ok()) return {&candidate, *std::move(shared)};
  }
  return {};
}

// The names of the entries of `entries` that are built (`built`) or not, in their order.
std::vector<std::string> EntryNames(const std::vector<EntryState>& entries, bool built) {
  std::vector<std::string> names;
  for (const EntryState& entry : entries) {
    if (entry.marker.has_value() == built) names.push_back(entry.name);
  }
  return names;
}

// The text of the marker of a build of `key`, made for `request` at `cost` (or fetched from
// build store `fetched_from`, when set, at its publisher's cost), started from commit
// `started_from`, that read `inputs` and ended at `built_at`.
std::string MarkerText(const BuildKey& key, const BuildCache::Request& request,
                       const BuildCost& cost, const std::string& started_from,
                       const std::string& fetched_from, const BuildInputs& inputs,
                       absl::Time built_at) {
  nlohmann::json marker;
  marker["key"] = key.Text();
  marker["tree"] = key.tree;
  marker["command"] = key.command;
  marker["env"] = key.env;
  marker["repository"] = request.repository;
  marker["sha"] = request.sha;
  marker["build_seconds"] = absl::ToDoubleSeconds(cost.wall);
  marker["cpu_seconds"] = absl::ToDoubleSeconds(cost.cpu);
  marker["overlapping_builds"] = cost.overlapping;
  if (cost.runnable > 0) marker["runnable_processes"] = cost.runnable;
  marker["started_from"] = started_from;
  if (!fetched_from.empty()) marker["fetched_from"] = fetched_from;
  if (inputs.known()) {
    marker["inputs"]["read"] = inputs.read();
    marker["inputs"]["unread"] = inputs.unread();
  }
  marker["built_at"] = absl::FormatTime(built_at, absl::UTCTimeZone());
  return marker.dump(2) + "\n";
}

// This host's name ("" when it cannot be read).
std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

// The builds whose cost sizes the host's build slots.
constexpr size_t kRecentBuilds = 8;

// The default options with `max_entries`.
BuildCacheOptions WithMaxEntries(int max_entries) {
  BuildCacheOptions options;
  options.max_entries = max_entries;
  return options;
}

}  // namespace

BuildCache::BuildCache(std::string cache_dir, int max_entries, CommandRunner* runner, Clock* clock,
                       std::map<std::string, std::string> layer_env)
    : BuildCache(std::move(cache_dir), WithMaxEntries(max_entries), runner, clock,
                 std::move(layer_env)) {}

BuildCache::BuildCache(std::string cache_dir, const BuildCacheOptions& options,
                       CommandRunner* runner, Clock* clock,
                       std::map<std::string, std::string> layer_env)
    : cache_dir_(std::move(cache_dir)),
      builds_dir_(cache_dir_ + "/builds"),
      max_entries_(std::max(1, options.max_entries)),
      use_compiler_cache_(options.compiler_cache),
      compiler_cache_remote_(options.compiler_cache_remote),
      fixed_build_slots_(options.fixed_build_slots),
      runner_(runner),
      clock_(clock),
      layers_(runner, layer_env),
      build_slots_(cache_dir_ + "/build-slots",
                   options.build_cores > 0 ? options.build_cores : HostCores(), clock),
      process_env_(std::move(layer_env)),
      build_pool_(absl::StrCat(HostName(), ":", cache_dir_)),
      store_(options.build_store.empty()
                 ? nullptr
                 : std::make_unique<DirectoryBuildStore>(options.build_store, runner)),
      hardware_class_(options.hardware_class),
      toolchain_(store_ == nullptr ? "" : ToolchainIdentity(process_env_)) {}

int BuildCache::EntryCount() const { return static_cast<int>(ListEntries(builds_dir_).size()); }

std::pair<std::string, int> BuildCache::Pool() const {
  if (pool_slots_.load() == 0) pool_slots_.store(BuildSlotLimit());
  return {build_pool_, pool_slots_.load()};
}

std::string BuildCache::StoreName() const { return store_ == nullptr ? "" : store_->name(); }

std::map<std::string, BuildInputs> BuildCache::InputsByCommand(const std::string& cache_dir) {
  std::map<std::string, BuildInputs> inputs;
  for (const EntryState& entry : ListEntries(fs::path(cache_dir) / "builds")) {
    if (entry.marker.has_value() && entry.marker->inputs.known()) {
      inputs[entry.marker->command].Merge(entry.marker->inputs);
    }
  }
  return inputs;
}

bool BuildCache::MarkUsed(const Request& request) {
  const std::string mirror_dir =
      absl::StrCat(cache_dir_, "/mirrors/", MirrorKey(request.repository), ".git");
  std::error_code ec;
  if (!fs::exists(mirror_dir, ec) || !HasCommit(mirror_dir, request.sha)) return false;
  absl::StatusOr<BuildKey> key = KeyOf(mirror_dir, request);
  if (!key.ok()) return false;
  absl::StatusOr<std::unique_ptr<FileLock>> cache_lock =
      FileLock::Acquire(absl::StrCat(builds_dir_, "/", kCacheLock));
  if (!cache_lock.ok()) return false;
  const std::string key_text = key->Text();
  for (const EntryState& entry : ListEntries(builds_dir_)) {
    if (entry.marker.has_value() && entry.marker->key == key_text) {
      SetLastUsed(fs::path(builds_dir_) / entry.name / kMarker, clock_->Now());
      return true;
    }
  }
  return false;
}

int BuildCache::BuildSlotLimit() const {
  if (fixed_build_slots_ > 0) return fixed_build_slots_;
  if (std::optional<double> measured =
          CoresPerBuild(RecentBuildCosts(builds_dir_, kRecentBuilds))) {
    return ConcurrentBuildLimit(build_slots_.cores(), measured);
  }
  // Nothing measured yet: builds running now that load no core need not run alone (decision 220).
  // A slot held by a build whose command has not started (its copy, checkout or layer) is a
  // build nobody has sampled yet: the rule holds until it runs.
  const std::vector<BuildCost> running = build_slots_.RunningCosts();
  const std::optional<double> light = CoresPerBuildWhileRunning(running);
  int limit = ConcurrentBuildLimit(build_slots_.cores(), light);
  // Only the slots within this limit are looked at (a look costs one lock attempt per slot).
  if (light.has_value() && build_slots_.Held(limit) > static_cast<int>(running.size())) limit = 1;
  // The coordinator hears of the grown host at the next heartbeat (Pool), before any build ends.
  if (limit > pool_slots_.load()) pool_slots_.store(limit);
  return limit;
}

// One Acquire(): the request, what its steps found, claimed and hold, and the result so far.
struct BuildCache::Acquisition {
  Acquisition(const Request& request, const Cancellation* cancel,
              const std::function<void()>& on_build_start, Clock* clock)
      : request(request),
        cancel(cancel),
        on_build_start(on_build_start),
        clock(clock),
        start(clock->Now()),
        short_sha(request.sha.substr(0, 7)) {}

  // Whether the acquisition was cancelled.
  bool Cancelled() const { return cancel != nullptr && cancel->IsCancelled(); }

  // Ends the acquisition with `outcome` and `message`, holding no entry. Returns false, so that
  // a step that fails can return what Fail() does.
  bool Fail(v1::TaskOutcome outcome, std::string message) {
    acquired.step = FailedStep(outcome, std::move(message));
    acquired.in_use.reset();
    acquired.checkout_time = clock->Now() - start;
    return false;
  }

  // Fails as an infrastructure error, retried elsewhere (a worker that cannot check out): `what`
  // of the commit failed with `status`.
  bool FailInfra(const std::string& what, const absl::Status& status) {
    return Fail(v1::TASK_OUTCOME_INFRA_ERROR,
                absl::StrCat(what, " of ", short_sha, " failed: ", status.message()));
  }

  const Request& request;
  const Cancellation* const cancel;
  const std::function<void()>& on_build_start;
  Clock* const clock;
  const absl::Time start;
  const std::string short_sha;
  Acquired acquired;
  // The repository's mirror on this host, and the key of the request's build.
  std::string mirror;
  BuildKey key;
  // The entry claimed for the build, and the host's build slot the build holds.
  Claim claim;
  std::unique_ptr<FileLock> build_slot;
  // What the build read (unknown when it could not be watched), and the most other builds it
  // shared the cores with.
  BuildInputs inputs;
  int overlapping = 0;
  // The build's processes asking for a core, their median over its samples (0: not sampled
  // enough).
  double runnable = 0;
  // Whether the build store was asked for the key, whether the claim is for a fetch from it,
  // and what the store said of the build fetched.
  bool store_asked = false;
  bool fetching = false;
  StoredBuild stored;
};

BuildCache::Acquired BuildCache::Acquire(const Request& request, const Cancellation* cancel,
                                         const std::function<void()>& on_build_start) {
  Acquisition acq(request, cancel, on_build_start, clock_);
  // Each step returns false once it has finished the acquisition: with a failure, or with the
  // build found in the cache. Once an entry is claimed, this slot builds it; nobody else uses it
  // until it is marked built.
  if (LookUpKey(&acq) && ClaimEntry(&acq)) {
    // A build the store has is fetched; one that cannot be is built here after all.
    const bool fetched = FetchEntry(&acq);
    if ((fetched || (CheckOutEntry(&acq) && BuildEntry(&acq))) && RecordBuild(&acq) && !fetched) {
      PublishBuild(&acq);
    }
  }
  return std::move(acq.acquired);
}

bool BuildCache::LookUpKey(Acquisition* acq) {
  const Request& request = acq->request;
  absl::StatusOr<std::string> mirror = PrepareMirror(cache_dir_, request.repository, request.sha);
  if (!mirror.ok()) return acq->FailInfra("checkout", mirror.status());
  acq->mirror = *std::move(mirror);
  absl::StatusOr<BuildKey> key = KeyOf(acq->mirror, request);
  if (!key.ok()) return acq->FailInfra("checkout", key.status());
  acq->key = *std::move(key);
  std::error_code ec;
  fs::create_directories(builds_dir_, ec);
  if (ec) {
    return acq->FailInfra(
        "the build cache lookup",
        absl::InternalError(absl::StrCat("cannot create '", builds_dir_, "': ", ec.message())));
  }
  return true;
}

bool BuildCache::ClaimEntry(Acquisition* acq) {
  // A build waits for one of the host's slots before it claims an entry (decision 149): a build
  // queued behind the slots is often cancelled, and it must not have taken a built entry over.
  while (acq->claim.building == nullptr) {
    if (acq->Cancelled()) return acq->Fail(v1::TASK_OUTCOME_CANCELLED, "cancelled");
    absl::StatusOr<Claim> found = ClaimUnderCacheLock(*acq);
    if (!found.ok()) return acq->FailInfra("the build cache lookup", found.status());
    if (found->in_use != nullptr) {
      UseCachedBuild(&*found, acq);
      return false;
    }
    if (found->needs_build) {
      if (!acq->store_asked) {
        // Asked once: a build another host published is fetched into a new entry, no build
        // slot needed.
        acq->store_asked = true;
        acq->fetching = StoreHasBuild(*acq);
        if (acq->fetching) continue;
      }
      if (!WaitForBuildSlot(acq)) return false;
      continue;  // Looked up again: another slot may have built it meanwhile.
    }
    acq->claim = *std::move(found);
    if (acq->claim.building == nullptr) {
      acq->build_slot.reset();  // Another slot is building it: this one waits without a slot.
      clock_->SleepFor(kOtherBuildPoll);
    }
  }
  return true;
}

absl::StatusOr<BuildCache::Claim> BuildCache::ClaimUnderCacheLock(const Acquisition& acq) {
  std::vector<std::string> trash;
  absl::StatusOr<Claim> found;
  {
    absl::StatusOr<std::unique_ptr<FileLock>> cache_lock =
        FileLock::Acquire(absl::StrCat(builds_dir_, "/", kCacheLock));
    if (!cache_lock.ok()) return cache_lock.status();
    const ClaimMode mode = acq.build_slot != nullptr ? ClaimMode::kBuild
                           : acq.fetching            ? ClaimMode::kFetch
                                                     : ClaimMode::kLookUp;
    found = ClaimLocked(acq.key, acq.request, acq.mirror, mode, &trash);
  }
  DeleteTrash(trash);
  return found;
}

void BuildCache::UseCachedBuild(Claim* found, Acquisition* acq) {
  const fs::path entry = fs::path(builds_dir_) / found->name;
  acq->acquired.in_use = std::move(found->in_use);
  acq->acquired.dir = (entry / kSource).string();
  acq->acquired.layer_env =
      layers_.Open((entry / kLayer).string(), acq->request.isolation, acq->request.build.env)
          .variables;
  acq->acquired.reused = true;
  acq->acquired.checkout_time = clock_->Now() - acq->start;
}

bool BuildCache::WaitForBuildSlot(Acquisition* acq) {
  // The limit is asked again while waiting: a build finishing meanwhile records its cost.
  acq->build_slot = build_slots_.Acquire([this] { return BuildSlotLimit(); }, acq->cancel,
                                         &acq->acquired.slot_wait, acq->request.build_order);
  if (acq->build_slot != nullptr) return true;
  if (acq->Cancelled()) return acq->Fail(v1::TASK_OUTCOME_CANCELLED, "cancelled");
  return acq->FailInfra(
      "the build", absl::InternalError(absl::StrCat("cannot create the host's build slots under ",
                                                    cache_dir_, "/build-slots")));
}

bool BuildCache::CheckOutEntry(Acquisition* acq) {
  // An entry claimed for a fetch that failed is built after all, within the host's slots.
  if (acq->build_slot == nullptr && !WaitForBuildSlot(acq)) return false;
  StartFromNearest(acq);
  const fs::path src = fs::path(builds_dir_) / acq->claim.name / kSource;
  absl::Status checked_out =
      CheckOutInto(acq->mirror, src, acq->request.repository, acq->request.sha);
  if (IsUnfetchableSubmodule(checked_out)) {
    // The commit's, not the worker's: skipped, like a failed build (docs/decisions.md 140).
    return acq->Fail(
        v1::TASK_OUTCOME_CHECKOUT_FAILED,
        absl::StrCat("checkout of ", acq->short_sha, " failed: ", checked_out.message()));
  }
  if (!checked_out.ok()) return acq->FailInfra("checkout", checked_out);
  if (acq->Cancelled()) return acq->Fail(v1::TASK_OUTCOME_CANCELLED, "cancelled");
  return true;
}

void BuildCache::StartFromNearest(Acquisition* acq) {
  Claim& claim = acq->claim;
  if (claim.copy_from.empty()) {
    acq->acquired.started_from = claim.took_over_sha;
    return;
  }
  const fs::path entry = fs::path(builds_dir_) / claim.name;
  const fs::path src = entry / kSource;
  const fs::path from_entry = fs::path(builds_dir_) / claim.copy_from;
  std::error_code ec;
  fs::remove_all(src, ec);
  absl::Status copied = CopyCheckout(runner_, from_entry / kSource, src);
  // Its layer too, where its builds installed nothing: no virtual environment to make.
  if (copied.ok()) layers_.CopyPristine((from_entry / kLayer).string(), (entry / kLayer).string());
  claim.copy_from_lock.reset();
  if (copied.ok()) {
    // The copied CMake trees name the entry they came from: moved here, they rebuild only what
    // the checkout changes.
    RelocateCMakeTrees(src, from_entry.string() + "/", entry.string() + "/");
    acq->acquired.started_from = claim.copy_from_sha;
  } else {
    fs::remove_all(src, ec);  // A fresh checkout instead.
    claim.start_inputs = BuildInputs::Read({}, {});
  }
}

bool BuildCache::FetchEntry(Acquisition* acq) {
  if (!acq->fetching) return false;
  acq->fetching = false;
  const fs::path entry = fs::path(builds_dir_) / acq->claim.name;
  const fs::path src = entry / kSource;
  absl::StatusOr<StoredBuild> fetched = store_->Fetch(StoreKeyOf(*acq), entry.string());
  if (fetched.ok()) {
    // The publisher's build trees and layer name its entry: moved here, as a copy from another
    // entry is (StartFromNearest), they rebuild only what later checkouts change.
    const std::string from = fetched->entry_dir + "/";
    const std::string to = entry.string() + "/";
    RelocateCMakeTrees(src, from, to);
    const bool relocated = layers_.Relocate((entry / kLayer).string(), from, to);
    // Its .git borrows the publisher's mirror: Worktree re-points it at this host's, and the
    // forced checkout of the same commit writes no file that is unchanged (file times stay). It
    // keeps untracked files: build outputs the commit's .gitignore does not cover are the build.
    const absl::Status checked_out =
        relocated ? CheckOutInto(acq->mirror, src, acq->request.repository, acq->request.sha,
                                 /*keep_untracked=*/true)
                  : absl::InternalError("its layer cannot be relocated");
    if (checked_out.ok()) {
      BuildStoreCounters fetch;
      fetch.fetches = 1;
      fetch.fetched_bytes = fetched->archive_bytes;
      BuildStoreCounters::Add(cache_dir_, fetch);
      acq->stored = *std::move(fetched);
      acq->inputs = acq->stored.inputs;
      acq->acquired.fetched = true;
      acq->acquired.build_store = store_->name();
      acq->acquired.layer_env =
          layers_.Open((entry / kLayer).string(), acq->request.isolation, acq->request.build.env)
              .variables;
      acq->acquired.checkout_time = clock_->Now() - acq->start;
      return true;
    }
  }
  // A miss after all (or an archive that cannot be read): built here from a fresh checkout.
  std::error_code ec;
  fs::remove_all(src, ec);
  fs::remove_all(entry / kLayer, ec);
  acq->claim.start_inputs = BuildInputs::Read({}, {});
  return false;
}

void BuildCache::PublishBuild(Acquisition* acq) {
  if (store_ == nullptr) return;
  const absl::Duration wall = acq->acquired.step.wall_time;
  if (wall < kBuildStoreFloor) return;  // Decided before the entry's files are counted.
  const std::string entry = (fs::path(builds_dir_) / acq->claim.name).string();
  const int64_t bytes = ArchivedBytes(entry);
  if (!BuildStoreTransferPays(wall, bytes, store_->Throughput())) return;
  StoredBuild build;
  build.commit = acq->request.sha;
  build.repository = acq->request.repository;
  build.build_wall = wall;
  build.build_cpu = acq->acquired.step.cpu_time;
  build.entry_dir = entry;
  build.inputs = acq->inputs;
  // The entry is held in use (shared): nothing changes it while it is archived.
  const absl::Status published = store_->Publish(StoreKeyOf(*acq), entry, std::move(build));
  if (published.ok()) {
    BuildStoreCounters publish;
    publish.publishes = 1;
    publish.published_bytes = bytes;
    BuildStoreCounters::Add(cache_dir_, publish);
  }
  if (published.ok() || absl::IsAlreadyExists(published)) {
    acq->acquired.build_store = store_->name();
  }
}

bool BuildCache::StoreHasBuild(const Acquisition& acq) {
  if (store_ == nullptr) return false;
  absl::StatusOr<StoredBuild> stored = store_->Look(StoreKeyOf(acq));
  return stored.ok() &&
         BuildStoreTransferPays(stored->build_wall, stored->archive_bytes, store_->Throughput());
}

BuildStoreKey BuildCache::StoreKeyOf(const Acquisition& acq) const {
  return BuildStoreKey{acq.key.Text(), hardware_class_, toolchain_};
}

BuildCommand BuildCache::ThroughCompilerCache(const BuildCommand& build,
                                              const std::string& src) const {
  BuildCommand cached = build;
  if (!use_compiler_cache_) return cached;
  std::map<std::string, std::string> env = process_env_;
  for (const auto& [name, value] : cached.env) env[name] = value;
  if (std::optional<CompilerCache> ccache =
          CompilerCache::Find(cache_dir_, env, compiler_cache_remote_)) {
    for (auto& [name, value] : ccache->Variables(src, env)) cached.env[name] = value;
  }
  return cached;
}

bool BuildCache::BuildEntry(Acquisition* acq) {
  const Request& request = acq->request;
  const fs::path entry = fs::path(builds_dir_) / acq->claim.name;
  const fs::path src = entry / kSource;
  const int slot_limit = BuildSlotLimit();
  acq->acquired.checkout_time = clock_->Now() - acq->start;
  if (acq->on_build_start) acq->on_build_start();
  BuildCommand build = ThroughCompilerCache(request.build, src.string());
  // Registered while it runs, so that the builds waiting for a slot can measure it (decision 220).
  std::unique_ptr<HostBuildSlots::RunningBuild> running;
  // The jobs it asks for, in its command or in the environment it inherits (MAKEFLAGS...).
  std::map<std::string, std::string> inherited = process_env_;
  for (const auto& [name, value] : build.env) inherited[name] = value;
  const int requested_jobs = RequestedBuildJobs(build.shell_command, inherited);
  // Sampled while it runs: the processes asking for a core say what it would use alone when it
  // shares the cores (BuildCost::runnable).
  std::unique_ptr<ProcessGroupSampler> sampler;
  build.on_started = [this, &running, &sampler, requested_jobs](int process_group) {
    running = build_slots_.Register(process_group, requested_jobs);
    sampler = std::make_unique<ProcessGroupSampler>(process_group);
  };
  // A fresh layer for each build: what an earlier build of the entry installed is gone, and the
  // build installs again (an editable install now points at this checkout's files).
  // Builds this one shares the cores with, at its start and its end (its own slot excluded).
  const int slots_seen = std::max(slot_limit, build_slots_.cores());
  acq->overlapping = std::max(0, build_slots_.Held(slots_seen) - 1);
  // What the build reads, where what its start read is known (a fresh checkout reads nothing).
  const ReadWatch reads = acq->claim.start_inputs.known()
                              ? ReadWatch::Start(src.string(), (entry / kReadStamp).string())
                              : ReadWatch();
  acq->acquired.step =
      layers_.BuildInLayer(build, src.string(), (entry / kLayer).string(), request.isolation,
                           request.sha, acq->cancel, &acq->acquired.layer_env);
  running.reset();
  if (sampler != nullptr) acq->runnable = sampler->Runnable().Median().value_or(0);
  sampler.reset();
  acq->overlapping = std::max(acq->overlapping, build_slots_.Held(slots_seen) - 1);
  if (!acq->acquired.step.ok()) return false;  // Not marked: never served.
  if (std::optional<BuildInputs> read = CommitFilesRead(reads, acq->mirror, request.sha)) {
    acq->inputs = acq->claim.start_inputs;
    acq->inputs.Merge(*read);
  }
  return true;
}

bool BuildCache::RecordBuild(Acquisition* acq) {
  const fs::path entry = fs::path(builds_dir_) / acq->claim.name;
  const bool fetched = acq->acquired.fetched;
  const BuildCost cost = fetched
                             ? BuildCost{acq->stored.build_wall, acq->stored.build_cpu, 0, 0, 0}
                             : BuildCost{acq->acquired.step.wall_time, acq->acquired.step.cpu_time,
                                         acq->overlapping, 0, acq->runnable};
  absl::Status marked = WriteFileDurably(
      entry / kMarker, MarkerText(acq->key, acq->request, cost, acq->acquired.started_from,
                                  fetched ? store_->name() : "", acq->inputs, clock_->Now()));
  if (!marked.ok()) return acq->FailInfra("recording the build", marked);
  // Released once the cost is recorded: the builds waiting for a slot size the limit with it.
  acq->build_slot.reset();
  SetLastUsed(entry / kMarker, clock_->Now());
  std::vector<std::string> trash;
  {
    absl::StatusOr<std::unique_ptr<FileLock>> cache_lock =
        FileLock::Acquire(absl::StrCat(builds_dir_, "/", kCacheLock));
    if (!cache_lock.ok()) return acq->FailInfra("recording the build", cache_lock.status());
    // Under the cache lock nobody can take the entry while the lock is converted.
    absl::Status shared = acq->claim.building->Downgrade();
    if (!shared.ok()) return acq->FailInfra("recording the build", shared);
    EvictLocked(&trash);
  }
  DeleteTrash(trash);
  acq->acquired.in_use = std::move(acq->claim.building);
  acq->acquired.dir = (entry / kSource).string();
  if (fetched) return true;  // No build ran: the host's build slots learned nothing.
  acq->acquired.build_pool = build_pool_;
  acq->acquired.build_pool_slots = BuildSlotLimit();
  pool_slots_.store(acq->acquired.build_pool_slots);
  return true;
}

absl::StatusOr<BuildCache::Claim> BuildCache::ClaimLocked(const BuildKey& key,
                                                          const Request& request,
                                                          const std::string& mirror_dir,
                                                          ClaimMode mode,
                                                          std::vector<std::string>* trash) {
  const std::string key_text = key.Text();
  const std::vector<EntryState> entries = ListEntries(builds_dir_);
  std::error_code ec;
  // Built: use it.
  for (const EntryState& entry : entries) {
    if (entry.marker.has_value() && entry.marker->key == key_text &&
        fs::exists(fs::path(builds_dir_) / entry.name / kSource / ".git", ec)) {
      return UseBuiltLocked(entry.name);
    }
  }
  // Claimed for this key but not built: being built (ask again later), or an earlier build
  // failed, was cancelled or crashed: build again in place, from what the checkout still has.
  for (const EntryState& entry : entries) {
    if (!entry.marker.has_value() && entry.claim == key_text) {
      return BuildAgainLocked(entry.name, mode != ClaimMode::kLookUp);
    }
  }
  Claim claim;
  if (mode == ClaimMode::kLookUp) {
    claim.needs_build = true;
    return claim;
  }
  if (mode == ClaimMode::kFetch) {
    return ClaimForFetchLocked(EntryNames(entries, /*built=*/false),
                               EntryNames(entries, /*built=*/true), key_text, trash);
  }
  // A new build, from the nearest build of the same repository, command, environment and
  // isolation.
  BuildInputs inputs;
  const std::vector<NearBuild> near = NearestBuilds(entries, key, request, mirror_dir, &inputs);
  // When the cache is full, drop idle unbuilt entries (failed or crashed builds) first.
  int count = static_cast<int>(entries.size());
  RETURN_IF_ERROR(TrashIdleLocked(EntryNames(entries, /*built=*/false), &count, trash));
  // Take the nearest idle entry the job does not keep over, in place (EntryToTakeOver).
  if (count >= max_entries_ || !request.keep_shas.empty()) {
    LockedNearBuild idle = EntryToTakeOver(near, inputs, request.keep_shas, builds_dir_);
    if (idle.lock != nullptr) {
      const EntryState& entry = *idle.near->entry;
      fs::remove(fs::path(builds_dir_) / entry.name / kMarker, ec);
      if (ec) {
        return absl::InternalError(
            absl::StrCat("cannot unmark '", (fs::path(builds_dir_) / entry.name).string(), "'"));
      }
      RETURN_IF_ERROR(WriteFileDurably(fs::path(builds_dir_) / entry.name / kClaim, key_text));
      claim.building = std::move(idle.lock);
      claim.name = entry.name;
      claim.took_over_sha = entry.marker->sha;
      claim.start_inputs = entry.marker->inputs;
      return claim;
    }
  }
  // Else a new entry, copied from the nearest entry that can be read (held shared, so that the
  // eviction below leaves it alone), or a fresh checkout.
  if (LockedNearBuild source = EntryToCopy(near, builds_dir_); source.lock != nullptr) {
    claim.copy_from = source.near->entry->name;
    claim.copy_from_sha = source.near->entry->marker->sha;
    claim.copy_from_lock = std::move(source.lock);
    claim.start_inputs = source.near->entry->marker->inputs;
  } else {
    claim.start_inputs = BuildInputs::Read({}, {});  // Fresh.
  }
  // When the cache is full, evict idle built entries, least recently used first, to make room.
  RETURN_IF_ERROR(TrashIdleLocked(EntryNames(entries, /*built=*/true), &count, trash));
  RETURN_IF_ERROR(CreateEntryLocked(key_text, &claim));
  return claim;
}

absl::StatusOr<BuildCache::Claim> BuildCache::UseBuiltLocked(const std::string& name) {
  Claim claim;
  const fs::path entry = fs::path(builds_dir_) / name;
  absl::StatusOr<std::unique_ptr<FileLock>> shared =
      FileLock::TryAcquireShared((entry / kEntryLock).string(), kLockHolder);
  if (shared.ok()) {
    SetLastUsed(entry / kMarker, clock_->Now());
    claim.in_use = *std::move(shared);
    claim.name = name;
  } else if (!absl::IsFailedPrecondition(shared.status())) {
    return shared.status();
  }  // Else its builder is just recording it: ask again.
  return claim;
}

absl::StatusOr<BuildCache::Claim> BuildCache::BuildAgainLocked(const std::string& name,
                                                               bool may_build) {
  Claim claim;
  absl::StatusOr<std::unique_ptr<FileLock>> exclusive =
      FileLock::TryAcquire((fs::path(builds_dir_) / name / kEntryLock).string(), kLockHolder);
  if (!exclusive.ok()) {
    if (absl::IsFailedPrecondition(exclusive.status())) return claim;  // Being built.
    return exclusive.status();
  }
  if (!may_build) {
    claim.needs_build = true;  // The lock is let go: it is taken again with a slot.
    return claim;
  }
  claim.building = *std::move(exclusive);
  claim.name = name;
  return claim;
}

absl::Status BuildCache::TrashIdleLocked(const std::vector<std::string>& names, int* count,
                                         std::vector<std::string>* trash) {
  for (const std::string& name : names) {
    if (*count < max_entries_) break;
    if (std::unique_ptr<FileLock> lock = TryLockIdle(fs::path(builds_dir_) / name)) {
      RETURN_IF_ERROR(TrashLocked(name, trash));
      --*count;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<BuildCache::Claim> BuildCache::ClaimForFetchLocked(
    const std::vector<std::string>& unbuilt, const std::vector<std::string>& built,
    const std::string& key_text, std::vector<std::string>* trash) {
  int count = static_cast<int>(unbuilt.size() + built.size());
  RETURN_IF_ERROR(TrashIdleLocked(unbuilt, &count, trash));
  RETURN_IF_ERROR(TrashIdleLocked(built, &count, trash));
  Claim claim;
  // A fetched build knows what its lineage read from its manifest; until then, a fresh start.
  claim.start_inputs = BuildInputs::Read({}, {});
  RETURN_IF_ERROR(CreateEntryLocked(key_text, &claim));
  return claim;
}

absl::Status BuildCache::CreateEntryLocked(const std::string& key_text, Claim* claim) {
  claim->name = NewEntryNameLocked();
  const fs::path entry = fs::path(builds_dir_) / claim->name;
  std::error_code ec;
  fs::create_directories(entry, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create '", entry.string(), "': ", ec.message()));
  }
  ASSIGN_OR_RETURN(claim->building,
                   FileLock::TryAcquire((entry / kEntryLock).string(), kLockHolder));
  return WriteFileDurably(entry / kClaim, key_text);
}

std::string BuildCache::NewEntryNameLocked() const {
  std::error_code ec;
  for (int n = 0;; ++n) {
    std::string name = absl::StrCat(kEntryPrefix, n);
    if (!fs::exists(fs::path(builds_dir_) / name, ec)) return name;
  }
}

void BuildCache::EvictLocked(std::vector<std::string>* trash) {
  std::vector<EntryState> entries = ListEntries(builds_dir_);
  int count = static_cast<int>(entries.size());
  for (const EntryState& candidate : entries) {
    if (count <= max_entries_) break;
    std::unique_ptr<FileLock> lock = TryLockIdle(fs::path(builds_dir_) / candidate.name);
    if (lock == nullptr) continue;  // In use or being built: never evicted.
    if (TrashLocked(candidate.name, trash).ok()) --count;
  }
  // Leftovers of evictions that a crash interrupted.
  std::error_code ec;
  for (fs::directory_iterator it(builds_dir_, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (absl::StartsWith(name, kTrashPrefix) &&
        std::find(trash->begin(), trash->end(), it->path().string()) == trash->end()) {
      trash->push_back(it->path().string());
    }
  }
}

absl::Status BuildCache::TrashLocked(const std::string& name, std::vector<std::string>* trash) {
  const fs::path from = fs::path(builds_dir_) / name;
  const fs::path to = fs::path(builds_dir_) / absl::StrCat(kTrashPrefix, name, "-", TrashSuffix());
  std::error_code ec;
  fs::rename(from, to, ec);
  if (ec) {
    return absl::InternalError(absl::StrCat("cannot evict '", from.string(), "': ", ec.message()));
  }
  trash->push_back(to.string());
  return absl::OkStatus();
}

}  // namespace kbisect
