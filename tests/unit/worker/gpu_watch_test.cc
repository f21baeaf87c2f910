// Copyright 2026 The kbisect Authors.
//
// The GPU watched during a run (worker/gpu_watch.h): the summary and its policy, nvidia-smi's
// real output format, a scripted nvidia-smi streaming readings whose clock-event mask changes
// during the run (tests/fakes/nvidia-smi), and a stub libnvidia-ml with NVML's C ABI
// (tests/fakes/fake_nvml.cc). The fakes count their readings, so a test waits for the readings it
// needs instead of sleeping for them.
#include "worker/gpu_watch.h"

#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/exec/exec.h"
#include "common/identity/clock_events.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/git_fixture.h"
#include "tests/testing/process.h"

namespace kbisect {
namespace {

using ::kbisect::testing::ReadFile;
using ::kbisect::testing::TempDir;
using ::kbisect::testing::WaitFor;
using ::kbisect::testing::WriteFile;
using ::testing::ElementsAre;
using ::testing::Pair;

GpuSample Sample(uint64_t reasons, int sm_clock) {
  GpuSample s;
  s.reasons = reasons;
  s.sm_clock_mhz = sm_clock;
  s.gpu_temp_c = 60 + sm_clock % 10;
  return s;
}

TEST(SummarizeRunTest, TheReasonsSeenTheirSharesAndTheClocks) {
  const GpuRunSummary summary = SummarizeRun(
      {Sample(0x0, 1980), Sample(0x8, 1005), Sample(0x8 | 0x4, 1100), Sample(0x0, 1975)});
  EXPECT_EQ(summary.samples, 4);
  EXPECT_EQ(summary.reasons_seen, 0xCu);
  EXPECT_THAT(summary.reason_shares,
              ElementsAre(Pair("sw_power_cap", 0.25), Pair("hw_slowdown", 0.5)));
  EXPECT_EQ(summary.min_sm_clock_mhz, 1005);
  EXPECT_EQ(summary.median_sm_clock_mhz, 1975);
  EXPECT_TRUE(summary.hardware_slowdown());
  EXPECT_FALSE(summary.software_limit());
  EXPECT_EQ(summary.max_gpu_temp_c, 65);
}

TEST(SummarizeRunTest, ASoftwareCapIsFlaggedAndAHardwareSlowdownIsNotTrusted) {
  const v1::GpuState capped = ToGpuState(SummarizeRun({Sample(0x4, 1800), Sample(0x1, 1980)}));
  EXPECT_THAT(capped.throttle_reasons(), ElementsAre("gpu_idle", "sw_power_cap"));
  EXPECT_FALSE(capped.throttled());
  EXPECT_EQ(capped.sm_clock_mhz(), 1800);
  const v1::GpuState braked = ToGpuState(SummarizeRun({Sample(0x80, 700)}));
  EXPECT_THAT(braked.throttle_reasons(), ElementsAre("hw_power_brake_slowdown"));
  EXPECT_TRUE(braked.throttled());
  const GpuRunSummary none = SummarizeRun({});
  EXPECT_EQ(none.samples, 0);
  EXPECT_FALSE(none.hardware_slowdown());
  EXPECT_FALSE(ToGpuState(none).throttled());
}

// Lines as `nvidia-smi --query-gpu=... --format=csv,noheader,nounits` prints them: values it
// cannot read are "[N/A]" or "[Not Supported]"; error text and a cut-off line are skipped.
TEST(ParseNvidiaSmiWatchTest, ReadsTheRealFormat) {
  const std::vector<GpuSample> samples = ParseNvidiaSmiWatch(
      "0x0000000000000000, 1980, 2619, 85.12, 34, 45\n"
      "0x0000000000000048, 1410, 2619, 699.87, 88, [N/A]\n"
      "0x0000000000000004, [Not Supported], [N/A], [N/A], 51, N/A\n"
      "Unable to determine the device handle for GPU0000:17:00.0: Unknown Error\n"
      "0x00000000000000");
  ASSERT_EQ(samples.size(), 3u);
  EXPECT_EQ(samples[0].sm_clock_mhz, 1980);
  EXPECT_EQ(samples[0].mem_temp_c, 45);
  EXPECT_EQ(samples[1].reasons, 0x48u);
  EXPECT_DOUBLE_EQ(samples[1].power_w, 699.87);
  EXPECT_EQ(samples[1].mem_temp_c, -1);
  EXPECT_EQ(samples[2].sm_clock_mhz, -1);
  EXPECT_EQ(samples[2].power_w, -1);
  EXPECT_EQ(samples[2].gpu_temp_c, 51);
}

// The number of readings a fake wrote into `dir`/readings.
int Readings(const TempDir& dir) {
  int n = 0;
  for (absl::string_view line : absl::StrSplit(ReadFile(dir.Join("readings")), '\n')) {
    n += line.empty() ? 0 : 1;
  }
  return n;
}

class NvidiaSmiWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = getenv("PATH");
    setenv("PATH", absl::StrCat(KBISECT_FAKES_DIR, ":", path_).c_str(), 1);
    setenv("FAKE_NVSMI_DIR", tmp_.path().c_str(), 1);
    options_.nvml_library = "";  // nvidia-smi only.
    options_.runner = runner_.get();
    options_.device = "0";
    options_.period = absl::Milliseconds(20);
  }
  void TearDown() override { setenv("PATH", path_.c_str(), 1); }

