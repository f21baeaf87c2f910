// Copyright 2026 The kbisect Authors.
#include "common/manifest/manifest.h"

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(GlobMatchTest, StarsAndQuestionMarks) {
  EXPECT_TRUE(GlobMatch("benchmarks/**", "benchmarks/run.py"));
  EXPECT_TRUE(GlobMatch("benchmarks/**", "benchmarks/a/b/c.yml"));
  EXPECT_FALSE(GlobMatch("benchmarks/**", "src/benchmarks.py"));
  EXPECT_TRUE(GlobMatch("*.py", "run.py"));
  EXPECT_FALSE(GlobMatch("*.py", "a/run.py"));
  EXPECT_TRUE(GlobMatch("a/?.c", "a/b.c"));
  EXPECT_FALSE(GlobMatch("a/?.c", "a//.c"));
  EXPECT_TRUE(GlobMatch("**/*.yml", ".github/workflows/bench.yml"));
}

TEST(GlobCanMatchBelowTest, OnlyTheGlobsFixedLeadingDirectoriesPrune) {
  EXPECT_TRUE(GlobCanMatchBelow("benchmarks/**", "benchmarks"));
  EXPECT_TRUE(GlobCanMatchBelow("benchmarks/**", "benchmarks/sub/deeper"));
  EXPECT_FALSE(GlobCanMatchBelow("benchmarks/**", "src"));
  EXPECT_FALSE(GlobCanMatchBelow("benchmarks/**", "benchmarks2"));
  EXPECT_TRUE(GlobCanMatchBelow(".github/workflows/**", ".github"));
  EXPECT_FALSE(GlobCanMatchBelow(".github/workflows/**", ".github/actions"));
  // A wildcard in the first component, or before any '/', can match below any directory.
  EXPECT_TRUE(GlobCanMatchBelow("**/*.yml", "src/deep"));
  EXPECT_TRUE(GlobCanMatchBelow("bench*/x.py", "src"));
  EXPECT_TRUE(GlobCanMatchBelow("*.py", "src"));
  EXPECT_TRUE(GlobCanMatchBelow("tools/b?/run.sh", "tools/bx"));
  EXPECT_FALSE(GlobCanMatchBelow("tools/b?/run.sh", "src"));
}

TEST(CollectManifestTest, FindsHarnessFilesDeepBelowAndSkipsTheRestOfTheTree) {
  testing::TempDir dir("manifest-walk-test");
  ASSERT_EQ(testing::RunShell("mkdir -p " + dir.Join("src/benchmarks") + " " +
                              dir.Join("benchmarks/a/b") + " " + dir.Join("tools/bx"))
                .exit_code,
            0);
  Write(dir.Join("benchmarks/a/b/deep.py"), "deep\n");
  Write(dir.Join("src/benchmarks/not_harness.py"), "no\n");  // Not "benchmarks/**".
  Write(dir.Join("src/ci.yml"), "yes\n");                    // "**/*.yml" reaches it.
  Write(dir.Join("tools/bx/run.sh"), "yes\n");
  ManifestSpec spec;
  spec.harness_globs = {"benchmarks/**", "**/*.yml", "tools/b?/run.sh"};
  ManifestInputs in;
  in.dir = dir.path();
  absl::StatusOr<v1::MeasurementManifest> m = CollectManifest(spec, in);
  ASSERT_TRUE(m.ok()) << m.status();
  std::vector<std::string> paths;
  for (const v1::HarnessFile& f : m->harness_files()) paths.push_back(f.path());
  EXPECT_THAT(paths, ElementsAre("benchmarks/a/b/deep.py", "src/ci.yml", "tools/bx/run.sh"));
}

