// Copyright 2026 The kbisect Authors.
#include "cli/report/status_json.h"

#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace kbisect {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

v1::JobStatus FullJob() {
  v1::JobStatus job;
  job.set_job_id("j-7");
  job.mutable_spec()->set_repository("/src/kernels");
  job.mutable_spec()->set_good("v1.0");
  job.mutable_spec()->add_bench_command("python");
  job.mutable_spec()->add_bench_command("bench.py");
  job.mutable_spec()->mutable_metric()->set_kind(v1::METRIC_KIND_REGEX);
  job.mutable_spec()->mutable_metric()->set_pattern("Latency: ([0-9.]+) ms");
  (*job.mutable_spec()->mutable_env())["HIP_VISIBLE_DEVICES"] = "0";
  job.mutable_spec()->mutable_origin()->set_kind(v1::ORIGIN_KIND_NIGHTLY);
  job.mutable_spec()->mutable_bench_timeout()->set_seconds(600);
  job.set_state(v1::JOB_STATE_DONE);
  job.set_status(v1::OUTCOME_CULPRIT_FOUND);
  job.set_good_sha("1111111111111111111111111111111111111111");
  job.set_bad_sha("2222222222222222222222222222222222222222");
  job.set_commit_count(8);
  job.set_metric_name("latency");
  job.set_metric_unit("ms");
  job.set_direction(v1::DIRECTION_LOWER_IS_BETTER);
  v1::Baselines* baseline = job.mutable_baseline();
  baseline->mutable_good()->add_samples(1.0);
  baseline->mutable_good()->add_samples(1.02);
  baseline->mutable_good()->set_median(1.01);
  baseline->mutable_bad()->add_samples(1.5);
  baseline->mutable_bad()->set_median(1.5);
  job.set_regression_pct(48.5);
  v1::Probe* probe = job.add_probes();
  probe->set_probe_id("p-1");
  probe->set_kind(v1::PROBE_KIND_BISECT);
  probe->set_sha("3333333333333333333333333333333333333333");
  probe->set_index(4);
  probe->set_worker("w1");
  probe->add_samples(1.01);
  probe->add_samples(1.0);
  probe->set_median(1.005);
  probe->set_verdict(v1::VERDICT_GOOD);
  probe->set_round(1);
  probe->set_state(v1::PROBE_STATE_FINISHED);
  probe->set_outcome(v1::TASK_OUTCOME_SUCCEEDED);
  probe->mutable_end_time()->set_seconds(1767225600);
  job.mutable_culprit()->set_sha("4444444444444444444444444444444444444444");
  job.mutable_culprit()->set_subject("Halve BLOCK_SIZE");
  job.mutable_culprit()->set_author("Ada <ada@example.com>");
  job.mutable_culprit()->set_date("2026-01-02 15:04:05 +0100");
  job.mutable_last_good()->set_sha("3333333333333333333333333333333333333333");
  job.set_rounds(2);
  job.set_bench_runs(14);
  job.set_wall_seconds(12.5);
  job.set_cause(v1::CAUSE_REAL_REGRESSION);
  v1::JobWorker* worker = job.add_workers();
  worker->set_worker("w1");
  worker->mutable_identity()->set_gpu_vendor(v1::GPU_VENDOR_AMD);
  worker->mutable_identity()->add_gpus()->set_memory_total_mib(196608);
  job.set_revision(12);
  return job;
}

