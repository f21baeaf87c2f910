// Copyright 2026 The kbisect Authors.
//
// Renders deploy/k8s (the base and every overlay) with `kubectl kustomize` and checks the
// objects a cluster deployment needs are there, with the per-class GPU resources and selectors.
// Skipped where kubectl is not installed; no cluster is needed.
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace {

using ::kbisect::testing::CommandResult;
using ::kbisect::testing::RunShell;
using ::kbisect::testing::ShellQuote;
using ::testing::HasSubstr;
using ::testing::Not;

std::string K8sDir() {
  const char* source = std::getenv("KBISECT_SOURCE_DIR");
  return absl::StrCat(source == nullptr ? "." : source, "/deploy/k8s");
}

// The rendered documents of `dir` by kind ("Deployment" -> its YAML).
std::map<std::string, std::string> Render(const std::string& dir) {
  CommandResult rendered = RunShell("kubectl kustomize " + ShellQuote(dir));
  EXPECT_EQ(rendered.exit_code, 0) << rendered.err;
  std::map<std::string, std::string> by_kind;
  for (absl::string_view doc : absl::StrSplit(rendered.out, "\n---\n")) {
    const size_t at = doc.find("kind: ");
    if (at == absl::string_view::npos) continue;
    const size_t end = doc.find('\n', at);
    // The compiler cache's own Deployment, Service and NetworkPolicy are kept apart.
    const bool compiler_cache =
        absl::StrContains(doc, "app.kubernetes.io/name: kbisect-compiler-cache");
    by_kind[absl::StrCat(compiler_cache ? "compiler-cache/" : "",
                         doc.substr(at + 6, end - at - 6))] = std::string(doc);
  }
  return by_kind;
}

class K8sManifestsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (RunShell("command -v kubectl").exit_code != 0) GTEST_SKIP() << "kubectl not installed";
  }

  // Checks what every rendering shares; returns the documents.
  std::map<std::string, std::string> RenderAndCheckCommon(const std::string& dir) {
    std::map<std::string, std::string> docs = Render(dir);
    for (const char* kind : {"Namespace", "ConfigMap", "PersistentVolumeClaim", "Deployment",
                             "Service", "StatefulSet", "NetworkPolicy", "CronJob"}) {
      EXPECT_EQ(docs.count(kind), 1u) << dir << " lacks a " << kind;
    }
    const std::string& coordinator = docs["Deployment"];
    EXPECT_THAT(coordinator, HasSubstr("type: Recreate"));
    EXPECT_THAT(coordinator, HasSubstr("replicas: 1"));
    EXPECT_THAT(coordinator, HasSubstr("kbisect-coordinator"));
    EXPECT_THAT(coordinator, HasSubstr("claimName: kbisect-coordinator-state"));
    // Each probe is a gRPC probe of the health port (kubectl sorts the probe's keys).
    for (const char* probe : {"readinessProbe", "livenessProbe"}) {
      EXPECT_THAT(coordinator, ::testing::ContainsRegex(absl::StrCat(
                                   probe, ":\n( +[a-zA-Z]+: [0-9]+\n)* +grpc:\n +port: 7071\n")));
    }
    EXPECT_THAT(docs["ConfigMap"], HasSubstr("KBISECT_HEALTH_LISTEN: 0.0.0.0:7071"));
    EXPECT_THAT(docs["ConfigMap"], HasSubstr("KBISECT_STATE_DIR: /var/lib/kbisect"));
    EXPECT_THAT(docs["StatefulSet"], HasSubstr("kbisect-worker"));
    // The nightly trigger runs `kbisect nightly` with its history on a volume.
    EXPECT_THAT(docs["CronJob"], HasSubstr("kbisect nightly --history"));
    EXPECT_THAT(docs["CronJob"], HasSubstr("claimName: kbisect-nightly-history"));
    EXPECT_THAT(docs["Service"], HasSubstr("port: 7070"));
    // Prometheus metrics: served, exposed and announced for scraping.
    EXPECT_THAT(docs["ConfigMap"], HasSubstr("KBISECT_METRICS_LISTEN: 0.0.0.0:9464"));
    EXPECT_THAT(coordinator, HasSubstr("containerPort: 9464"));
    EXPECT_THAT(docs["Service"], HasSubstr("port: 9464"));
    for (const std::string& doc : std::vector<std::string>{coordinator, docs["Service"]}) {
      EXPECT_THAT(doc, HasSubstr("prometheus.io/scrape: \"true\""));
      EXPECT_THAT(doc, HasSubstr("prometheus.io/port: \"9464\""));
      EXPECT_THAT(doc, HasSubstr("prometheus.io/path: /metrics"));
    }
    EXPECT_THAT(docs["NetworkPolicy"], HasSubstr("port: 9464"));
    for (const auto& [kind, doc] : docs) {
      if (kind == "Namespace") continue;
      EXPECT_THAT(doc, HasSubstr("namespace: kbisect")) << kind;
    }
    return docs;
  }
};

