// Copyright 2026 The kbisect Authors.
#include "triage/parse.h"

#include <random>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/triage/fixtures.h"

namespace kbisect {
namespace triage {
namespace {

using testing::Fixture;
using ::testing::HasSubstr;

std::string ErrorOf(const std::string& text, InputFormat format = InputFormat::kAuto,
                    const std::string& source = "input") {
  absl::StatusOr<Dataset> d = ParseDataset(text, format, source);
  EXPECT_FALSE(d.ok());
  if (d.ok()) return "";
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(d.status().message());
}

TEST(ParseTest, SharedHelionSample) {
  const std::string text = Fixture("helion-dashboard-sample.json");
  EXPECT_EQ(DetectFormat(text, "dashboard-data.json"), InputFormat::kHelionDashboard);
  absl::StatusOr<Dataset> d = ParseDataset(text, InputFormat::kAuto, "sample.json");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->format, InputFormat::kHelionDashboard);
  EXPECT_EQ(d->generated_at, "2026-10-01T09:12:00Z");
  ASSERT_EQ(d->series.size(), 6u);
  const Series& s = d->series[3];
  EXPECT_EQ(s.kernel, "layer_norm");
  EXPECT_EQ(s.platform_short, "b200_cute");
  EXPECT_EQ(s.platform, "NVIDIA B200 (CuTe)");
  EXPECT_EQ(s.Label(), "layer_norm@b200_cute");
  ASSERT_EQ(s.nightlies.size(), 30u);
  const Nightly& n = s.nightlies[21];
  EXPECT_EQ(n.date, "2026-09-22");
  EXPECT_EQ(n.sha, "f76c409d");
  EXPECT_EQ(n.full_sha.size(), 40u);
  EXPECT_EQ(n.branch, "main");
  EXPECT_TRUE(n.is_nightly);
  EXPECT_GT(n.run_id, 0);
  EXPECT_DOUBLE_EQ(*n.Metric("helion_speedup_geomean"), 1.1187);
  EXPECT_TRUE(n.Metric("helion_latency_avg_ms").has_value());
  EXPECT_FALSE(n.Metric("nope").has_value());
  EXPECT_EQ(*n.Attribute("compile_time_aggregate"), "geomean");
  for (size_t i = 1; i < s.nightlies.size(); ++i) {
    EXPECT_LT(s.nightlies[i - 1].date, s.nightlies[i].date);
  }
}

TEST(ParseTest, SchemaDriftIsToleratedAndNoted) {
  absl::StatusOr<Dataset> d =
      ParseDataset(Fixture("schema_drift.json"), InputFormat::kAuto, "schema_drift.json");
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->series.size(), 1u);
  const Series& s = d->series[0];
  EXPECT_TRUE(s.nightlies[0].Metric("compile_time_avg_s").has_value());
  EXPECT_FALSE(s.nightlies[0].Metric("compile_time_geomean_s").has_value());
  EXPECT_FALSE(s.nightlies[0].Metric("torch_compile_speedup_geomean").has_value());
  EXPECT_EQ(*s.nightlies[0].Attribute("compile_time_aggregate"), "avg");
  EXPECT_EQ(*s.nightlies[0].Attribute("runner_label"), "linux.dgx.b200");
  EXPECT_EQ(*s.nightlies[20].Attribute("compile_time_aggregate"), "geomean");
  ASSERT_FALSE(d->notes.empty());
  EXPECT_THAT(d->notes[0], HasSubstr("compile_time_avg_s"));
}

TEST(ParseTest, TruncatedFileSaysSo) {
  const std::string message = ErrorOf(Fixture("truncated.json"), InputFormat::kAuto, "t.json");
  EXPECT_THAT(message, HasSubstr("not valid JSON"));
  EXPECT_THAT(message, HasSubstr("truncated"));
}

TEST(ParseTest, WrongTypeNamesTheField) {
  const std::string message = ErrorOf(Fixture("bad_type.json"));
  EXPECT_THAT(message, HasSubstr("summary[4].history[7].helion_speedup_geomean"));
  EXPECT_THAT(message, HasSubstr("expected a number"));
  EXPECT_THAT(message, HasSubstr("1.2x"));
}

TEST(ParseTest, MissingFieldsAreNamed) {
  EXPECT_THAT(ErrorOf(Fixture("missing_summary.json")), HasSubstr("summary: missing"));
  EXPECT_THAT(ErrorOf(Fixture("missing_date.json")), HasSubstr("summary[1].history[3].date"));
  EXPECT_THAT(ErrorOf(R"({"summary": {}})"), HasSubstr("summary: expected an array"));
  EXPECT_THAT(ErrorOf(R"({"summary": [{"platform_short": "b200", "history": []}]})"),
              HasSubstr("summary[0].kernel: missing"));
  EXPECT_THAT(ErrorOf(R"({"summary": [{"kernel": "k", "history": []}]})"),
              HasSubstr("summary[0].platform_short: missing"));
  EXPECT_THAT(ErrorOf(R"({"summary": [{"kernel": "k", "platform_short": "p", "history": 3}]})"),
              HasSubstr("summary[0].history: expected an array"));
  EXPECT_THAT(
      ErrorOf(
          R"({"summary": [{"kernel": "k", "platform_short": "p", "history": [{"date": "2026-09-01"}]}]})"),
      HasSubstr("summary[0].history[0]: missing both \"sha\" and \"full_sha\""));
  EXPECT_THAT(
      ErrorOf(
          R"({"summary": [{"kernel": "k", "platform_short": "p", "history": [{"date": "09/01/2026", "sha": "a"}]}]})"),
      HasSubstr("summary[0].history[0].date: expected a date"));
  EXPECT_THAT(
      ErrorOf(
          R"({"summary": [{"kernel": "k", "platform_short": "p", "history": [{"date": "2026-09-01", "sha": 5}]}]})"),
      HasSubstr("summary[0].history[0].sha: expected a string"));
  EXPECT_THAT(ErrorOf("[1, 2]", InputFormat::kHelionDashboard),
              HasSubstr("expected a JSON object"));
}

TEST(ParseTest, NeverCrashesOnPrefixesOrMutations) {
  const std::string text = Fixture("helion-dashboard-sample.json");
  for (size_t cut = 0; cut < text.size(); cut += 211) {
    absl::StatusOr<Dataset> d = ParseDataset(text.substr(0, cut), InputFormat::kAuto, "x");
    EXPECT_FALSE(d.ok()) << "prefix " << cut;
  }
  std::mt19937_64 rng(1);
  const std::string alphabet = "{}[]\",:0123456789.-eE tfn\n";
  for (int trial = 0; trial < 300; ++trial) {
    std::string mutated = text;
    for (int k = 0; k < 3; ++k) {
      mutated[rng() % mutated.size()] = alphabet[rng() % alphabet.size()];
    }
    (void)ParseDataset(mutated, InputFormat::kAuto, "x");  // Must not crash or throw.
  }
}

TEST(ParseTest, Pretuned) {
  const std::string text = Fixture("pretuned.json");
  EXPECT_EQ(DetectFormat(text, "x.json"), InputFormat::kHelionPretuned);
  absl::StatusOr<Dataset> d = ParseDataset(text, InputFormat::kAuto, "pretuned.json");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->format, InputFormat::kHelionPretuned);
  const Nightly& n = d->series[0].nightlies[0];
  EXPECT_TRUE(n.Metric("geomean").has_value());
  EXPECT_TRUE(n.Metric("best_speedup").has_value());
  EXPECT_EQ(*n.Metric("helion_wins"), 14);
  EXPECT_TRUE(n.Metric("baselines.triton.geomean").has_value());
  EXPECT_EQ(*n.Attribute("cudagraph"), "true");
  EXPECT_THAT(
      ErrorOf(
          R"({"summary": [{"kernel": "k", "platform_short": "p", "history": [{"date": "2026-09-01", "sha": "a", "baselines": {"triton": {"geomean": "x"}}}]}]})",
          InputFormat::kHelionPretuned),
      HasSubstr("summary[0].history[0].baselines.triton.geomean: expected a number"));
}

