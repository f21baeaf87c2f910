// Copyright 2026 The kbisect Authors.
//
// The pure builder behind `kbisect k8s-job`: the Job's name from a job id, the manifest's Kueue
// labels, partial admission, the class's GPU and node label, and the options it refuses. The
// manifest's YAML is parsed and checked against the batch/v1 schema in kueue_manifests_test.
#include "cli/k8s_job.h"

#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

TEST(K8sJobNameTest, ADnsSafeIdIsKeptAsItIs) {
  EXPECT_EQ(K8sJobName("job-a1b2c3-12"), "kbisect-job-a1b2c3-12");
}

TEST(K8sJobNameTest, AnIdThatIsNotDnsSafeIsCleanedAndHashed) {
  const std::string upper = K8sJobName("Job_A1.B2");
  EXPECT_THAT(upper, MatchesRegex("kbisect-job-a1-b2-[0-9a-f]{6}"));
  // Ids that clean to the same text keep apart.
  EXPECT_NE(upper, K8sJobName("job-a1-b2"));
  EXPECT_NE(upper, K8sJobName("job.a1.b2"));
  EXPECT_THAT(K8sJobName("!!!"), MatchesRegex("kbisect-[0-9a-f]{6}"));
  EXPECT_EQ(K8sJobName("Job_A1.B2"), upper) << "stable";
}

TEST(K8sJobNameTest, ALongIdIsCutToFitIndexedPodHostNames) {
  const std::string long_id(80, 'a');
  const std::string name = K8sJobName(long_id);
  EXPECT_LE(name.size(), 52u);
  EXPECT_THAT(name, MatchesRegex("kbisect-a+-[0-9a-f]{6}"));
  EXPECT_NE(name, K8sJobName(long_id + "b"));
  // Cut where the cleaned text had a '-': no "--" before the hash.
  EXPECT_THAT(K8sJobName(std::string(36, 'a') + "-bbbbbbbbbbbbbbbb"), Not(HasSubstr("--")));
}

TEST(K8sJobManifestTest, CarriesKueuesLabelsAndPartialAdmission) {
  K8sJobOptions options;
  options.job_id = "job-abc123-4";
  options.workers = 8;
  options.min_workers = 2;
  options.priority = "nightly";
  absl::StatusOr<std::string> manifest = K8sJobManifest(options);
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  EXPECT_THAT(*manifest, HasSubstr("apiVersion: batch/v1\nkind: Job\n"));
  EXPECT_THAT(*manifest, HasSubstr("name: \"kbisect-job-abc123-4\""));
  EXPECT_THAT(*manifest, HasSubstr("kueue.x-k8s.io/queue-name: \"kbisect\""));
  EXPECT_THAT(*manifest, HasSubstr("kueue.x-k8s.io/priority-class: \"kbisect-nightly\""));
  EXPECT_THAT(*manifest, HasSubstr("kueue.x-k8s.io/job-min-parallelism: \"2\""));
  EXPECT_THAT(*manifest, HasSubstr("kueue.x-k8s.io/job-completions-equal-parallelism: \"true\""));
  EXPECT_THAT(*manifest,
              HasSubstr("completionMode: Indexed\n  completions: 8\n  parallelism: 8\n"));
  EXPECT_THAT(*manifest, HasSubstr("suspend: true"));
  EXPECT_THAT(*manifest, HasSubstr("restartPolicy: Never"));
  EXPECT_THAT(*manifest,
              HasSubstr("- name: KBISECT_UNTIL_JOB\n              value: \"job-abc123-4\""));
  EXPECT_THAT(*manifest, HasSubstr("value: \"kbisect-coordinator.kbisect.svc:7070\""));
  EXPECT_THAT(*manifest, HasSubstr("nvidia.com/gpu: 1"));
  EXPECT_THAT(*manifest, HasSubstr("nvidia.com/gpu.product: \"NVIDIA-H100-80GB-HBM3\""));
  EXPECT_THAT(*manifest, HasSubstr("image: \"registry.example.com/kbisect:0.1.0\""));
}

