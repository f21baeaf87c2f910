// Copyright 2026 The kbisect Authors.
#include "common/identity/identity.h"

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_command_runner.h"

namespace kbisect {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Returns the content of tests/fixtures/identity/`name` (captures in the tools' documented
// output formats), found through KBISECT_SOURCE_DIR as ctest sets it.
std::string Fixture(const std::string& name) {
  const char* env = std::getenv("KBISECT_SOURCE_DIR");
  const std::string root = env != nullptr && *env != '\0' ? env : KBISECT_IDENTITY_TEST_SOURCE_DIR;
  const std::string path = root + "/tests/fixtures/identity/" + name;
  std::ifstream in(path);
  std::stringstream content;
  content << in.rdbuf();
  if (content.str().empty()) ADD_FAILURE() << "missing or empty fixture " << path;
  return content.str();
}

// A runner that answers each vendor tool (argv[0], plus argv[1] for amd-smi) with a fixture and
// fails every other command as not installed.
FakeCommandRunner::Handler ToolHandler(std::map<std::string, std::string> outputs) {
  return [outputs](const ExecRequest& request) -> absl::StatusOr<ExecResult> {
    std::string tool = request.argv[0];
    if (tool == "amd-smi" && request.argv.size() > 1) tool += " " + request.argv[1];
    if (tool == "rocm-smi" && request.argv.size() > 1) tool += " " + request.argv[1];
    auto it = outputs.find(tool);
    if (it == outputs.end()) return absl::NotFoundError("command '" + tool + "' not found on PATH");
    return FakeCommandRunner::Exited(0, it->second);
  };
}

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

// Issue 49: the settings that change a measurement, as `nvidia-smi --query-gpu=<settings>
// --format=csv,noheader,nounits` prints them on an H100 (ECC on, power limit lowered by an
// administrator), an L40S with ECC off and a consumer card that reports none of them.
TEST(IdentityTest, GpuSettingsSplitTheHardwareClass) {
  std::vector<v1::GpuInfo> gpus(3);
  for (int i = 0; i < 3; ++i) {
    gpus[i].set_index(i);
    gpus[i].set_model("NVIDIA H100 80GB HBM3");
  }
  ParseNvidiaGpuSettings(
      "0, Enabled, Enabled, Disabled, Enabled, 500.00, 700.00, 1980, 1980\n"
      "1, Disabled, Enabled, [N/A], Enabled, 350.00, 350.00, 2520, 2520\n"
      "2, [N/A], [N/A], [N/A], Disabled, 450.00, 450.00, [N/A], [N/A]\n"
      "7, Enabled, Enabled, Disabled, Enabled, 700.00, 700.00, 1980, 1980\n",
      &gpus);
  EXPECT_EQ(gpus[0].ecc_mode(), "Enabled");
  EXPECT_EQ(gpus[0].mig_mode(), "Disabled");
  EXPECT_EQ(gpus[0].persistence_mode(), "Enabled");
  EXPECT_EQ(gpus[0].power_limit_watts(), 500);
  EXPECT_EQ(gpus[0].default_power_limit_watts(), 700);
  EXPECT_EQ(GpuSettingsKey(gpus[0]), "ecc=Enabled;mig=Disabled;power=500");
  EXPECT_EQ(gpus[1].ecc_mode_pending(), "Enabled");
  EXPECT_EQ(GpuSettingsKey(gpus[1]), "ecc=Disabled");
  EXPECT_EQ(GpuSettingsKey(gpus[2]), "");

  // Two H100s that differ only in ECC mode, or in a lowered power limit, are not one class.
  v1::RunnerIdentity a;
  a.set_gpu_count(1);
  a.set_driver_version("570.86");
  a.set_cuda_version("12.8");
  v1::GpuInfo* gpu = a.add_gpus();
  gpu->set_model("NVIDIA H100 80GB HBM3");
  gpu->set_ecc_mode("Enabled");
  gpu->set_power_limit_watts(700);
  gpu->set_default_power_limit_watts(700);
  v1::RunnerIdentity ecc_off = a;
  ecc_off.mutable_gpus(0)->set_ecc_mode("Disabled");
  v1::RunnerIdentity capped = a;
  capped.mutable_gpus(0)->set_power_limit_watts(500);
  v1::RunnerIdentity unknown = a;
  unknown.mutable_gpus(0)->clear_ecc_mode();
  unknown.mutable_gpus(0)->clear_default_power_limit_watts();
  for (v1::RunnerIdentity* identity : {&a, &ecc_off, &capped, &unknown}) {
    AssignHardwareClass(identity);
  }
  EXPECT_NE(a.hardware_class(), ecc_off.hardware_class());
  EXPECT_NE(a.hardware_class(), capped.hardware_class());
  EXPECT_THAT(a.hardware_class_label(), HasSubstr("CUDA 12.8, ECC on"));
  EXPECT_THAT(capped.hardware_class_label(), HasSubstr("power limit 500 W (default 700 W)"));
  // A host whose tool tells no setting keeps the class it had before settings were keys.
  v1::RunnerIdentity before = unknown;
  AssignHardwareClass(&before, {"gpu_model", "gpu_count", "driver", "toolkit"});
  EXPECT_EQ(unknown.hardware_class(), before.hardware_class());
}

TEST(IdentityTest, ParsesTheComputeProcessesOnAGpu) {
  EXPECT_THAT(ParseNvidiaComputeApps("4242, python3, 12034\n917, /usr/bin/ollama, [N/A]\n"
                                     "No running processes found\n"),
              ::testing::ElementsAre("pid 4242 python3 (12034 MiB)", "pid 917 /usr/bin/ollama"));
  EXPECT_TRUE(ParseNvidiaComputeApps("").empty());
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
      return FakeCommandRunner::Exited(
          2, "Field \"clocks_event_reasons.active\" is not a valid field to query.");
    }
    return FakeCommandRunner::Exited(0, "71, 1755, 0x0000000000000000\n");
  });
  std::optional<v1::GpuState> state = ProbeGpuState(&runner, "0");
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->sm_clock_mhz(), 1755);
  EXPECT_FALSE(state->throttled());
  EXPECT_EQ(runner.requests().size(), 2u);
}