TEST(StatusJsonTest, FieldNamesTypesAndLowercaseEnums) {
  const Json j = Json::parse(StatusToJson(FullJob()));
  EXPECT_EQ(j["status"], "culprit_found");
  EXPECT_EQ(j["state"], "done");
  EXPECT_EQ(j["direction"], "lower_is_better");
  EXPECT_EQ(j["cause"], "real_regression");
  ASSERT_TRUE(j["culprit"].is_object());
  EXPECT_EQ(j["culprit"]["sha"], "4444444444444444444444444444444444444444");
  EXPECT_EQ(j["culprit"]["subject"], "Halve BLOCK_SIZE");
  EXPECT_EQ(j["culprit"]["author"], "Ada <ada@example.com>");
  EXPECT_EQ(j["culprit"]["date"], "2026-01-02 15:04:05 +0100");
  EXPECT_EQ(j["last_good"]["sha"], "3333333333333333333333333333333333333333");
  EXPECT_TRUE(j["candidates"].is_array());
  EXPECT_TRUE(j["candidates"].empty());
  EXPECT_TRUE(j["rounds"].is_number_integer());
  EXPECT_EQ(j["rounds"], 2);
  EXPECT_TRUE(j["bench_runs"].is_number_integer());
  EXPECT_EQ(j["bench_runs"], 14);
  EXPECT_TRUE(j["wall_seconds"].is_number());
  EXPECT_DOUBLE_EQ(j["wall_seconds"].get<double>(), 12.5);
  EXPECT_TRUE(j["revision"].is_number_integer());
  EXPECT_EQ(j["revision"], 12);

  ASSERT_TRUE(j["probes"].is_array());
  ASSERT_EQ(j["probes"].size(), 1u);
  const Json& probe = j["probes"][0];
  EXPECT_EQ(probe["sha"], "3333333333333333333333333333333333333333");
  EXPECT_EQ(probe["index"], 4);
  EXPECT_EQ(probe["worker"], "w1");
  EXPECT_EQ(probe["samples"], Json::array({1.01, 1.0}));
  EXPECT_EQ(probe["verdict"], "good");
  EXPECT_EQ(probe["round"], 1);
  EXPECT_EQ(probe["kind"], "bisect");
  EXPECT_EQ(probe["state"], "finished");
  EXPECT_EQ(probe["outcome"], "succeeded");
  EXPECT_EQ(probe["end_time"], "2026-01-01T00:00:00Z");
  EXPECT_TRUE(probe["start_time"].is_null());

  EXPECT_EQ(j["baseline"]["good"]["samples"], Json::array({1.0, 1.02}));
  EXPECT_DOUBLE_EQ(j["baseline"]["good"]["median"].get<double>(), 1.01);
  EXPECT_EQ(j["baseline"]["bad"]["samples"], Json::array({1.5}));
  EXPECT_DOUBLE_EQ(j["baseline"]["bad"]["median"].get<double>(), 1.5);

  // Nested enums, maps, well-known types and int64 fields.
  EXPECT_EQ(j["spec"]["metric"]["kind"], "regex");
  EXPECT_EQ(j["spec"]["origin"]["kind"], "nightly");
  EXPECT_EQ(j["spec"]["history"], "unspecified");
  EXPECT_EQ(j["spec"]["env"]["HIP_VISIBLE_DEVICES"], "0");
  EXPECT_EQ(j["spec"]["bench_timeout"], "600s");
  EXPECT_TRUE(j["spec"]["build_timeout"].is_null());
  // Durations also as numbers of seconds next to them; git's dates also as RFC 3339.
  EXPECT_EQ(j["spec"]["bench_timeout_seconds"], 600.0);
  EXPECT_TRUE(j["spec"]["build_timeout_seconds"].is_null());
  EXPECT_EQ(j["culprit"]["date_rfc3339"], "2026-01-02T15:04:05+01:00");
  EXPECT_EQ(j["last_good"]["date_rfc3339"], "");
  EXPECT_EQ(j["workers"][0]["identity"]["gpu_vendor"], "amd");
  EXPECT_TRUE(j["workers"][0]["identity"]["gpus"][0]["memory_total_mib"].is_number_integer());
  EXPECT_EQ(j["workers"][0]["identity"]["gpus"][0]["memory_total_mib"], 196608);
}

TEST(StatusJsonTest, DurationsHaveSecondsAndCommitDatesRfc3339) {
  v1::JobStatus job = FullJob();
  v1::TaskTimings* timings = job.mutable_probes(0)->mutable_timings();
  timings->mutable_checkout()->set_nanos(179000000);
  timings->mutable_build()->set_seconds(61);
  timings->mutable_build()->set_nanos(500000000);
  timings->mutable_total()->set_seconds(62);
  job.mutable_last_good()->set_date("2025-12-31 23:59:59 -0530");
  const std::string text = StatusToJson(job);
  const Json j = Json::parse(text);
  const Json& t = j["probes"][0]["timings"];
  EXPECT_EQ(t["checkout"], "0.179s");
  EXPECT_DOUBLE_EQ(t["checkout_seconds"].get<double>(), 0.179);
  EXPECT_EQ(t["build"], "61.500s");
  EXPECT_DOUBLE_EQ(t["build_seconds"].get<double>(), 61.5);
  EXPECT_TRUE(t["bench"].is_null());
  EXPECT_TRUE(t["bench_seconds"].is_null());
  EXPECT_DOUBLE_EQ(t["total_seconds"].get<double>(), 62.0);
  EXPECT_EQ(j["last_good"]["date"], "2025-12-31 23:59:59 -0530");
  EXPECT_EQ(j["last_good"]["date_rfc3339"], "2025-12-31T23:59:59-05:30");
  // The added keys sit next to the keys they restate.
  EXPECT_LT(text.find("\"checkout\""), text.find("\"checkout_seconds\""));
  EXPECT_LT(text.find("\"checkout_seconds\""), text.find("\"build\""));
  // They are read back as nothing: the round trip is exact.
  absl::StatusOr<v1::JobStatus> back = StatusFromJson(text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*back, job));
  // A date not in git's form has no RFC 3339 restatement.
  job.mutable_culprit()->set_date("yesterday");
  EXPECT_EQ(Json::parse(StatusToJson(job))["culprit"]["date_rfc3339"], "");
}

