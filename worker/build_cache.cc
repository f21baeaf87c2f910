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
#include "worker/build_key.h"
#include "worker/workspace.h"

namespace kbisect {
namespace {

namespace fs = std::filesystem;

constexpr char kCacheLock[] = "lock";
constexpr char kEntryLock[] = "lock";
constexpr char kMarker[] = "built";
constexpr char kSource[] = "src";
constexpr char kLayer[] = "layer";
constexpr char kTrashPrefix[] = ".trash-";
constexpr char kLockHolder[] = "another kbisect worker using this build";
// How often a slot waiting for another slot's build of the same key looks again.
constexpr absl::Duration kBusyPoll = absl::Milliseconds(50);

// What an entry's marker says, when it has a readable one.
struct Marker {
  std::string key;
  std::string repository;
  std::string command;
  std::string sha;  // The commit built (empty in markers written before it was recorded).
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
  return Marker{json["key"].get<std::string>(), json["repository"].get<std::string>(),
                json["command"].get<std::string>(),
                json["sha"].is_string() ? json["sha"].get<std::string>() : ""};
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

}  // namespace

BuildCache::BuildCache(std::string cache_dir, int max_entries, CommandRunner* runner, Clock* clock,
                       std::map<std::string, std::string> layer_env)
    : cache_dir_(std::move(cache_dir)),
      builds_dir_(cache_dir_ + "/builds"),
      max_entries_(std::max(1, max_entries)),
      runner_(runner),
      clock_(clock),
      layers_(runner, std::move(layer_env)) {}

int BuildCache::EntryCount() const { return static_cast<int>(ListEntries(builds_dir_).size()); }

bool BuildCache::MarkUsed(const Request& request) {
  const std::string mirror_dir =
      absl::StrCat(cache_dir_, "/mirrors/", MirrorKey(request.repository), ".git");
  std::error_code ec;
  if (!fs::exists(mirror_dir, ec) || !HasCommit(mirror_dir, request.sha)) return false;
  absl::StatusOr<BuildKey> key = KeyOf(mirror_dir, request);
  if (!key.ok()) return false;
  const fs::path entry = fs::path(builds_dir_) / key->Digest();
  absl::StatusOr<std::unique_ptr<FileLock>> cache_lock =
      FileLock::Acquire(absl::StrCat(builds_dir_, "/", kCacheLock));
  if (!cache_lock.ok()) return false;
  std::optional<Marker> marker = ReadMarker(entry);
  if (!marker.has_value() || marker->key != key->Text()) return false;
  SetLastUsed(entry / kMarker, clock_->Now());
  return true;
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
  const std::string key_text = key->Text();
  const std::string name = key->Digest();
  const fs::path entry = fs::path(builds_dir_) / name;

  std::error_code ec;
  fs::create_directories(builds_dir_, ec);
  if (ec) {
    return infra(
        "the build cache lookup",
        absl::InternalError(absl::StrCat("cannot create '", builds_dir_, "': ", ec.message())));
  }
  std::unique_ptr<FileLock> building;
  while (building == nullptr) {
    if (cancelled()) return fail(v1::TASK_OUTCOME_CANCELLED, "cancelled");
    std::vector<std::string> trash;
    absl::StatusOr<Claim> claim;
    {
      absl::StatusOr<std::unique_ptr<FileLock>> cache_lock =
          FileLock::Acquire(absl::StrCat(builds_dir_, "/", kCacheLock));
      if (!cache_lock.ok()) return infra("the build cache lookup", cache_lock.status());
      claim = ClaimLocked(name, key_text, request, &trash);
    }
    DeleteTrash(trash);
    if (!claim.ok()) return infra("the build cache lookup", claim.status());
    if (claim->in_use != nullptr) {
      acquired.in_use = std::move(claim->in_use);
      acquired.dir = (entry / kSource).string();
      acquired.layer_env =
          layers_.Open((entry / kLayer).string(), request.isolation, request.build.env).variables;
      acquired.reused = true;
      acquired.checkout_time = clock_->Now() - start;
      return acquired;
    }
    building = std::move(claim->building);
    if (building == nullptr) clock_->SleepFor(kBusyPoll);  // Another slot is building it.
  }

  // This slot builds the entry; nobody else uses it until it is marked built.
  const fs::path src = entry / kSource;
  absl::Status checked_out = CheckOutInto(*mirror, src, request.repository, request.sha);
  if (IsUnfetchableSubmodule(checked_out)) {
    // The commit's, not the worker's: skipped, like a failed build (docs/decisions.md 140).
    return fail(v1::TASK_OUTCOME_CHECKOUT_FAILED,
                absl::StrCat("checkout of ", short_sha, " failed: ", checked_out.message()));
  }
  if (!checked_out.ok()) return infra("checkout", checked_out);
  if (cancelled()) return fail(v1::TASK_OUTCOME_CANCELLED, "cancelled");
  acquired.checkout_time = clock_->Now() - start;
  if (on_build_start) on_build_start();
  // A fresh layer for each build: what an earlier build of the entry installed is gone, and the
  // build installs again (an editable install now points at this checkout's files).
  acquired.step = layers_.BuildInLayer(request.build, src.string(), (entry / kLayer).string(),
                                       request.isolation, request.sha, cancel, &acquired.layer_env);
  if (!acquired.step.ok()) return acquired;  // Not marked: never served.

  nlohmann::json marker;
  marker["key"] = key_text;
  marker["tree"] = key->tree;
  marker["command"] = key->command;
  marker["env"] = key->env;
  marker["repository"] = request.repository;
  marker["sha"] = request.sha;
  marker["build_seconds"] = absl::ToDoubleSeconds(acquired.step.wall_time);
  marker["built_at"] = absl::FormatTime(clock_->Now(), absl::UTCTimeZone());
  absl::Status marked = WriteFileDurably(entry / kMarker, marker.dump(2) + "\n");
  if (!marked.ok()) return infra("recording the build", marked);
  SetLastUsed(entry / kMarker, clock_->Now());
  std::vector<std::string> trash;
  {
    absl::StatusOr<std::unique_ptr<FileLock>> cache_lock =
        FileLock::Acquire(absl::StrCat(builds_dir_, "/", kCacheLock));
    if (!cache_lock.ok()) return infra("recording the build", cache_lock.status());
    // Under the cache lock nobody can take the entry while the lock is converted.
    absl::Status shared = building->Downgrade();
    if (!shared.ok()) return infra("recording the build", shared);
    EvictLocked(&trash);
  }
  DeleteTrash(trash);
  acquired.in_use = std::move(building);
  acquired.dir = src.string();
  return acquired;
}

absl::StatusOr<BuildCache::Claim> BuildCache::ClaimLocked(const std::string& name,
                                                          const std::string& key_text,
                                                          const Request& request,
                                                          std::vector<std::string>* trash) {
  Claim claim;
  const fs::path entry = fs::path(builds_dir_) / name;
  const std::string lock_path = (entry / kEntryLock).string();
  std::error_code ec;
  if (fs::exists(entry, ec)) {
    std::optional<Marker> marker = ReadMarker(entry);
    if (marker.has_value() && marker->key == key_text && fs::exists(entry / kSource / ".git", ec)) {
      absl::StatusOr<std::unique_ptr<FileLock>> shared =
          FileLock::TryAcquireShared(lock_path, kLockHolder);
      if (shared.ok()) {
        SetLastUsed(entry / kMarker, clock_->Now());
        claim.in_use = *std::move(shared);
      } else if (!absl::IsFailedPrecondition(shared.status())) {
        return shared.status();
      }  // Else its builder is just recording it: ask again.
      return claim;
    }
    absl::StatusOr<std::unique_ptr<FileLock>> exclusive =
        FileLock::TryAcquire(lock_path, kLockHolder);
    if (!exclusive.ok()) {
      if (absl::IsFailedPrecondition(exclusive.status())) return claim;  // Being built.
      return exclusive.status();
    }
    // An earlier build of this key failed, was cancelled or crashed (or, with another key, the
    // digests collide, or someone deleted the checkout): build again in place, from what the
    // checkout still has.
    fs::remove(entry / kMarker, ec);
    claim.building = *std::move(exclusive);
    return claim;
  }

  // A new entry. When the cache is full, drop idle unbuilt entries (failed or crashed builds),
  // then take the least recently used idle entry of the same repository and command over (its
  // checkout and build outputs make the build incremental), else evict idle entries. When the
  // job named the builds it will use again (keep_shas), every other idle entry of the same
  // repository and command is one it needs no more, and is taken over even in a cache that is
  // not full: an incremental checkout and build instead of a fresh checkout and a clean build.
  const std::vector<EntryState> entries = ListEntries(builds_dir_);
  int count = static_cast<int>(entries.size());
  for (const EntryState& candidate : entries) {
    if (count < max_entries_ || candidate.marker.has_value()) break;  // Unbuilt ones come first.
    if (std::unique_ptr<FileLock> lock = TryLockIdle(fs::path(builds_dir_) / candidate.name)) {
      RETURN_IF_ERROR(TrashLocked(candidate.name, trash));
      --count;
    }
  }
  const bool job_names_its_builds = !request.keep_shas.empty();
  if (count >= max_entries_ || job_names_its_builds) {
    for (const EntryState& candidate : entries) {
      if (!candidate.marker.has_value() || candidate.marker->repository != request.repository ||
          candidate.marker->command != request.build.shell_command) {
        continue;
      }
      if (job_names_its_builds && std::find(request.keep_shas.begin(), request.keep_shas.end(),
                                            candidate.marker->sha) != request.keep_shas.end()) {
        continue;
      }
      const fs::path from = fs::path(builds_dir_) / candidate.name;
      std::unique_ptr<FileLock> lock = TryLockIdle(from);
      if (lock == nullptr) continue;
      fs::remove(from / kMarker, ec);
      if (ec) return absl::InternalError(absl::StrCat("cannot unmark '", from.string(), "'"));
      fs::rename(from, entry, ec);
      if (ec) {
        return absl::InternalError(absl::StrCat("cannot move '", from.string(), "' to '",
                                                entry.string(), "': ", ec.message()));
      }
      claim.building = std::move(lock);  // The lock file moved with its directory.
      return claim;
    }
  }
  for (const EntryState& candidate : entries) {
    if (count < max_entries_) break;
    if (!candidate.marker.has_value()) continue;  // Already dropped, or in use.
    if (std::unique_ptr<FileLock> lock = TryLockIdle(fs::path(builds_dir_) / candidate.name)) {
      RETURN_IF_ERROR(TrashLocked(candidate.name, trash));
      --count;
    }
  }
  fs::create_directories(entry, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create '", entry.string(), "': ", ec.message()));
  }
  ASSIGN_OR_RETURN(claim.building, FileLock::TryAcquire(lock_path, kLockHolder));
  return claim;
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
