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
#include "common/git/git_repo.h"
#include "common/git/mirror.h"
#include "common/git/submodules.h"
#include "common/git/worktree.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
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
constexpr char kSource[] = "src";
constexpr char kLayer[] = "layer";
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
                          const std::string& repository, const std::string& sha) {
  absl::StatusOr<std::unique_ptr<Worktree>> tree = Worktree::OpenOrCreate(mirror_dir, dir);
  if (!tree.ok() && !absl::IsFailedPrecondition(tree.status())) {
    // Whatever is there cannot be opened (a half-created repository): start afresh.
    std::error_code ec;
    fs::remove_all(dir, ec);
    tree = Worktree::OpenOrCreate(mirror_dir, dir);
  }
  if (!tree.ok()) return tree.status();
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

// This host's name ("" when it cannot be read).
std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

// The builds whose cost sizes the host's build slots.
constexpr size_t kRecentBuilds = 8;

}  // namespace

BuildCache::BuildCache(std::string cache_dir, int max_entries, CommandRunner* runner, Clock* clock,
                       std::map<std::string, std::string> layer_env)
    : BuildCache(std::move(cache_dir), BuildCacheOptions{max_entries}, runner, clock,
                 std::move(layer_env)) {}

BuildCache::BuildCache(std::string cache_dir, const BuildCacheOptions& options,
                       CommandRunner* runner, Clock* clock,
                       std::map<std::string, std::string> layer_env)
    : cache_dir_(std::move(cache_dir)),
      builds_dir_(cache_dir_ + "/builds"),
      max_entries_(std::max(1, options.max_entries)),
      use_compiler_cache_(options.compiler_cache),
      fixed_build_slots_(options.fixed_build_slots),
      runner_(runner),
      clock_(clock),
      layers_(runner, layer_env),
      build_slots_(cache_dir_ + "/build-slots",
                   options.build_cores > 0 ? options.build_cores : HostCores(), clock),
      process_env_(std::move(layer_env)),
      build_pool_(absl::StrCat(HostName(), ":", cache_dir_)) {}

int BuildCache::EntryCount() const { return static_cast<int>(ListEntries(builds_dir_).size()); }

std::pair<std::string, int> BuildCache::Pool() const {
  if (pool_slots_.load() == 0) pool_slots_.store(BuildSlotLimit());
  return {build_pool_, pool_slots_.load()};
}

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
  return ConcurrentBuildLimit(build_slots_.cores(),
                              CoresPerBuild(RecentBuildCosts(builds_dir_, kRecentBuilds)));
}

