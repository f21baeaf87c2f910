// Copyright 2026 The kbisect Authors.
//
// `--lock-clocks base|max|SM[,MEM]` (issue 49): a worker locks its GPU's clocks for as long as it
// serves, so that the runs of a bisect are timed at one clock. Locking can itself be the
// regression (locked memory clocks slowed an RTX 5090 down: NVIDIA/open-gpu-kernel-modules#1266)
// and is unsupported on MIG partitions, so it is opt-in, verified and always undone:
//   - refused on a MIG partition, naming why;
//   - what is about to change is written to a state file first, then `nvidia-smi -pm 1` (when
//     persistence mode was off), `-lgc SM,SM` and, with a memory clock, `-lmc MEM,MEM`;
//   - the clocks must read back within 10 MHz (clocks.sm, clocks.mem), else everything is undone
//     and the worker fails, saying what was read;
//   - the destructor undoes it (`-rgc`, `-rmc`, `-pm 0` when it was off) and removes the state
//     file; a worker killed with SIGKILL leaves the file, and the next start undoes it first
//     (RestoreLeftover).
// The locked clocks join the slot's identity (GpuInfo.locked_*_clock_mhz), hence its hardware
// class: locked and unlocked workers never share a job.
#ifndef KBISECT_WORKER_CLOCK_LOCK_H_
#define KBISECT_WORKER_CLOCK_LOCK_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/exec/exec.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// What --lock-clocks asks for.
struct ClockLockSpec {
  enum class Kind {
    kBase,      // The GPU's base clock: its default application clock.
    kMax,       // Its maximum SM clock.
    kExplicit,  // `sm_mhz` and, when set, `memory_mhz`.
  };
  Kind kind = Kind::kMax;
  int sm_mhz = 0;
  int memory_mhz = 0;  // 0: the memory clock is not locked.
};

// Parses "base", "max", "SM" or "SM,MEM" (MHz). InvalidArgument otherwise.
absl::StatusOr<ClockLockSpec> ParseClockLockSpec(std::string_view spec);

// The SM and memory clocks `spec` locks `gpu` at (memory 0: not locked). FailedPrecondition on
// a MIG partition, or when the GPU's identity lacks the clock `spec` names.
struct LockedClocks {
  int sm_mhz = 0;
  int memory_mhz = 0;
};
absl::StatusOr<LockedClocks> LockTarget(const ClockLockSpec& spec, const v1::GpuInfo& gpu);

// A lock held on one GPU; undone when destroyed.
class ClockLock {
 public:
  // Undoes what the state file at `state_file` says a worker that died holding a lock had
  // changed, then removes the file. OK when there is no file.
  static absl::Status RestoreLeftover(CommandRunner* runner, const std::string& state_file);

  // Locks `device` (an index or UUID) at LockTarget(spec, gpu) and verifies it (see above).
  // Errors: LockTarget's; FailedPrecondition when nvidia-smi refuses (not root) or the clocks
  // do not read back within 10 MHz (everything undone); Internal when the state file cannot be
  // written (nothing changed).
  static absl::StatusOr<std::unique_ptr<ClockLock>> Apply(CommandRunner* runner,
                                                          const std::string& device,
                                                          const v1::GpuInfo& gpu,
                                                          const ClockLockSpec& spec,
                                                          const std::string& state_file);

  ClockLock(const ClockLock&) = delete;
  ClockLock& operator=(const ClockLock&) = delete;
  ~ClockLock();

  const LockedClocks& clocks() const { return clocks_; }

  // Undoes the lock now (the destructor then does nothing). Errors name the nvidia-smi call
  // that failed; the state file stays so that the next start tries again.
  absl::Status Restore();

 private:
  ClockLock(CommandRunner* runner, std::string state_file, LockedClocks clocks)
      : runner_(runner), state_file_(std::move(state_file)), clocks_(clocks) {}

  CommandRunner* const runner_;
  const std::string state_file_;
  const LockedClocks clocks_;
  bool restored_ = false;
};

// Whether every GPU of `identity` is locked as `spec` asks (its locked clocks are
// LockTarget(spec, gpu)'s, the memory clock only when `spec` names one): what `kbisect submit
// --lock-clocks` looks for among the workers, since a lock is the worker's (decision 202).
bool LockedAs(const v1::RunnerIdentity& identity, const ClockLockSpec& spec);

// Where slot `slot`'s lock notes what it changed: CACHE_DIR/clock-lock/slot-N.state.
std::string ClockLockStateFile(const std::string& cache_dir, int slot);

// A slot's start, for kbisect-worker and `kbisect run` alike: undoes the lock an earlier worker
// of slot `slot` left (a failure to is set in `*warning`, the start goes on), then, with `spec`,
// locks the GPU `device` (an index or UUID) of `identity` and records the locked clocks on it.
// Returns the lock, or null without `spec`. Errors: ClockLock::Apply's; FailedPrecondition when
// `identity` lists no such GPU.
absl::StatusOr<std::unique_ptr<ClockLock>> LockSlotClocks(
    CommandRunner* runner, const std::string& cache_dir, int slot, const std::string& device,
    const std::optional<ClockLockSpec>& spec, v1::RunnerIdentity* identity, std::string* warning);

}  // namespace kbisect

#endif  // KBISECT_WORKER_CLOCK_LOCK_H_