TEST(IdentityTest, ParsesH100AndB200Fixtures) {
  std::string driver;
  std::vector<v1::GpuInfo> h100 =
      ParseNvidiaSmiQuery(Fixture("nvidia_smi_query_h100.csv"), &driver);
  ASSERT_EQ(h100.size(), 8u);
  EXPECT_EQ(driver, "550.54.15");
  EXPECT_EQ(h100[7].index(), 7);
  EXPECT_EQ(h100[7].model(), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(h100[7].serial(), "") << "[N/A] is left empty";
  EXPECT_EQ(h100[7].pci_bus_id(), "00000000:DB:00.0");
  EXPECT_EQ(ParseCudaVersion(Fixture("nvidia_smi_banner_h100.txt")), "12.4");

  std::vector<v1::GpuInfo> b200 =
      ParseNvidiaSmiQuery(Fixture("nvidia_smi_query_b200.csv"), &driver);
  ASSERT_EQ(b200.size(), 8u);
  EXPECT_EQ(driver, "570.124.06");
  EXPECT_EQ(b200[0].model(), "NVIDIA B200");
  EXPECT_EQ(b200[0].memory_total_mib(), 183359);
  EXPECT_EQ(b200[0].vbios_version(), "97.00.6C.00.02");
  EXPECT_DOUBLE_EQ(b200[0].power_limit_watts(), 1000.0);
  EXPECT_EQ(b200[3].uuid(), "GPU-a1b2c3d4-e5f6-7a8b-9c0d-1e2f3a4b5c03");
  EXPECT_EQ(ParseCudaVersion(Fixture("nvidia_smi_banner_b200.txt")), "12.8");
}

TEST(IdentityTest, ParsesAmdSmiStaticForMi300x) {
  std::string driver;
  std::vector<v1::GpuInfo> gpus = ParseAmdSmiStatic(Fixture("amd_smi_static_mi300x.json"), &driver);
  ASSERT_EQ(gpus.size(), 8u);
  EXPECT_EQ(driver, "6.7.0");
  EXPECT_EQ(gpus[0].model(), "AMD Instinct MI300X");
  EXPECT_EQ(gpus[0].serial(), "692251001124");
  EXPECT_EQ(gpus[0].pci_bus_id(), "0000:05:00.0");
  EXPECT_EQ(gpus[0].vbios_version(), "022.040.003.043.000001");
  EXPECT_EQ(gpus[0].memory_total_mib(), 196592);
  EXPECT_DOUBLE_EQ(gpus[0].power_limit_watts(), 750.0);
  // The defaults (ECC on, the cap at its maximum, the whole GPU) add nothing to the class.
  EXPECT_DOUBLE_EQ(gpus[0].default_power_limit_watts(), 750.0);
  EXPECT_EQ(GpuSettingsKey(gpus[0]), "");
  EXPECT_EQ(gpus[7].index(), 7);
  EXPECT_EQ(gpus[7].pci_bus_id(), "0000:e5:00.0");
}

TEST(IdentityTest, ParsesAmdSmiStaticVariants) {
  // Newer amd-smi wraps the list in "gpu_data"; older ones give sizes as "N MB" text; a warning
  // may precede the JSON; without a market name the device id names the model.
  constexpr char kWrapped[] =
      "WARNING: User is missing the following required groups: render\n"
      R"json({"gpu_data": [{"gpu": 2, "asic": {"market_name": "N/A", "device_id": "0x74a1"},
          "vram": {"size": "196592 MB"}, "driver": {"name": "amdgpu", "version": "6.8.5"},
          "vbios": {"version": "N/A"}}]})json";
  std::string driver;
  std::vector<v1::GpuInfo> gpus = ParseAmdSmiStatic(kWrapped, &driver);
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0].index(), 2);
  EXPECT_EQ(gpus[0].model(), "AMD GPU 0x74a1");
  EXPECT_EQ(gpus[0].memory_total_mib(), 196592);
  EXPECT_EQ(gpus[0].vbios_version(), "");
  EXPECT_EQ(driver, "6.8.5");
  EXPECT_TRUE(ParseAmdSmiStatic("amd-smi: command failed", &driver).empty());
  EXPECT_TRUE(ParseAmdSmiStatic("[{\"gpu\": 0, \"asic\": ", &driver).empty());
  // A lowered power cap, ECC off and a CPX/NPS4 partition each change the class.
  std::vector<v1::GpuInfo> changed = ParseAmdSmiStatic(
      R"json([{"gpu": 0, "asic": {"market_name": "AMD Instinct MI300X"},
          "limit": {"max_power": {"value": 750, "unit": "W"},
                    "socket_power": {"value": 600, "unit": "W"}},
          "ras": {"ecc_block_state": {"UMC": "DISABLED", "GFX": "ENABLED"}},
          "partition": {"compute_partition": "CPX", "memory_partition": "NPS4"}}])json",
      &driver);
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(GpuSettingsKey(changed[0]), "ecc=Disabled;mig=CPX/NPS4;power=600");
}

