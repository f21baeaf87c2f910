// Copyright 2026 The kbisect Authors.
//
// SpecDigest and ActionDigest: what changes a measurement changes the digest, what does not
// keeps it, and the encoding is the documented one (so a cache written by one build is read by
// the next).
#include "common/spec/action_digest.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/git/object_hash.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

v1::JobSpec Spec() {
  v1::JobSpec spec;
  spec.set_repository("/repo");
  spec.set_good("v1.0");
  spec.set_bad("HEAD");
  spec.set_build_command("make -j8");
  spec.add_bench_command("./bench");
  spec.add_bench_command("--batch");
  spec.add_bench_command("32");
  (*spec.mutable_env())["CUDA_LAUNCH_BLOCKING"] = "1";
  (*spec.mutable_env())["OMP_NUM_THREADS"] = "4";
  spec.mutable_metric()->set_kind(v1::METRIC_KIND_REGEX);
  spec.mutable_metric()->set_pattern("Latency: ([0-9.]+) ms");
  return spec;
}

TEST(SpecDigestTest, IsFortyHexDigitsAndDeterministic) {
  const std::string digest = SpecDigest(Spec());
  EXPECT_EQ(digest.size(), 40u);
  EXPECT_EQ(digest.find_first_not_of("0123456789abcdef"), std::string::npos) << digest;
  EXPECT_EQ(SpecDigest(Spec()), digest);
}

TEST(SpecDigestTest, IsTheGitBlobIdOfTheDocumentedEncoding) {
  const std::string encoding = absl::StrCat(
      "22:kbisect.spec_digest.v1,", "13:build_command,", "8:make -j8,", "13:bench_command,", "1:3,",
      "7:./bench,", "7:--batch,", "2:32,", "3:env,", "1:2,", "20:CUDA_LAUNCH_BLOCKING,", "1:1,",
      "15:OMP_NUM_THREADS,", "1:4,", "11:metric_kind,", "1:2,", "14:metric_pattern,",
      "21:Latency: ([0-9.]+) ms,", "17:discard_throttled,", "1:0,");
  EXPECT_EQ(SpecDigest(Spec()), GitBlobId(encoding));
  EXPECT_EQ(ActionDigest("t", "s", "hc"), GitBlobId("24:kbisect.action_digest.v1,1:t,1:s,2:hc,"));
}

TEST(SpecDigestTest, ChangesWithWhatARunMeasures) {
  const std::string base = SpecDigest(Spec());
  v1::JobSpec build = Spec();
  build.set_build_command("make -j8 DEBUG=1");
  EXPECT_NE(SpecDigest(build), base) << "build command";
  v1::JobSpec no_build = Spec();
  no_build.clear_build_command();
  EXPECT_NE(SpecDigest(no_build), base) << "no build command";
  v1::JobSpec env_value = Spec();
  (*env_value.mutable_env())["OMP_NUM_THREADS"] = "8";
  EXPECT_NE(SpecDigest(env_value), base) << "env value";
  v1::JobSpec env_extra = Spec();
  (*env_extra.mutable_env())["TRITON_CACHE_DIR"] = "/tmp/t";
  EXPECT_NE(SpecDigest(env_extra), base) << "env variable";
  v1::JobSpec argument = Spec();
  argument.set_bench_command(2, "64");
  EXPECT_NE(SpecDigest(argument), base) << "bench argument";
  v1::JobSpec extra_argument = Spec();
  extra_argument.add_bench_command("--warmup");
  EXPECT_NE(SpecDigest(extra_argument), base) << "extra bench argument";
  v1::JobSpec order = Spec();
  order.set_bench_command(1, "32");
  order.set_bench_command(2, "--batch");
  EXPECT_NE(SpecDigest(order), base) << "bench argument order";
  v1::JobSpec regex = Spec();
  regex.mutable_metric()->set_pattern("Time: ([0-9.]+) ms");
  EXPECT_NE(SpecDigest(regex), base) << "metric regex";
  v1::JobSpec json = Spec();
  json.mutable_metric()->set_kind(v1::METRIC_KIND_JSON_PATH);
  EXPECT_NE(SpecDigest(json), base) << "metric kind";
  v1::JobSpec throttled = Spec();
  throttled.set_discard_throttled(true);
  EXPECT_NE(SpecDigest(throttled), base) << "discard throttled";
}

TEST(SpecDigestTest, FieldBoundariesAreUnambiguous) {
  v1::JobSpec a = Spec();
  a.clear_bench_command();
  a.add_bench_command("a");
  a.add_bench_command("bc");
  v1::JobSpec b = Spec();
  b.clear_bench_command();
  b.add_bench_command("ab");
  b.add_bench_command("c");
  EXPECT_NE(SpecDigest(a), SpecDigest(b));
  v1::JobSpec c = Spec();
  c.clear_env();
  (*c.mutable_env())["a"] = "bc";
  v1::JobSpec d = Spec();
  d.clear_env();
  (*d.mutable_env())["ab"] = "c";
  EXPECT_NE(SpecDigest(c), SpecDigest(d));
  // An argument that spells out the encoding of two arguments is still one argument.
  v1::JobSpec e = Spec();
  e.clear_bench_command();
  e.add_bench_command("x,1:y");
  v1::JobSpec f = Spec();
  f.clear_bench_command();
  f.add_bench_command("x");
  f.add_bench_command("y");
  EXPECT_NE(SpecDigest(e), SpecDigest(f));
  EXPECT_NE(ActionDigest("a", "bc", "d"), ActionDigest("ab", "c", "d"));
  EXPECT_NE(ActionDigest("a", "b", "cd"), ActionDigest("a", "bc", "d"));
}

