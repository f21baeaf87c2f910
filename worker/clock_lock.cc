// Copyright 2026 The kbisect Authors.
#include "worker/clock_lock.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"

namespace kbisect {
namespace {

// How far a locked clock may read from its target (Triton's set_gpu_clock allows 10 MHz).
constexpr int kClockToleranceMhz = 10;

// The state file: what a lock changed, "key=value" a line (device, sm, memory, persistence).
using LockState = std::map<std::string, std::string>;

absl::Status WriteState(const std::string& path, const LockState& state) {
  std::error_code error;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), error);
  std::ofstream out(path + ".tmp");
  for (const auto& [key, value] : state) out << key << "=" << value << "\n";
  out.close();
  if (!out || std::rename((path + ".tmp").c_str(), path.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("cannot write the clock lock's state file ", path));
  }
  return absl::OkStatus();
}

LockState ReadState(const std::string& path) {
  LockState state;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) state[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return state;
}

// Runs `nvidia-smi ARGS --id=DEVICE`; FailedPrecondition with its words when it fails.
absl::StatusOr<std::string> NvidiaSmi(CommandRunner* runner, std::vector<std::string> args,
                                      const std::string& device) {
  ExecRequest request;
  request.argv = {"nvidia-smi"};
  request.argv.insert(request.argv.end(), args.begin(), args.end());
  if (!device.empty()) request.argv.push_back(absl::StrCat("--id=", device));
  request.timeout = absl::Seconds(30);
  ASSIGN_OR_RETURN(ExecResult ran, runner->Run(request));
  if (!ran.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("`", absl::StrJoin(request.argv, " "), "` ",
                                                      ran.Describe(), ": ", ran.Tail(3)));
  }
  return ran.output;
}

// Undoes what `state` says was changed. Every step is tried; the first failure is returned.
absl::Status Undo(CommandRunner* runner, const LockState& state) {
  const auto get = [&](const char* key) {
    auto it = state.find(key);
    return it == state.end() ? std::string() : it->second;
  };
  const std::string device = get("device");
  absl::Status first = absl::OkStatus();
  const auto step = [&](std::vector<std::string> args) {
    absl::StatusOr<std::string> done = NvidiaSmi(runner, std::move(args), device);
    if (!done.ok() && first.ok()) first = done.status();
  };
  if (get("sm") != "" && get("sm") != "0") step({"--reset-gpu-clocks"});
  if (get("memory") != "" && get("memory") != "0") step({"--reset-memory-clocks"});
  if (get("persistence") == "Disabled") step({"--persistence-mode=0"});
  return first;
}

// The SM and memory clocks the GPU reads now.
absl::StatusOr<LockedClocks> ReadClocks(CommandRunner* runner, const std::string& device) {
  ASSIGN_OR_RETURN(
      std::string csv,
      NvidiaSmi(runner, {"--query-gpu=clocks.sm,clocks.mem", "--format=csv,noheader,nounits"},
                device));
  const std::vector<absl::string_view> fields =
      absl::StrSplit(absl::StripAsciiWhitespace(csv), ',');
  LockedClocks clocks;
  if (fields.size() < 2 ||
      !absl::SimpleAtoi(absl::StripAsciiWhitespace(fields[0]), &clocks.sm_mhz) ||
      !absl::SimpleAtoi(absl::StripAsciiWhitespace(fields[1]), &clocks.memory_mhz)) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot read the clocks back: nvidia-smi printed '", csv, "'"));
  }
  return clocks;
}

// OK when the clocks read back within kClockToleranceMhz of `target`; FailedPrecondition saying
// what was read otherwise.
absl::Status VerifyClocks(CommandRunner* runner, const std::string& device,
                          const LockedClocks& target) {
  ASSIGN_OR_RETURN(LockedClocks read, ReadClocks(runner, device));
  if (std::abs(read.sm_mhz - target.sm_mhz) <= kClockToleranceMhz &&
      (target.memory_mhz == 0 ||
       std::abs(read.memory_mhz - target.memory_mhz) <= kClockToleranceMhz)) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "--lock-clocks: the GPU reads SM ", read.sm_mhz, " MHz, memory ", read.memory_mhz,
      " MHz after locking SM at ", target.sm_mhz, " MHz",
      target.memory_mhz > 0 ? absl::StrCat(" and memory at ", target.memory_mhz, " MHz") : "",
      " (more than ", kClockToleranceMhz, " MHz off): the lock did not take; undone"));
}

}  // namespace

absl::StatusOr<ClockLockSpec> ParseClockLockSpec(std::string_view text) {
  ClockLockSpec spec;
  const absl::string_view s =
      absl::StripAsciiWhitespace(absl::string_view(text.data(), text.size()));
  if (s == "base" || s == "max") {
    spec.kind = s == "base" ? ClockLockSpec::Kind::kBase : ClockLockSpec::Kind::kMax;
    return spec;
  }
  spec.kind = ClockLockSpec::Kind::kExplicit;
  const std::vector<absl::string_view> parts = absl::StrSplit(s, ',');
  const bool ok =
      (parts.size() == 1 || parts.size() == 2) && absl::SimpleAtoi(parts[0], &spec.sm_mhz) &&
      spec.sm_mhz > 0 &&
      (parts.size() == 1 || (absl::SimpleAtoi(parts[1], &spec.memory_mhz) && spec.memory_mhz > 0));
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--lock-clocks ", s, ": expected base, max, SM or SM,MEM (MHz, e.g. 1410,2619)"));
  }
  return spec;
}