TEST(IdentityTest, ParsesAmdSmiMetricAndFlagsViolations) {
  const std::string metric = Fixture("amd_smi_metric_mi300x.json");
  std::optional<v1::GpuState> cool = ParseAmdSmiMetric(metric);
  ASSERT_TRUE(cool.has_value());
  EXPECT_DOUBLE_EQ(cool->temperature_c(), 41);
  EXPECT_EQ(cool->sm_clock_mhz(), 132);
  EXPECT_FALSE(cool->throttled());
  EXPECT_TRUE(cool->throttle_reasons().empty());
  std::optional<v1::GpuState> hot = ParseAmdSmiMetric(metric, 3);
  ASSERT_TRUE(hot.has_value());
  EXPECT_DOUBLE_EQ(hot->temperature_c(), 96);
  EXPECT_EQ(hot->sm_clock_mhz(), 1310);
  EXPECT_TRUE(hot->throttled());
  EXPECT_THAT(hot->throttle_reasons(), ElementsAre("ppt", "throttle_status"));
  EXPECT_DOUBLE_EQ(cool->power_watts(), 139);
  EXPECT_DOUBLE_EQ(cool->memory_temperature_c(), 34);
  EXPECT_FALSE(ParseAmdSmiMetric(metric, 8).has_value());
  // Later releases: a "violation" section with active_* fields.
  std::optional<v1::GpuState> later = ParseAmdSmiMetric(
      R"json([{"gpu": 0, "temperature": {"edge": 60, "hotspot": "N/A"},
           "clock": {"gfx_0": {"clk": {"value": 1800, "unit": "MHz"}}},
           "violation": {"active_prochot_thrm": "NOT ACTIVE",
                         "active_socket_thrm": "ACTIVE"}}])json");
  ASSERT_TRUE(later.has_value());
  EXPECT_DOUBLE_EQ(later->temperature_c(), 60);
  // Named as amd-smi 6.x names them, so both releases give one reason.
  EXPECT_THAT(later->throttle_reasons(), ElementsAre("socket_thermal"));
  EXPECT_TRUE(later->throttled());
}

