// Copyright 2026 The kbisect Authors.
#include "cli/triage_command.h"

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/git_fixture.h"
#include "tests/unit/triage/fixtures.h"

namespace kbisect {
namespace {

using kbisect::testing::GitFixture;
using kbisect::testing::ReadFile;
using kbisect::testing::TempDir;
using kbisect::testing::WriteFile;
using ::testing::HasSubstr;
using ::testing::Not;

struct Outcome {
  int code = -1;
  std::string out;
  std::string err;
};

Outcome Triage(std::vector<std::string> args) {
  args.insert(args.begin(), "triage");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  Outcome o;
  o.code = TriageCommand(static_cast<int>(argv.size()), argv.data());
  o.out = ::testing::internal::GetCapturedStdout();
  o.err = ::testing::internal::GetCapturedStderr();
  if (std::getenv("KBISECT_TRIAGE_SHOW") != nullptr) std::cerr << o.out << o.err;
  return o;
}

int Count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(TriageCommandTest, SharedFixtureReportAndJson) {
  TempDir tmp;
  const std::string json_path = tmp.Join("t.json");
  Outcome o = Triage({"--dashboard", triage::testing::FixturePath("helion-dashboard-sample.json"),
                      "--platform", "b200_cute", "--kernel", "layer_norm", "--date", "2026-09-22",
                      "--json", json_path});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_THAT(o.out, HasSubstr("Cause:      real regression"));
  EXPECT_THAT(o.out, HasSubstr("416dfa1e"));
  EXPECT_THAT(o.out, HasSubstr("f76c409d"));
  EXPECT_THAT(o.out, HasSubstr("Helion-only"));
  EXPECT_THAT(o.out, HasSubstr("pass --repo CLONE"));
  nlohmann::json j = nlohmann::json::parse(ReadFile(json_path));
  EXPECT_EQ(j["schema"], "kbisect.triage.v1");
  EXPECT_EQ(j["cause"], "real_regression");
  EXPECT_GE(j["confidence"].get<double>(), 0.8);
  EXPECT_EQ(j["last_good"]["sha"], "416dfa1e");
  EXPECT_EQ(j["last_good"]["date"], "2026-09-21");
  EXPECT_EQ(j["first_bad"]["sha"], "f76c409d");
  EXPECT_EQ(j["first_bad"]["full_sha"].get<std::string>().size(), 40u);
  EXPECT_NEAR(j["change"]["ratio"].get<double>(), 0.82, 0.02);
  EXPECT_EQ(j["evidence"]["helion_only"], "yes");
  EXPECT_EQ(j["evidence"]["timers_agree"], "yes");
  EXPECT_EQ(j["move"], "regression");
  EXPECT_EQ(j["true_value"]["honest"], "after");
  EXPECT_TRUE(j["window"].is_null());
}

TEST(TriageCommandTest, HtmlPageOfTheSharedFixture) {
  TempDir tmp;
  const std::string json_path = tmp.Join("t.json");
  const std::string html_path = tmp.Join("t.html");
  Outcome o = Triage({"--dashboard", triage::testing::FixturePath("helion-dashboard-sample.json"),
                      "--platform", "b200_cute", "--kernel", "layer_norm", "--date", "2026-09-22",
                      "--json", json_path, "--html", html_path, "-q"});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out, "");
  const nlohmann::json j = nlohmann::json::parse(ReadFile(json_path));
  const std::string page = ReadFile(html_path);
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_THAT(page, HasSubstr("class=\"headline outcome-real_regression\""));
  // One point per analysed nightly in the primary chart; the baselines and the timer charted too.
  const int nightlies = j["nightlies"]["count"].get<int>();
  EXPECT_GT(nightlies, 10);
  EXPECT_EQ(Count(page, "class=\"point role-primary"), nightlies);
  for (const char* metric : {"helion_speedup_geomean", "triton_speedup_geomean",
                             "torch_compile_speedup_geomean", "helion_latency_avg_ms"}) {
    EXPECT_EQ(Count(page, absl::StrCat("<svg class=\"series-chart\" data-metric=\"", metric)), 1)
        << metric;
  }
  EXPECT_GT(Count(page, "class=\"point role-baseline"), 0);
  EXPECT_GT(Count(page, "class=\"point role-timer"), 0);
  // The change point explained, on every chart, between the last good and first bad nightlies.
  EXPECT_EQ(Count(page, "<g class=\"change-point focus\""), 4);
  EXPECT_EQ(Count(page, "data-last-good=\"2026-09-21\" data-first-bad=\"2026-09-22\""), 4);
  EXPECT_EQ(Count(page, "point role-primary after regression last-good"), 0);
  EXPECT_EQ(Count(page, "point role-primary last-good"), 1);
  EXPECT_EQ(Count(page, "point role-primary after regression first-bad"), 1);
  EXPECT_THAT(page, HasSubstr("<dd class=\"mono last-good\">2026-09-21  416dfa1e"));
  EXPECT_THAT(page, HasSubstr("<dd class=\"mono first-bad\">2026-09-22  f76c409d"));
  // The evidence rows and the cause's reasons.
  EXPECT_EQ(Count(page, "<tr class=\"moved\"><td class=\"mono\">helion_speedup_geomean</td>"), 1);
  EXPECT_EQ(Count(page, "<tr class=\"flat\"><td class=\"mono\">triton_speedup_geomean</td>"), 1);
  EXPECT_EQ(Count(page, "<ul class=\"reasons\"><li>"), 1);
  EXPECT_THAT(page, HasSubstr("pass <code>--repo CLONE</code>"));
  EXPECT_EQ(Count(page, "<tr data-nightly="), nightlies);
  // Self-contained: nothing to fetch.
  EXPECT_THAT(page, Not(HasSubstr(" src=")));
  EXPECT_THAT(page, Not(HasSubstr("<link")));
  EXPECT_THAT(page, Not(HasSubstr("{{")));
}

TEST(TriageCommandTest, HtmlPageWhenTheFileCannotBeWritten) {
  Outcome o = Triage({"--dashboard", triage::testing::FixturePath("noise_spike.json"), "--platform",
                      "b200", "--kernel", "softmax", "--html", "/nonexistent/dir/t.html"});
  EXPECT_EQ(o.code, 1);
  EXPECT_THAT(o.err, HasSubstr("cannot write /nonexistent/dir/t.html"));
}

TEST(TriageCommandTest, JsonToStdoutForEveryCause) {
  struct Case {
    std::string file, platform, kernel, cause;
  };
  for (const Case& c :
       std::vector<Case>{{"hardware_shared.json", "h100", "softmax", "hardware_issue"},
                         {"method_change.json", "b200", "matmul", "benchmark_method_change"},
                         {"noise_spike.json", "b200", "softmax", "noise"},
                         {"pretuned.json", "b200", "all", "benchmark_method_change"}}) {
    Outcome o = Triage({"--dashboard", triage::testing::FixturePath(c.file), "--platform",
                        c.platform, "--kernel", c.kernel, "--json", "-"});
    ASSERT_EQ(o.code, 0) << c.file << ": " << o.err;
    nlohmann::json j = nlohmann::json::parse(o.out);
    EXPECT_EQ(j["cause"], c.cause) << c.file;
  }
}

TEST(TriageCommandTest, ErrorsAndUsage) {
  Outcome o = Triage({"--platform", "b200"});
  EXPECT_EQ(o.code, 2);
  o = Triage({"--dashboard", triage::testing::FixturePath("truncated.json"), "--platform", "b200"});
  EXPECT_EQ(o.code, 1);
  EXPECT_THAT(o.err, HasSubstr("truncated"));
  o = Triage({"--dashboard", triage::testing::FixturePath("bad_type.json"), "--platform", "b200"});
  EXPECT_EQ(o.code, 1);
  EXPECT_THAT(o.err, HasSubstr("summary[4].history[7].helion_speedup_geomean"));
  o = Triage({"--dashboard", "/nonexistent.json"});
  EXPECT_EQ(o.code, 1);
  o = Triage({"--dashboard", triage::testing::FixturePath("helion-dashboard-sample.json"),
              "--platform", "tpu"});
  EXPECT_EQ(o.code, 1);
  EXPECT_THAT(o.err, HasSubstr("platforms: b200, b200_cute"));
  o = Triage({"--dashboard", triage::testing::FixturePath("helion-dashboard-sample.json"),
              "--format", "xml"});
  EXPECT_EQ(o.code, 2);
  o = Triage({"--dashboard", triage::testing::FixturePath("helion-dashboard-sample.json"),
              "--platform", "b200_cute", "--run"});
  EXPECT_EQ(o.code, 2);
  EXPECT_THAT(o.err, HasSubstr("--bench"));
}

TEST(TriageCommandTest, RepoWindowAndBisectCommand) {
  TempDir tmp;
  GitFixture repo(tmp.Join("helion"));
  repo.Init();
  std::vector<std::string> nightly;
  nightly.push_back(repo.Commit("initial", {{"helion/_compiler/cute/tile.py", "TILE = 64\n"},
                                            {"benchmarks/run.py", "WARMUP = 10\n"}}));
  for (int i = 1; i < 14; ++i) {
    if (i == 8) {
      repo.Commit("benchmarks: log more", {{"benchmarks/run.py", "WARMUP = 10  # log\n"}});
      repo.Commit("[cute] smaller tiles", {{"helion/_compiler/cute/tile.py", "TILE = 32\n"}});
    }
    nightly.push_back(
        repo.Commit(absl::StrCat("nightly work ", i), {{absl::StrCat("docs/n", i, ".md"), "x\n"}}));
  }
  std::string csv =
      "date,full_sha,kernel,platform,helion_speedup_geomean,triton_speedup_geomean,"
      "helion_latency_avg_ms\n";
  for (int i = 0; i < 14; ++i) {
    const double jitter = 1 + 0.002 * ((i * 5) % 7 - 3);
    const double f = i >= 8 ? 0.8 : 1.0;
    csv +=
        absl::StrCat("2026-09-", i < 9 ? "0" : "", i + 1, ",", nightly[i], ",layer_norm,b200_cute,",
                     1.35 * f * jitter, ",", 1.1 / jitter, ",", 0.05 / f * jitter, "\n");
  }
  const std::string csv_path = tmp.Join("nightlies.csv");
  WriteFile(csv_path, csv);
  const std::string json_path = tmp.Join("t.json");
  const std::string html_path = tmp.Join("t.html");
  Outcome o = Triage({"--dashboard", csv_path, "--platform", "b200_cute", "--repo", repo.path(),
                      "--json", json_path, "--html", html_path, "--run", "--dry-run", "--bench",
                      "python benchmarks/run.py --kernel {kernel}", "--bench-metric",
                      "speedup: ([0-9.]+)"});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_THAT(o.out, HasSubstr("Commit window"));
  EXPECT_THAT(o.out, HasSubstr("[cute] smaller tiles"));
  EXPECT_THAT(o.out, HasSubstr("[harness/CI only: possible method change]"));
  nlohmann::json j = nlohmann::json::parse(ReadFile(json_path));
  EXPECT_EQ(j["cause"], "real_regression");
  EXPECT_EQ(j["last_good"]["full_sha"], nightly[7]);
  EXPECT_EQ(j["first_bad"]["full_sha"], nightly[8]);
  ASSERT_EQ(j["window"]["size"], 3);
  EXPECT_EQ(j["window"]["commits"][0]["subject"], "[cute] smaller tiles");
  EXPECT_EQ(j["evidence"]["slice_commit_in_window"], "yes");
  EXPECT_EQ(j["evidence"]["harness_only_commit_in_window"], "yes");
  const std::string expected =
      absl::StrCat("kbisect run ", nightly[7], " ", nightly[8], " --repo ", repo.path(),
                   " --metric 'speedup: ([0-9.]+)' --higher-is-better -- sh -c "
                   "'python benchmarks/run.py --kernel layer_norm'");
  EXPECT_EQ(j["bisect_command"], expected);
  EXPECT_THAT(o.err, HasSubstr("would run: " + expected));
  // The page ranks the same window and shows the same command.
  const std::string page = ReadFile(html_path);
  EXPECT_EQ(Count(page, "<tr class=\"commit\""), 3);
  EXPECT_LT(page.find("[cute] smaller tiles"), page.find("benchmarks: log more"));
  EXPECT_THAT(page, HasSubstr("harness/CI only: possible method change"));
  EXPECT_THAT(page, HasSubstr(absl::StrCat("<pre class=\"reproduce\">kbisect run ", nightly[7])));
  EXPECT_EQ(Count(page, "class=\"point role-primary"), 14);

  // --submit prints the submit command instead.
  o = Triage({"--dashboard", csv_path, "--platform", "b200_cute", "--json", "-", "--submit",
              "--dry-run", "--bench", "bench {kernel}", "--repo-url",
              "https://github.com/pytorch/helion", "--coordinator", "coord:7070"});
  ASSERT_EQ(o.code, 0) << o.err;
  j = nlohmann::json::parse(o.out);
  EXPECT_THAT(j["bisect_command"].get<std::string>(),
              HasSubstr("kbisect submit " + nightly[7] + " " + nightly[8] +
                        " --repo https://github.com/pytorch/helion"));
  EXPECT_THAT(j["bisect_command"].get<std::string>(),
              HasSubstr("--coordinator coord:7070 --origin triage --trigger"));

  // Not bisected when the data does not point at a commit.
  o = Triage({"--dashboard", triage::testing::FixturePath("noise_spike.json"), "--platform", "b200",
              "--run", "--bench", "x"});
  EXPECT_EQ(o.code, 0);
  EXPECT_THAT(o.err, HasSubstr("not bisecting"));
}

}  // namespace
}  // namespace kbisect