BuildCache::Acquired BuildCache::Acquire(const Request& request, const Cancellation* cancel,
                                         const std::function<void()>& on_build_start) {
  const absl::Time start = clock_->Now();
  const std::string short_sha = request.sha.substr(0, 7);
  Acquired acquired;
  auto fail = [&](v1::TaskOutcome outcome, std::string message) {
    acquired.step = FailedStep(outcome, std::move(message));
    acquired.in_use.reset();
    acquired.checkout_time = clock_->Now() - start;
    return std::move(acquired);
  };
  auto cancelled = [&] { return cancel != nullptr && cancel->IsCancelled(); };
  // A worker that cannot check out is an infrastructure problem: retried elsewhere.
  auto infra = [&](const std::string& what, const absl::Status& status) {
    return fail(v1::TASK_OUTCOME_INFRA_ERROR,
                absl::StrCat(what, " of ", short_sha, " failed: ", status.message()));
  };

  absl::StatusOr<std::string> mirror = PrepareMirror(cache_dir_, request.repository, request.sha);
  if (!mirror.ok()) return infra("checkout", mirror.status());
  absl::StatusOr<BuildKey> key = KeyOf(*mirror, request);
  if (!key.ok()) return infra("checkout", key.status());

  std::error_code ec;
  fs::create_directories(builds_dir_, ec);
  if (ec) {
    return infra(
        "the build cache lookup",
        absl::InternalError(absl::StrCat("cannot create '", builds_dir_, "': ", ec.message())));
  }
  Claim claim;
  // A build waits for one of the host's slots before it claims an entry (decision 149): a build
  // queued behind the slots is often cancelled, and it must not have taken a built entry over.
  std::unique_ptr<FileLock> build_slot;
  while (claim.building == nullptr) {
    if (cancelled()) return fail(v1::TASK_OUTCOME_CANCELLED, "cancelled");
    std::vector<std::string> trash;
    absl::StatusOr<Claim> found;
    {
      absl::StatusOr<std::unique_ptr<FileLock>> cache_lock =
          FileLock::Acquire(absl::StrCat(builds_dir_, "/", kCacheLock));
      if (!cache_lock.ok()) return infra("the build cache lookup", cache_lock.status());
      found = ClaimLocked(*key, request, *mirror, /*may_build=*/build_slot != nullptr, &trash);
    }
    DeleteTrash(trash);
    if (!found.ok()) return infra("the build cache lookup", found.status());
    if (found->in_use != nullptr) {
      const fs::path entry = fs::path(builds_dir_) / found->name;
      acquired.in_use = std::move(found->in_use);
      acquired.dir = (entry / kSource).string();
      acquired.layer_env =
          layers_.Open((entry / kLayer).string(), request.isolation, request.build.env).variables;
      acquired.reused = true;
      acquired.checkout_time = clock_->Now() - start;
      return acquired;
    }
    if (found->needs_build) {
      // The limit is asked again while waiting: a build finishing meanwhile records its cost.
      build_slot = build_slots_.Acquire([this] { return BuildSlotLimit(); }, cancel,
                                        &acquired.slot_wait, request.build_order);
      if (build_slot == nullptr) {
        if (cancelled()) return fail(v1::TASK_OUTCOME_CANCELLED, "cancelled");
        return infra("the build",
                     absl::InternalError(absl::StrCat("cannot create the host's build slots under ",
                                                      cache_dir_, "/build-slots")));
      }
      continue;  // Looked up again: another slot may have built it meanwhile.
    }
    claim = *std::move(found);
    if (claim.building == nullptr) {
      build_slot.reset();  // Another slot is building it: this one waits without a slot.
      clock_->SleepFor(kOtherBuildPoll);
    }
  }

  // This slot builds the entry; nobody else uses it until it is marked built.
  const fs::path entry = fs::path(builds_dir_) / claim.name;
  const fs::path src = entry / kSource;
  if (!claim.copy_from.empty()) {
    const fs::path from = fs::path(builds_dir_) / claim.copy_from / kSource;
    fs::remove_all(src, ec);
    absl::Status copied = CopyCheckout(runner_, from, src);
    // Its layer too, where its builds installed nothing: no virtual environment to make.
    if (copied.ok()) {
      layers_.CopyPristine((fs::path(builds_dir_) / claim.copy_from / kLayer).string(),
                           (entry / kLayer).string());
    }
    claim.copy_from_lock.reset();
    if (copied.ok()) {
      // The copied CMake trees name the entry they came from: moved here, they rebuild only what
      // the checkout below changes.
      RelocateCMakeTrees(src, (fs::path(builds_dir_) / claim.copy_from).string() + "/",
                         entry.string() + "/");
      acquired.started_from = claim.copy_from_sha;
    } else {
      fs::remove_all(src, ec);  // A fresh checkout instead.
      claim.start_inputs = BuildInputs::Read({}, {});
    }
  } else {
    acquired.started_from = claim.took_over_sha;
  }
  absl::Status checked_out = CheckOutInto(*mirror, src, request.repository, request.sha);
  if (IsUnfetchableSubmodule(checked_out)) {
    // The commit's, not the worker's: skipped, like a failed build (docs/decisions.md 140).
    return fail(v1::TASK_OUTCOME_CHECKOUT_FAILED,
                absl::StrCat("checkout of ", short_sha, " failed: ", checked_out.message()));
  }
  if (!checked_out.ok()) return infra("checkout", checked_out);
  if (cancelled()) return fail(v1::TASK_OUTCOME_CANCELLED, "cancelled");
  const int slot_limit = BuildSlotLimit();
  acquired.checkout_time = clock_->Now() - start;
  if (on_build_start) on_build_start();
  BuildCommand build = request.build;
  if (use_compiler_cache_) {
    std::map<std::string, std::string> env = process_env_;
    for (const auto& [name, value] : build.env) env[name] = value;
    if (std::optional<CompilerCache> ccache = CompilerCache::Find(cache_dir_, env)) {
      for (auto& [name, value] : ccache->Variables(src.string(), env)) build.env[name] = value;
    }
  }
  // A fresh layer for each build: what an earlier build of the entry installed is gone, and the
  // build installs again (an editable install now points at this checkout's files).
  // Builds this one shares the cores with, at its start and its end (its own slot excluded).
  const int slots_seen = std::max(slot_limit, build_slots_.cores());
  int overlapping = std::max(0, build_slots_.Held(slots_seen) - 1);
  // What the build reads, where what its start read is known (a fresh checkout reads nothing).
  const ReadWatch reads = claim.start_inputs.known()
                              ? ReadWatch::Start(src.string(), (entry / kReadStamp).string())
                              : ReadWatch();
  acquired.step = layers_.BuildInLayer(build, src.string(), (entry / kLayer).string(),
                                       request.isolation, request.sha, cancel, &acquired.layer_env);
  overlapping = std::max(overlapping, build_slots_.Held(slots_seen) - 1);
  if (!acquired.step.ok()) return acquired;  // Not marked: never served.
  BuildInputs inputs;
  if (std::optional<BuildInputs> read = CommitFilesRead(reads, *mirror, request.sha)) {
    inputs = claim.start_inputs;
    inputs.Merge(*read);
  }

  nlohmann::json marker;
  marker["key"] = key->Text();
  marker["tree"] = key->tree;
  marker["command"] = key->command;
  marker["env"] = key->env;
  marker["repository"] = request.repository;
  marker["sha"] = request.sha;
  marker["build_seconds"] = absl::ToDoubleSeconds(acquired.step.wall_time);
  marker["cpu_seconds"] = absl::ToDoubleSeconds(acquired.step.cpu_time);
  marker["overlapping_builds"] = overlapping;
  marker["started_from"] = acquired.started_from;
  if (inputs.known()) {
    marker["inputs"]["read"] = inputs.read();
    marker["inputs"]["unread"] = inputs.unread();
  }
  marker["built_at"] = absl::FormatTime(clock_->Now(), absl::UTCTimeZone());
  absl::Status marked = WriteFileDurably(entry / kMarker, marker.dump(2) + "\n");
  if (!marked.ok()) return infra("recording the build", marked);
  // Released once the cost is recorded: the builds waiting for a slot size the limit with it.
  build_slot.reset();
  SetLastUsed(entry / kMarker, clock_->Now());
  std::vector<std::string> trash;
  {
    absl::StatusOr<std::unique_ptr<FileLock>> cache_lock =
        FileLock::Acquire(absl::StrCat(builds_dir_, "/", kCacheLock));
    if (!cache_lock.ok()) return infra("recording the build", cache_lock.status());
    // Under the cache lock nobody can take the entry while the lock is converted.
    absl::Status shared = claim.building->Downgrade();
    if (!shared.ok()) return infra("recording the build", shared);
    EvictLocked(&trash);
  }
  DeleteTrash(trash);
  acquired.in_use = std::move(claim.building);
  acquired.dir = src.string();
  acquired.build_pool = build_pool_;
  acquired.build_pool_slots = BuildSlotLimit();
  pool_slots_.store(acquired.build_pool_slots);
  return acquired;
}

