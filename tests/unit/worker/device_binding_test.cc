// Copyright 2026 The kbisect Authors.
#include "worker/device_binding.h"

#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/worker_slot.h"

namespace kbisect {
namespace {

using ::testing::HasSubstr;
using Env = std::map<std::string, std::string>;

// What srun --ntasks-per-node=4 --gpus-per-task=1 gives task 2 of job 417, step 0, on gpu-07.
Env SlurmTask(const std::string& devices) {
  return {
      {"SLURM_JOB_ID", "417"},          {"SLURMD_NODENAME", "gpu-07"}, {"SLURM_STEP_ID", "0"},
      {"SLURM_LOCALID", "2"},           {"SLURM_PROCID", "6"},         {"SLURM_RESTART_COUNT", "1"},
      {"CUDA_VISIBLE_DEVICES", devices}};
}

TEST(DeviceBindingTest, WithoutASchedulerTheGpuFlagIsTheDevice) {
  absl::StatusOr<DeviceBinding> binding = ResolveDeviceBinding({{"HOME", "/root"}}, 3);
  ASSERT_TRUE(binding.ok()) << binding.status();
  EXPECT_EQ(binding->slot, 3);
  EXPECT_EQ(binding->visible_devices, "3");
  EXPECT_EQ(binding->probe_device, "3");
  EXPECT_EQ(binding->placement.scheduler(), "");
  EXPECT_EQ(binding->placement.device_variable(), "");
  EXPECT_EQ(binding->note, "");
  EXPECT_EQ(ResolveDeviceBinding({}, std::nullopt)->visible_devices, "0");
}

TEST(DeviceBindingTest, SlurmsBindingWinsOverGpuAndLocalIdIsTheSlot) {
  absl::StatusOr<DeviceBinding> binding = ResolveDeviceBinding(SlurmTask("5"), 0);
  ASSERT_TRUE(binding.ok()) << binding.status();
  EXPECT_EQ(binding->visible_devices, "5");
  EXPECT_EQ(binding->probe_device, "5");
  EXPECT_EQ(binding->slot, 2);
  EXPECT_THAT(binding->note, HasSubstr("--gpu 0 ignored"));
  const v1::SchedulerPlacement& p = binding->placement;
  EXPECT_EQ(p.scheduler(), "slurm");
  EXPECT_EQ(p.job_id(), "417");
  EXPECT_EQ(p.node(), "gpu-07");
  EXPECT_EQ(p.step_id(), "0");
  EXPECT_EQ(p.local_id(), 2);
  EXPECT_EQ(p.proc_id(), 6);
  EXPECT_EQ(p.restart_count(), 1);
  EXPECT_EQ(p.device_variable(), "CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(DefaultBoundWorkerName("gpu-07.cluster", *binding), "gpu-07/job417/slot2");
}

TEST(DeviceBindingTest, ALongerListIsKeptWholeOrNarrowedByGpu) {
  absl::StatusOr<DeviceBinding> whole = ResolveDeviceBinding(SlurmTask("4,5"), std::nullopt);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(whole->visible_devices, "4,5");
  EXPECT_EQ(whole->probe_device, "4");
  EXPECT_EQ(whole->note, "");
  absl::StatusOr<DeviceBinding> one = ResolveDeviceBinding(SlurmTask("4,5"), 1);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->visible_devices, "5");
  absl::StatusOr<DeviceBinding> beyond = ResolveDeviceBinding(SlurmTask("4,5"), 2);
  EXPECT_EQ(beyond.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(beyond.status().message(), HasSubstr("--gpu 2 is beyond the 2 devices"));
}

TEST(DeviceBindingTest, RocmVariablesAndUuidsAreBindingsToo) {
  absl::StatusOr<DeviceBinding> rocr =
      ResolveDeviceBinding({{"ROCR_VISIBLE_DEVICES", "3"}, {"HIP_VISIBLE_DEVICES", "0"}}, 0);
  ASSERT_TRUE(rocr.ok()) << rocr.status();
  EXPECT_EQ(rocr->visible_devices, "3");
  EXPECT_EQ(rocr->placement.device_variable(), "ROCR_VISIBLE_DEVICES");
  EXPECT_EQ(rocr->slot, 0) << "no SLURM_LOCALID: the slot stays --gpu";
  EXPECT_EQ(ResolveDeviceBinding({{"HIP_VISIBLE_DEVICES", "1"}}, std::nullopt)->visible_devices,
            "1");
  absl::StatusOr<DeviceBinding> uuid =
      ResolveDeviceBinding({{"CUDA_VISIBLE_DEVICES", "GPU-bbbb"}}, std::nullopt);
  ASSERT_TRUE(uuid.ok());
  EXPECT_EQ(uuid->probe_device, "GPU-bbbb");
  EXPECT_EQ(DefaultBoundWorkerName("node-a", *uuid), "node-a/slot0");
  EXPECT_EQ(ResolveDeviceBinding({{"CUDA_VISIBLE_DEVICES", ""}}, 2)->visible_devices, "2")
      << "an empty variable is no binding";
}

TEST(DeviceBindingTest, MalformedSlurmNumbersAreNamed) {
  Env env = SlurmTask("0");
  env["SLURM_LOCALID"] = "two";
  absl::StatusOr<DeviceBinding> binding = ResolveDeviceBinding(env, std::nullopt);
  EXPECT_EQ(binding.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(binding.status().message(), HasSubstr("SLURM_LOCALID=two"));
}

TEST(DeviceBindingTest, TheBoundGpuIsTheOneInTheIdentityAndTheEnvironment) {
  v1::RunnerIdentity host;
  host.set_host("gpu-07");
  host.set_gpu_vendor(v1::GPU_VENDOR_NVIDIA);
  for (int i = 0; i < 4; ++i) {
    v1::GpuInfo* gpu = host.add_gpus();
    gpu->set_index(i);
    gpu->set_model("NVIDIA H100");
    gpu->set_uuid(absl::StrCat("GPU-", i));
  }
  host.set_gpu_count(4);
  absl::StatusOr<DeviceBinding> binding = ResolveDeviceBinding(SlurmTask("3"), std::nullopt);
  ASSERT_TRUE(binding.ok());
  const v1::RunnerIdentity slot =
      SlotIdentity(host, binding->slot, {}, binding->probe_device, binding->visible_devices);
  EXPECT_EQ(slot.slot(), "2");
  EXPECT_EQ(slot.visible_devices(), "3");
  ASSERT_EQ(slot.gpus_size(), 1);
  EXPECT_EQ(slot.gpus(0).uuid(), "GPU-3") << "GPU 3, not the slot-th GPU";
  const v1::RunnerIdentity by_uuid = SlotIdentity(host, 0, {}, "GPU-1", "GPU-1");
  ASSERT_EQ(by_uuid.gpus_size(), 1);
  EXPECT_EQ(by_uuid.gpus(0).uuid(), "GPU-1");
  EXPECT_EQ(SlotEnvironment(2, "3").at("CUDA_VISIBLE_DEVICES"), "3");
  EXPECT_EQ(SlotEnvironment(2, "3").at("ROCR_VISIBLE_DEVICES"), "3");
  EXPECT_EQ(SlotEnvironment(2, "3").at("KBISECT_WORKER"), "2");
}

}  // namespace
}  // namespace kbisect

namespace kbisect {
namespace {

TEST(LocalSlotDevicesTest, KbisectRunInsideAnAllocationUsesTheBoundDevicesOnePerSlot) {
  // Slurm gave this process GPUs 2 and 3: slot 0 measures on 2, slot 1 on 3.
  const std::map<std::string, std::string> slurm = {{"CUDA_VISIBLE_DEVICES", "2,3"},
                                                    {"SLURM_JOB_ID", "77"}};
  absl::StatusOr<std::vector<std::string>> devices = LocalSlotDevices(slurm, 0);
  ASSERT_TRUE(devices.ok()) << devices.status();
  EXPECT_EQ(*devices, (std::vector<std::string>{"2", "3"}));
  devices = LocalSlotDevices(slurm, 1);
  ASSERT_TRUE(devices.ok());
  EXPECT_EQ(*devices, (std::vector<std::string>{"2"}));
  // Asking for more slots than the binding has would put two on one GPU.
  absl::StatusOr<std::vector<std::string>> too_many = LocalSlotDevices(slurm, 3);
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("binds 2 devices"), std::string::npos);
  // ROCm's variable when CUDA's is not set; without any, the slot numbers.
  devices = LocalSlotDevices({{"ROCR_VISIBLE_DEVICES", "GPU-aa, GPU-bb"}}, 2);
  ASSERT_TRUE(devices.ok());
  EXPECT_EQ(*devices, (std::vector<std::string>{"GPU-aa", "GPU-bb"}));
  devices = LocalSlotDevices({}, 3);
  ASSERT_TRUE(devices.ok());
  EXPECT_EQ(*devices, (std::vector<std::string>{"0", "1", "2"}));
}

}  // namespace
}  // namespace kbisect
