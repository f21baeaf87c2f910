// Copyright 2026 The kbisect Authors.
//
// The Kueue manifests render and validate: deploy/k8s/kueue (ResourceFlavors, the ClusterQueue,
// the LocalQueue, the WorkloadPriorityClasses) and deploy/k8s/overlays/kueue rendered with
// `kubectl kustomize`, and `kbisect k8s-job`'s Job for every hardware class, each run through
// tests/integration/k8s_schema_check.py. There is no API server here, so `kubectl create
// --dry-run=client` cannot validate, and Debian packages no offline validator: the script checks
// the batch/v1 Job (Kubernetes 1.28's fields) and kueue.x-k8s.io/v1beta1 schemas' required
// fields, unknown fields, enums, names, labels and quantities explicitly. Then this test checks
// what ties them together: the Job's queue and priority class exist, its node selector is its
// class's flavor's node label, and the flavors cover its GPU. Skipped without kubectl or
// Python's yaml module.
#include <cstdlib>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/git_fixture.h"
#include "tests/testing/process.h"

namespace kbisect {
namespace {

using ::kbisect::testing::Bin;
using ::kbisect::testing::CommandResult;
using ::kbisect::testing::RunShell;
using ::kbisect::testing::ShellQuote;
using ::kbisect::testing::WriteFile;
using ::testing::HasSubstr;

std::string SourceDir() {
  const char* source = std::getenv("KBISECT_SOURCE_DIR");
  return source == nullptr ? "." : source;
}

class KueueManifestsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (RunShell("command -v kubectl").exit_code != 0) GTEST_SKIP() << "kubectl not installed";
    if (RunShell("python3 -c 'import yaml'").exit_code != 0) {
      GTEST_SKIP() << "Python's yaml module (python3-yaml) not installed";
    }
  }

  // The documents `producer` prints, validated by the schema check, by "Kind/name".
  std::map<std::string, nlohmann::json> Validated(const std::string& producer) {
    std::map<std::string, nlohmann::json> by_name;
    CommandResult produced = RunShell(producer);
    EXPECT_EQ(produced.exit_code, 0) << producer << ":\n" << produced.err;
    const std::string file = tmp_.Join("manifests.yaml");
    WriteFile(file, produced.out);
    CommandResult checked = RunShell(
        absl::StrCat("python3 ", ShellQuote(SourceDir() + "/tests/integration/k8s_schema_check.py"),
                     " < ", ShellQuote(file)));
    EXPECT_EQ(checked.exit_code, 0) << producer << ":\n" << checked.err;
    if (produced.exit_code != 0 || checked.exit_code != 0) return by_name;
    for (const nlohmann::json& doc : nlohmann::json::parse(checked.out)) {
      by_name[absl::StrCat(doc["kind"].get<std::string>(), "/",
                           doc["metadata"]["name"].get<std::string>())] = doc;
    }
    return by_name;
  }

  std::map<std::string, nlohmann::json> KueueObjects() {
    return Validated("kubectl kustomize " + ShellQuote(SourceDir() + "/deploy/k8s/kueue"));
  }

  ::kbisect::testing::TempDir tmp_{"kbisect-kueue-manifests"};
};

TEST_F(KueueManifestsTest, TheKueueObjectsRenderAndValidate) {
  std::map<std::string, nlohmann::json> docs = KueueObjects();
  ASSERT_EQ(docs.size(), 7u);
  const nlohmann::json& queue = docs["LocalQueue/kbisect"];
  EXPECT_EQ(queue["metadata"]["namespace"], "kbisect");
  EXPECT_EQ(queue["spec"]["clusterQueue"], "kbisect");
  const nlohmann::json& cluster_queue = docs["ClusterQueue/kbisect"];
  EXPECT_EQ(cluster_queue["spec"]["preemption"]["withinClusterQueue"], "LowerPriority");
  EXPECT_EQ(
      cluster_queue["spec"]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"],
      "kbisect");
  // One resource group: a pod takes its CPUs, memory and GPU from one flavor.
  ASSERT_EQ(cluster_queue["spec"]["resourceGroups"].size(), 1u);
  std::map<std::string, std::map<std::string, std::string>> quota;  // flavor -> resource -> quota
  for (const nlohmann::json& flavor : cluster_queue["spec"]["resourceGroups"][0]["flavors"]) {
    EXPECT_EQ(docs.count("ResourceFlavor/" + flavor["name"].get<std::string>()), 1u) << flavor;
    for (const nlohmann::json& resource : flavor["resources"]) {
      quota[flavor["name"]][resource["name"]] = resource["nominalQuota"].dump();
    }
  }
  EXPECT_EQ(quota["h100"]["nvidia.com/gpu"], "8");
  EXPECT_EQ(quota["h100"]["amd.com/gpu"], "0");
  EXPECT_EQ(quota["mi300x"]["amd.com/gpu"], "8");
  EXPECT_EQ(quota["mi300x"]["nvidia.com/gpu"], "0");
  EXPECT_GT(docs["WorkloadPriorityClass/kbisect-interactive"]["value"].get<int>(),
            docs["WorkloadPriorityClass/kbisect-nightly"]["value"].get<int>());
  // Each flavor tolerates its vendor's GPU taint; its node label is the class overlay's selector.
  EXPECT_EQ(docs["ResourceFlavor/mi300x"]["spec"]["tolerations"][0]["key"], "amd.com/gpu");
  for (const char* overlay : {"h100", "b200", "mi300x"}) {
    CommandResult rendered = RunShell("kubectl kustomize " +
                                      ShellQuote(SourceDir() + "/deploy/k8s/overlays/" + overlay));
    ASSERT_EQ(rendered.exit_code, 0) << rendered.err;
    for (const auto& [key, value] :
         docs[absl::StrCat("ResourceFlavor/", overlay)]["spec"]["nodeLabels"].items()) {
      EXPECT_THAT(rendered.out, HasSubstr(absl::StrCat(key, ": ", value.get<std::string>())))
          << overlay;
    }
  }
}