TEST(ParseTest, GenericCsv) {
  const std::string text = Fixture("generic_runner.csv");
  EXPECT_EQ(DetectFormat(text, "x.csv"), InputFormat::kCsv);
  absl::StatusOr<Dataset> d = ParseDataset(text, InputFormat::kAuto, "generic_runner.csv");
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->series.size(), 1u);
  const Series& s = d->series[0];
  EXPECT_EQ(s.kernel, "gemm");
  EXPECT_EQ(s.platform_short, "a100");
  ASSERT_EQ(s.nightlies.size(), 30u);
  EXPECT_EQ(*s.nightlies[0].Attribute("runner"), "gpu-node-1");
  EXPECT_EQ(*s.nightlies[29].Attribute("runner"), "gpu-node-2");
  EXPECT_TRUE(s.nightlies[0].Metric("tflops").has_value());
  EXPECT_TRUE(s.nightlies[0].Metric("latency_ms").has_value());
  EXPECT_EQ(s.nightlies[0].sha.size(), 10u);
}

TEST(ParseTest, CsvQuotingEmptyCellsAndComments) {
  absl::StatusOr<Dataset> d = ParseCsv(
      "# exported by hand\n"
      "date,sha,note,speedup\n"
      "2026-09-01,aaaa,\"hello, \"\"world\"\"\",1.5\n"
      "2026-09-02,bbbb,,\n"
      "\n",
      "x.csv");
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->series[0].nightlies.size(), 2u);
  EXPECT_EQ(*d->series[0].nightlies[0].Attribute("note"), "hello, \"world\"");
  EXPECT_FALSE(d->series[0].nightlies[1].Metric("speedup").has_value());
}