TEST_F(K8sManifestsTest, BaseRenders) {
  std::map<std::string, std::string> docs = RenderAndCheckCommon(K8sDir() + "/base");
  EXPECT_THAT(docs["StatefulSet"], HasSubstr("nvidia.com/gpu: 1"));
  // The workers share a compiler cache: a password-protected redis only kbisect's pods reach.
  EXPECT_THAT(docs["compiler-cache/Deployment"], HasSubstr("redis-server --port 6379"));
  EXPECT_THAT(docs["compiler-cache/Deployment"], HasSubstr("--requirepass"));
  EXPECT_THAT(docs["compiler-cache/Service"], HasSubstr("port: 6379"));
  EXPECT_THAT(docs["compiler-cache/NetworkPolicy"], HasSubstr("port: 6379"));
  EXPECT_THAT(docs["StatefulSet"],
              HasSubstr("redis://:$(KBISECT_COMPILER_CACHE_PASSWORD)@kbisect-compiler-cache"));
}

TEST_F(K8sManifestsTest, NvidiaOverlaysSelectTheirGpus) {
  for (const auto& [overlay, product] : std::vector<std::pair<std::string, std::string>>{
           {"h100", "NVIDIA-H100-80GB-HBM3"}, {"b200", "NVIDIA-B200"}}) {
    std::map<std::string, std::string> docs =
        RenderAndCheckCommon(K8sDir() + "/overlays/" + overlay);
    const std::string& workers = docs["StatefulSet"];
    EXPECT_THAT(workers, HasSubstr("nvidia.com/gpu: 1")) << overlay;
    EXPECT_THAT(workers, HasSubstr("nvidia.com/gpu.product: " + product)) << overlay;
    EXPECT_THAT(workers, HasSubstr("kbisect.dev/hardware-class: " + overlay)) << overlay;
  }
}

TEST_F(K8sManifestsTest, Mi300xOverlayUsesAmdGpus) {
  std::map<std::string, std::string> docs = RenderAndCheckCommon(K8sDir() + "/overlays/mi300x");
  const std::string& workers = docs["StatefulSet"];
  EXPECT_THAT(workers, HasSubstr("amd.com/gpu: 1"));
  EXPECT_THAT(workers, Not(HasSubstr("nvidia.com/gpu: 1")));
  EXPECT_THAT(workers, HasSubstr("amd.com/gpu.product-name: AMD_Instinct_MI300X"));
  EXPECT_THAT(workers, HasSubstr(":0.1.0-rocm"));
  EXPECT_THAT(docs["CronJob"], HasSubstr("amd.com/gpu: 1"));
  EXPECT_THAT(docs["CronJob"], Not(HasSubstr("nvidia.com/gpu")));
}

}  // namespace
}  // namespace kbisect