  std::string path_;
  TempDir tmp_{"gpu-watch"};
  std::unique_ptr<CommandRunner> runner_ = NewSubprocessRunner();
  GpuWatchOptions options_;
};

// The GPU is clean when the run starts and after it, throttled (HwSlowdown) in its middle.
TEST_F(NvidiaSmiWatchTest, AGpuThrottledOnlyDuringTheRunIsCaught) {
  GpuWatcher watcher = GpuWatcher::Detect(options_);
  ASSERT_TRUE(watcher.available());
  EXPECT_EQ(watcher.source(), "nvidia-smi");
  WriteFile(tmp_.Join("masks"),
            "0x0000000000000000\n0x0000000000000000\n0x0000000000000008\n"
            "0x0000000000000008\n0x0000000000000000\n");
  WriteFile(tmp_.Join("readings"), "");
  std::unique_ptr<GpuWatch> watch = watcher.Watch();
  ASSERT_NE(watch, nullptr);
  ASSERT_TRUE(WaitFor([&] { return Readings(tmp_) >= 6; }, std::chrono::seconds(20)));
  const GpuRunSummary summary = watch->Stop();
  EXPECT_EQ(summary.source, "nvidia-smi");
  EXPECT_GE(summary.samples, 6);
  EXPECT_TRUE(summary.hardware_slowdown()) << summary.Describe();
  ASSERT_EQ(summary.reason_shares.size(), 1u);
  EXPECT_EQ(summary.reason_shares[0].first, "hw_slowdown");
  EXPECT_DOUBLE_EQ(summary.reason_shares[0].second, 2.0 / summary.samples);
  EXPECT_EQ(summary.min_sm_clock_mhz, 1980);
  // Read once after the run, the same GPU is clean: the reason the watch exists.
  EXPECT_FALSE(ToGpuState(SummarizeRun({Sample(0x0, 1980)})).throttled());
  EXPECT_TRUE(ToGpuState(summary).throttled());
}

TEST_F(NvidiaSmiWatchTest, ADriverBefore535IsAskedForThrottleReasons) {
  WriteFile(tmp_.Join("legacy"), "");
  WriteFile(tmp_.Join("masks"), "0x0000000000000020\n");
  GpuWatcher watcher = GpuWatcher::Detect(options_);
  ASSERT_TRUE(watcher.available());
  WriteFile(tmp_.Join("readings"), "");
  std::unique_ptr<GpuWatch> watch = watcher.Watch();
  ASSERT_TRUE(WaitFor([&] { return Readings(tmp_) >= 2; }, std::chrono::seconds(20)));
  const GpuRunSummary summary = watch->Stop();
  EXPECT_TRUE(summary.software_limit()) << summary.Describe();
  EXPECT_FALSE(summary.hardware_slowdown());
}

TEST_F(NvidiaSmiWatchTest, WithoutADriverNothingIsWatched) {
  WriteFile(tmp_.Join("no-driver"), "");
  GpuWatcher watcher = GpuWatcher::Detect(options_);
  EXPECT_FALSE(watcher.available());
  EXPECT_EQ(watcher.Watch(), nullptr);
  options_.runner = nullptr;
  EXPECT_FALSE(GpuWatcher::Detect(options_).available());
}

class NvmlWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("FAKE_NVML_DIR", tmp_.path().c_str(), 1);
    options_.nvml_library = KBISECT_FAKE_NVML;
    options_.period = absl::Milliseconds(10);
  }
  TempDir tmp_{"nvml-watch"};
  GpuWatchOptions options_;
};

TEST_F(NvmlWatchTest, TheDriversLibraryIsSampledDuringTheRun) {
  WriteFile(tmp_.Join("masks"), "0x0\n0x40\n0x40\n0x0\n");
  for (const std::string device : {"0", "GPU-fake-0", ""}) {
    SCOPED_TRACE(device);
    WriteFile(tmp_.Join("readings"), "");
    options_.device = device;
    GpuWatcher watcher = GpuWatcher::Detect(options_);
    ASSERT_TRUE(watcher.available());
    EXPECT_EQ(watcher.source(), "nvml");
    std::unique_ptr<GpuWatch> watch = watcher.Watch();
    ASSERT_NE(watch, nullptr);
    ASSERT_TRUE(WaitFor([&] { return Readings(tmp_) >= 5; }, std::chrono::seconds(20)));
    const GpuRunSummary summary = watch->Stop();
    EXPECT_EQ(summary.source, "nvml");
    EXPECT_GE(summary.samples, 5);
    EXPECT_TRUE(summary.hardware_slowdown()) << summary.Describe();
    EXPECT_EQ(summary.min_sm_clock_mhz, 1980);
    EXPECT_EQ(summary.max_power_w, 312.45);
    EXPECT_EQ(summary.max_gpu_temp_c, 71);
  }
}