TEST(SpecDigestTest, IgnoresWhatDoesNotChangeAMeasurement) {
  const std::string base = SpecDigest(Spec());
  v1::JobSpec other = Spec();
  other.set_repository("https://example.com/other.git");
  other.set_good("v0.9");
  other.set_bad("main");
  other.set_runs_per_commit(10);
  other.set_max_runs(50);
  other.set_threshold_fraction(0.5);
  other.set_min_effect_fraction(0.02);
  other.set_direction(v1::DIRECTION_HIGHER_IS_BETTER);
  other.set_history(v1::HISTORY_MODE_ALL_COMMITS);
  other.mutable_build_timeout()->set_seconds(7200);
  other.mutable_bench_timeout()->set_seconds(60);
  other.set_hardware_class("hc-b200");
  other.set_max_workers(2);
  other.set_confirm(true);
  other.set_allow_improvement(true);
  other.set_descend_merges(true);
  other.set_all_culprits(true);
  other.set_description("nightly");
  other.mutable_origin()->set_kind(v1::ORIGIN_KIND_NIGHTLY);
  other.set_parent_job_id("job-1");
  other.set_follow_up(v1::FOLLOW_UP_KIND_MERGED_BRANCH);
  other.set_follow_up_depth(1);
  other.set_descend_submodules(true);
  other.add_descend_pins()->set_file("pins/llvm.txt");
  EXPECT_EQ(SpecDigest(other), base);
}

// A dependency follow-up measures the dependency's tree built into one superproject commit: the
// same dependency commit under another superproject commit (or path) is another measurement.
TEST(SpecDigestTest, ADependencyDescentIsPartOfTheDigest) {
  v1::JobSpec descent = Spec();
  descent.mutable_dependency()->set_kind(v1::DEPENDENCY_KIND_SUBMODULE);
  descent.mutable_dependency()->set_superproject("/src/super");
  descent.mutable_dependency()->set_superproject_sha("1111111111111111111111111111111111111111");
  descent.mutable_dependency()->set_path("third_party/dep");
  EXPECT_NE(SpecDigest(descent), SpecDigest(Spec()));
  v1::JobSpec other_culprit = descent;
  other_culprit.mutable_dependency()->set_superproject_sha(
      "2222222222222222222222222222222222222222");
  EXPECT_NE(SpecDigest(other_culprit), SpecDigest(descent));
  v1::JobSpec pinned = descent;
  pinned.mutable_dependency()->set_kind(v1::DEPENDENCY_KIND_PIN_FILE);
  EXPECT_NE(SpecDigest(pinned), SpecDigest(descent));
  // A nested descent under another outer culprit is another measurement too.
  v1::JobSpec nested = descent;
  *nested.mutable_dependency()->mutable_outer() = descent.dependency();
  v1::JobSpec other_outer = nested;
  other_outer.mutable_dependency()->mutable_outer()->set_superproject_sha(
      "3333333333333333333333333333333333333333");
  EXPECT_NE(SpecDigest(nested), SpecDigest(descent));
  EXPECT_NE(SpecDigest(other_outer), SpecDigest(nested));
}

TEST(SpecDigestTest, EnvOrderAndTheUnspecifiedMetricKindDoNotMatter) {
  v1::JobSpec forward;
  forward.add_bench_command("./bench");
  v1::JobSpec backward = forward;
  for (const char* key : {"A", "B", "C", "D", "E", "F", "G", "H"}) {
    (*forward.mutable_env())[key] = absl::StrCat("value of ", key);
  }
  for (const char* key : {"H", "G", "F", "E", "D", "C", "B", "A"}) {
    (*backward.mutable_env())[key] = absl::StrCat("value of ", key);
  }
  EXPECT_EQ(SpecDigest(forward), SpecDigest(backward));
  // The same map after a serialization round trip (which may reorder it).
  v1::JobSpec parsed;
  ASSERT_TRUE(parsed.ParseFromString(backward.SerializeAsString()));
  EXPECT_EQ(SpecDigest(parsed), SpecDigest(forward));
  v1::JobSpec automatic = forward;
  automatic.mutable_metric()->set_kind(v1::METRIC_KIND_AUTO);
  EXPECT_EQ(SpecDigest(automatic), SpecDigest(forward));
}

TEST(ActionDigestTest, ChangesWithTreeSpecAndHardwareClass) {
  const std::string spec = SpecDigest(Spec());
  const std::string tree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
  const std::string base = ActionDigest(tree, spec, "hc-h100");
  EXPECT_EQ(base.size(), 40u);
  EXPECT_EQ(ActionDigest(tree, spec, "hc-h100"), base);
  EXPECT_NE(ActionDigest(tree, spec, "hc-b200"), base) << "hardware class";
  EXPECT_NE(ActionDigest("9bf2a8e6f3e7c1b4f0d3a2e1c5b6a7d8e9f0a1b2", spec, "hc-h100"), base)
      << "tree";
  v1::JobSpec other = Spec();
  other.set_build_command("make");
  EXPECT_NE(ActionDigest(tree, SpecDigest(other), "hc-h100"), base) << "spec";
}

}  // namespace
}  // namespace kbisect