TEST(ManifestSpecTest, FromTheTaskEnvironment) {
  ManifestSpec spec =
      ManifestSpecFromEnv({{kManifestHarnessEnv, "bench/**, tools/*.sh"},
                           {kManifestEnvEnv, "HELION_AUTOTUNE_*,CUDA_LAUNCH_BLOCKING"},
                           {kManifestToolsEnv, "torch=python -c 1;bad"}});
  EXPECT_THAT(spec.harness_globs, ElementsAre("bench/**", "tools/*.sh"));
  EXPECT_THAT(spec.env_names, ElementsAre("HELION_AUTOTUNE_*", "CUDA_LAUNCH_BLOCKING"));
  ASSERT_EQ(spec.tool_commands.size(), 1u);
  EXPECT_EQ(spec.tool_commands.at("torch"), "python -c 1");
  EXPECT_THAT(ManifestSpecFromEnv({}).harness_globs,
              ElementsAre("benchmarks/**", "bench/**", ".github/workflows/**"));
}

TEST(CollectManifestTest, HashesHarnessFilesRecordsEnvAndTools) {
  testing::TempDir dir("manifest-test");
  ASSERT_EQ(testing::RunShell("mkdir -p " + dir.Join("benchmarks/sub") + " " +
                              dir.Join(".github/workflows") + " " + dir.Join("src") + " " +
                              dir.Join(".git"))
                .exit_code,
            0);
  Write(dir.Join("benchmarks/run.py"), "hello\n");
  Write(dir.Join("benchmarks/sub/shapes.json"), "[1]\n");
  Write(dir.Join(".github/workflows/bench.yml"), "on: push\n");
  Write(dir.Join("src/kernel.cu"), "kernel\n");
  Write(dir.Join("bench.sh"), "#!/bin/sh\n");
  Write(dir.Join(".git/config"), "x\n");
  setenv("HELION_AUTOTUNE_EFFORT", "quick", 1);
  std::unique_ptr<CommandRunner> runner = NewSubprocessRunner();
  ManifestSpec spec = ManifestSpec::Default();
  spec.env_names = {"HELION_AUTOTUNE_*", "MY_FLAG"};
  spec.tool_commands = {{"sh", "echo 1.2.3; echo more"}, {"missing", "exit 3"}};
  ManifestInputs in;
  in.dir = dir.path();
  in.bench_argv = {"./bench.sh", "--size", "4096"};
  in.env = {{"MY_FLAG", "1"}};
  in.runner = runner.get();
  v1::RunnerIdentity identity;
  auto* gpu = identity.add_gpus();
  gpu->set_model("NVIDIA H100");
  gpu->set_max_sm_clock_mhz(1980);
  gpu->set_power_limit_watts(700);
  identity.set_driver_version("550.54");
  in.identity = &identity;
  absl::StatusOr<v1::MeasurementManifest> m = CollectManifest(spec, in);
  ASSERT_TRUE(m.ok()) << m.status();
  std::vector<std::string> paths;
  for (const v1::HarnessFile& f : m->harness_files()) paths.push_back(f.path());
  EXPECT_THAT(paths, ElementsAre(".github/workflows/bench.yml", "bench.sh", "benchmarks/run.py",
                                 "benchmarks/sub/shapes.json"));
  EXPECT_EQ(m->harness_files(2).blob_id(), "ce013625030ba8dba906f756967f9e9ca394464a");
  EXPECT_EQ(m->env().at("HELION_AUTOTUNE_EFFORT"), "quick");
  EXPECT_EQ(m->env().at("MY_FLAG"), "1");
  EXPECT_EQ(m->tool_versions().at("sh"), "1.2.3");
  EXPECT_THAT(m->tool_versions().at("missing"), HasSubstr("unavailable (exited with code 3"));
  EXPECT_EQ(m->gpu_model(), "NVIDIA H100");
  EXPECT_EQ(m->max_sm_clock_mhz(), 1980);

  // The same tree gives the same digest; one changed harness file is named by the diff.
  absl::StatusOr<v1::MeasurementManifest> same = CollectManifest(spec, in);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->harness_digest(), m->harness_digest());
  EXPECT_THAT(DiffManifests(*m, *same), IsEmpty());
  Write(dir.Join("benchmarks/run.py"), "hello, timer\n");
  Write(dir.Join("src/kernel.cu"), "kernel v2\n");  // Not harness: not in the diff.
  absl::StatusOr<v1::MeasurementManifest> changed = CollectManifest(spec, in);
  ASSERT_TRUE(changed.ok());
  std::vector<ManifestChange> diff = DiffManifests(*m, *changed);
  ASSERT_EQ(diff.size(), 1u);
  EXPECT_EQ(diff[0].kind, ManifestChange::Kind::kHarnessFile);
  EXPECT_THAT(diff[0].Describe(), HasSubstr("benchmarks/run.py changed (ce01362 -> "));
  EXPECT_FALSE(diff[0].IsHardware());
  unsetenv("HELION_AUTOTUNE_EFFORT");

  EXPECT_EQ(CollectManifest(spec, ManifestInputs{}).status().code(), absl::StatusCode::kNotFound);
}