TEST(ParseTest, CsvErrorsNameLineAndColumn) {
  EXPECT_THAT(ErrorOf("sha,speedup\na,1\n", InputFormat::kCsv), HasSubstr("missing column 'date'"));
  EXPECT_THAT(ErrorOf("date,speedup\n2026-09-01,1\n", InputFormat::kCsv),
              HasSubstr("missing column 'sha'"));
  EXPECT_THAT(ErrorOf("date,sha,speedup\n2026-09-01,a,1\n2026-09-02,b\n", InputFormat::kCsv),
              HasSubstr("line 3: expected 3 fields as in the header, got 2"));
  EXPECT_THAT(ErrorOf("date,sha,speedup\n2026-09-01,a,1\n2026-09-02,b,fast\n", InputFormat::kCsv),
              HasSubstr("line 3, column 'speedup': expected a number"));
  EXPECT_THAT(ErrorOf("date,sha,speedup\n2026-13-01,a,1\n", InputFormat::kCsv),
              HasSubstr("date: expected a date"));
  EXPECT_THAT(ErrorOf("date,sha,note\n2026-09-01,a,\"open\n", InputFormat::kCsv),
              HasSubstr("not closed"));
  EXPECT_THAT(ErrorOf("date,sha,sha\n", InputFormat::kCsv), HasSubstr("appears twice"));
  EXPECT_THAT(ErrorOf("date,sha\n", InputFormat::kCsv), HasSubstr("no data rows"));
}

TEST(ParseTest, JsonLines) {
  const std::string text = Fixture("generic_real.jsonl");
  EXPECT_EQ(DetectFormat(text, "x"), InputFormat::kJsonLines);
  absl::StatusOr<Dataset> d = ParseDataset(text, InputFormat::kAuto, "generic_real.jsonl");
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->series.size(), 1u);
  EXPECT_EQ(d->series[0].kernel, "attention");
  EXPECT_EQ(d->series[0].platform_short, "mi300");
  const Nightly& n = d->series[0].nightlies[0];
  EXPECT_EQ(n.full_sha.size(), 40u);
  EXPECT_EQ(n.sha, n.full_sha.substr(0, 8));
  EXPECT_THAT(
      ErrorOf("{\"date\": \"2026-09-01\", \"sha\": \"a\"}\n{\"date\": \n", InputFormat::kJsonLines),
      HasSubstr("line 2: not valid JSON"));
  EXPECT_THAT(ErrorOf("[1]\n", InputFormat::kJsonLines),
              HasSubstr("line 1: expected a JSON object"));
  EXPECT_THAT(ErrorOf("{\"date\": \"2026-09-01\", \"sha\": \"a\", \"x_ms\": \"slow\"}\n",
                      InputFormat::kJsonLines),
              HasSubstr("line 1, x_ms: expected a number"));
}

TEST(ParseTest, FormatNames) {
  EXPECT_EQ(*ParseInputFormat("csv"), InputFormat::kCsv);
  EXPECT_EQ(*ParseInputFormat("helion"), InputFormat::kHelionDashboard);
  EXPECT_EQ(*ParseInputFormat("pretuned"), InputFormat::kHelionPretuned);
  EXPECT_EQ(*ParseInputFormat("jsonl"), InputFormat::kJsonLines);
  EXPECT_FALSE(ParseInputFormat("xml").ok());
  EXPECT_TRUE(IsIdentityAttribute("Runner"));
  EXPECT_TRUE(IsMethodAttribute("cudagraph"));
  EXPECT_FALSE(IsIdentityAttribute("kernel"));
}

}  // namespace
}  // namespace triage
}  // namespace kbisect
