// Copyright 2026 The kbisect Authors.
//
// `--lock-clocks` (worker/clock_lock.h) against the scripted nvidia-smi (tests/fakes/nvidia-smi),
// which keeps the locked clocks and persistence mode in files, reads them back, refuses changes
// as an unprivileged user would, or accepts a lock that does not take.
#include "worker/clock_lock.h"

#include <stdlib.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/exec/exec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace {

using ::kbisect::testing::ReadFile;
using ::kbisect::testing::TempDir;
using ::kbisect::testing::WriteFile;
using ::testing::HasSubstr;

TEST(ClockLockSpecTest, BaseMaxOrMegahertz) {
  EXPECT_EQ(ParseClockLockSpec("max")->kind, ClockLockSpec::Kind::kMax);
  EXPECT_EQ(ParseClockLockSpec("base")->kind, ClockLockSpec::Kind::kBase);
  const absl::StatusOr<ClockLockSpec> both = ParseClockLockSpec("1410,2619");
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->sm_mhz, 1410);
  EXPECT_EQ(both->memory_mhz, 2619);
  EXPECT_EQ(ParseClockLockSpec("1410")->memory_mhz, 0);
  for (const char* bad : {"", "fast", "0", "1410,", "1410,2619,1", "-5"}) {
    EXPECT_EQ(ParseClockLockSpec(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

v1::GpuInfo H100(const std::string& persistence = "Disabled") {
  v1::GpuInfo gpu;
  gpu.set_model("NVIDIA H100 80GB HBM3");
  gpu.set_max_sm_clock_mhz(1980);
  gpu.set_default_application_sm_clock_mhz(1755);
  gpu.set_mig_mode("Disabled");
  gpu.set_persistence_mode(persistence);
  return gpu;
}

TEST(ClockLockSpecTest, TheTargetAndTheRefusalOnMig) {
  EXPECT_EQ(LockTarget(*ParseClockLockSpec("max"), H100())->sm_mhz, 1980);
  EXPECT_EQ(LockTarget(*ParseClockLockSpec("base"), H100())->sm_mhz, 1755);
  v1::GpuInfo mig = H100();
  mig.set_mig_mode("Enabled");
  const absl::StatusOr<LockedClocks> refused = LockTarget(*ParseClockLockSpec("max"), mig);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("MIG partition"));
  v1::GpuInfo unknown = H100();
  unknown.clear_max_sm_clock_mhz();
  EXPECT_THAT(LockTarget(*ParseClockLockSpec("max"), unknown).status().message(),
              HasSubstr("give it in MHz"));
}

class ClockLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = getenv("PATH");
    setenv("PATH", absl::StrCat(KBISECT_FAKES_DIR, ":", path_).c_str(), 1);
    setenv("FAKE_NVSMI_DIR", gpu_.path().c_str(), 1);
  }
  void TearDown() override { setenv("PATH", path_.c_str(), 1); }

  std::string Calls() { return ReadFile(gpu_.Join("calls")); }
  bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

  std::string path_;
  TempDir gpu_{"fake-gpu"};
  TempDir cache_{"clock-lock"};
  const std::string state_ = cache_.Join("clock-lock/slot-0.state");
  std::unique_ptr<CommandRunner> runner_ = NewSubprocessRunner();
};

// `kbisect submit --lock-clocks` picks the workers whose every GPU is locked as asked.
TEST(ClockLockSpecTest, AWorkerIsLockedAsAskedWhenEveryGpuIs) {
  v1::RunnerIdentity identity;
  *identity.add_gpus() = H100();
  *identity.add_gpus() = H100();
  EXPECT_FALSE(LockedAs(identity, *ParseClockLockSpec("max")));
  for (v1::GpuInfo& gpu : *identity.mutable_gpus()) gpu.set_locked_sm_clock_mhz(1980);
  EXPECT_TRUE(LockedAs(identity, *ParseClockLockSpec("max")));
  EXPECT_FALSE(LockedAs(identity, *ParseClockLockSpec("base")));
  EXPECT_TRUE(LockedAs(identity, *ParseClockLockSpec("1980")));
  EXPECT_FALSE(LockedAs(identity, *ParseClockLockSpec("1980,2619")));  // The memory is not.
  identity.mutable_gpus(1)->set_locked_sm_clock_mhz(0);
  EXPECT_FALSE(LockedAs(identity, *ParseClockLockSpec("max")));
  EXPECT_FALSE(LockedAs(v1::RunnerIdentity(), *ParseClockLockSpec("max")));
}

