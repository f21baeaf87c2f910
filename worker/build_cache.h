// Copyright 2026 The kbisect Authors.
//
// The host's cache of built checkouts, shared by every slot (thread or process) that uses one
// cache directory. A probe at a commit already built with the same build command and `--env`
// (build_key.h) runs its benchmark in that build: no checkout and no build. A confirmation holds
// the builds of both of its commits and alternates between them.
//
// Layout under <cache_dir>/builds/:
//   lock            held exclusively, briefly, by whoever looks entries up, creates, takes over
//                   or evicts them
//   e<N>/           an entry. Its name never changes while it exists, whatever commit it holds:
//                   build trees that record absolute paths (CMake's) stay valid when a build
//                   takes an entry over.
//   e<N>/lock       the entry's lock: exclusive while it is being built (or taken over or
//                   evicted), shared while it is in use (a benchmark runs in it, or a new entry
//                   is being copied from it)
//   e<N>/claim      the key of the build made in it (text), written when a build claims it
//   e<N>/src/       the checkout (a Worktree borrowing the mirror's objects), built in place
//   e<N>/layer/     the environment the build installs into (build_layer.h), made afresh for
//                   each build of the entry; its build and benchmarks run with it
//   e<N>/built      written atomically (and fsynced) after the build succeeded: the key, the
//                   commit, the repository, the build's wall and CPU time, the files its
//                   lineage's builds read (JSON). An entry without it holds no usable
//                   build (in progress, failed, or its worker crashed) and is never served; the
//                   next request of its key builds it again in place.
//   e<N>/read-stamp the file whose access time marks the start of the entry's latest build
//   .trash-*        evicted entries being deleted
//
// A miss builds incrementally from the nearest build: among the built entries of the same
// repository, command and environment, the one whose commit's tree differs from the new one in
// the fewest paths that the builds read (build_inputs.h: learned from the files' access times
// and kept in the markers as `inputs`), then in the fewest paths. When the cache is full, or the
// job named the builds it will use again (Request::keep_shas), the nearest idle entry the job does
// not keep is taken over in place: its checkout moves to the new commit (only changed files are
// rewritten, file times and ignored build outputs stay), so make, ninja, CMake and setuptools
// rebuild what changed. Otherwise (or when every such entry is kept or in use) a new entry starts
// as a copy of the nearest entry's checkout, build outputs and file times included (`cp -a
// --reflink=auto`: a reflink copy where the file system has them), then checks the difference out;
// CMake build trees in the copy, which name the other entry's directory, are moved to this one
// (their paths rewritten, file times kept: cmake_relocation.h), or removed and configured again
// where they cannot be. Only a miss with no such entry starts from a fresh checkout, i.e. a clean
// build.
//
// With a build store shared by the cluster's hosts (build_store.h, `--build-store`), a miss whose
// build another host of the same hardware class and toolchain published is fetched into a new
// entry instead of built, when the transfer pays (BuildStoreTransferPays): unpacked with its file
// times, its paths moved from the publisher's entry to this one (CMake trees, the layer) and its
// checkout's .git pointed at this host's mirror, it is then the host's own build. A fetch takes
// no build slot. A build that pays is published after it succeeded.
//
// Builds run through the host's compiler cache (compiler_cache.h) unless it is turned off, and
// take one of the host's build slots (build_slots.h) first: no more builds at once than the
// host's cores carry, judged from the CPU time of its recent builds.
//
// Bound: after each successful build, least recently used entries not in use are evicted until
// at most `max_entries` are left (entries in use are never evicted, so the count may exceed the
// bound while they are).
//
// A cached build is shared: benchmarks of one commit on two slots run in one directory at once.
//
//   BuildCache cache(cache_dir, kDefaultBuildCacheSize, runner);
//   BuildCache::Acquired built = cache.Acquire(request, &cancel, nullptr);
//   if (!built.step.ok()) return Fail(built.step);
//   RunBenchmarkIn(built.dir);  // The entry stays in use until `built` is destroyed.
#ifndef KBISECT_WORKER_BUILD_CACHE_H_
#define KBISECT_WORKER_BUILD_CACHE_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock/clock.h"
#include "common/exec/exec.h"
#include "common/git/file_lock.h"
#include "worker/build_inputs.h"
#include "worker/build_key.h"
#include "worker/build_layer.h"
#include "worker/build_request.h"
#include "worker/build_slots.h"
#include "worker/build_step.h"
#include "worker/build_store.h"
#include "worker/compiler_cache.h"