TEST(IdentityTest, ParsesRocmSmiFixtures) {
  std::string driver;
  std::vector<v1::GpuInfo> gpus =
      ParseRocmSmiIdentity(Fixture("rocm_smi_identity_mi300x.json"), &driver);
  ASSERT_EQ(gpus.size(), 8u);
  EXPECT_EQ(driver, "6.7.0");
  EXPECT_EQ(gpus[0].model(), "AMD Instinct MI300X");
  EXPECT_EQ(gpus[5].index(), 5);
  EXPECT_EQ(gpus[5].serial(), "692251001129");
  EXPECT_EQ(gpus[0].vbios_version(), "022.040.003.043.000001");
  EXPECT_EQ(gpus[0].pci_bus_id(), "0000:05:00.0");

  std::optional<v1::GpuState> state = ParseRocmSmiState(Fixture("rocm_smi_state_mi300x.json"));
  ASSERT_TRUE(state.has_value());
  EXPECT_DOUBLE_EQ(state->temperature_c(), 41);
  EXPECT_EQ(state->sm_clock_mhz(), 132);
  EXPECT_FALSE(state->throttled());
  std::optional<v1::GpuState> throttled = ParseRocmSmiState(
      R"json({"card0": {"Temperature (Sensor edge) (C)": "88.0", "sclk clock speed:": "(1100Mhz)",
                    "throttle_status": "THROTTLED"}})json");
  ASSERT_TRUE(throttled.has_value());
  EXPECT_DOUBLE_EQ(throttled->temperature_c(), 88);
  EXPECT_TRUE(throttled->throttled());
  EXPECT_FALSE(ParseRocmSmiState("{}").has_value());
  EXPECT_FALSE(ParseRocmSmiState("not json").has_value());
}

TEST(IdentityTest, ParsesRocmVersionFile) {
  EXPECT_EQ(ParseRocmVersion(Fixture("rocm_info_version")), "6.2.0");
  EXPECT_EQ(ParseRocmVersion("6.3.1\n"), "6.3.1");
  EXPECT_EQ(ParseRocmVersion(""), "");
  EXPECT_EQ(ParseRocmVersion("garbage"), "");
}

TEST(IdentityTest, ProbeFallsBackFromNvidiaToAmdSmiToRocmSmi) {
  FakeCommandRunner amd_smi(ToolHandler({{"amd-smi static", Fixture("amd_smi_static_mi300x.json")},
                                         {"amd-smi metric", Fixture("amd_smi_metric_mi300x.json")},
                                         {"rocm-smi --showproductname", "must not be needed"}}));
  v1::RunnerIdentity amd = ProbeRunnerIdentity(&amd_smi, "");
  EXPECT_EQ(amd.gpu_vendor(), v1::GPU_VENDOR_AMD);
  EXPECT_EQ(amd.gpu_count(), 8);
  EXPECT_EQ(amd.driver_version(), "6.7.0");
  EXPECT_EQ(amd.gpus(0).model(), "AMD Instinct MI300X");
  EXPECT_THAT(amd.hardware_class_label(), HasSubstr("AMD Instinct MI300X x8, driver 6.7.0, ROCm"));
  EXPECT_EQ(amd_smi.requests()[0].argv[0], "nvidia-smi") << "NVIDIA is tried first";
  for (const ExecRequest& request : amd_smi.requests()) {
    EXPECT_NE(request.argv[0], "rocm-smi") << "amd-smi answered";
  }

  FakeCommandRunner rocm_smi(
      ToolHandler({{"rocm-smi --showproductname", Fixture("rocm_smi_identity_mi300x.json")},
                   {"rocm-smi --showtemp", Fixture("rocm_smi_state_mi300x.json")}}));
  v1::RunnerIdentity rocm = ProbeRunnerIdentity(&rocm_smi, "2");
  EXPECT_EQ(rocm.gpu_vendor(), v1::GPU_VENDOR_AMD);
  EXPECT_EQ(rocm.gpu_count(), 8);
  EXPECT_EQ(rocm.driver_version(), "6.7.0");
  EXPECT_THAT(rocm_smi.requests().back().argv, ::testing::Contains("2"));
  EXPECT_EQ(amd.hardware_class(), rocm.hardware_class()) << "same MI300X host, either tool";

  std::optional<v1::GpuState> state = ProbeGpuState(&amd_smi, "3");
  ASSERT_TRUE(state.has_value());
  EXPECT_DOUBLE_EQ(state->temperature_c(), 41) << "the fake ignores -g, so GPU 0 answers";
  std::optional<v1::GpuState> rocm_state = ProbeGpuState(&rocm_smi, "");
  ASSERT_TRUE(rocm_state.has_value());
  EXPECT_EQ(rocm_state->sm_clock_mhz(), 132);

  FakeCommandRunner none(ToolHandler({}));
  EXPECT_FALSE(ProbeGpuState(&none, "0").has_value());
  EXPECT_EQ(ProbeRunnerIdentity(&none, "0").gpu_vendor(), v1::GPU_VENDOR_NONE);
}