TEST_F(ClockLockTest, LocksVerifiesAndRestores) {
  {
    absl::StatusOr<std::unique_ptr<ClockLock>> lock =
        ClockLock::Apply(runner_.get(), "0", H100(), *ParseClockLockSpec("max"), state_);
    ASSERT_TRUE(lock.ok()) << lock.status();
    EXPECT_EQ((*lock)->clocks().sm_mhz, 1980);
    EXPECT_EQ(Calls(), "--persistence-mode=1\n--lock-gpu-clocks=1980,1980\n");
    EXPECT_TRUE(Exists(state_)) << "what it changed is on disk while it holds the lock";
  }
  EXPECT_EQ(Calls(),
            "--persistence-mode=1\n--lock-gpu-clocks=1980,1980\n--reset-gpu-clocks\n"
            "--persistence-mode=0\n");
  EXPECT_FALSE(Exists(state_));
  EXPECT_FALSE(Exists(gpu_.Join("locked-sm")));
  EXPECT_EQ(ReadFile(gpu_.Join("persistence")), "Disabled\n") << "as it was";
}

TEST_F(ClockLockTest, MemoryTooAndPersistenceLeftAsItWas) {
  absl::StatusOr<std::unique_ptr<ClockLock>> lock = ClockLock::Apply(
      runner_.get(), "0", H100("Enabled"), *ParseClockLockSpec("1410,2619"), state_);
  ASSERT_TRUE(lock.ok()) << lock.status();
  ASSERT_TRUE((*lock)->Restore().ok());
  EXPECT_EQ(Calls(),
            "--lock-gpu-clocks=1410,1410\n--lock-memory-clocks=2619,2619\n--reset-gpu-clocks\n"
            "--reset-memory-clocks\n");
}

TEST_F(ClockLockTest, ALockThatDoesNotTakeIsUndoneAndSaysWhatWasRead) {
  WriteFile(gpu_.Join("lock-ignored"), "");
  absl::StatusOr<std::unique_ptr<ClockLock>> lock =
      ClockLock::Apply(runner_.get(), "0", H100(), *ParseClockLockSpec("max"), state_);
  ASSERT_FALSE(lock.ok());
  EXPECT_THAT(lock.status().message(), HasSubstr("reads SM 345 MHz"));
  EXPECT_THAT(lock.status().message(), HasSubstr("undone"));
  EXPECT_THAT(Calls(), HasSubstr("--reset-gpu-clocks\n--persistence-mode=0\n"));
  EXPECT_FALSE(Exists(state_));
}

TEST_F(ClockLockTest, AnUnprivilegedUserIsToldAndNothingIsLeft) {
  WriteFile(gpu_.Join("not-root"), "");
  absl::StatusOr<std::unique_ptr<ClockLock>> lock =
      ClockLock::Apply(runner_.get(), "0", H100("Enabled"), *ParseClockLockSpec("max"), state_);
  ASSERT_FALSE(lock.ok());
  EXPECT_THAT(lock.status().message(), HasSubstr("does not have permission to change clocks"));
  EXPECT_FALSE(Exists(gpu_.Join("locked-sm")));
  EXPECT_FALSE(Exists(state_)) << "refused at the first change: nothing to undo next start";
}

// A worker killed with SIGKILL holding a lock leaves its state file; the next start undoes it.
TEST_F(ClockLockTest, ALockLeftByAKilledWorkerIsUndoneAtTheNextStart) {
  absl::StatusOr<std::unique_ptr<ClockLock>> lock =
      ClockLock::Apply(runner_.get(), "0", H100(), *ParseClockLockSpec("max"), state_);
  ASSERT_TRUE(lock.ok()) << lock.status();
  const std::string left = ReadFile(state_);
  // The next start, as if this process had died holding the lock (its destructor then finds
  // nothing left to undo).
  ASSERT_EQ(ReadFile(gpu_.Join("locked-sm")), "1980\n");
  ASSERT_TRUE(ClockLock::RestoreLeftover(runner_.get(), state_).ok());
  EXPECT_FALSE(Exists(gpu_.Join("locked-sm")));
  EXPECT_EQ(ReadFile(gpu_.Join("persistence")), "Disabled\n");
  EXPECT_FALSE(Exists(state_));
  EXPECT_TRUE(ClockLock::RestoreLeftover(runner_.get(), state_).ok()) << "nothing left: fine";
  EXPECT_THAT(left, HasSubstr("sm=1980"));
}

}  // namespace
}  // namespace kbisect