namespace kbisect {

// The default bound of a host's build cache (`--build-cache-size`): two builds per slot of an
// 8-GPU host, e.g. a confirmation's two commits on each slot at once.
inline constexpr int kDefaultBuildCacheSize = 16;

// How a host's build cache builds (BuildCache's constructor).
struct BuildCacheOptions {
  // The bound on entries kept (`--build-cache-size`); at least 1.
  int max_entries = kDefaultBuildCacheSize;
  // Compile through the host's compiler cache when ccache is installed (`--compiler-cache`).
  bool compiler_cache = true;
  // The remote storage the compiler cache shares with other hosts (`--compiler-cache-remote`).
  CompilerCacheRemote compiler_cache_remote;
  // The cores the host's build slots are sized for; 0: HostCores().
  int build_cores = 0;
  // A fixed number of build slots instead of the one the cores and the recent builds' costs
  // give (0: sized, the default).
  int fixed_build_slots = 0;
  // The directory of the build store shared with other hosts (`--build-store`, build_store.h);
  // empty: none. Builds that pay are published to it, and fetched from it instead of built.
  std::string build_store;
  // The worker's hardware class (RunnerIdentity.hardware_class), part of the store's key: only
  // hosts of one class share builds.
  std::string hardware_class;
};

class BuildCache {
 public:
  // What to build: a commit and how to build it (build_request.h: BuildRequestFor makes one of a
  // task).
  using Request = BuildRequest;

  // A built checkout, or why there is none.
  struct Acquired {
    // OK when `dir` holds the commit, built; otherwise the outcome, message and log tail of the
    // failure (INFRA_ERROR for mirror, checkout and cache errors; CHECKOUT_FAILED for a
    // submodule commit nobody can fetch, common/git/submodules.h).
    BuildStep step;
    // The checkout's absolute path.
    std::string dir;
    // The variables of the build's layer (build_layer.h), to set on top of the environment of
    // every benchmark run in `dir` (empty without isolation).
    std::map<std::string, std::string> layer_env;
    // True when the build was found in the cache: no checkout and no build ran.
    bool reused = false;
    // The commit whose build this one started from (taken over or copied); empty when it was
    // reused or started from a fresh checkout.
    std::string started_from;
    // How long the build waited for one of the host's build slots.
    absl::Duration slot_wait = absl::ZeroDuration();
    // When a build ran: the host's build slots ("<host>:<cache dir>") and how many builds they
    // run at once now that this build's cost is known (TaskTimings.build_pool_slots).
    std::string build_pool;
    int build_pool_slots = 0;
    // The time until the directory was ready, the build excepted: the mirror and the lookup,
    // waiting for another slot that was building the same key, and the checkout of a miss (or
    // the fetch from the build store).
    absl::Duration checkout_time = absl::ZeroDuration();
    // The build store the build was fetched from or published to (TaskTimings.build_store);
    // empty when neither happened.
    std::string build_store;
    // True when the build was fetched from the build store: no build ran on this host.
    bool fetched = false;
    // Holds the entry in use (never evicted or rebuilt) until destroyed.
    std::unique_ptr<FileLock> in_use;
  };

  // Entries live under <cache_dir>/builds/ and mirrors under <cache_dir>/mirrors/ (shared with
  // the slots' workspaces). `max_entries` must be positive. Builds run through `runner`; times
  // are measured on `clock`. Layers are made over the environment `layer_env` (this process's by
  // default). `runner` and `clock` must outlive the cache. Thread-safe, and safe with other
  // processes using the same cache directory.
  BuildCache(std::string cache_dir, int max_entries, CommandRunner* runner,
             Clock* clock = Clock::Real(),
             std::map<std::string, std::string> layer_env = BuildLayers::ProcessEnvironment());
  BuildCache(std::string cache_dir, const BuildCacheOptions& options, CommandRunner* runner,
             Clock* clock = Clock::Real(),
             std::map<std::string, std::string> layer_env = BuildLayers::ProcessEnvironment());

  BuildCache(const BuildCache&) = delete;
  BuildCache& operator=(const BuildCache&) = delete;

  // Returns the build of `request`: a cached one, or one made now (checked out into an entry and
  // built with the request's command, timeout and environment; `on_build_start`, if set, is
  // called just before the build command starts) in a fresh layer of its own (build_layer.h). A
  // build that changes the worker's environment (what BuildLayers::WatchedDirs holds) fails with
  // a message naming the change. While another slot builds the same key this
  // waits for it and then reuses its build. Stops when `cancel` (may be null) is set: the build's
  // process group is killed and the step is CANCELLED. A build that fails, times out or is
  // cancelled is not cached.
  Acquired Acquire(const Request& request, const Cancellation* cancel,
                   const std::function<void()>& on_build_start);