absl::StatusOr<LockedClocks> LockTarget(const ClockLockSpec& spec, const v1::GpuInfo& gpu) {
  if (gpu.mig_mode() == "Enabled") {
    return absl::FailedPreconditionError(absl::StrCat(
        "--lock-clocks: GPU ", gpu.index(), " (", gpu.model(),
        ") is in MIG mode, and clocks cannot be locked on a MIG partition; run without "
        "--lock-clocks, or disable MIG (nvidia-smi -mig 0)"));
  }
  LockedClocks clocks;
  switch (spec.kind) {
    case ClockLockSpec::Kind::kMax:
      clocks.sm_mhz = gpu.max_sm_clock_mhz();
      break;
    case ClockLockSpec::Kind::kBase:
      clocks.sm_mhz = gpu.default_application_sm_clock_mhz();
      break;
    case ClockLockSpec::Kind::kExplicit:
      clocks.sm_mhz = spec.sm_mhz;
      clocks.memory_mhz = spec.memory_mhz;
      break;
  }
  if (clocks.sm_mhz <= 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--lock-clocks: nvidia-smi does not tell GPU ", gpu.index(), "'s ",
        spec.kind == ClockLockSpec::Kind::kBase ? "base (default application)" : "maximum",
        " clock; give it in MHz (--lock-clocks SM[,MEM])"));
  }
  return clocks;
}

bool LockedAs(const v1::RunnerIdentity& identity, const ClockLockSpec& spec) {
  if (identity.gpus_size() == 0) return false;
  for (const v1::GpuInfo& gpu : identity.gpus()) {
    absl::StatusOr<LockedClocks> target = LockTarget(spec, gpu);
    if (!target.ok() || gpu.locked_sm_clock_mhz() != target->sm_mhz) return false;
    if (target->memory_mhz > 0 && gpu.locked_memory_clock_mhz() != target->memory_mhz) {
      return false;
    }
  }
  return true;
}

absl::Status ClockLock::RestoreLeftover(CommandRunner* runner, const std::string& state_file) {
  std::error_code error;
  if (!std::filesystem::exists(state_file, error)) return absl::OkStatus();
  RETURN_IF_ERROR(Undo(runner, ReadState(state_file)));
  std::filesystem::remove(state_file, error);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ClockLock>> ClockLock::Apply(CommandRunner* runner,
                                                            const std::string& device,
                                                            const v1::GpuInfo& gpu,
                                                            const ClockLockSpec& spec,
                                                            const std::string& state_file) {
  ASSIGN_OR_RETURN(LockedClocks target, LockTarget(spec, gpu));
  // What is about to change, before it changes: a worker killed mid-lock is undone next start.
  const LockState state = {{"device", device},
                           {"sm", absl::StrCat(target.sm_mhz)},
                           {"memory", absl::StrCat(target.memory_mhz)},
                           {"persistence", gpu.persistence_mode()}};
  RETURN_IF_ERROR(WriteState(state_file, state));
  std::unique_ptr<ClockLock> lock(new ClockLock(runner, state_file, target));
  std::vector<std::string> changes;
  if (gpu.persistence_mode() == "Disabled") changes.push_back("--persistence-mode=1");
  changes.push_back(absl::StrCat("--lock-gpu-clocks=", target.sm_mhz, ",", target.sm_mhz));
  if (target.memory_mhz > 0) {
    changes.push_back(
        absl::StrCat("--lock-memory-clocks=", target.memory_mhz, ",", target.memory_mhz));
  }
  absl::Status locked = absl::OkStatus();
  int made = 0;
  for (const std::string& change : changes) {
    locked = NvidiaSmi(runner, {change}, device).status();
    if (!locked.ok()) break;
    ++made;
  }
  if (locked.ok()) locked = VerifyClocks(runner, device, target);
  if (locked.ok()) return lock;
  if (made == 0) {
    // Refused at the first change (an unprivileged user): nothing to undo.
    lock->restored_ = true;
    std::error_code error;
    std::filesystem::remove(state_file, error);
  } else {
    (void)lock->Restore();
  }
  return locked;
}

ClockLock::~ClockLock() { (void)Restore(); }

std::string ClockLockStateFile(const std::string& cache_dir, int slot) {
  return absl::StrCat(cache_dir, "/clock-lock/slot-", slot, ".state");
}

absl::StatusOr<std::unique_ptr<ClockLock>> LockSlotClocks(
    CommandRunner* runner, const std::string& cache_dir, int slot, const std::string& device,
    const std::optional<ClockLockSpec>& spec, v1::RunnerIdentity* identity, std::string* warning) {
  const std::string state_file = ClockLockStateFile(cache_dir, slot);
  if (absl::Status restored = ClockLock::RestoreLeftover(runner, state_file); !restored.ok()) {
    *warning = absl::StrCat("undoing the clock lock a stopped worker left (", state_file,
                            "): ", restored.message());
  }
  if (!spec.has_value()) return std::unique_ptr<ClockLock>();
  v1::GpuInfo* gpu = nullptr;
  for (v1::GpuInfo& candidate : *identity->mutable_gpus()) {
    if (absl::StrCat(candidate.index()) == device || candidate.uuid() == device) gpu = &candidate;
  }
  if (gpu == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--lock-clocks needs an NVIDIA GPU that nvidia-smi lists; it lists none as ", device));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<ClockLock> lock,
                   ClockLock::Apply(runner, device, *gpu, *spec, state_file));
  gpu->set_locked_sm_clock_mhz(lock->clocks().sm_mhz);
  gpu->set_locked_memory_clock_mhz(lock->clocks().memory_mhz);
  return lock;
}

absl::Status ClockLock::Restore() {
  if (restored_) return absl::OkStatus();
  restored_ = true;
  return RestoreLeftover(runner_, state_file_);
}

}  // namespace kbisect