absl::StatusOr<BuildCache::Claim> BuildCache::ClaimLocked(const BuildKey& key,
                                                          const Request& request,
                                                          const std::string& mirror_dir,
                                                          bool may_build,
                                                          std::vector<std::string>* trash) {
  Claim claim;
  const std::string key_text = key.Text();
  const std::vector<EntryState> entries = ListEntries(builds_dir_);
  auto entry_path = [&](const std::string& name) { return fs::path(builds_dir_) / name; };
  auto lock_path = [&](const std::string& name) {
    return (entry_path(name) / kEntryLock).string();
  };
  std::error_code ec;

  // Built: use it.
  for (const EntryState& entry : entries) {
    if (!entry.marker.has_value() || entry.marker->key != key_text ||
        !fs::exists(entry_path(entry.name) / kSource / ".git", ec)) {
      continue;
    }
    absl::StatusOr<std::unique_ptr<FileLock>> shared =
        FileLock::TryAcquireShared(lock_path(entry.name), kLockHolder);
    if (shared.ok()) {
      SetLastUsed(entry_path(entry.name) / kMarker, clock_->Now());
      claim.in_use = *std::move(shared);
      claim.name = entry.name;
    } else if (!absl::IsFailedPrecondition(shared.status())) {
      return shared.status();
    }  // Else its builder is just recording it: ask again.
    return claim;
  }
  // Claimed for this key but not built: being built (ask again later), or an earlier build
  // failed, was cancelled or crashed: build again in place, from what the checkout still has.
  for (const EntryState& entry : entries) {
    if (entry.marker.has_value() || entry.claim != key_text) continue;
    absl::StatusOr<std::unique_ptr<FileLock>> exclusive =
        FileLock::TryAcquire(lock_path(entry.name), kLockHolder);
    if (!exclusive.ok()) {
      if (absl::IsFailedPrecondition(exclusive.status())) return claim;  // Being built.
      return exclusive.status();
    }
    if (!may_build) {
      claim.needs_build = true;  // The lock is let go: it is taken again with a slot.
      return claim;
    }
    claim.building = *std::move(exclusive);
    claim.name = entry.name;
    return claim;
  }

  if (!may_build) {
    claim.needs_build = true;
    return claim;
  }
  // A new build. The built entries of the same repository, command, environment and isolation,
  // nearest first: fewest changed paths that the builds read (build_inputs.h: every path while
  // nothing is known), then fewest changed paths, between their commit and this one.
  std::unique_ptr<GitRepo> repo;
  if (absl::StatusOr<std::unique_ptr<GitRepo>> opened = GitRepo::Open(mirror_dir); opened.ok()) {
    repo = *std::move(opened);
  }
  std::vector<const EntryState*> same_build;
  BuildInputs inputs;
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
    inputs.Merge(entry.marker->inputs);
  }
  struct Near {
    const EntryState* entry;
    int inputs_changed;
    int paths_changed;
  };
  std::vector<Near> near;
  for (const EntryState* entry : same_build) {
    absl::StatusOr<std::vector<std::string>> changed =
        repo->ChangedPaths(entry->marker->sha, request.sha);
    if (!changed.ok()) continue;
    near.push_back({entry, inputs.CountInputs(*changed), static_cast<int>(changed->size())});
  }
  std::stable_sort(near.begin(), near.end(), [](const Near& a, const Near& b) {
    return std::make_pair(a.inputs_changed, a.paths_changed) <
           std::make_pair(b.inputs_changed, b.paths_changed);
  });

  // When the cache is full, drop idle unbuilt entries (failed or crashed builds) first.
  int count = static_cast<int>(entries.size());
  for (const EntryState& candidate : entries) {
    if (count < max_entries_ || candidate.marker.has_value()) break;  // Unbuilt ones come first.
    if (std::unique_ptr<FileLock> lock = TryLockIdle(entry_path(candidate.name))) {
      RETURN_IF_ERROR(TrashLocked(candidate.name, trash));
      --count;
    }
  }
  auto write_claim = [&](const std::string& name) -> absl::Status {
    return WriteFileDurably(entry_path(name) / kClaim, key_text);
  };
  // Take the nearest idle entry the job does not keep over, in place, unless it differs in more
  // of what the builds read than a nearer entry (one the job keeps, or in use): that one is copied
  // instead, a copy costing less than a compile. While nothing is known of what the builds read,
  // an entry is taken over rather than copied: a copy of every file costs more than a few paths.
  const bool job_names_its_builds = !request.keep_shas.empty();
  const int fewest_inputs_changed = near.empty() ? 0 : near.front().inputs_changed;
  if (count >= max_entries_ || job_names_its_builds) {
    for (const Near& candidate : near) {
      if (inputs.known() && candidate.inputs_changed > fewest_inputs_changed) break;
      const Marker& marker = *candidate.entry->marker;
      if (job_names_its_builds && std::find(request.keep_shas.begin(), request.keep_shas.end(),
                                            marker.sha) != request.keep_shas.end()) {
        continue;
      }
      std::unique_ptr<FileLock> lock = TryLockIdle(entry_path(candidate.entry->name));
      if (lock == nullptr) continue;
      fs::remove(entry_path(candidate.entry->name) / kMarker, ec);
      if (ec) {
        return absl::InternalError(
            absl::StrCat("cannot unmark '", entry_path(candidate.entry->name).string(), "'"));
      }
      RETURN_IF_ERROR(write_claim(candidate.entry->name));
      claim.building = std::move(lock);
      claim.name = candidate.entry->name;
      claim.took_over_sha = marker.sha;
      claim.start_inputs = marker.inputs;
      return claim;
    }
  }
  // Else a new entry, copied from the nearest entry that can be read (held shared, so that the
  // eviction below leaves it alone).
  for (const Near& candidate : near) {
    absl::StatusOr<std::unique_ptr<FileLock>> shared =
        FileLock::TryAcquireShared(lock_path(candidate.entry->name), kLockHolder);
    if (!shared.ok()) continue;
    claim.copy_from = candidate.entry->name;
    claim.copy_from_sha = candidate.entry->marker->sha;
    claim.copy_from_lock = *std::move(shared);
    claim.start_inputs = candidate.entry->marker->inputs;
    break;
  }
  if (claim.copy_from.empty()) claim.start_inputs = BuildInputs::Read({}, {});  // Fresh.
  for (const EntryState& candidate : entries) {
    if (count < max_entries_) break;
    if (!candidate.marker.has_value()) continue;  // Already dropped, or in use.
    if (std::unique_ptr<FileLock> lock = TryLockIdle(entry_path(candidate.name))) {
      RETURN_IF_ERROR(TrashLocked(candidate.name, trash));
      --count;
    }
  }
  claim.name = NewEntryNameLocked();
  const fs::path entry = entry_path(claim.name);
  fs::create_directories(entry, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create '", entry.string(), "': ", ec.message()));
  }
  ASSIGN_OR_RETURN(claim.building, FileLock::TryAcquire(lock_path(claim.name), kLockHolder));
  RETURN_IF_ERROR(write_claim(claim.name));
  return claim;
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
