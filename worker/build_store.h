// Copyright 2026 The kbisect Authors.
//
// A build store shared by the hosts of a cluster (`--build-store DIR`, issue 52). Each host keeps
// its built checkouts in its own build cache (build_cache.h); a build one host made is published
// to the store, and a host of the same hardware class that needs the same build fetches it
// instead of building. The I/O is behind an interface, as LevelDB's Env is: DirectoryBuildStore
// keeps the store in a directory of a shared file system (an NFS or Lustre mount on a Slurm
// cluster, a ReadWriteMany volume on Kubernetes).
//
// Layout under the store's directory:
//   <2 hex>/<digest>/build.tar       the entry's `src/` (its checkout, `.git` and build outputs)
//                                    and `layer/` (build_layer.h), file times kept
//   <2 hex>/<digest>/manifest.json   what the build was (StoredBuild)
//   .tmp-*                           a publication or a throughput probe under way
// where <digest> is BuildStoreKey::Digest(). A publication is written into a `.tmp-*` directory
// and renamed into place: readers see all of it or nothing, and of two hosts publishing one key
// the second loses the rename race harmlessly. Published directories never change; nothing
// evicts them (an operator prunes old ones: docs/operations.md, "Shared build store").
//
// Whether a transfer pays is decided from measured facts (BuildStoreTransferPays): the build's
// wall time against the archive's bytes at the throughput the store measured.
//
//   DirectoryBuildStore store("/shared/kbisect-builds", runner);
//   absl::StatusOr<StoredBuild> fetched = store.Fetch(key, entry_dir);
//   if (!fetched.ok()) Build();  // A miss (or an archive that cannot be read): build here.
#ifndef KBISECT_WORKER_BUILD_STORE_H_
#define KBISECT_WORKER_BUILD_STORE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/exec/exec.h"
#include "common/sync/mutex.h"
#include "worker/build_inputs.h"

namespace kbisect {

// Builds shorter than this are never published or fetched: the store's round trip (a manifest
// read, a tar, a checkout's index refresh) is not worth it.
inline constexpr absl::Duration kBuildStoreFloor = absl::Seconds(1);

// What identifies a build across hosts: the host's own build key (build_key.h: the tree, the
// command, the job's environment and isolation), the hardware class of the host that built it
// (RunnerIdentity.hardware_class) and the host's toolchain (ToolchainIdentity).
struct BuildStoreKey {
  // BuildKey::Text() of the build.
  std::string build_key;
  // The worker's hardware class, as its identity computes it (common/identity).
  std::string hardware_class;
  // ToolchainIdentity() of the worker's environment.
  std::string toolchain;

  // The key as text, length-prefixed like BuildKey::Text(): stored in each manifest, so that a
  // digest collision is a miss, never a wrong build.
  std::string Text() const;
  // KeyDigest(Text()): 32 lowercase hex digits.
  std::string Digest() const;
};

// A cheap identity of the compilers and the Python the builds of environment `env` use: for each
// of cc, c++, gcc, g++, clang, clang++, nvcc and python3, the first one on env's PATH, resolved
// through its links, with its size and modification time ("-" when there is none). Two hosts of
// one image agree; an upgraded compiler changes it. Reads no file contents and runs nothing.
std::string ToolchainIdentity(const std::map<std::string, std::string>& env);

// What a published build says of itself (its manifest).
struct StoredBuild {
  // BuildStoreKey::Text() of the build.
  std::string key_text;
  // The commit built and its repository (as the job names it).
  std::string commit;
  std::string repository;
  // The wall and CPU time of the build that made it, as its publisher measured them.
  absl::Duration build_wall = absl::ZeroDuration();
  absl::Duration build_cpu = absl::ZeroDuration();
  // The archive's size.
  int64_t archive_bytes = 0;
  // The absolute path of the build-cache entry it was made in, without a trailing '/': paths
  // in its build trees and layer start with it until the fetching host relocates them.
  std::string entry_dir;
  // The host that published it.
  std::string host;
  // What the builds of its entry's lineage read (build_inputs.h), as its marker said.
  BuildInputs inputs;
};

// Whether a transfer of a build through the store pays: the build took at least kBuildStoreFloor,
// and moving `archive_bytes` at `bytes_per_second` takes at most half of `build_wall` (a margin
// for the estimate, the relocation and the checkout's refresh that follow a fetch). Pure.
bool BuildStoreTransferPays(absl::Duration build_wall, int64_t archive_bytes,
                            double bytes_per_second);

// The bytes an archive of the entry at `entry_dir` would hold: the sizes of the regular files
// under its `src/` and `layer/`. Cheap: stats only.
int64_t ArchivedBytes(const std::string& entry_dir);

// The shared store of built entries. Implementations are thread-safe and safe with other
// processes and hosts using the same store.
class BuildStore {
 public:
  virtual ~BuildStore() = default;