TEST_F(NvmlWatchTest, AnotherDeviceAMissingLibraryOrNoDriverWatchNothing) {
  options_.device = "3";
  EXPECT_FALSE(GpuWatcher::Detect(options_).available());
  options_.device = "0";
  options_.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  EXPECT_FALSE(GpuWatcher::Detect(options_).available());
  options_.nvml_library = KBISECT_FAKE_NVML;
  WriteFile(tmp_.Join("no-gpu"), "");
  EXPECT_FALSE(GpuWatcher::Detect(options_).available());
}

// An AMD GPU (tests/fakes/amd-smi, no NVIDIA driver): amd-smi polled during the run.
class AmdSmiWatchTest : public NvidiaSmiWatchTest {
 protected:
  void SetUp() override {
    NvidiaSmiWatchTest::SetUp();
    WriteFile(tmp_.Join("no-driver"), "");  // nvidia-smi cannot reach a driver.
    setenv("FAKE_AMDSMI_DIR", amd_.path().c_str(), 1);
  }
  TempDir amd_{"amd-smi"};
};

TEST(ParseAmdSmiWatchTest, ReadsTheViolationsClocksPowerAndTemperatures) {
  const std::string json = R"json([{"gpu": 1,
      "power": {"socket_power": {"value": 612, "unit": "W"}, "throttle_status": "UNTHROTTLED"},
      "clock": {"gfx_0": {"clk": {"value": 1310, "unit": "MHz"}}},
      "temperature": {"edge": "N/A", "hotspot": {"value": 96, "unit": "C"},
                      "mem": {"value": 80, "unit": "C"}},
      "violation": {"active_ppt_pwr": "ACTIVE", "active_prochot_thrm": "NOT ACTIVE"}}])json";
  const std::optional<GpuSample> sample = ParseAmdSmiWatch(json, 1);
  ASSERT_TRUE(sample.has_value());
  EXPECT_EQ(sample->reasons, ClockEventBit("ppt"));
  EXPECT_EQ(sample->sm_clock_mhz, 1310);
  EXPECT_DOUBLE_EQ(sample->power_w, 612);
  EXPECT_DOUBLE_EQ(sample->gpu_temp_c, 96);
  EXPECT_DOUBLE_EQ(sample->mem_temp_c, 80);
  EXPECT_FALSE(ParseAmdSmiWatch(json, 0).has_value());
  EXPECT_FALSE(ParseAmdSmiWatch("AMDSMI_STATUS_DRIVER_NOT_LOADED", -1).has_value());
}

// PROCHOT only while the benchmark runs is a hardware slowdown: not trusted, as on NVIDIA.
TEST_F(AmdSmiWatchTest, AGpuThrottledOnlyDuringTheRunIsCaught) {
  GpuWatcher watcher = GpuWatcher::Detect(options_);
  ASSERT_TRUE(watcher.available());
  EXPECT_EQ(watcher.source(), "amd-smi");
  WriteFile(amd_.Join("readings"), "");
  std::unique_ptr<GpuWatch> watch = watcher.Watch();
  ASSERT_NE(watch, nullptr);
  ASSERT_TRUE(WaitFor([&] { return Readings(amd_) >= 1; }, std::chrono::seconds(20)));
  WriteFile(amd_.Join("throttled"), "");  // The benchmark heats the GPU...
  ASSERT_TRUE(WaitFor([&] { return Readings(amd_) >= 2; }, std::chrono::seconds(20)));
  std::remove(amd_.Join("throttled").c_str());  // ...and it is clean again when it ends.
  const GpuRunSummary summary = watch->Stop();
  EXPECT_EQ(summary.source, "amd-smi");
  EXPECT_GE(summary.samples, 3);
  EXPECT_TRUE(summary.hardware_slowdown()) << summary.Describe();
  ASSERT_FALSE(summary.reason_shares.empty());
  EXPECT_EQ(summary.reason_shares[0].first, "prochot");
  EXPECT_EQ(summary.min_sm_clock_mhz, 800);
  EXPECT_DOUBLE_EQ(summary.max_power_w, 612);
  EXPECT_DOUBLE_EQ(summary.max_mem_temp_c, 66);
  EXPECT_TRUE(ToGpuState(summary).throttled());
}

// The package power limit (PPT) caps the clocks the way NVIDIA's sw_power_cap does: flagged.
TEST_F(AmdSmiWatchTest, APowerLimitIsFlaggedNotRerunAndNoDriverWatchesNothing) {
  WriteFile(amd_.Join("violations"), "ppt\n");
  GpuWatcher watcher = GpuWatcher::Detect(options_);
  ASSERT_TRUE(watcher.available());
  std::unique_ptr<GpuWatch> watch = watcher.Watch();
  const GpuRunSummary summary = watch->Stop();
  EXPECT_TRUE(summary.software_limit()) << summary.Describe();
  EXPECT_FALSE(summary.hardware_slowdown());
  EXPECT_FALSE(ToGpuState(summary).throttled());
  WriteFile(amd_.Join("no-driver"), "");
  EXPECT_FALSE(GpuWatcher::Detect(options_).available());
}

}  // namespace
}  // namespace kbisect
