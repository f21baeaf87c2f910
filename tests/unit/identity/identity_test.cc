// Copyright 2026 The kbisect Authors.
#include "common/identity/identity.h"

#include "common/exec/fake_command_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using ::testing::HasSubstr;

// `nvidia-smi --query-gpu=index,name,uuid,serial,pci.bus_id,driver_version,vbios_version,
// memory.total,power.limit,clocks.max.sm,clocks.max.mem --format=csv,noheader,nounits` on a
// two-GPU H100 host, in the documented CSV format.
constexpr char kH100Query[] =
    "0, NVIDIA H100 80GB HBM3, GPU-5c2a8d4e-1f3b-4c6d-9e8f-0a1b2c3d4e5f, 1652922012345, "
    "00000000:18:00.0, 550.54.15, 96.00.99.00.01, 81559, 700.00, 1980, 2619\n"
    "1, NVIDIA H100 80GB HBM3, GPU-7d3b9e5f-2a4c-5d7e-0f9a-1b2c3d4e5f6a, [N/A], "
    "00000000:2A:00.0, 550.54.15, 96.00.99.00.01, 81559, 700.00, 1980, 2619\n";

constexpr char kBanner[] =
    "+-----------------------------------------------------------------------------------------+\n"
    "| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |\n"
    "|-----------------------------------------+------------------------+----------------------+\n";

TEST(IdentityTest, ParsesNvidiaSmiQuery) {
  std::string driver;
  std::vector<v1::GpuInfo> gpus = ParseNvidiaSmiQuery(kH100Query, &driver);
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(driver, "550.54.15");
  EXPECT_EQ(gpus[0].model(), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpus[0].uuid(), "GPU-5c2a8d4e-1f3b-4c6d-9e8f-0a1b2c3d4e5f");
  EXPECT_EQ(gpus[0].serial(), "1652922012345");
  EXPECT_EQ(gpus[0].pci_bus_id(), "00000000:18:00.0");
  EXPECT_EQ(gpus[0].memory_total_mib(), 81559);
  EXPECT_DOUBLE_EQ(gpus[0].power_limit_watts(), 700.0);
  EXPECT_EQ(gpus[0].max_sm_clock_mhz(), 1980);
  EXPECT_EQ(gpus[1].index(), 1);
  EXPECT_EQ(gpus[1].serial(), "") << "[N/A] is left empty";
}

TEST(IdentityTest, ParsesCudaVersionFromTheBanner) {
  EXPECT_EQ(ParseCudaVersion(kBanner), "12.4");
  EXPECT_EQ(ParseCudaVersion("no banner"), "");
}

TEST(IdentityTest, HardwareClassDependsOnClassKeysOnly) {
  v1::RunnerIdentity a;
  a.add_gpus()->set_model("NVIDIA B200");
  a.set_gpu_count(1);
  a.set_driver_version("570.86");
  a.set_cuda_version("12.8");
  a.set_host("node-1");
  v1::RunnerIdentity b = a;
  b.set_host("node-2");
  b.mutable_gpus(0)->set_uuid("GPU-other");
  AssignHardwareClass(&a);
  AssignHardwareClass(&b);
  EXPECT_EQ(a.hardware_class(), b.hardware_class());
  EXPECT_THAT(a.hardware_class_label(), HasSubstr("NVIDIA B200 x1, driver 570.86, CUDA 12.8"));
  v1::RunnerIdentity c = b;
  c.set_driver_version("575.00");
  AssignHardwareClass(&c);
  EXPECT_NE(a.hardware_class(), c.hardware_class()) << "a driver update is another class";
}

TEST(IdentityTest, ProbeUsesNvidiaSmiWhenPresentAndDegradesWithout) {
  FakeCommandRunner runner;
  runner.SetHandler([](const ExecRequest& request) -> absl::StatusOr<ExecResult> {
    if (request.argv.size() > 1) return FakeCommandRunner::Exited(0, kH100Query);
    return FakeCommandRunner::Exited(0, kBanner);
  });
  v1::RunnerIdentity gpu = ProbeRunnerIdentity(&runner, "1");
  EXPECT_EQ(gpu.gpu_vendor(), v1::GPU_VENDOR_NVIDIA);
  EXPECT_EQ(gpu.gpu_count(), 2);
  EXPECT_EQ(gpu.cuda_version(), "12.4");
  EXPECT_EQ(gpu.slot(), "1");
  EXPECT_THAT(runner.requests()[0].argv, ::testing::Contains("--id=1"));

  FakeCommandRunner missing;
  missing.SetHandler([](const ExecRequest& request) -> absl::StatusOr<ExecResult> {
    return absl::NotFoundError("command 'nvidia-smi' not found on PATH");
  });
  v1::RunnerIdentity cpu = ProbeRunnerIdentity(&missing, "");
  EXPECT_EQ(cpu.gpu_vendor(), v1::GPU_VENDOR_NONE);
  EXPECT_EQ(cpu.gpus_size(), 0);
  EXPECT_FALSE(cpu.host().empty());
  EXPECT_FALSE(cpu.kernel().empty());
  EXPECT_THAT(cpu.hardware_class_label(), HasSubstr("CPU only"));
  EXPECT_EQ(CountLocalGpus(&missing), 0);
}

TEST(IdentityTest, ParsesGpuStateAndDecodesThrottleReasons) {
  // 0x44 = sw_power_cap (0x4) + hw_thermal_slowdown (0x40), as on a hot, power-capped H100.
  std::optional<v1::GpuState> hot = ParseNvidiaGpuState("83, 1410, 0x0000000000000044\n");
  ASSERT_TRUE(hot.has_value());
  EXPECT_DOUBLE_EQ(hot->temperature_c(), 83);
  EXPECT_EQ(hot->sm_clock_mhz(), 1410);
  EXPECT_THAT(hot->throttle_reasons(),
              ::testing::ElementsAre("sw_power_cap", "hw_thermal_slowdown"));
  EXPECT_TRUE(hot->throttled());
  // Idle is a reason but not a throttle.
  std::optional<v1::GpuState> idle = ParseNvidiaGpuState("35, 1980, 0x0000000000000001");
  ASSERT_TRUE(idle.has_value());
  EXPECT_FALSE(idle->throttled());
  EXPECT_FALSE(ParseNvidiaGpuState("[N/A], [N/A], [N/A]").has_value());
  EXPECT_FALSE(ParseNvidiaGpuState("").has_value());
}

TEST(IdentityTest, ProbeGpuStateFallsBackToTheOlderFieldName) {
  FakeCommandRunner runner;
  runner.SetHandler([](const ExecRequest& request) -> absl::StatusOr<ExecResult> {
    // Drivers before 535 do not know clocks_event_reasons.
    if (request.argv[1].find("clocks_event_reasons") != std::string::npos) {
      return FakeCommandRunner::Exited(2, "Field \"clocks_event_reasons.active\" is not a valid field to query.");
    }
    return FakeCommandRunner::Exited(0, "71, 1755, 0x0000000000000000\n");
  });
  std::optional<v1::GpuState> state = ProbeGpuState(&runner, "0");
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->sm_clock_mhz(), 1755);
  EXPECT_FALSE(state->throttled());
  EXPECT_EQ(runner.requests().size(), 2u);
}

}  // namespace
}  // namespace kbisect