  // The store as the worker names it (OpenSessionRequest.build_store, TaskTimings.build_store).
  virtual const std::string& name() const = 0;

  // Whether the store can be used now: Unavailable saying why not (missing, not writable).
  virtual absl::Status Check() const = 0;

  // The manifest of the build of `key`, without its archive. NotFound when the store has none
  // (or its manifest is unreadable, or names another key).
  virtual absl::StatusOr<StoredBuild> Look(const BuildStoreKey& key) const = 0;

  // Unpacks the build of `key` into entry directory `entry_dir` (its `src/` and `layer/`, which
  // are removed first), file times kept, and returns its manifest. Paths inside still name the
  // publisher's entry (StoredBuild::entry_dir): the caller relocates them. NotFound on a miss;
  // DataLoss when the archive is partial or corrupt, and then nothing of it is left in
  // `entry_dir`. Either is a miss for the caller, never a failed task.
  virtual absl::StatusOr<StoredBuild> Fetch(const BuildStoreKey& key,
                                            const std::string& entry_dir) = 0;

  // Publishes the `src/` and `layer/` of entry directory `entry_dir` (which must not change
  // meanwhile) as the build of `key`, described by `build` (its archive_bytes are set here).
  // AlreadyExists when the store has the key already (another host won the race): harmless.
  virtual absl::Status Publish(const BuildStoreKey& key, const std::string& entry_dir,
                               StoredBuild build) = 0;

  // The bytes per second the store moves, as its latest transfers measured it; before any, as a
  // probe (a 4 MiB file written and synced) measures it once. 0 when the store cannot be used.
  virtual double Throughput() = 0;
};

// A build store in a directory, through the `tar` CLI run by `runner` (which must outlive it).
class DirectoryBuildStore : public BuildStore {
 public:
  DirectoryBuildStore(std::string dir, CommandRunner* runner);

  const std::string& name() const override { return dir_; }
  absl::Status Check() const override;
  absl::StatusOr<StoredBuild> Look(const BuildStoreKey& key) const override;
  absl::StatusOr<StoredBuild> Fetch(const BuildStoreKey& key,
                                    const std::string& entry_dir) override;
  absl::Status Publish(const BuildStoreKey& key, const std::string& entry_dir,
                       StoredBuild build) override;
  double Throughput() override;

 private:
  // The directory of `key`'s build.
  std::string KeyDir(const BuildStoreKey& key) const;
  // Records a transfer of `bytes` that took `took`, for Throughput().
  void Measured(int64_t bytes, absl::Duration took);

  const std::string dir_;
  CommandRunner* const runner_;
  kbisect::Mutex mu_;
  // The latest measured throughput, bytes per second (0: none yet).
  double bytes_per_second_ ABSL_GUARDED_BY(mu_) = 0;
};

// The warning a worker or `kbisect run` logs once at start when the build store `dir` cannot be
// used (missing, not a directory, not writable), saying that builds go on without it; nullopt
// when it can be used or there is none (`dir` empty).
std::optional<std::string> BuildStoreWarning(const std::string& dir);

// What one host (a cache directory) fetched from and published to its build store, kept in
// <cache_dir>/build-store/counters.json for `kbisect cache stats`.
struct BuildStoreCounters {
  int64_t fetches = 0;
  int64_t publishes = 0;
  int64_t fetched_bytes = 0;
  int64_t published_bytes = 0;

  // The counters of `cache_dir` (all zero when none were kept).
  static BuildStoreCounters Read(const std::string& cache_dir);
  // Adds `delta` to the counters of `cache_dir`, under a lock shared with the host's other
  // processes. Best effort: a counter that cannot be written costs nothing else.
  static void Add(const std::string& cache_dir, const BuildStoreCounters& delta);
};

}  // namespace kbisect

#endif  // KBISECT_WORKER_BUILD_STORE_H_