TEST(K8sJobManifestTest, TheClassPicksTheGpuTheNodesAndTheImage) {
  K8sJobOptions options;
  options.job_id = "job-1";
  options.hardware_class = "mi300x";
  absl::StatusOr<std::string> amd = K8sJobManifest(options);
  ASSERT_TRUE(amd.ok()) << amd.status();
  EXPECT_THAT(*amd, HasSubstr("amd.com/gpu: 1"));
  EXPECT_THAT(*amd, Not(HasSubstr("nvidia.com/gpu")));
  EXPECT_THAT(*amd, HasSubstr("amd.com/gpu.product-name: \"AMD_Instinct_MI300X_OAM\""));
  EXPECT_THAT(*amd, HasSubstr("kbisect.dev/hardware-class: \"mi300x\""));
  EXPECT_THAT(*amd, HasSubstr(":0.1.0-rocm\""));
  options.hardware_class = "b200";
  options.image = "registry.corp/kbisect:2.0";
  absl::StatusOr<std::string> b200 = K8sJobManifest(options);
  ASSERT_TRUE(b200.ok()) << b200.status();
  EXPECT_THAT(*b200, HasSubstr("nvidia.com/gpu.product: \"NVIDIA-B200\""));
  EXPECT_THAT(*b200, HasSubstr("image: \"registry.corp/kbisect:2.0\""));
  std::set<std::string> names;
  for (const K8sHardwareClass& c : K8sHardwareClasses()) names.insert(c.name);
  EXPECT_EQ(names, (std::set<std::string>{"h100", "b200", "mi300x"}));
}

TEST(K8sJobManifestTest, AnIdWithQuotesOrNewlinesStaysOneScalar) {
  K8sJobOptions options;
  options.job_id = "job \"x\"\n# injected: true";
  absl::StatusOr<std::string> manifest = K8sJobManifest(options);
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  EXPECT_THAT(*manifest, HasSubstr("value: \"job \\\"x\\\"\\n# injected: true\""));
  EXPECT_THAT(*manifest, Not(HasSubstr("\n# injected")));
}

TEST(K8sJobManifestTest, RefusesWhatCannotRun) {
  const auto error = [](void (*change)(K8sJobOptions*)) {
    K8sJobOptions options;
    options.job_id = "job-1";
    options.workers = 4;
    change(&options);
    absl::StatusOr<std::string> manifest = K8sJobManifest(options);
    EXPECT_EQ(manifest.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(manifest.status().message());
  };
  EXPECT_THAT(error([](K8sJobOptions* o) { o->job_id = ""; }), HasSubstr("--job-id is required"));
  EXPECT_THAT(error([](K8sJobOptions* o) { o->workers = 0; }), HasSubstr("--workers 0"));
  EXPECT_THAT(error([](K8sJobOptions* o) { o->min_workers = 5; }),
              HasSubstr("--min-workers 5: between 1 and --workers (4)"));
  EXPECT_THAT(error([](K8sJobOptions* o) { o->min_workers = 0; }), HasSubstr("--min-workers 0"));
  EXPECT_THAT(error([](K8sJobOptions* o) { o->priority = "urgent"; }),
              HasSubstr("nightly or interactive"));
  EXPECT_THAT(error([](K8sJobOptions* o) { o->hardware_class = "a100"; }),
              HasSubstr("one of h100, b200, mi300x"));
  EXPECT_THAT(error([](K8sJobOptions* o) { o->queue = "Bad Queue"; }), HasSubstr("--queue"));
  EXPECT_THAT(error([](K8sJobOptions* o) { o->name = "Not_DNS"; }), HasSubstr("--name"));
  EXPECT_THAT(error([](K8sJobOptions* o) { o->coordinator = ""; }), HasSubstr("--coordinator"));
}

}  // namespace
}  // namespace kbisect