  // Marks the built entry of `request`, when there is one, as used now, so that eviction and
  // take-over (least recently used first) leave it for last: the builds a running job will use
  // again (SynchronizeResponse.keep_builds: GOOD, the ends of the open interval). Fetches,
  // checks out and builds nothing; a repository or commit the host's mirror lacks is no error.
  // Returns whether an entry was marked.
  bool MarkUsed(const Request& request);

  // The number of entry directories (built or not), for tests and operators.
  int EntryCount() const;

  // The host's build slots this cache's builds take ("<host>:<cache dir>") and how many builds
  // they ran at once after this process's latest build (before one, as the cache's recorded
  // builds say): OpenSessionRequest.build_pool, SynchronizeRequest.build_pool_slots. Cheap.
  std::pair<std::string, int> Pool() const;

  // The build store the cache shares builds through, as the worker names it
  // (OpenSessionRequest.build_store); empty without one.
  std::string StoreName() const;

  // What the builds under `cache_dir` read (build_inputs.h), by build command: what the built
  // entries of each command know, together. Commands whose builds learned nothing are absent.
  // For operators (`kbisect cache stats`).
  static std::map<std::string, BuildInputs> InputsByCommand(const std::string& cache_dir);

 private:
  // What the lookup under the cache lock found for a key.
  struct Claim {
    // Set when the key is built: the entry is now in use (a shared lock).
    std::unique_ptr<FileLock> in_use;
    // Set when the caller is to build it (an exclusive lock).
    std::unique_ptr<FileLock> building;
    // Neither: another slot is building it; ask again later.
    // The entry's name.
    std::string name;
    // When the build is to start from a copy of another entry: its name, commit and shared lock
    // (it cannot be evicted or taken over while it is copied).
    std::string copy_from;
    std::string copy_from_sha;
    std::unique_ptr<FileLock> copy_from_lock;
    // The commit of the entry taken over, when one was.
    std::string took_over_sha;
    // What the builds of the entry the build starts from read (build_inputs.h); known and empty
    // for a fresh checkout, unknown for a build again in place of one that did not finish.
    BuildInputs start_inputs;
    // Set instead of `building` when the key needs a build and the caller may not build yet
    // (it holds no build slot): nothing was claimed.
    bool needs_build = false;
  };

  // What a lookup may claim: nothing that needs a build (the caller holds no build slot yet), an
  // entry to build in (started from the nearest build), or a new entry to fetch the build into
  // from the build store (no build slot needed: a fetch does not load the cores).
  enum class ClaimMode { kLookUp, kBuild, kFetch };

  // One Acquire()'s state, passed between its steps (defined in build_cache.cc).
  struct Acquisition;

  // Acquire()'s steps. Each returns false once it has finished the acquisition: with a failure,
  // or (ClaimEntry) with the build found in the cache.

  // Brings the request's commit into the host's mirror and reads the key of its build.
  bool LookUpKey(Acquisition* acq);
  // Finds the key's build in the cache, or claims an entry to build it in (after waiting for one
  // of the host's build slots, and for another slot's build of the same key).
  bool ClaimEntry(Acquisition* acq);
  // Checks the commit out into the claimed entry, started from the nearest build
  // (StartFromNearest).
  bool CheckOutEntry(Acquisition* acq);
  // Runs the build in the claimed entry, watching what it reads and the builds it overlaps.
  bool BuildEntry(Acquisition* acq);
  // When the claim was made for a fetch: unpacks the store's build into the claimed entry,
  // relocates it there and checks its commit out (writing no file that is unchanged). False
  // when nothing was to be fetched, or the fetch failed: the entry is then left empty, to be
  // built from a fresh checkout.
  bool FetchEntry(Acquisition* acq);
  // Publishes the entry just built to the build store, when a fetch of it would pay
  // (BuildStoreTransferPays).
  void PublishBuild(Acquisition* acq);
  // Whether the build store has the acquisition's build and fetching it pays.
  bool StoreHasBuild(const Acquisition& acq);
  // The acquisition's key in the build store.
  BuildStoreKey StoreKeyOf(const Acquisition& acq) const;
  // Marks the entry built (its marker), turns the build's lock into a use of it and evicts what
  // the bound requires.
  bool RecordBuild(Acquisition* acq);