// A compiled benchmark: its executable and the objects beside it are build outputs whose hashes
// change with the kernel they link, so only the tracked source counts (decision 191).
TEST(CollectManifestTest, OnlyFilesTheCommitHoldsAreHarnessFiles) {
  testing::TempDir dir("manifest-tracked-test");
  const std::string git = "GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null git -C " + dir.path();
  ASSERT_EQ(testing::RunShell("git init -q " + dir.path() + " && mkdir -p " + dir.Join("bench") +
                              " " + dir.Join("build") + " " + dir.Join("src"))
                .exit_code,
            0);
  Write(dir.Join("bench/bench.c"), "int main(void) { return 0; }\n");
  Write(dir.Join("src/kernel.c"), "int k;\n");
  Write(dir.Join("Makefile"), "all:\n");
  ASSERT_EQ(testing::RunShell(git + " add -A && " + git +
                              " -c user.name=t -c user.email=t@t commit -q -m one")
                .exit_code,
            0);
  // What the build wrote: the benchmark, an object beside its source, an extension module.
  Write(dir.Join("build/bench"), "ELF v1\n");
  Write(dir.Join("bench/bench.o"), "object v1\n");
  Write(dir.Join("bench/_ext.so"), "module v1\n");
  ManifestInputs in;
  in.dir = dir.path();
  in.bench_argv = {"./build/bench", "--size", "4096"};
  in.tracked = TrackedInCommit(dir.path(), "HEAD");
  ASSERT_TRUE(in.tracked != nullptr);
  absl::StatusOr<v1::MeasurementManifest> m = CollectManifest(ManifestSpec::Default(), in);
  ASSERT_TRUE(m.ok()) << m.status();
  std::vector<std::string> paths;
  for (const v1::HarnessFile& f : m->harness_files()) paths.push_back(f.path());
  EXPECT_THAT(paths, ElementsAre("bench/bench.c"));

  // The kernel changed and the build rewrote its outputs: no method change.
  Write(dir.Join("build/bench"), "ELF v2\n");
  Write(dir.Join("bench/bench.o"), "object v2\n");
  Write(dir.Join("bench/_ext.so"), "module v2\n");
  absl::StatusOr<v1::MeasurementManifest> rebuilt = CollectManifest(ManifestSpec::Default(), in);
  ASSERT_TRUE(rebuilt.ok());
  EXPECT_THAT(DiffManifests(*m, *rebuilt), IsEmpty());
  // The benchmark's tracked source changed (its timer): a method change.
  Write(dir.Join("bench/bench.c"), "int main(void) { return 1; }\n");
  absl::StatusOr<v1::MeasurementManifest> timer = CollectManifest(ManifestSpec::Default(), in);
  ASSERT_TRUE(timer.ok());
  std::vector<ManifestChange> diff = DiffManifests(*m, *timer);
  ASSERT_EQ(diff.size(), 1u);
  EXPECT_EQ(diff[0].kind, ManifestChange::Kind::kHarnessFile);
  EXPECT_EQ(diff[0].name, "bench/bench.c");

  // Without a repository every file counts, as before.
  testing::TempDir plain("manifest-untracked-test");
  EXPECT_TRUE(TrackedInCommit(plain.path(), "HEAD") == nullptr);
}