TEST_F(KueueManifestsTest, TheKueueOverlayHasNoWorkerPoolAndQueuesTheNightly) {
  std::map<std::string, nlohmann::json> docs =
      Validated("kubectl kustomize " + ShellQuote(SourceDir() + "/deploy/k8s/overlays/kueue"));
  EXPECT_EQ(docs.count("StatefulSet/kbisect-worker"), 0u);
  EXPECT_EQ(docs.count("Deployment/kbisect-coordinator"), 1u);
  EXPECT_EQ(docs.count("ConfigMap/kbisect-config"), 1u);
  const nlohmann::json& nightly = docs["CronJob/kbisect-nightly"];
  const nlohmann::json& labels = nightly["spec"]["jobTemplate"]["metadata"]["labels"];
  EXPECT_EQ(labels["kueue.x-k8s.io/queue-name"], "kbisect");
  EXPECT_EQ(labels["kueue.x-k8s.io/priority-class"], "kbisect-nightly");
  // Pinned to one class's nodes, so its history comes from one class; Kueue accepts the flavor.
  const std::map<std::string, nlohmann::json> kueue = KueueObjects();
  EXPECT_EQ(nightly["spec"]["jobTemplate"]["spec"]["template"]["spec"]["nodeSelector"],
            kueue.at("ResourceFlavor/h100")["spec"]["nodeLabels"]);
}

TEST_F(KueueManifestsTest, K8sJobValidatesForEveryClassAndMatchesItsFlavor) {
  const std::map<std::string, nlohmann::json> kueue = KueueObjects();
  for (const auto& [hardware_class, gpu] : std::map<std::string, std::string>{
           {"h100", "nvidia.com/gpu"}, {"b200", "nvidia.com/gpu"}, {"mi300x", "amd.com/gpu"}}) {
    SCOPED_TRACE(hardware_class);
    std::map<std::string, nlohmann::json> docs = Validated(
        absl::StrCat(Bin("kbisect"), " k8s-job --job-id job-5e1f0a-3 --workers 6 --min-workers 2",
                     " --priority nightly --hardware-class ", hardware_class));
    ASSERT_EQ(docs.size(), 1u);
    const nlohmann::json& job = docs.begin()->second;
    EXPECT_EQ(docs.begin()->first, "Job/kbisect-job-5e1f0a-3");
    const nlohmann::json& labels = job["metadata"]["labels"];
    EXPECT_EQ(kueue.count("LocalQueue/" + labels["kueue.x-k8s.io/queue-name"].get<std::string>()),
              1u);
    EXPECT_EQ(kueue.count("WorkloadPriorityClass/" +
                          labels["kueue.x-k8s.io/priority-class"].get<std::string>()),
              1u);
    EXPECT_EQ(job["metadata"]["annotations"]["kueue.x-k8s.io/job-min-parallelism"], "2");
    EXPECT_EQ(job["spec"]["completionMode"], "Indexed");
    EXPECT_EQ(job["spec"]["completions"], 6);
    EXPECT_EQ(job["spec"]["parallelism"], 6);
    EXPECT_EQ(job["spec"]["suspend"], true);
    const nlohmann::json& pod = job["spec"]["template"]["spec"];
    EXPECT_EQ(pod["nodeSelector"],
              kueue.at("ResourceFlavor/" + hardware_class)["spec"]["nodeLabels"]);
    const nlohmann::json& container = pod["containers"][0];
    EXPECT_EQ(container["resources"]["limits"][gpu], 1);
    EXPECT_EQ(container["command"][0], "kbisect-worker");
    bool until_job = false;
    for (const nlohmann::json& env : container["env"]) {
      until_job |= env["name"] == "KBISECT_UNTIL_JOB" && env["value"] == "job-5e1f0a-3";
    }
    EXPECT_TRUE(until_job) << container["env"];
  }
}

TEST_F(KueueManifestsTest, K8sJobRefusesBadInputWithTheUsageCode) {
  for (const std::string& args :
       {std::string("--workers 2"), std::string("--job-id ''"),
        std::string("--job-id j --workers 0"),
        std::string("--job-id j --workers 2 --min-workers 3"),
        std::string("--job-id j --hardware-class a100"), std::string("--job-id j --priority x")}) {
    CommandResult refused = RunShell(Bin("kbisect") + " k8s-job " + args);
    EXPECT_EQ(refused.exit_code, 2) << args << ": " << refused.err;
    EXPECT_FALSE(refused.err.empty()) << args;
    EXPECT_TRUE(refused.out.empty()) << args;
  }
}

}  // namespace
}  // namespace kbisect