  // ClaimLocked() under the cache lock, taken and released here; what it trashed is deleted
  // once the lock is released.
  absl::StatusOr<Claim> ClaimUnderCacheLock(const Acquisition& acq);
  // Makes `found`, a claim of the key's built entry, the acquisition's result.
  void UseCachedBuild(Claim* found, Acquisition* acq);
  // Waits for one of the host's build slots; false when cancelled or the slots cannot be made.
  bool WaitForBuildSlot(Acquisition* acq);
  // Starts the claimed entry from the build its claim names: a copy of another entry's checkout
  // (a fresh checkout when the copy fails) or the entry it took over.
  void StartFromNearest(Acquisition* acq);
  // `build` as it runs in checkout `src`: through the host's compiler cache when it is on and
  // found.
  BuildCommand ThroughCompilerCache(const BuildCommand& build, const std::string& src) const;

  // Looks the key `key` of `request` up and claims its entry for use or for building, making
  // room (taking the nearest idle entry over, or evicting one) for a new entry. `mirror_dir` is
  // the request's mirror (for the distances between commits). Directories to delete once the
  // cache lock is released are added to `trash`. With `mode` kLookUp (the caller holds no
  // build slot yet) an entry that needs a build is neither claimed nor made room for: the claim
  // says `needs_build`, so that no built entry is taken over by a build that may be cancelled
  // while it waits for a slot. With kFetch a new entry is claimed (nothing taken over or copied).
  // The caller holds the cache lock.
  absl::StatusOr<Claim> ClaimLocked(const BuildKey& key, const Request& request,
                                    const std::string& mirror_dir, ClaimMode mode,
                                    std::vector<std::string>* trash);

  // ClaimLocked()'s claims. The caller holds the cache lock.

  // Claims built entry `name` for use, marking it used now; no claim (ask again) while its
  // builder is still recording it.
  absl::StatusOr<Claim> UseBuiltLocked(const std::string& name);
  // Claims unbuilt entry `name`, claimed for the key, to build it again in place; no claim (ask
  // again) while it is being built, and `needs_build` without `may_build`.
  absl::StatusOr<Claim> BuildAgainLocked(const std::string& name, bool may_build);
  // Trashes the idle entries among `names`, in order, while `*count` entries leave no room
  // below max_entries_, counting each off `*count`.
  absl::Status TrashIdleLocked(const std::vector<std::string>& names, int* count,
                               std::vector<std::string>* trash);
  // Creates a new entry for a build of `key_text`, named in `claim`, and claims it for building.
  absl::Status CreateEntryLocked(const std::string& key_text, Claim* claim);
  // Claims a new, empty entry for a fetch of `key_text` from the build store, making room by
  // trashing idle entries: those of `unbuilt` first, then those of `built`, in order.
  absl::StatusOr<Claim> ClaimForFetchLocked(const std::vector<std::string>& unbuilt,
                                            const std::vector<std::string>& built,
                                            const std::string& key_text,
                                            std::vector<std::string>* trash);

  // Evicts idle entries, least recently used first (unbuilt ones before any), until at most
  // max_entries_ are left, adding them to `trash`. The caller holds the cache lock.
  void EvictLocked(std::vector<std::string>* trash);

  // Moves entry `name` (whose exclusive lock the caller holds) out of the way for deletion.
  absl::Status TrashLocked(const std::string& name, std::vector<std::string>* trash);

  // The name of a new entry: the lowest e<N> not in use. The caller holds the cache lock.
  std::string NewEntryNameLocked() const;

  // The number of builds the host's build slots run at once, sized by the cost of the builds
  // recorded in the cache's entries.
  int BuildSlotLimit() const;

  const std::string cache_dir_;
  const std::string builds_dir_;
  const int max_entries_;
  const bool use_compiler_cache_;
  const CompilerCacheRemote compiler_cache_remote_;
  const int fixed_build_slots_;
  CommandRunner* const runner_;
  Clock* const clock_;
  BuildLayers layers_;
  HostBuildSlots build_slots_;
  const std::map<std::string, std::string> process_env_;
  const std::string build_pool_;
  // The build store (null without one), the hardware class and toolchain in its keys.
  std::unique_ptr<BuildStore> store_;
  const std::string hardware_class_;
  const std::string toolchain_;
  // BuildSlotLimit() after the latest build (0: not asked yet), for Pool().
  mutable std::atomic<int> pool_slots_{0};
};

}  // namespace kbisect

#endif  // KBISECT_WORKER_BUILD_CACHE_H_