TEST(DiffManifestsTest, ATrackedPackageIsADependencyNotATool) {
  v1::MeasurementManifest before;
  (*before.mutable_tool_versions())["package:torch"] = "2.8.0.dev20261110";
  (*before.mutable_tool_versions())["nvcc"] = "12.4";
  v1::MeasurementManifest after = before;
  (*after.mutable_tool_versions())["package:torch"] = "2.8.0.dev20261111";
  std::vector<ManifestChange> diff = DiffManifests(before, after);
  ASSERT_EQ(diff.size(), 1u);
  EXPECT_EQ(diff[0].kind, ManifestChange::Kind::kPackage);
  EXPECT_EQ(diff[0].Describe(), "torch: 2.8.0.dev20261110 -> 2.8.0.dev20261111");
  EXPECT_STREQ(ManifestChangeKindName(diff[0].kind), "package");
  EXPECT_FALSE(diff[0].IsHardware());
  (*after.mutable_tool_versions())["nvcc"] = "12.6";
  diff = DiffManifests(before, after);
  ASSERT_EQ(diff.size(), 2u);
  EXPECT_EQ(diff[0].kind, ManifestChange::Kind::kTool);
}

TEST(DiffManifestsTest, HardwareAfterMethodAndOlderManifestsAreNotCompared) {
  v1::MeasurementManifest a;
  a.set_harness_digest("d1");
  a.add_bench_command("./bench.sh");
  (*a.mutable_env())["HELION_AUTOTUNE_EFFORT"] = "full";
  a.set_gpu_uuid("GPU-1");
  a.set_gpu_model("H100");
  a.set_driver_version("550");
  a.set_sm_clock_mhz(1980);
  v1::MeasurementManifest b = a;
  (*b.mutable_env())["HELION_AUTOTUNE_EFFORT"] = "quick";
  b.set_gpu_uuid("GPU-2");
  b.set_throttled(true);
  b.set_sm_clock_mhz(1400);
  std::vector<ManifestChange> diff = DiffManifests(a, b);
  ASSERT_EQ(diff.size(), 4u);
  EXPECT_EQ(diff[0].Describe(), "HELION_AUTOTUNE_EFFORT: full -> quick");
  EXPECT_TRUE(diff[1].IsHardware());
  std::vector<std::string> names;
  for (const ManifestChange& c : diff) names.push_back(ManifestChangeKindName(c.kind));
  EXPECT_THAT(names, ElementsAre("env", "gpu", "clock", "clock"));
  // A manifest without GPU fields (an older worker) compares only what both have.
  v1::MeasurementManifest old = a;
  old.clear_gpu_uuid();
  old.clear_gpu_model();
  old.clear_driver_version();
  old.clear_sm_clock_mhz();
  EXPECT_THAT(DiffManifests(old, a), IsEmpty());
}

// Issue 49: ECC turned off (or a power limit lowered, clocks locked) is a hardware change the
// triage names, not a regression; a manifest from before settings were recorded is not compared.
TEST(DiffManifestsTest, AGpuSettingThatChangedIsHardware) {
  v1::MeasurementManifest a;
  a.set_gpu_model("H100");
  a.set_gpu_settings("ecc=Enabled;mig=Disabled");
  v1::MeasurementManifest b = a;
  b.set_gpu_settings("ecc=Disabled;mig=Disabled");
  const std::vector<ManifestChange> diff = DiffManifests(a, b);
  ASSERT_EQ(diff.size(), 1u);
  EXPECT_TRUE(diff[0].IsHardware());
  EXPECT_EQ(diff[0].Describe(),
            "GPU settings: ecc=Enabled;mig=Disabled -> ecc=Disabled;mig=Disabled");
  v1::MeasurementManifest old = a;
  old.clear_gpu_settings();
  EXPECT_THAT(DiffManifests(old, b), IsEmpty());
}

}  // namespace
}  // namespace kbisect