TEST(IdentityTest, ParsesHardwareClassKeys) {
  absl::StatusOr<std::vector<std::string>> keys = ParseHardwareClassKeys(" gpu_model,vbios , host");
  ASSERT_TRUE(keys.ok()) << keys.status();
  EXPECT_THAT(*keys, ElementsAre("gpu_model", "vbios", "host"));
  keys = ParseHardwareClassKeys("");
  ASSERT_TRUE(keys.ok());
  EXPECT_EQ(*keys, DefaultHardwareClassKeys());
  EXPECT_THAT(DefaultHardwareClassKeys(),
              ElementsAre("gpu_model", "gpu_count", "driver", "toolkit", "gpu_settings"));
  keys = ParseHardwareClassKeys("gpu_model,gpu_modle");
  ASSERT_FALSE(keys.ok());
  EXPECT_EQ(keys.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(keys.status().message()),
              HasSubstr("unknown hardware-class key 'gpu_modle'"));
  EXPECT_THAT(std::string(keys.status().message()), HasSubstr("vbios"));
}

TEST(IdentityTest, ConfigurableKeysDecideWhatSplitsAClass) {
  v1::RunnerIdentity a;
  a.set_gpu_vendor(v1::GPU_VENDOR_NVIDIA);
  a.add_gpus()->set_model("NVIDIA B200");
  a.mutable_gpus(0)->set_vbios_version("97.00.6C.00.02");
  a.set_gpu_count(1);
  a.set_driver_version("570.124.06");
  a.set_cuda_version("12.8");
  a.set_host("node-1");
  v1::RunnerIdentity b = a;
  b.mutable_gpus(0)->set_vbios_version("97.00.6C.00.05");
  AssignHardwareClass(&a);
  AssignHardwareClass(&b);
  EXPECT_EQ(a.hardware_class(), b.hardware_class()) << "VBIOS is not a default key";
  const std::string default_class = a.hardware_class();
  AssignHardwareClass(&a, {"gpu_model", "gpu_count", "driver", "toolkit"});
  EXPECT_EQ(a.hardware_class(), default_class) << "explicit defaults give the same fingerprint";
  EXPECT_EQ(a.hardware_class_label(), "NVIDIA B200 x1, driver 570.124.06, CUDA 12.8");

  const std::vector<std::string> with_vbios =
      *ParseHardwareClassKeys("toolkit,gpu_model,gpu_count,driver,vbios");
  AssignHardwareClass(&a, with_vbios);
  AssignHardwareClass(&b, with_vbios);
  EXPECT_NE(a.hardware_class(), b.hardware_class()) << "VBIOS is a key now";
  EXPECT_THAT(a.hardware_class_label(), HasSubstr("VBIOS 97.00.6C.00.02"));
  AssignHardwareClass(&b, *ParseHardwareClassKeys("vbios,toolkit,driver,gpu_count,gpu_model"));
  const std::string b_reordered = b.hardware_class();
  AssignHardwareClass(&b, with_vbios);
  EXPECT_EQ(b_reordered, b.hardware_class()) << "key order does not matter";

  v1::RunnerIdentity c = a;
  c.set_host("node-2");
  AssignHardwareClass(&a, {"gpu_model", "host"});
  AssignHardwareClass(&c, {"gpu_model", "host"});
  EXPECT_NE(a.hardware_class(), c.hardware_class());
  EXPECT_EQ(a.hardware_class_label(), "NVIDIA B200, host node-1");

  v1::RunnerIdentity cpu;
  cpu.set_cpu_model("AMD EPYC 9654");
  cpu.set_cpu_cores(192);
  cpu.set_kernel("6.8.0-45-generic");
  AssignHardwareClass(&cpu);
  EXPECT_EQ(cpu.hardware_class_label(), "CPU only: AMD EPYC 9654 (192 cores)");
  const std::string cpu_default = cpu.hardware_class();
  AssignHardwareClass(&cpu, {"vbios", "kernel"});
  EXPECT_NE(cpu.hardware_class(), cpu_default);
  EXPECT_EQ(cpu.hardware_class_label(),
            "CPU only: AMD EPYC 9654 (192 cores), kernel 6.8.0-45-generic");
}

}  // namespace
}  // namespace kbisect
