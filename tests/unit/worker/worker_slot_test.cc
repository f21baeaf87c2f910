// Copyright 2026 The kbisect Authors.
#include "worker/worker_slot.h"

#include <cstdlib>

#include "common/identity/identity.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

TEST(SlotEnvironmentTest, PinsEveryVendorsDeviceVariableToTheSlot) {
  EXPECT_THAT(SlotEnvironment(3),
              ElementsAre(Pair("CUDA_VISIBLE_DEVICES", "3"), Pair("HIP_VISIBLE_DEVICES", "3"),
                          Pair("KBISECT_WORKER", "3"), Pair("ROCR_VISIBLE_DEVICES", "3")));
}

v1::RunnerIdentity TwoGpuHost() {
  v1::RunnerIdentity host;
  host.set_host("node-a");
  host.set_gpu_vendor(v1::GPU_VENDOR_NVIDIA);
  host.set_driver_version("570.86");
  host.set_cuda_version("12.8");
  for (const char* uuid : {"GPU-aaaa", "GPU-bbbb"}) {
    v1::GpuInfo* gpu = host.add_gpus();
    gpu->set_model("NVIDIA B200");
    gpu->set_uuid(uuid);
  }
  host.set_gpu_count(2);
  AssignHardwareClass(&host);
  return host;
}

TEST(SlotIdentityTest, KeepsOnlyTheSlotsGpuAndRecomputesTheClass) {
  const v1::RunnerIdentity host = TwoGpuHost();
  const v1::RunnerIdentity slot = SlotIdentity(host, 1);
  EXPECT_EQ(slot.slot(), "1");
  ASSERT_EQ(slot.gpus_size(), 1);
  EXPECT_EQ(slot.gpus(0).uuid(), "GPU-bbbb");
  EXPECT_EQ(slot.gpu_count(), 1);
  EXPECT_EQ(slot.host(), "node-a");
  EXPECT_NE(slot.hardware_class(), host.hardware_class()) << "the visible GPU count is a key";
  EXPECT_EQ(slot.hardware_class(), SlotIdentity(host, 0).hardware_class())
      << "two identical GPUs of one host are one class";
}

TEST(SlotIdentityTest, ASlotBeyondTheProbedGpusKeepsTheHostIdentity) {
  v1::RunnerIdentity cpu_only;
  cpu_only.set_cpu_model("AMD EPYC");
  cpu_only.set_cpu_cores(2);
  AssignHardwareClass(&cpu_only);
  const v1::RunnerIdentity slot = SlotIdentity(cpu_only, 4);
  EXPECT_EQ(slot.slot(), "4");
  EXPECT_EQ(slot.gpus_size(), 0);
  EXPECT_EQ(slot.hardware_class(), cpu_only.hardware_class());
}

TEST(WorkerNameTest, IsHostAndSlot) { EXPECT_EQ(DefaultWorkerName("node-a", 7), "node-a/slot7"); }

TEST(DefaultCacheDirTest, PrefersTheKbisectVariable) {
  setenv("KBISECT_CACHE_DIR", "/srv/kbisect-cache", 1);
  EXPECT_EQ(DefaultCacheDir(), "/srv/kbisect-cache");
  unsetenv("KBISECT_CACHE_DIR");
  setenv("XDG_CACHE_HOME", "/home/u/.xdg", 1);
  EXPECT_EQ(DefaultCacheDir(), "/home/u/.xdg/kbisect");
}

}  // namespace
}  // namespace kbisect