TEST(StatusJsonTest, UnsetMessagesAreNull) {
  v1::JobStatus job;
  job.set_status(v1::OUTCOME_NO_REGRESSION);
  const Json j = Json::parse(StatusToJson(job));
  EXPECT_EQ(j["status"], "no_regression");
  for (const char* key : {"culprit", "last_good", "merged_culprit", "confirmation", "baseline",
                          "progress", "spec", "create_time", "finish_time"}) {
    ASSERT_TRUE(j.contains(key)) << key;
    EXPECT_TRUE(j[key].is_null()) << key;
  }
  EXPECT_EQ(j["state"], "unspecified");
  EXPECT_EQ(j["rounds"], 0);
  EXPECT_EQ(j["revision"], 0);
  EXPECT_TRUE(j["revision"].is_number_integer());
  EXPECT_EQ(j["probes"], Json::array());
  EXPECT_EQ(j["error"], "");
}

TEST(StatusJsonTest, PrettyPrintedWithTwoSpaces) {
  const std::string text = StatusToJson(FullJob());
  EXPECT_THAT(text, HasSubstr("{\n  \"job_id\": \"j-7\",\n"));
  EXPECT_THAT(text, HasSubstr("\n    \"good\": {\n      \""));
  EXPECT_NE(text.back(), '\n');
}

TEST(StatusJsonTest, RoundTrips) {
  const v1::JobStatus job = FullJob();
  absl::StatusOr<v1::JobStatus> parsed = StatusFromJson(StatusToJson(job));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(job, *parsed))
      << parsed->DebugString();

  const v1::JobStatus empty;
  parsed = StatusFromJson(StatusToJson(empty));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(empty, *parsed));
}

TEST(StatusJsonTest, AcceptsOriginalEnumNamesNumbersAndCamelCase) {
  absl::StatusOr<v1::JobStatus> parsed = StatusFromJson(R"({
    "status": "OUTCOME_INCONCLUSIVE",
    "direction": "HIGHER_IS_BETTER",
    "probes": [{"verdict": 2, "kind": "baseline_good"}, {"verdict": "Skip"}],
    "lastGood": {"sha": "abc"},
    "culprit": null,
    "revision": "99",
    "some_future_field": {"x": 1}
  })");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->status(), v1::OUTCOME_INCONCLUSIVE);
  EXPECT_EQ(parsed->direction(), v1::DIRECTION_HIGHER_IS_BETTER);
  ASSERT_EQ(parsed->probes_size(), 2);
  EXPECT_EQ(parsed->probes(0).verdict(), v1::VERDICT_BAD);
  EXPECT_EQ(parsed->probes(0).kind(), v1::PROBE_KIND_BASELINE_GOOD);
  EXPECT_EQ(parsed->probes(1).verdict(), v1::VERDICT_SKIP);
  EXPECT_EQ(parsed->last_good().sha(), "abc");
  EXPECT_FALSE(parsed->has_culprit());
  EXPECT_EQ(parsed->revision(), 99);
}

TEST(StatusJsonTest, RejectsBadInput) {
  absl::StatusOr<v1::JobStatus> parsed = StatusFromJson("{not json");
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  parsed = StatusFromJson("[1, 2]");
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  parsed = StatusFromJson(R"({"status": "exploded"})");
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(parsed.status().message(), HasSubstr("unknown value \"exploded\" for field status"));
  EXPECT_THAT(parsed.status().message(), HasSubstr("culprit_found"));
  parsed = StatusFromJson(R"({"rounds": "many"})");
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(StatusJsonTest, EnumValueJsonNameStripsTheExactPrefix) {
  EXPECT_EQ(
      EnumValueJsonName(*v1::Outcome_descriptor()->FindValueByNumber(v1::OUTCOME_CULPRIT_FOUND)),
      "culprit_found");
  EXPECT_EQ(EnumValueJsonName(*v1::JobEventKind_descriptor()->FindValueByNumber(
                v1::JOB_EVENT_KIND_PROBE_FINISHED)),
            "probe_finished");
  EXPECT_EQ(
      EnumValueJsonName(*v1::GpuVendor_descriptor()->FindValueByNumber(v1::GPU_VENDOR_NVIDIA)),
      "nvidia");
  EXPECT_EQ(EnumValueJsonName(
                *v1::TaskOutcome_descriptor()->FindValueByNumber(v1::TASK_OUTCOME_SKIP_REQUESTED)),
            "skip_requested");
  EXPECT_EQ(
      EnumValueJsonName(*v1::Direction_descriptor()->FindValueByNumber(v1::DIRECTION_UNSPECIFIED)),
      "unspecified");
}

TEST(StatusJsonTest, OtherMessagesUseTheSameForm) {
  v1::ListWorkersResponse response;
  v1::Worker* worker = response.add_workers();
  worker->set_worker_id("w1");
  worker->set_state(v1::WORKER_STATE_BUSY);
  const Json j = Json::parse(MessageToJson(response));
  EXPECT_EQ(j["workers"][0]["state"], "busy");
  EXPECT_TRUE(j["workers"][0]["last_seen"].is_null());
  v1::ListWorkersResponse parsed;
  ASSERT_TRUE(MessageFromJson(MessageToJson(response), &parsed).ok());
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(response, parsed));
}

}  // namespace
}  // namespace kbisect
